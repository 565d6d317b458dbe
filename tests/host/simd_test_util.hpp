// tests/host/simd_test_util.hpp: the shared part of the host SIMD tests (test_simd.cpp, test_simd_float.cpp):
// adversarial inputs, the list of targets this CPU and build have, and the comparison of the entry points
// (quantize, dequantize, fake_quantize) with the per-element definition (accumulate, compute_params,
// quantize_value, dequantize_value, to_bf16) under every target. The reference is written from the public
// per-element functions only, so it does not share the fast path's loops. Two translation units, so that the
// program's lanes compile on both cores; integer formats in one, float formats in the other.
#pragma once

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

// The tests' own pseudo-random numbers (a 64-bit LCG's high bits): next() is the next 31-bit value.
struct lcg {
  std::uint64_t st;
  std::uint32_t operator()() {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(st >> 33);
  }
};

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
// AVX-512 runs twice: first with AVX512-BF16's conversion (where the CPU has it) and x / s by the reciprocal and
// FMAs in every group (simd::fma_division::everywhere), then with the lanes' integer bf16 rounding and x / s by the
// division in every group (never); whatever the CPU chose by default, both ways run (its large_groups mode picks
// one of these two per call).
template <class Fn>
void each_target(Fn&& fn) {
  const qnum::simd_target saved = qnum::host_simd_target();
#if QNUM_HOST_SIMD
  const bool convert = qnum::detail::simd::bf16_convert();
  const qnum::detail::simd::fma_division fma_division = qnum::detail::simd::fma_division_mode();
#endif
  for (qnum::simd_target t : targets()) {
    REQUIRE(qnum::set_host_simd_target(t));
    for (int pass = 0; pass < 2; ++pass) {
      std::string target_name = qnum::simd_target_name(t);
#if QNUM_HOST_SIMD
      if (t == qnum::simd_target::avx512) {
        const bool has_convert = qnum::detail::simd::cpu_has_bf16_convert();
        REQUIRE(qnum::detail::simd::set_bf16_convert(has_convert && pass == 0));
        qnum::detail::simd::set_fma_division(pass == 0 ? qnum::detail::simd::fma_division::everywhere
                                                       : qnum::detail::simd::fma_division::never);
        target_name += pass == 0 ? (has_convert ? " (bf16 conversion, FMA division)" : " (FMA division)")
                                 : " (integer bf16 rounding, division)";
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
  qnum::detail::simd::set_fma_division(fma_division);
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

// The per-element definition's bits for one case (s, shape, input, outer), computed once: every target's output
// is compared with them (the reference's scalar loops cost more than the lanes, several times over under emulation
// and sanitizers, and they do not depend on the target).
// Rows [r0, r1) and columns [c0, c1) of group (bi, bj), the last groups clipped: the tests' own geometry, not the
// library's (the reference shares no code with the fast path but the per-element functions).
struct group_bounds {
  std::int64_t r0, r1, c0, c1;
};
group_bounds bounds_of(const qnum::detail::grid& g, std::int64_t R, std::int64_t C, std::int64_t bi, std::int64_t bj) {
  const std::int64_t r0 = bi * g.gr, c0 = bj * g.gc;
  return {r0, r0 + g.gr < R ? r0 + g.gr : R, c0, c0 + g.gc < C ? c0 + g.gc : C};
}
struct case_reference {
  qnum::detail::grid g;
  std::vector<std::uint32_t> scale, zero;    // group (bi, bj) at bi * g.nc + bj
  std::vector<std::uint32_t> code, deq, fq;  // element (r, c) at r * stride + c (inside the rows' columns)
};
template <class F, class T, class U>
case_reference definition_bits(const qnum::scheme<F>& s, const shape& sh, const std::vector<T>& in, float outer) {
  const std::int64_t R = sh.rows, C = sh.cols, S = sh.stride;
  case_reference ref;
  REQUIRE(qnum::detail::make_grid(R, C, sh.groups, ref.g) == qnum::status::ok);
  const qnum::detail::grid& g = ref.g;
  ref.scale.resize(static_cast<std::size_t>(g.nr * g.nc));
  ref.zero.resize(ref.scale.size());
  ref.code.resize(static_cast<std::size_t>(R * S));
  ref.deq.resize(ref.code.size());
  ref.fq.resize(ref.code.size());
  for (std::int64_t bi = 0; bi < g.nr; ++bi)
    for (std::int64_t bj = 0; bj < g.nc; ++bj) {
      const auto [r0, r1, c0, c1] = bounds_of(g, R, C, bi, bj);
      qnum::group_stats st;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) qnum::accumulate(st, ld(&in[static_cast<std::size_t>(r * S + c)]));
      const qnum::group_params p = qnum::compute_params(s, st, outer);
      ref.scale[static_cast<std::size_t>(bi * g.nc + bj)] = p.scale_code;
      ref.zero[static_cast<std::size_t>(bi * g.nc + bj)] = static_cast<std::uint32_t>(p.zero);
      const qnum::group_params pd = qnum::detail::params_from_stored(s, p.scale_code, p.zero, outer);
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
          const std::size_t k = static_cast<std::size_t>(r * S + c);
          const float x = ld(&in[k]);
          const std::uint32_t code = qnum::quantize_value(s, p, x, qnum::rne);
          ref.code[k] = code;
          ref.deq[k] = out_bits(to_out<U>(qnum::dequantize_value(s, pd, code)));
          ref.fq[k] = out_bits(to_out<U>(qnum::fake_quant_value(s, p, x, qnum::rne)));
        }
    }
  return ref;
}
// quantize, dequantize and fake_quantize of `in` under the target selected now, against ref bit for bit.
template <class F, class T, class U>
void run_case_one(const qnum::scheme<F>& s, const shape& sh, const std::vector<T>& in, const case_reference& ref, float outer,
                  const char* name) {
  const std::int64_t R = sh.rows, C = sh.cols, S = sh.stride;
  const qnum::detail::grid& g = ref.g;
  const int sb = qnum::dtype_bytes(s.store);
  // Scale rows padded by one element when R is odd (the batched path's scale stores, contiguous or not).
  const std::int64_t ss = g.nc + (R % 2);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(R * S), 0xAB), scales(static_cast<std::size_t>(g.nr * ss * sb + 64), 0xCD);
  std::vector<std::int32_t> zeros(static_cast<std::size_t>(g.nr * ss + 16), -77);  // rows padded as the scales'
  std::vector<U> deq(static_cast<std::size_t>(R * S)), fq(static_cast<std::size_t>(R * S));
  const qnum::scale_view sv{scales.data(), g.nr, g.nc, ss, sb};
  const auto zv = qnum::view(zeros.data(), g.nr, g.nc, ss);
  const auto inv = qnum::view<const T>(in.data(), R, C, S);
  REQUIRE(qnum::quantize(s, inv, sh.groups, qnum::view(codes.data(), R, C, S), sv, zv, qnum::nearest_even(), outer) == qnum::status::ok);
  REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C, S), sh.groups, sv,
                           qnum::view<const std::int32_t>(zeros.data(), g.nr, g.nc, ss), qnum::view(deq.data(), R, C, S), outer) == qnum::status::ok);
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
      const auto [r0, r1, c0, c1] = bounds_of(g, R, C, bi, bj);
      const std::size_t gi = static_cast<std::size_t>(bi * g.nc + bj);
      const std::uint32_t got_scale = qnum::detail::read_scale(sv, bi, bj);
      if (got_scale != ref.scale[gi]) report("scale", bi, bj, got_scale, ref.scale[gi]);
      const std::int32_t got_zero = zeros[static_cast<std::size_t>(bi * ss + bj)];
      if (s.kind == qnum::scheme_kind::asymmetric && static_cast<std::uint32_t>(got_zero) != ref.zero[gi])
        report("zero", bi, bj, static_cast<std::uint32_t>(got_zero), ref.zero[gi]);
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
          const std::size_t k = static_cast<std::size_t>(r * S + c);
          if (codes[k] != ref.code[k]) report("code", r, c, codes[k], ref.code[k]);
          if (out_bits(deq[k]) != ref.deq[k]) report("dequantize", r, c, out_bits(deq[k]), ref.deq[k]);
          if (out_bits(fq[k]) != ref.fq[k]) report("fake_quantize", r, c, out_bits(fq[k]), ref.fq[k]);
        }
      for (std::int64_t r = r0; r < r1; ++r)  // padding between rows untouched
        for (std::int64_t c = C; c < S; ++c)
          if (codes[static_cast<std::size_t>(r * S + c)] != 0xAB) report("stride padding", r, c, codes[static_cast<std::size_t>(r * S + c)], 0xAB);
    }
  // the scales' and zero points' padding (a row's elements past g.nc, and past the buffers' last rows) untouched
  for (std::int64_t bi = 0; bi < g.nr; ++bi)
    for (std::int64_t c = g.nc; c < (bi + 1 == g.nr ? ss + 16 : ss); ++c)
      if (zeros[static_cast<std::size_t>(bi * ss + c)] != -77)
        report("zero padding", bi, c, static_cast<std::uint32_t>(zeros[static_cast<std::size_t>(bi * ss + c)]), 0);
  for (std::int64_t bi = 0; bi < g.nr; ++bi)
    for (std::int64_t b = g.nc * sb; b < (bi + 1 == g.nr ? ss * sb + 64 : ss * sb); ++b)
      if (scales[static_cast<std::size_t>(bi * ss * sb + b)] != 0xCD)
        report("scale padding", bi, b, scales[static_cast<std::size_t>(bi * ss * sb + b)], 0xCD);
  CHECK_MESSAGE(bad == 0, name << " target " << qnum::simd_target_name(qnum::host_simd_target()));
}
template <class F, class T, class U>
void run_case(const qnum::scheme<F>& s, const shape& sh, const std::vector<float>& src, float outer, const char* name) {
  std::vector<T> in(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if constexpr (sizeof(T) == 4) in[i] = src[i];
    else in[i] = qnum::to_bf16(src[i]);
  }
  const case_reference ref = definition_bits<F, T, U>(s, sh, in, outer);
  each_target([&](qnum::simd_target) { run_case_one<F, T, U>(s, sh, in, ref, outer, name); });
}

