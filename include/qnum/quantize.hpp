// qnum/quantize.hpp: per-element quantize / dequantize / fake-quantize with a group's parameters (host and device).
//
//   code_t<F> quantize_value(scheme<F>, group_params, float x, Round = rne)
//   float     dequantize_value(scheme<F>, group_params, code_t<F> code)
//   float     fake_quant_value(scheme<F>, group_params, float x, Round = rne)
//                 == dequantize_value(s, p, quantize_value(s, p, x, r)) by construction (same functions).
//
// Integer formats: v = x / code_scale (x_by divide) or x * inv (x_by multiply), rounded to the work dtype;
// with zero_first: v = v + z (work dtype), clamp to [code_min, code_max], round (the mode);
// otherwise: clamp(round(v) + z) with v clamped to [code_min - z, code_max - z] first. The code is the
// integer's two's complement in F::bits bits. NaN x (or a NaN x / s) gives the code of z (dequantizes to 0);
// +-Inf saturate.
// Dequantize: (q - z) * scale (fp32 RN, then rounded to the work dtype). NaN only for a NaN stored scale.
// Float formats: code = encode<F>(x / code_scale or x * inv, Round, satfinite): RNE on the element grid,
// overflow and +-Inf saturate to +-max_value; NaN x gives F's NaN code (fp4_e2m1 has none: +6, encode's rule).
// Dequantize: decode<F>(code) * scale (fp32 RN).
// A NaN dequantized (or fake-quantized) value is always the canonical quiet NaN 0x7FC00000 (bf16 0x7FC0,
// fp16 0x7E00 once stored): never the payload or sign of the NaN code, on host and device alike.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/round.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE

// The value x as it enters the code decision: x/s or x*inv in the work dtype.
template <class F>
QNUM_HD float scaled_value(const scheme<F>& s, const group_params& p, float x) {
  const float v = s.x_by == scale_op::multiply ? detail::mul_rn(x, p.inv) : detail::div_rn(x, p.code_scale);
  return detail::to_work(v, s.work);
}

