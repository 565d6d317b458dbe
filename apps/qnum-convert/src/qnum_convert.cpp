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
// Every input (shard headers, the index against the shards, config.json, the model type, each tensor's plan) is
// validated before anything is quantized; the whole output is built in .OUT.qnum-tmp.PID beside OUT and swapped
// in when complete (a non-empty OUT only with --overwrite); what a killed run left is removed by the next.
// NaN/Inf weights are refused unless --allow-nonfinite. docs/convert.md has the rules. Numerics: qnum presets (docs/schemes.md):
//   w4a16 sym : ct_w4a16_sym_bf16 (s = bf16(amax/7.5) from the fp32-upcast weight, codes with the bf16 scale)
//   w4a16 asym: ct_w4a16_asym (fp32 scale; compressed-tensors computes the zero point with the fp32 scale)
//   fp8-block : deepgemm_fp8 over 128x128 blocks (DeepGEMM per_block_cast_to_fp8)
//   fp8-channel / fp8-tensor: ct_fp8 per row / per tensor (compressed-tensors "float-quantized": weight
//               float8_e4m3fn [N, K] + weight_scale fp32 [N, 1] / [1]; s = amax / 448, e4m3 = RNE(x / s))
//   nvfp4 / mxfp4: compressed-tensors "nvfp4-pack-quantized" / "mxfp4-pack-quantized" (presets ct_fp4_params,
//               ct_fp4 codes + ct_fp4_zero_sign; ct::quantize_pack_fp4 on the host): weight_packed uint8 [N, K/2]
//               (element 2i low nibble), weight_scale float8_e4m3fn [N, K/16] + weight_global_scale fp32 [1]
//               (= 2688 / amax) / uint8 E8M0 [N, K/32]
// --work-dtype bf16: compressed-tensors' arithmetic on bf16 weights instead of the fp32 upcast (the presets'
// *_bf16_work schemes and rules).
// NVFP4 fused layers (q/k/v, gate/up, ...: --fuse) share one weight_global_scale from the group's amax.
// The per-tensor step is quantize_source() below: cpu_quantize() on host threads, or the GPU path (convert_gpu.hpp).
// NVFP4 / MXFP4 groups are computed by the same presets functions on both paths.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>

#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "convert_gpu.hpp"
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
  bool overwrite = false;        // replace a non-empty output directory
  bool allow_nonfinite = false;  // convert NaN/Inf weights with a warning instead of refusing
  bool bf16_work = false;        // --work-dtype bf16: compressed-tensors' arithmetic on bf16 weights
  // NVFP4 fused layers: each entry the leaf names of one group (children of one module) that share a global scale.
  std::vector<std::vector<std::string>> fuse = {{"gate_proj", "up_proj"}, {"q_proj", "k_proj", "v_proj"},
                                                {"q_a_proj", "kv_a_proj_with_mqa"}, {"w1", "w3"}};
  std::map<std::string, float> shared_global;  // tensor name -> its fused group's weight_global_scale (run() fills it)
  std::map<std::string, std::uint64_t> nonfinite_of;  // tensor name -> its NaN/Inf count, where that pass read it
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
  if (o.bf16_work && t.dtype != "BF16")
    fail(where + "dtype " + t.dtype + ": --work-dtype bf16 reproduces compressed-tensors on bf16 weights and takes BF16 "
                 "tensors only (the default, --work-dtype fp32, converts any dtype)");
  const std::int64_t n = t.shape[0], k = t.shape[1];
  const std::string m = module_of(t.name);
  if (o.format == out_format::w4a16) {
    if (k % o.group != 0)
      fail(where + "in_features " + std::to_string(k) + " is not a multiple of the group size " + std::to_string(o.group));
    qnum::ct::pack_quantized_shape s;
    if (qnum::ct::pack_quantized_layout(n, k, 4, o.group, &s) != qnum::status::ok) fail(where + "bad shape");
    if (n > 0x7FFFFFFF || k > 0x7FFFFFFF) fail(where + "shape does not fit int32 weight_shape");
    p.outs.push_back({m + ".weight_packed", "I32", {s.packed_rows, s.packed_cols}, std::uint64_t(s.packed_rows * s.packed_cols) * 4});
    const bool f32 = o.asym && !o.bf16_work;  // asymmetric: fp32 scales on the fp32 upcast, bf16 in the bf16 flow
    const int sb = f32 ? 4 : 2;
    p.outs.push_back({m + ".weight_scale", f32 ? "F32" : "BF16", {s.scale_rows, s.scale_cols},
                      std::uint64_t(s.scale_rows * s.scale_cols) * sb});
    if (o.asym)
      p.outs.push_back({m + ".weight_zero_point", "I32", {s.zp_rows, s.zp_cols}, std::uint64_t(s.zp_rows * s.zp_cols) * 4});
    // compressed-tensors 0.20's compressor writes weight_shape as int64 (torch.tensor(shape)).
    p.outs.push_back({m + ".weight_shape", "I64", {2}, 16});
  } else if (o.format == out_format::nvfp4 || o.format == out_format::mxfp4) {
    const std::int64_t g = qnum::presets::ct_fp4_group_size(o.format == out_format::nvfp4);
    if (k % g != 0)
      fail(where + "in_features " + std::to_string(k) + " is not a multiple of the " + format_name(o.format) + " group size " +
           std::to_string(g));
    p.outs.push_back({m + ".weight_packed", "U8", {n, k / 2}, std::uint64_t(n * (k / 2))});
    p.outs.push_back({m + ".weight_scale", o.format == out_format::nvfp4 ? "F8_E4M3" : "U8", {n, k / g}, std::uint64_t(n * (k / g))});
    if (o.format == out_format::nvfp4) p.outs.push_back({m + ".weight_global_scale", "F32", {1}, 4});
  } else if (o.format == out_format::fp8_channel || o.format == out_format::fp8_tensor) {
    p.outs.push_back({t.name, "F8_E4M3", {n, k}, std::uint64_t(n * k)});
    const char* sd = o.bf16_work ? "BF16" : "F32";
    const std::uint64_t sb = o.bf16_work ? 2 : 4;
    if (o.format == out_format::fp8_channel)
      p.outs.push_back({m + ".weight_scale", sd, {n, 1}, std::uint64_t(n) * sb});
    else
      p.outs.push_back({m + ".weight_scale", sd, {1}, sb});
  } else {
    qnum::fp8_block::shape s;
    if (qnum::fp8_block::layout(n, k, &s) != qnum::status::ok) fail(where + "bad shape");
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
  return {p, r1 - r0, k, k, dtype == "F16" ? qnum::dtype::fp16 : dtype == "BF16" ? qnum::dtype::bf16 : qnum::dtype::fp32};
}

