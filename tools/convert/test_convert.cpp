// tools/convert/test_convert.cpp: qnum-convert end to end: golden bits, thread determinism, round trip, bad input.
// Run twice: test_convert runs every conversion with --device cpu; test_convert_gpu (CUDA builds), the same
// program with --gpu, runs them with --device gpu and exits 77 (skip) where `qnum-convert --device-info`
// finds no GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "safetensors.hpp"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// Compile-time paths of this build; QNUM_TEST_DATA_DIR / QNUM_CONVERT_EXE in the environment override them
// (a build carried to another machine, tools/gpu-check.sh prebuild).
std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
const std::string data_dir = env_or("QNUM_TEST_DATA_DIR", QNUM_TEST_DATA_DIR) + "/convert";
const std::string convert_exe = env_or("QNUM_CONVERT_EXE", QNUM_CONVERT_EXE);
std::string device_arg = "--device cpu";  // main(): --gpu makes it --device gpu
const std::string ckpt = data_dir + "/ckpt";

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("qnum_convert_test_" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p.parent_path());
  return p;
}

// Runs qnum-convert; returns its exit status, stderr in err.
int convert(const std::string& args, std::string& err) {
  const fs::path errf = scratch("stderr.txt");
  const std::string cmd = convert_exe + " --no-progress " + device_arg + " " + args + " 2> " + errf.string();
  const int rc = std::system(cmd.c_str());
  std::ifstream f(errf);
  std::stringstream ss;
  ss << f.rdbuf();
  err = ss.str();
  const int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  // The --gpu run: every conversion that succeeded ran on the GPU (no silent CPU fallback).
  if (device_arg == "--device gpu" && status == 0 && args.find("--device") == std::string::npos)
    CHECK_MESSAGE(err.find("quantizing on GPU 0") != std::string::npos, err);
  return status;
}

// stdout of `qnum-convert --device-info`.
std::string device_info() {
  const fs::path outf = scratch("device_info.txt");
  const std::string cmd = convert_exe + " --device-info > " + outf.string();
  if (std::system(cmd.c_str()) != 0) return "";
  std::ifstream f(outf);
  std::string line;
  std::getline(f, line);
  return line;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// All tensors of a checkpoint directory (or one file): name -> (file, tensor).
struct checkpoint {
  std::vector<std::unique_ptr<qconv::safetensors_file>> files;
  std::map<std::string, std::pair<const qconv::safetensors_file*, const qconv::tensor_info*>> t;
  explicit checkpoint(const std::string& path) {
    std::vector<std::string> names;
    std::string err;
    REQUIRE_MESSAGE(qconv::list_checkpoint(path, names, err), err);
    for (auto& n : names) {
      files.push_back(std::make_unique<qconv::safetensors_file>());
      REQUIRE_MESSAGE(files.back()->open(n, err), err);
      for (auto& ti : files.back()->tensors()) t[ti.name] = {files.back().get(), &ti};
    }
  }
  const std::uint8_t* data(const std::string& n) const { return t.at(n).first->data(*t.at(n).second); }
  const qconv::tensor_info& info(const std::string& n) const { return *t.at(n).second; }
  std::size_t bytes(const std::string& n) const { return info(n).end - info(n).begin; }
};

bool ends_with(const std::string& s, const std::string& e) { return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0; }

void check_against_golden(const std::string& out, const std::string& golden, bool asym) {
  checkpoint o(out), g(golden), in(ckpt);
  for (auto& kv : g.t) {
    const std::string& n = kv.first;
    CAPTURE(n);
    REQUIRE(o.t.count(n) == 1);
    CHECK(o.info(n).dtype == g.info(n).dtype);
    CHECK(o.info(n).shape == g.info(n).shape);
    REQUIRE(o.bytes(n) == g.bytes(n));
    if (asym && n.find("down_proj") != std::string::npos && !ends_with(n, "weight_shape")) {
      // Row 129 is all zero: compressed-tensors' asymmetric zero point is NaN there (0/0), qnum's is defined
      // (scale eps, zero point, codes = zero point, dequantizes to 0). Compare every other row exactly.
      const auto* a = reinterpret_cast<const std::uint32_t*>(o.data(n));
      const auto* b = reinterpret_cast<const std::uint32_t*>(g.data(n));
      const auto& sh = g.info(n).shape;
      int diffs = 0;
      for (std::int64_t r = 0; r < sh[0]; ++r)
        for (std::int64_t c = 0; c < sh[1]; ++c) {
          std::uint32_t x = a[r * sh[1] + c], y = b[r * sh[1] + c];
          if (ends_with(n, "weight_packed") && r == 129) continue;
          if (ends_with(n, "weight_zero_point") && r == 129 / 8) {  // nibble 129 % 8 of packed row 16
            x &= ~(0xFu << 4 * (129 % 8));
            y &= ~(0xFu << 4 * (129 % 8));
          }
          if (ends_with(n, "weight_scale") && r == 129) continue;
          diffs += x != y;
        }
      CHECK(diffs == 0);
    } else {
      CHECK(std::memcmp(o.data(n), g.data(n), o.bytes(n)) == 0);
    }
  }
  // Everything else is a copy of the input.
  int copied = 0;
  for (auto& kv : o.t) {
    if (g.t.count(kv.first)) continue;
    CAPTURE(kv.first);
    REQUIRE(in.t.count(kv.first) == 1);
    CHECK(o.info(kv.first).dtype == in.info(kv.first).dtype);
    REQUIRE(o.bytes(kv.first) == in.bytes(kv.first));
    CHECK(std::memcmp(o.data(kv.first), in.data(kv.first), o.bytes(kv.first)) == 0);
    ++copied;
  }
  CHECK(copied == 7);  // embed, layernorm, o_proj (excluded), inv_freq, norm, lm_head, step
  CHECK(in.t.count("model.layers.0.self_attn.o_proj.weight") == 1);
  CHECK(o.info("model.layers.0.self_attn.o_proj.weight").dtype == "BF16");
  // Index covers every output tensor with its shard and the total size.
  json idx = json::parse(read_all(fs::path(out) / "model.safetensors.index.json"));
  std::uint64_t total = 0;
  for (auto& kv : o.t) {
    CHECK(idx["weight_map"][kv.first].get<std::string>() == fs::path(kv.second.first->path()).filename().string());
    total += o.bytes(kv.first);
  }
  CHECK(idx["weight_map"].size() == o.t.size());
  CHECK(idx["metadata"]["total_size"].get<std::uint64_t>() == total);
  for (auto& e : fs::directory_iterator(out)) CHECK(e.path().filename().string()[0] != '.');  // no temporaries left
}

}  // namespace