namespace detail {

// quantize_int_value(s, p, x, rne) in fewer instructions, the device's nearest-even path: round first
// with f2i_rn_sat, then clamp the integer to [lo - z, hi - z] (equal to clamping the float first: the
// bounds are integers), and a NaN v (NaN x, or degenerate parameters) gives 0 + z = z as the definition.
// zero_first: v + z in the work dtype, rounded, clamped to [lo, hi]; NaN -> z.
// v: scaled_value(s, p, x), or the device's gpu::divide of x by the group's divisor (the same code).
// For formats whose codes lie in [-128, 127] (every signed format of 8 bits or fewer, UINT4) the rounding
// saturates to 8 bits first (f2i8_rn_sat: one instruction on the device), which changes no code wherever
// the integer bounds lie in [-128, 127]: always on the zero-first path ([lo, hi]); on the other path
// ([lo - z, hi - z], z a zero point in [code_min, code_max] as compute_params gives) for every zero point
// when the format spans at most 128 codes (4 bits), else (INT8) in symmetric schemes, whose z is 0.
// The bounds -128 and 127 are not applied again (the full INT8 range needs no clamp then).
// The steps of that path before any clamp, shared by quantize_int_rne_scaled and its unclamped form:
// rne_codes<F>(w): nearest even of w, saturated to 8 bits where F's codes lie in [-128, 127] (narrow), else to 32;
// rne_span<F>(v): the same to 8 bits where F also spans at most 128 codes (narrow_span), else to 32;
// zero_first_value(s, p, v): v + z in the work dtype (what a zero-first scheme rounds).
template <class F>
constexpr bool int_codes_narrow = F::qmin >= -128 && F::qmax <= 127;
template <class F>
constexpr bool int_codes_narrow_span = int_codes_narrow<F> && F::qmax - F::qmin <= 127;
template <class F>
QNUM_HD int rne_codes(float w) { return int_codes_narrow<F> ? f2i8_rn_sat(w) : f2i_rn_sat(w); }
template <class F>
QNUM_HD int rne_span(float v) { return int_codes_narrow_span<F> ? f2i8_rn_sat(v) : f2i_rn_sat(v); }
template <class F>
QNUM_HD float zero_first_value(const scheme<F>& s, const group_params& p, float v) {
  return to_work(add_rn(v, static_cast<float>(p.zero)), s.work);
}
template <class F>
QNUM_HD int quantize_int_rne_scaled(const scheme<F>& s, const group_params& p, float v) {
  constexpr bool narrow = int_codes_narrow<F>;
  constexpr bool narrow_span = int_codes_narrow_span<F>;
  const int lo = s.code_min(), hi = s.code_max();
  if (s.zero_first) {
    const float w = zero_first_value(s, p, v);
    int q = rne_codes<F>(w);
    if (!narrow || lo > -128) q = q < lo ? lo : q;
    if (!narrow || hi < 127) q = q > hi ? hi : q;
    return is_nan(w) ? p.zero : q;
  }
  if (narrow && !narrow_span && s.kind != scheme_kind::asymmetric) {  // INT8, z == 0 (0 unless asymmetric)
    int q = f2i8_rn_sat(v);
    if (lo > -128) q = q < lo ? lo : q;
    if (hi < 127) q = q > hi ? hi : q;
    return q;
  }
  // narrow_span: [lo - z, hi - z] lies within [-127, 127] for every z in [code_min, code_max]
  int q = rne_span<F>(v);
  q = q < lo - p.zero ? lo - p.zero : q;
  q = q > hi - p.zero ? hi - p.zero : q;
  return q + p.zero;
}
// quantize_int_rne_scaled(s, p, v) of an asymmetric scheme without its clamps and NaN rule: the rounding of v
// (zero-first: of v + z in the work dtype), plus z otherwise. Non-decreasing in v (each step is). Equal to
// quantize_int_rne_scaled(s, p, v) for every non-NaN v between two values v_lo and v_hi for which
// asym_codes_in_range(s, p, v_lo, v_hi) holds.
template <class F>
QNUM_HD int quantize_int_rne_scaled_unclamped(const scheme<F>& s, const group_params& p, float v) {
  static_assert(F::is_integer, "integer formats only");
  return s.zero_first ? rne_codes<F>(zero_first_value(s, p, v)) : rne_span<F>(v) + p.zero;
}
// Whether the codes of an asymmetric scheme's group need no clamp: v_lo and v_hi are the scaled values of its
// smallest and largest element (the group statistics' min and max) and both of their unclamped codes lie in
// [code_min, code_max]. The unclamped code is monotonic in v, so every element between them gets a code
// inside the range too, and quantize_int_rne_scaled_unclamped gives its code (a NaN element aside: its code is
// z, which the unclamped form does not give; callers use this for groups known to hold no NaN).
template <class F>
QNUM_HD bool asym_codes_in_range(const scheme<F>& s, const group_params& p, float v_lo, float v_hi) {
  if (is_nan(v_lo) || is_nan(v_hi)) return false;
  const int a = quantize_int_rne_scaled_unclamped(s, p, v_lo), b = quantize_int_rne_scaled_unclamped(s, p, v_hi);
  const int lo = s.code_min(), hi = s.code_max();
  return a >= lo && a <= hi && b >= lo && b <= hi;
}
// The compressed-tensors pack-quantized word of 8 INT4 integers q_i in [-8, 7] (element 0 in the lowest
// nibble, nibble i = q_i + 8, as ct::pack_weight writes it from their codes): sum of q_i * 16^i, a shift-add
// chain of one instruction a code, plus 0x88888888. Exact: each q_i + 8 lies in [0, 15], so the nibbles carry
// nothing into each other and the sum, in [0, 2^32), is the word.
QNUM_HD std::uint32_t pack_int4x8_ints(const int (&q)[8]) {
  std::uint32_t w = static_cast<std::uint32_t>(q[7]);
  for (int i = 6; i >= 0; --i) w = (w << 4) + static_cast<std::uint32_t>(q[i]);
  return w + 0x88888888u;
}
// The same word from the 8 codes (two's complement in the low nibble of each byte; the high nibble is ignored):
// nibble i = (code_i + 8) & 0xF, which is q_i + 8 for the code of q_i (gpu::pack_int4x8; the same word as
// pack_int4x8_ints of the integers, test_quantize checks every byte at every position).
QNUM_HD std::uint32_t pack_int4x8_codes(const std::uint8_t (&codes)[8]) {
  std::uint32_t w = 0u;
  for (int i = 0; i < 8; ++i) w |= ((static_cast<std::uint32_t>(codes[i]) + 8u) & 0xFu) << (4 * i);
  return w;
}
template <class F>
QNUM_HD int quantize_int_rne_by_cvt(const scheme<F>& s, const group_params& p, float x) {
  return quantize_int_rne_scaled(s, p, scaled_value(s, p, x));
}

}  // namespace detail

