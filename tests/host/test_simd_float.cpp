// tests/host/test_simd_float.cpp: the second half of test_simd.cpp (same program): float element formats
// (divide and multiply, presets, the code lanes on every boundary pattern), INT8 gradients with error feedback,
// row statistics, the target choice, fixed against run-time schemes, and the GGUF writers, each against the
// per-element definition under every target. Shared helpers: simd_test_util.hpp.
#include "simd_test_util.hpp"

TEST_CASE("host lanes == per-element definition: float presets") {
  namespace p = qnum::presets;
  run_all(p::deepgemm_fp8, "deepgemm_fp8");
  run_all(p::deepgemm_fp8_ue8m0, "deepgemm_fp8_ue8m0");
  run_all(p::te_fp8_current, "te_fp8_current");
  run_all(p::te_fp8_current_e5m2, "te_fp8_current_e5m2");
  run_all(p::mxfp8, "mxfp8");
  run_all(p::mxfp8_rceil, "mxfp8_rceil");
  run_all(p::mxfp4, "mxfp4");
  run_all(p::mxfp4_rceil, "mxfp4_rceil");
  run_all(p::nvfp4, "nvfp4", true);
}

TEST_CASE("host lanes == per-element definition: float formats, divide and multiply") {
  run_all(qnum::float_amax<qnum::fp8_e4m3>(), "e4m3 divide");
  run_all(qnum::float_amax<qnum::fp8_e5m2>(), "e5m2 divide");
  run_all(qnum::float_amax<qnum::fp4_e2m1>(), "e2m1 divide");
  run_all(qnum::float_amax<qnum::fp8_e5m2>().x_multiply().stored_as(qnum::dtype::bf16), "e5m2 multiply bf16 scale");
  run_all(qnum::float_amax<qnum::fp4_e2m1>().stored_as(qnum::dtype::ue4m3), "e2m1 ue4m3 scale");
}

// Groups whose amax runs over every float exponent (subnormal amax, scales below 2^-126 and near FLT_MAX) with
// elements at, and one ulp either side of, the midpoints between neighbouring values of F times the group's code
// scale, in F's normal and subnormal ranges, at its largest value and beyond it: the batched parameters (amax /
// max_value, eps, DeepGEMM's ceil_pow2, MX's E8M0 floor, bf16, fp16 and UE4M3 storage, an outer scale) and the
// codes and values of F in the batched loops (rows of whole groups of 16, 32 and 128, and 2D blocks, whose amax
// differ from block to block) against the definition, fp32 and bf16 in and out.
template <class F>
void float_midpoints(const qnum::scheme<F>& s, const char* name, float outer = 0.0f) {
  lcg next{23};
  const std::int64_t rows = 80, cols = 256, groups = rows * cols / 32;
  std::vector<float> src(static_cast<std::size_t>(rows * cols));
  constexpr std::uint32_t ncodes = F::max_code + 1;  // non-negative codes 0 .. max_code
  for (std::int64_t g = 0; g < groups; ++g) {
    // biased exponents 0 .. 254 of amax, every one at least once; then every one again at F's largest value times
    // a power of two, or one ulp below or above it (amax / max_value a power of two, where MX's RCEIL rule rounds
    // up or not; 2^-127, E8M0's code 0, among them); then at random
    const int e = g < 255 ? static_cast<int>(g) : g < 510 ? static_cast<int>(g - 255) : static_cast<int>(next() % 255);
    float amax = bits_to_float((static_cast<std::uint32_t>(e) << 23) | (next() & 0x7FFFFFu));
    if (g >= 255 && g < 510) {
      const float a = std::ldexp(F::max_value, e - 127 - qnum::detail::emax_elem<F>());
      const int side = static_cast<int>(g % 3);
      const float b = side == 0 ? a : std::nextafter(a, side == 1 ? 0.0f : 2.0f * a);
      if (b > 0.0f && std::isfinite(b)) amax = b;
    }
    qnum::group_stats gs;
    qnum::accumulate(gs, amax);
    const qnum::group_params p = qnum::compute_params(s, gs, outer);
    const float sc = p.code_scale;
    float* x = &src[static_cast<std::size_t>(g * 32)];
    x[0] = next() % 2 ? amax : -amax;
    for (int i = 1; i < 32; ++i) {
      const std::uint32_t k = next() % ncodes;
      const double v0 = qnum::decode<F>(k), v1 = k + 1 < ncodes ? qnum::decode<F>(k + 1) : 2.0 * v0;
      double t = next() % 4 == 0 ? v0 : 0.5 * (v0 + v1);  // a value of F, or a midpoint (beyond max: 1.5 max)
      float y = static_cast<float>(t * static_cast<double>(sc));
      switch (next() % 3) {
        case 0: y = std::nextafter(y, 0.0f); break;
        case 1: y = std::nextafter(y, 2.0f * y + 1.0f); break;
        default: break;
      }
      if (next() % 2) y = -y;
      x[i] = std::fabs(y) <= amax ? y : (next() % 2 ? 0.0f : -0.0f);
    }
  }
  for (const shape& sh : {shape{rows, cols, cols, qnum::group_size(32)}, shape{rows, cols, cols, qnum::group_size(128)},
                          shape{rows, cols, cols, qnum::group_size(16)},
                          shape{rows, 128, cols, qnum::group_size(32)}, shape{rows, cols, cols, qnum::block(8, 32)},
                          shape{rows - 3, 128, cols, qnum::block(16, 64)}}) {
    run_case<F, float, float>(s, sh, src, outer, name);
    run_case<F, float, std::uint16_t>(s, sh, src, outer, name);
    run_case<F, std::uint16_t, std::uint16_t>(s, sh, src, outer, name);
  }
}

