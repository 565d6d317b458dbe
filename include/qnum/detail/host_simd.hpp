// qnum/detail/host_simd.hpp: the host fast path of quantize_tensor.hpp: fixed-width SIMD lanes that compute,
// bit for bit, what the generic per-element functions (quantize_value, dequantize_value, to_bf16) compute.
//
// Used by quantize_tensor.hpp's entry points on contiguous row segments when the case is covered (and by
// dynamic_scale.hpp's quantize_gradient_int8 with nearest rounding):
//   input fp32 or bf16; output (dequantize / fake_quantize) fp32 or bf16; rounding nearest-even;
//   work dtype fp32; element format int4/uint4/int8/uint8 (any scheme kind, x_by, zero_first) or
//   fp8_e4m3/fp8_e5m2/fp4_e2m1; the group's code scale finite and > 0 (always true unless a scale
//   underflows to zero in its storage type). Everything else takes the generic path. Group statistics
//   (amax, min, max over finite elements) take this path for every scheme when the input is fp32 or bf16.
//
// How the bits stay the same:
//   - x / s and x * inv are single IEEE operations in vector registers (divps/mulps), followed by a
//     register barrier so that -ffp-contract=fast cannot fuse them with the next add;
//   - after the clamp |v| <= 2^9, so round-to-nearest-even is (v + 1.5*2^23) - 1.5*2^23, read from the
//     sum's bits (exact for |v| < 2^22 in the default rounding mode, the mode every host path assumes);
//   - float element codes are rounded on the bit pattern (add half-ulp-minus-one plus the lsb, as the
//     generic codec does), subnormal codes as round(|v| * 2^k) with an exact power-of-two multiply;
//   - bf16 output is RNE on the bit pattern, NaN -> 0x7FC0, overflow -> Inf (to_bf16's rules);
//   - statistics use the integer order of |x| bit patterns, which is the float order for non-negative x.
// tests/test_host_simd.cpp compares every case against the generic path on adversarial random data, and
// test_codec_exhaustive runs the float-code lanes over all 2^32 fp32 inputs against encode<F>.
//
// Enabled with GCC or Clang vector extensions on x86-64 (8 lanes with AVX2, else 4: SSE2) and AArch64 (4 lanes);
// off under nvcc and elsewhere (QNUM_HOST_SIMD 0), or when the user defines QNUM_NO_HOST_SIMD.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/format.hpp"
#include "qnum/scale.hpp"

#if !defined(QNUM_NO_HOST_SIMD) && !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__aarch64__))
#define QNUM_HOST_SIMD 1
#else
#define QNUM_HOST_SIMD 0
#endif

