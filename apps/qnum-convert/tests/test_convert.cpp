// apps/qnum-convert/tests/test_convert.cpp: qnum-convert end to end: golden bits, thread determinism, round trip, bad input.
// Run twice: test_convert runs every conversion with --device cpu; test_convert_gpu (CUDA builds), the same
// program with --gpu, runs them with --device gpu and exits 77 (skip) where `qnum-convert --device-info`
// finds no GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
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
const std::string data_dir = env_or("QNUM_TEST_DATA_DIR", QNUM_TEST_DATA_DIR);
// In a cross build meson runs this test through the cross file's exe_wrapper (MESON_EXE_WRAPPER, e.g. qemu-aarch64):
// qnum-convert, built for the same machine, runs through it too.
const std::string convert_exe = [] {
  const std::string wrapper = env_or("MESON_EXE_WRAPPER", "");
  const std::string exe = env_or("QNUM_CONVERT_EXE", QNUM_CONVERT_EXE);
  return wrapper.empty() ? exe : wrapper + " " + exe;
}();
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

// 32-bit words of tensor n that differ between o and g, leaving out weight row `row` (an all-zero row, where
// compressed-tensors' asymmetric zero point is NaN): its weight_packed and fp32 weight_scale row, and its nibble
// of the packed weight_zero_point (nibble row % 8 of packed row row / 8).
int diffs_except_row(const checkpoint& o, const checkpoint& g, const std::string& n, std::int64_t row) {
  const auto* a = reinterpret_cast<const std::uint32_t*>(o.data(n));
  const auto* b = reinterpret_cast<const std::uint32_t*>(g.data(n));
  const auto& sh = g.info(n).shape;
  int diffs = 0;
  for (std::int64_t r = 0; r < sh[0]; ++r)
    for (std::int64_t c = 0; c < sh[1]; ++c) {
      std::uint32_t x = a[r * sh[1] + c], y = b[r * sh[1] + c];
      if ((ends_with(n, "weight_packed") || ends_with(n, "weight_scale")) && r == row) continue;
      if (ends_with(n, "weight_zero_point") && r == row / 8) {
        x &= ~(0xFu << 4 * (row % 8));
        y &= ~(0xFu << 4 * (row % 8));
      }
      diffs += x != y;
    }
  return diffs;
}

// Every tensor of golden g present in o with its dtype and shape, and byte-equal, except where zero_row(n) gives
// a row to leave out (diffs_except_row).
template <class ZeroRow>
void check_golden_tensors(const checkpoint& o, const checkpoint& g, ZeroRow&& zero_row) {
  for (auto& kv : g.t) {
    const std::string& n = kv.first;
    CAPTURE(n);
    REQUIRE(o.t.count(n) == 1);
    CHECK(o.info(n).dtype == g.info(n).dtype);
    CHECK(o.info(n).shape == g.info(n).shape);
    REQUIRE(o.bytes(n) == g.bytes(n));
    const std::int64_t row = zero_row(n);
    if (row >= 0) CHECK(diffs_except_row(o, g, n, row) == 0);
    else CHECK(std::memcmp(o.data(n), g.data(n), o.bytes(n)) == 0);
  }
}

