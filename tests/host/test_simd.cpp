// tests/host/test_simd.cpp: the SIMD host path of quantize_tensor.hpp gives the bits of the per-element
// definition (accumulate, compute_params, quantize_value, dequantize_value, to_bf16) for every covered case:
// integer and float element formats, every scheme option the lanes take, fp32/bf16 inputs and outputs,
// groups that do and do not fill, strided rows, and inputs built to hit every branch (ties of x / s,
// NaN, +-Inf, +-0, subnormals, huge values, all-zero and all-NaN rows). The reference below is written
// from the public per-element functions only, so it does not share the fast path's loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "qnum/train/dynamic_scale.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/static_scheme.hpp"
#include "test_util.hpp"

// test_host_simd_avx2 is this file built with -mavx2 -mfma -ffp-contract=fast: the caller's code may then
// contract products into FMAs, and the register barriers must keep every lane product unfused. It exits 77
// (skip) on a CPU without AVX2/FMA.
#include "avx2_guard.hpp"

namespace {

using qnum::detail::bits_to_float;
using qnum::detail::float_to_bits;

// Values that reach every branch of the lanes. Row r has its own magnitude 2^(r % 41 - 20); rows with
// r % 13 == 5 are all zero, r % 17 == 7 all NaN, r % 19 == 3 all -0.0, r % 23 == 11 below 2^-141 (scales that
// round to 0 in bf16), r % 29 == 13 below 2^-127.
std::vector<float> hard_data(std::int64_t rows, std::int64_t stride, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(rows * stride));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float mag = std::ldexp(1.0f, static_cast<int>(r % 41) - 20);
    for (std::int64_t c = 0; c < stride; ++c) {
      const std::uint64_t i = static_cast<std::uint64_t>(r * stride + c);
      const std::uint32_t a = qnum::random_bits(seed, 2 * i), b = qnum::random_bits(seed, 2 * i + 1);
      float x = (static_cast<float>(static_cast<std::int32_t>(a)) / 2147483648.0f) * 8.0f * mag;
      switch (b % 32) {
        case 0: x = 0.0f; break;
        case 1: x = -0.0f; break;
        case 2: x = bits_to_float(b & 0x807FFFFFu); break;                              // subnormal
        case 3: x = bits_to_float(0x7FC00000u | (b & 0x80000000u)); break;               // NaN
        case 4: x = bits_to_float(0x7F800000u | (b & 0x80000000u)); break;               // +-Inf
        case 5: x = (b & 64 ? 3.0e38f : 1.0e30f) * (b & 128 ? -1.0f : 1.0f); break;      // huge
        case 6: case 7: case 8: case 9:                                                  // ties of x / s
          x = (static_cast<float>(static_cast<int>(b >> 8) % 31 - 15) + 0.5f) * mag; break;
        case 10: x = 7.0f * mag * (b & 256 ? -1.0f : 1.0f); break;                        // amax = 7 * 2^k
        default: break;
      }
      if (r % 23 == 11) x = bits_to_float(b & 0x800000FFu);  // tiny subnormals: a bf16 scale rounds to 0
      if (r % 29 == 13) x = bits_to_float(b & 0x803FFFFFu);  // below 2^-127: bf16 subnormal scales
      if (r % 13 == 5) x = 0.0f;
      if (r % 17 == 7) x = bits_to_float(0x7FC00000u);
      if (r % 19 == 3) x = -0.0f;
      v[static_cast<std::size_t>(r * stride + c)] = x;
    }
  }
  return v;
}

