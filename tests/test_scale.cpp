// tests/test_scale.cpp: scale.hpp's per-group statistics and parameters (accumulate, compute_params, the device's
// fast statistics, detail::sanitize_outer) and their defined policy: all-zero groups, non-finite elements
// ignored by the statistics, outer scales sanitised, the eps rule before or after the scale's storage rounding
// (compressed-tensors' order). No golden file: expected values are worked out by hand (the bf16 / ue4m3 bit
// patterns in the comments), and the fast statistics are checked against accumulate() + compute_params().
// Goldens from the reference libraries run through the tensor API (test_quantize_tensor.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "qnum/codec.hpp"
#include "qnum/presets.hpp"
#include "qnum/random.hpp"
#include "qnum/scale.hpp"
#include "test_util.hpp"

TEST_CASE("all-zero group: defined scale and zero point, for every scheme kind") {
  const qnum::group_stats z;
  auto p1 = qnum::compute_params(qnum::symmetric_restricted<qnum::qint4>(), z);
  CHECK(p1.scale == 1.0f);
  auto p2 = qnum::compute_params(qnum::presets::slime_int4_qat, z);
  CHECK(p2.scale == 1e-5f);
  auto p3 = qnum::compute_params(qnum::presets::torchao_uint4_asym, z);
  CHECK(p3.zero == 0);
  auto p4 = qnum::compute_params(qnum::presets::mxfp8, z);
  CHECK(p4.scale_code == 0u);
  auto p5 = qnum::compute_params(qnum::presets::te_fp8_current, z);
  CHECK(p5.inv == 1.0f);
}

TEST_CASE("NaN / Inf policy: statistics ignore non-finite elements") {
  const float xs[] = {0.5f, -0.25f, NAN, INFINITY, -INFINITY, 0.125f};
  qnum::group_stats st;
  for (float x : xs) qnum::accumulate(st, x);
  CHECK(st.amax == 0.5f);
  CHECK(st.min == -0.25f);
  CHECK(st.max == 0.5f);
}