void check_against_golden(const std::string& out, const std::string& golden, bool asym) {
  checkpoint o(out), g(golden), in(ckpt);
  // Row 129 of down_proj is all zero: compressed-tensors' asymmetric zero point is NaN there (0/0), qnum's is
  // defined (scale eps, zero point, codes = zero point, dequantizes to 0). Every other row is compared exactly.
  check_golden_tensors(o, g, [&](const std::string& n) -> std::int64_t {
    return asym && n.find("down_proj") != std::string::npos && !ends_with(n, "weight_shape") ? 129 : -1;
  });
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
  CHECK(std::find(ign.begin(), ign.end(), "model.embed_tokens") == ign.end());  // not a Linear: never in ignore
  // What compressed-tensors adds when it compresses: the group's format (model_dump() leaves null) and its version.
  CHECK(q["version"] == "0.20.0");
  CHECK(q["config_groups"]["group_0"]["format"] == g["format"]);
  g["config_groups"]["group_0"]["format"] = g["format"];
  g["version"] = "0.20.0";
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
    fn(qnum::matrix_view<const float>{reinterpret_cast<const float*>(in.data(n)), r, c, c, qnum::dtype::fp32});
  else
    fn(qnum::matrix_view<const std::uint16_t>{reinterpret_cast<const std::uint16_t*>(in.data(n)), r, c, c,
                                              t.dtype == "F16" ? qnum::dtype::fp16 : qnum::dtype::bf16});
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
      REQUIRE(qnum::ct::unpack_weight(qnum::view(reinterpret_cast<const std::uint32_t*>(o.data(m + ".weight_packed")), n, qnum::packed_words(k, 4)), 4,
                                      qnum::view(q.data(), n, k)) == qnum::status::ok);
      std::vector<std::uint8_t> codes(n * k);
      for (std::size_t i = 0; i < q.size(); ++i) codes[i] = static_cast<std::uint8_t>(q[i]) & 0xF;
      std::vector<std::int32_t> z(n * G, 0);
      if (asym) {
        REQUIRE(qnum::ct::unpack_zero_point(qnum::view(reinterpret_cast<const std::uint32_t*>(o.data(m + ".weight_zero_point")), qnum::packed_words(n, 4), G),
                                            4, qnum::view(zp.data(), n, G)) == qnum::status::ok);
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
    qnum::fp8_block::shape sh;
    qnum::fp8_block::layout(n, k, &sh);
    const float* s = reinterpret_cast<const float*>(o.data(m + ".weight_scale_inv"));
    REQUIRE(qnum::fp8_block::check_scales(sh, qnum::view(s, sh.scale_rows, sh.scale_cols), false) == qnum::status::ok);
    std::vector<float> deq(n * k), fq(n * k);
    REQUIRE(qnum::fp8_block::dequantize(sh, qnum::view(o.data(w), n, k), qnum::view(s, sh.scale_rows, sh.scale_cols), qnum::view(deq.data(), n, k)) ==
            qnum::status::ok);
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

// ---- a real-model-like checkpoint made by the test: Llama-shaped, tied embeddings, two shards + index ----------

namespace {

struct raw_tensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;
};

// bf16 bits of x, round to nearest even (inputs are finite).
std::uint16_t to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<std::uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

// A BF16 tensor of small pseudo-random values (a fixed LCG: the same bytes on every run).
raw_tensor bf16_tensor(const std::string& name, std::vector<std::int64_t> shape, std::uint32_t seed) {
  raw_tensor t{name, "BF16", shape, {}};
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  t.data.resize(static_cast<std::size_t>(n) * 2);
  std::uint32_t s = seed * 2654435761u + 1;
  for (std::int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
    const std::uint16_t b = to_bf16(x);
    std::memcpy(t.data.data() + i * 2, &b, 2);
  }
  return t;
}

void write_safetensors(const fs::path& p, const std::vector<raw_tensor>& ts) {
  json h = json::object();
  h["__metadata__"] = {{"format", "pt"}};
  std::uint64_t off = 0;
  for (auto& t : ts) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  std::string hs = h.dump();
  while (hs.size() % 8) hs += ' ';
  std::ofstream f(p, std::ios::binary);
  const std::uint64_t n = hs.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  f << hs;
  for (auto& t : ts) f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

const char* projections[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                             "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

// Llama-shaped (hidden 128, GQA k/v 64, MLP 256, vocab 96, two layers), tie_word_embeddings (no lm_head.weight),
// one layer per shard, an index, a tokenizer, a generation config and a sentence-transformers style subfolder.
// `edit` may change tensors before they are written.
fs::path make_llama(const std::string& name, const std::function<void(std::vector<raw_tensor>&, int)>& edit = {}) {
  const fs::path d = scratch(name);
  fs::create_directories(d / "1_Pooling");
  json weight_map = json::object();
  std::uint32_t seed = 1;
  for (int shard = 0; shard < 2; ++shard) {
    std::vector<raw_tensor> ts;
    if (shard == 0) ts.push_back(bf16_tensor("model.embed_tokens.weight", {96, 128}, seed++));
    const std::string l = "model.layers." + std::to_string(shard) + ".";
    ts.push_back(bf16_tensor(l + "input_layernorm.weight", {128}, seed++));
    for (const char* p : projections) {
      const std::string ps = p;
      const bool kv = ps.find("k_proj") != std::string::npos || ps.find("v_proj") != std::string::npos;
      const bool up = ps.find("gate_proj") != std::string::npos || ps.find("up_proj") != std::string::npos;
      const std::vector<std::int64_t> shape = kv ? std::vector<std::int64_t>{64, 128}
                                              : up ? std::vector<std::int64_t>{256, 128}
                                              : ps.find("down_proj") != std::string::npos ? std::vector<std::int64_t>{128, 256}
                                                                                          : std::vector<std::int64_t>{128, 128};
      ts.push_back(bf16_tensor(l + ps + ".weight", shape, seed++));
    }
    ts.push_back(bf16_tensor(l + "post_attention_layernorm.weight", {128}, seed++));
    if (shard == 1) ts.push_back(bf16_tensor("model.norm.weight", {128}, seed++));
    if (edit) edit(ts, shard);
    const std::string fn = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    write_safetensors(d / fn, ts);
    for (auto& t : ts) weight_map[t.name] = fn;
  }
  write_file(d / "model.safetensors.index.json", json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump(2));
  write_file(d / "config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128,
    "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "vocab_size": 96, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})");
  write_file(d / "tokenizer.json", R"({"version": "1.0", "model": {"type": "BPE"}})");
  write_file(d / "generation_config.json", R"({"do_sample": false})");
  write_file(d / "1_Pooling" / "config.json", R"({"word_embedding_dimension": 128, "pooling_mode_mean_tokens": true})");
  return d;
}

// Every file below `dir` (relative path -> bytes).
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) m[fs::relative(e.path(), dir).string()] = read_all(e.path());
  return m;
}

// Entries the tool left beside `out` under its working names.
std::vector<std::string> leftovers(const fs::path& out) {
  std::vector<std::string> v;
  for (auto& e : fs::directory_iterator(out.parent_path()))
    if (e.path().filename().string().rfind("." + out.filename().string() + ".qnum-", 0) == 0) v.push_back(e.path().string());
  return v;
}

// Runs qnum-convert with exactly `args` (no defaults added); stdout and stderr separately.
int run_tool(const std::string& args, std::string& out, std::string& err) {
  const fs::path of = scratch("stdout.txt"), ef = scratch("stderr2.txt");
  const int rc = std::system((convert_exe + " " + args + " > " + of.string() + " 2> " + ef.string()).c_str());
  out = read_all(of);
  err = read_all(ef);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("Llama-shaped checkpoint with tied embeddings: layout, ignore list, index, copied files and subfolders") {
  const fs::path in = make_llama("llama");
  checkpoint src(in.string());
  for (const char* f : {"w4a16", "nvfp4", "fp8-channel", "fp8-block"}) {
    CAPTURE(f);
    const fs::path out = scratch(std::string("llama_") + f);
    std::string err;
    REQUIRE_MESSAGE(convert(std::string("--format ") + f + (std::string(f) == "w4a16" ? " --group 32 " : " ") + in.string() + " " + out.string(), err) == 0, err);
    CHECK(err.find("1 shard") == std::string::npos);
    CHECK(err.find("2 shards") != std::string::npos);
    checkpoint o(out.string());
    for (int l = 0; l < 2; ++l)
      for (const char* p : projections) {
        const std::string m = "model.layers." + std::to_string(l) + "." + p;
        CAPTURE(m);
        const auto& s = src.info(m + ".weight").shape;
        if (std::string(f) == "w4a16") {
          CHECK(o.t.count(m + ".weight") == 0);
          CHECK(o.info(m + ".weight_packed").shape == std::vector<std::int64_t>{s[0], s[1] / 8});
          CHECK(o.info(m + ".weight_scale").shape == std::vector<std::int64_t>{s[0], s[1] / 32});
          CHECK(o.info(m + ".weight_shape").dtype == "I64");
        } else if (std::string(f) == "nvfp4") {
          CHECK(o.info(m + ".weight_packed").shape == std::vector<std::int64_t>{s[0], s[1] / 2});
          CHECK(o.info(m + ".weight_scale").dtype == "F8_E4M3");
          CHECK(o.info(m + ".weight_global_scale").shape == std::vector<std::int64_t>{1});
        } else {
          CHECK(o.info(m + ".weight").dtype == "F8_E4M3");
          CHECK(o.info(m + ".weight").shape == s);
          CHECK(o.t.count(m + (std::string(f) == "fp8-block" ? ".weight_scale_inv" : ".weight_scale")) == 1);
        }
      }
    // Embeddings and norms copied byte for byte; no lm_head anywhere (tied).
    for (const char* c : {"model.embed_tokens.weight", "model.norm.weight", "model.layers.1.input_layernorm.weight"}) {
      CAPTURE(c);
      REQUIRE(o.bytes(c) == src.bytes(c));
      CHECK(std::memcmp(o.data(c), src.data(c), o.bytes(c)) == 0);
    }
    CHECK(o.t.count("lm_head.weight") == 0);
    // The index: every output tensor in the shard that holds it, and nothing else.
    json idx = json::parse(read_all(out / "model.safetensors.index.json"));
    CHECK(idx["weight_map"].size() == o.t.size());
    for (auto& kv : o.t) CHECK(idx["weight_map"][kv.first] == fs::path(kv.second.first->path()).filename().string());
    // Other files and the subfolder copied unchanged; nothing else in the output, nothing left beside it.
    for (const char* c : {"tokenizer.json", "generation_config.json", "1_Pooling/config.json"}) CHECK(read_all(out / c) == read_all(in / c));
    CHECK(tree(out).size() == 7);
    CHECK(leftovers(out).empty());
    json cfg = json::parse(read_all(out / "config.json"));
    CHECK(cfg["tie_word_embeddings"] == true);
    const auto& q = cfg["quantization_config"];
    if (std::string(f) == "fp8-block") {
      CHECK(q["quant_method"] == "fp8");
    } else {
      // The engine builds lm_head (tied): it must be named, and only Linear modules are (not the embeddings).
      CHECK(q["ignore"] == json::array({"lm_head"}));
      CHECK(q["version"] == "0.20.0");
      CHECK(q["config_groups"]["group_0"]["format"] == q["format"]);
    }
  }
  // Without tie_word_embeddings but with a causal-LM architecture the engine still builds lm_head.
  write_file(in / "config.json", R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"})");
  const fs::path out = scratch("llama_arch");
  std::string err;
  REQUIRE_MESSAGE(convert("--format fp8-tensor --exclude o_proj " + in.string() + " " + out.string(), err) == 0, err);
  json ign = json::parse(read_all(out / "config.json"))["quantization_config"]["ignore"];
  CHECK(ign == json::array({"model.layers.0.self_attn.o_proj", "model.layers.1.self_attn.o_proj", "lm_head"}));
}

TEST_CASE("output directory: refused when not empty, replaced whole with --overwrite, untouched by a failed run") {
  const fs::path in = make_llama("ow_in");
  const fs::path out = scratch("ow_out");
  std::string err;
  REQUIRE_MESSAGE(convert("--format w4a16 " + in.string() + " " + out.string(), err) == 0, err);
  const auto first = tree(out);
  // A second run into it without --overwrite: refused before anything is done.
  CHECK(convert("--format fp8-channel " + in.string() + " " + out.string(), err) == 1);
  CHECK(err.find("not empty") != std::string::npos);
  CHECK(err.find("--overwrite") != std::string::npos);
  CHECK(tree(out) == first);
  // Injected failures with --overwrite: a corrupt config.json (found before quantizing), a NaN in the second
  // shard (found while quantizing, after the first shard is written): the old output stays as it was.
  const fs::path bad = make_llama("ow_bad");
  write_file(bad / "config.json", "{\"architectures\": [");
  CHECK(convert("--overwrite --format fp8-channel " + bad.string() + " " + out.string(), err) == 1);
  CHECK(err.find("config.json: corrupt JSON") != std::string::npos);
  CHECK(tree(out) == first);
  CHECK(leftovers(out).empty());
  const fs::path nan = make_llama("ow_nan", [](std::vector<raw_tensor>& ts, int shard) {
    if (shard == 1) ts[3].data[10 * 2 + 1] = 0x7F, ts[3].data[10 * 2] = 0xC0;  // element 10 of v_proj: bf16 NaN
  });
  CHECK(convert("--overwrite --format fp8-channel " + nan.string() + " " + out.string(), err) == 1);
  CHECK(err.find("model.layers.1.self_attn.v_proj.weight") != std::string::npos);
  CHECK(tree(out) == first);
  CHECK(leftovers(out).empty());
  // The same failures into a new directory leave nothing at all.
  const fs::path fresh = scratch("ow_fresh");
  CHECK(convert("--format fp8-channel " + nan.string() + " " + fresh.string(), err) == 1);
  CHECK(!fs::exists(fresh));
  CHECK(leftovers(fresh).empty());
  // --overwrite with a one-file input: the old shards and index are gone, not left beside the new file.
  REQUIRE_MESSAGE(convert("--overwrite --format fp8-channel " + (in / "model-00001-of-00002.safetensors").string() + " " + out.string(), err) == 0, err);
  CHECK(err.find("(1 shard") == std::string::npos);
  CHECK(err.find("1 shard)") != std::string::npos);
  const auto second = tree(out);
  CHECK(second.size() == 2);  // the shard and config.json
  CHECK(second.count("model-00001-of-00002.safetensors") == 1);
  CHECK(second.count("config.json") == 1);
  CHECK(leftovers(out).empty());
  // An empty existing directory is used without --overwrite.
  const fs::path empty = scratch("ow_empty");
  fs::create_directories(empty);
  REQUIRE_MESSAGE(convert("--format nvfp4 " + in.string() + " " + empty.string(), err) == 0, err);
  CHECK(fs::exists(empty / "model.safetensors.index.json"));
}

TEST_CASE("leftovers of a killed run are removed; a running conversion's are not") {
  const fs::path in = make_llama("lo_in");
  const fs::path out = scratch("lo_out");
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  int st = 0;
  waitpid(dead, &st, 0);
  const fs::path stale = out.parent_path() / (".lo_out.qnum-tmp." + std::to_string(dead));
  const fs::path stale_old = out.parent_path() / (".lo_out.qnum-old." + std::to_string(dead));
  const fs::path live = out.parent_path() / (".lo_out.qnum-tmp." + std::to_string(getpid()));
  for (auto& p : {stale, stale_old, live}) {
    fs::create_directories(p);
    write_file(p / "model-00001-of-00002.safetensors", std::string(1000, 'x'));
  }
  // An earlier qnum-convert's per-file temporary inside the target counts as a leftover, not as content.
  fs::create_directories(out);
  write_file(out / ".model-00001-of-00002.safetensors.qnum-tmp", std::string(1000, 'x'));
  std::string err;
  REQUIRE_MESSAGE(convert("--format w4a16 " + in.string() + " " + out.string(), err) == 0, err);
  CHECK(err.find("left by an earlier run") != std::string::npos);
  CHECK(!fs::exists(stale));
  CHECK(!fs::exists(stale_old));
  CHECK(fs::exists(live));
  CHECK(!fs::exists(out / ".model-00001-of-00002.safetensors.qnum-tmp"));
  fs::remove_all(live);
}

TEST_CASE("index: a missing shard, a shard left out of it, a tensor in the wrong place are errors") {
  std::string err;
  {
    const fs::path in = make_llama("ix_missing");
    fs::remove(in / "model-00002-of-00002.safetensors");
    expect_failure("--format w4a16 " + in.string(), scratch("ix_missing_out"), {"model-00002-of-00002.safetensors", "cannot open"});
  }
  {
    const fs::path in = make_llama("ix_dropped");
    json idx = json::parse(read_all(in / "model.safetensors.index.json"));
    json wm = json::object();
    for (auto it = idx["weight_map"].begin(); it != idx["weight_map"].end(); ++it)
      if (it.value() != "model-00002-of-00002.safetensors") wm[it.key()] = it.value();
    idx["weight_map"] = wm;
    write_file(in / "model.safetensors.index.json", idx.dump());
    expect_failure("--format w4a16 " + in.string(), scratch("ix_dropped_out"), {"model-00002-of-00002.safetensors", "not in the index"});
  }
  {
    const fs::path in = make_llama("ix_unlisted");
    json idx = json::parse(read_all(in / "model.safetensors.index.json"));
    idx["weight_map"].erase("model.norm.weight");
    write_file(in / "model.safetensors.index.json", idx.dump());
    expect_failure("--format w4a16 " + in.string(), scratch("ix_unlisted_out"), {"'model.norm.weight'", "not in the index"});
  }
  {
    const fs::path in = make_llama("ix_wrong");
    json idx = json::parse(read_all(in / "model.safetensors.index.json"));
    idx["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
    write_file(in / "model.safetensors.index.json", idx.dump());
    expect_failure("--format w4a16 " + in.string(), scratch("ix_wrong_out"), {"'model.norm.weight'", "index names"});
  }
  {
    const fs::path in = make_llama("ix_ghost");
    json idx = json::parse(read_all(in / "model.safetensors.index.json"));
    idx["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00002-of-00002.safetensors";
    write_file(in / "model.safetensors.index.json", idx.dump());
    expect_failure("--format w4a16 " + in.string(), scratch("ix_ghost_out"), {"'model.layers.9.mlp.up_proj.weight'", "does not hold it"});
  }
}

namespace {
// Sets element i of a BF16 tensor to the bf16 bits b.
void set_bf16(raw_tensor& t, std::size_t i, std::uint16_t b) { std::memcpy(t.data.data() + 2 * i, &b, 2); }
}  // namespace

TEST_CASE("non-finite weights: refused by default naming tensor and count; --allow-nonfinite converts with a warning") {
  // q_proj of layer 0 ([128, 128]): element 0 NaN, 1 +Inf, 2 -Inf (all in row 0, group 0).
  const fs::path in = make_llama("nf", [](std::vector<raw_tensor>& ts, int shard) {
    if (shard != 0) return;
    for (auto& t : ts)
      if (t.name == "model.layers.0.self_attn.q_proj.weight") {
        set_bf16(t, 0, 0x7FC0);
        set_bf16(t, 1, 0x7F80);
        set_bf16(t, 2, 0xFF80);
      }
  });
  std::string err;
  for (const char* f : {"w4a16", "fp8-channel", "fp8-tensor", "fp8-block", "nvfp4", "mxfp4"}) {
    CAPTURE(f);
    const fs::path out = scratch(std::string("nf_") + f);
    CHECK(convert(std::string("--format ") + f + " " + in.string() + " " + out.string(), err) == 1);
    CHECK(err.find("'model.layers.0.self_attn.q_proj.weight'") != std::string::npos);
    CHECK(err.find("3 non-finite values") != std::string::npos);
    CHECK(err.find("--allow-nonfinite") != std::string::npos);
    CHECK(!fs::exists(out));
    REQUIRE_MESSAGE(convert(std::string("--allow-nonfinite --format ") + f + " " + in.string() + " " + out.string(), err) == 0, err);
    CHECK(err.find("warning: ") != std::string::npos);
    CHECK(err.find("'model.layers.0.self_attn.q_proj.weight'") != std::string::npos);
    checkpoint o(out.string());
    const std::string m = "model.layers.0.self_attn.q_proj";
    // The documented codes: NaN -> the zero code (int) / the format's NaN code (FP8) / +6 (E2M1, no NaN);
    // +-Inf -> the largest code of its sign. Scales come from the finite values only.
    if (std::string(f) == "w4a16") {
      const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(o.data(m + ".weight_packed"));
      // pack-quantized stores q + 8 in each nibble.
      CHECK((w & 0xF) == 0x8);         // NaN: 0
      CHECK(((w >> 4) & 0xF) == 0xF);  // +Inf: +7
      CHECK(((w >> 8) & 0xF) == 0x0);  // -Inf: -8
    } else if (std::string(f).rfind("fp8", 0) == 0) {
      const std::uint8_t* c = o.data(m + ".weight");
      CHECK(c[0] == 0x7F);  // NaN
      CHECK(c[1] == 0x7E);  // +448
      CHECK(c[2] == 0xFE);  // -448
      float s;
      std::memcpy(&s, o.data(m + (std::string(f) == "fp8-block" ? ".weight_scale_inv" : ".weight_scale")), 4);
      CHECK(std::isfinite(s));
      CHECK(s > 0.0f);
      if (std::string(f) == "fp8-tensor") {  // the tensor's scale from the statistics of its finite elements
        checkpoint src(in.string());
        const auto& sh = src.info(m + ".weight").shape;
        const qnum::group_stats st = qnum::row_stats(reinterpret_cast<const std::uint16_t*>(src.data(m + ".weight")),
                                                     sh[0] * sh[1], qnum::dtype::bf16);
        CHECK(st.amax > 0.0f);
        CHECK(s == qnum::compute_params(qnum::presets::ct_fp8, st).scale);
      }
    } else {
      const std::uint8_t* c = o.data(m + ".weight_packed");
      CHECK((c[0] & 0xF) == 0x7);  // NaN: +6
      CHECK((c[0] >> 4) == 0x7);   // +Inf: +6
      CHECK((c[1] & 0xF) == 0xF);  // -Inf: -6
    }
  }
  // NVFP4's weight_global_scale from the finite values too: q_proj fused with k/v (the fused groups' pass) and on its
  // own (--fuse none: the writer's one read that also counts the NaN and Inf); this input, and one whose only
  // non-finite element is +Inf.
  const fs::path in_inf = make_llama("nf_inf", [](std::vector<raw_tensor>& ts, int shard) {
    if (shard != 0) return;
    for (auto& t : ts)
      if (t.name == "model.layers.0.self_attn.q_proj.weight") set_bf16(t, 1, 0x7F80);
  });
  const std::string m = "model.layers.0.self_attn.q_proj";
  for (const fs::path& input : {in, in_inf}) {
    checkpoint src(input.string());
    const auto* x = reinterpret_cast<const std::uint16_t*>(src.data(m + ".weight"));
    const auto& sh = src.info(m + ".weight").shape;
    float amax = 0.0f;
    for (std::int64_t i = 0; i < sh[0] * sh[1]; ++i)
      if (std::isfinite(qnum::from_bf16(x[i]))) amax = std::max(amax, std::fabs(qnum::from_bf16(x[i])));
    REQUIRE(amax > 0.0f);
    for (const char* fuse : {"", " --fuse none"}) {
      CAPTURE(input);
      CAPTURE(fuse);
      const fs::path out = scratch(input.filename().string() + "_nvfp4_global" + (*fuse ? "_own" : ""));
      REQUIRE_MESSAGE(convert(std::string("--allow-nonfinite --format nvfp4") + fuse + " " + input.string() + " " + out.string(), err) == 0, err);
      checkpoint o(out.string());
      float g;
      std::memcpy(&g, o.data(m + ".weight_global_scale"), 4);
      CHECK(std::isfinite(g));
      if (*fuse) CHECK(g == qnum::presets::ct_nvfp4_global_scale(amax));
      else CHECK(g <= qnum::presets::ct_nvfp4_global_scale(amax));  // the group's amax: at least q_proj's
    }
  }
}

TEST_CASE("command line: --help, --version, unknown options, strict integers, options a format ignores, empty selection") {
  std::string out, err;
  CHECK(run_tool("--help", out, err) == 0);
  CHECK(out.find("usage: qnum-convert") != std::string::npos);
  CHECK(out.find("--overwrite") != std::string::npos);
  CHECK(err.empty());
  CHECK(run_tool("--version", out, err) == 0);
  CHECK(out.rfind("qnum-convert ", 0) == 0);
  const fs::path in = make_llama("cli");
  const std::string io = " " + in.string() + " " + scratch("cli_out").string();
  struct bad_case {
    const char* args;
    const char* says;
  };
  for (const bad_case& c : {bad_case{"--frobnicate", "unknown option '--frobnicate'"},
                            bad_case{"--group 128abc", "--group: '128abc' is not an integer"},
                            bad_case{"--group 64", "--group must be 32 or 128"},
                            bad_case{"--threads -3", "--threads: '-3' is not an integer"},
                            bad_case{"--threads 0", "--threads: '0'"},
                            bad_case{"--threads ''", "--threads: '' is not an integer"},
                            bad_case{"--format fp8-channel --group 32", "--group applies to w4a16 only"},
                            bad_case{"--format nvfp4 --asym", "--asym applies to w4a16 only"},
                            bad_case{"--format int3", "unknown format 'int3'"},
                            bad_case{"--include '('", "bad regular expression"},
                            bad_case{"--work-dtype fp16", "--work-dtype must be fp32 or bf16"},
                            bad_case{"--format fp8-block --work-dtype bf16", "fp8-block follows DeepGEMM"},
                            bad_case{"--format w4a16 --fuse none", "--fuse applies to nvfp4 only"},
                            bad_case{"--format nvfp4 --fuse q_proj", "names one layer"},
                            bad_case{"--format nvfp4 --fuse 'q_proj,,v_proj'", "not 'none' or a comma-separated list"},
                            bad_case{"--format nvfp4 --fuse none --fuse q_proj,k_proj", "--fuse none cannot be combined"}}) {
    CAPTURE(c.args);
    CHECK(run_tool(std::string("--no-progress ") + c.args + io, out, err) == 2);
    CHECK(err.find(c.says) != std::string::npos);
    CHECK(err.find("--help") != std::string::npos);
  }
  CHECK(run_tool("--format w4a16 " + in.string(), out, err) == 2);
  CHECK(err.find("expected INPUT and OUTPUT_DIR, got 1 path") != std::string::npos);
  // --exclude that leaves nothing to quantize: an error, not an unquantized "quantized" checkpoint.
  const fs::path none = scratch("cli_none");
  CHECK(convert("--format w4a16 --exclude '.*' " + in.string() + " " + none.string(), err) == 1);
  CHECK(err.find("no tensor selected for quantization") != std::string::npos);
  CHECK(!fs::exists(none));
  // The output inside the input would copy itself: refused.
  CHECK(convert("--format w4a16 " + in.string() + " " + (in / "w4a16").string(), err) == 1);
  CHECK(err.find("inside the input directory") != std::string::npos);
  CHECK(!fs::exists(in / "w4a16"));
  // One thread: "1 thread" (the CPU fallback line of --device auto, only where there is no GPU).
  if (device_info().rfind("gpu: none", 0) == 0) {
    const fs::path one = scratch("cli_one");
    REQUIRE_MESSAGE(run_tool("--no-progress --device auto --threads 1 --format w4a16" + std::string(" ") + in.string() + " " + one.string(), out, err) == 0, err);
    CHECK(err.find("on the CPU, 1 thread (") != std::string::npos);
  }
  // Progress lines carry an ETA.
  const fs::path prog = scratch("cli_prog");
  REQUIRE_MESSAGE(run_tool(device_arg + " --format w4a16 " + in.string() + " " + prog.string(), out, err) == 0, err);
  CHECK(err.find("ETA ") != std::string::npos);
}

TEST_CASE("GPT-2 style Conv1D models ([in, out] weights) are refused with a clear message") {
  const fs::path in = make_llama("gpt2");
  for (const char* cfg : {R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})", R"({"model_type": "gpt2"})",
                          R"({"architectures": ["GPT2LMHeadModel"]})"}) {
    CAPTURE(cfg);
    write_file(in / "config.json", cfg);
    expect_failure("--format w4a16 " + in.string(), scratch("gpt2_out"), {"Conv1D", "[in_features, out_features]", "not supported"});
  }
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
  const int rc = ctx.run();
  std::error_code ec;
  if (rc == 0) fs::remove_all(scratch("x").parent_path(), ec);  // keep the scratch files of a failing run only
  return rc;
}

// ---- --work-dtype bf16 and NVFP4 fused global scales, on apps/qnum-convert/tests/data/ckpt_bf16 ------------------------
namespace {
const std::string ckpt_bf16 = data_dir + "/ckpt_bf16";

// Every tensor of the golden (compressed-tensors 0.20 on ckpt_bf16) equal in dtype, shape and bytes; every other
// output tensor a byte copy of the input. asym: row 100 of layer 0's down_proj is all zero, where compressed-tensors'
// zero point is NaN (0/0); its codes and zero point are not compared.
void check_bf16_golden(const fs::path& out, const std::string& golden, bool asym) {
  checkpoint o(out.string()), g(data_dir + "/" + golden + ".safetensors"), in(ckpt_bf16);
  check_golden_tensors(o, g, [&](const std::string& n) -> std::int64_t {
    return asym && n.find("layers.0.mlp.down_proj") != std::string::npos &&
                   (ends_with(n, "weight_packed") || ends_with(n, "weight_zero_point"))
               ? 100
               : -1;
  });
  for (auto& kv : o.t) {
    if (g.t.count(kv.first)) continue;
    CAPTURE(kv.first);
    REQUIRE(in.t.count(kv.first) == 1);
    REQUIRE(o.bytes(kv.first) == in.bytes(kv.first));
    CHECK(std::memcmp(o.data(kv.first), in.data(kv.first), o.bytes(kv.first)) == 0);
  }
}

float global_of(const checkpoint& o, const std::string& module) {
  float g;
  std::memcpy(&g, o.data(module + ".weight_global_scale"), 4);
  return g;
}

// The largest |x| of a BF16 input tensor.
float bf16_amax(const checkpoint& in, const std::string& name) {
  const auto& t = in.info(name);
  const auto* p = reinterpret_cast<const std::uint16_t*>(in.data(name));
  float a = 0.0f;
  for (std::int64_t i = 0; i < t.shape[0] * t.shape[1]; ++i) a = std::max(a, std::fabs(qnum::from_bf16(p[i])));
  return a;
}
}  // namespace

TEST_CASE("--work-dtype bf16 is byte-equal with compressed-tensors on a bf16 model (llm-compressor's default flow)") {
  struct fmt_case {
    const char* args;
    const char* golden;
    bool asym;
  };
  for (const fmt_case& c : {fmt_case{"--format w4a16 --exclude 'o_proj|layers.1.mlp.down_proj'", "golden_bf16_w4a16_g128_sym", false},
                            fmt_case{"--format w4a16 --group 32 --asym", "golden_bf16_w4a16_g32_asym", true},
                            fmt_case{"--format fp8-channel", "golden_bf16_fp8_channel", false},
                            fmt_case{"--format fp8-tensor", "golden_bf16_fp8_tensor", false},
                            fmt_case{"--format nvfp4", "golden_bf16_nvfp4", false},
                            fmt_case{"--format mxfp4", "golden_bf16_mxfp4", false}}) {
    CAPTURE(c.args);
    const fs::path out = scratch(std::string(c.golden) + "_2"), out1 = scratch(std::string(c.golden) + "_1");
    std::string err;
    REQUIRE_MESSAGE(convert(std::string(c.args) + " --work-dtype bf16 --threads 2 " + ckpt_bf16 + " " + out.string(), err) == 0, err);
    check_bf16_golden(out, c.golden, c.asym);
    REQUIRE_MESSAGE(convert(std::string(c.args) + " --work-dtype bf16 --threads 1 " + ckpt_bf16 + " " + out1.string(), err) == 0, err);
    for (auto fn : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) CHECK(read_all(out / fn) == read_all(out1 / fn));
  }
  // The default (fp32 upcast) differs from the bf16 flow on this model: the option is not a no-op.
  const fs::path def = scratch("bf16_default");
  std::string err;
  REQUIRE_MESSAGE(convert("--format fp8-channel " + ckpt_bf16 + " " + def.string(), err) == 0, err);
  CHECK(checkpoint(def.string()).info("model.layers.0.self_attn.q_proj.weight_scale").dtype == "F32");
  // Only BF16 weights: the synthetic checkpoint's F32 k_proj is refused by name, nothing written.
  const fs::path f32 = scratch("bf16_f32");
  CHECK(convert("--format w4a16 --work-dtype bf16 --exclude o_proj " + ckpt + " " + f32.string(), err) == 1);
  CHECK(err.find("'model.layers.0.self_attn.k_proj.weight': dtype F32: --work-dtype bf16") != std::string::npos);
  CHECK(!fs::exists(f32));
}

TEST_CASE("nvfp4: q/k/v and gate/up of one block share weight_global_scale from the group's amax, as llm-compressor") {
  checkpoint in(ckpt_bf16);
  const fs::path out = scratch("fused");
  std::string err;
  REQUIRE_MESSAGE(convert("--format nvfp4 " + ckpt_bf16 + " " + out.string(), err) == 0, err);
  CHECK(err.find("4 fused layer groups share their weight_global_scale") != std::string::npos);
  check_bf16_golden(out, "golden_fused_nvfp4", false);  // codes and scales of compressed-tensors given the shared scale
  checkpoint o(out.string());
  for (const std::string l : {"model.layers.0.", "model.layers.1."}) {  // layer 1's v_proj is in the other shard
    CAPTURE(l);
    for (const auto& grp : std::vector<std::vector<std::string>>{{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                                                                 {"mlp.gate_proj", "mlp.up_proj"}}) {
      float amax = 0.0f;
      for (auto& m : grp) amax = std::max(amax, bf16_amax(in, l + m + ".weight"));
      for (auto& m : grp) CHECK(global_of(o, l + m) == qnum::presets::ct_nvfp4_global_scale(amax));
    }
    // The members' own amax differ, so sharing changed their scales (k_proj's std is 10x q_proj's, 20x v_proj's).
    CHECK(bf16_amax(in, l + "self_attn.q_proj.weight") < bf16_amax(in, l + "self_attn.k_proj.weight"));
    CHECK(global_of(o, l + "self_attn.q_proj") != qnum::presets::ct_nvfp4_global_scale(bf16_amax(in, l + "self_attn.q_proj.weight")));
    // Unfused layers keep their own.
    CHECK(global_of(o, l + "self_attn.o_proj") == qnum::presets::ct_nvfp4_global_scale(bf16_amax(in, l + "self_attn.o_proj.weight")));
  }
  // --fuse none: one per tensor; a custom list: only the groups named.
  const fs::path none = scratch("fused_none"), qk = scratch("fused_qk");
  REQUIRE_MESSAGE(convert("--format nvfp4 --fuse none " + ckpt_bf16 + " " + none.string(), err) == 0, err);
  REQUIRE_MESSAGE(convert("--format nvfp4 --fuse q_proj,k_proj " + ckpt_bf16 + " " + qk.string(), err) == 0, err);
  checkpoint on(none.string()), oq(qk.string());
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) {
    const std::string mod = std::string("model.layers.0.self_attn.") + m;
    CHECK(global_of(on, mod) == qnum::presets::ct_nvfp4_global_scale(bf16_amax(in, mod + ".weight")));
  }
  CHECK(global_of(oq, "model.layers.0.self_attn.q_proj") == global_of(oq, "model.layers.0.self_attn.k_proj"));
  CHECK(global_of(oq, "model.layers.0.self_attn.v_proj") == global_of(on, "model.layers.0.self_attn.v_proj"));
  CHECK(global_of(oq, "model.layers.0.mlp.gate_proj") == global_of(on, "model.layers.0.mlp.gate_proj"));
  // A fused layer partly selected is refused (the members must be quantized alike), nothing written.
  const fs::path part = scratch("fused_part");
  CHECK(convert("--format nvfp4 --exclude layers.1.self_attn.k_proj " + ckpt_bf16 + " " + part.string(), err) == 1);
  CHECK(err.find("'model.layers.1.self_attn.k_proj.weight' not") != std::string::npos);
  CHECK(err.find("--fuse none") != std::string::npos);
  CHECK(!fs::exists(part));
}
