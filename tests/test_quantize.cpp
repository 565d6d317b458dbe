// tests/test_quantize.cpp: quantize.hpp's per-element functions (quantize_value, quantize_int_value,
// dequantize_value, fake_quant_value) with a group's parameters and their defined policy: all-zero groups, NaN ->
// zero point, Inf saturates, ties to even over every int4 code, stochastic rounding unbiased, and the device's
// nearest-even path (detail::quantize_int_rne_by_cvt, round then clamp the integer) equal to the definition
// over hostile inputs. Expected values are worked out by hand (no golden file); bit-exact goldens against the
// reference libraries run through the tensor API (test_quantize_tensor.cpp) and ste.hpp (test_ste.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "qnum/presets.hpp"
#include "qnum/quantize.hpp"
#include "qnum/random.hpp"
#include "qnum/round.hpp"
#include "qnum/scale.hpp"
#include "test_util.hpp"

TEST_CASE("all-zero group: zero codes, exact zero output, for every scheme kind") {
  const qnum::group_stats z;
  auto s1 = qnum::symmetric_restricted<qnum::qint4>();
  auto p1 = qnum::compute_params(s1, z);
  CHECK(qnum::quantize_value(s1, p1, 0.0f) == 0);
  CHECK(qnum::fake_quant_value(s1, p1, 0.0f) == 0.0f);
  auto s3 = qnum::presets::torchao_uint4_asym;
  auto p3 = qnum::compute_params(s3, z);
  CHECK(qnum::fake_quant_value(s3, p3, 0.0f) == 0.0f);
  auto p4 = qnum::compute_params(qnum::presets::mxfp8, z);
  CHECK(qnum::fake_quant_value(qnum::presets::mxfp8, p4, 0.0f) == 0.0f);
}

TEST_CASE("NaN / Inf policy: NaN -> zero point, Inf saturates") {
  const qnum::group_stats st = qtest::nan_inf_group_stats();
  const auto s = qnum::presets::slime_int4_qat;
  const auto p = qnum::compute_params(s, st);
  CHECK(qnum::quantize_int_value(s, p, NAN) == 0);
  CHECK(qnum::quantize_int_value(s, p, INFINITY) == 7);
  CHECK(qnum::quantize_int_value(s, p, -INFINITY) == -7);
  const auto a = qnum::presets::torchao_uint4_asym;
  const auto pa = qnum::compute_params(a, st);
  CHECK(qnum::fake_quant_value(a, pa, NAN) == 0.0f);
  const auto f = qnum::presets::deepgemm_fp8;
  const auto pf = qnum::compute_params(f, st);
  CHECK(qnum::quantize_value(f, pf, INFINITY) == 0x7E);
  CHECK(qnum::quantize_value(f, pf, NAN) == 0x7F);
  // A NaN x / s (0 * Inf from hand-made parameters) gives the zero point, like a NaN x.
  const auto asym = qnum::asymmetric<qnum::qint4>();
  qnum::group_params q;
  q.inv = std::numeric_limits<float>::infinity();
  q.zero = 3;
  CHECK(qnum::quantize_int_value(asym.x_multiply(), q, 0.0f) == 3);
}

TEST_CASE("stochastic rounding: unbiased on average") {
  const auto s = qnum::symmetric_restricted<qnum::qint8>();
  qnum::group_params p;
  p.scale = p.code_scale = 1.0f;
  p.inv = 1.0f;
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) sum += qnum::quantize_int_value(s, p, 0.3f, qnum::stochastic(qnum::random_bits(7, static_cast<std::uint64_t>(i))));
  CHECK(std::fabs(sum / n - 0.3) < 0.02);
}

TEST_CASE("exhaustive int4 ties: x/s = k + 0.5 rounds to even for every k in [-8, 7]") {
  const auto s = qnum::presets::torchao_int4_sym;
  qnum::group_stats st;
  st.amax = 0.9375f;  // s = 0.125 exactly
  const auto p = qnum::compute_params(s, st);
  REQUIRE(p.scale == 0.125f);
  for (int k = -9; k <= 8; ++k) {
    const float x = (static_cast<float>(k) + 0.5f) * 0.125f;
    int want = (k % 2 == 0) ? k : k + 1;
    want = want < -8 ? -8 : (want > 7 ? 7 : want);
    CHECK(qnum::quantize_int_value(s, p, x) == want);
  }
}