// Statistics of a whole [n, k] tensor: row ranges on threads, merged (max and min are exact in any order).
template <class T>
qnum::group_stats tensor_stats(const std::uint8_t* data, qnum::dtype tt, std::int64_t n, std::int64_t k, int threads) {
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
                  std::vector<std::vector<std::uint8_t>>& bufs, std::vector<std::int32_t>& zeros, const qnum::group_stats* known) {
  const std::int64_t n = t.shape[0], k = t.shape[1];
  const int threads = o.threads;
  std::atomic<int> bad{0};
  if (o.format == out_format::fp8_channel) {
    std::uint8_t* codes = bufs[0].data();
    parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
      qnum::status st;
      if (o.bf16_work)
        st = qnum::quantize(qnum::presets::ct_fp8_bf16_work, rows_of<T>(data, t.dtype, r0, r1, k), qnum::per_row(),
                            qnum::view(codes + r0 * k, r1 - r0, k),
                            qnum::scales_of(reinterpret_cast<std::uint16_t*>(bufs[1].data()) + r0, r1 - r0, 1));
      else
        st = qnum::quantize(qnum::presets::ct_fp8, rows_of<T>(data, t.dtype, r0, r1, k), qnum::per_row(),
                            qnum::view(codes + r0 * k, r1 - r0, k),
                            qnum::scales_of(reinterpret_cast<float*>(bufs[1].data()) + r0, r1 - r0, 1));
      if (st != qnum::status::ok) bad = 1;
    });
    if (bad) fail(where + "quantization failed");
    return;
  }
  if (o.format == out_format::nvfp4 || o.format == out_format::mxfp4) {
    const bool nv = o.format == out_format::nvfp4;
    const std::int64_t g = qnum::presets::ct_fp4_group_size(nv), groups = k / g;
    const qnum::dtype tt = rows_of<T>(data, t.dtype, 0, 0, k).type;
    float global = 0.0f;
    if (nv) {
      const auto shared = o.shared_global.find(t.name);  // a fused group's scale, from the group's amax
      if (shared != o.shared_global.end())
        global = shared->second;
      else
        global = qnum::presets::ct_nvfp4_global_scale(known ? known->amax : tensor_stats<T>(data, tt, n, k, threads).amax,
                                                      o.bf16_work);
      std::memcpy(bufs[2].data(), &global, 4);
    }
    // weight_packed (element 2i in the low nibble of byte i) and weight_scale (one code a group) in one call
    std::uint8_t* packed = bufs[0].data();
    std::uint8_t* scales = bufs[1].data();
    const auto kind = nv ? qnum::ct::fp4_kind::nvfp4 : qnum::ct::fp4_kind::mxfp4;
    parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
      if (qnum::ct::quantize_pack_fp4(kind, rows_of<T>(data, t.dtype, r0, r1, k), global, qnum::view(packed + r0 * (k / 2), r1 - r0, k / 2),
                                      qnum::view(scales + r0 * groups, r1 - r0, groups), o.bf16_work) != qnum::status::ok)
        bad = 1;
    });
    if (bad) fail(where + "quantization failed");
    return;
  }
  if (o.format == out_format::fp8_tensor) {
    // Per tensor: statistics of row ranges merged (max is exact in any order), one compute_params, then the
    // quantize_row (quantize_value per element): the same bits as qnum::quantize(ct_fp8, per_tensor()) on one thread.
    const qnum::dtype tt = rows_of<T>(data, t.dtype, 0, 0, k).type;
    const qnum::group_stats all = known ? *known : tensor_stats<T>(data, tt, n, k, threads);
    const auto& sch = o.bf16_work ? qnum::presets::ct_fp8_bf16_work : qnum::presets::ct_fp8;
    const qnum::group_params gp = qnum::compute_params(sch, all);
    std::uint8_t* codes = bufs[0].data();
    parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
      const T* p = reinterpret_cast<const T*>(data);
      qnum::quantize_row(sch, gp, p + r0 * k, (r1 - r0) * k, codes + r0 * k, tt);
    });
    if (o.bf16_work) {
      const std::uint16_t sb = static_cast<std::uint16_t>(gp.scale_code);
      std::memcpy(bufs[1].data(), &sb, 2);
    } else {
      const std::uint32_t sb = gp.scale_code;
      std::memcpy(bufs[1].data(), &sb, 4);
    }
    return;
  }
  if (o.format == out_format::fp8_block) {
    qnum::fp8_block::shape s;
    qnum::fp8_block::layout(n, k, &s);
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
  zeros.assign(o.asym ? static_cast<std::size_t>(n * groups) : 0, 0);
  parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
    auto in = rows_of<T>(data, t.dtype, r0, r1, k);
    // int4 codes straight into this row range's weight_packed words (no [n, k] codes between)
    auto* words = reinterpret_cast<std::uint32_t*>(bufs[0].data()) + r0 * qnum::packed_words(k, 4);
    const auto wv = qnum::view(words, r1 - r0, qnum::packed_words(k, 4));
    qnum::status st;
    if (o.asym && !o.bf16_work) {
      float* sc = reinterpret_cast<float*>(bufs[1].data()) + r0 * groups;
      st = qnum::ct::quantize_pack_weight(qnum::presets::ct_w4a16_asym, in, g, wv, qnum::scales_of(sc, r1 - r0, groups),
                                          qnum::view(zeros.data() + r0 * groups, r1 - r0, groups));
    } else if (o.asym) {
      std::uint16_t* sc = reinterpret_cast<std::uint16_t*>(bufs[1].data()) + r0 * groups;
      st = qnum::ct::quantize_pack_weight(qnum::presets::ct_w4a16_asym_bf16_work, in, g, wv, qnum::scales_of(sc, r1 - r0, groups),
                                          qnum::view(zeros.data() + r0 * groups, r1 - r0, groups));
    } else {
      std::uint16_t* sc = reinterpret_cast<std::uint16_t*>(bufs[1].data()) + r0 * groups;
      st = qnum::ct::quantize_pack_weight(o.bf16_work ? qnum::presets::ct_w4a16_sym_bf16_work : qnum::presets::ct_w4a16_sym_bf16, in, g,
                                          wv, qnum::scales_of(sc, r1 - r0, groups));
    }
    if (st != qnum::status::ok) bad = 1;
  });
  if (bad == 1) fail(where + "quantization failed");
}

// W4A16's host tail on either path: packed zero points (asymmetric) and weight_shape.
void finish_w4a16(const options& o, const std::string& where, std::int64_t n, std::int64_t k,
                  const std::vector<std::int32_t>& zeros, std::vector<std::vector<std::uint8_t>>& bufs) {
  const std::int64_t groups = k / o.group;
  std::size_t next = 2;
  if (o.asym) {
    if (qnum::ct::pack_zero_point(qnum::view(zeros.data(), n, groups), 4,
                                  qnum::view(reinterpret_cast<std::uint32_t*>(bufs[2].data()), qnum::packed_words(n, 4), groups)) !=
        qnum::status::ok)
      fail(where + "zero-point packing failed");
    next = 3;
  }
  const std::int64_t shape[2] = {n, k};
  std::memcpy(bufs[next].data(), shape, sizeof shape);
}

