// qnum-convert: quantize a Hugging Face safetensors checkpoint into compressed-tensors W4A16 / FP8 or DeepSeek FP8 block weights.
//
//   qnum-convert --format w4a16 [--group 32|128] [--asym] [--include RE]... [--exclude RE]... [--threads N] IN OUT
//   qnum-convert --format fp8-block|fp8-channel|fp8-tensor|nvfp4|mxfp4 [...] IN OUT
//   [--device auto|cpu|gpu]: auto (the default) quantizes on CUDA device 0 when this build has the GPU path
//   (convert_gpu.cu) and a device is present, on the CPU threads otherwise; the bytes are the same either way.
//   The GPU path checks itself: the first tensor of each dtype and shape is also quantized on the CPU, and the
//   run stops if a single byte differs. --device-info prints what auto would pick.
//
// IN: a checkpoint directory (model.safetensors.index.json + shards, or *.safetensors) or one .safetensors file.
// OUT: a directory; every shard keeps its file name, non-quantized tensors are copied byte for byte,
// config.json gets quantization_config, the index is rewritten, other files (tokenizer, ...) are copied.
// Every input header is validated before anything is written; every output goes to a hidden temporary
// name and is renamed only when all of them are complete. Numerics: qnum presets (docs/schemes.md):
//   w4a16 sym : ct_w4a16_sym_bf16 (s = bf16(amax/7.5) from the fp32-upcast weight, codes with the bf16 scale)
//   w4a16 asym: ct_w4a16_asym (fp32 scale; compressed-tensors computes the zero point with the fp32 scale)
//   fp8-block : deepgemm_fp8 over 128x128 blocks (DeepGEMM per_block_cast_to_fp8)
//   fp8-channel / fp8-tensor: ct_fp8 per row / per tensor (compressed-tensors "float-quantized": weight
//               float8_e4m3fn [N, K] + weight_scale fp32 [N, 1] / [1]; s = amax / 448, e4m3 = RNE(x / s))
//   nvfp4 / mxfp4: compressed-tensors "nvfp4-pack-quantized" / "mxfp4-pack-quantized" (presets ct_nvfp4_* /
//               ct_mxfp4_*, per-element ct_fp4): weight_packed uint8 [N, K/2] (element 2i low nibble), weight_scale
//               float8_e4m3fn [N, K/16] + weight_global_scale fp32 [1] (= 2688 / amax) / uint8 E8M0 [N, K/32]
// The per-tensor step is quantize_source() below: cpu_quantize() on host threads, or the GPU path (convert_gpu.hpp).
// NVFP4 / MXFP4 groups are written by ct_fp4.hpp on both paths.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "convert_gpu.hpp"
#include "ct_fp4.hpp"
#include "safetensors.hpp"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using qconv::safetensors_file;
using qconv::out_format;
using qconv::tensor_info;

namespace {

enum class device_choice { automatic, cpu, gpu };

struct options {
  out_format format = out_format::w4a16;
  std::int64_t group = 128;
  bool asym = false;
  std::vector<std::regex> include, exclude;
  std::vector<std::string> include_s, exclude_s;
  int threads = 0;
  device_choice device = device_choice::automatic;
  bool progress = true;
  std::string in, out;
};

struct conv_error {
  std::string msg;
};
[[noreturn]] void fail(const std::string& m) { throw conv_error{m}; }

// One output tensor: either a copy of a source tensor or one part of a quantized source.
struct out_tensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;
};
struct source_plan {
  const tensor_info* src = nullptr;
  bool quantize = false;
  std::vector<out_tensor> outs;
};

const char* format_name(out_format f);

bool default_selected(const tensor_info& t) {
  static const std::regex skip("(embed|norm|lm_head|wte|wpe)", std::regex::icase);
  const std::string suffix = ".weight";
  return t.shape.size() == 2 && t.name.size() > suffix.size() &&
         t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0 && !std::regex_search(t.name, skip);
}

bool selected(const options& o, const tensor_info& t) {
  bool sel;
  if (o.include.empty()) {
    sel = default_selected(t);
  } else {
    sel = false;
    for (auto& r : o.include) sel = sel || std::regex_search(t.name, r);
  }
  for (auto& r : o.exclude)
    if (std::regex_search(t.name, r)) sel = false;
  return sel;
}

std::string module_of(const std::string& name) { return name.substr(0, name.size() - std::string(".weight").size()); }

