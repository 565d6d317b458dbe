// qnum/scale.hpp: quantization schemes (scale rules as visible options) and per-group scale/zero-point computation.
//
// A scheme<Format> is a constexpr value whose fields spell every choice that changes bits:
//
//   kind        symmetric_restricted  s = amax / qmax,             q in [-qmax, qmax]   (slime INT4 QAT)
//               symmetric_full        s = amax / ((qmax-qmin)/2),  q in [qmin, qmax]    (torchao SYMMETRIC,
//                                                                                         compressed-tensors sym)
//               asymmetric            s = (max' - min') / (qmax-qmin), min' = min(min,0), max' = max(max,0),
//                                     z = clamp(qmin - round(min'/s), qmin, qmax), q in [qmin, qmax]
//               float_amax            s = amax / Format::max_value (fp8_e4m3, fp8_e5m2, fp4_e2m1 elements)
//               te_current            encode multiplier m = max_value / amax (TransformerEngine current
//                                     scaling, amax 0 -> m = 1), dequant scale = 1/m (both fp32, RN)
//   scale_op    divide (amax / d) or multiply (amax * (1/d), the constant 1/d rounded once to fp32)
//   eps_mode    none, floor (s = max(s, eps)), zero_to_eps (s == 0 -> eps); applied before pow2/storage,
//               or, with eps_after_storage(), to the stored (rounded) scale: compressed-tensors rounds the
//               scale to its scale dtype first and then replaces zeros with that dtype's eps
//   pow2        none; ceil_pow2 (DeepGEMM ceil_to_ue8m0: round s up to 2^k, k clamped to [-126, 127]);
//               mx_floor (OCP MX: 2^(floor(log2 amax) - emax_elem)); mx_rceil (2^ceil(log2(amax/max_value)))
//   store       fp32, bf16, fp16 (RNE, satfinite), e8m0 (power of two), ue4m3 (RNE, satfinite)
//   codes_from  stored (codes decided with the stored, rounded scale) or computed (with the fp32 scale,
//               as slime's checkpoint path does; dequantization always uses the stored scale)
//   x_op        how x is scaled for coding: divide (x / s) or multiply (x * (1/s), 1/s rounded once)
//   work        fp32, bf16 or fp16: every arithmetic result (scale formula, x/s, +z, (q-z)*s) is rounded to
//               this dtype, as torch does for bf16/fp16 tensors (torchao / compressed-tensors on bf16 input)
//   zero_first  add the zero point before rounding (compressed-tensors, torch per-channel fake quant)
//               instead of after (torchao quantize_affine)
//
// Bad input policy (one definition, tested): the group statistics (amax, min, max) ignore NaN and +-Inf
// elements; an all-zero (or all-non-finite) group gets amax 0. A scale that is 0 after the eps rule
// (eps_mode none, all-zero group) becomes 1.0, so codes are 0 (zero point z) and dequantize to exactly 0.
// A scale that overflows is clamped to the largest finite fp32 (so x / s never gives NaN); a reciprocal
// that overflows is clamped likewise. See quantize.hpp for the per-element rules.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/detail/fp_rn.hpp"
#include "qnum/format.hpp"
#include "qnum/round.hpp"

QNUM_BEGIN_NAMESPACE

enum class scheme_kind : int { symmetric_restricted, symmetric_full, asymmetric, float_amax, te_current };
enum class scale_op : int { divide, multiply };
enum class eps_mode : int { none, floor, zero_to_eps };
enum class pow2_rule : int { none, ceil_pow2, mx_floor, mx_rceil };