// Quantizes one source tensor on the GPU or the CPU; returns the output buffers in plan order. known: the tensor's
// statistics (tensor_stats') where the caller has read them already (the CPU's NVFP4 global scale and FP8 per-tensor
// scale then need no pass of their own), else null.
std::vector<std::vector<std::uint8_t>> quantize_source(const options& o, const std::string& where, const std::uint8_t* data,
                                                       const tensor_info& t, const source_plan& p, bool on_gpu,
                                                       const qnum::group_stats* known = nullptr) {
  const std::int64_t n = t.shape[0], k = t.shape[1];
  std::vector<std::vector<std::uint8_t>> bufs;
  for (auto& ot : p.outs) bufs.emplace_back(ot.bytes);
  std::vector<std::int32_t> zeros;
  if (on_gpu && n > 0 && k > 0) {  // an empty tensor has nothing to compute: the CPU path fills its scalars
    qconv::gpu_tensor g;
    g.format = o.format;
    g.group = o.group;
    g.asym = o.asym;
    g.bf16_work = o.bf16_work;
    const auto shared = o.shared_global.find(t.name);
    if (shared != o.shared_global.end()) {
      g.has_global = true;
      g.global = shared->second;
    }
    g.data = data;
    g.dtype = t.dtype;
    g.n = n;
    g.k = k;
    std::string err;
    if (!qconv::gpu_quantize(g, bufs, zeros, err)) fail(where + err + " (--device cpu avoids the GPU)");
  } else if (t.dtype == "F32") {
    cpu_quantize<float>(o, where, data, t, bufs, zeros, known);
  } else {
    cpu_quantize<std::uint16_t>(o, where, data, t, bufs, zeros, known);
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

// "1 shard", "2 shards".
std::string count_of(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string duration_text(double secs) {
  char b[32];
  if (secs < 60) std::snprintf(b, sizeof b, "%.0fs", secs);
  else if (secs < 3600) std::snprintf(b, sizeof b, "%dm%02ds", int(secs) / 60, int(secs) % 60);
  else std::snprintf(b, sizeof b, "%dh%02dm", int(secs) / 3600, int(secs) % 3600 / 60);
  return b;
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
    // ETA from the bytes read so far (quantized and copied tensors alike).
    const std::string eta = rate > 0 ? duration_text(double(total_bytes - bytes) / 1e6 / rate) : "?";
    if (tty) {
      const int width = 30, fill = total_bytes ? int(width * double(bytes) / double(total_bytes)) : width;
      std::fprintf(stderr, "\r[%s%s] %zu/%zu tensors  %.1f/%.1f MB  %.0f MB/s  ETA %s ", std::string(fill, '#').c_str(),
                   std::string(width - fill, ' ').c_str(), done, total_tensors, bytes / 1e6, total_bytes / 1e6, rate, eta.c_str());
      if (done == total_tensors) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "qnum-convert: [%zu/%zu] %s %s (%.1f MB, %.0f MB/s, ETA %s)\n", done, total_tensors, name.c_str(),
                   what.c_str(), b / 1e6, rate, eta.c_str());
    }
  }
};

void write_all(std::FILE* f, const void* p, std::size_t n, const std::string& path) {
  if (n && std::fwrite(p, 1, n, f) != n) fail(path + ": write failed");
}

// Writes a whole file and syncs it to disk.
void write_text(const fs::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) fail(path.string() + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, &std::fclose);
  write_all(f, text.data(), text.size(), path.string());
  if (std::fflush(f) != 0 || fsync(fileno(f)) != 0) fail(path.string() + ": write failed");
}

void sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    ::close(fd);
  }
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

constexpr const char* usage_text =
    "usage: qnum-convert [--format FORMAT] [options] INPUT OUTPUT_DIR\n"
    "       qnum-convert --device-info | --version | --help\n"
    "\n"
    "  FORMAT: w4a16 (the default) | fp8-block | fp8-channel | fp8-tensor | nvfp4 | mxfp4\n"
    "  INPUT: checkpoint directory (model.safetensors.index.json + shards, or *.safetensors) or one .safetensors file\n"
    "  OUTPUT_DIR: built beside itself under a hidden temporary name and moved into place when complete;\n"
    "              must not exist or be empty unless --overwrite is given\n"
    "\n"
    "options:\n"
    "  --group 32|128       w4a16 group size (default 128; w4a16 only)\n"
    "  --asym               w4a16 asymmetric, with weight_zero_point (w4a16 only)\n"
    "  --include REGEX      quantize tensors whose name matches (repeatable; replaces the default selection)\n"
    "  --exclude REGEX      do not quantize tensors whose name matches (repeatable)\n"
    "  --threads N          CPU threads, N >= 1 (default: all cores)\n"
    "  --device auto|cpu|gpu  where to quantize (default auto: the GPU when there is one)\n"
    "  --overwrite          replace a non-empty OUTPUT_DIR (the old one is removed after the new one is in place)\n"
    "  --allow-nonfinite    convert weights holding NaN/Inf (with a warning naming them) instead of refusing\n"
    "  --work-dtype fp32|bf16  arithmetic (default fp32: on the fp32-upcast weight); bf16: byte-equal with\n"
    "                       compressed-tensors / llm-compressor on a bf16 model (BF16 weights only; not fp8-block)\n"
    "  --fuse none|A,B[,C]  nvfp4: layers sharing one global scale, children of one module (repeatable; default\n"
    "                       q_proj,k_proj,v_proj  gate_proj,up_proj  q_a_proj,kv_a_proj_with_mqa  w1,w3)\n"
    "  --no-progress        no progress output\n"
    "  --device-info        print what --device auto would use, and exit\n"
    "  --version            print the version, and exit\n"
    "  --help               print this help, and exit\n"
    "\n"
    "  default layers: 2-D tensors named *.weight except embeddings, norms and lm_head\n";

// A command-line error: one line naming the problem, a pointer to --help, exit status 2.
[[noreturn]] void usage_error(const std::string& m) {
  std::fprintf(stderr, "qnum-convert: %s (qnum-convert --help lists the options)\n", m.c_str());
  std::exit(2);
}

// The whole argument as a decimal integer in [lo, hi], or a usage error ("128abc", "-3", "" are refused).
std::int64_t parse_int(const std::string& opt, const std::string& v, std::int64_t lo, std::int64_t hi) {
  std::size_t i = 0;
  std::int64_t x = 0;
  bool neg = false;
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) neg = v[i++] == '-';
  const std::size_t digits = i;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9' && x <= hi; ++i) x = x * 10 + (v[i] - '0');
  if (i == digits || i != v.size() || (neg ? -x : x) < lo || (neg ? -x : x) > hi)
    usage_error(opt + ": '" + v + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return neg ? -x : x;
}