TEST_CASE("host lanes == per-element definition: float formats, amax of every exponent, elements at midpoints") {
  namespace p = qnum::presets;
  using qnum::dtype;
  float_midpoints(p::deepgemm_fp8, "deepgemm_fp8 midpoints");
  float_midpoints(p::deepgemm_fp8_ue8m0, "deepgemm_fp8_ue8m0 midpoints");
  float_midpoints(p::ct_fp8, "ct_fp8 midpoints");
  float_midpoints(p::mxfp8, "mxfp8 midpoints");
  float_midpoints(p::mxfp4, "mxfp4 midpoints");
  float_midpoints(p::mxfp8_rceil, "mxfp8_rceil midpoints");
  float_midpoints(p::mxfp4_rceil, "mxfp4_rceil midpoints");
  float_midpoints(qnum::float_amax<qnum::fp8_e5m2>().with_pow2(qnum::pow2_rule::mx_rceil), "e5m2 rceil divide midpoints");
  float_midpoints(qnum::float_amax<qnum::fp8_e5m2>(), "e5m2 divide midpoints");
  float_midpoints(qnum::float_amax<qnum::fp8_e5m2>().x_multiply().stored_as(dtype::bf16).eps_zero_to(1e-30f), "e5m2 bf16 scale midpoints");
  float_midpoints(qnum::float_amax<qnum::fp4_e2m1>().x_multiply().with_pow2(qnum::pow2_rule::ceil_pow2), "e2m1 ceil_pow2 midpoints");
  float_midpoints(qnum::float_amax<qnum::fp8_e4m3>().stored_as(dtype::bf16).eps_floor(1e-20f).eps_after_storage(), "e4m3 bf16 late eps midpoints");
  // UE4M3 scales (NVFP4): one level, two levels (the outer scale of a tensor of amax 1, of 2^100, and a subnormal
  // one), without eps (scales in UE4M3's subnormal range and beyond its largest value), late eps, fp32 codes.
  float_midpoints(p::nvfp4, "nvfp4 midpoints");
  float_midpoints(p::nvfp4, "nvfp4 two-level midpoints", p::nvfp4_tensor_scale(1.0f));
  float_midpoints(p::nvfp4, "nvfp4 two-level 2^100 midpoints", p::nvfp4_tensor_scale(std::ldexp(1.0f, 100)));
  float_midpoints(p::nvfp4, "nvfp4 two-level subnormal outer midpoints", 1e-40f);
  float_midpoints(qnum::float_amax<qnum::fp4_e2m1>().stored_as(dtype::ue4m3), "e2m1 ue4m3 divide midpoints");
  float_midpoints(qnum::float_amax<qnum::fp8_e4m3>().x_multiply().stored_as(dtype::ue4m3).codes_from_fp32_scale(),
                  "e4m3 ue4m3 fp32 codes midpoints", 0.5f);
  float_midpoints(qnum::float_amax<qnum::fp8_e5m2>().stored_as(dtype::ue4m3).eps_floor(1e-3f).eps_after_storage(),
                  "e5m2 ue4m3 late eps midpoints", 3.0f);
  // fp16 scales: normal, subnormal (below 2^-14) and beyond 65504
  float_midpoints(qnum::float_amax<qnum::fp8_e4m3>().stored_as(dtype::fp16), "e4m3 fp16 scale midpoints");
  float_midpoints(qnum::float_amax<qnum::fp4_e2m1>().x_multiply().stored_as(dtype::fp16).eps_floor(1e-7f),
                  "e2m1 fp16 scale eps midpoints", 0.25f);
}

