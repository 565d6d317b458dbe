// qnum/detail/fp_rn.hpp: single IEEE fp32 operations that are never fused (no FMA contraction) on
// host or device, for reference formulas that are defined as separately rounded steps.
#pragma once

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

// fl(a * b), round to nearest even, never contracted with a neighbouring add.
QNUM_HD float mul_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fmul_rn(a, b);
#else
  volatile float r = a * b;  // the store forces the rounded product (blocks -ffp-contract=fast)
  return r;
#endif
}
// fl(a + b), round to nearest even, never contracted.
QNUM_HD float add_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fadd_rn(a, b);
#else
  volatile float r = a + b;
  return r;
#endif
}
// fl(a - b).
QNUM_HD float sub_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fsub_rn(a, b);
#else
  volatile float r = a - b;
  return r;
#endif
}
// fl(a / b), IEEE-correct division even under nvcc -prec-div=false.
QNUM_HD float div_rn(float a, float b) {
#if QNUM_IS_DEVICE_PASS()
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace detail
QNUM_END_NAMESPACE