TEST_CASE("w4a16 g128 sym matches compressed-tensors bit for bit; threads do not change bits") {
  const fs::path out = scratch("sym"), out1 = scratch("sym1");
  std::string err;
  REQUIRE_MESSAGE(convert("--format w4a16 --group 128 --exclude o_proj --threads 2 " + ckpt + " " + out.string(), err) == 0, err);
  check_against_golden(out.string(), data_dir + "/golden_w4a16_g128_sym.safetensors", false);
  json cfg = json::parse(read_all(out / "config.json"));
  const auto& q = cfg["quantization_config"];
  CHECK(q["quant_method"] == "compressed-tensors");
  CHECK(q["format"] == "pack-quantized");
  CHECK(q["config_groups"]["group_0"]["weights"]["group_size"] == 128);
  CHECK(q["config_groups"]["group_0"]["weights"]["symmetric"] == true);
  CHECK(cfg["hidden_size"] == 128);  // the rest of config.json kept
  const auto& ign = q["ignore"];
  CHECK(std::find(ign.begin(), ign.end(), "lm_head") != ign.end());
  CHECK(std::find(ign.begin(), ign.end(), "model.layers.0.self_attn.o_proj") != ign.end());
  REQUIRE_MESSAGE(convert("--format w4a16 --group 128 --exclude o_proj --threads 1 " + ckpt + " " + out1.string(), err) == 0, err);
  for (auto f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) CHECK(read_all(out / f) == read_all(out1 / f));
}

TEST_CASE("w4a16 g32 asym matches compressed-tensors (except its NaN zero point of an all-zero group)") {
  const fs::path out = scratch("asym");
  std::string err;
  REQUIRE_MESSAGE(convert("--format w4a16 --group 32 --asym --exclude o_proj " + ckpt + " " + out.string(), err) == 0, err);
  check_against_golden(out.string(), data_dir + "/golden_w4a16_g32_asym.safetensors", true);
}