template <class Residual>
void grad_case(std::size_t n, std::size_t gs, qnum::scale_timing timing, std::uint64_t seed, bool overflow = false,
               float magnify = 1.0f, bool skip = false) {
  // overflow: residuals 0 and step 0 finite and small, later steps with +-3.4e38 in places (finite in fp32, beyond bf16's
  // largest): under a delayed scale those clamp, and their residuals round past bf16's range (satfinite).
  // magnify: the same finite data times magnify (1.25e37: |g| up to 1e38, scales past 2^126, where the lanes
  // store bf16 residuals by the full rule), with +-3.4e38 in places.
  // Three steps of quantize_gradient_int8 (lanes where the build has them) against the per-element
  // quantize_grad_element loop written out here: codes, residual bits, states, status.
  qnum::dynamic_scale_config cfg;
  cfg.timing = timing;
  // skip: the default policy, skip_step (a step with any non-finite g + r_old changes nothing but the codes, all 0)
  cfg.on_nonfinite = skip ? qnum::nonfinite_policy::skip_step : qnum::nonfinite_policy::zero_elements;
  const std::size_t call_gs = gs;
  if (gs == 0) gs = n;  // 0: one group for the tensor
  const std::size_t groups = n / gs;
  std::vector<Residual> res(n), ref_res(n);
  std::vector<qnum::dynamic_scale_state> st(groups), ref_st(groups);
  std::vector<std::int8_t> codes(n), ref_codes(n);
  for (std::size_t i = 0; i < n; ++i) {  // a user's residual buffer may hold anything: +-Inf, NaN, huge
    float v = i % 97 == 3 ? qtest::from_bits(0x7F800000u) : i % 89 == 5 ? qtest::from_bits(0xFF800000u)
                  : i % 83 == 1 ? qtest::from_bits(0x7FC00000u) : i % 79 == 2 ? -3.3e38f : 0.0f;
    if (overflow) v = 0.0f;
    qnum::store_residual(res.data(), i, v);
    qnum::store_residual(ref_res.data(), i, v);
  }
  long bad = 0;
  int skipped_steps = 0;
  for (int step = 0; step < 3; ++step) {
    auto g = hard_data(1, static_cast<std::int64_t>(n), seed + static_cast<std::uint64_t>(step));
    if (overflow || magnify != 1.0f)
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(g[i]) || std::fabs(g[i]) > 8.0f) g[i] = 1.5f;
        g[i] *= magnify;
        if ((step > 0 || magnify != 1.0f) && i % 61 == 7) g[i] = i % 2 ? -3.4e38f : 3.4e38f;
      }
    const std::int64_t n64 = static_cast<std::int64_t>(n);
    const qnum::status got = qnum::quantize_gradient_int8(
        qnum::view(g.data(), n64), call_gs == 0 ? qnum::per_tensor() : qnum::group_size(static_cast<std::int64_t>(call_gs)),
        qnum::view(codes.data(), n64), qnum::view(res.data(), n64), qnum::view(st.data(), static_cast<std::int64_t>(groups)), cfg);
    // Reference: the documented per-group rule with the per-element function.
    const bool first = ref_st[0].steps == 0 || !(ref_st[0].scale > 0.0f);
    bool zeroed = false, skipped = false;
    if (skip)
      for (std::size_t i = 0; i < n && !skipped; ++i)
        skipped = qnum::detail::is_nonfinite(qnum::detail::add_rn(g[i], qnum::load_residual(ref_res.data(), i)));
    if (skipped) std::fill(ref_codes.begin(), ref_codes.end(), std::int8_t{0});
    for (std::size_t k = 0; k < groups && !skipped; ++k) {
      float amax_now = 0.0f;
      for (std::size_t i = k * gs; i < (k + 1) * gs; ++i) {
        const float x = qnum::detail::add_rn(g[i], qnum::load_residual(ref_res.data(), i));
        if (!qnum::detail::is_nonfinite(x)) amax_now = qnum::detail::abs_bits(x) > amax_now ? qnum::detail::abs_bits(x) : amax_now;
      }
      const float s = first ? qnum::dynamic_scale_update(0.0f, amax_now, cfg)
                            : (timing == qnum::scale_timing::current ? qnum::dynamic_scale_update(ref_st[k].scale, amax_now, cfg)
                                                                     : qnum::dynamic_scale_update(ref_st[k].scale, ref_st[k].amax, cfg));
      const qnum::int8_multipliers m = qnum::int8_multipliers_for(s);
      float amax = 0.0f;
      for (std::size_t i = k * gs; i < (k + 1) * gs; ++i) {
        const qnum::int8_element el = qnum::quantize_grad_element(g[i], qnum::load_residual(ref_res.data(), i), m, qnum::rne);
        ref_codes[i] = static_cast<std::int8_t>(el.code);
        qnum::store_residual(ref_res.data(), i, el.residual);
        amax = el.abs_in > amax ? el.abs_in : amax;
        zeroed = zeroed || !el.finite;
      }
      ref_st[k].scale = s;
      ref_st[k].amax = amax;
      ref_st[k].steps += 1;
    }
    const qnum::status want = skipped ? qnum::status::skipped_nonfinite : zeroed ? qnum::status::ok_zeroed_nonfinite : qnum::status::ok;
    bad += got != want;
    skipped_steps += skipped;
    for (std::size_t i = 0; i < n; ++i) {
      bad += codes[i] != ref_codes[i];
      bad += qtest::bits(qnum::load_residual(res.data(), i)) != qtest::bits(qnum::load_residual(ref_res.data(), i));
    }
    for (std::size_t k = 0; k < groups; ++k)
      bad += qtest::bits(st[k].scale) != qtest::bits(ref_st[k].scale) || qtest::bits(st[k].amax) != qtest::bits(ref_st[k].amax);
  }
  CHECK_MESSAGE(bad == 0, "n=" << n << " gs=" << gs);
  const bool both = skipped_steps > 0 && skipped_steps < 3;  // skip_step: steps taken and steps skipped
  if (skip) CHECK_MESSAGE(both, "skipped steps " << skipped_steps << ", n=" << n << " gs=" << gs);
}

TEST_CASE("INT8 gradient quantizer with error feedback: lanes == per-element definition") {
  each_target([](qnum::simd_target) {
    for (auto timing : {qnum::scale_timing::delayed, qnum::scale_timing::current}) {
      grad_case<float>(4096, 128, timing, 5);
      grad_case<float>(1000, 0, timing, 6);
      grad_case<float>(999, 37, timing, 7);
      grad_case<std::uint16_t>(4096, 128, timing, 8);
      grad_case<std::uint16_t>(77, 7, timing, 9);
      grad_case<std::uint16_t>(1000, 0, timing, 10, true);
      grad_case<float>(1000, 0, timing, 11, true);
      grad_case<std::uint16_t>(1000, 0, timing, 12, false, 1.25e37f);
      grad_case<std::uint16_t>(4096, 256, timing, 13, false, 1.25e37f);
      grad_case<float>(1000, 0, timing, 14, false, 1.25e37f);
    }
    // Beyond 2 MiB of gradient and residual: the lanes' prefetching loop, which tensors of these sizes take by
    // the library's own rule (checked here, so that a change of the threshold cannot leave the loop untested
    // unnoticed), in one group and in groups far smaller than 2 MiB (the choice is the tensor's).
    namespace ls = qnum::detail::simd;
    static_assert(ls::beyond_caches(ls::grad_row_bytes<float>(300000)) && ls::beyond_caches(ls::grad_row_bytes<std::uint16_t>(400000)));
    static_assert(!ls::beyond_caches(ls::grad_row_bytes<float>(4096)), "the other cases take the loop without prefetches");
    grad_case<float>(300000, 0, qnum::scale_timing::delayed, 15);
    grad_case<std::uint16_t>(400000, 0, qnum::scale_timing::current, 16);
    grad_case<float>(300000, 120, qnum::scale_timing::current, 17);
    grad_case<std::uint16_t>(400000, 160, qnum::scale_timing::delayed, 18);
    // The default policy, skip_step: steps skipped and taken (overflowing sums in later steps), one group (whose
    // max under current timing is the pre-scan's) and several, in cache and beyond 2 MiB.
    for (auto timing : {qnum::scale_timing::delayed, qnum::scale_timing::current}) {
      grad_case<float>(1000, 0, timing, 19, true, 1.0f, true);
      grad_case<std::uint16_t>(1000, 100, timing, 20, true, 1.0f, true);
      grad_case<float>(300000, 0, timing, 21, true, 1.0f, true);
      grad_case<std::uint16_t>(400000, 0, timing, 22, true, 1.0f, true);
    }
  });
}