source_plan plan_source(const options& o, const safetensors_file& f, const tensor_info& t) {
  source_plan p;
  p.src = &t;
  p.quantize = selected(o, t);
  if (!p.quantize) {
    p.outs.push_back({t.name, t.dtype, t.shape, t.end - t.begin});
    return p;
  }
  const std::string where = f.path() + ": tensor '" + t.name + "': ";
  if (t.shape.size() != 2) fail(where + "selected for quantization but not 2-D");
  if (t.name.size() < 8 || t.name.compare(t.name.size() - 7, 7, ".weight") != 0)
    fail(where + "selected for quantization but its name does not end in .weight");
  if (t.dtype != "BF16" && t.dtype != "F16" && t.dtype != "F32")
    fail(where + "unsupported dtype '" + t.dtype + "' for quantization (needs BF16, F16 or F32)");
  const std::int64_t n = t.shape[0], k = t.shape[1];
  const std::string m = module_of(t.name);
  if (o.format == out_format::w4a16) {
    if (k % o.group != 0)
      fail(where + "in_features " + std::to_string(k) + " is not a multiple of the group size " + std::to_string(o.group));
    qnum::ct_pack_quantized_shape s;
    if (qnum::ct_pack_quantized_layout(n, k, 4, o.group, &s) != qnum::pack_status::ok) fail(where + "bad shape");
    if (n > 0x7FFFFFFF || k > 0x7FFFFFFF) fail(where + "shape does not fit int32 weight_shape");
    p.outs.push_back({m + ".weight_packed", "I32", {s.packed_rows, s.packed_cols}, std::uint64_t(s.packed_rows * s.packed_cols) * 4});
    const int sb = o.asym ? 4 : 2;
    p.outs.push_back({m + ".weight_scale", o.asym ? "F32" : "BF16", {s.scale_rows, s.scale_cols},
                      std::uint64_t(s.scale_rows * s.scale_cols) * sb});
    if (o.asym)
      p.outs.push_back({m + ".weight_zero_point", "I32", {s.zp_rows, s.zp_cols}, std::uint64_t(s.zp_rows * s.zp_cols) * 4});
    // compressed-tensors 0.20's compressor writes weight_shape as int64 (torch.tensor(shape)).
    p.outs.push_back({m + ".weight_shape", "I64", {2}, 16});
  } else if (o.format == out_format::nvfp4 || o.format == out_format::mxfp4) {
    const std::int64_t g = qconv::ct_fp4_group(o.format == out_format::nvfp4);
    if (k % g != 0)
      fail(where + "in_features " + std::to_string(k) + " is not a multiple of the " + format_name(o.format) + " group size " +
           std::to_string(g));
    p.outs.push_back({m + ".weight_packed", "U8", {n, k / 2}, std::uint64_t(n * (k / 2))});
    p.outs.push_back({m + ".weight_scale", o.format == out_format::nvfp4 ? "F8_E4M3" : "U8", {n, k / g}, std::uint64_t(n * (k / g))});
    if (o.format == out_format::nvfp4) p.outs.push_back({m + ".weight_global_scale", "F32", {1}, 4});
  } else if (o.format == out_format::fp8_channel || o.format == out_format::fp8_tensor) {
    p.outs.push_back({t.name, "F8_E4M3", {n, k}, std::uint64_t(n * k)});
    if (o.format == out_format::fp8_channel)
      p.outs.push_back({m + ".weight_scale", "F32", {n, 1}, std::uint64_t(n) * 4});
    else
      p.outs.push_back({m + ".weight_scale", "F32", {1}, 4});
  } else {
    qnum::fp8_block_shape s;
    if (qnum::fp8_block_layout(n, k, &s) != qnum::pack_status::ok) fail(where + "bad shape");
    p.outs.push_back({t.name, "F8_E4M3", {n, k}, std::uint64_t(n * k)});
    p.outs.push_back({m + ".weight_scale_inv", "F32", {s.scale_rows, s.scale_cols}, std::uint64_t(s.scale_rows * s.scale_cols) * 4});
  }
  return p;
}

// Runs fn(r0, r1) over row ranges (multiples of `align`) on `threads` threads. Every group lies inside
// one range, so the result is the same bits for any thread count.
void parallel_rows(std::int64_t rows, std::int64_t align, int threads, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  const std::int64_t units = (rows + align - 1) / align;
  const std::int64_t nt = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, units));
  if (nt == 1) {
    fn(0, rows);
    return;
  }
  std::vector<std::thread> ts;
  for (std::int64_t i = 0; i < nt; ++i) {
    const std::int64_t r0 = std::min(rows, units * i / nt * align), r1 = std::min(rows, units * (i + 1) / nt * align);
    ts.emplace_back([&fn, r0, r1] { fn(r0, r1); });
  }
  for (auto& t : ts) t.join();
}