// A quantization scheme for element format Format. Build with the factory functions below and the
// chainable modifiers, e.g.  qnum::symmetric_restricted<qnum::qint4>().eps_floor(1e-5f).scale_multiply().
template <class Format>
struct scheme {
  using format = Format;
  scheme_kind kind = scheme_kind::symmetric_full;
  scale_op scale_by = scale_op::divide;
  eps_mode eps_rule = eps_mode::none;
  float eps = 0.0f;
  pow2_rule pow2 = pow2_rule::none;
  dtype store = dtype::fp32;
  bool codes_from_stored = true;
  scale_op x_by = scale_op::divide;
  dtype work = dtype::fp32;
  bool zero_first = false;
  bool zero_subtract_first = false;  // z = round(qmin - min'/s) (compressed-tensors) vs qmin - round(min'/s)
  bool eps_on_stored = false;        // the eps rule applies to the stored scale (after storage rounding)

  constexpr scheme eps_floor(float e) const { scheme r = *this; r.eps_rule = eps_mode::floor; r.eps = e; return r; }
  constexpr scheme eps_zero_to(float e) const { scheme r = *this; r.eps_rule = eps_mode::zero_to_eps; r.eps = e; return r; }
  constexpr scheme scale_multiply() const { scheme r = *this; r.scale_by = scale_op::multiply; return r; }
  constexpr scheme scale_divide() const { scheme r = *this; r.scale_by = scale_op::divide; return r; }
  constexpr scheme x_multiply() const { scheme r = *this; r.x_by = scale_op::multiply; return r; }
  constexpr scheme x_divide() const { scheme r = *this; r.x_by = scale_op::divide; return r; }
  constexpr scheme stored_as(dtype s) const { scheme r = *this; r.store = s; return r; }
  template <class S>  // a format type: stored_as<bf16>() == stored_as(dtype::bf16)
  constexpr scheme stored_as() const { return stored_as(dtype_of<S>); }
  constexpr scheme codes_from_fp32_scale() const { scheme r = *this; r.codes_from_stored = false; return r; }
  constexpr scheme codes_from_stored_scale() const { scheme r = *this; r.codes_from_stored = true; return r; }
  constexpr scheme with_pow2(pow2_rule p) const {
    scheme r = *this;
    r.pow2 = p;
    if (p == pow2_rule::mx_floor || p == pow2_rule::mx_rceil) r.store = dtype::e8m0;
    return r;
  }
  constexpr scheme in_work(dtype w) const { scheme r = *this; r.work = w; return r; }
  template <class W>  // in_work<bf16>() == in_work(dtype::bf16)
  constexpr scheme in_work() const { return in_work(dtype_of<W>); }
  constexpr scheme zero_before_round() const { scheme r = *this; r.zero_first = true; return r; }
  constexpr scheme zero_round_after_subtract() const { scheme r = *this; r.zero_subtract_first = true; return r; }
  constexpr scheme eps_after_storage() const { scheme r = *this; r.eps_on_stored = true; return r; }

  // Code range actually used: [-qmax, qmax] for symmetric_restricted, [qmin, qmax] otherwise.
  QNUM_HD constexpr int code_min() const { return kind == scheme_kind::symmetric_restricted ? -Format::qmax : Format::qmin; }
  QNUM_HD constexpr int code_max() const { return Format::qmax; }
};

template <class F> constexpr scheme<F> symmetric_restricted() {
  static_assert(F::is_integer && F::is_signed, "symmetric_restricted needs a signed integer format");
  scheme<F> s; s.kind = scheme_kind::symmetric_restricted; return s;
}
template <class F> constexpr scheme<F> symmetric_full() {
  static_assert(F::is_integer, "symmetric_full needs an integer format");
  scheme<F> s; s.kind = scheme_kind::symmetric_full; return s;
}
template <class F> constexpr scheme<F> asymmetric() {
  static_assert(F::is_integer, "asymmetric needs an integer format");
  scheme<F> s; s.kind = scheme_kind::asymmetric; return s;
}
template <class F> constexpr scheme<F> float_amax() {
  static_assert(!F::is_integer, "float_amax needs a float element format");
  scheme<F> s; s.kind = scheme_kind::float_amax; return s;
}
template <class F> constexpr scheme<F> te_current() {
  static_assert(!F::is_integer, "te_current needs a float element format");
  scheme<F> s; s.kind = scheme_kind::te_current; s.x_by = scale_op::multiply; return s;
}