#if QNUM_HOST_SIMD
#if defined(__x86_64__)
#include <immintrin.h>
#else
#include <arm_neon.h>
#endif
QNUM_BEGIN_NAMESPACE
namespace detail {
namespace simd {

#if defined(__AVX2__)
constexpr int lanes = 8;
#else
constexpr int lanes = 4;
#endif

typedef float vf __attribute__((vector_size(lanes * 4)));
typedef std::int32_t vi __attribute__((vector_size(lanes * 4)));
typedef std::uint32_t vu __attribute__((vector_size(lanes * 4)));

template <class To, class From>
inline To bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
template <class V, class S>
inline V splat(S s) {
  using E = std::remove_reference_t<decltype(V{}[0])>;
  const E e = static_cast<E>(s);
#if defined(__AVX2__)
  return V{e, e, e, e, e, e, e, e};
#else
  return V{e, e, e, e};
#endif
}

// The value as a rounded fp32 vector in a register: nothing before it fuses with anything after it.
inline vf barrier(vf v) {
#if defined(__x86_64__)
  __asm__("" : "+x"(v));
#else
  __asm__("" : "+w"(v));
#endif
  return v;
}

// round(v) to nearest even for |v| < 2^22: (v + 1.5*2^23) read from the sum's bits (unsigned arithmetic:
// lanes a later select() discards may hold any bits and must not overflow).
inline vi round_small(vf v) { return bit_cast<vi>(bit_cast<vu>(barrier(v + splat<vf>(12582912.0f))) - 0x4B400000u); }
// The bf16 bits of fp32 bits u rounded to nearest even on the bit pattern (NaN and overflow: the callers).
inline vu bf16_rne(vu u) { return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16; }

// m ? a : b, lane-wise (m is all-ones or all-zeros per lane).
inline vi select(vi m, vi a, vi b) { return (a & m) | (b & ~m); }
inline vf select(vi m, vf a, vf b) { return bit_cast<vf>(select(m, bit_cast<vi>(a), bit_cast<vi>(b))); }
inline vi vmax(vi a, vi b) { return select(a > b, a, b); }

// Narrowing and widening between 32-bit lanes and 8/16-bit memory (AVX2 / SSE2 / NEON): the generic
// __builtin_convertvector lowers these to per-lane scalar moves on baseline x86-64.
inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
#if defined(__x86_64__) && defined(__AVX2__)
inline vf load(const std::uint16_t* p) {  // bf16 bits: exact widening
  return bit_cast<vf>(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
inline vi load_u8(const std::uint8_t* p) {
  return bit_cast<vi>(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline void store_u16(std::uint16_t* p, vi v) {  // lanes hold 0..65535
  const __m256i w = bit_cast<__m256i>(v);
  const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
}
inline void store_u8(std::uint8_t* p, vi v) {  // lanes hold 0..255
  const __m256i w = bit_cast<__m256i>(v);
  const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(h, h));
}
#elif defined(__x86_64__)
inline vf load(const std::uint16_t* p) {
  return bit_cast<vf>(_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline vi load_u8(const std::uint8_t* p) {
  std::int32_t w;
  std::memcpy(&w, p, 4);
  const __m128i z = _mm_setzero_si128();
  return bit_cast<vi>(_mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(w), z), z));
}
inline void store_u16(std::uint16_t* p, vi v) {  // SSE2 packs are signed: sign-extend the low 16 bits first
  const __m128i w = _mm_srai_epi32(_mm_slli_epi32(bit_cast<__m128i>(v), 16), 16);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(w, w));
}
inline void store_u8(std::uint8_t* p, vi v) {
  const __m128i w = _mm_packs_epi32(bit_cast<__m128i>(v), bit_cast<__m128i>(v));  // 0..255 fits int16
  const std::int32_t b = _mm_cvtsi128_si32(_mm_packus_epi16(w, w));
  std::memcpy(p, &b, 4);
}
#else
inline vf load(const std::uint16_t* p) { return bit_cast<vf>(vshlq_n_u32(vmovl_u16(vld1_u16(p)), 16)); }
inline vi load_u8(const std::uint8_t* p) {
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return bit_cast<vi>(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w))))));
}
inline void store_u16(std::uint16_t* p, vi v) { vst1_u16(p, vmovn_u32(bit_cast<uint32x4_t>(v))); }
inline void store_u8(std::uint8_t* p, vi v) {
  const uint16x4_t h = vmovn_u32(bit_cast<uint32x4_t>(v));
  const uint8x8_t b = vmovn_u16(vcombine_u16(h, h));
  std::memcpy(p, &b, 4);
}
#endif
inline void store(std::uint16_t* p, vf v) {  // to_bf16: RNE on the bits, NaN -> 0x7FC0, overflow -> Inf
  const vu u = bit_cast<vu>(v);
  const vu r = bf16_rne(u);
  const vi nan = bit_cast<vi>(u & 0x7FFFFFFFu) > 0x7F800000;
  store_u16(p, select(nan, splat<vi>(0x7FC0), bit_cast<vi>(r)));
}
inline void store(std::uint8_t* p, vi q) { store_u8(p, q & 0xFF); }  // low 8 bits of each lane
inline vi is_nan(vf x) { return (bit_cast<vi>(x) & 0x7FFFFFFF) > 0x7F800000; }
// NaN lanes -> the canonical quiet NaN (detail::canonical_nan): x86 would keep an operand's payload and sign.
inline vf canonical_nan(vf x) { return select(is_nan(x), bit_cast<vf>(splat<vi>(0x7FC00000)), x); }