TEST_CASE("fp8 block matches DeepGEMM per_block_cast_to_fp8 bit for bit") {
  const fs::path out = scratch("fp8"), out1 = scratch("fp81");
  std::string err;
  REQUIRE_MESSAGE(convert("--format fp8-block --exclude o_proj --threads 2 " + ckpt + " " + out.string(), err) == 0, err);
  check_against_golden(out.string(), data_dir + "/golden_fp8_block.safetensors", false);
  json cfg = json::parse(read_all(out / "config.json"));
  CHECK(cfg["quantization_config"] == json::parse(R"({"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[128,128]})"));
  REQUIRE_MESSAGE(convert("--format fp8-block --exclude o_proj --threads 1 " + ckpt + " " + out1.string(), err) == 0, err);
  for (auto f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) CHECK(read_all(out / f) == read_all(out1 / f));
}

namespace {
// quantization_config of an output vs the one compressed-tensors dumps for the same scheme (ignore list aside).
void check_ct_config(const fs::path& out, const std::string& golden_json) {
  json cfg = json::parse(read_all(out / "config.json"));
  json q = cfg["quantization_config"], g = json::parse(read_all(data_dir + "/" + golden_json));
  const auto& ign = q["ignore"];
  CHECK(std::find(ign.begin(), ign.end(), "lm_head") != ign.end());
  CHECK(std::find(ign.begin(), ign.end(), "model.layers.0.self_attn.o_proj") != ign.end());
  q.erase("ignore");
  g.erase("ignore");
  CHECK(q.dump() == g.dump());  // same keys, values and order as QuantizationConfig.model_dump()
  CHECK(cfg["hidden_size"] == 128);
}
}  // namespace

TEST_CASE("fp8 channel / tensor match compressed-tensors float-quantized bit for bit; threads do not change bits") {
  for (const char* f : {"fp8-channel", "fp8-tensor"}) {
    CAPTURE(f);
    std::string u = f;
    u[3] = '_';
    const fs::path out = scratch(u), out1 = scratch(u + "1");
    std::string err;
    REQUIRE_MESSAGE(convert(std::string("--format ") + f + " --exclude o_proj --threads 2 " + ckpt + " " + out.string(), err) == 0, err);
    check_against_golden(out.string(), data_dir + "/golden_" + u + ".safetensors", false);
    check_ct_config(out, "golden_" + u + "_config.json");
    REQUIRE_MESSAGE(convert(std::string("--format ") + f + " --exclude o_proj --threads 1 " + ckpt + " " + out1.string(), err) == 0, err);
    for (auto fn : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) CHECK(read_all(out / fn) == read_all(out1 / fn));
  }
}

TEST_CASE("nvfp4 / mxfp4 match compressed-tensors nvfp4- / mxfp4-pack-quantized bit for bit; threads do not change bits") {
  for (const char* f : {"nvfp4", "mxfp4"}) {
    CAPTURE(f);
    const fs::path out = scratch(f), out1 = scratch(std::string(f) + "1");
    std::string err;
    REQUIRE_MESSAGE(convert(std::string("--format ") + f + " --exclude o_proj --threads 2 " + ckpt + " " + out.string(), err) == 0, err);
    check_against_golden(out.string(), data_dir + "/golden_" + f + ".safetensors", false);
    check_ct_config(out, std::string("golden_") + f + "_config.json");
    REQUIRE_MESSAGE(convert(std::string("--format ") + f + " --exclude o_proj --threads 1 " + ckpt + " " + out1.string(), err) == 0, err);
    for (auto fn : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) CHECK(read_all(out / fn) == read_all(out1 / fn));
  }
}

namespace {
// Input of a quantized weight as a qnum view (bf16/fp16 bits or fp32).
template <class Fn>
void with_input(const checkpoint& in, const std::string& n, Fn&& fn) {
  const auto& t = in.info(n);
  const std::int64_t r = t.shape[0], c = t.shape[1];
  if (t.dtype == "F32")
    fn(qnum::matrix_view<const float>{reinterpret_cast<const float*>(in.data(n)), r, c, c, qnum::tensor_type::fp32});
  else
    fn(qnum::matrix_view<const std::uint16_t>{reinterpret_cast<const std::uint16_t*>(in.data(n)), r, c, c,
                                              t.dtype == "F16" ? qnum::tensor_type::fp16 : qnum::tensor_type::bf16});
}
const char* weights[] = {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                         "model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.gate_proj.weight"};
}  // namespace