// The gradient quantizer's statistics pass (skip_step's scan of the tensor, each group's max under current timing
// and on the first step) on the lanes: max |g + r_old| over the finite sums and the non-finite flag, bit for bit
// as the definition, for rows of every length around the lanes' two-vector trips, with and without Inf and NaN
// (in g, in the residual, or from the sum's overflow), with no residual, an fp32 one and a bf16 one.
template <class Residual>
void grad_amax_case(bool finite, std::uint64_t seed) {
  const std::int64_t n = 1100;
  auto g = hard_data(1, n, seed);
  auto r = hard_data(1, n, seed + 100);
  for (std::int64_t i = 0; i < n; ++i) {
    float& x = g[static_cast<std::size_t>(i)];
    float& y = r[static_cast<std::size_t>(i)];
    if (finite) {
      if (!std::isfinite(x)) x = -2.5f;
      if (!std::isfinite(y) || std::fabs(y) > 1e30f) y = 0.75f;
      if (std::fabs(x) > 1e30f) x = 1e30f;
    }
  }
  std::vector<Residual> res(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) qnum::store_residual(res.data(), static_cast<std::size_t>(i), r[static_cast<std::size_t>(i)]);
  long bad = 0;
  for (std::size_t off : {0u, 1u, 3u}) {
    for (std::size_t len = 0; len + off <= 80; ++len) {
      for (const Residual* rp : {static_cast<const Residual*>(nullptr), static_cast<const Residual*>(res.data())}) {
        bool f_got = false, f_want = false;
        const float got = qnum::detail::grad_input_amax(g.data(), rp, off, off + len, f_got);
        const float want = qnum::detail::grad_input_amax_ref(g.data(), rp, off, off + len, f_want);
        bad += qtest::bits(got) != qtest::bits(want) || f_got != f_want;
      }
    }
    bool f_got = false, f_want = false;  // the whole row
    const float got = qnum::detail::grad_input_amax(g.data(), res.data(), off, static_cast<std::size_t>(n), f_got);
    const float want = qnum::detail::grad_input_amax_ref(g.data(), res.data(), off, static_cast<std::size_t>(n), f_want);
    bad += qtest::bits(got) != qtest::bits(want) || f_got != f_want;
    CHECK(f_want == !finite);
  }
  CHECK_MESSAGE(bad == 0, "finite=" << finite << " seed=" << seed);
}

TEST_CASE("INT8 gradient statistics pass: lanes == per-element definition") {
  each_target([](qnum::simd_target) {
    for (bool finite : {true, false}) {
      grad_amax_case<float>(finite, 31);
      grad_amax_case<std::uint16_t>(finite, 37);
    }
  });
}

TEST_CASE("row_stats and quantize_row == accumulate and quantize_value") {
  each_target([](qnum::simd_target) {
  namespace p = qnum::presets;
  for (std::int64_t n : {1, 3, 16, 32, 77, 300}) {
    const auto x = hard_data(3, n, static_cast<std::uint64_t>(n));
    std::vector<std::uint16_t> xb(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) xb[i] = qnum::to_bf16(x[i]);
    for (std::int64_t r = 0; r < 3; ++r) {
      const float* row = x.data() + r * n;
      const std::uint16_t* rowb = xb.data() + r * n;
      qnum::group_stats a, b;
      for (std::int64_t i = 0; i < n; ++i) {
        qnum::accumulate(a, row[i]);
        qnum::accumulate(b, qnum::from_bf16(rowb[i]));
      }
      const qnum::group_stats ra = qnum::row_stats(row, n), rb = qnum::row_stats(rowb, n);
      CHECK(qtest::bits(ra.amax) == qtest::bits(a.amax));
      CHECK(qtest::bits(ra.min) == qtest::bits(a.min));
      CHECK(qtest::bits(ra.max) == qtest::bits(a.max));
      CHECK(qtest::bits(rb.amax) == qtest::bits(b.amax));
      const auto check = [&](const auto& s, const qnum::group_stats& st) {
        const qnum::group_params gp = qnum::compute_params(s, st);
        std::vector<std::uint8_t> c(static_cast<std::size_t>(n)), cb(c.size());
        qnum::quantize_row(s, gp, row, n, c.data());
        qnum::quantize_row(s, gp, rowb, n, cb.data());
        long bad = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          bad += c[static_cast<std::size_t>(i)] != qnum::quantize_value(s, gp, row[i]);
          bad += cb[static_cast<std::size_t>(i)] != qnum::quantize_value(s, gp, qnum::from_bf16(rowb[i]));
        }
        CHECK(bad == 0);
      };
      check(p::ct_w4a16_asym, a);
      check(p::deepgemm_fp8, a);
      check(p::mxfp4, a);
      check(qnum::symmetric_full<qnum::qint8>().in_work(qnum::dtype::bf16), a);  // the generic loop
    }
  }
  });
}