template <class T>
qnum::matrix_view<const T> rows_of(const std::uint8_t* base, const std::string& dtype, std::int64_t r0, std::int64_t r1,
                                   std::int64_t k) {
  const T* p = reinterpret_cast<const T*>(base) + r0 * k;
  return {p, r1 - r0, k, k, dtype == "F16" ? qnum::tensor_type::fp16 : dtype == "BF16" ? qnum::tensor_type::bf16 : qnum::tensor_type::fp32};
}

// Statistics of a whole [n, k] tensor: row ranges on threads, merged (max and min are exact in any order).
template <class T>
qnum::group_stats tensor_stats(const std::uint8_t* data, qnum::tensor_type tt, std::int64_t n, std::int64_t k, int threads) {
  std::vector<qnum::group_stats> part(static_cast<std::size_t>(std::max(1, threads)));
  std::atomic<int> slot{0};
  parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
    const T* p = reinterpret_cast<const T*>(data);
    part[static_cast<std::size_t>(slot++)] = qnum::row_stats(p + r0 * k, (r1 - r0) * k, tt);  // rows are contiguous
  });
  qnum::group_stats all;
  for (auto& g : part) all = qnum::merge(all, g);
  return all;
}

// Quantizes one source tensor on the CPU threads into bufs (sized in plan order); W4A16 leaves its zero points
// (asymmetric) in `zeros` and the rest of its tail to finish_w4a16, shared with the GPU path.
template <class T>
void cpu_quantize(const options& o, const std::string& where, const std::uint8_t* data, const tensor_info& t,
                  std::vector<std::vector<std::uint8_t>>& bufs, std::vector<std::int32_t>& zeros) {
  const std::int64_t n = t.shape[0], k = t.shape[1];
  const int threads = o.threads;
  std::atomic<int> bad{0};
  if (o.format == out_format::fp8_channel) {
    std::uint8_t* codes = bufs[0].data();
    float* scales = reinterpret_cast<float*>(bufs[1].data());
    parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
      auto st = qnum::quantize(qnum::presets::ct_fp8, rows_of<T>(data, t.dtype, r0, r1, k), qnum::per_row(),
                               qnum::view(codes + r0 * k, r1 - r0, k), qnum::scales_of(scales + r0, r1 - r0, 1));
      if (st != qnum::status::ok) bad = 1;
    });
    if (bad) fail(where + "quantization failed");
    return;
  }
  if (o.format == out_format::nvfp4 || o.format == out_format::mxfp4) {
    const bool nv = o.format == out_format::nvfp4;
    const std::int64_t g = qconv::ct_fp4_group(nv), groups = k / g;
    const qnum::tensor_type tt = rows_of<T>(data, t.dtype, 0, 0, k).type;
    float global = 0.0f;
    if (nv) {
      const qnum::group_stats all = tensor_stats<T>(data, tt, n, k, threads);
      global = qnum::presets::ct_nvfp4_global_scale(all.amax);
      std::memcpy(bufs[2].data(), &global, 4);
    }
    std::uint8_t* packed = bufs[0].data();
    std::uint8_t* scales = bufs[1].data();
    parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
      const T* p = reinterpret_cast<const T*>(data);
      std::uint8_t c[32];
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t j = 0; j < groups; ++j) {
          const std::int64_t base = r * k + j * g;
          const qnum::group_params gp = qconv::ct_fp4_params(nv, qnum::row_stats(p + base, g, tt).amax, global);
          qnum::quantize_row(qnum::presets::ct_fp4, gp, p + base, g, c, tt);
          qconv::ct_fp4_store(gp, c, static_cast<int>(g), scales + r * groups + j, packed + base / 2);
        }
    });
    return;
  }
  if (o.format == out_format::fp8_tensor) {
    // Per tensor: statistics of row ranges merged (max is exact in any order), one compute_params, then the
    // quantize_row (quantize_value per element): the same bits as qnum::quantize(ct_fp8, per_tensor()) on one thread.
    const qnum::tensor_type tt = rows_of<T>(data, t.dtype, 0, 0, k).type;
    const qnum::group_stats all = tensor_stats<T>(data, tt, n, k, threads);
    const qnum::group_params gp = qnum::compute_params(qnum::presets::ct_fp8, all);
    std::uint8_t* codes = bufs[0].data();
    parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
      const T* p = reinterpret_cast<const T*>(data);
      qnum::quantize_row(qnum::presets::ct_fp8, gp, p + r0 * k, (r1 - r0) * k, codes + r0 * k, tt);
    });
    const std::uint32_t sb = gp.scale_code;
    std::memcpy(bufs[1].data(), &sb, 4);
    return;
  }
  if (o.format == out_format::fp8_block) {
    qnum::fp8_block_shape s;
    qnum::fp8_block_layout(n, k, &s);
    std::uint8_t* codes = bufs[0].data();
    float* scales = reinterpret_cast<float*>(bufs[1].data());
    parallel_rows(n, 128, threads, [&](std::int64_t r0, std::int64_t r1) {
      const std::int64_t b0 = r0 / 128, b1 = (r1 + 127) / 128;
      auto st = qnum::quantize(qnum::presets::deepgemm_fp8, rows_of<T>(data, t.dtype, r0, r1, k), qnum::presets::deepseek_weight,
                               qnum::view(codes + r0 * k, r1 - r0, k), qnum::scales_of(scales + b0 * s.scale_cols, b1 - b0, s.scale_cols));
      if (st != qnum::status::ok) bad = 1;
    });
    if (bad) fail(where + "quantization failed");
    return;
  }
  const std::int64_t g = o.group, groups = k / g;
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(n * k));
  zeros.assign(o.asym ? static_cast<std::size_t>(n * groups) : 0, 0);
  parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
    auto in = rows_of<T>(data, t.dtype, r0, r1, k);
    auto cv = qnum::view(codes.data() + r0 * k, r1 - r0, k);
    qnum::status st;
    if (o.asym) {
      float* sc = reinterpret_cast<float*>(bufs[1].data()) + r0 * groups;
      st = qnum::quantize(qnum::presets::ct_w4a16_asym, in, qnum::group_size(g), cv, qnum::scales_of(sc, r1 - r0, groups),
                          qnum::view(zeros.data() + r0 * groups, r1 - r0, groups));
    } else {
      std::uint16_t* sc = reinterpret_cast<std::uint16_t*>(bufs[1].data()) + r0 * groups;
      st = qnum::quantize(qnum::presets::ct_w4a16_sym_bf16, in, qnum::group_size(g), cv, qnum::scales_of(sc, r1 - r0, groups));
    }
    if (st != qnum::status::ok) bad = 1;
    // int4 codes (two's complement in the low 4 bits) straight into this row range's weight_packed words.
    auto* words = reinterpret_cast<std::uint32_t*>(bufs[0].data()) + r0 * qnum::packed_words(k, 4);
    if (qnum::ct_pack_weight_codes(codes.data() + r0 * k, r1 - r0, k, 4, words) != qnum::pack_status::ok) bad = 2;
  });
  if (bad == 1) fail(where + "quantization failed");
  if (bad == 2) fail(where + "packing failed");
}