// Apply fn(const In* lanes_in, Out* lanes_out) over n elements; the tail runs on zero-padded copies.
template <class In, class Out, class Fn>
inline void for_lanes(const In* in, std::int64_t n, Out* out, Fn&& fn) {
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {  // two vectors per trip: independent chains, half the loop overhead
    fn(in + i, out + i);
    fn(in + i + lanes, out + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) fn(in + i, out + i);
  if (i < n) {
    In ib[lanes] = {};
    Out ob[lanes] = {};
    std::memcpy(ib, in + i, static_cast<std::size_t>(n - i) * sizeof(In));
    fn(ib, ob);
    std::memcpy(out + i, ob, static_cast<std::size_t>(n - i) * sizeof(Out));
  }
}

// ---- statistics ----------------------------------------------------------------------------------------
// a > b ? a : b and a < b ? a : b, lane-wise (maxps/minps are exactly these on x86).
inline vf max_lanes(vf a, vf b) {
#if defined(__x86_64__) && defined(__AVX2__)
  return bit_cast<vf>(_mm256_max_ps(bit_cast<__m256>(a), bit_cast<__m256>(b)));
#elif defined(__x86_64__)
  return bit_cast<vf>(_mm_max_ps(bit_cast<__m128>(a), bit_cast<__m128>(b)));
#else
  return select(a > b, a, b);
#endif
}
inline vf min_lanes(vf a, vf b) {
#if defined(__x86_64__) && defined(__AVX2__)
  return bit_cast<vf>(_mm256_min_ps(bit_cast<__m256>(a), bit_cast<__m256>(b)));
#elif defined(__x86_64__)
  return bit_cast<vf>(_mm_min_ps(bit_cast<__m128>(a), bit_cast<__m128>(b)));
#else
  return select(a < b, a, b);
#endif
}

// Running max(x, 0) and min(x, 0) over finite elements (non-finite lanes count as 0). Without NaN
// operands and with the comparisons written as below, the order of the lanes cannot change the result.
struct stats_acc {
  vf pos = splat<vf>(0.0f), neg = splat<vf>(0.0f);
  void add(vf x) {
    const vi fin = (bit_cast<vi>(x) & 0x7FFFFFFF) < 0x7F800000;
    const vf f = bit_cast<vf>(bit_cast<vi>(x) & fin);
    pos = max_lanes(f, pos);
    neg = min_lanes(f, neg);
  }
};
template <class In>
inline void accumulate_row(stats_acc& acc, const In* in, std::int64_t n) {
  std::int64_t i = 0;
  if (n >= 4 * lanes) {  // four independent chains: min/max latency, not throughput, bounds one chain
    stats_acc b, c, d;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
      acc.add(load(in + i));
      b.add(load(in + i + lanes));
      c.add(load(in + i + 2 * lanes));
      d.add(load(in + i + 3 * lanes));
    }
    acc.pos = max_lanes(max_lanes(acc.pos, b.pos), max_lanes(c.pos, d.pos));
    acc.neg = min_lanes(min_lanes(acc.neg, b.neg), min_lanes(c.neg, d.neg));
  }
  for (; i + lanes <= n; i += lanes) acc.add(load(in + i));
  if (i < n) {
    In t[lanes] = {};
    std::memcpy(t, in + i, static_cast<std::size_t>(n - i) * sizeof(In));
    acc.add(load(t));
  }
}
// The group_stats that accumulate() would give: amax, min(x, 0), max(x, 0) over finite elements.
inline group_stats finish(const stats_acc& acc) {
  group_stats st;
  for (int i = 0; i < lanes; ++i) {
    st.max = acc.pos[i] > st.max ? acc.pos[i] : st.max;
    st.min = acc.neg[i] < st.min ? acc.neg[i] : st.min;
  }
  const float n = abs_bits(st.min);
  st.amax = n > st.max ? n : st.max;
  return st;
}

