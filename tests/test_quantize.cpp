// tests/test_quantize.cpp: quantize.hpp's per-element functions (quantize_value, quantize_int_value,
// dequantize_value, fake_quant_value) with a group's parameters and their defined policy: all-zero groups, NaN ->
// zero point, Inf saturates, ties to even over every int4 code, stochastic rounding unbiased, and the device's
// nearest-even path (detail::quantize_int_rne_by_cvt, round then clamp the integer) equal to the definition
// over hostile inputs, the unclamped codes of asymmetric groups whose ends need no clamp, and the W4A16 word from
// integers. Expected values are worked out by hand (no golden file); bit-exact goldens against the
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

namespace {
// The device's in-range path for asymmetric groups (gpu::group_code_path): when the unclamped codes of a group's
// smallest and largest element lie in the code range (detail::asym_codes_in_range), every element's unclamped
// code (detail::quantize_int_rne_scaled_unclamped) must equal the definition (quantize_int_value, the host's
// float clamp). Groups of 32 from several distributions (centred, one-signed, narrow around an offset, wide
// exponents, constant); every element, then 64 more values drawn from [min, max] and the values next to every
// rounding tie inside it. Counts the groups that take the path (in) and those that do not (out), so that both
// cases are met.
struct in_range_count {
  long bad = 0, in = 0, out = 0;
};
float group_value(std::uint32_t kind, std::uint64_t i) {
  const std::uint32_t b = qnum::random_bits(31, i);
  const float u = static_cast<float>(b >> 8) / 16777216.0f;  // [0, 1)
  switch (kind % 5) {
    case 0: return (u - 0.5f) * 2.0f;                                    // centred
    case 1: return u * 3.0f + 0.25f;                                     // one sign
    case 2: return 100.0f + u * 0.01f;                                   // narrow, far from 0
    case 3: return std::ldexp(u - 0.5f, static_cast<int>((b & 0xFF) % 60) - 30);  // wide exponents
    default: return 1.5f;                                                // constant
  }
}
template <class F>
in_range_count asym_in_range_mismatches(const qnum::scheme<F>& s) {
  in_range_count n;
  for (std::uint32_t g = 0; g < 4000; ++g) {
    float x[32];
    qnum::group_stats st;
    for (int e = 0; e < 32; ++e) {
      x[e] = group_value(g, std::uint64_t{g} * 64u + static_cast<std::uint64_t>(e));
      if (g % 7 == 3 && e % 2) x[e] = -x[e];  // now and then mixed signs
      qnum::accumulate(st, x[e]);
    }
    const qnum::group_params p = qnum::compute_params(s, st);
    const float lo = qnum::scaled_value(s, p, st.min), hi = qnum::scaled_value(s, p, st.max);
    if (!qnum::detail::asym_codes_in_range(s, p, lo, hi)) {
      ++n.out;
      continue;
    }
    ++n.in;
    const auto check = [&](float v) {
      if (v < st.min || v > st.max) return;
      const int want = qnum::quantize_int_value(s, p, v, qnum::rne);
      if (qnum::detail::quantize_int_rne_scaled_unclamped(s, p, qnum::scaled_value(s, p, v)) != want) ++n.bad;
    };
    for (float v : x) check(v);
    check(st.min);
    check(st.max);
    for (int k = 0; k < 64; ++k) {
      const float t = static_cast<float>(qnum::random_bits(32, std::uint64_t{g} * 64u + static_cast<std::uint64_t>(k)) >> 8) / 16777216.0f;
      check(st.min + (st.max - st.min) * t);
    }
    // Next to each tie (q + 1/2 - z) * code_scale inside [min, max].
    for (int q = s.code_min() - 1; q <= s.code_max(); ++q) {
      const float tie = (static_cast<float>(q - p.zero) + 0.5f) * p.code_scale;
      check(tie);
      check(std::nextafter(tie, -INFINITY));
      check(std::nextafter(tie, INFINITY));
    }
  }
  return n;
}
}  // namespace

