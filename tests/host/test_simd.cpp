// tests/host/test_simd.cpp: the SIMD host path of quantize_tensor.hpp gives the bits of the per-element
// definition (accumulate, compute_params, quantize_value, dequantize_value, to_bf16) for every covered case:
// integer and float element formats, every scheme option the lanes take, fp32/bf16 inputs and outputs,
// groups that do and do not fill, strided rows, and inputs built to hit every branch (ties of x / s,
// NaN, +-Inf, +-0, subnormals, huge values, all-zero and all-NaN rows). The reference below is written
// from the public per-element functions only, so it does not share the fast path's loops.
//
// This file: integer formats (every scheme option, presets, ties of x / s, special scales, the batched and
// prefetching paths) and the packers' range check; test_simd_float.cpp: float formats, INT8 gradients, GGUF,
// fixed against run-time schemes. Shared helpers: simd_test_util.hpp.
#include "simd_test_util.hpp"

// One test case a format: meson runs these four as the test test_host_simd_int, beside the rest of the program
// (test_host_simd), two processes on two cores (tests/meson.build): half the program's run time under emulation.
TEST_CASE("host lanes == per-element definition: integer formats (int4) with every scheme option") {
  integer_variants<qnum::qint4>("int4");
}
TEST_CASE("host lanes == per-element definition: integer formats (uint4) with every scheme option") {
  integer_variants<qnum::quint4>("uint4");
}
TEST_CASE("host lanes == per-element definition: integer formats (int8) with every scheme option") {
  integer_variants<qnum::qint8>("int8");
}
TEST_CASE("host lanes == per-element definition: integer formats (uint8) with every scheme option") {
  integer_variants<qnum::quint8>("uint8");
}

TEST_CASE("host lanes == per-element definition: codes at the scale's worst rounding (no clamp in the batched path)") {
  // Groups of 32 whose amax / d rounds (to bf16 or fp32) as far down as it can: amax = d (1 + 2^-8) m 2^e with
  // a bf16 tie that goes to the even value below, so x / s reaches d (1 + 2^-8). Both +amax and -amax occur,
  // next to values a little inside them; the batched path writes these codes without a clamp (host/simd_lanes.inc,
  // clamp_free_ok) and must still agree with the definition. Flat shapes: every target's batch loop.
  const shape sh{48, 128, 128, qnum::group_size(32)};
  std::vector<float> src(static_cast<std::size_t>(sh.rows * sh.stride));
  lcg next{5};
  const float ds[] = {127.0f, 127.5f, 7.0f, 7.5f};
  const float ms[] = {1.0f + 1.0f / 256.0f, 1.015625f + 1.0f / 256.0f, 1.5f + 1.0f / 256.0f, 1.0f + 1.0f / 512.0f, 1.0f};
  for (std::int64_t g = 0; g < sh.rows * sh.cols / 32; ++g) {
    const float amax = std::ldexp(ds[next() % 4] * ms[next() % 5], static_cast<int>(next() % 40) - 20);
    for (int i = 0; i < 32; ++i) {
      float x;
      switch (next() % 4) {
        case 0: x = amax; break;
        case 1: x = -amax; break;
        case 2: x = std::nextafter(-amax, 0.0f) * (1.0f - 0.003f * static_cast<float>(next() % 4)); break;
        default: x = amax * (static_cast<float>(next() % 2001) / 1000.0f - 1.0f); break;
      }
      src[static_cast<std::size_t>(g * 32 + i)] = x;
    }
  }
  using qnum::dtype;
  for (const auto& s : {qnum::presets::int8_sym, qnum::symmetric_full<qnum::qint8>(), qnum::presets::torchao_int8_sym}) {
    for (const auto& v : {s, s.stored_as(dtype::bf16), s.x_multiply(), s.stored_as(dtype::bf16).x_multiply(), s.scale_multiply()}) {
      run_case<qnum::qint8, float, float>(v, sh, src, 0.0f, "int8 worst rounding");
      run_case<qnum::qint8, std::uint16_t, float>(v, sh, src, 0.0f, "int8 worst rounding, bf16 in");
    }
  }
  for (const auto& s : {qnum::symmetric_restricted<qnum::qint4>(), qnum::presets::slime_int4_qat, qnum::symmetric_full<qnum::qint4>()}) {
    for (const auto& v : {s, s.stored_as(dtype::bf16), s.x_multiply(), s.stored_as(dtype::bf16).x_multiply()}) {
      run_case<qnum::qint4, float, float>(v, sh, src, 0.0f, "int4 worst rounding");
      run_case<qnum::qint4, std::uint16_t, std::uint16_t>(v, sh, src, 0.0f, "int4 worst rounding, bf16");
    }
  }
}

