// qnum/codec.hpp: exact float32 <-> element/scale format conversion, one definition for host and device.
//
//   code_t<F> encode<F>(float x, Round = rne, Saturation = satfinite)
//   float     decode<F>(code_t<F> code)
//   int       quantize_int<F>(float x, Round = rne)      (integer formats: the clamped integer value)
//   std::uint16_t to_bf16(float) / to_fp16(float)        (IEEE RNE, overflow to Inf: torch's .to())
//
// Float formats (fp8_e4m3, fp8_e5m2, fp4_e2m1, ue4m3, bf16, fp16): the mode rounds the magnitude
// at the target's last place, subnormals included; |x| at or below half the smallest subnormal gives
// a signed zero under rne. Overflow is decided after rounding, as the hardware does: E4M3 rounds 464
// to 448 and overflows above it, E5M2 overflows at 61440. Overflow and +-Inf:
//   satfinite -> +-max finite; nosat -> +-Inf (E5M2, bf16, fp16) or the NaN of that sign (E4M3 0x7F/0xFF).
// NaN -> the format's NaN code (positive: E4M3/UE4M3 0x7F, E5M2 0x7F, bf16 0x7FC0, fp16 0x7E00).
// fp4_e2m1 has no NaN or Inf: it always saturates and NaN gives +6 (0x7), as cvt.rn.satfinite.e2m1x2.
// ue4m3 (unsigned): a negative non-zero input gives 0 under satfinite and NaN under nosat; -0 gives 0.
// e8m0: the sign is ignored and 0 gives 0x00 (2^-127), as CUDA's __nv_cvt_float_to_e8m0; rne rounds
// the significand at 1 bit (1.5 * 2^k -> 2^(k+1)) as ml_dtypes does; rtz is floor(log2 |x|) and raz is
// ceil(log2 |x|); values below 2^-127 give 0x00; overflow gives 0xFE (satfinite) or 0xFF (nosat).
// Integer formats (qint4, quint4, qint8, quint8): clamp to [qmin, qmax], then round (the two commute);
// NaN gives 0; the saturation tag is accepted and ignored (integers always saturate). Codes are two's
// complement in the low `bits` bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/format.hpp"
#include "qnum/round.hpp"

QNUM_BEGIN_NAMESPACE

namespace detail {

template <class F, class Round, class Sat>
QNUM_HD std::uint32_t encode_float_format(float x, Round mode, Sat) {
  constexpr bool sat = std::is_same_v<Sat, saturate_finite>;
  static_assert(sat || std::is_same_v<Sat, no_saturate>, "saturation must be satfinite or nosat");
  constexpr int M = F::mantissa_bits;
  constexpr std::uint32_t sign_bit = F::is_signed ? (1u << (F::bits - 1)) : 0u;
  constexpr bool exp_only = F::special == special_encoding::exponent_only;

  const std::uint32_t u = float_to_bits(x);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const bool negative = (u >> 31) != 0 && !exp_only;

  if (a > 0x7F800000u) return F::has_nan ? F::nan_code : F::max_code;  // NaN
  if (negative && !F::is_signed) {
    if (a == 0) return 0u;                        // -0 -> +0
    return sat ? 0u : F::nan_code;                // below the range of an unsigned format
  }
  const std::uint32_t sign = negative ? sign_bit : 0u;
  std::uint32_t overflow_code;
  if constexpr (sat || F::special == special_encoding::finite_only) {
    overflow_code = sign | F::max_code;
  } else if constexpr (F::has_inf) {
    overflow_code = sign | F::inf_code;
  } else {
    overflow_code = sign | F::nan_code;  // E4M3 nosat keeps the sign: 0x7F / 0xFF, as CUDA does
  }
  if (a == 0x7F800000u) return overflow_code;  // +-Inf
  if (a == 0) return exp_only ? 0u : sign;

  unpacked m = unpack_magnitude(a);
  int shift;
  std::uint32_t base;
  if constexpr (exp_only) {
    // No subnormals, no zero: normalise float32 subnormals, clamp below 2^(-bias) to code 0.
    while (m.sig < 0x800000u) {
      m.sig <<= 1;
      --m.exp;
    }
    if (m.exp < -F::bias) return 0u;
    shift = 23;
    base = static_cast<std::uint32_t>(m.exp + F::bias - 1);
  } else {
    constexpr int e_min = 1 - F::bias;  // exponent of the smallest normal
    if (m.exp >= e_min) {
      shift = 23 - M;
      base = static_cast<std::uint32_t>(m.exp + F::bias - 1) << M;
    } else {
      shift = 23 - M + (e_min - m.exp);
      base = 0;
    }
  }
  // q counts units of the target's last place; for normals q in [2^M, 2^(M+1)] and a carry into
  // the next binade lands on the right code because base + q adds the implicit bit.
  const std::uint32_t mag = base + round_shift(m.sig, shift, mode);
  if (mag > F::max_code) return overflow_code;
  return sign | mag;
}

template <class F>
QNUM_HD float decode_float_format(std::uint32_t code) {
  constexpr int M = F::mantissa_bits;
  constexpr std::uint32_t mag_mask = F::all_ones;
  if constexpr (F::special == special_encoding::exponent_only) {
    const std::uint32_t e = code & mag_mask;
    if (e == mag_mask) return bits_to_float(0x7FC00000u);
    return e == 0 ? bits_to_float(0x00400000u) : bits_to_float(e << 23);  // 2^(e-127)
  } else {
    const std::uint32_t sign = F::is_signed ? ((code >> (F::bits - 1)) & 1u) << 31 : 0u;
    const std::uint32_t mag = code & mag_mask;
    const std::uint32_t e = mag >> M;
    const std::uint32_t man = mag & ((1u << M) - 1u);
    if constexpr (F::special == special_encoding::ieee) {
      if (e == (1u << F::exponent_bits) - 1u) {
        return bits_to_float(sign | 0x7F800000u | (man != 0 ? 0x00400000u | (man << (23 - M)) : 0u));
      }
    } else if constexpr (F::special == special_encoding::nan_all_ones) {
      if (mag == mag_mask) return bits_to_float(sign | 0x7FC00000u);
    }
    if (e == 0) {
      if constexpr (F::bias == 127) {
        return bits_to_float(sign | (man << (23 - M)));  // bf16 subnormals are float32 subnormals
      } else {
        // man * 2^(1 - bias - M): an exact int->float conversion times a power of two, normal in fp32.
        constexpr float sub_ulp = pow2f(1 - F::bias - M);
        const float v = static_cast<float>(man) * sub_ulp;
        return bits_to_float(float_to_bits(v) | sign);
      }
    }
    return bits_to_float(sign | ((e - F::bias + 127u) << 23) | (man << (23 - M)));
  }
}

}  // namespace detail