TEST_CASE("round trip: dequantize(converted) == qnum fake quant of the original, bit for bit") {
  checkpoint in(ckpt);
  for (bool asym : {false, true}) {
    const fs::path out = scratch(asym ? "rt_asym" : "rt_sym");
    std::string err;
    const std::int64_t g = asym ? 32 : 128;
    REQUIRE_MESSAGE(convert(std::string("--format w4a16 --group ") + std::to_string(g) + (asym ? " --asym " : " ") + ckpt + " " + out.string(), err) == 0, err);
    checkpoint o(out.string());
    for (const char* w : weights) {
      CAPTURE(w);
      CAPTURE(asym);
      const std::string m = std::string(w).substr(0, std::strlen(w) - 7);
      const auto& t = in.info(w);
      const std::int64_t n = t.shape[0], k = t.shape[1], G = k / g;
      std::vector<std::int8_t> q(n * k), zp(n * G);
      REQUIRE(qnum::ct_unpack_weight(reinterpret_cast<const std::uint32_t*>(o.data(m + ".weight_packed")), n, k, 4, q.data()) == qnum::pack_status::ok);
      std::vector<std::uint8_t> codes(n * k);
      for (std::size_t i = 0; i < q.size(); ++i) codes[i] = static_cast<std::uint8_t>(q[i]) & 0xF;
      std::vector<std::int32_t> z(n * G, 0);
      if (asym) {
        REQUIRE(qnum::ct_unpack_zero_point(reinterpret_cast<const std::uint32_t*>(o.data(m + ".weight_zero_point")), n, G, 4, zp.data()) == qnum::pack_status::ok);
        for (std::size_t i = 0; i < zp.size(); ++i) z[i] = zp[i];
      }
      std::vector<float> deq(n * k), fq(n * k);
      qnum::status st;
      if (asym)
        st = qnum::dequantize(qnum::presets::ct_w4a16_asym, qnum::view<const std::uint8_t>(codes.data(), n, k), qnum::group_size(g),
                              qnum::scales_of(const_cast<float*>(reinterpret_cast<const float*>(o.data(m + ".weight_scale"))), n, G),
                              qnum::view<const std::int32_t>(z.data(), n, G), qnum::view(deq.data(), n, k));
      else
        st = qnum::dequantize(qnum::presets::ct_w4a16_sym_bf16, qnum::view<const std::uint8_t>(codes.data(), n, k), qnum::group_size(g),
                              qnum::scales_of(const_cast<std::uint16_t*>(reinterpret_cast<const std::uint16_t*>(o.data(m + ".weight_scale"))), n, G),
                              qnum::view<const std::int32_t>(z.data(), n, G), qnum::view(deq.data(), n, k));
      REQUIRE(st == qnum::status::ok);
      with_input(in, w, [&](auto v) {
        st = asym ? qnum::fake_quantize(qnum::presets::ct_w4a16_asym, v, qnum::group_size(g), qnum::view(fq.data(), n, k))
                  : qnum::fake_quantize(qnum::presets::ct_w4a16_sym_bf16, v, qnum::group_size(g), qnum::view(fq.data(), n, k));
      });
      REQUIRE(st == qnum::status::ok);
      CHECK(std::memcmp(deq.data(), fq.data(), deq.size() * 4) == 0);
    }
  }
  const fs::path out = scratch("rt_fp8");
  std::string err;
  REQUIRE_MESSAGE(convert("--format fp8-block " + ckpt + " " + out.string(), err) == 0, err);
  checkpoint o(out.string());
  for (const char* w : weights) {
    CAPTURE(w);
    const std::string m = std::string(w).substr(0, std::strlen(w) - 7);
    const auto& t = in.info(w);
    const std::int64_t n = t.shape[0], k = t.shape[1];
    qnum::fp8_block_shape sh;
    qnum::fp8_block_layout(n, k, &sh);
    const float* s = reinterpret_cast<const float*>(o.data(m + ".weight_scale_inv"));
    REQUIRE(qnum::fp8_block_check_scales(sh, s, false) == qnum::pack_status::ok);
    std::vector<float> deq(n * k), fq(n * k);
    REQUIRE(qnum::fp8_block_dequantize(sh, o.data(w), s, deq.data()) == qnum::pack_status::ok);
    with_input(in, w, [&](auto v) {
      REQUIRE(qnum::fake_quantize(qnum::presets::deepgemm_fp8, v, qnum::presets::deepseek_weight, qnum::view(fq.data(), n, k)) == qnum::status::ok);
    });
    CHECK(std::memcmp(deq.data(), fq.data(), deq.size() * 4) == 0);
  }
}