// Every instruction set this CPU has, and none (the generic loops): the entry points must give the same
// bits under each. fn(target) runs with that target selected; the previous selection is restored.
std::vector<qnum::simd_target> targets() {
  const qnum::simd_target saved = qnum::host_simd_target();
  std::vector<qnum::simd_target> v{qnum::simd_target::none};
  for (auto t : {qnum::simd_target::sse2, qnum::simd_target::avx2, qnum::simd_target::avx512, qnum::simd_target::neon})
    if (qnum::set_host_simd_target(t)) v.push_back(t);
  qnum::set_host_simd_target(saved);
  return v;
}
// AVX-512 runs twice where the CPU has AVX512-BF16: with its bf16 conversion (the default there), then with
// the lanes' integer rounding.
template <class Fn>
void each_target(Fn&& fn) {
  const qnum::simd_target saved = qnum::host_simd_target();
#if QNUM_HOST_SIMD
  const bool convert = qnum::detail::simd::bf16_convert();
#endif
  for (qnum::simd_target t : targets()) {
    REQUIRE(qnum::set_host_simd_target(t));
    for (int pass = 0; pass < 2; ++pass) {
      std::string target_name = qnum::simd_target_name(t);
#if QNUM_HOST_SIMD
      if (t == qnum::simd_target::avx512 && qnum::detail::simd::cpu_has_bf16_convert()) {
        REQUIRE(qnum::detail::simd::set_bf16_convert(pass == 0));
        target_name += pass == 0 ? " (bf16 conversion)" : " (integer bf16 rounding)";
      } else if (pass == 1) {
        break;
      }
#else
      if (pass == 1) break;
#endif
      CAPTURE(target_name);
      fn(t);
    }
  }
#if QNUM_HOST_SIMD
  REQUIRE(qnum::detail::simd::set_bf16_convert(convert));
#endif
  REQUIRE(qnum::set_host_simd_target(saved));
}

struct shape {
  std::int64_t rows, cols, stride;
  qnum::group_shape groups;
};

float ld(const float* p) { return *p; }
float ld(const std::uint16_t* p) { return qnum::from_bf16(*p); }
std::uint32_t out_bits(float v) { return float_to_bits(v); }
std::uint32_t out_bits(std::uint16_t v) { return v; }
template <class U> U to_out(float v);
template <> float to_out<float>(float v) { return v; }
template <> std::uint16_t to_out<std::uint16_t>(float v) { return qnum::to_bf16(v); }