// The integer value of quantizing x to integer format F: clamp(round(x), qmin, qmax); NaN -> 0.
template <class F, class Round = round_nearest_even>
QNUM_HD int quantize_int(float x, Round mode = {}) {
  static_assert(F::is_integer, "quantize_int is for integer formats");
  if (detail::is_nan(x)) return 0;
  constexpr float lo = static_cast<float>(F::qmin);
  constexpr float hi = static_cast<float>(F::qmax);
  const float c = x < lo ? lo : (x > hi ? hi : x);
  return round_to_int(c, mode);
}

// Encode x into format F's code (see the file comment for every rule).
template <class F, class Round = round_nearest_even, class Sat = saturate_finite>
QNUM_HD code_t<F> encode(float x, Round mode = {}, Sat sat = {}) {
  if constexpr (F::is_integer) {
    (void)sat;
    constexpr std::uint32_t mask = (1u << F::bits) - 1u;
    return static_cast<code_t<F>>(static_cast<std::uint32_t>(quantize_int<F>(x, mode)) & mask);
  } else {
    return static_cast<code_t<F>>(detail::encode_float_format<F>(x, mode, sat));
  }
}

// The integer value stored in an integer format's code (sign-extends signed formats).
template <class F>
QNUM_HD int code_to_int(std::uint32_t code) {
  static_assert(F::is_integer, "code_to_int is for integer formats");
  constexpr std::uint32_t mask = (1u << F::bits) - 1u;
  const int v = static_cast<int>(code & mask);
  if constexpr (F::is_signed) {
    constexpr int half = 1 << (F::bits - 1);
    return (v ^ half) - half;  // two's complement sign extension without a branch
  } else {
    return v;
  }
}

// The exact float value of code (bits outside the format are ignored). NaN codes give a quiet NaN
// of the code's sign (E5M2, bf16, fp16 keep their payload's top bits).
template <class F>
QNUM_HD float decode(std::uint32_t code) {
  if constexpr (F::is_integer) {
    return static_cast<float>(code_to_int<F>(code));
  } else {
    return detail::decode_float_format<F>(code);
  }
}

namespace detail {
// The bf16 bits of x rounded to nearest even on the bit pattern: encode<bf16>(x, rne, nosat) for every x but
// NaN (bf16 has fp32's exponent range, so subnormals round alike; an overflow carries into the exponent and
// gives Inf). The canonical NaN 0x7FC00000 gives 0x7FC0, as to_bf16 does; other NaNs are the caller's.
QNUM_HD std::uint16_t bf16_bits_rn(float x) {
  const std::uint32_t u = float_to_bits(x);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
}  // namespace detail

// float -> bfloat16 / binary16 bits, round to nearest even, overflow to Inf: what torch's .to() does.
QNUM_HD std::uint16_t to_bf16(float x) { return detail::is_nan(x) ? std::uint16_t{0x7FC0} : detail::bf16_bits_rn(x); }
QNUM_HD std::uint16_t to_fp16(float x) { return encode<fp16>(x, rne, nosat); }
QNUM_HD float from_bf16(std::uint16_t h) { return detail::bits_to_float(static_cast<std::uint32_t>(h) << 16); }
QNUM_HD float from_fp16(std::uint16_t h) { return decode<fp16>(h); }

QNUM_END_NAMESPACE