#if QNUM_HOST_SIMD
TEST_CASE("float code lanes == encode<F>(x, rne, satfinite) on every special and boundary pattern, every target") {
  // The lanes over all 2^32 inputs run in test_codec_exhaustive; here every exponent with the mantissa
  // patterns that decide rounding (0, 1, half-1, half, half+1, lsb-odd ties, all ones), both signs.
  std::vector<float> x;
  for (std::uint32_t e = 0; e < 256; ++e)
    for (std::uint32_t m : {0u, 1u, 0x7FFFFu, 0x80000u, 0x80001u, 0x17FFFFu, 0x180000u, 0x100000u, 0x200000u, 0x1FFFFFu,
                            0x3FFFFFu, 0x400000u, 0x400001u, 0x600000u, 0x7FFFFFu, 0x0FFFFFu, 0x280000u})
      for (std::uint32_t sgn : {0u, 0x80000000u}) x.push_back(bits_to_float(sgn | (e << 23) | m));
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  long bad = 0, runs = 0;
  std::vector<std::uint8_t> a(x.size()), b(x.size()), c(x.size());
  for (qnum::simd_target t : targets()) {
    if (t == qnum::simd_target::none) continue;
    REQUIRE(qnum::set_host_simd_target(t));
    runs += qnum::detail::simd::dispatch([&](auto eng) {
      using E = decltype(eng);
      E::template encode_row<qnum::fp8_e4m3>(x.data(), n, a.data());
      E::template encode_row<qnum::fp8_e5m2>(x.data(), n, b.data());
      E::template encode_row<qnum::fp4_e2m1>(x.data(), n, c.data());
    });
    for (std::size_t i = 0; i < x.size(); ++i) {
      bad += a[i] != qnum::encode<qnum::fp8_e4m3>(x[i], qnum::rne, qnum::satfinite);
      bad += b[i] != qnum::encode<qnum::fp8_e5m2>(x[i], qnum::rne, qnum::satfinite);
      bad += c[i] != qnum::encode<qnum::fp4_e2m1>(x[i], qnum::rne, qnum::satfinite);
    }
  }
  qnum::set_host_simd_target(qnum::detail::simd::best_target());
  CHECK(runs > 0);
  CHECK(bad == 0);
}

// A scale storage's lanes (row(engine, x, n, codes, values)) against encode<F>(x, rne, satfinite) and decode<F> of
// that code, bit for bit, on every target.
template <class F, class Code, class Row>
void scale_lanes_match(const std::vector<float>& x, const char* name, Row row) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<Code> codes(x.size());
  std::vector<float> values(x.size());
  long bad = 0, runs = 0;
  for (qnum::simd_target t : targets()) {
    if (t == qnum::simd_target::none) continue;
    REQUIRE(qnum::set_host_simd_target(t));
    runs += qnum::detail::simd::dispatch([&](auto eng) { row(eng, x.data(), n, codes.data(), values.data()); });
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint32_t c = qnum::encode<F>(x[i], qnum::rne, qnum::satfinite);
      const bool ok = codes[i] == c && float_to_bits(values[i]) == float_to_bits(qnum::decode<F>(c));
      if (!ok && bad++ < 3)
        std::printf("%s lanes (%s): x = %a: code 0x%X value %a, want 0x%X\n", name, qnum::simd_target_name(t),
                    static_cast<double>(x[i]), static_cast<unsigned>(codes[i]), static_cast<double>(values[i]), c);
    }
  }
  qnum::set_host_simd_target(qnum::detail::simd::best_target());
  CHECK(runs > 0);
  CHECK(bad == 0);
}

TEST_CASE("UE4M3 scale lanes == encode<ue4m3>(x, rne, satfinite) and its value, every target") {
  // The batched group parameters store UE4M3 scales (NVFP4) by these lanes; every non-negative input runs through them
  // in test_codec_exhaustive. Here: every exponent with the mantissa patterns that decide rounding to three bits,
  // the subnormal codes' midpoints k * 2^-9 + 2^-10 and one ulp either side, the largest value and beyond, +Inf.
  std::vector<float> x;
  for (std::uint32_t e = 0; e < 256; ++e)
    for (std::uint32_t m : {0u, 1u, 0x7FFFFu, 0x80000u, 0x80001u, 0xFFFFFu, 0x100000u, 0x17FFFFu, 0x180000u, 0x180001u,
                            0x400000u, 0x6FFFFFu, 0x77FFFFu, 0x780000u, 0x780001u, 0x7FFFFFu})
      if (e < 255 || m == 0) x.push_back(bits_to_float((e << 23) | m));
  for (int k = 0; k <= 16; ++k) {
    const float v = std::ldexp(static_cast<float>(2 * k + 1), -10);
    for (float y : {v, std::nextafter(v, 0.0f), std::nextafter(v, 1.0f)}) x.push_back(y);
  }
  for (float y : {448.0f, 464.0f, 480.0f, std::nextafter(464.0f, 0.0f), std::nextafter(464.0f, 1e9f), 3.4e38f, 0.0f})
    x.push_back(y);
  scale_lanes_match<qnum::ue4m3, std::uint8_t>(x, "ue4m3", [](auto eng, const float* xs, std::int64_t n, std::uint8_t* c, float* v) {
    decltype(eng)::ue4m3_row(xs, n, c, v);
  });
}

TEST_CASE("fp16 scale lanes == encode<fp16>(x, rne, satfinite) and its value, every target") {
  // The batched group parameters store fp16 scales by these lanes. Every non-negative finite fp16 value, the midpoint
  // to the next one and one fp32 ulp either side of it (every rounding boundary of the code, every code's value), the
  // midpoint beyond the largest value (65520: satfinite keeps 0x7BFF) and +Inf; rounding to fp16 is monotone, so these
  // decide every input. Infinite and NaN codes never reach the lanes (scales are finite, or +Inf before storage).
  std::vector<float> x;
  for (std::uint32_t c = 0; c <= 0x7BFFu; ++c) {
    const float v = qnum::from_fp16(static_cast<std::uint16_t>(c));
    const float next = c < 0x7BFFu ? qnum::from_fp16(static_cast<std::uint16_t>(c + 1)) : 65536.0f;
    const float mid = v + (next - v) / 2;  // exact: the two differ by a power of two well above fp32's ulp here
    for (float y : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) x.push_back(y);
  }
  for (float y : {65536.0f, 1e9f, 3.4e38f, std::numeric_limits<float>::infinity()}) x.push_back(y);
  scale_lanes_match<qnum::fp16, std::uint16_t>(x, "fp16 scale", [](auto eng, const float* xs, std::int64_t n, std::uint16_t* c, float* v) {
    decltype(eng)::fp16_scale_row(xs, n, c, v);
  });
}