// Statistics of one group over its finite elements (NaN and +-Inf are ignored; padding counts as 0).
struct group_stats {
  float amax = 0.0f;  // max |x|
  float min = 0.0f;   // min(x, 0)
  float max = 0.0f;   // max(x, 0)
};

QNUM_HD void accumulate(group_stats& g, float x) {
  if (detail::is_nonfinite(x)) return;
  const float a = detail::abs_bits(x);
  if (a > g.amax) g.amax = a;
  if (x < g.min) g.min = x;
  if (x > g.max) g.max = x;
}
QNUM_HD group_stats merge(group_stats a, const group_stats& b) {
  if (b.amax > a.amax) a.amax = b.amax;
  if (b.min < a.min) a.min = b.min;
  if (b.max > a.max) a.max = b.max;
  return a;
}

namespace detail {

// The fast statistics the device kernels use (gpu::fragment_stats): one instruction per element and statistic.
// Symmetric schemes: amax = fmax(amax, |x|); fmax drops a NaN operand and keeps an infinite one.
// Asymmetric schemes (min_max): min = min.NaN(min, x), max = max.NaN(max, x), which propagate a NaN operand
// (the device's min.NaN.f32 / max.NaN.f32, sm_80 on; one instruction, as fmin/fmax); amax is finished from min
// and max by fast_stats_finish. So the result equals accumulate()'s whenever it is finite, and a non-finite result
// (fast_stats_need_exact) means "recompute with accumulate()": an element was infinite, or, for min_max, NaN.
// A finite min_max result thus also says that the group holds no NaN (the kernels' code_path::unclamped
// relies on it). Host and device call the same functions (the host test pins them).
// Host form of the device's min.f32 (Max false) / max.f32 (Max true): a NaN operand (quiet or signalling;
// std::fmin may return a signalling NaN's NaN) gives the other operand, and -0 orders below +0.
template <bool Max>
QNUM_HD float fast_pick_host(float a, float b) {
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  const bool b_negative = (float_to_bits(b) >> 31) != 0u;
  return ((Max ? b > a : b < a) || (b == a && b_negative != Max)) ? b : a;
}
QNUM_HD float fast_min(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fminf(a, b);
#else
  return fast_pick_host<false>(a, b);
#endif
}
QNUM_HD float fast_max(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmaxf(a, b);
#else
  return fast_pick_host<true>(a, b);
#endif
}
// min.NaN.f32 (Max false) / max.NaN.f32 (Max true): a NaN operand gives the canonical NaN, else fast_min /
// fast_max's value.
template <bool Max>
QNUM_HD float fast_pick_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  if (Max) asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  else asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  if (is_nan(a) || is_nan(b)) return bits_to_float(0x7FFFFFFFu);
  return Max ? fast_max(a, b) : fast_min(a, b);
#endif
}
QNUM_HD float fast_abs(float x) {  // fabsf: the device folds it into the max instruction's operand
#if defined(__CUDA_ARCH__)
  return fabsf(x);
#else
  return abs_bits(x);
#endif
}
QNUM_HD void fast_accumulate(group_stats& st, float x, bool min_max) {
  if (min_max) {
    st.min = fast_pick_nan<false>(st.min, x);
    st.max = fast_pick_nan<true>(st.max, x);
  } else {
    st.amax = fast_max(st.amax, fast_abs(x));
  }
}
// Merge of two fast partial results (the sub-group shuffles).
QNUM_HD group_stats fast_merge(group_stats a, const group_stats& b, bool min_max) {
  if (min_max) {
    a.min = fast_pick_nan<false>(a.min, b.min);
    a.max = fast_pick_nan<true>(a.max, b.max);
    a.amax = fast_pick_nan<true>(a.amax, b.amax);
  } else {
    a.amax = fast_max(a.amax, b.amax);
  }
  return a;
}
QNUM_HD void fast_stats_finish(group_stats& st, bool min_max) {
  if (min_max) st.amax = fast_pick_nan<true>(-st.min, st.max);
}
QNUM_HD bool fast_stats_need_exact(const group_stats& st) { return is_nonfinite(st.amax); }

}  // namespace detail