// A clearer reason than the CUDA runtime's own string for the common cases.
std::string gpu_reason(const std::string& why) {
  if (why.find("driver version is insufficient") != std::string::npos)
    return "no usable NVIDIA driver on this machine (CUDA: " + why + ")";
  if (why.find("no CUDA-capable device") != std::string::npos) return "no CUDA device on this machine";
  return why;
}

// --device: auto takes the GPU where this build has the path and a device is present.
bool use_gpu(const options& o) {
  if (o.device == device_choice::cpu) return false;
  std::string why, name;
  const int count = qconv::gpu_devices(why, name);
  if (count == 0) {
    if (o.device == device_choice::gpu) fail("--device gpu: no GPU (" + gpu_reason(why) + ")");
    std::fprintf(stderr, "qnum-convert: quantizing on the CPU, %s (no GPU: %s)\n", count_of(std::size_t(o.threads), "thread").c_str(),
                 gpu_reason(why).c_str());
    return false;
  }
  std::fprintf(stderr, "qnum-convert: quantizing on GPU 0 (%s)\n", name.c_str());
  return true;
}

// ---- input validation ----------------------------------------------------------------------------------

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// The index, when the input is a directory with one, against the shards it names: every shard present
// (list_checkpoint), every *.safetensors of the directory listed, every tensor of the index in the shard it
// names, every tensor of a shard in the index. Without an index: no tensor name in two files.
void check_index(const options& o, const std::vector<std::unique_ptr<safetensors_file>>& inputs) {
  const fs::path index = fs::path(o.in) / "model.safetensors.index.json";
  std::map<std::string, std::string> where;  // tensor -> file name
  if (!fs::is_directory(o.in) || !fs::exists(index)) {
    for (auto& f : inputs)
      for (auto& t : f->tensors()) {
        const std::string fn = fs::path(f->path()).filename().string();
        auto r = where.emplace(t.name, fn);
        if (!r.second) fail("tensor '" + t.name + "' is in both " + r.first->second + " and " + fn);
      }
    return;
  }
  std::ifstream is(index);
  const json j = json::parse(is);  // list_checkpoint parsed it already
  std::set<std::string> listed;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    where[it.key()] = it.value().get<std::string>();
    listed.insert(it.value().get<std::string>());
  }
  for (auto& e : fs::directory_iterator(o.in))
    if (e.path().extension() == ".safetensors" && !listed.count(e.path().filename().string()))
      fail(index.string() + ": " + e.path().filename().string() +
           " is in the directory but not in the index (its tensors would be lost): add it to the index or move it away");
  std::map<std::string, std::string> found;
  for (auto& f : inputs) {
    const std::string fn = fs::path(f->path()).filename().string();
    for (auto& t : f->tensors()) {
      auto it = where.find(t.name);
      if (it == where.end())
        fail(index.string() + ": tensor '" + t.name + "' of " + fn + " is not in the index (an inconsistent index)");
      if (it->second != fn)
        fail(index.string() + ": tensor '" + t.name + "' is in " + fn + " but the index names " + it->second);
      found[t.name] = fn;
    }
  }
  for (auto& kv : where)
    if (!found.count(kv.first))
      fail(index.string() + ": tensor '" + kv.first + "' is listed in " + kv.second + " but that shard does not hold it");
}

// config.json of the input (beside a single file), or {} when there is none; a corrupt one is an error.
json read_config(const options& o) {
  const fs::path p = fs::is_directory(o.in) ? fs::path(o.in) / "config.json" : fs::path(o.in).parent_path() / "config.json";
  if (!fs::exists(p)) return json::object();
  std::ifstream cf(p);
  json cfg;
  try {
    cfg = json::parse(cf);
  } catch (const std::exception& e) {
    fail(p.string() + ": corrupt JSON: " + e.what());
  }
  if (!cfg.is_object()) fail(p.string() + ": not a JSON object");
  return cfg;
}

std::vector<std::string> architectures(const json& cfg) {
  std::vector<std::string> a;
  if (cfg.contains("architectures") && cfg["architectures"].is_array())
    for (auto& x : cfg["architectures"])
      if (x.is_string()) a.push_back(x.get<std::string>());
  return a;
}

std::string string_field(const json& cfg, const char* key) {
  return cfg.contains(key) && cfg[key].is_string() ? cfg[key].get<std::string>() : std::string();
}

// Models whose projections are transformers' Conv1D, stored [in_features, out_features]: refused (quantizing
// them as [out, in] Linear weights gives a checkpoint that loads with missing keys and wrong weights).
void refuse_conv1d(const json& cfg) {
  static const std::set<std::string> types = {"gpt2", "openai-gpt", "imagegpt", "decision_transformer"};
  static const std::vector<std::string> prefixes = {"GPT2", "OpenAIGPT", "ImageGPT", "DecisionTransformer"};
  std::string hit;
  const std::string mt = string_field(cfg, "model_type");
  if (types.count(mt)) hit = "model_type '" + mt + "'";
  for (auto& a : architectures(cfg))
    for (auto& p : prefixes)
      if (hit.empty() && a.rfind(p, 0) == 0) hit = "architecture " + a;
  if (!hit.empty())
    fail("config.json: " + hit + " stores its projections as Conv1D weights [in_features, out_features]; qnum-convert "
         "quantizes Linear weights [out_features, in_features] only, so this model is not supported");
}

// Whether the engine will build an lm_head that the checkpoint has no weight for (tied to the embeddings):
// tie_word_embeddings true (also in text_config), or a language-model architecture.
bool lm_head_tied(const json& cfg) {
  auto tied_in = [](const json& c) {
    return c.is_object() && c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean() &&
           c["tie_word_embeddings"].get<bool>();
  };
  if (tied_in(cfg) || (cfg.contains("text_config") && tied_in(cfg["text_config"]))) return true;
  for (auto& a : architectures(cfg))
    if (ends_with(a, "ForCausalLM") || ends_with(a, "LMHeadModel") || ends_with(a, "ForConditionalGeneration")) return true;
  return false;
}

// A 2-D *.weight the engine builds as a Linear (embeddings and norms are not): an unquantized one goes to ignore.
bool linear_like(const tensor_info& t) {
  static const std::regex not_linear("(embed|wte|wpe|norm)", std::regex::icase);
  return t.shape.size() == 2 && t.name.size() > 7 && ends_with(t.name, ".weight") && !std::regex_search(t.name, not_linear);
}