TEST_CASE("dequantize float codes with NaN, Inf, huge, subnormal and zero scales: lanes == definition, every target") {
  // Every code of each format with every kind of stored scale (groups of 256), to bf16 and fp32: the decode lanes.
  each_target([](qnum::simd_target) {
    dequantize_special_scales<qnum::fp8_e4m3, std::uint16_t>(qnum::float_amax<qnum::fp8_e4m3>(), "e4m3", 256);
    dequantize_special_scales<qnum::fp8_e4m3, float>(qnum::float_amax<qnum::fp8_e4m3>(), "e4m3", 256);
    dequantize_special_scales<qnum::fp8_e5m2, std::uint16_t>(qnum::float_amax<qnum::fp8_e5m2>(), "e5m2", 256);
    dequantize_special_scales<qnum::fp8_e5m2, float>(qnum::float_amax<qnum::fp8_e5m2>(), "e5m2", 256);
    dequantize_special_scales<qnum::fp4_e2m1, std::uint16_t>(qnum::float_amax<qnum::fp4_e2m1>(), "e2m1", 256);
    dequantize_special_scales<qnum::fp4_e2m1, float>(qnum::float_amax<qnum::fp4_e2m1>(), "e2m1", 256);
  });
}

// Groups a few vectors across (dequantize's batched scale decoding) under every stored scale code of s's storage
// (all of them for 8- and 16-bit storage; fp32: special bit patterns and a spread of others) and an outer scale,
// to U: every output against params_from_stored and dequantize_value, bit for bit. Two rows of K groups, the
// scale rows strided, K not a multiple of any vector width nor of 64.
template <class F, class U>
void dequantize_stored_scales(const qnum::scheme<F>& s, std::int64_t G, float outer, const char* name) {
  const int bytes = qnum::dtype_bytes(s.store);
  std::vector<std::uint32_t> sc;
  if (bytes < 4) {
    for (std::uint32_t c = 0; c < (1u << (8 * bytes)); ++c) sc.push_back(c);
  } else {
    for (std::uint32_t b : {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0x00000001u, 0x00800000u,
                            0x00000000u, 0x80000000u, 0xBF800000u, 0x3F800000u, 0x0D000000u, 0x72000000u})
      sc.push_back(b);
    std::uint32_t x = 12345;
    for (int i = 0; i < 3000; ++i) sc.push_back(x = x * 1664525u + 1013904223u);
  }
  // Every code in each row: in order in the first, in the second group k takes sc[k * 7919 mod n] (a permutation:
  // n is a power of two or 3013 = 23 * 131), so that a special code's neighbours in a vector of scales are
  // ordinary ones.
  const std::int64_t n = static_cast<std::int64_t>(sc.size()), R = 2, K = n + 37, stride = K + 3, C = K * G;
  auto code_of = [&](std::int64_t t) { return sc[static_cast<std::size_t>((t < K ? t : (t - K) * 7919) % n)]; };
  std::vector<std::uint8_t> scales(static_cast<std::size_t>(R * stride * bytes), 0xA5);
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t k = 0; k < K; ++k) {
      const std::uint32_t code = code_of(r * K + k);
      std::memcpy(&scales[static_cast<std::size_t>((r * stride + k) * bytes)], &code, static_cast<std::size_t>(bytes));  // little-endian: its low bytes
    }
  dequantize_vs_definition<F, U>(
      s, R, C, G, qnum::scale_view{scales.data(), R, K, stride, bytes}, qnum::matrix_view<const std::int32_t>{}, outer,
      [&](std::int64_t r, std::int64_t k) { return code_of(r * K + k); }, [](std::int64_t, std::int64_t) { return 0; }, name);
}

TEST_CASE("dequantize groups of a few vectors with every stored scale code and outer scale: lanes == definition") {
  using qnum::dtype;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  each_target([&](qnum::simd_target) {
    const auto nvfp4 = qnum::float_amax<qnum::fp4_e2m1>().stored_as(dtype::ue4m3);
    for (float outer : {0.0f, 1.0f, 0.3f, 1e-40f, 3e38f, inf, nan, -2.0f}) {
      dequantize_stored_scales<qnum::fp4_e2m1, std::uint16_t>(nvfp4, 16, outer, "e2m1 / ue4m3");
      dequantize_stored_scales<qnum::fp4_e2m1, float>(nvfp4, 32, outer, "e2m1 / ue4m3");
    }
    for (std::int64_t G : {16, 32}) {
      const float outer = G == 16 ? 0.0f : 0.3f;
      dequantize_stored_scales<qnum::fp8_e4m3, std::uint16_t>(qnum::float_amax<qnum::fp8_e4m3>().stored_as(dtype::e8m0), G, outer, "e4m3 / e8m0");
      dequantize_stored_scales<qnum::fp4_e2m1, float>(qnum::float_amax<qnum::fp4_e2m1>().stored_as(dtype::e8m0), G, 3e38f, "e2m1 / e8m0");
      dequantize_stored_scales<qnum::fp8_e5m2, float>(qnum::float_amax<qnum::fp8_e5m2>(), G, outer, "e5m2 / fp32");
      dequantize_stored_scales<qnum::fp8_e4m3, std::uint16_t>(qnum::float_amax<qnum::fp8_e4m3>().stored_as(dtype::bf16), G, outer, "e4m3 / bf16");
      dequantize_stored_scales<qnum::qint8, std::uint16_t>(qnum::symmetric_restricted<qnum::qint8>().stored_as(dtype::fp16), G, outer, "int8 / fp16");
      dequantize_stored_scales<qnum::qint4, float>(qnum::symmetric_full<qnum::qint4>(), G, outer, "int4 / fp32");
      dequantize_stored_scales<qnum::qint8, std::uint16_t>(qnum::symmetric_full<qnum::qint8>().stored_as(dtype::ue4m3), G, 1.0f, "int8 / ue4m3");
    }
  });
}