template <class F, class T, class U>
void run_case_one(const qnum::scheme<F>& s, const shape& sh, const std::vector<float>& src, float outer, const char* name) {
  const std::int64_t R = sh.rows, C = sh.cols, S = sh.stride;
  std::vector<T> in(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if constexpr (sizeof(T) == 4) in[i] = src[i];
    else in[i] = qnum::to_bf16(src[i]);
  }
  qnum::detail::grid g;
  REQUIRE(qnum::detail::make_grid(R, C, sh.groups, g) == qnum::status::ok);
  const int sb = qnum::dtype_bytes(s.store);
  // Scale rows padded by one element when R is odd (the batched path's scale stores, contiguous or not).
  const std::int64_t ss = g.nc + (R % 2);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(R * S), 0xAB), scales(static_cast<std::size_t>(g.nr * ss * 4));
  std::vector<std::int32_t> zeros(static_cast<std::size_t>(g.nr * g.nc));
  std::vector<U> deq(static_cast<std::size_t>(R * S)), fq(static_cast<std::size_t>(R * S));
  const qnum::scale_view sv{scales.data(), g.nr, g.nc, ss, sb};
  const auto zv = qnum::view(zeros.data(), g.nr, g.nc);
  const auto inv = qnum::view<const T>(in.data(), R, C, S);
  REQUIRE(qnum::quantize(s, inv, sh.groups, qnum::view(codes.data(), R, C, S), sv, zv, qnum::nearest_even(), outer) == qnum::status::ok);
  REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C, S), sh.groups, sv,
                           qnum::view<const std::int32_t>(zeros.data(), g.nr, g.nc), qnum::view(deq.data(), R, C, S), outer) == qnum::status::ok);
  REQUIRE(qnum::fake_quantize(s, inv, sh.groups, qnum::view(fq.data(), R, C, S), qnum::nearest_even(), outer) == qnum::status::ok);

  long bad = 0;
  auto report = [&](const char* what, std::int64_t r, std::int64_t c, std::uint32_t got, std::uint32_t want) {
    if (bad++ < 3)
      std::printf("%s [kind %d in=%s out=%s %lldx%lld/%lld]: %s at (%lld,%lld): got 0x%X want 0x%X\n", name, static_cast<int>(s.kind),
                  sizeof(T) == 4 ? "fp32" : "bf16", sizeof(U) == 4 ? "fp32" : "bf16", (long long)R, (long long)C, (long long)S,
                  what, (long long)r, (long long)c, got, want);
  };
  for (std::int64_t bi = 0; bi < g.nr; ++bi)
    for (std::int64_t bj = 0; bj < g.nc; ++bj) {
      const std::int64_t r0 = bi * g.gr, r1 = r0 + g.gr < R ? r0 + g.gr : R;
      const std::int64_t c0 = bj * g.gc, c1 = c0 + g.gc < C ? c0 + g.gc : C;
      qnum::group_stats st;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) qnum::accumulate(st, ld(&in[static_cast<std::size_t>(r * S + c)]));
      const qnum::group_params p = qnum::compute_params(s, st, outer);
      const std::uint32_t got_scale = qnum::detail::read_scale(sv, bi, bj);
      if (got_scale != p.scale_code) report("scale", bi, bj, got_scale, p.scale_code);
      if (s.kind == qnum::scheme_kind::asymmetric && zeros[static_cast<std::size_t>(bi * g.nc + bj)] != p.zero)
        report("zero", bi, bj, static_cast<std::uint32_t>(zeros[static_cast<std::size_t>(bi * g.nc + bj)]), static_cast<std::uint32_t>(p.zero));
      const qnum::group_params pd = qnum::detail::params_from_stored(s, p.scale_code, p.zero, outer);
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
          const std::size_t k = static_cast<std::size_t>(r * S + c);
          const float x = ld(&in[k]);
          const std::uint32_t code = qnum::quantize_value(s, p, x, qnum::rne);
          if (codes[k] != code) report("code", r, c, codes[k], code);
          const std::uint32_t dq = out_bits(to_out<U>(qnum::dequantize_value(s, pd, code)));
          if (out_bits(deq[k]) != dq) report("dequantize", r, c, out_bits(deq[k]), dq);
          const std::uint32_t f = out_bits(to_out<U>(qnum::fake_quant_value(s, p, x, qnum::rne)));
          if (out_bits(fq[k]) != f) report("fake_quantize", r, c, out_bits(fq[k]), f);
        }
      for (std::int64_t r = r0; r < r1; ++r)  // padding between rows untouched
        for (std::int64_t c = C; c < S; ++c)
          if (codes[static_cast<std::size_t>(r * S + c)] != 0xAB) report("stride padding", r, c, codes[static_cast<std::size_t>(r * S + c)], 0xAB);
    }
  CHECK_MESSAGE(bad == 0, name << " target " << qnum::simd_target_name(qnum::host_simd_target()));
}
template <class F, class T, class U>
void run_case(const qnum::scheme<F>& s, const shape& sh, const std::vector<float>& src, float outer, const char* name) {
  each_target([&](qnum::simd_target) { run_case_one<F, T, U>(s, sh, src, outer, name); });
}

const shape shapes[] = {
    {37, 128, 128, qnum::group_size(32)},  {41, 100, 100, qnum::group_size(32)}, {23, 77, 96, qnum::group_size(16)},
    {19, 300, 301, qnum::group_size(128)}, {45, 61, 64, qnum::per_row()},        {29, 33, 40, qnum::per_tensor()},
    {70, 130, 131, qnum::block(32, 32)},   {9, 5, 7, qnum::group_size(3)},        {3, 1, 1, qnum::group_size(32)},
    // whole rows of groups of 3 or 5 vectors of 16 lanes (6 or 10 of 8, 12 or 20 of 4): every pack width
    {11, 96, 100, qnum::group_size(48)},   {13, 240, 240, qnum::group_size(80)},
};