// Parameters of one group.
struct group_params {
  float scale = 1.0f;        // dequantization scale: the stored scale's value
  float code_scale = 1.0f;   // scale used to decide codes (stored or fp32, per codes_from_stored)
  float inv = 1.0f;          // encode multiplier (x_by == multiply): 1/code_scale, or TE's max/amax
  std::int32_t zero = 0;     // integer zero point (asymmetric), else 0
  std::uint32_t scale_code = 0;  // the stored scale's bits (fp32 bits, bf16/fp16 bits, e8m0 or ue4m3 code)
};

namespace detail {

// Round an fp32 result to the working dtype (torch's bf16/fp16 tensor arithmetic: compute in fp32, round).
QNUM_HD float to_work(float x, dtype w) {
  if (w == dtype::bf16) return from_bf16(to_bf16(x));
  if (w == dtype::fp16) return from_fp16(to_fp16(x));
  return x;
}

QNUM_HD float finite_or_max(float x) {
  if (is_nan(x)) return 1.0f;
  return is_nonfinite(x) ? bits_to_float((float_to_bits(x) & 0x80000000u) | 0x7F7FFFFFu) : x;
}

// Biased fp32 exponent field of |x| (0 for zero and subnormals).
QNUM_HD int biased_exp(float x) { return static_cast<int>((float_to_bits(x) >> 23) & 0xFFu); }

QNUM_HD float pow2_from_biased(int e) {  // 2^(e-127) for e in [0, 254]; e = 0 -> 2^-127
  return e <= 0 ? bits_to_float(0x00400000u) : bits_to_float(static_cast<std::uint32_t>(e) << 23);
}

// The outer (per-tensor) scale as compute_params and dequantization use it: <= 0 or NaN means none (0);
// below FLT_MIN it is raised to FLT_MIN and +Inf lowered to FLT_MAX, so 1/outer is finite.
QNUM_HD float sanitize_outer(float outer) {
  if (!(outer > 0.0f)) return 0.0f;
  if (outer < detail::flt_min) return detail::flt_min;
  return outer > flt_max ? flt_max : outer;
}

// The parameters of a power-of-two scale with E8M0 code `code` (2^(code-127)): scale = code_scale, inv = 1/scale.
QNUM_HD group_params pow2_params(std::uint32_t code) {
  group_params p;
  p.scale_code = code;
  p.scale = pow2_from_biased(static_cast<int>(code));
  p.code_scale = p.scale;
  p.inv = div_rn(1.0f, p.scale);  // 2^(127-e): exact and finite for every code 0..254
  return p;
}

template <class F>
QNUM_HD constexpr int emax_elem() {  // floor(log2(max_value)) of a float element format
  int e = 0;
  float m = F::max_value;
  while (m >= 2.0f) { m *= 0.5f; ++e; }
  return e;
}

// The value of stored scale code `code` in storage st.
QNUM_HD float scale_value(dtype st, std::uint32_t code) {
  switch (st) {
    case dtype::bf16: return from_bf16(static_cast<std::uint16_t>(code));
    case dtype::fp16: return from_fp16(static_cast<std::uint16_t>(code));
    case dtype::ue4m3: return decode<ue4m3>(code);
    case dtype::e8m0: return pow2_from_biased(static_cast<int>(code));
    default: return bits_to_float(code);
  }
}
// Round scale x into storage st: the stored value, its bits in `code`.
QNUM_HD float store_scale(dtype st, float x, std::uint32_t& code) {
  switch (st) {
    case dtype::bf16: code = encode<bf16>(x, rne, satfinite); break;
    case dtype::fp16: code = encode<fp16>(x, rne, satfinite); break;
    case dtype::ue4m3: code = encode<ue4m3>(x, rne, satfinite); break;
    case dtype::e8m0: code = encode<e8m0>(x, rtz, satfinite); break;
    default: code = float_to_bits(x); break;
  }
  return scale_value(st, code);
}

}  // namespace detail