TEST_CASE("outer scales: +Inf -> FLT_MAX, negative / NaN -> none; a huge stored scale times one stays finite") {
  CHECK(qnum::detail::sanitize_outer(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::max());
  CHECK(qnum::detail::sanitize_outer(-1.0f) == 0.0f);
  CHECK(qnum::detail::sanitize_outer(std::nanf("")) == 0.0f);
  // Outer scale with a huge stored scale: code scale finite (the tensor path with an Inf element:
  // test_quantize_tensor_policy.cpp, "degenerate scales").
  qnum::group_stats st;
  qnum::accumulate(st, 3.0e38f);
  const auto asym = qnum::asymmetric<qnum::qint4>();
  const qnum::group_params p = qnum::compute_params(asym, st, 1.0f);
  CHECK(std::isfinite(p.code_scale));
}

TEST_CASE("eps after storage: the rule sees the stored scale (compressed-tensors' order)") {
  using qnum::dtype;
  const auto early = qnum::symmetric_full<qnum::qint4>().stored_as(dtype::bf16).eps_zero_to(0.0078125f);
  const auto late = early.eps_after_storage();
  qnum::group_stats tiny;  // amax / 7.5 = 0.4 * 2^-133: a non-zero fp32 scale that rounds to 0 in bf16
  qnum::accumulate(tiny, qtest::from_bits(0x00030000u));
  const qnum::group_params e = qnum::compute_params(early, tiny), l = qnum::compute_params(late, tiny);
  CHECK(e.scale_code == 1u);  // before: the fp32 scale is not 0, so no eps; bf16 rounds it to 0 -> smallest subnormal
  CHECK(l.scale_code == 0x3C00u);  // after: 0 in bf16 -> eps
  CHECK(l.scale == 0.0078125f);
  CHECK(l.code_scale == 0.0078125f);
  // A tiny scale that survives the rounding is kept by both orders.
  qnum::group_stats small;
  qnum::accumulate(small, qtest::from_bits(0x00100000u));
  CHECK(qnum::compute_params(late, small).scale_code == 2u);
  CHECK(qnum::compute_params(early, small).scale_code == 2u);
  // All-zero group: eps, not the eps-less 1.0; codes from the fp32 scale use the eps too.
  CHECK(qnum::compute_params(late, qnum::group_stats{}).scale_code == 0x3C00u);
  CHECK(qnum::compute_params(late.codes_from_fp32_scale(), qnum::group_stats{}).code_scale == 0.0078125f);
  // floor after storage: a stored scale below eps is raised to eps rounded into the storage (ue4m3: 2^-6 exact).
  const auto fl = qnum::float_amax<qnum::fp4_e2m1>().stored_as(dtype::ue4m3).eps_floor(0.015625f).eps_after_storage();
  qnum::group_stats mid;
  qnum::accumulate(mid, 0.05f);  // 0.05 / 6 = 0.00833 -> ue4m3 0.0078125 < eps
  const qnum::group_params f = qnum::compute_params(fl, mid);
  CHECK(f.scale == 0.015625f);
  CHECK(f.scale_code == qnum::encode<qnum::ue4m3>(0.015625f, qnum::rne, qnum::satfinite));
  // With fp32 storage the two orders agree (compressed-tensors' fp32 presets keep the early form).
  for (float a : {0.0f, 1e-45f, 1e-30f, 3.0f}) {
    qnum::group_stats st;
    qnum::accumulate(st, a);
    CHECK(qnum::compute_params(qnum::presets::ct_w4a16_sym, st).scale_code ==
          qnum::compute_params(qnum::presets::ct_w4a16_sym.eps_after_storage(), st).scale_code);
  }
}

namespace {

// Element for the fast-statistics test: NaN (any sign and payload), +-Inf, +-0, subnormals, +-FLT_MAX, and
// finite values over the whole exponent range.
float stats_value(std::uint32_t b) {
  const std::uint32_t sign = b & 0x80000000u;
  switch ((b >> 8) % 16) {
    case 0: return qnum::detail::bits_to_float(0x7F800001u | sign | (b & 0x3FFFFFu));  // NaN
    case 1: return qnum::detail::bits_to_float(0x7F800000u | sign);                     // +-Inf
    case 2:
    case 3: return qnum::detail::bits_to_float(sign);                                   // +-0
    case 4: return qnum::detail::bits_to_float(sign | (b & 0x7FFFFFu) | 1u);            // subnormal
    case 5: return qnum::detail::bits_to_float(sign | 0x7F7FFFFFu);                     // +-FLT_MAX
    default: break;
  }
  const std::uint32_t r = qnum::random_bits(7, b);
  return qnum::detail::bits_to_float(sign | (r % 0x7F000000u) | (r & 0x7FFFu));  // finite, any exponent below the top
}

bool same_params(const qnum::group_params& a, const qnum::group_params& b) {
  return qtest::bits(a.scale) == qtest::bits(b.scale) && qtest::bits(a.code_scale) == qtest::bits(b.code_scale) &&
         qtest::bits(a.inv) == qtest::bits(b.inv) && a.zero == b.zero && a.scale_code == b.scale_code;
}

// The device's fast statistics (fragment_stats: detail::fast_accumulate per fragment, fast_stats_finish, then
// fast_merge across the sub-group) against accumulate() over the same group: a non-finite result must come
// exactly when an element is infinite or, for asymmetric schemes (min/max that propagate NaN), NaN (the kernels
// then recompute with accumulate), and a finite one must give
// compute_params' parameters bit for bit, whatever sign the hardware gives a zero minimum, maximum or amax.
template <class F>
std::uint64_t fast_stats_mismatches(const qnum::scheme<F>& s, std::uint32_t seed) {
  const bool mm = s.kind == qnum::scheme_kind::asymmetric;
  std::uint64_t bad = 0;
  for (std::uint32_t t = 0; t < 20000; ++t) {
    const std::uint32_t shape = qnum::random_bits(seed, t);
    const int frags = 1 + static_cast<int>(shape % 4), per = 1 + static_cast<int>((shape >> 4) % 16);
    const std::uint32_t flavour = (shape >> 12) % 4;  // 0: hostile mix; 1: finite only; 2: zeros and NaN; 3: one sign
    qnum::group_stats exact, fast;
    bool has_inf = false, has_nan = false;
    for (int f = 0; f < frags; ++f) {
      qnum::group_stats part;
      for (int i = 0; i < per; ++i) {
        std::uint32_t b = qnum::random_bits(seed + 1, std::uint64_t{t} * 64u + static_cast<std::uint64_t>(f * per + i));
        if (flavour == 1 && ((b >> 8) % 16) < 2) b += 2u << 8;
        if (flavour == 2) b = (b & ~0xFF00u) | ((b % 2 ? 0u : 2u) << 8);
        if (flavour == 3) b &= 0x7FFFFFFFu;
        const float x = stats_value(b);
        has_inf = has_inf || std::isinf(x);
        has_nan = has_nan || std::isnan(x);
        qnum::accumulate(exact, x);
        qnum::detail::fast_accumulate(part, x, mm);
      }
      qnum::detail::fast_stats_finish(part, mm);
      fast = f == 0 ? part : qnum::detail::fast_merge(fast, part, mm);
    }
    const bool need = has_inf || (mm && has_nan);
    if (qnum::detail::fast_stats_need_exact(fast) != need) {
      ++bad;
      continue;
    }
    if (need) continue;
    const qnum::group_params want = qnum::compute_params(s, exact);
    for (int v = 0; v < 8; ++v) {  // each zero statistic with either sign
      qnum::group_stats st = fast;
      if ((v & 1) && st.min == 0.0f) st.min = -st.min;
      if ((v & 2) && st.max == 0.0f) st.max = -st.max;
      if ((v & 4) && st.amax == 0.0f) st.amax = -st.amax;
      if (!same_params(qnum::compute_params(s, st), want)) ++bad;
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("device fast statistics (fmin/fmax chains) give accumulate()'s group parameters, every preset") {
  namespace p = qnum::presets;
  CHECK(fast_stats_mismatches(p::slime_int4_qat, 1) == 0);
  CHECK(fast_stats_mismatches(p::slime_int4_checkpoint, 2) == 0);
  CHECK(fast_stats_mismatches(p::ct_w4a16_sym, 3) == 0);
  CHECK(fast_stats_mismatches(p::ct_w4a16_sym_bf16, 4) == 0);
  CHECK(fast_stats_mismatches(p::ct_w4a16_asym, 5) == 0);
  CHECK(fast_stats_mismatches(p::ct_fp8, 6) == 0);
  CHECK(fast_stats_mismatches(p::int8_sym, 7) == 0);
  CHECK(fast_stats_mismatches(p::torchao_int4_sym, 8) == 0);
  CHECK(fast_stats_mismatches(p::torchao_int8_sym, 9) == 0);
  CHECK(fast_stats_mismatches(p::torchao_uint4_asym, 10) == 0);
  CHECK(fast_stats_mismatches(p::torchao_uint8_asym, 11) == 0);
  CHECK(fast_stats_mismatches(p::deepgemm_fp8, 12) == 0);
  CHECK(fast_stats_mismatches(p::deepgemm_fp8_ue8m0, 13) == 0);
  CHECK(fast_stats_mismatches(p::te_fp8_current, 14) == 0);
  CHECK(fast_stats_mismatches(p::te_fp8_current_e5m2, 15) == 0);
  CHECK(fast_stats_mismatches(p::mxfp8_rceil, 16) == 0);
  CHECK(fast_stats_mismatches(p::mxfp4, 17) == 0);
  CHECK(fast_stats_mismatches(p::nvfp4, 18) == 0);
  CHECK(fast_stats_mismatches(p::ct_fp4, 19) == 0);
}