// ---- integer codes -------------------------------------------------------------------------------------
struct int_lane_consts {
  vf scale_or_inv, zf, lo, hi;
  vi z;
  int zero;
};
// quantize_int_value(s, p, x, rne) for every lane; Multiply = (x_by == multiply), ZeroFirst = s.zero_first.
template <bool Multiply, bool ZeroFirst>
inline vi int_lane(vf x, const int_lane_consts& k) {
  vf v = barrier(Multiply ? x * k.scale_or_inv : x / k.scale_or_inv);
  if (ZeroFirst) v = barrier(v + k.zf);
  v = min_lanes(max_lanes(v, k.lo), k.hi);  // the clamp; a NaN lane becomes lo here and z below
  vu q = bit_cast<vu>(round_small(v));
  if (!ZeroFirst) q = q + bit_cast<vu>(k.z);  // unsigned: discarded (NaN) lanes must not overflow
  return select(is_nan(x), k.z, bit_cast<vi>(q));
}
template <class F>
inline int_lane_consts int_consts(const scheme<F>& s, const group_params& p) {
  int_lane_consts k;
  const bool mul = s.x_by == scale_op::multiply;
  k.scale_or_inv = splat<vf>(mul ? p.inv : p.code_scale);
  k.zf = splat<vf>(static_cast<float>(p.zero));
  const int lo = s.code_min(), hi = s.code_max();
  k.lo = splat<vf>(static_cast<float>(s.zero_first ? lo : lo - p.zero));
  k.hi = splat<vf>(static_cast<float>(s.zero_first ? hi : hi - p.zero));
  k.z = splat<vi>(p.zero);
  k.zero = p.zero;
  return k;
}
// (q - z) * scale for integer q (dequantize_value with work fp32).
inline vf int_dequant(vi q, vi z, vf scale) { return canonical_nan(__builtin_convertvector(q - z, vf) * scale); }
template <class F>
inline vi code_to_int_lanes(vi code) {  // code_to_int<F> on the low F::bits bits
  if constexpr (F::is_signed) return bit_cast<vi>(bit_cast<vu>(code) << (32 - F::bits)) >> (32 - F::bits);
  else return code & static_cast<std::int32_t>((1u << F::bits) - 1u);
}

// ---- float codes ---------------------------------------------------------------------------------------
// encode<F>(v, rne, satfinite) for F = fp8_e4m3, fp8_e5m2, fp4_e2m1 (positive NaN code; e2m1 NaN -> 0x7).
template <class F>
inline vi float_code_lane(vf v) {
  constexpr int m = F::mantissa_bits;
  constexpr int bias = F::bias;
  constexpr std::int32_t max_code = F::max_code;
  constexpr std::int32_t nan_code = F::has_nan ? static_cast<std::int32_t>(F::nan_code) : F::max_code;
  constexpr std::uint32_t min_normal_bits = static_cast<std::uint32_t>(128 - bias) << 23;  // 2^(1-bias)
  constexpr float sub_mul = static_cast<float>(1u << (bias - 1 + m));                     // 1 / smallest subnormal
  const vu u = bit_cast<vu>(v);
  const vu a = u & 0x7FFFFFFFu;
  // Normal range: RNE at mantissa bit m, then rebias; saturate after rounding.
  const vu r = a + ((1u << (22 - m)) - 1u) + ((a >> (23 - m)) & 1u);
  const vi cn = bit_cast<vi>((r >> (23 - m)) - static_cast<std::uint32_t>((127 - bias) << m));
  // Subnormal range: round(|v| * 2^(bias-1+m)), exact multiply by a power of two, |v| * k < 2^m.
  const vf t = barrier(bit_cast<vf>(a) * sub_mul);
  const vi cs = round_small(t);
  vi c = select(bit_cast<vi>(a) < static_cast<std::int32_t>(min_normal_bits), cs, cn);
  c = select(c > max_code, splat<vi>(max_code), c);
  c = c | bit_cast<vi>((u >> 31) << (F::bits - 1));
  return select(bit_cast<vi>(a) > 0x7F800000, splat<vi>(nan_code), c);
}
template <class F>
struct float_decode_table {
  float v[1 << F::bits];
  float_decode_table() {
    for (int i = 0; i < (1 << F::bits); ++i) v[i] = decode<F>(static_cast<std::uint32_t>(i));
  }
};
template <class F>
inline const float* decode_table() {
  static const float_decode_table<F> t;
  return t.v;
}
template <class F>
inline vf float_dequant(vi code, vf scale) {  // decode<F>(code) * scale
  const float* t = decode_table<F>();
  vf d;
  for (int i = 0; i < lanes; ++i) d[i] = t[code[i] & ((1 << F::bits) - 1)];
  return canonical_nan(d * scale);
}