TEST_CASE("round trip fp8 channel / tensor: dequantize(converted) == qnum fake quant of the original") {
  checkpoint in(ckpt);
  for (bool channel : {true, false}) {
    CAPTURE(channel);
    const fs::path out = scratch(channel ? "rt_fp8c" : "rt_fp8t");
    std::string err;
    REQUIRE_MESSAGE(convert(std::string("--format ") + (channel ? "fp8-channel" : "fp8-tensor") + " --threads 2 " + ckpt + " " + out.string(), err) == 0, err);
    checkpoint o(out.string());
    const qnum::group_shape gs = channel ? qnum::per_row() : qnum::per_tensor();
    for (const char* w : weights) {
      CAPTURE(w);
      const std::string m = std::string(w).substr(0, std::strlen(w) - 7);
      const auto& t = in.info(w);
      const std::int64_t n = t.shape[0], k = t.shape[1];
      CHECK(o.info(m + ".weight_scale").shape == (channel ? std::vector<std::int64_t>{n, 1} : std::vector<std::int64_t>{1}));
      std::vector<float> deq(n * k), fq(n * k);
      REQUIRE(qnum::dequantize(qnum::presets::ct_fp8, qnum::view<const std::uint8_t>(o.data(w), n, k), gs,
                               qnum::scales_of(const_cast<float*>(reinterpret_cast<const float*>(o.data(m + ".weight_scale"))), channel ? n : 1, 1),
                               {}, qnum::view(deq.data(), n, k)) == qnum::status::ok);
      with_input(in, w, [&](auto v) { REQUIRE(qnum::fake_quantize(qnum::presets::ct_fp8, v, gs, qnum::view(fq.data(), n, k)) == qnum::status::ok); });
      CHECK(std::memcmp(deq.data(), fq.data(), deq.size() * 4) == 0);
    }
  }
}

TEST_CASE("round trip nvfp4 / mxfp4: dequantize(converted) == qnum fake quant of the original (ct_fp4 presets)") {
  checkpoint in(ckpt);
  for (bool nv : {true, false}) {
    CAPTURE(nv);
    const fs::path out = scratch(nv ? "rt_nvfp4" : "rt_mxfp4");
    std::string err;
    REQUIRE_MESSAGE(convert(std::string("--format ") + (nv ? "nvfp4" : "mxfp4") + " " + ckpt + " " + out.string(), err) == 0, err);
    checkpoint o(out.string());
    const std::int64_t g = nv ? 16 : 32;
    for (const char* w : weights) {
      CAPTURE(w);
      const std::string m = std::string(w).substr(0, std::strlen(w) - 7);
      const auto& t = in.info(w);
      const std::int64_t n = t.shape[0], k = t.shape[1], G = k / g;
      // Dequantize the converted tensors with qnum (scales from the stored codes).
      const std::uint8_t* packed = o.data(m + ".weight_packed");
      const std::uint8_t* sc = o.data(m + ".weight_scale");
      float global = 0.0f;
      if (nv) std::memcpy(&global, o.data(m + ".weight_global_scale"), 4);
      std::vector<float> deq(n * k), fq(n * k);
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t j = 0; j < G; ++j) {
          const qnum::group_params p = nv ? qnum::presets::ct_nvfp4_params_from_code(sc[r * G + j], global)
                                          : qnum::presets::ct_mxfp4_params_from_code(sc[r * G + j]);
          for (std::int64_t e = 0; e < g; ++e) {
            const std::int64_t i = r * k + j * g + e;
            deq[i] = qnum::dequantize_value(qnum::presets::ct_fp4, p, qnum::unpack_nibble(packed[i / 2], int(i % 2), qnum::nibble_order::low_first));
          }
        }
      // Fake quant of the original: statistics with qnum, the presets' parameters, fake_quant_value.
      std::vector<float> x(n * k);
      with_input(in, w, [&](auto v) {
        for (std::int64_t i = 0; i < n * k; ++i) x[i] = qnum::detail::load_elem(v.data + i, v.type);
      });
      qnum::group_stats all;
      for (float e : x) qnum::accumulate(all, e);
      const float gl = qnum::presets::ct_nvfp4_global_scale(all.amax);
      if (nv) CHECK(qnum::detail::float_to_bits(gl) == qnum::detail::float_to_bits(global));
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t j = 0; j < G; ++j) {
          qnum::group_stats st;
          for (std::int64_t e = 0; e < g; ++e) qnum::accumulate(st, x[r * k + j * g + e]);
          const qnum::group_params p = nv ? qnum::presets::ct_nvfp4_params(st.amax, gl) : qnum::presets::ct_mxfp4_params(st.amax);
          for (std::int64_t e = 0; e < g; ++e) {
            const std::int64_t i = r * k + j * g + e;
            fq[i] = qnum::fake_quant_value(qnum::presets::ct_fp4, p, x[i]);
          }
        }
      CHECK(std::memcmp(deq.data(), fq.data(), deq.size() * 4) == 0);
    }
  }
}