// Groups whose elements sit at and next to the ties (k + 1/2) s of x / s, with code scales s from 2^-77 to 2^63:
// the batched path divides by the FMA-corrected quotient (divide_bounded_lanes) where 2^-64 <= s <= 2^64 and by
// the division elsewhere, and both must round every tie to the definition's code (ties to even, x / s exact).
template <class F>
void division_ties(const qnum::scheme<F>& s, const char* name) {
  lcg next{17};
  const std::int64_t rows = 48, cols = 128;
  std::vector<float> src(static_cast<std::size_t>(rows * 160));
  const int qmax = F::qmax;
  for (std::int64_t g = 0; g < rows * 160 / 32; ++g) {
    const float amax = std::ldexp(1.0f + static_cast<float>(next() % 8388608u) / 8388608.0f, static_cast<int>(next() % 141) - 70);
    qnum::group_stats gs;
    qnum::accumulate(gs, amax);
    const float sc = qnum::compute_params(s, gs).code_scale;
    float* x = &src[static_cast<std::size_t>(g * 32)];
    x[0] = next() % 2 ? amax : -amax;
    for (int i = 1; i < 32; ++i) {
      const int k = static_cast<int>(next() % static_cast<std::uint32_t>(2 * qmax)) - qmax;  // k + 1/2 in (-qmax, qmax)
      float t = static_cast<float>((k + 0.5) * static_cast<double>(sc));
      switch (next() % 3) {
        case 0: t = std::nextafter(t, 0.0f); break;
        case 1: t = std::nextafter(t, 2.0f * t); break;
        default: break;
      }
      x[i] = std::fabs(t) <= amax ? t : 0.0f;
    }
  }
  for (const shape& sh : {shape{rows, cols, cols, qnum::group_size(32)}, shape{rows, cols, cols, qnum::group_size(128)},
                          shape{rows, cols, 160, qnum::group_size(32)}, shape{rows, 160, 160, qnum::group_size(64)},
                          shape{rows, cols, 160, qnum::block(8, 32)}}) {
    run_case<F, float, float>(s, sh, src, 0.0f, name);
    run_case<F, std::uint16_t, std::uint16_t>(s, sh, src, 0.0f, name);
  }
}

TEST_CASE("host lanes == per-element definition: ties of x / s across the divisor's range (the batched division)") {
  using qnum::dtype;
  division_ties(qnum::presets::int8_sym, "int8_sym ties");
  division_ties(qnum::presets::int8_sym.stored_as(dtype::bf16), "int8_sym bf16 scale ties");
  division_ties(qnum::symmetric_full<qnum::qint8>(), "int8 full ties");
  division_ties(qnum::presets::slime_int4_qat, "slime int4 ties");
  division_ties(qnum::symmetric_restricted<qnum::qint4>().stored_as(dtype::bf16), "int4 bf16 scale ties");
}

#if QNUM_HOST_SIMD
TEST_CASE("x / s by FMAs: which groups each mode sends there; the mode is set for every later call") {
  using qnum::detail::simd::fma_division;
  using qnum::detail::simd::fma_division_for;
  for (const std::int64_t nv : {1, 2, 3, 4, 8, 64}) {
    CAPTURE(nv);
    for (const bool quantize_put : {false, true})
      for (const bool bf16_in : {false, true}) {
        CHECK_FALSE(fma_division_for(fma_division::never, quantize_put, nv, bf16_in));
        CHECK(fma_division_for(fma_division::large_bf16_groups, quantize_put, nv, bf16_in) == (quantize_put && nv >= 4 && bf16_in));
        CHECK(fma_division_for(fma_division::large_groups, quantize_put, nv, bf16_in) == (quantize_put && nv >= 4));
        CHECK(fma_division_for(fma_division::everywhere, quantize_put, nv, bf16_in));
      }
  }
  const fma_division saved = qnum::detail::simd::fma_division_mode();
  CHECK(saved == qnum::detail::simd::cpu_fma_division());  // every test restores what it changes
  for (const fma_division m : {fma_division::never, fma_division::large_bf16_groups, fma_division::large_groups, fma_division::everywhere}) {
    qnum::detail::simd::set_fma_division(m);
    CHECK(qnum::detail::simd::fma_division_mode() == m);
    CHECK(qnum::detail::simd::fma_division_everywhere() == (m == fma_division::everywhere));
  }
  CHECK(std::string(qnum::detail::simd::fma_division_name(fma_division::never)) == "never");
  CHECK(std::string(qnum::detail::simd::fma_division_name(fma_division::large_bf16_groups)) == "large_bf16_groups");
  CHECK(std::string(qnum::detail::simd::fma_division_name(fma_division::large_groups)) == "large_groups");
  CHECK(std::string(qnum::detail::simd::fma_division_name(fma_division::everywhere)) == "everywhere");
  qnum::detail::simd::set_fma_division(saved);
}
#endif

