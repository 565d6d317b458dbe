// qnum/format.hpp: one empty descriptor per number format, every constant derived from its bit layout.
//
// Every descriptor has the same static members, so one scale formula serves integer and float
// formats alike:
//   name, bits, is_signed, is_integer, exponent_bits, mantissa_bits, bias,
//   has_inf, has_nan, has_negative_zero, has_zero, nan_code, inf_code, max_code,
//   qmin, qmax, max_value, min_value, min_normal, min_subnormal, code_type.
// `*_code` values are positive codes (sign bit clear). For integer formats qmin/qmax are the code
// range and max_value == qmax. For float element formats qmin/qmax are -max_value/+max_value (all
// are integers). E8M0 is a scale-only format: its qmin/qmax are the exponent range [-127, 127].
// docs/formats.md is the table; tests/test_format.cpp holds the two to each other.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE

// How a float format spends its top exponent codes.
enum class special_encoding : int {
  ieee,           // exponent all ones: mantissa 0 is +-Inf, any other mantissa is NaN (E5M2, fp16, bf16)
  nan_all_ones,   // no Inf; only S.1111.111 is NaN, the rest of the top binade is finite (E4M3 "FN")
  finite_only,    // every code is a finite number, no Inf, no NaN (E2M1)
  exponent_only,  // E8M0: 2^(e - bias), no sign, no zero, code 0xFF is NaN
};

namespace detail {

QNUM_HD constexpr float pow2f(int e) {
  float r = 1.0f;
  if (e >= 0) {
    for (int i = 0; i < e; ++i) r *= 2.0f;
  } else {
    for (int i = 0; i < -e; ++i) r *= 0.5f;
  }
  return r;
}

template <int Bits, bool Signed>
struct int_format_base {
  static_assert(Bits >= 2 && Bits <= 8, "integer element formats are 2..8 bits");
  using code_type = std::uint8_t;
  static constexpr int bits = Bits;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = true;
  static constexpr int exponent_bits = 0;
  static constexpr int mantissa_bits = Signed ? Bits - 1 : Bits;
  static constexpr int bias = 0;
  static constexpr special_encoding special = special_encoding::finite_only;
  static constexpr bool has_inf = false;
  static constexpr bool has_nan = false;
  static constexpr bool has_negative_zero = false;
  static constexpr bool has_zero = true;
  static constexpr std::uint32_t nan_code = 0;
  static constexpr std::uint32_t inf_code = 0;
  static constexpr int qmin = Signed ? -(1 << (Bits - 1)) : 0;
  static constexpr int qmax = Signed ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  // Code of qmax in the format's storage (two's complement for signed formats).
  static constexpr std::uint32_t max_code = static_cast<std::uint32_t>(qmax);
  static constexpr float max_value = static_cast<float>(qmax);
  static constexpr float min_value = static_cast<float>(qmin);
  static constexpr float min_normal = 1.0f;
  static constexpr float min_subnormal = 1.0f;
};

template <int E, int M, int Bias, bool Signed, special_encoding Special>
struct float_format_base {
  static_assert(E >= 1 && E <= 8 && M >= 0 && M <= 10, "unsupported float layout");
  static constexpr int bits = E + M + (Signed ? 1 : 0);
  using code_type = std::conditional_t<(bits <= 8), std::uint8_t, std::uint16_t>;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = false;
  static constexpr int exponent_bits = E;
  static constexpr int mantissa_bits = M;
  static constexpr int bias = Bias;
  static constexpr special_encoding special = Special;
  static constexpr bool has_inf = Special == special_encoding::ieee;
  static constexpr bool has_nan = Special != special_encoding::finite_only;
  static constexpr bool has_negative_zero = Signed && Special != special_encoding::exponent_only;
  static constexpr bool has_zero = Special != special_encoding::exponent_only;
  static constexpr std::uint32_t all_ones = (1u << (E + M)) - 1u;  // magnitude bits all set
  static constexpr std::uint32_t inf_code = has_inf ? (((1u << E) - 1u) << M) : 0u;
  // The NaN qnum writes (positive; the quiet bit set for IEEE layouts).
  static constexpr std::uint32_t nan_code =
      Special == special_encoding::ieee
          ? (inf_code | (M > 0 ? (1u << (M - 1)) : 0u) | (M == 2 ? 1u : 0u))
          : (has_nan ? all_ones : 0u);
  static constexpr std::uint32_t max_code =
      Special == special_encoding::ieee ? inf_code - 1u
      : Special == special_encoding::nan_all_ones ? all_ones - 1u
      : Special == special_encoding::exponent_only ? all_ones - 1u
                                                   : all_ones;
  static constexpr int max_exponent_field = static_cast<int>(max_code >> M);
  static constexpr float max_value =
      pow2f(max_exponent_field - Bias) *
      (1.0f + static_cast<float>(max_code & ((1u << M) - 1u)) * pow2f(-M));
  static constexpr float min_value = Signed ? -max_value
                                     : Special == special_encoding::exponent_only ? pow2f(-Bias)
                                                                                  : 0.0f;
  static constexpr float min_normal = pow2f(Special == special_encoding::exponent_only ? -Bias : 1 - Bias);
  static constexpr float min_subnormal =
      Special == special_encoding::exponent_only ? pow2f(-Bias) : pow2f(1 - Bias - M);
  // Saturates at 2^31 - 1 for bf16, whose range exceeds int.
  static constexpr int qmax = Special == special_encoding::exponent_only ? 254 - Bias
                              : max_value >= 2147483648.0f           ? 2147483647
                                                                     : static_cast<int>(max_value);
  static constexpr int qmin = Special == special_encoding::exponent_only ? -Bias
                              : Signed                                   ? -qmax
                                                                         : 0;
};

}  // namespace detail