const shape shapes[] = {
    {37, 128, 128, qnum::group_size(32)},  {41, 100, 100, qnum::group_size(32)}, {23, 77, 96, qnum::group_size(16)},
    {19, 300, 301, qnum::group_size(128)}, {45, 61, 64, qnum::per_row()},        {29, 33, 40, qnum::per_tensor()},
    {70, 130, 131, qnum::block(32, 32)},   {9, 5, 7, qnum::group_size(3)},        {3, 1, 1, qnum::group_size(32)},
    // whole rows of groups of 3 or 5 vectors of 16 lanes (6 or 10 of 8, 12 or 20 of 4): every pack width
    {11, 96, 100, qnum::group_size(48)},   {13, 240, 240, qnum::group_size(80)},
    // an odd number of vectors a group under 8 lanes (3 and 5: the pairs of bf16 fake quantization, then one)
    {15, 120, 120, qnum::group_size(24)},  {7, 200, 203, qnum::group_size(40)},
    // contiguous rows of groups of one vector (16, 8 or 4 lanes), each with its own scale in the batch loop
    {21, 64, 64, qnum::group_size(16)},    {17, 48, 48, qnum::group_size(8)},     {13, 40, 40, qnum::group_size(4)},
    // 2D blocks filling whole rows (the banded path): a partial last band, more than `lanes` blocks across, strided
    // rows; one group for the tensor
    {70, 128, 128, qnum::block(32, 32)},   {9, 1088, 1100, qnum::block(8, 64)}, {31, 64, 64, qnum::per_tensor()},
    // more than 64 blocks across (dequantize takes a row of blocks' parameters 64 at a time) and a partial last band
    {5, 520, 520, qnum::block(2, 4)},
};