// Asymmetric groups of 32: all non-positive with -min at the bf16 scale's worst rounding (so that min / s passes
// -(qmax - qmin) and the zero point needs its clamp), all non-negative (zero point qmin), and mixed; the other
// elements at, and one ulp either side of, the ties of x / s and of x / s + z. The batched path (scales and zero
// points in vector registers, per-group zero points in the codes and in fake quantization) against the definition.
template <class F>
void asymmetric_ties(const qnum::scheme<F>& s, const char* name) {
  lcg next{29};
  const std::int64_t rows = 32, cols = 128, groups = rows * cols / 32;
  const float d = static_cast<float>(F::qmax - F::qmin);
  std::vector<float> src(static_cast<std::size_t>(rows * cols));
  for (std::int64_t g = 0; g < groups; ++g) {
    const float m = std::ldexp(d * (1.0f + 1.0f / 256.0f) * (next() % 2 ? 1.0f : 1.5f), static_cast<int>(next() % 60) - 30);
    float lo, hi;
    switch (next() % 3) {
      case 0: lo = -m, hi = next() % 2 ? 0.0f : -m * 0.25f; break;
      case 1: lo = next() % 2 ? 0.0f : m * 0.125f, hi = m; break;
      default: lo = -m * static_cast<float>(next() % 1000) / 1000.0f, hi = m * static_cast<float>(next() % 1000 + 1) / 1000.0f; break;
    }
    qnum::group_stats gs;
    qnum::accumulate(gs, lo);
    qnum::accumulate(gs, hi);
    const qnum::group_params p = qnum::compute_params(s, gs);
    float* x = &src[static_cast<std::size_t>(g * 32)];
    x[0] = lo;
    x[1] = hi;
    for (int i = 2; i < 32; ++i) {
      const int k = static_cast<int>(next() % static_cast<std::uint32_t>(F::qmax - F::qmin + 2)) + F::qmin - 1;
      const double tie = next() % 2 ? k + 0.5 : k + 0.5 - p.zero;  // x / s, or x / s + z, at k + 1/2
      float t = static_cast<float>(tie * static_cast<double>(p.code_scale));
      switch (next() % 3) {
        case 0: t = std::nextafter(t, -3e38f); break;
        case 1: t = std::nextafter(t, 3e38f); break;
        default: break;
      }
      x[i] = t >= lo && t <= hi ? t : lo;
    }
  }
  for (const shape& sh : {shape{rows, cols, cols, qnum::group_size(32)}, shape{rows, 96, cols, qnum::group_size(32)},
                          shape{rows / 2, 2 * cols, 2 * cols, qnum::group_size(128)}}) {
    run_case<F, float, float>(s, sh, src, 0.0f, name);
    run_case<F, std::uint16_t, std::uint16_t>(s, sh, src, 0.0f, name);
  }
}

TEST_CASE("host lanes == per-element definition: asymmetric groups, zero points at their clamps, codes at ties") {
  namespace p = qnum::presets;
  using qnum::dtype;
  for (const auto& s : {p::ct_w4a16_asym, qnum::asymmetric<qnum::qint4>().stored_as(dtype::bf16).eps_zero_to(1e-30f),
                        qnum::asymmetric<qnum::qint4>().x_multiply().stored_as(dtype::bf16)})
    asymmetric_ties(s, "int4 asymmetric ties");
  for (const auto& s : {p::torchao_uint4_asym, qnum::asymmetric<qnum::quint4>().stored_as(dtype::bf16).zero_before_round()})
    asymmetric_ties(s, "uint4 asymmetric ties");
  for (const auto& s : {p::torchao_uint8_asym, qnum::asymmetric<qnum::quint8>().stored_as(dtype::bf16),
                        qnum::asymmetric<qnum::quint8>().stored_as(dtype::bf16).zero_before_round().zero_round_after_subtract()})
    asymmetric_ties(s, "uint8 asymmetric ties");
  asymmetric_ties(qnum::asymmetric<qnum::qint8>().stored_as(dtype::bf16).x_multiply(), "int8 asymmetric ties");
}