// Integer element formats. Codes are two's complement in the low `bits` bits.
struct qint4 : detail::int_format_base<4, true> { static constexpr const char* name = "int4"; };
struct quint4 : detail::int_format_base<4, false> { static constexpr const char* name = "uint4"; };
struct qint8 : detail::int_format_base<8, true> { static constexpr const char* name = "int8"; };
struct quint8 : detail::int_format_base<8, false> { static constexpr const char* name = "uint8"; };

// OCP FP8 E4M3 ("FN"): bias 7, no Inf, NaN = S.1111.111, max 448 (0x7E).
struct fp8_e4m3 : detail::float_format_base<4, 3, 7, true, special_encoding::nan_all_ones> {
  static constexpr const char* name = "fp8_e4m3";
};
// OCP FP8 E5M2: IEEE-like, bias 15, Inf 0x7C, NaN 0x7D..0x7F (qnum writes 0x7F), max 57344 (0x7B).
struct fp8_e5m2 : detail::float_format_base<5, 2, 15, true, special_encoding::ieee> {
  static constexpr const char* name = "fp8_e5m2";
};
// OCP FP4 E2M1: bias 1, values 0, 0.5, 1, 1.5, 2, 3, 4, 6, no Inf, no NaN.
struct fp4_e2m1 : detail::float_format_base<2, 1, 1, true, special_encoding::finite_only> {
  static constexpr const char* name = "fp4_e2m1";
};
// Unsigned E4M3 (NVFP4 block scale): the non-negative half of fp8_e4m3, NaN 0x7F, max 448.
struct ue4m3 : detail::float_format_base<4, 3, 7, false, special_encoding::nan_all_ones> {
  static constexpr const char* name = "ue4m3";
};
// OCP MX E8M0 scale: value 2^(e-127) for e in 0..254, 0xFF NaN, no sign, no zero.
struct e8m0 : detail::float_format_base<8, 0, 127, false, special_encoding::exponent_only> {
  static constexpr const char* name = "e8m0";
};
// bfloat16 and IEEE binary16, as scale or tensor storage formats.
struct bf16 : detail::float_format_base<8, 7, 127, true, special_encoding::ieee> {
  static constexpr const char* name = "bf16";
};
struct fp16 : detail::float_format_base<5, 10, 15, true, special_encoding::ieee> {
  static constexpr const char* name = "fp16";
};

template <class Format>
using code_t = typename Format::code_type;

// The storage type of a float tensor, scale or working precision, named as the format types are. A value
// of dtype is the run-time form of a format type (dtype_of<bf16> == dtype::bf16); each entry point says
// which values it takes (tensors and working precision: fp32, bf16, fp16; scales: all five).
enum class dtype : int { fp32, bf16, fp16, e8m0, ue4m3 };

template <class T>
struct dtype_of_t;
template <>
struct dtype_of_t<float> { static constexpr dtype value = dtype::fp32; };
template <>
struct dtype_of_t<bf16> { static constexpr dtype value = dtype::bf16; };
template <>
struct dtype_of_t<fp16> { static constexpr dtype value = dtype::fp16; };
template <>
struct dtype_of_t<e8m0> { static constexpr dtype value = dtype::e8m0; };
template <>
struct dtype_of_t<ue4m3> { static constexpr dtype value = dtype::ue4m3; };
// dtype_of<float> (fp32), dtype_of<bf16>, dtype_of<fp16>, dtype_of<e8m0>, dtype_of<ue4m3>.
template <class T>
inline constexpr dtype dtype_of = dtype_of_t<T>::value;

// Bytes of one value: 4 (fp32), 2 (bf16, fp16), 1 (e8m0, ue4m3).
QNUM_HD constexpr int dtype_bytes(dtype t) {
  return t == dtype::fp32 ? 4 : (t == dtype::bf16 || t == dtype::fp16) ? 2 : 1;
}
// The dtypes a float tensor (a view, a dequantized output, a working precision) may have: fp32, bf16, fp16.
QNUM_HD constexpr bool is_tensor_dtype(dtype t) { return t == dtype::fp32 || t == dtype::bf16 || t == dtype::fp16; }
QNUM_HD constexpr const char* to_string(dtype t) {
  return t == dtype::fp32 ? "fp32" : t == dtype::bf16 ? "bf16" : t == dtype::fp16 ? "fp16" : t == dtype::e8m0 ? "e8m0" : "ue4m3";
}

QNUM_END_NAMESPACE