// What qnum-convert reads of a BF16 / F16 / F32 tensor before quantizing it, in one pass on the threads: its NaN and
// Inf elements (all exponent bits set) and, with want_stats, the statistics of the others (tensor_stats': amax,
// min(x, 0), max(x, 0); NaN and Inf ignored), found on the bits (|x| orders as its bits do).
struct tensor_scan {
  std::uint64_t nonfinite = 0;
  qnum::group_stats stats;
};

// Elements [i0, e) of p: the count in a counter as wide as the elements, and the largest |x| bits of the positive
// and of the negative finite elements in signed ones (|x|'s bits leave the sign bit clear), so the compiler keeps
// the loop in vectors of them (SSE2 has pmaxsw).
template <class U, bool Stats>
void scan_block(const U* p, std::int64_t i0, std::int64_t e, U exp_mask, std::uint64_t& count, U& pos_bits, U& neg_bits) {
  using S = std::make_signed_t<U>;
  constexpr U abs_mask = static_cast<U>(static_cast<U>(~U{0}) >> 1), sign = static_cast<U>(~abs_mask);
  U c = 0;
  S mp = 0, mn = 0;
  for (std::int64_t i = i0; i < e; ++i) {
    const U v = p[i];
    const bool nonfinite = (v & exp_mask) == exp_mask;
    c = static_cast<U>(c + nonfinite);
    if constexpr (Stats) {
      // A finite x's bits as a signed integer are |x|'s bits where x >= 0 and negative where not; with the sign bit
      // flipped the other way round (the maxima start at 0: the other sign never counts). Non-finite elements: 0.
      // (Written so, g++ 12 vectorizes the loop; a select of the sign, or one select before both maxima, it does not.)
      const S a = nonfinite ? S{0} : static_cast<S>(v);
      const S b = nonfinite ? S{0} : static_cast<S>(v ^ sign);
      mp = std::max(mp, a);
      mn = std::max(mn, b);
    }
  }
  count += c;
  pos_bits = std::max(pos_bits, static_cast<U>(mp));
  neg_bits = std::max(neg_bits, static_cast<U>(mn));
}

tensor_scan scan_tensor(const std::uint8_t* data, const tensor_info& t, int threads, bool want_stats) {
  const std::int64_t n = t.shape[0], k = t.shape[1];
  const bool f32 = t.dtype == "F32";
  std::atomic<std::uint64_t> bad{0};
  std::atomic<std::uint32_t> top_pos{0}, top_neg{0};  // the largest |x| bits of the positive / negative elements
  auto raise = [](std::atomic<std::uint32_t>& top, std::uint32_t m) {
    for (std::uint32_t cur = top.load(); m > cur && !top.compare_exchange_weak(cur, m);) {
    }
  };
  parallel_rows(n, 1, threads, [&](std::int64_t r0, std::int64_t r1) {
    std::uint64_t c = 0;
    std::uint32_t p32 = 0, n32 = 0;
    std::uint16_t p16 = 0, n16 = 0;
    constexpr std::int64_t block = 32768;  // below 2^16: the 16-bit counter does not wrap
    for (std::int64_t i0 = r0 * k; i0 < r1 * k; i0 += block) {
      const std::int64_t e = std::min(i0 + block, r1 * k);
      if (f32) {
        const auto* p = reinterpret_cast<const std::uint32_t*>(data);
        if (want_stats) scan_block<std::uint32_t, true>(p, i0, e, 0x7F800000u, c, p32, n32);
        else scan_block<std::uint32_t, false>(p, i0, e, 0x7F800000u, c, p32, n32);
      } else {
        const std::uint16_t mask = t.dtype == "F16" ? 0x7C00 : 0x7F80;
        const auto* p = reinterpret_cast<const std::uint16_t*>(data);
        if (want_stats) scan_block<std::uint16_t, true>(p, i0, e, mask, c, p16, n16);
        else scan_block<std::uint16_t, false>(p, i0, e, mask, c, p16, n16);
      }
    }
    bad += c;
    raise(top_pos, f32 ? p32 : p16);
    raise(top_neg, f32 ? n32 : n16);
  });
  auto value = [&](std::uint32_t bits) {
    float v;
    if (f32) std::memcpy(&v, &bits, 4);
    else v = t.dtype == "F16" ? qnum::from_fp16(static_cast<std::uint16_t>(bits)) : qnum::from_bf16(static_cast<std::uint16_t>(bits));
    return v;
  };
  tensor_scan r;
  r.nonfinite = bad;
  const std::uint32_t mp = top_pos, mn = top_neg;
  r.stats.max = value(mp);
  r.stats.min = mn != 0 ? -value(mn) : 0.0f;
  r.stats.amax = value(std::max(mp, mn));
  return r;
}

// ---- the output directory --------------------------------------------------------------------------------

// The tool's working names beside OUTPUT_DIR: .NAME.qnum-tmp.PID (being built) and .NAME.qnum-old.PID (the
// replaced directory, between the swap and its removal).
std::string work_prefix(const fs::path& out) { return "." + out.filename().string() + ".qnum-"; }

// Removes what a killed earlier run left: beside the target, work directories whose process is gone; inside
// it, the hidden per-file temporaries (.NAME.qnum-tmp) of earlier qnum-convert versions.
void clean_leftovers(const fs::path& out) {
  const std::string pre = work_prefix(out);
  std::error_code ec;
  for (auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string fn = e.path().filename().string();
    if (fn.rfind(pre, 0) != 0) continue;
    const std::string rest = fn.substr(pre.size());
    const std::size_t dot = rest.find('.');
    if (dot == std::string::npos || (rest.substr(0, dot) != "tmp" && rest.substr(0, dot) != "old")) continue;
    const std::string pid = rest.substr(dot + 1);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours to judge)
    fs::remove_all(e.path(), ec);
    std::fprintf(stderr, "qnum-convert: removed %s, left by an earlier run that did not finish\n", e.path().c_str());
  }
  if (fs::is_directory(out, ec))
    for (auto& e : fs::directory_iterator(out, ec)) {
      const std::string fn = e.path().filename().string();
      if (!fn.empty() && fn[0] == '.' && ends_with(fn, ".qnum-tmp") && e.is_regular_file()) {
        fs::remove(e.path(), ec);
        std::fprintf(stderr, "qnum-convert: removed %s, left by an earlier run that did not finish\n", e.path().c_str());
      }
    }
}

// Copies the input directory's other files and subfolders (tokenizer, 1_Pooling/, ...), hidden entries aside.
void copy_others(const fs::path& from, const fs::path& to, bool top) {
  for (auto& e : fs::directory_iterator(from)) {
    const std::string fn = e.path().filename().string();
    if (fn.empty() || fn[0] == '.') continue;
    if (top && (e.path().extension() == ".safetensors" || fn == "config.json" || fn == "model.safetensors.index.json")) continue;
    if (e.is_directory()) {
      fs::create_directory(to / fn);
      copy_others(e.path(), to / fn, false);
    } else if (e.is_regular_file()) {
      fs::copy_file(e.path(), to / fn);  // follows links (a Hugging Face cache snapshot links to its blobs)
    }
  }
}

