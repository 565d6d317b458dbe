// qnum/detail/bits.hpp: float <-> integer bit casts that work in host and device code.
#pragma once

#include <cstdint>
#include <cstring>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

// The IEEE-754 binary32 bit pattern of x.
QNUM_HD std::uint32_t float_to_bits(float x) {
#if QNUM_IS_DEVICE_PASS()
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

// The float whose IEEE-754 binary32 bit pattern is u.
QNUM_HD float bits_to_float(std::uint32_t u) {
#if QNUM_IS_DEVICE_PASS()
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// |x| computed on the bit pattern (no FP environment, vectorises, keeps NaN payloads).
QNUM_HD float abs_bits(float x) { return bits_to_float(float_to_bits(x) & 0x7FFFFFFFu); }

// True if x is NaN or +-Inf, decided on the bit pattern (immune to -ffast-math).
// On the device one compare each (FSETP; NaN compares unordered), on the host on the bits (immune to
// -ffast-math's finite-math assumptions). The same answer for every input.
QNUM_HD bool is_nonfinite(float x) {
#if QNUM_IS_DEVICE_PASS()
  return !(fabsf(x) <= 3.40282347e38f);
#else
  return (float_to_bits(x) & 0x7F800000u) == 0x7F800000u;
#endif
}
// The same test on magnitude bits m = float_to_bits(x) & 0x7FFFFFFF, which order as the magnitudes do: the largest
// of several elements' m is nonfinite exactly when one of them is (one compare for a chunk).
QNUM_HD constexpr bool is_nonfinite_magnitude(std::uint32_t m) { return m >= 0x7F800000u; }
QNUM_HD bool is_nan(float x) {
#if QNUM_IS_DEVICE_PASS()
  return x != x;
#else
  return (float_to_bits(x) & 0x7FFFFFFFu) > 0x7F800000u;
#endif
}

// The canonical quiet NaN qnum writes for every NaN fp32 result: 0x7FC00000 (positive, quiet bit only).
// Hosts and GPUs disagree on the NaN an operation returns (x86 keeps the operand's payload and sign, NVIDIA
// GPUs return 0x7FFFFFFF), so every dequantized output passes through canonical_nan: same bits everywhere.
constexpr std::uint32_t canonical_nan_bits = 0x7FC00000u;
QNUM_HD float canonical_nan(float x) { return is_nan(x) ? bits_to_float(canonical_nan_bits) : x; }

// Little-endian 16-bit fields of byte layouts (GGUF block scales), and whether fp16 bits are +-Inf.
QNUM_HD void put_u16(std::uint8_t* p, std::uint16_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(p, &v, sizeof v);  // one unaligned store where the compiler keeps two byte stores apart
#else
  p[0] = static_cast<std::uint8_t>(v & 0xFF);
  p[1] = static_cast<std::uint8_t>(v >> 8);
#endif
}
QNUM_HD std::uint16_t get_u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
QNUM_HD bool fp16_is_inf(std::uint16_t h) { return (h & 0x7FFFu) == 0x7C00u; }

template <class T>
QNUM_HD constexpr T min_of(T a, T b) { return b < a ? b : a; }
template <class T>
QNUM_HD constexpr T max_of(T a, T b) { return a < b ? b : a; }

}  // namespace detail
QNUM_END_NAMESPACE