TEST_CASE("dequantize with NaN, Inf, huge, subnormal and zero scales: lanes == definition, every target") {
  each_target([](qnum::simd_target) {
    dequantize_special_scales<qnum::qint8, std::uint16_t>(qnum::presets::int8_sym, "int8_sym");
    dequantize_special_scales<qnum::qint8, float>(qnum::presets::int8_sym, "int8_sym");
    dequantize_special_scales<qnum::qint4, std::uint16_t>(qnum::asymmetric<qnum::qint4>(), "int4 asymmetric");
    dequantize_special_scales<qnum::quint8, std::uint16_t>(qnum::asymmetric<qnum::quint8>(), "uint8 asymmetric");
  });
}

TEST_CASE("fake_quantize in place (out is the input's view) == into another buffer, every target") {
  // The batched path reads a batch's maxima one batch ahead of its codes: in place it must still read each
  // element before it is overwritten. Partial overlaps are not supported (docs/policies.md).
  auto check = [](const auto& s, const char* name, const shape& sh, const std::vector<float>& src, auto tag) {
    using T = decltype(tag);
    std::vector<T> base(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) {
      if constexpr (sizeof(T) == 4) base[i] = src[i];
      else base[i] = qnum::to_bf16(src[i]);
    }
    each_target([&](qnum::simd_target) {
      std::vector<T> out(base.size()), io = base;
      const auto in = qnum::view<const T>(base.data(), sh.rows, sh.cols, sh.stride);
      const auto self = qnum::view<T>(io.data(), sh.rows, sh.cols, sh.stride);
      REQUIRE(qnum::fake_quantize(s, in, sh.groups, qnum::view<T>(out.data(), sh.rows, sh.cols, sh.stride)) == qnum::status::ok);
      REQUIRE(qnum::fake_quantize(s, qnum::detail::as_const(self), sh.groups, self) == qnum::status::ok);
      for (std::int64_t r = 0; r < sh.rows; ++r)  // the elements of the view (padding differs: out is zeros)
        CHECK_MESSAGE(std::memcmp(&io[static_cast<std::size_t>(r * sh.stride)], &out[static_cast<std::size_t>(r * sh.stride)],
                                  static_cast<std::size_t>(sh.cols) * sizeof(T)) == 0,
                      name << " row " << r);
    });
  };
  const shape in_place_shapes[] = {{48, 128, 128, qnum::group_size(32)}, {37, 256, 256, qnum::group_size(128)},
                                   {19, 300, 301, qnum::group_size(128)}, {600, 1024, 1024, qnum::group_size(32)},
                                   {29, 33, 40, qnum::per_tensor()}};
  std::uint64_t seed = 71;
  for (const shape& sh : in_place_shapes) {
    const auto src = hard_data(sh.rows, sh.stride, seed++);
    check(qnum::presets::int8_sym, "int8_sym", sh, src, float{});
    check(qnum::presets::slime_int4_qat, "slime_int4_qat", sh, src, std::uint16_t{});
    check(qnum::presets::mxfp4, "mxfp4", sh, src, float{});
  }
}

