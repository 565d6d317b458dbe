// tests/test_quantize_tensor.cpp: host group quantization over strided 2-D views (quantize_tensor.hpp: quantize,
// dequantize, fake_quantize; fp32 and bf16 in and out, 1xG groups with a K tail, blocks, one- and two-level
// scales) with the presets' schemes, bit for bit against golden vectors from torchao / torch / compressed-tensors
// and the slime / DeepGEMM formulas (tests/data/groupquant.bin, tools/gen_golden.py --only groupquant), plus
// fake_quantize == dequantize(quantize) on every golden case whose codes come from the stored scale. The
// bad-input policy of the same functions is in test_quantize_tensor_policy.cpp.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "qnum/presets.hpp"
#include "qnum/quantize.hpp"
#include "qnum/quantize_tensor.hpp"
#include "test_util.hpp"

namespace {

using gcase = qtest::gq_case;

// The file is checked here (test_ste.cpp reads the same file without assertions of its own).
std::vector<gcase> load_cases() {
  const auto b = qtest::read_file("groupquant.bin");
  REQUIRE(b.size() > 8);
  REQUIRE(std::memcmp(b.data(), "QGV1", 4) == 0);
  return qtest::parse_groupquant(b);
}

const std::vector<gcase>& cases() {
  static const std::vector<gcase> c = load_cases();
  return c;
}

// By value: a const std::string& parameter bound to a temporary makes GCC 13 warn (-Wdangling-reference)
// at every `const gcase& c = find("...")`.
const gcase& find(std::string_view name) { return qtest::find_case(cases(), name); }

// Run quantize + dequantize through the host tensor API and compare scales, zero points, codes, dequant.
// In16: the case's input is bf16 (its in_type), else fp32; Out16: dequantize and fake-quantize to bf16 (bf16 input
// only), else to fp32. Both are template parameters, so that each format instantiates only the entry points its
// cases call (every other combination costs compile time in this and the sanitizer build).
template <bool In16, bool Out16, class F>
int check_case(const gcase& c, const qnum::scheme<F>& s, float outer = 0.0f, bool compare_dq = true) {
  static_assert(In16 || !Out16, "bf16 outputs from bf16 inputs only");
  REQUIRE(c.in_type == (In16 ? 1 : 0));
  const std::int64_t R = c.rows, C = c.cols;
  const qnum::group_shape gs{c.gr == 0 ? 1 : c.gr, c.gc};
  qnum::detail::grid g;
  qnum::detail::make_grid(R, C, gs, g);
  std::vector<float> xf(static_cast<std::size_t>(R * C));
  std::vector<std::uint16_t> xb(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) {
    xf[i] = qtest::from_bits(c.a.at("x")[i]);
    xb[i] = static_cast<std::uint16_t>(c.a.at("x")[i] >> 16);
  }
  std::vector<std::uint8_t> codes(xf.size());
  std::vector<std::uint32_t> sc(static_cast<std::size_t>(g.nr * g.nc));
  std::vector<std::int32_t> zp(sc.size());
  qnum::scale_view sv{sc.data(), g.nr, g.nc, g.nc, qnum::dtype_bytes(s.store)};
  std::vector<std::uint16_t> sc16(sc.size());
  std::vector<std::uint8_t> sc8(sc.size());
  if (sv.elem_bytes == 2) sv.data = sc16.data();
  if (sv.elem_bytes == 1) sv.data = sc8.data();
  auto cv = qnum::view(codes.data(), R, C);
  auto zv = qnum::view(zp.data(), g.nr, g.nc);
  qnum::status st;
  if constexpr (In16) st = qnum::quantize(s, qnum::view<const std::uint16_t>(xb.data(), R, C), gs, cv, sv, zv, {}, outer);
  else st = qnum::quantize(s, qnum::view<const float>(xf.data(), R, C), gs, cv, sv, zv, {}, outer);
  REQUIRE(st == qnum::status::ok);
  int bad = 0;
  auto expect = [&](const char* what, std::size_t i, std::uint32_t got, std::uint32_t want) {
    // The one documented difference: references that round in the float domain keep -0.0 for a negative x
    // whose code is the zero point; qnum's integer codes dequantize to +0.0.
    if (got == 0u && want == 0x80000000u) return;
    if (got != want && bad++ < 6)
      MESSAGE(c.name << " " << std::string(what) << "[" << i << "] got " << qtest::hex(got) << " want " << qtest::hex(want));
  };
  if (c.a.count("scale")) {
    const auto& w = c.a.at("scale");
    REQUIRE(w.size() == sc.size());
    for (std::size_t i = 0; i < sc.size(); ++i) {
      const std::uint32_t got = sv.elem_bytes == 4 ? sc[i] : sv.elem_bytes == 2 ? sc16[i] : sc8[i];
      expect("scale", i, got, w[i]);
    }
  }
  if (c.a.count("zero") && s.kind == qnum::scheme_kind::asymmetric) {
    const auto& w = c.a.at("zero");
    for (std::size_t i = 0; i < zp.size(); ++i) expect("zero", i, static_cast<std::uint32_t>(zp[i]), w[i]);
  }
  if (c.a.count("q")) {
    const auto& w = c.a.at("q");
    for (std::size_t i = 0; i < codes.size(); ++i) {
      std::uint32_t got = codes[i];
      if constexpr (F::is_integer) got = static_cast<std::uint32_t>(qnum::code_to_int<F>(codes[i]));
      expect("q", i, got, w[i]);
    }
  }
  // dequantize from the stored scales, and fake_quantize: both must equal the golden dequant.
  std::vector<float> dq(xf.size()), fq(xf.size());
  std::vector<std::uint16_t> dqb(xf.size()), fqb(xf.size());
  if constexpr (Out16) {
    REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C), gs, sv,
                             qnum::view<const std::int32_t>(zp.data(), g.nr, g.nc), qnum::view(dqb.data(), R, C), outer) == qnum::status::ok);
    REQUIRE(qnum::fake_quantize(s, qnum::view<const std::uint16_t>(xb.data(), R, C), gs, qnum::view(fqb.data(), R, C), {}, outer) == qnum::status::ok);
    for (std::size_t i = 0; i < dq.size(); ++i) {
      dq[i] = qnum::from_bf16(dqb[i]);
      fq[i] = qnum::from_bf16(fqb[i]);
    }
  } else {
    REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C), gs, sv,
                             qnum::view<const std::int32_t>(zp.data(), g.nr, g.nc), qnum::view(dq.data(), R, C), outer) == qnum::status::ok);
    if constexpr (In16)
      REQUIRE(qnum::fake_quantize(s, qnum::view<const std::uint16_t>(xb.data(), R, C), gs, qnum::view(fq.data(), R, C), {}, outer) == qnum::status::ok);
    else
      REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(xf.data(), R, C), gs, qnum::view(fq.data(), R, C), {}, outer) == qnum::status::ok);
  }
  if (compare_dq && c.a.count("dq")) {
    const auto& w = c.a.at("dq");
    for (std::size_t i = 0; i < dq.size(); ++i) expect("dq", i, qtest::bits(dq[i]), w[i]);
  }
  if (c.a.count("fq")) {
    const auto& w = c.a.at("fq");
    for (std::size_t i = 0; i < fq.size(); ++i) expect("fq", i, qtest::bits(fq[i]), w[i]);
  }
  // fake_quant == dequantize(quantize) whenever the codes were decided with the stored scale.
  if (s.codes_from_stored && outer == 0.0f)
    for (std::size_t i = 0; i < dq.size(); ++i) expect("fake_vs_dq", i, qtest::bits(fq[i]), qtest::bits(dq[i]));
  return bad;
}

}  // namespace