// ---- row kernels ---------------------------------------------------------------------------------------
template <class F>
constexpr bool float_covered() {
  return std::is_same<F, fp8_e4m3>::value || std::is_same<F, fp8_e5m2>::value || std::is_same<F, fp4_e2m1>::value;
}
template <class F>
constexpr bool format_covered() { return F::is_integer || float_covered<F>(); }

// Whether a group with parameters p can take the lanes (the caller has checked format, types, rounding).
template <class F>
inline bool group_covered(const scheme<F>& s, const group_params& p) {
  if (s.work != work_dtype::fp32) return false;
  const float d = s.x_by == scale_op::multiply ? p.inv : p.code_scale;  // then x * d or x / d is NaN only for NaN x
  return d > 0.0f && d <= flt_max;
}

// Calls fn(lane_functor) with the code lane of (s, p): vi(vf x).
template <class F, class Fn>
inline void with_code_lane(const scheme<F>& s, const group_params& p, Fn&& fn) {
  if constexpr (F::is_integer) {
    const int_lane_consts k = int_consts(s, p);
    const bool mul = s.x_by == scale_op::multiply;
    if (mul && s.zero_first) fn([&](vf x) { return int_lane<true, true>(x, k); });
    else if (mul) fn([&](vf x) { return int_lane<true, false>(x, k); });
    else if (s.zero_first) fn([&](vf x) { return int_lane<false, true>(x, k); });
    else fn([&](vf x) { return int_lane<false, false>(x, k); });
  } else {
    const bool mul = s.x_by == scale_op::multiply;
    const vf f = splat<vf>(mul ? p.inv : p.code_scale);
    if (mul) fn([&](vf x) { return float_code_lane<F>(barrier(x * f)); });
    else fn([&](vf x) { return float_code_lane<F>(barrier(x / f)); });
  }
}

template <class F>
inline vf dequant_lane(vi code, const group_params& p) {
  if constexpr (F::is_integer) return int_dequant(code_to_int_lanes<F>(code), splat<vi>(p.zero), splat<vf>(p.scale));
  else return float_dequant<F>(code, splat<vf>(p.scale));
}

// codes[i] = quantize_value(s, p, in[i], rne), i < n.
template <class F, class In>
inline void quantize_row(const scheme<F>& s, const group_params& p, const In* in, std::int64_t n, std::uint8_t* codes) {
  with_code_lane(s, p, [&](auto lane) {
    constexpr std::int32_t mask = static_cast<std::int32_t>((1u << F::bits) - 1u);  // two's complement in F::bits
    for_lanes(in, n, codes, [&](const In* x, std::uint8_t* c) { store(c, lane(load(x)) & mask); });
  });
}
// out[i] = dequantize_value(s, p, quantize_value(s, p, in[i], rne)), i < n.
template <class F, class In, class Out>
inline void fake_quantize_row(const scheme<F>& s, const group_params& p, const In* in, std::int64_t n, Out* out) {
  with_code_lane(s, p, [&](auto lane) {
    for_lanes(in, n, out, [&](const In* x, Out* o) { store(o, dequant_lane<F>(lane(load(x)), p)); });
  });
}
// out[i] = dequantize_value(s, p, codes[i]), i < n.
template <class F, class Out>
inline void dequantize_row(const group_params& p, const std::uint8_t* codes, std::int64_t n, Out* out) {
  for_lanes(codes, n, out, [&](const std::uint8_t* c, Out* o) {
    store(o, dequant_lane<F>(load_u8(c), p));
  });
}