// The group's parameters under scheme s, from its statistics. Exact rules: see the file comment.
// outer: the per-tensor fp32 scale of a two-level scheme (NVFP4), or 0 for none (detail::sanitize_outer:
// <= 0 or NaN is none, subnormal -> FLT_MIN, +Inf -> FLT_MAX). With it the block scale formula result is
// divided by outer before the eps rule and storage (MX floor: amax / outer), the dequantization scale is
// stored * outer and the encode multiplier is (1/outer) / stored (torchao nvfp4_quantize). TE current
// scaling with a storage other than fp32 or with an outer scale stores 1/m [/ outer] like any scale, and
// MX rules with a storage other than e8m0 store their power of two in it (rounded if it must be).
template <class F>
QNUM_HD group_params compute_params(const scheme<F>& s, const group_stats& st, float outer = 0.0f) {
  using namespace detail;
  group_params p;
  const dtype w = s.work;
  const float minp = st.min < 0.0f ? st.min : 0.0f;
  const float maxp = st.max > 0.0f ? st.max : 0.0f;

  outer = sanitize_outer(outer);
  float sc;           // the scale before storage
  bool rules = true;  // eps, ceil_pow2 and the all-zero rule (TE and MX scales are final already)
  if (s.kind == scheme_kind::te_current) {
    // TransformerEngine compute_scale_from_amax: m = max/amax (RN divide); amax 0 -> 1; inf -> FLT_MAX.
    float m = st.amax > 0.0f ? div_rn(F::max_value, st.amax) : 1.0f;
    if (is_nonfinite(m)) m = flt_max;
    if (s.pow2 == pow2_rule::ceil_pow2) m = bits_to_float(float_to_bits(m) & 0xFF800000u);  // truncate mantissa
    if (s.store == dtype::fp32 && outer == 0.0f) {  // TE itself: codes from m, scale_inv = 1/m
      p.inv = m;
      p.scale = div_rn(1.0f, m);
      p.code_scale = p.scale;
      p.scale_code = float_to_bits(p.scale);
      return p;
    }
    // Another storage or an outer scale: 1/m [/ outer] is stored like any scale; codes use its reciprocal.
    sc = div_rn(1.0f, m);
    if (outer > 0.0f) sc = div_rn(sc, outer);
    rules = false;
  } else if (s.pow2 == pow2_rule::mx_floor) {
    // OCP MX / torchao FLOOR: e = floor(log2 amax) - emax_elem, clamped to [-127, 127]; 0xFF never made.
    // With an outer scale, amax / outer (the block scale is then relative to it, as for NVFP4).
    const float a = outer > 0.0f ? div_rn(st.amax, outer) : st.amax;
    int e = biased_exp(a) - 127 - emax_elem<F>();
    e = e < -127 ? -127 : (e > 127 ? 127 : e);
    if (s.store == dtype::e8m0 && outer == 0.0f) return pow2_params(static_cast<std::uint32_t>(e + 127));
    sc = pow2_from_biased(e + 127);  // exact in every storage that can hold it; others round it
    rules = false;
  } else {
    // Denominator of the scale formula.
    float d;
    float num;
    if (s.kind == scheme_kind::symmetric_restricted) {
      d = static_cast<float>(F::qmax);
      num = st.amax;
    } else if (s.kind == scheme_kind::symmetric_full) {
      d = static_cast<float>(F::qmax - F::qmin) * 0.5f;
      num = st.amax;
    } else if (s.kind == scheme_kind::asymmetric) {
      d = static_cast<float>(F::qmax - F::qmin);
      num = to_work(sub_rn(maxp, minp), w);
    } else {
      d = F::max_value;
      num = st.amax;
    }
    sc = s.scale_by == scale_op::multiply ? mul_rn(num, div_rn(1.0f, d)) : div_rn(num, d);
    sc = to_work(sc, w);
    if (outer > 0.0f) sc = div_rn(sc, outer);
    if (s.pow2 == pow2_rule::mx_rceil) {
      // 2^ceil(log2(amax / max_value)), exponent clamped to [-127, 127]; amax 0 -> 2^-127 (code 0).
      std::uint32_t code = encode<e8m0>(sc, raz, satfinite);
      if (code > 254u) code = 254u;
      if (s.store == dtype::e8m0 && outer == 0.0f) return pow2_params(code);
      sc = pow2_from_biased(static_cast<int>(code));
      rules = false;
    }
  }
  // The eps rule on the scale before storage, or (eps_on_stored) on the stored scale below.
  const bool eps_late = rules && s.eps_on_stored && s.eps_rule != eps_mode::none;
  if (rules && !eps_late) {
    if (s.eps_rule == eps_mode::floor) {
      sc = sc < s.eps ? s.eps : sc;
    } else if (s.eps_rule == eps_mode::zero_to_eps) {
      sc = sc == 0.0f ? s.eps : sc;
    }
  }
  sc = finite_or_max(sc);
  if (rules && s.pow2 == pow2_rule::ceil_pow2) {
    // DeepGEMM ceil_to_ue8m0: exponent field + (mantissa != 0), clamped to [1, 254].
    const std::uint32_t u = float_to_bits(sc);
    int e = static_cast<int>((u >> 23) & 0xFFu) + ((u & 0x7FFFFFu) != 0 ? 1 : 0);
    e = e < 1 ? 1 : (e > 254 ? 254 : e);
    sc = bits_to_float(static_cast<std::uint32_t>(e) << 23);
  }
  if (sc == 0.0f && !eps_late) sc = 1.0f;  // all-zero group without an eps rule: defined scale, zero codes
  float stored = store_scale(s.store, sc, p.scale_code);
  if (eps_late && (s.eps_rule == eps_mode::floor ? stored < s.eps : stored == 0.0f)) {
    // The stored scale takes eps (rounded into the storage); codes decided with the fp32 scale use it too.
    stored = store_scale(s.store, finite_or_max(s.eps), p.scale_code);
    sc = stored;
  }
  if (stored == 0.0f) {  // a scale that rounds to zero in its storage: the storage's smallest positive value
    p.scale_code = 1u;   // fp32/bf16/fp16: the smallest subnormal; ue4m3: 2^-9 (e8m0 never reaches 0)
    stored = scale_value(s.store, 1u);
  }
  if (eps_late && sc == 0.0f) sc = stored;  // eps 0 after storage: codes from the fp32 scale use the stored one
  p.scale = stored;
  p.code_scale = s.codes_from_stored ? stored : sc;
  p.inv = finite_or_max(to_work(div_rn(1.0f, p.code_scale), w));
  if (outer > 0.0f) {
    p.inv = finite_or_max(div_rn(div_rn(1.0f, outer), p.code_scale));
    p.scale = finite_or_max(mul_rn(stored, outer));
    p.code_scale = finite_or_max(div_rn(1.0f, p.inv));
  }
  if (s.kind == scheme_kind::asymmetric) {
    const float zs = s.codes_from_stored ? p.code_scale : sc;
    const float v = to_work(div_rn(minp, zs), w);
    float z;
    if (s.zero_subtract_first) {
      z = static_cast<float>(round_to_int(to_work(sub_rn(static_cast<float>(F::qmin), v < -1e9f ? -1e9f : v), w)));
    } else {
      z = static_cast<float>(F::qmin - round_to_int(v < -1e9f ? -1e9f : v));
    }
    z = z < static_cast<float>(F::qmin) ? static_cast<float>(F::qmin) : (z > static_cast<float>(F::qmax) ? static_cast<float>(F::qmax) : z);
    p.zero = static_cast<std::int32_t>(z);
  }
  return p;
}

QNUM_END_NAMESPACE
