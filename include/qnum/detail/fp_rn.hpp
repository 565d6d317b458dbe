// qnum/detail/fp_rn.hpp: single IEEE fp32 operations that are never fused (no FMA contraction) on
// host or device, for formulas that are defined as separately rounded steps.
#pragma once

#include <cmath>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

// The largest finite float (FLT_MAX), usable in device code.
constexpr float flt_max = 3.40282346638528859812e+38f;

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

}  // namespace detail
QNUM_END_NAMESPACE