template <class F>
void run_all(const qnum::scheme<F>& s, const char* name, bool two_level = false) {
  std::uint64_t seed = 11;
  for (const shape& sh : shapes) {
    auto src = hard_data(sh.rows, sh.stride, seed++);
    // Every other shape finite (a NaN or Inf sends a whole batch of groups to the per-group path): NaN, Inf and
    // huge elements become values of their row's magnitude that vary from element to element, so that the groups
    // keep amaxes of their own (one shared replacement would give most groups the same scale, and a scale
    // applied to the wrong group would pass).
    if (seed % 2 == 0)
      for (std::size_t i = 0; i < src.size(); ++i)
        if (!std::isfinite(src[i]) || std::fabs(src[i]) > 1e20f) {
          const int r = static_cast<int>(static_cast<std::int64_t>(i) / sh.stride);
          const float u = static_cast<float>((i * 2654435761u) % 1021u) / 1021.0f;  // in [0, 1)
          src[i] = std::ldexp(i % 2 ? 1.0f + 7.0f * u : -1.0f - 7.0f * u, r % 41 - 20);
        }
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

// R x C element codes (i * 37 + i / 256, F's bits) dequantized to U in groups of G along the rows with the scales
// and zero points given; every output checked against params_from_stored + dequantize_value, bit for bit.
// scale_of(r, k) and zero_of(r, k): the stored scale bits and the zero point of row r's group k, as the views hold them.
template <class F, class U, class ScaleOf, class ZeroOf>
void dequantize_vs_definition(const qnum::scheme<F>& s, std::int64_t R, std::int64_t C, std::int64_t G, const qnum::scale_view& scales,
                              qnum::matrix_view<const std::int32_t> zeros, float outer, ScaleOf scale_of, ZeroOf zero_of, const char* name) {
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(R * C));
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>((i * 37 + i / 256) & ((1u << F::bits) - 1u));
  std::vector<U> out(codes.size());
  REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C), qnum::group_size(G), scales, zeros,
                           qnum::view(out.data(), R, C), outer) == qnum::status::ok);
  long bad = 0;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      const std::uint32_t code = scale_of(r, c / G);
      const std::size_t i = static_cast<std::size_t>(r * C + c);
      const qnum::group_params pd = qnum::detail::params_from_stored(s, code, zero_of(r, c / G), outer);
      const std::uint32_t want = out_bits(to_out<U>(qnum::dequantize_value(s, pd, codes[i])));
      if (out_bits(out[i]) != want && bad++ < 3)
        std::printf("%s G=%lld outer %g out=%s scale bits 0x%X element code %u: got 0x%X want 0x%X\n", name,
                    static_cast<long long>(G), static_cast<double>(outer), sizeof(U) == 4 ? "fp32" : "bf16", code, codes[i],
                    out_bits(out[i]), want);
    }
  CHECK_MESSAGE(bad == 0, name);
}