template <class F>
void run_all(const qnum::scheme<F>& s, const char* name, bool two_level = false) {
  std::uint64_t seed = 11;
  for (const shape& sh : shapes) {
    auto src = hard_data(sh.rows, sh.stride, seed++);
    if (seed % 2 == 0)  // every other shape finite: a NaN or Inf sends a whole batch of groups to the per-group path
      for (float& x : src)
        if (!std::isfinite(x) || std::fabs(x) > 1e20f) x = 1.5f;
    float outer = 0.0f;
    if (two_level) {
      float amax = 0.0f;
      REQUIRE(qnum::tensor_amax(qnum::view<const float>(src.data(), sh.rows, sh.cols, sh.stride), amax) == qnum::status::ok);
      outer = qnum::presets::nvfp4_tensor_scale(amax);
      if (!(outer > 0.0f)) outer = 1.0f;
    }
    run_case<F, float, float>(s, sh, src, outer, name);
    run_case<F, float, std::uint16_t>(s, sh, src, outer, name);
    run_case<F, std::uint16_t, float>(s, sh, src, outer, name);
    run_case<F, std::uint16_t, std::uint16_t>(s, sh, src, outer, name);
  }
}

template <class F>
void integer_variants(const char* fname) {
  using qnum::dtype;
  std::vector<qnum::scheme<F>> v;
  if constexpr (F::is_signed) v.push_back(qnum::symmetric_restricted<F>());
  v.push_back(qnum::symmetric_full<F>());
  v.push_back(qnum::asymmetric<F>());
  const std::size_t base = v.size();
  for (std::size_t i = 0; i < base; ++i) {
    v.push_back(v[i].x_multiply());
    v.push_back(v[i].scale_multiply().eps_floor(1e-5f));
    v.push_back(v[i].stored_as(dtype::bf16).eps_zero_to(0.0078125f));
    v.push_back(v[i].stored_as(dtype::fp16).codes_from_fp32_scale());
    v.push_back(v[i].stored_as(dtype::e8m0).with_pow2(qnum::pow2_rule::ceil_pow2));
    v.push_back(v[i].zero_before_round().x_multiply());
    v.push_back(v[i].zero_before_round().zero_round_after_subtract());
    v.push_back(v[i].stored_as(dtype::ue4m3));
    v.push_back(v[i].in_work(qnum::dtype::bf16));  // generic path: checks the dispatch leaves it there
  }
  for (const auto& s : v) run_all(s, fname);
}

}  // namespace

TEST_CASE("host lanes == per-element definition: integer formats, every scheme option") {
  integer_variants<qnum::qint4>("int4");
  integer_variants<qnum::quint4>("uint4");
  integer_variants<qnum::qint8>("int8");
  integer_variants<qnum::quint8>("uint8");
}