TEST_CASE("the CPU's best target is the default and a missing one is refused") {
  CHECK(qnum::set_host_simd_target(qnum::detail::simd::best_target()));
  CHECK(qnum::host_simd_target() == qnum::detail::simd::best_target());
#if defined(__x86_64__)
  CHECK_FALSE(qnum::set_host_simd_target(qnum::simd_target::neon));
  CHECK(qnum::host_simd_target() == qnum::detail::simd::best_target());
#endif
  CHECK(qnum::set_host_simd_target(qnum::simd_target::none));
  CHECK(qnum::host_simd_target() == qnum::simd_target::none);
  CHECK(qnum::set_host_simd_target(qnum::detail::simd::best_target()));
}
#endif

// A scheme fixed at compile time gives the bits of the same scheme at run time (quantize, scales, zero
// points, dequantize, fake_quantize), under every target.
template <class H>
void fixed_vs_runtime(const H& fixed, const char* name) {
  using F = typename H::format;
  const qnum::scheme<F> s = fixed.get();
  each_target([&](qnum::simd_target) {
    for (const auto& sh : {shape{37, 128, 128, qnum::group_size(32)}, shape{19, 300, 301, qnum::group_size(128)},
                           shape{45, 61, 64, qnum::per_row()}, shape{70, 130, 131, qnum::block(32, 32)}}) {
      const auto src = hard_data(sh.rows, sh.stride, 99);
      qnum::detail::grid g;
      REQUIRE(qnum::detail::make_grid(sh.rows, sh.cols, sh.groups, g) == qnum::status::ok);
      const int sb = qnum::dtype_bytes(s.store);
      const auto n = static_cast<std::size_t>(sh.rows * sh.stride), ng = static_cast<std::size_t>(g.nr * g.nc);
      std::vector<std::uint8_t> c1(n, 0xAB), c2(n, 0xAB), s1(ng * 4), s2(ng * 4);
      std::vector<std::int32_t> z1(ng), z2(ng);
      std::vector<float> d1(n), d2(n), f1(n), f2(n);
      const auto in = qnum::view<const float>(src.data(), sh.rows, sh.cols, sh.stride);
      const qnum::scale_view v1{s1.data(), g.nr, g.nc, g.nc, sb}, v2{s2.data(), g.nr, g.nc, g.nc, sb};
      REQUIRE(qnum::quantize(fixed, in, sh.groups, qnum::view(c1.data(), sh.rows, sh.cols, sh.stride), v1,
                             qnum::view(z1.data(), g.nr, g.nc)) == qnum::status::ok);
      REQUIRE(qnum::quantize(s, in, sh.groups, qnum::view(c2.data(), sh.rows, sh.cols, sh.stride), v2,
                             qnum::view(z2.data(), g.nr, g.nc)) == qnum::status::ok);
      REQUIRE(qnum::dequantize(fixed, qnum::view<const std::uint8_t>(c1.data(), sh.rows, sh.cols, sh.stride), sh.groups, v1,
                               qnum::view<const std::int32_t>(z1.data(), g.nr, g.nc),
                               qnum::view(d1.data(), sh.rows, sh.cols, sh.stride)) == qnum::status::ok);
      REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(c2.data(), sh.rows, sh.cols, sh.stride), sh.groups, v2,
                               qnum::view<const std::int32_t>(z2.data(), g.nr, g.nc),
                               qnum::view(d2.data(), sh.rows, sh.cols, sh.stride)) == qnum::status::ok);
      REQUIRE(qnum::fake_quantize(fixed, in, sh.groups, qnum::view(f1.data(), sh.rows, sh.cols, sh.stride)) == qnum::status::ok);
      REQUIRE(qnum::fake_quantize(s, in, sh.groups, qnum::view(f2.data(), sh.rows, sh.cols, sh.stride)) == qnum::status::ok);
      long bad = 0;
      for (std::size_t i = 0; i < n; ++i)
        bad += c1[i] != c2[i] || float_to_bits(d1[i]) != float_to_bits(d2[i]) || float_to_bits(f1[i]) != float_to_bits(f2[i]);
      for (std::size_t i = 0; i < ng; ++i) bad += z1[i] != z2[i];
      bad += s1 != s2;
      CHECK_MESSAGE(bad == 0, name);
    }
  });
}

TEST_CASE("fixed_scheme == the same scheme at run time, host entry points") {
  namespace p = qnum::presets;
  fixed_vs_runtime(qnum::fixed_scheme<p::int8_sym>{}, "int8_sym");
  fixed_vs_runtime(qnum::fixed_scheme<p::slime_int4_qat>{}, "slime_int4_qat");
  fixed_vs_runtime(qnum::fixed_scheme<p::ct_w4a16_asym>{}, "ct_w4a16_asym");
  fixed_vs_runtime(qnum::fixed_scheme<p::ct_w4a16_sym_bf16>{}, "ct_w4a16_sym_bf16");
  fixed_vs_runtime(qnum::fixed_scheme<p::deepgemm_fp8>{}, "deepgemm_fp8");
  fixed_vs_runtime(qnum::fixed_scheme<p::mxfp4>{}, "mxfp4");
  fixed_vs_runtime(qnum::fixed_scheme<p::te_fp8_current>{}, "te_fp8_current");
}

