// qnum/detail/fp_rn.hpp: single IEEE fp32 operations that are never fused (no FMA contraction) on
// host or device, for formulas that are defined as separately rounded steps.
#pragma once

#include <cmath>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

// The largest finite float (FLT_MAX), usable in device code.
constexpr float flt_max = 3.40282346638528859812e+38f;
// The smallest normal float (FLT_MIN), usable in device code.
constexpr float flt_min = 1.17549435082228750797e-38f;

// An optimisation barrier on the host: the compiler must materialise x as a rounded fp32 value, so
// it cannot fuse the operation that produced x with the one that consumes it (-ffp-contract=fast).
QNUM_HD float fp_barrier(float x) {
#if !QNUM_IS_DEVICE_PASS() && (defined(__GNUC__) || defined(__clang__))
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(x));
#elif defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile float v = x;
  x = v;
#endif
#endif
  return x;
}

// fl(a * b), fl(a + b), fl(a - b), fl(a / b), fl(sqrt(a)): round to nearest even, never contracted,
// IEEE-correct on the device even under -use_fast_math (__f*_rn intrinsics).
QNUM_HD float mul_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fmul_rn(a, b);
#else
  return fp_barrier(a * b);
#endif
}
QNUM_HD float add_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fadd_rn(a, b);
#else
  return fp_barrier(a + b);
#endif
}
QNUM_HD float sub_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fsub_rn(a, b);
#else
  return fp_barrier(a - b);
#endif
}
QNUM_HD float div_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fdiv_rn(a, b);
#else
  return fp_barrier(a / b);
#endif
}
QNUM_HD float sqrt_rn(float a) {
#if QNUM_IS_DEVICE_PASS()
  return __fsqrt_rn(a);
#else
  return fp_barrier(std::sqrt(a));
#endif
}

QNUM_HD float fma_rn(float a, float b, float c) {  // fl(a * b + c), one rounding
#if QNUM_IS_DEVICE_PASS()
  return __fmaf_rn(a, b, c);
#else
  return fp_barrier(std::fma(a, b, c));
#endif
}

// Division of many x by one divisor b (a group's code scale): y = RN(1/b) once, then per element
// q0 = RN(x * y), e = b * q0 - x (exact, one FMA), e clamped to +-FLT_MAX and q = RN(q0 - e * y): five
// instructions on the device instead of __fdiv_rn's ten (reciprocal, range check, five FMAs, branch). Markstein's correction; where
// 2^-64 <= |b| <= 2^64 (`fast`) it gives the code div_rn(x, b) gives, for every x:
//   - the same bits whenever |x| >= 2^-100 and x / b does not overflow;
//   - otherwise |x / b| < 2^-36 with the same sign (a code of zero in every format: the smallest nonzero code
//     is 2^-16, E5M2's smallest subnormal, or 1 for integers), or both at least 2^127 with the same sign
//     (both saturate: +-Inf where x / b or x * y overflows), or both NaN (x NaN).
// Outside that range of b it is div_rn. The same operations on host and device (all correctly rounded), so
// tests/test_divide.cpp checks the definition on the CPU and tests/gpu/test_divide_device.cu on a GPU.
// The divisor's fast range, [divisor_fast_min, divisor_fast_max] in magnitude, and the largest |x * y| that
// divide_bounded serves (bounded_quotients); the host lanes test the same values for a batch of groups.
constexpr float divisor_fast_min = 0x1p-64f;
constexpr float divisor_fast_max = 0x1p64f;
constexpr float bounded_quotient_max = 0x1p126f;
struct divisor {
  float b = 1.0f;
  float y = 1.0f;
  bool fast = false;
};
// make_divisor(b) with y = div_rn(1.0f, b) computed elsewhere (by another thread of a group, say).
QNUM_HD divisor make_divisor_from(float b, float y) {
  divisor d;
  d.b = b;
  d.y = y;
  const float ab = b < 0.0f ? -b : b;
  d.fast = ab >= divisor_fast_min && ab <= divisor_fast_max;
  return d;
}
QNUM_HD divisor make_divisor(float b) { return make_divisor_from(b, div_rn(1.0f, b)); }
// divide() for a divisor known to be `fast` (a caller that tests d.fast once for many elements).
QNUM_HD float divide_fast(const divisor& d, float x) {
  const float q0 = mul_rn(x, d.y);
  float e = fma_rn(d.b, q0, -x);
  // Clamped to +-FLT_MAX: where q0 is +-Inf (x infinite, or x * y overflowed) e is NaN or infinite, and the
  // clamp keeps q = q0 instead of Inf - Inf.
#if QNUM_IS_DEVICE_PASS()
  e = fmaxf(fminf(e, flt_max), -flt_max);
#else
  e = std::fmax(std::fmin(e, flt_max), -flt_max);
#endif
  return fma_rn(-e, d.y, q0);  // this sign convention keeps -0 / b == -0
}
QNUM_HD float divide(const divisor& d, float x) { return d.fast ? divide_fast(d, x) : div_rn(x, d.b); }
// Whether divide_bounded serves every x with |x| <= bound (or NaN): a fast divisor and |x * y| <= 2^126, so that
// x * y and the residual are finite and divide_fast's clamp cannot act.
QNUM_HD bool bounded_quotients(const divisor& d, float bound) {
  const float ay = d.y < 0.0f ? -d.y : d.y;
  return d.fast && bound <= flt_max && mul_rn(bound, ay) <= bounded_quotient_max;
}
// divide_fast(d, x) for |x| within a bound that bounded_quotients(d, bound) accepts (a NaN x gives NaN, as
// divide_fast): the same bits without the clamp, two instructions fewer.
QNUM_HD float divide_bounded(const divisor& d, float x) {
  const float q0 = mul_rn(x, d.y);
  return fma_rn(-fma_rn(d.b, q0, -x), d.y, q0);
}

}  // namespace detail
QNUM_END_NAMESPACE