// W4A16's host tail on either path: packed zero points (asymmetric) and weight_shape.
void finish_w4a16(const options& o, const std::string& where, std::int64_t n, std::int64_t k,
                  const std::vector<std::int32_t>& zeros, std::vector<std::vector<std::uint8_t>>& bufs) {
  const std::int64_t groups = k / o.group;
  std::size_t next = 2;
  if (o.asym) {
    std::vector<std::int8_t> zp(zeros.size());
    for (std::size_t i = 0; i < zeros.size(); ++i) zp[i] = static_cast<std::int8_t>(zeros[i]);
    if (qnum::ct_pack_zero_point(zp.data(), n, groups, 4, reinterpret_cast<std::uint32_t*>(bufs[2].data())) != qnum::pack_status::ok)
      fail(where + "zero-point packing failed");
    next = 3;
  }
  const std::int64_t shape[2] = {n, k};
  std::memcpy(bufs[next].data(), shape, sizeof shape);
}

// Quantizes one source tensor on the GPU or the CPU; returns the output buffers in plan order.
std::vector<std::vector<std::uint8_t>> quantize_source(const options& o, const std::string& where, const std::uint8_t* data,
                                                       const tensor_info& t, const source_plan& p, bool on_gpu) {
  const std::int64_t n = t.shape[0], k = t.shape[1];
  std::vector<std::vector<std::uint8_t>> bufs;
  for (auto& ot : p.outs) bufs.emplace_back(ot.bytes);
  std::vector<std::int32_t> zeros;
  if (on_gpu && n > 0 && k > 0) {  // an empty tensor has nothing to compute: the CPU path fills its scalars
    qconv::gpu_tensor g;
    g.format = o.format;
    g.group = o.group;
    g.asym = o.asym;
    g.data = data;
    g.dtype = t.dtype;
    g.n = n;
    g.k = k;
    std::string err;
    if (!qconv::gpu_quantize(g, bufs, zeros, err)) fail(where + err + " (--device cpu avoids the GPU)");
  } else if (t.dtype == "F32") {
    cpu_quantize<float>(o, where, data, t, bufs, zeros);
  } else {
    cpu_quantize<std::uint16_t>(o, where, data, t, bufs, zeros);
  }
  if (o.format == out_format::w4a16) finish_w4a16(o, where, n, k, zeros, bufs);
  return bufs;
}