// Moves the complete directory `built` to `out`: a rename when out is absent or empty; otherwise (--overwrite)
// an atomic exchange where the kernel has one (the old directory then sits at `built` and is removed), or two
// renames through .NAME.qnum-old.PID. At no moment does `out` hold a mixture of two conversions.
void swap_in(const fs::path& built, const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out) || fs::is_empty(out)) {
    fs::rename(built, out);
  } else {
#ifdef RENAME_EXCHANGE
    if (::renameat2(AT_FDCWD, built.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0) {
      sync_dir(out.parent_path());
      fs::remove_all(built, ec);
      return;
    }
#endif
    const fs::path old = out.parent_path() / (work_prefix(out) + "old." + std::to_string(getpid()));
    fs::rename(out, old);
    fs::rename(built, out);
    sync_dir(out.parent_path());
    fs::remove_all(old, ec);
  }
  sync_dir(out.parent_path());
}

// ---- the conversion ------------------------------------------------------------------------------------

json weights_args(const options& o) {
  if (o.format == out_format::w4a16)
    return {{"num_bits", 4}, {"type", "int"}, {"symmetric", !o.asym}, {"group_size", o.group}, {"strategy", "group"},
            {"block_structure", nullptr}, {"dynamic", false}, {"actorder", nullptr}, {"observer", "minmax"},
            {"observer_kwargs", json::object()}};
  if (o.format == out_format::nvfp4 || o.format == out_format::mxfp4) {
    const bool nv = o.format == out_format::nvfp4;
    return {{"num_bits", 4}, {"type", "float"}, {"symmetric", true}, {"group_size", nv ? 16 : 32},
            {"strategy", nv ? "tensor_group" : "group"}, {"dynamic", false},
            {"scale_dtype", nv ? "torch.float8_e4m3fn" : "torch.uint8"}};
  }
  const bool ch = o.format == out_format::fp8_channel;
  return {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"group_size", nullptr},
          {"strategy", ch ? "channel" : "tensor"}, {"dynamic", false}};
}

// The compressed-tensors release whose checkpoint format and QuantizationConfig the output reproduces
// (quantization_config.version, as compressed-tensors writes its own version there).
constexpr const char* ct_version = "0.20.0";

json quantization_config(const options& o, const json& ignore) {
  if (o.format == out_format::fp8_block)
    return {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"}, {"weight_block_size", {128, 128}}};
  if (o.format == out_format::w4a16)
    return {{"quant_method", "compressed-tensors"},
            {"format", "pack-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", weights_args(o)}, {"input_activations", nullptr},
                                            {"output_activations", nullptr}, {"format", "pack-quantized"}}}}},
            {"ignore", ignore},
            {"version", ct_version}};
  // compressed-tensors QuantizationConfig of its NVFP4A16 / MXFP4A16 / FP8_DYNAMIC preset schemes, in the key order
  // QuantizationConfig.model_dump() writes (tests/data/golden_*_config.json), with the group's format set
  // as compressed-tensors sets it when it compresses, and its version.
  const char* fmt = o.format == out_format::nvfp4   ? "nvfp4-pack-quantized"
                    : o.format == out_format::mxfp4 ? "mxfp4-pack-quantized"
                                                    : "float-quantized";
  // FP8 activations: dynamic per token (a static per-tensor input scale would need calibration data).
  const json a = o.format == out_format::fp8_channel || o.format == out_format::fp8_tensor
                     ? json{{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"group_size", nullptr},
                            {"strategy", "token"}, {"dynamic", true}}
                     : json(nullptr);
  return {{"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", weights_args(o)}, {"input_activations", a},
                                          {"output_activations", nullptr}, {"format", fmt}}}}},
          {"quant_method", "compressed-tensors"},
          {"kv_cache_scheme", nullptr},
          {"format", fmt},
          {"quantization_status", "compressed"},
          {"global_compression_ratio", nullptr},
          {"ignore", ignore},
          {"moe_sparsity_config", nullptr},
          {"version", ct_version}};
}

// Writes one output shard (header, copied and quantized tensors) to `path` and syncs it.
void write_shard(const options& o, const safetensors_file& f, const std::vector<source_plan>& plan, const fs::path& path,
                 bool on_gpu, progress& prog, std::set<std::tuple<std::string, std::int64_t, std::int64_t>>& gpu_checked) {
  json header = json::object();
  header["__metadata__"] = f.metadata().is_object() ? f.metadata() : json{{"format", "pt"}};
  std::uint64_t off = 0;
  for (auto& p : plan)
    for (auto& ot : p.outs) {
      header[ot.name] = {{"dtype", ot.dtype}, {"shape", ot.shape}, {"data_offsets", {off, off + ot.bytes}}};
      off += ot.bytes;
    }
  std::string hs = header.dump();
  while (hs.size() % 8 != 0) hs += ' ';
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) fail(path.string() + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(out, &std::fclose);
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(std::uint64_t(hs.size()) >> (8 * i));
  write_all(out, len, 8, path.string());
  write_all(out, hs.data(), hs.size(), path.string());
  for (auto& p : plan) {
    const tensor_info& t = *p.src;
    const std::uint8_t* data = f.data(t);
    if (!p.quantize) {
      write_all(out, data, t.end - t.begin, path.string());
      prog.step(t.name, "copied", t.end - t.begin);
    } else {
      const std::string where = f.path() + ": tensor '" + t.name + "': ";
      // One read for the NaN/Inf count and, where the CPU computes an NVFP4 tensor's own global scale or an FP8
      // per-tensor scale, its statistics (a fused layer's count is known from the read that found its group's amax).
      const bool want_stats = !on_gpu && ((o.format == out_format::nvfp4 && o.shared_global.count(t.name) == 0) ||
                                          o.format == out_format::fp8_tensor);
      const auto known = o.nonfinite_of.find(t.name);
      tensor_scan scan;
      if (known != o.nonfinite_of.end()) scan.nonfinite = known->second;
      else scan = scan_tensor(data, t, o.threads, want_stats);
      if (const std::uint64_t bad = scan.nonfinite) {
        const std::string what = count_of(bad, "non-finite value") + " (NaN or Inf) of " + std::to_string(t.numel());
        if (!o.allow_nonfinite) fail(where + what + "; refused (--allow-nonfinite converts it anyway)");
        std::fprintf(stderr, "qnum-convert: warning: %s%s, converted as --allow-nonfinite says (NaN -> the zero code, "
                             "+-Inf -> the largest code of its sign; scales from the finite values)\n", where.c_str(), what.c_str());
      }
      auto bufs = quantize_source(o, where, data, t, p, on_gpu, want_stats ? &scan.stats : nullptr);
      if (on_gpu && t.shape[0] > 0 && t.shape[1] > 0 && gpu_checked.insert({t.dtype, t.shape[0], t.shape[1]}).second) {
        const std::string diff = cpu_disagrees(o, where, data, t, p, bufs);
        if (!diff.empty()) fail(diff);
      }
      for (auto& b : bufs) write_all(out, b.data(), b.size(), path.string());
      prog.step(t.name, std::string("-> ") + format_name(o.format), t.end - t.begin);
    }
    f.release(t);
  }
  if (std::fflush(out) != 0 || fsync(fileno(out)) != 0) fail(path.string() + ": write failed");
}

