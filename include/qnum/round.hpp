// qnum/round.hpp: rounding and saturation policies as tags, and the exact integer rounding core.
//
// All rounding in qnum is decided on integer bit patterns, never through the floating-point
// environment, so results do not depend on fesetround, -ffast-math or FMA contraction, and host and
// device agree bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/detail/fp_rn.hpp"

QNUM_BEGIN_NAMESPACE

// Round to nearest, ties to even (IEEE default; torch.round, rintf, cvt.rn).
struct round_nearest_even {};
// Truncate the magnitude (cvt.rz). For E8M0 scales of non-negative values: floor in log2.
struct round_toward_zero {};
// Round the magnitude up whenever any discarded bit is set. For the non-negative inputs of scale
// formats this is rounding toward +Inf (cvt.rp, the MX "rceil" rule).
struct round_away_from_zero {};
// Stochastic rounding with caller-supplied random bits. Let F be the discarded fraction of the
// magnitude, in units of the target's last place, truncated to 32 bits (F = floor(frac * 2^32)).
// The magnitude rounds up iff F + random >= 2^32, so P(up) = F / 2^32 for uniform random bits and
// the same (x, random) gives the same result everywhere.
struct round_stochastic {
  std::uint32_t random;
};

inline constexpr round_nearest_even rne{};
inline constexpr round_toward_zero rtz{};
inline constexpr round_away_from_zero raz{};
QNUM_HD constexpr round_stochastic stochastic(std::uint32_t random_bits) { return {random_bits}; }

// Rounding of a whole call (a tensor, a gradient step, an optimizer step): nearest even, or stochastic
// with element i of the call taking random bits from the Philox stream of `seed` (random.hpp; each entry
// point documents its index). Per element this is rne or stochastic(random_bits(seed, i)).
enum class rounding_mode : int { nearest_even, stochastic };
struct rounding {
  rounding_mode mode = rounding_mode::nearest_even;
  std::uint64_t seed = 0;
};
QNUM_HD constexpr rounding nearest_even() { return {}; }
QNUM_HD constexpr rounding stochastic_seed(std::uint64_t seed) { return {rounding_mode::stochastic, seed}; }

// Overflow policy for float formats. saturate_finite: overflow and +-Inf give +-max finite
// (cvt.satfinite). no_saturate: overflow gives +-Inf where the format has Inf, else NaN.
struct saturate_finite {};
struct no_saturate {};
inline constexpr saturate_finite satfinite{};
inline constexpr no_saturate nosat{};

namespace detail {

// round(sig / 2^shift) under the rounding mode, for sig < 2^25 and shift >= 0.
template <class Round>
QNUM_HD std::uint32_t round_shift(std::uint32_t sig, int shift, Round mode) {
  if (shift <= 0) return sig;
  std::uint32_t q;
  std::uint64_t frac;  // discarded part as a 0.64 fixed-point fraction of one unit of q
  if (shift >= 64) {
    q = 0;
    frac = sig != 0 ? 1u : 0u;  // sticky: far below one half
  } else if (shift >= 32) {
    q = 0;
    frac = static_cast<std::uint64_t>(sig) << (64 - shift);  // exact: sig < 2^25
  } else {
    q = sig >> shift;
    frac = static_cast<std::uint64_t>(sig & ((1u << shift) - 1u)) << (64 - shift);
  }
  constexpr std::uint64_t half = std::uint64_t{1} << 63;
  bool up;
  if constexpr (std::is_same_v<Round, round_nearest_even>) {
    up = frac > half || (frac == half && (q & 1u));
  } else if constexpr (std::is_same_v<Round, round_toward_zero>) {
    up = false;
    (void)frac;
  } else if constexpr (std::is_same_v<Round, round_away_from_zero>) {
    up = frac != 0;
  } else {
    static_assert(std::is_same_v<Round, round_stochastic>, "unknown rounding mode");
    const std::uint64_t f32 = frac >> 32;
    up = f32 + mode.random >= (std::uint64_t{1} << 32);
  }
  (void)mode;
  return q + (up ? 1u : 0u);
}

// Split a finite float's magnitude into (sig, exp) with |x| = sig * 2^(exp - 23), sig < 2^24.
struct unpacked {
  std::uint32_t sig;
  int exp;
};
QNUM_HD unpacked unpack_magnitude(std::uint32_t a) {
  const std::uint32_t ef = a >> 23;
  const std::uint32_t mf = a & 0x7FFFFFu;
  return ef != 0 ? unpacked{mf | 0x800000u, static_cast<int>(ef) - 127} : unpacked{mf, -126};
}

}  // namespace detail

// Round a finite float to an integer under the mode. Exact for |x| < 2^31; larger magnitudes and
// NaN are the caller's to exclude (group quantization clamps to the code range first, which commutes
// with rounding because the bounds are integers).
template <class Round = round_nearest_even>
QNUM_HD std::int32_t round_to_int(float x, Round mode = {}) {
#if QNUM_IS_DEVICE_PASS()
  // Nearest even within the int32 range: cvt.rni.s32.f32 (one instruction; the same integer). NaN and larger
  // magnitudes take the bit path below, whose results they keep.
  if constexpr (std::is_same_v<Round, round_nearest_even>) {
    if (x > -2147483648.0f && x < 2147483648.0f) return __float2int_rn(x);
  }
#endif
  const std::uint32_t u = detail::float_to_bits(x);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const detail::unpacked m = detail::unpack_magnitude(a);
  std::uint32_t q;
  if (m.exp >= 23) {
    q = m.exp >= 31 ? 0x7FFFFFFFu : (m.sig << (m.exp - 23));
  } else {
    q = detail::round_shift(m.sig, 23 - m.exp, mode);
  }
  const std::int32_t v = static_cast<std::int32_t>(q);
  return (u >> 31) ? -v : v;
}

namespace detail {
// cvt.rni.s32.f32: round to nearest even, saturate to the int32 range, NaN -> 0 (the instruction on the
// device, its exact emulation on the host): the one nearest-even float-to-int rounding of the device paths
// (group codes, INT8 gradient codes) and of their host mirrors.
QNUM_HD std::int32_t f2i_rn_sat(float v) {
#if QNUM_IS_DEVICE_PASS()
  return __float2int_rn(v);
#else
  if (is_nan(v)) return 0;
  if (v >= 2147483648.0f) return 2147483647;
  if (v <= -2147483648.0f) return -2147483647 - 1;
  return round_to_int(v, round_nearest_even{});
#endif
}
// cvt.rni.s8.f32: round to nearest even, saturate to [-128, 127], NaN -> 0 (PTX clamps a float-to-integer
// conversion to the destination's range and converts NaN to 0): f2i_rn_sat clamped to [-128, 127], in one
// instruction on the device (F2I.S8) where the clamp would take two or three.
QNUM_HD std::int32_t f2i8_rn_sat(float v) {
#if QNUM_IS_DEVICE_PASS()
  std::int32_t r;
  asm("{ .reg .s8 t; cvt.rni.s8.f32 t, %1; cvt.s32.s8 %0, t; }" : "=r"(r) : "f"(v));  // the second cvt folds away
  return r;
#else
  const std::int32_t q = f2i_rn_sat(v);
  return q < -128 ? -128 : (q > 127 ? 127 : q);
#endif
}
}  // namespace detail

// Single fp32 operations rounded to nearest even and never fused into an FMA, on host and device (also under
// -ffp-contract=fast or -use_fast_math): for reference loops that must give the same bits everywhere.
using detail::add_rn;
using detail::div_rn;
using detail::mul_rn;
using detail::sub_rn;

QNUM_END_NAMESPACE