std::string hex2(std::uint8_t v) {
  char b[3];
  std::snprintf(b, sizeof b, "%02x", v);
  return b;
}

// The GPU path's self-check: the same tensor on the CPU; a message naming the first differing byte, or "".
std::string cpu_disagrees(const options& o, const std::string& where, const std::uint8_t* data, const tensor_info& t,
                          const source_plan& p, const std::vector<std::vector<std::uint8_t>>& gpu_bufs) {
  const auto cpu_bufs = quantize_source(o, where, data, t, p, false);
  for (std::size_t i = 0; i < cpu_bufs.size(); ++i)
    for (std::size_t b = 0; b < cpu_bufs[i].size(); ++b)
      if (cpu_bufs[i][b] != gpu_bufs[i][b])
        return where + "the GPU path differs from the CPU path at byte " + std::to_string(b) + " of '" + p.outs[i].name +
               "' (GPU 0x" + hex2(gpu_bufs[i][b]) + ", CPU 0x" + hex2(cpu_bufs[i][b]) +
               "): a qnum bug, please report it; --device cpu converts without the GPU";
  return "";
}

struct progress {
  bool tty = false, enabled = true;
  std::size_t total_tensors = 0, done = 0;
  std::uint64_t total_bytes = 0, bytes = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void step(const std::string& name, const std::string& what, std::uint64_t b) {
    ++done;
    bytes += b;
    if (!enabled) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = secs > 0 ? bytes / secs / 1e6 : 0.0;
    if (tty) {
      const int width = 30, fill = total_bytes ? int(width * double(bytes) / double(total_bytes)) : width;
      std::fprintf(stderr, "\r[%s%s] %zu/%zu tensors  %.1f/%.1f MB  %.0f MB/s ", std::string(fill, '#').c_str(),
                   std::string(width - fill, ' ').c_str(), done, total_tensors, bytes / 1e6, total_bytes / 1e6, rate);
      if (done == total_tensors) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "qnum-convert: [%zu/%zu] %s %s (%.1f MB, %.0f MB/s)\n", done, total_tensors, name.c_str(), what.c_str(),
                   b / 1e6, rate);
    }
  }
};

std::string tmp_name(const fs::path& final_path) {
  return (final_path.parent_path() / ("." + final_path.filename().string() + ".qnum-tmp")).string();
}

void write_all(std::FILE* f, const void* p, std::size_t n, const std::string& path) {
  if (n && std::fwrite(p, 1, n, f) != n) fail(path + ": write failed");
}

void write_text(const std::string& tmp, const std::string& text) {
  std::ofstream f(tmp, std::ios::binary);
  f << text;
  f.close();
  if (!f) fail(tmp + ": write failed");
}

const char* format_name(out_format f) {
  switch (f) {
    case out_format::w4a16: return "w4a16";
    case out_format::fp8_block: return "fp8-block";
    case out_format::fp8_channel: return "fp8-channel";
    case out_format::fp8_tensor: return "fp8-tensor";
    case out_format::nvfp4: return "nvfp4";
    case out_format::mxfp4: return "mxfp4";
  }
  return "?";
}

void usage() {
  std::fprintf(stderr,
               "usage: qnum-convert --format w4a16|fp8-block|fp8-channel|fp8-tensor|nvfp4|mxfp4 [--group 32|128] [--asym] [--include REGEX]...\n"
               "                    [--exclude REGEX]... [--threads N] [--device auto|cpu|gpu] [--no-progress] INPUT OUTPUT_DIR\n"
               "       qnum-convert --device-info\n"
               "  INPUT: checkpoint directory (model.safetensors.index.json or *.safetensors) or a .safetensors file\n"
               "  default layers: 2-D tensors named *.weight except embeddings, norms and lm_head\n");
}