// ---- NVFP4 fused layers --------------------------------------------------------------------------------

// One read of a whole tensor of a file: its NaN/Inf count and the statistics of the other elements.
tensor_scan scan_of(const safetensors_file& f, const tensor_info& t, int threads) {
  const tensor_scan r = scan_tensor(f.data(t), t, threads, true);
  f.release(t);
  return r;
}

struct fused_member {
  const safetensors_file* file;
  const tensor_info* tensor;
};

// The fused groups of an NVFP4 conversion, as llm-compressor forms them (FUSED_LAYER_NAMES): for each group of leaf
// names (o.fuse), the children of one module that has every one of them (P.q_proj, P.k_proj, P.v_proj under the same
// P, in any shard). A group whose members are partly selected is refused: llm-compressor requires them all
// quantized alike, and an engine fusing them could not load it.
std::vector<std::vector<fused_member>> fused_groups(const options& o, const std::vector<std::unique_ptr<safetensors_file>>& inputs,
                                                    const std::vector<std::vector<source_plan>>& plans) {
  std::map<std::string, std::pair<fused_member, bool>> by_name;  // name -> (tensor, selected)
  for (std::size_t fi = 0; fi < inputs.size(); ++fi)
    for (auto& p : plans[fi]) by_name[p.src->name] = {{inputs[fi].get(), p.src}, p.quantize};
  std::vector<std::vector<fused_member>> groups;
  for (auto& kv : by_name) {
    if (!ends_with(kv.first, ".weight")) continue;
    const std::string m = module_of(kv.first);
    const std::size_t dot = m.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : m.substr(0, dot + 1);
    const std::string leaf = dot == std::string::npos ? m : m.substr(dot + 1);
    for (auto& def : o.fuse) {
      if (def.empty() || leaf != def[0]) continue;  // each group once, from its first member
      std::vector<std::string> names;
      bool all = true;
      for (auto& l : def) {
        names.push_back(parent + l + ".weight");
        all = all && by_name.count(names.back());
      }
      if (!all) continue;
      std::string sel, unsel;
      std::vector<fused_member> g;
      for (auto& nm : names) {
        std::string& list = by_name[nm].second ? sel : unsel;
        list += (list.empty() ? "'" : ", '") + nm + "'";
        g.push_back(by_name[nm].first);
      }
      if (sel.empty()) continue;
      if (!unsel.empty())
        fail("fused layers: " + sel + " selected for nvfp4 but " + unsel + " not; the members of a fused layer share one "
             "weight_global_scale and must be quantized alike (--fuse none converts each tensor with its own)");
      groups.push_back(std::move(g));
    }
  }
  return groups;
}

// Each group's weight_global_scale from the largest |x| over its members (llm-compressor's
// Observer.get_global_scale: generate_gparam on the group's absmax), into o.shared_global.
void share_global_scales(options& o, const std::vector<std::vector<fused_member>>& groups) {
  for (auto& g : groups) {
    float amax = 0.0f;
    for (auto& m : g) {
      const tensor_scan sc = scan_of(*m.file, *m.tensor, o.threads);
      amax = std::max(amax, sc.stats.amax);
      o.nonfinite_of[m.tensor->name] = sc.nonfinite;  // the writer does not count them again
    }
    const float gs = qnum::presets::ct_nvfp4_global_scale(amax, o.bf16_work);
    for (auto& m : g) o.shared_global[m.tensor->name] = gs;
  }
  if (!groups.empty())
    std::fprintf(stderr, "qnum-convert: %s share their weight_global_scale (--fuse none: one per tensor)\n",
                 count_of(groups.size(), "fused layer group").c_str());
}