// Stored scales of every kind (NaN with payloads and either sign, +-Inf, the largest finite, subnormal, +-0,
// ordinary) times codes: the lanes take the finite scales without the NaN rule and must still give the
// definition's bits, and the non-finite ones with it. Groups of 40 (pairs of vectors and a tail) or, with G = 256,
// every code of the format in every group (each stored scale times every code: the float formats' decode lanes,
// their NaN, Inf, subnormal and -0 codes included).
template <class F, class U>
void dequantize_special_scales(const qnum::scheme<F>& s, const char* name, std::int64_t G = 40) {
  const std::uint32_t scale_bits[] = {0x7FC00000u, 0x7FC00001u, 0xFFC00000u, 0x7FA00000u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu,
                                      0x00000001u, 0x00000000u, 0x80000000u, 0x3C010204u, 0xBF800000u};
  const std::int64_t groups = sizeof scale_bits / sizeof scale_bits[0], R = 3, C = G * groups;
  std::vector<float> scales(static_cast<std::size_t>(R * groups));
  std::vector<std::int32_t> zeros(scales.size());
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t k = 0; k < groups; ++k) {
      scales[static_cast<std::size_t>(r * groups + k)] = bits_to_float(scale_bits[(k + r) % groups]);
      zeros[static_cast<std::size_t>(r * groups + k)] = s.kind == qnum::scheme_kind::asymmetric ? static_cast<std::int32_t>((k * 5 + r) % (1 << F::bits)) + F::qmin : 0;
    }
  dequantize_vs_definition<F, U>(
      s, R, C, G, qnum::scale_view{scales.data(), R, groups, groups, 4}, qnum::view<const std::int32_t>(zeros.data(), R, groups), 0.0f,
      [&](std::int64_t r, std::int64_t k) { return float_to_bits(scales[static_cast<std::size_t>(r * groups + k)]); },
      [&](std::int64_t r, std::int64_t k) { return zeros[static_cast<std::size_t>(r * groups + k)]; }, name);
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
    v.push_back(v[i].stored_as(dtype::fp16));  // codes from the stored scale: fp16 subnormals round it by up to half
    v.push_back(v[i].stored_as(dtype::e8m0).with_pow2(qnum::pow2_rule::ceil_pow2));
    v.push_back(v[i].zero_before_round().x_multiply());
    v.push_back(v[i].zero_before_round().zero_round_after_subtract());
    v.push_back(v[i].stored_as(dtype::ue4m3));
    v.push_back(v[i].in_work(qnum::dtype::bf16));  // generic path: checks the dispatch leaves it there
  }
  for (const auto& s : v) run_all(s, fname);
}

}  // namespace