// The integer q (before storage) of x in an integer scheme; q in [code_min, code_max].
template <class F, class Round = round_nearest_even>
QNUM_HD int quantize_int_value(const scheme<F>& s, const group_params& p, float x, Round mode = {}) {
  static_assert(F::is_integer, "integer formats only");
#if QNUM_IS_DEVICE_PASS()
  if constexpr (std::is_same_v<Round, round_nearest_even>) return detail::quantize_int_rne_by_cvt(s, p, x);
#endif
  if (detail::is_nan(x)) return p.zero;
  const float lo = static_cast<float>(s.code_min());
  const float hi = static_cast<float>(s.code_max());
  float v = scaled_value(s, p, x);
  if (detail::is_nan(v)) return p.zero;  // only from degenerate parameters (e.g. 0 * Inf): as a NaN x
  if (s.zero_first) {
    v = detail::to_work(detail::add_rn(v, static_cast<float>(p.zero)), s.work);
    v = v < lo ? lo : (v > hi ? hi : v);
    return round_to_int(v, mode);
  }
  const float zlo = lo - static_cast<float>(p.zero);  // exact: small integers
  const float zhi = hi - static_cast<float>(p.zero);
  v = v < zlo ? zlo : (v > zhi ? zhi : v);
  return round_to_int(v, mode) + p.zero;
}

template <class F, class Round = round_nearest_even>
QNUM_HD code_t<F> quantize_value(const scheme<F>& s, const group_params& p, float x, Round mode = {}) {
  if constexpr (F::is_integer) {
    constexpr std::uint32_t mask = (1u << F::bits) - 1u;
    return static_cast<code_t<F>>(static_cast<std::uint32_t>(quantize_int_value(s, p, x, mode)) & mask);
  } else {
    return encode<F>(scaled_value(s, p, x), mode, satfinite);
  }
}

namespace detail {
// (q - z) * scale rounded to the working dtype: an integer code's value. Never NaN when the scale is finite
// (the device's dequantize_fragment uses it alone then); dequantize_value adds the canonical NaN rule.
// The same from the code's integer q = code_to_int(code), for a caller that holds q; dequantize_int_q adds the
// canonical NaN rule: dequantize_value of the code.
template <class F>
QNUM_HD float dequantize_int_q_finite_scale(const scheme<F>& s, const group_params& p, int q) {
  return to_work(mul_rn(static_cast<float>(q - p.zero), p.scale), s.work);
}
template <class F>
QNUM_HD float dequantize_int_finite_scale(const scheme<F>& s, const group_params& p, std::uint32_t code) {
  return dequantize_int_q_finite_scale(s, p, code_to_int<F>(code));
}
template <class F>
QNUM_HD float dequantize_int_q(const scheme<F>& s, const group_params& p, int q) {
  return canonical_nan(dequantize_int_q_finite_scale(s, p, q));
}
}  // namespace detail

template <class F>
QNUM_HD float dequantize_value(const scheme<F>& s, const group_params& p, std::uint32_t code) {
  if constexpr (F::is_integer) {
    return detail::dequantize_int_q(s, p, code_to_int<F>(code));
  } else {
    return detail::canonical_nan(detail::mul_rn(decode<F>(code), p.scale));
  }
}

template <class F, class Round = round_nearest_even>
QNUM_HD float fake_quant_value(const scheme<F>& s, const group_params& p, float x, Round mode = {}) {
  return dequantize_value(s, p, quantize_value(s, p, x, mode));
}

QNUM_END_NAMESPACE