namespace {
// Writes a safetensors file with a raw header string and `data_bytes` bytes of data.
void write_raw(const fs::path& p, const std::string& header, std::size_t data_bytes) {
  std::ofstream f(p, std::ios::binary);
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  f << header << std::string(data_bytes, '\0');
}
void expect_failure(const std::string& args, const fs::path& out, const std::vector<std::string>& must_mention) {
  std::string err;
  const int rc = convert(args + " " + out.string(), err);
  CAPTURE(err);
  CHECK(rc != 0);
  for (auto& m : must_mention) CHECK(err.find(m) != std::string::npos);
  if (fs::exists(out))
    for (auto& e : fs::directory_iterator(out)) FAIL("left in the output directory: " << e.path());
}
}  // namespace

TEST_CASE("bad input: non-zero exit, message names file and tensor, nothing left in the output") {
  const fs::path d = scratch("bad");
  fs::create_directories(d);
  // Truncated shard of the real checkpoint.
  const fs::path trunc = d / "trunc";
  fs::create_directories(trunc);
  for (auto& e : fs::directory_iterator(ckpt)) fs::copy_file(e.path(), trunc / e.path().filename());
  const fs::path shard2 = trunc / "model-00002-of-00002.safetensors";
  fs::resize_file(shard2, fs::file_size(shard2) - 100);
  expect_failure("--format w4a16 " + trunc.string(), d / "out_trunc", {"model-00002-of-00002.safetensors", "truncated"});
  // A header that lies about offsets (past the end of the data).
  write_raw(d / "lie.safetensors", R"({"a.weight":{"dtype":"BF16","shape":[4,128],"data_offsets":[0,1024]}})", 500);
  expect_failure("--format fp8-block " + (d / "lie.safetensors").string(), d / "out_lie", {"lie.safetensors", "'a.weight'", "out of range"});
  // Offsets that disagree with dtype/shape.
  write_raw(d / "size.safetensors", R"({"a.weight":{"dtype":"BF16","shape":[4,128],"data_offsets":[0,1000]}})", 1024);
  expect_failure("--format fp8-block " + (d / "size.safetensors").string(), d / "out_size", {"size.safetensors", "'a.weight'"});
  // Overlapping tensors.
  write_raw(d / "ovl.safetensors",
            R"({"a.weight":{"dtype":"BF16","shape":[4,128],"data_offsets":[0,1024]},"b.weight":{"dtype":"BF16","shape":[4,128],"data_offsets":[512,1536]}})",
            1536);
  expect_failure("--format fp8-block " + (d / "ovl.safetensors").string(), d / "out_ovl", {"ovl.safetensors", "'b.weight'", "overlaps"});
  // Header length beyond the file.
  write_raw(d / "hdr.safetensors", "{}", 0);
  {
    std::fstream f(d / "hdr.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.put(static_cast<char>(0xFF));
  }
  expect_failure("--format fp8-block " + (d / "hdr.safetensors").string(), d / "out_hdr", {"hdr.safetensors", "header length"});
  // Corrupt JSON.
  write_raw(d / "json.safetensors", "{\"a.weight\": {\"dtype\": ", 16);
  expect_failure("--format fp8-block " + (d / "json.safetensors").string(), d / "out_json", {"json.safetensors", "JSON"});
  // Unsupported dtypes: unknown to safetensors, and known but not quantizable for a selected weight.
  write_raw(d / "dt.safetensors", R"({"a.weight":{"dtype":"Q7","shape":[4,128],"data_offsets":[0,512]}})", 512);
  expect_failure("--format fp8-block " + (d / "dt.safetensors").string(), d / "out_dt", {"dt.safetensors", "'a.weight'", "Q7"});
  write_raw(d / "i8.safetensors", R"({"a.weight":{"dtype":"I8","shape":[4,128],"data_offsets":[0,512]}})", 512);
  expect_failure("--format w4a16 " + (d / "i8.safetensors").string(), d / "out_i8", {"i8.safetensors", "'a.weight'", "I8"});
  // A shape the group does not divide.
  write_raw(d / "grp.safetensors", R"({"a.weight":{"dtype":"BF16","shape":[4,96],"data_offsets":[0,768]}})", 768);
  expect_failure("--format w4a16 --group 128 " + (d / "grp.safetensors").string(), d / "out_grp", {"grp.safetensors", "'a.weight'", "group"});
  // NVFP4 / MXFP4: in_features not a multiple of the 16 / 32 group (ct_pack needs K % group == 0).
  write_raw(d / "fp4.safetensors", R"({"a.weight":{"dtype":"BF16","shape":[4,40],"data_offsets":[0,320]}})", 320);
  expect_failure("--format nvfp4 " + (d / "fp4.safetensors").string(), d / "out_nvfp4", {"fp4.safetensors", "'a.weight'", "nvfp4 group size 16"});
  expect_failure("--format mxfp4 " + (d / "fp4.safetensors").string(), d / "out_mxfp4", {"fp4.safetensors", "'a.weight'", "mxfp4 group size 32"});
  // A failure in the second shard leaves no output from the first (validation precedes writing).
  CHECK(!fs::exists(d / "out_trunc" / "model-00001-of-00002.safetensors"));
}

TEST_CASE("--device: auto / cpu / gpu; gpu without a GPU fails before writing anything") {
  const std::string info = device_info();
  CAPTURE(info);
  REQUIRE(info.rfind("gpu: ", 0) == 0);
  std::string err;
  const fs::path out = scratch("device_bad");
  CHECK(convert("--device tpu --format fp8-block " + ckpt + " " + out.string(), err) == 2);
  CHECK(err.find("--device must be auto, cpu or gpu") != std::string::npos);
  CHECK(!fs::exists(out));
  if (info.rfind("gpu: none", 0) == 0) {
    // Later arguments win: this --device gpu overrides the variant's own --device.
    CHECK(convert("--format fp8-block --exclude o_proj --device gpu " + ckpt + " " + out.string(), err) == 1);
    CHECK(err.find("--device gpu: no GPU") != std::string::npos);
    CHECK(!fs::exists(out));
    // auto falls back to the CPU and says so; the bytes are the golden ones.
    REQUIRE_MESSAGE(convert("--format fp8-block --exclude o_proj --device auto " + ckpt + " " + out.string(), err) == 0, err);
    CHECK(err.find("quantizing on the CPU") != std::string::npos);
  } else {
    REQUIRE_MESSAGE(convert("--format fp8-block --exclude o_proj --device auto " + ckpt + " " + out.string(), err) == 0, err);
    CHECK(err.find("quantizing on GPU 0") != std::string::npos);
  }
  check_against_golden(out.string(), data_dir + "/golden_fp8_block.safetensors", false);
}

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--gpu") device_arg = "--device gpu";
    else args.push_back(argv[i]);
  }
  if (device_arg == "--device gpu") {
    const std::string info = device_info();
    if (info.rfind("gpu: none", 0) == 0) {
      std::printf("qnum-convert --device-info: %s: skipping the GPU run (exit 77)\n", info.c_str());
      return 77;
    }
  }
  doctest::Context ctx(static_cast<int>(args.size()), args.data());
  return ctx.run();
}