TEST_CASE("asymmetric groups whose ends need no clamp: every element's unclamped code == the definition") {
  namespace p = qnum::presets;
  using qnum::dtype;
  long refused = 0;
  const auto run = [&](const auto& s) {
    const in_range_count n = asym_in_range_mismatches(s);
    CAPTURE(n.in);
    CAPTURE(n.out);
    CHECK(n.bad == 0);
    CHECK(n.in > 1000);  // the path is taken (most groups: 88-100% here) ...
    refused += n.out;
  };
  run(p::ct_w4a16_asym);
  run(p::ct_w4a16_asym_bf16_work);
  run(p::torchao_uint4_asym);
  run(p::torchao_uint8_asym);
  run(qnum::asymmetric<qnum::qint8>());
  run(qnum::asymmetric<qnum::qint8>().zero_before_round());
  run(qnum::asymmetric<qnum::quint8>().in_work(dtype::bf16).zero_before_round());
  run(qnum::asymmetric<qnum::qint4>().in_work(dtype::fp16));
  CHECK(refused > 1000);  // ... and refused (an end's code rounds out of the range; asymmetric<qint8> zero-first never here)
  // The refusal: a NaN end, and an end whose code leaves the range.
  const qnum::scheme<qnum::qint4> s = p::ct_w4a16_asym;
  qnum::group_params q;
  q.code_scale = 1.0f;
  q.zero = 0;
  CHECK_FALSE(qnum::detail::asym_codes_in_range(s, q, qtest::from_bits(0x7FC00000u), 1.0f));
  CHECK(qnum::detail::asym_codes_in_range(s, q, -8.5f, 7.49f));   // -8.5 ties to -8
  CHECK_FALSE(qnum::detail::asym_codes_in_range(s, q, -9.5f, 1.0f));  // -10
  CHECK_FALSE(qnum::detail::asym_codes_in_range(s, q, 0.0f, 7.5f));  // 8
}

TEST_CASE("pack_int4x8_ints (the device's W4A16 word from integers) == nibble i = q_i + 8, element 0 lowest") {
  // Every value at every position (the other seven random), then 2^20 random words; the reference sets each
  // nibble on its own.
  long bad = 0;
  for (std::uint64_t t = 0; t < (1u << 20) + 8 * 16 * 64; ++t) {
    int q[8];
    std::uint32_t want = 0;
    for (int i = 0; i < 8; ++i) {
      q[i] = static_cast<int>(qnum::random_bits(41, t * 8 + static_cast<std::uint64_t>(i)) % 16u) - 8;
      if (t < 8 * 16 * 64 && i == static_cast<int>(t / (16 * 64))) q[i] = static_cast<int>((t / 64) % 16) - 8;
      want |= static_cast<std::uint32_t>(q[i] + 8) << (4 * i);
    }
    if (qnum::detail::pack_int4x8_ints(q) != want) ++bad;
  }
  CHECK(bad == 0);
  const int lows[8] = {-8, -8, -8, -8, -8, -8, -8, -8}, highs[8] = {7, 7, 7, 7, 7, 7, 7, 7}, mixed[8] = {-1, 0, 1, -8, 7, -2, 3, -5};
  CHECK(qnum::detail::pack_int4x8_ints(lows) == 0x00000000u);
  CHECK(qnum::detail::pack_int4x8_ints(highs) == 0xFFFFFFFFu);
  CHECK(qnum::detail::pack_int4x8_ints(mixed) == 0x3B6F0987u);
}

TEST_CASE("pack_int4x8_codes (gpu::pack_int4x8: the W4A16 word from codes) == pack_int4x8_ints of their integers") {
  // Every byte (either high nibble) at every position, the other seven random, then 2^20 random code bytes; the
  // integer of a code is its low nibble as two's complement.
  long bad = 0;
  for (std::uint64_t t = 0; t < (1u << 20) + 8 * 256 * 16; ++t) {
    std::uint8_t c[8];
    int q[8];
    for (int i = 0; i < 8; ++i) {
      c[i] = static_cast<std::uint8_t>(qnum::random_bits(43, t * 8 + static_cast<std::uint64_t>(i)));
      if (t < 8 * 256 * 16 && i == static_cast<int>(t / (256 * 16))) c[i] = static_cast<std::uint8_t>((t / 16) % 256);
      q[i] = static_cast<int>(c[i] & 0xFu) - ((c[i] & 0x8u) != 0 ? 16 : 0);
    }
    if (qnum::detail::pack_int4x8_codes(c) != qnum::detail::pack_int4x8_ints(q)) ++bad;
  }
  CHECK(bad == 0);
  const std::uint8_t codes[8] = {0x0F, 0x00, 0x01, 0x08, 0x07, 0xFE, 0x03, 0x3B};  // -1 0 1 -8 7 -2 3 -5
  CHECK(qnum::detail::pack_int4x8_codes(codes) == 0x3B6F0987u);
}