// GGUF writers: the lanes against the per-block definitions (gguf_quantize_block_*, ggml's _ref formulas
// written out) on blocks built to hit every branch, under every target.
std::vector<float> gguf_hard_blocks(std::int64_t nblocks, std::uint64_t seed) {
  std::vector<float> x(static_cast<std::size_t>(nblocks * 32));
  for (std::int64_t b = 0; b < nblocks; ++b) {
    const float mag = std::ldexp(1.0f, static_cast<int>(b % 61) - 30);
    const int kind = static_cast<int>(b % 11);
    for (int j = 0; j < 32; ++j) {
      const std::uint64_t i = static_cast<std::uint64_t>(b * 32 + j);
      const std::uint32_t r = qnum::random_bits(seed, 2 * i), t = qnum::random_bits(seed, 2 * i + 1);
      float v = (static_cast<float>(static_cast<std::int32_t>(r)) / 2147483648.0f) * mag;
      switch (kind) {
        case 0: v = 0.0f; break;                                               // all zero
        case 1: v = (t & 1) ? -0.0f : 0.0f; break;                             // signed zeros
        case 2: v = std::fabs(v) * ((t & 3) == 0 ? 0.0f : 1.0f); break;        // min == 0 (Q4_1: ggml's first zero)
        case 3: v = -std::fabs(v) * ((t & 3) == 0 ? (t & 4 ? -0.0f : 0.0f) : 1.0f); break;  // max == 0
        case 4: v = (t & 8 ? mag : -mag) * ((t & 16) ? 1.0f : 0.5f); break;   // ties of |x| = amax, both signs
        case 5: v = static_cast<float>(static_cast<int>(t % 255) - 127) * 0.5f * mag; break;  // halves: roundf ties
        case 6: v = bits_to_float(t & 0x807FFFFFu); break;                     // subnormal: 1/d overflows
        case 7: v = (t & 1 ? 3.0e38f : -3.0e38f) * (t & 2 ? 1.0f : 0.25f); break;  // huge: d overflows fp16
        case 8: {  // Q8_0 with d = 1 (amax 127): x * id = x, with values one ulp either side of k + 0.5
          const float k = static_cast<float>(static_cast<int>(t % 200) - 100) + 0.5f;
          v = j == 0 ? 127.0f : std::nextafter(k, (t & 256) ? 1e9f : -1e9f);
          if ((t & 512) != 0 && j != 0) v = (t & 1024) ? 0.49999997f : -0.49999997f;
          break;
        }
        default: break;
      }
      x[static_cast<std::size_t>(b * 32 + j)] = v;
    }
  }
  return x;
}

// The range check of one-byte codes (layout/pack.hpp's codes_fit: the lanes' byte_range) against a plain loop:
// int8 and uint8 codes in range for `bits` with at most one code outside it, at every position of rows 1 to 200
// long and a few longer ones, one line (contiguous) or strided rows, every target.
TEST_CASE("GGUF Q8_0/Q4_0/Q4_1 writers: lanes == block definitions, every target") {
  const std::int64_t nb = 2000;
  const auto x = gguf_hard_blocks(nb, 5);
  for (qnum::gguf::type t : {qnum::gguf::type::q8_0, qnum::gguf::type::q4_0, qnum::gguf::type::q4_1}) {
    const int bb = qnum::gguf::block_bytes(t);
    std::vector<std::uint8_t> want(static_cast<std::size_t>(nb * bb));
    std::vector<bool> block_overflow(static_cast<std::size_t>(nb));
    for (std::int64_t b = 0; b < nb; ++b) {
      const float* xb = x.data() + b * 32;
      std::uint8_t* ob = want.data() + b * bb;
      block_overflow[static_cast<std::size_t>(b)] = t == qnum::gguf::type::q4_0 ? qnum::gguf::quantize_block_q4_0(xb, ob)
                                                    : t == qnum::gguf::type::q4_1 ? qnum::gguf::quantize_block_q4_1(xb, ob)
                                                                                 : qnum::gguf::quantize_block_q8_0(xb, ob);
    }
    REQUIRE(std::count(block_overflow.begin(), block_overflow.end(), true) > 0);  // the huge blocks
    each_target([&](qnum::simd_target) {
      // One call for every block (longer than the staged rows' 256 blocks), calls of 37 blocks (ending in a
      // partial batch), and rows of one to three batches of every target and either side of 256 blocks.
      for (std::int64_t row : {nb, std::int64_t{37}, std::int64_t{1}, std::int64_t{4}, std::int64_t{5}, std::int64_t{8},
                               std::int64_t{9}, std::int64_t{16}, std::int64_t{17}, std::int64_t{24}, std::int64_t{33},
                               std::int64_t{48}, std::int64_t{49}, std::int64_t{256}, std::int64_t{257}}) {
        std::vector<std::uint8_t> got(want.size(), 0xCD);
        for (std::int64_t b0 = 0; b0 < nb; b0 += row) {
          const std::int64_t n = std::min(row, nb - b0);
          const bool over = std::count(block_overflow.begin() + b0, block_overflow.begin() + b0 + n, true) > 0;
          CHECK(qnum::gguf::quantize(t, qnum::view(x.data() + b0 * 32, n * 32), qnum::view(got.data() + b0 * bb, n * bb)) ==
                (over ? qnum::status::scale_overflow : qnum::status::ok));
        }
        long bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (got[i] != want[i] && bad++ < 3)
            std::printf("gguf type %d row %lld block %zu byte %zu: got 0x%02x want 0x%02x\n", static_cast<int>(t),
                        static_cast<long long>(row), i / static_cast<std::size_t>(bb), i % static_cast<std::size_t>(bb), got[i], want[i]);
        }
        CHECK(bad == 0);
        // A non-finite element in any block of a short call (every batch: the writers compute a batch's statistics
        // one batch ahead of its codes), or the first, a middle or the last block of a long one: non_finite,
        // nothing written.
        std::vector<std::int64_t> ats;
        if (row <= 49)
          for (std::int64_t b = 0; b < row; ++b) ats.push_back(b * 32 + (b * 7) % 32);
        else
          ats = {0, row / 2 * 32 + 17, row * 32 - 7};
        for (float bad_x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()}) {
          for (std::int64_t at : ats) {
            std::vector<float> y(x.begin(), x.begin() + row * 32);
            y[static_cast<std::size_t>(at)] = bad_x;
            std::vector<std::uint8_t> o(static_cast<std::size_t>(row * bb), 0xCD);
            CHECK(qnum::gguf::quantize(t, qnum::view(y.data(), row * 32), qnum::view(o.data(), row * bb)) == qnum::status::non_finite);
            CHECK(std::count(o.begin(), o.end(), 0xCD) == static_cast<std::ptrdiff_t>(o.size()));
          }
        }
      }
    });
  }
}