TEST_CASE("host lanes == per-element definition: codes at the scale's worst rounding (no clamp in the batched path)") {
  // Groups of 32 whose amax / d rounds (to bf16 or fp32) as far down as it can: amax = d (1 + 2^-8) m 2^e with
  // a bf16 tie that goes to the even value below, so x / s reaches d (1 + 2^-8). Both +amax and -amax occur,
  // next to values a little inside them; the batched path writes these codes without a clamp (host/simd_lanes.inc,
  // clamp_free_ok) and must still agree with the definition. Flat shapes: every target's batch loop.
  const shape sh{48, 128, 128, qnum::group_size(32)};
  std::vector<float> src(static_cast<std::size_t>(sh.rows * sh.stride));
  std::uint64_t st = 5;
  auto next = [&st] {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(st >> 33);
  };
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
  std::uint64_t st = 17;
  auto next = [&st] {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(st >> 33);
  };
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
                          shape{rows, cols, 160, qnum::group_size(32)}, shape{rows, 160, 160, qnum::group_size(64)}}) {
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

// Stored scales of every kind (NaN with payloads and either sign, +-Inf, the largest finite, subnormal, +-0,
// ordinary) times every code: the lanes take the finite scales without the NaN rule and must still give the
// definition's bits, and the non-finite ones with it.
template <class F, class U>
void dequantize_special_scales(const qnum::scheme<F>& s, const char* name) {
  const std::uint32_t scale_bits[] = {0x7FC00000u, 0x7FC00001u, 0xFFC00000u, 0x7FA00000u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu,
                                      0x00000001u, 0x00000000u, 0x80000000u, 0x3C010204u, 0xBF800000u};
  const std::int64_t G = 40, groups = sizeof scale_bits / sizeof scale_bits[0], R = 3, C = G * groups;  // 40: pairs and a tail
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(R * C));
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>((i * 37 + i / 256) & ((1u << F::bits) - 1u));
  std::vector<float> scales(static_cast<std::size_t>(R * groups));
  std::vector<std::int32_t> zeros(scales.size());
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t k = 0; k < groups; ++k) {
      scales[static_cast<std::size_t>(r * groups + k)] = bits_to_float(scale_bits[(k + r) % groups]);
      zeros[static_cast<std::size_t>(r * groups + k)] = s.kind == qnum::scheme_kind::asymmetric ? static_cast<std::int32_t>((k * 5 + r) % (1 << F::bits)) + F::qmin : 0;
    }
  std::vector<U> out(codes.size());
  REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C), qnum::group_size(G),
                           qnum::scale_view{scales.data(), R, groups, groups, 4}, qnum::view<const std::int32_t>(zeros.data(), R, groups),
                           qnum::view(out.data(), R, C)) == qnum::status::ok);
  long bad = 0;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      const std::size_t k = static_cast<std::size_t>(r * groups + c / G), i = static_cast<std::size_t>(r * C + c);
      const qnum::group_params pd = qnum::detail::params_from_stored(s, float_to_bits(scales[k]), zeros[k], 0.0f);
      const std::uint32_t want = out_bits(to_out<U>(qnum::dequantize_value(s, pd, codes[i])));
      if (out_bits(out[i]) != want && bad++ < 3)
        std::printf("%s out=%s scale 0x%08X code %u: got 0x%X want 0x%X\n", name, sizeof(U) == 4 ? "fp32" : "bf16",
                    float_to_bits(scales[k]), codes[i], out_bits(out[i]), want);
    }
  CHECK_MESSAGE(bad == 0, name);
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

TEST_CASE("host lanes == per-element definition: presets") {
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

template <class Residual>
void grad_case(std::size_t n, std::size_t gs, qnum::scale_timing timing, std::uint64_t seed, bool overflow = false,
               float magnify = 1.0f) {
  // overflow: residuals 0 and step 0 finite and small, later steps with +-3.4e38 in places (finite in fp32, beyond bf16's
  // largest): under a delayed scale those clamp, and their residuals round past bf16's range (satfinite).
  // magnify: the same finite data times magnify (1.25e37: |g| up to 1e38, scales past 2^126, where the lanes
  // store bf16 residuals by the full rule), with +-3.4e38 in places.
  // Three steps of quantize_gradient_int8 (lanes where the build has them) against the per-element
  // quantize_grad_element loop written out here: codes, residual bits, states, status.
  qnum::dynamic_scale_config cfg;
  cfg.timing = timing;
  cfg.on_nonfinite = qnum::nonfinite_policy::zero_elements;
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
    bool zeroed = false;
    for (std::size_t k = 0; k < groups; ++k) {
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
    const qnum::status want = zeroed ? qnum::status::ok_zeroed_nonfinite : qnum::status::ok;
    bad += got != want;
    for (std::size_t i = 0; i < n; ++i) {
      bad += codes[i] != ref_codes[i];
      bad += qtest::bits(qnum::load_residual(res.data(), i)) != qtest::bits(qnum::load_residual(ref_res.data(), i));
    }
    for (std::size_t k = 0; k < groups; ++k)
      bad += qtest::bits(st[k].scale) != qtest::bits(ref_st[k].scale) || qtest::bits(st[k].amax) != qtest::bits(ref_st[k].amax);
  }
  CHECK_MESSAGE(bad == 0, "n=" << n << " gs=" << gs);
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
      // One call for every block (longer than the lanes' one-pass chunk of 1024 blocks), and calls of 37 blocks
      // (one chunk each, ending in a partial batch).
      for (std::int64_t row : {nb, std::int64_t{37}}) {
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
        // A non-finite element in the first, a middle or the last block of a call: non_finite, nothing written.
        for (float bad_x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()}) {
          for (std::int64_t at : {std::int64_t{0}, row / 2 * 32 + 17, row * 32 - 7}) {
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