// ---- INT8 gradients with error feedback (dynamic_scale.hpp, nearest-even) ---------------------------
// bf16 residual store as encode<bf16>(v, rne, satfinite): RNE on the bits, overflow and +-Inf -> +-0x7F7F,
// NaN -> 0x7FC0.
inline void store_satfinite(std::uint16_t* p, vf v) {
  const vu u = bit_cast<vu>(v);
  const vu r = bf16_rne(u);
  const vi over = bit_cast<vi>(r & 0x7FFFu) == 0x7F80;  // rounded to, or was, +-Inf
  const vi nan = bit_cast<vi>(u & 0x7FFFFFFFu) > 0x7F800000;
  const vi sat = bit_cast<vi>((r & 0x8000u) | 0x7F7Fu);
  store_u16(p, select(nan, splat<vi>(0x7FC0), select(over, sat, bit_cast<vi>(r))));
}
inline void store_residual_lanes(float* p, vf v) { store(p, v); }
inline void store_residual_lanes(std::uint16_t* p, vf v) { store_satfinite(p, v); }

// For i < n: x = fl(g + r_old); finite x: code = round(clamp(fl(x * inv), -127, 127)), residual =
// fl(x - fl(code * dq)); non-finite x: code 0, residual r_old. Returns max |x| over finite x (0 if none)
// and sets any_nonfinite. quantize_grad_element(.., rne) per element, for finite inv and dq.
template <class Residual>
inline float grad_int8_row(const float* g, Residual* residual, std::int64_t n, float inv, float dq, std::int8_t* codes,
                           bool& any_nonfinite) {
  const vf vinv = splat<vf>(inv), vdq = splat<vf>(dq), lo = splat<vf>(-127.0f), hi = splat<vf>(127.0f);
  vf amax = splat<vf>(0.0f);
  vi nonfinite_seen = splat<vi>(0);
  auto step = [&](const float* gp, const Residual* rp, std::uint8_t* cp, Residual* ro) {
    const vf r_old = rp != nullptr ? load(rp) : splat<vf>(0.0f);
    const vf x = barrier(load(gp) + r_old);
    const vi nonfin = (bit_cast<vi>(x) & 0x7F800000) == 0x7F800000;
    vf y = barrier(x * vinv);
    y = min_lanes(max_lanes(y, lo), hi);  // y is not NaN in the lanes kept (x finite, inv finite)
    const vi q = round_small(y);
    const vf d = barrier(__builtin_convertvector(q, vf) * vdq);
    const vf r = barrier(x - d);
    store(cp, select(nonfin, splat<vi>(0), q));
    if (ro != nullptr) store_residual_lanes(ro, select(nonfin, r_old, r));
    amax = max_lanes(bit_cast<vf>(bit_cast<vi>(x) & 0x7FFFFFFF & ~nonfin), amax);
    nonfinite_seen = nonfinite_seen | nonfin;
  };
  std::uint8_t* c8 = reinterpret_cast<std::uint8_t*>(codes);
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(g + i, residual != nullptr ? residual + i : nullptr, c8 + i, residual != nullptr ? residual + i : nullptr);
  if (i < n) {
    const std::size_t k = static_cast<std::size_t>(n - i);
    float gb[lanes] = {};
    Residual rb[lanes] = {};
    std::uint8_t cb[lanes] = {};
    std::memcpy(gb, g + i, k * sizeof(float));
    if (residual != nullptr) std::memcpy(rb, residual + i, k * sizeof(Residual));
    step(gb, residual != nullptr ? rb : nullptr, cb, residual != nullptr ? rb : nullptr);
    std::memcpy(c8 + i, cb, k);
    if (residual != nullptr) std::memcpy(residual + i, rb, k * sizeof(Residual));
  }
  float m = 0.0f;
  for (int l = 0; l < lanes; ++l) {
    m = amax[l] > m ? amax[l] : m;
    any_nonfinite = any_nonfinite || nonfinite_seen[l] != 0;
  }
  return m;
}

}  // namespace simd
}  // namespace detail
QNUM_END_NAMESPACE
#endif  // QNUM_HOST_SIMD