int run(options o) {
  // 1. Validate every input before anything is quantized or written: the shards' headers, the index against
  //    them, config.json, the model type, the plan of every tensor, the output directory.
  std::vector<std::string> files;
  std::string err;
  if (!qconv::list_checkpoint(o.in, files, err)) fail(err);
  std::vector<std::unique_ptr<safetensors_file>> inputs;
  for (auto& path : files) {
    auto f = std::make_unique<safetensors_file>();
    if (!f->open(path, err)) fail(err);
    inputs.push_back(std::move(f));
  }
  check_index(o, inputs);
  json cfg = read_config(o);
  refuse_conv1d(cfg);
  std::vector<std::vector<source_plan>> plans;
  progress prog;
  json ignore = json::array();
  bool has_lm_head = false;
  std::size_t quantized = 0;
  for (auto& f : inputs) {
    std::vector<source_plan> ps;
    for (auto& t : f->tensors()) {
      ps.push_back(plan_source(o, *f, t));
      ++prog.total_tensors;
      prog.total_bytes += t.end - t.begin;
      quantized += ps.back().quantize;
      if (t.name == "lm_head.weight" || ends_with(t.name, ".lm_head.weight")) has_lm_head = true;
      if (!ps.back().quantize && linear_like(t)) ignore.push_back(module_of(t.name));
    }
    plans.push_back(std::move(ps));
  }
  if (quantized == 0)
    fail("no tensor selected for quantization (the default selection" + std::string(o.include.empty() ? "" : ", --include") +
         (o.exclude.empty() ? "" : " and --exclude") + " left none): the output would not be quantized");
  if (!has_lm_head && lm_head_tied(cfg)) ignore.push_back("lm_head");  // built by the engine, tied to the embeddings
  std::vector<std::vector<fused_member>> fused;
  if (o.format == out_format::nvfp4) fused = fused_groups(o, inputs, plans);

  fs::path out = fs::absolute(o.out).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();
  const fs::path in_abs = fs::absolute(o.in).lexically_normal();
  const bool from_dir = fs::is_directory(o.in);
  if (from_dir) {
    const auto rel = out.lexically_relative(fs::weakly_canonical(in_abs));
    const auto rel2 = fs::weakly_canonical(out).lexically_relative(fs::weakly_canonical(in_abs));
    for (auto& r : {rel, rel2})
      if (!r.empty() && *r.begin() != "..") fail(out.string() + ": the output directory is inside the input directory");
  }
  clean_leftovers(out);
  if (fs::exists(out)) {
    if (!fs::is_directory(out)) fail(out.string() + ": exists and is not a directory");
    if (!fs::is_empty(out) && !o.overwrite)
      fail(out.string() + ": the output directory is not empty (--overwrite replaces it once the new one is complete)");
  }
  const bool on_gpu = use_gpu(o);
  share_global_scales(o, fused);

  // 2. Build the whole output in .NAME.qnum-tmp.PID beside the target; any failure removes it.
  const fs::path tmp = out.parent_path() / (work_prefix(out) + "tmp." + std::to_string(getpid()));
  fs::create_directories(out.parent_path());
  fs::create_directory(tmp);
  try {
    // The GPU path's self-check: the first tensor of each (dtype, shape) is also quantized on the CPU (the shape
    // picks the kernel), and a single differing byte stops the run.
    std::set<std::tuple<std::string, std::int64_t, std::int64_t>> gpu_checked;
    prog.tty = isatty(2) != 0;
    prog.enabled = o.progress;
    json weight_map = json::object();
    std::uint64_t total_size = 0;
    for (std::size_t fi = 0; fi < inputs.size(); ++fi) {
      const std::string fn = fs::path(inputs[fi]->path()).filename().string();
      write_shard(o, *inputs[fi], plans[fi], tmp / fn, on_gpu, prog, gpu_checked);
      for (auto& p : plans[fi])
        for (auto& ot : p.outs) {
          weight_map[ot.name] = fn;
          total_size += ot.bytes;
        }
    }
    cfg["quantization_config"] = quantization_config(o, ignore);
    write_text(tmp / "config.json", cfg.dump(2) + "\n");
    if (from_dir && (files.size() > 1 || fs::exists(fs::path(o.in) / "model.safetensors.index.json"))) {
      json idx = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
      write_text(tmp / "model.safetensors.index.json", idx.dump(2) + "\n");
    }
    if (from_dir) copy_others(o.in, tmp, true);
    sync_dir(tmp);
    // 3. Complete: swap it in.
    swap_in(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::fprintf(stderr, "qnum-convert: wrote %s (%s, %s quantized, %s)\n", out.c_str(), count_of(prog.total_tensors, "tensor").c_str(),
               std::to_string(quantized).c_str(), count_of(inputs.size(), "shard").c_str());
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
  bool group_given = false, fuse_given = false, fuse_none = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--format") {
      const std::string f = next();
      if (f == "w4a16") o.format = out_format::w4a16;
      else if (f == "fp8-block") o.format = out_format::fp8_block;
      else if (f == "fp8-channel") o.format = out_format::fp8_channel;
      else if (f == "fp8-tensor") o.format = out_format::fp8_tensor;
      else if (f == "nvfp4") o.format = out_format::nvfp4;
      else if (f == "mxfp4") o.format = out_format::mxfp4;
      else usage_error("unknown format '" + f + "' (w4a16, fp8-block, fp8-channel, fp8-tensor, nvfp4 or mxfp4)");
    } else if (a == "--group") {
      o.group = parse_int(a, next(), 1, 1 << 20);
      group_given = true;
      if (o.group != 32 && o.group != 128) usage_error("--group must be 32 or 128");
    } else if (a == "--asym") {
      o.asym = true;
    } else if (a == "--include" || a == "--exclude") {
      const std::string re = next();
      try {
        (a == "--include" ? o.include : o.exclude).emplace_back(re);
      } catch (const std::regex_error& e) {
        usage_error(a + ": bad regular expression '" + re + "': " + e.what());
      }
    } else if (a == "--threads") {
      o.threads = static_cast<int>(parse_int(a, next(), 1, 4096));
    } else if (a == "--device") {
      const std::string d = next();
      if (d == "auto") o.device = device_choice::automatic;
      else if (d == "cpu") o.device = device_choice::cpu;
      else if (d == "gpu") o.device = device_choice::gpu;
      else usage_error("--device must be auto, cpu or gpu");
    } else if (a == "--device-info") {
      std::string why, name;
      const int count = qconv::gpu_devices(why, name);
      if (count == 0) std::printf("gpu: none (%s)\n", gpu_reason(why).c_str());
      else std::printf("gpu: %s (device 0 of %d)\n", name.c_str(), count);
      return 0;
    } else if (a == "--overwrite") {
      o.overwrite = true;
    } else if (a == "--allow-nonfinite") {
      o.allow_nonfinite = true;
    } else if (a == "--work-dtype") {
      const std::string w = next();
      if (w == "fp32") o.bf16_work = false;
      else if (w == "bf16") o.bf16_work = true;
      else usage_error("--work-dtype must be fp32 or bf16");
    } else if (a == "--fuse") {
      const std::string v = next();
      if (!fuse_given) o.fuse.clear();
      fuse_given = true;
      if (v == "none") {
        fuse_none = true;
      } else {
        std::vector<std::string> names;
        std::size_t b = 0;
        for (;;) {
          const std::size_t e = v.find(',', b);
          names.push_back(v.substr(b, e == std::string::npos ? std::string::npos : e - b));
          if (e == std::string::npos) break;
          b = e + 1;
        }
        for (auto& n : names)
          if (n.empty() || n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
            usage_error("--fuse: '" + v + "' is not 'none' or a comma-separated list of layer names (q_proj,k_proj,v_proj)");
        if (names.size() < 2) usage_error("--fuse: '" + v + "' names one layer; a fused group has two or more");
        o.fuse.push_back(names);
      }
    } else if (a == "--no-progress") {
      o.progress = false;
    } else if (a == "-h" || a == "--help") {
      std::fputs(usage_text, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("qnum-convert %d.%d.%d\n", QNUM_VERSION_MAJOR, QNUM_VERSION_MINOR, QNUM_VERSION_PATCH);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      usage_error("unknown option '" + a + "'");
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2) usage_error("expected INPUT and OUTPUT_DIR, got " + count_of(pos.size(), "path"));
  // Options a format does not use are errors rather than silently ignored.
  if (o.format != out_format::w4a16 && (group_given || o.asym))
    usage_error(std::string(group_given ? "--group" : "--asym") + " applies to w4a16 only, not " + format_name(o.format) +
                " (whose group is fixed by the format)");
  if (fuse_given && o.format != out_format::nvfp4)
    usage_error(std::string("--fuse applies to nvfp4 only (the one format with a per-tensor global scale), not ") + format_name(o.format));
  if (fuse_none && !o.fuse.empty()) usage_error("--fuse none cannot be combined with fused groups");
  if (o.bf16_work && o.format == out_format::fp8_block)
    usage_error("--work-dtype bf16 applies to the compressed-tensors formats; fp8-block follows DeepGEMM, which computes in fp32");
  o.in = pos[0];
  o.out = pos[1];
  if (o.threads <= 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