TEST_CASE("host lanes == per-element definition: an input beyond the caches (the prefetching batches)") {
  // More than 2 MiB of input: the batched paths prefetch ahead (host/simd_lanes.inc).
  const shape sh{520, 1024, 1024, qnum::group_size(128)};
  const auto src = hard_data(sh.rows, sh.stride, 97);
  run_case<qnum::qint8, float, float>(qnum::presets::int8_sym, sh, src, 0.0f, "int8_sym 520x1024");
  run_case<qnum::qint4, float, float>(qnum::presets::slime_int4_qat, sh, src, 0.0f, "slime_int4_qat 520x1024");
  // Groups of two or four vectors (g32): fake quantization's unrolled statistics, read ahead with the prefetch;
  // bf16 in and out needs twice the rows to pass 2 MiB.
  const shape sh32{520, 1024, 1024, qnum::group_size(32)};
  run_case<qnum::qint8, float, float>(qnum::presets::int8_sym, sh32, src, 0.0f, "int8_sym 520x1024 g32");
  const shape sh32b{1100, 1024, 1024, qnum::group_size(32)};
  const auto src_b = hard_data(sh32b.rows, sh32b.stride, 98);
  run_case<qnum::qint4, std::uint16_t, std::uint16_t>(qnum::presets::slime_int4_qat, sh32b, src_b, 0.0f,
                                                       "slime_int4_qat bf16 1100x1024 g32");
  // Float formats: quantize's unrolled statistics read ahead with the prefetch too (groups of one, two or four
  // vectors: NVFP4's 16 on AVX-512, AVX2 and SSE2), with NVFP4's outer scale; MXFP8's E8M0 scales.
  const shape sh16{520, 1024, 1024, qnum::group_size(16)};
  run_case<qnum::fp4_e2m1, float, float>(qnum::presets::nvfp4, sh16, src, qnum::presets::nvfp4_tensor_scale(40.0f),
                                         "nvfp4 520x1024 two-level");
  run_case<qnum::fp8_e4m3, float, std::uint16_t>(qnum::presets::mxfp8, sh32, src, 0.0f, "mxfp8 520x1024");
  // fake_quantize into a 64-byte aligned fp32 output (non-temporal stores) == into an unaligned one (plain
  // stores, checked against the definition above), under every target.
  const std::size_t n = static_cast<std::size_t>(sh.rows * sh.cols);
  struct aligned_free {
    void operator()(float* p) const { std::free(p); }
  };
  const std::unique_ptr<float, aligned_free> a(static_cast<float*>(std::aligned_alloc(64, n * sizeof(float))));
  std::vector<float> b(n + 1);
  float* const u = reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0 ? b.data() + 1 : b.data();  // not 64-aligned
  REQUIRE(a != nullptr);
  each_target([&](qnum::simd_target) {
    const auto in = qnum::view<const float>(src.data(), sh.rows, sh.cols);
    REQUIRE(qnum::fake_quantize(qnum::presets::int8_sym, in, sh.groups, qnum::view(a.get(), sh.rows, sh.cols)) == qnum::status::ok);
    REQUIRE(qnum::fake_quantize(qnum::presets::int8_sym, in, sh.groups, qnum::view(u, sh.rows, sh.cols)) == qnum::status::ok);
    CHECK(std::memcmp(a.get(), u, n * sizeof(float)) == 0);
  });
}

TEST_CASE("host lanes == per-element definition: 2D blocks in runs of a block row, with blocks sent one at a time between") {
  // The banded path reads up to 64 blocks of a block row at a time (a run) and takes `lanes` of them at once
  // (a chunk); a chunk with a NaN, an Inf or parameters the lanes do not cover goes one block at a time, and the
  // run's codes pass steps over it. Finite data with such blocks planted between finite chunks of one run, rows
  // of 70 blocks (a run of 64 and one of 6) and of 17, a partial last band, a stride past the row.
  struct planted {
    std::int64_t r, c;
    float x;
  };
  const struct {
    shape sh;
    std::vector<planted> bad;
  } cases[] = {
      {{20, 1120, 1130, qnum::block(8, 16)},
       {{3, 9 * 16 + 5, std::numeric_limits<float>::quiet_NaN()},        // band 0, chunk 1 (8 lanes) or 0 (16)
        {4, 40 * 16, -std::numeric_limits<float>::infinity()},         // band 0, chunk 5 or 2
        {9, 66 * 16 + 15, std::numeric_limits<float>::infinity()},     // band 1, the second run
        {17, 3 * 16 + 1, 3.0e38f}}},                                   // band 2 (4 rows): huge, still finite
      {{12, 1088, 1088, qnum::block(8, 64)}, {{0, 8 * 64, std::numeric_limits<float>::quiet_NaN()}, {10, 16 * 64 + 63, -3.0e38f}}},
  };
  std::uint64_t seed = 301;
  for (const auto& cs : cases) {
    const shape& sh = cs.sh;
    std::vector<float> src(static_cast<std::size_t>(sh.rows * sh.stride));
    for (std::int64_t r = 0; r < sh.rows; ++r)
      for (std::int64_t c = 0; c < sh.stride; ++c) {
        const std::uint64_t i = static_cast<std::uint64_t>(r * sh.stride + c);
        const std::uint32_t a = qnum::random_bits(seed, i);
        // each block its own magnitude, so that a scale applied to the wrong block shows
        const int e = static_cast<int>((r / 8 * 7 + c / 16 * 3) % 23) - 11;
        src[i] = std::ldexp(static_cast<float>(static_cast<std::int32_t>(a)) / 2147483648.0f, e);
      }
    ++seed;
    for (const planted& p : cs.bad) src[static_cast<std::size_t>(p.r * sh.stride + p.c)] = p.x;
    run_case<qnum::qint8, float, float>(qnum::presets::int8_sym, sh, src, 0.0f, "int8_sym runs of blocks");
    run_case<qnum::quint4, std::uint16_t, float>(qnum::presets::torchao_uint4_asym, sh, src, 0.0f, "uint4 asym runs of blocks");
    run_case<qnum::fp8_e4m3, float, std::uint16_t>(qnum::presets::deepgemm_fp8, sh, src, 0.0f, "deepgemm_fp8 runs of blocks");
    run_case<qnum::fp8_e4m3, std::uint16_t, std::uint16_t>(qnum::presets::deepgemm_fp8_ue8m0, sh, src, 0.0f,
                                                           "deepgemm_fp8_ue8m0 runs of blocks");
  }
}