// --device: auto takes the GPU where this build has the path and a device is present.
bool use_gpu(const options& o) {
  if (o.device == device_choice::cpu) return false;
  std::string why, name;
  const int count = qconv::gpu_devices(why, name);
  if (count == 0) {
    if (o.device == device_choice::gpu) fail("--device gpu: no GPU (" + why + ")");
    std::fprintf(stderr, "qnum-convert: quantizing on the CPU, %d threads (no GPU: %s)\n", o.threads, why.c_str());
    return false;
  }
  std::fprintf(stderr, "qnum-convert: quantizing on GPU 0 (%s)\n", name.c_str());
  return true;
}

int run(const options& o) {
  std::vector<std::string> files;
  std::string err;
  if (!qconv::list_checkpoint(o.in, files, err)) fail(err);
  // 1. Open and validate every input, plan every output, before writing anything.
  std::vector<std::unique_ptr<safetensors_file>> inputs;
  std::vector<std::vector<source_plan>> plans;
  progress prog;
  json ignore = json::array();
  for (auto& path : files) {
    auto f = std::make_unique<safetensors_file>();
    if (!f->open(path, err)) fail(err);
    std::vector<source_plan> ps;
    for (auto& t : f->tensors()) {
      ps.push_back(plan_source(o, *f, t));
      ++prog.total_tensors;
      prog.total_bytes += t.end - t.begin;
      if (!ps.back().quantize && t.shape.size() == 2 && t.name.size() > 7 && t.name.compare(t.name.size() - 7, 7, ".weight") == 0)
        ignore.push_back(module_of(t.name));
    }
    inputs.push_back(std::move(f));
    plans.push_back(std::move(ps));
  }
  const bool on_gpu = use_gpu(o);
  // The GPU path's self-check: the first tensor of each (dtype, shape) is also quantized on the CPU (the shape
  // picks the kernel), and a single differing byte stops the run.
  std::set<std::tuple<std::string, std::int64_t, std::int64_t>> gpu_checked;
  fs::create_directories(o.out);
  const bool from_dir = fs::is_directory(o.in);
  std::vector<std::pair<std::string, std::string>> renames;  // tmp -> final
  auto cleanup = [&] {
    std::error_code ec;
    for (auto& r : renames) fs::remove(r.first, ec);
  };
  try {
    json weight_map = json::object();
    std::uint64_t total_size = 0;
    prog.tty = isatty(2) != 0;
    prog.enabled = o.progress;
    // 2. Shards.
    for (std::size_t fi = 0; fi < inputs.size(); ++fi) {
      const safetensors_file& f = *inputs[fi];
      const fs::path final_path = fs::path(o.out) / fs::path(f.path()).filename();
      const std::string tmp = tmp_name(final_path);
      renames.push_back({tmp, final_path.string()});
      json header = json::object();
      header["__metadata__"] = f.metadata().is_object() ? f.metadata() : json{{"format", "pt"}};
      std::uint64_t off = 0;
      for (auto& p : plans[fi])
        for (auto& ot : p.outs) {
          header[ot.name] = {{"dtype", ot.dtype}, {"shape", ot.shape}, {"data_offsets", {off, off + ot.bytes}}};
          weight_map[ot.name] = final_path.filename().string();
          off += ot.bytes;
          total_size += ot.bytes;
        }
      std::string hs = header.dump();
      while (hs.size() % 8 != 0) hs += ' ';
      std::FILE* out = std::fopen(tmp.c_str(), "wb");
      if (out == nullptr) fail(tmp + ": cannot create");
      std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(out, &std::fclose);
      std::uint8_t len[8];
      for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(std::uint64_t(hs.size()) >> (8 * i));
      write_all(out, len, 8, tmp);
      write_all(out, hs.data(), hs.size(), tmp);
      for (auto& p : plans[fi]) {
        const tensor_info& t = *p.src;
        const std::uint8_t* data = f.data(t);
        if (!p.quantize) {
          write_all(out, data, t.end - t.begin, tmp);
          prog.step(t.name, "copied", t.end - t.begin);
        } else {
          const std::string where = f.path() + ": tensor '" + t.name + "': ";
          auto bufs = quantize_source(o, where, data, t, p, on_gpu);
          if (on_gpu && t.shape[0] > 0 && t.shape[1] > 0 && gpu_checked.insert({t.dtype, t.shape[0], t.shape[1]}).second) {
            const std::string diff = cpu_disagrees(o, where, data, t, p, bufs);
            if (!diff.empty()) fail(diff);
          }
          for (auto& b : bufs) write_all(out, b.data(), b.size(), tmp);
          prog.step(t.name, std::string("-> ") + format_name(o.format), t.end - t.begin);
        }
        f.release(t);
      }
      if (std::fflush(out) != 0 || fsync(fileno(out)) != 0) fail(tmp + ": write failed");
    }
    // 3. config.json, index, other files.
    json cfg = json::object();
    const fs::path in_cfg = from_dir ? fs::path(o.in) / "config.json" : fs::path(o.in).parent_path() / "config.json";
    if (fs::exists(in_cfg)) {
      std::ifstream cf(in_cfg);
      try {
        cfg = json::parse(cf);
      } catch (const std::exception& e) {
        fail(in_cfg.string() + ": corrupt JSON: " + e.what());
      }
    }
    if (o.format == out_format::w4a16) {
      json w = {{"num_bits", 4}, {"type", "int"}, {"symmetric", !o.asym}, {"group_size", o.group}, {"strategy", "group"},
                {"block_structure", nullptr}, {"dynamic", false}, {"actorder", nullptr}, {"observer", "minmax"},
                {"observer_kwargs", json::object()}};
      cfg["quantization_config"] = {
          {"quant_method", "compressed-tensors"},
          {"format", "pack-quantized"},
          {"quantization_status", "compressed"},
          {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", w}, {"input_activations", nullptr},
                                          {"output_activations", nullptr}, {"format", "pack-quantized"}}}}},
          {"ignore", ignore}};
    } else if (o.format == out_format::nvfp4 || o.format == out_format::mxfp4) {
      // compressed-tensors QuantizationConfig of its NVFP4A16 / MXFP4A16 preset schemes (weight-only), as
      // QuantizationConfig.model_dump() writes it (tests/data/convert/golden_nvfp4_config.json, golden_mxfp4_config.json).
      const bool nv = o.format == out_format::nvfp4;
      json w = {{"num_bits", 4}, {"type", "float"}, {"symmetric", true}, {"group_size", nv ? 16 : 32},
                {"strategy", nv ? "tensor_group" : "group"}, {"dynamic", false},
                {"scale_dtype", nv ? "torch.float8_e4m3fn" : "torch.uint8"}};
      cfg["quantization_config"] = {
          {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", w}, {"input_activations", nullptr},
                                          {"output_activations", nullptr}, {"format", nullptr}}}}},
          {"quant_method", "compressed-tensors"},
          {"kv_cache_scheme", nullptr},
          {"format", nv ? "nvfp4-pack-quantized" : "mxfp4-pack-quantized"},
          {"quantization_status", "compressed"},
          {"global_compression_ratio", nullptr},
          {"ignore", ignore},
          {"moe_sparsity_config", nullptr}};
    } else if (o.format == out_format::fp8_channel || o.format == out_format::fp8_tensor) {
      // compressed-tensors QuantizationConfig of its FP8_DYNAMIC preset scheme (weights per tensor for fp8-tensor), as
      // QuantizationConfig.model_dump() writes it (tests/data/convert/golden_fp8_*_config.json).
      const bool ch = o.format == out_format::fp8_channel;
      json w = {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"group_size", nullptr},
                {"strategy", ch ? "channel" : "tensor"}, {"dynamic", false}};
      // Activations: dynamic per token for both (a static per-tensor input scale would need calibration data).
      json a = {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"group_size", nullptr}, {"strategy", "token"}, {"dynamic", true}};
      cfg["quantization_config"] = {
          {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", w}, {"input_activations", a},
                                          {"output_activations", nullptr}, {"format", nullptr}}}}},
          {"quant_method", "compressed-tensors"},
          {"kv_cache_scheme", nullptr},
          {"format", "float-quantized"},
          {"quantization_status", "compressed"},
          {"global_compression_ratio", nullptr},
          {"ignore", ignore},
          {"moe_sparsity_config", nullptr}};
    } else {
      cfg["quantization_config"] = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
                                    {"weight_block_size", {128, 128}}};
    }
    const fs::path out_cfg = fs::path(o.out) / "config.json";
    renames.push_back({tmp_name(out_cfg), out_cfg.string()});
    write_text(renames.back().first, cfg.dump(2) + "\n");
    if (from_dir && (files.size() > 1 || fs::exists(fs::path(o.in) / "model.safetensors.index.json"))) {
      json idx = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
      const fs::path out_idx = fs::path(o.out) / "model.safetensors.index.json";
      renames.push_back({tmp_name(out_idx), out_idx.string()});
      write_text(renames.back().first, idx.dump(2) + "\n");
    }
    if (from_dir) {
      for (auto& e : fs::directory_iterator(o.in)) {
        const std::string fn = e.path().filename().string();
        if (!e.is_regular_file() || e.path().extension() == ".safetensors" || fn == "config.json" ||
            fn == "model.safetensors.index.json" || fn.empty() || fn[0] == '.')
          continue;
        const fs::path dst = fs::path(o.out) / fn;
        renames.push_back({tmp_name(dst), dst.string()});
        fs::copy_file(e.path(), renames.back().first, fs::copy_options::overwrite_existing);
      }
    }
    // 4. Everything complete: rename into place.
    for (auto& r : renames) fs::rename(r.first, r.second);
  } catch (...) {
    cleanup();
    throw;
  }
  std::fprintf(stderr, "qnum-convert: wrote %s (%zu tensors, %zu shards)\n", o.out.c_str(), prog.total_tensors, inputs.size());
  return 0;
}

}  // namespace