namespace {
float hostile(std::uint64_t i) {
  const std::uint32_t b = qnum::random_bits(9, i);
  switch (b % 13) {
    case 0: return qtest::from_bits(0x7FC00000u | (b & 0x80000000u));
    case 1: return qtest::from_bits(0x7F800000u | (b & 0x80000000u));
    case 2: return 0.0f;
    case 3: return qtest::from_bits(b & 0x807FFFFFu);  // subnormal
    case 4: return qtest::from_bits(b);                // any bits
    default: return qtest::from_bits((b & 0x8FFFFFFFu) | 0x38000000u);
  }
}
template <class F>
long device_rne_mismatches(const qnum::scheme<F>& s) {
  long bad = 0;
  for (std::uint64_t i = 0; i < 200000; ++i) {
    qnum::group_stats st;
    for (std::uint64_t e = 0; e < 4; ++e) qnum::accumulate(st, hostile(i * 8 + e));
    qnum::group_params p = qnum::compute_params(s, st, i % 5 == 0 ? 0.001f : 0.0f);
    // A caller's own zero point in [code_min, code_max] now and then (asymmetric schemes: a symmetric
    // scheme's zero point is 0): the 8-bit saturating path must not apply there for INT8.
    if (s.kind == qnum::scheme_kind::asymmetric && i % 11 == 3) {
      const std::uint32_t span = static_cast<std::uint32_t>(s.code_max() - s.code_min()) + 1u;
      p.zero = s.code_min() + static_cast<std::int32_t>(qnum::random_bits(10, i) % span);
    }
    float x = hostile(i * 8 + 5);
    if (i % 7 == 0) x *= 1e30f;
    if (qnum::quantize_int_value(s, p, x, qnum::rne) != qnum::detail::quantize_int_rne_by_cvt(s, p, x)) ++bad;
  }
  return bad;
}
}  // namespace

TEST_CASE("the device's nearest-even integer path (round, then clamp the integer) == the definition") {
  namespace p = qnum::presets;
  using qnum::dtype;
  CHECK(qnum::detail::f2i_rn_sat(qtest::from_bits(0x7FC00000u)) == 0);
  CHECK(qnum::detail::f2i_rn_sat(3e9f) == 2147483647);
  CHECK(qnum::detail::f2i_rn_sat(-3e9f) == -2147483647 - 1);
  CHECK(qnum::detail::f2i_rn_sat(2.5f) == 2);
  CHECK(qnum::detail::f2i_rn_sat(-3.5f) == -4);
  // The 8-bit saturating rounding (cvt.rni.s8.f32 on the device): ties to even, [-128, 127], NaN -> 0.
  CHECK(qnum::detail::f2i8_rn_sat(qtest::from_bits(0x7FC00000u)) == 0);
  CHECK(qnum::detail::f2i8_rn_sat(qtest::from_bits(0xFF800001u)) == 0);
  CHECK(qnum::detail::f2i8_rn_sat(qtest::from_bits(0x7F800000u)) == 127);
  CHECK(qnum::detail::f2i8_rn_sat(qtest::from_bits(0xFF800000u)) == -128);
  CHECK(qnum::detail::f2i8_rn_sat(126.5f) == 126);
  CHECK(qnum::detail::f2i8_rn_sat(127.49f) == 127);
  CHECK(qnum::detail::f2i8_rn_sat(127.5f) == 127);
  CHECK(qnum::detail::f2i8_rn_sat(-127.5f) == -128);
  CHECK(qnum::detail::f2i8_rn_sat(-128.5f) == -128);
  CHECK(qnum::detail::f2i8_rn_sat(-1e30f) == -128);
  CHECK(qnum::detail::f2i8_rn_sat(-0.5f) == 0);
  CHECK(qnum::detail::f2i8_rn_sat(-1.5f) == -2);
  CHECK(qnum::detail::f2i8_rn_sat(2.5f) == 2);
  CHECK(device_rne_mismatches(p::slime_int4_qat) == 0);
  CHECK(device_rne_mismatches(p::slime_int4_checkpoint) == 0);
  CHECK(device_rne_mismatches(p::ct_w4a16_sym_bf16) == 0);
  CHECK(device_rne_mismatches(p::ct_w4a16_asym) == 0);
  CHECK(device_rne_mismatches(p::torchao_int8_sym) == 0);
  CHECK(device_rne_mismatches(p::torchao_uint4_asym) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::quint8>().in_work(dtype::bf16).zero_before_round()) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::qint4>().in_work(dtype::fp16)) == 0);
  CHECK(device_rne_mismatches(qnum::symmetric_restricted<qnum::qint8>().x_multiply().in_work(dtype::bf16)) == 0);
  CHECK(device_rne_mismatches(qnum::symmetric_full<qnum::qint8>()) == 0);
  CHECK(device_rne_mismatches(qnum::symmetric_full<qnum::quint4>()) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::qint8>()) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::qint8>().zero_before_round()) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::qint4>().zero_before_round()) == 0);
}