TEST_CASE("golden: slime INT4 QAT fake quant (megatron patch), g32 and g128, bf16 in/out, K tail") {
  CHECK(check_case<true, true>(find("slime_qat_g32"), qnum::presets::slime_int4_qat) == 0);
  CHECK(check_case<true, true>(find("slime_qat_g128"), qnum::presets::slime_int4_qat) == 0);
}

TEST_CASE("golden: slime checkpoint (CUDA kernel: amax*(1/7), fp32-decided codes, bf16 scale)") {
  CHECK(check_case<true, false>(find("slime_ckpt_g32"), qnum::presets::slime_int4_checkpoint) == 0);
}

TEST_CASE("golden: compressed-tensors W4A16 sym/asym, fp32 and bf16 scales") {
  CHECK(check_case<false, false>(find("ct_sym_g32"), qnum::presets::ct_w4a16_sym) == 0);
  CHECK(check_case<false, false>(find("ct_sym_g128"), qnum::presets::ct_w4a16_sym) == 0);
  CHECK(check_case<false, false>(find("ct_sym_bf16_g32"), qnum::presets::ct_w4a16_sym_bf16) == 0);
  // Scales that round to 0 in bf16 take finfo(bf16).eps after the rounding (ct's order), tiny ones survive.
  CHECK(check_case<false, false>(find("ct_sym_bf16_tiny"), qnum::presets::ct_w4a16_sym_bf16) == 0);
  CHECK(check_case<false, false>(find("ct_asym_g32"), qnum::presets::ct_w4a16_asym) == 0);
  CHECK(check_case<false, false>(find("ct_asym_g128"), qnum::presets::ct_w4a16_asym) == 0);
}