#ifndef QNUM_CONVERT_CUDA
// This build has no GPU path (no nvcc): --device auto uses the CPU, --device gpu fails with this reason.
int qconv::gpu_devices(std::string& why, std::string&) {
  why = "this qnum-convert was built without CUDA";
  return 0;
}
bool qconv::gpu_quantize(const gpu_tensor&, std::vector<std::vector<std::uint8_t>>&, std::vector<std::int32_t>&, std::string& err) {
  err = "this qnum-convert was built without CUDA";
  return false;
}
#endif

int main(int argc, char** argv) {
  options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--format") {
        const std::string f = next();
        if (f == "w4a16") o.format = out_format::w4a16;
        else if (f == "fp8-block") o.format = out_format::fp8_block;
        else if (f == "fp8-channel") o.format = out_format::fp8_channel;
        else if (f == "fp8-tensor") o.format = out_format::fp8_tensor;
        else if (f == "nvfp4") o.format = out_format::nvfp4;
        else if (f == "mxfp4") o.format = out_format::mxfp4;
        else {
          std::fprintf(stderr, "qnum-convert: unknown format '%s'\n", f.c_str());
          return 2;
        }
      } else if (a == "--group") {
        o.group = std::stoll(next());
        if (o.group != 32 && o.group != 128) {
          std::fprintf(stderr, "qnum-convert: --group must be 32 or 128\n");
          return 2;
        }
      } else if (a == "--asym") {
        o.asym = true;
      } else if (a == "--include") {
        o.include.emplace_back(next());
      } else if (a == "--exclude") {
        o.exclude.emplace_back(next());
      } else if (a == "--threads") {
        o.threads = std::stoi(next());
      } else if (a == "--device") {
        const std::string d = next();
        if (d == "auto") o.device = device_choice::automatic;
        else if (d == "cpu") o.device = device_choice::cpu;
        else if (d == "gpu") o.device = device_choice::gpu;
        else {
          std::fprintf(stderr, "qnum-convert: --device must be auto, cpu or gpu\n");
          return 2;
        }
      } else if (a == "--device-info") {
        std::string why, name;
        const int count = qconv::gpu_devices(why, name);
        if (count == 0) std::printf("gpu: none (%s)\n", why.c_str());
        else std::printf("gpu: %s (device 0 of %d)\n", name.c_str(), count);
        return 0;
      } else if (a == "--no-progress") {
        o.progress = false;
      } else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else if (!a.empty() && a[0] == '-') {
        usage();
        return 2;
      } else {
        pos.push_back(a);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qnum-convert: bad argument for %s: %s\n", a.c_str(), e.what());
      return 2;
    }
  }
  if (pos.size() != 2) {
    usage();
    return 2;
  }
  o.in = pos[0];
  o.out = pos[1];
  if (o.threads <= 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  std::error_code ec;
  if (fs::exists(o.out, ec) && fs::equivalent(o.in, o.out, ec)) {
    std::fprintf(stderr, "qnum-convert: error: output directory is the input\n");
    return 2;
  }
  try {
    return run(o);
  } catch (const conv_error& e) {
    std::fprintf(stderr, "qnum-convert: error: %s\n", e.msg.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qnum-convert: error: %s\n", e.what());
  }
  return 1;
}