TEST_CASE("host lanes == per-element definition: integer presets") {
  namespace p = qnum::presets;
  run_all(p::slime_int4_qat, "slime_int4_qat");
  run_all(p::slime_int4_checkpoint, "slime_int4_checkpoint");
  run_all(p::ct_w4a16_sym, "ct_w4a16_sym");
  run_all(p::ct_w4a16_sym_bf16, "ct_w4a16_sym_bf16");
  run_all(p::ct_w4a16_asym, "ct_w4a16_asym");
  run_all(p::torchao_int4_sym, "torchao_int4_sym");
  run_all(p::torchao_int8_sym, "torchao_int8_sym");
  run_all(p::torchao_uint4_asym, "torchao_uint4_asym");
  run_all(p::torchao_uint8_asym, "torchao_uint8_asym");
}

TEST_CASE("range check of one-byte codes (packers): lanes == plain loop, every target") {
  auto run = [](auto tag) {
    using E = decltype(tag);
    constexpr bool sgn = std::is_signed<E>::value;
    std::mt19937 rng(sgn ? 31 : 32);
    long bad = 0, cases = 0;
    for (int bits : {1, 2, 4, 7, 8}) {
      const int lo = sgn ? -(1 << (bits - 1)) : 0, hi = sgn ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
      for (std::int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 1030}) {
        for (std::int64_t rows : {1, 3}) {
          const std::int64_t stride = rows == 1 ? n : n + 5;
          std::vector<E> c(static_cast<std::size_t>(rows * stride), E{});
          for (auto& v : c) v = static_cast<E>(lo + static_cast<int>(static_cast<std::uint32_t>(rng()) % static_cast<std::uint32_t>(hi - lo + 1)));
          for (std::int64_t at = -1; at < rows * n; at += (n > 200 ? 37 : 1)) {
            const std::size_t k = at < 0 ? 0 : static_cast<std::size_t>((at / n) * stride + at % n);
            const E saved = c[k];
            int out_of_range = 0;
            if (at >= 0) {  // one code just outside the range, or far outside it, alternately; or none when bits is 8
              const int v = (at % 2) ? (sgn ? hi + 1 + static_cast<int>(static_cast<std::uint32_t>(rng()) % 64) : hi + 1) : (sgn ? lo - 1 : hi + 1 + static_cast<int>(static_cast<std::uint32_t>(rng()) % 200));
              if (v < std::numeric_limits<E>::min() || v > std::numeric_limits<E>::max()) continue;
              c[k] = static_cast<E>(v);
              out_of_range = 1;
            }
            const auto view = qnum::view<const E>(c.data(), rows, n, stride);
            const bool got = qnum::detail::codes_fit(view, bits, sgn);
            bad += got != (out_of_range == 0);
            ++cases;
            c[k] = saved;
          }
        }
      }
    }
    CHECK(bad == 0);
    CHECK(cases > 10000);
  };
  each_target([&](qnum::simd_target) {
    run(std::int8_t{});
    run(std::uint8_t{});
  });
}