TEST_CASE("golden: torchao affine (choose_qparams / quantize / dequantize / fake quant + clipped STE)") {
  CHECK(check_case<false, false>(find("torchao_int4_sym_g32"), qnum::presets::torchao_int4_sym) == 0);
  CHECK(check_case<false, false>(find("torchao_int8_sym_g64"), qnum::presets::torchao_int8_sym) == 0);
  CHECK(check_case<false, false>(find("torchao_uint4_asym_g32"), qnum::presets::torchao_uint4_asym) == 0);
  CHECK(check_case<false, false>(find("torchao_uint8_asym_g128"), qnum::presets::torchao_uint8_asym) == 0);
}

TEST_CASE("golden: DeepGEMM per_token / per_block FP8 casts, with and without UE8M0") {
  CHECK(check_case<true, false>(find("deepgemm_token"), qnum::presets::deepgemm_fp8) == 0);
  CHECK(check_case<true, false>(find("deepgemm_token_ue8m0"), qnum::presets::deepgemm_fp8_ue8m0) == 0);
  CHECK(check_case<true, false>(find("deepgemm_block"), qnum::presets::deepgemm_fp8) == 0);
  CHECK(check_case<true, false>(find("deepgemm_block_ue8m0"), qnum::presets::deepgemm_fp8_ue8m0) == 0);
}

TEST_CASE("golden: torchao MX to_mx FLOOR and RCEIL (e4m3, e2m1)") {
  CHECK(check_case<false, false>(find("mx_e4m3_floor"), qnum::presets::mxfp8) == 0);
  CHECK(check_case<false, false>(find("mx_e2m1_floor"), qnum::presets::mxfp4) == 0);
  CHECK(check_case<false, false>(find("mx_e4m3_rceil"), qnum::presets::mxfp8_rceil) == 0);
  CHECK(check_case<false, false>(find("mx_e2m1_rceil"), qnum::presets::mxfp4_rceil) == 0);
}

TEST_CASE("golden: torchao nvfp4_quantize one- and two-level") {
  CHECK(check_case<false, false>(find("nvfp4"), qnum::presets::nvfp4) == 0);
  const gcase& c = find("nvfp4_2level");
  CHECK(check_case<false, false>(c, qnum::presets::nvfp4, qtest::from_bits(c.a.at("outer")[0])) == 0);
}
