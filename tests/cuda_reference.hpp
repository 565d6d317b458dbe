// tests/gpu_reference.hpp: CUDA's own host-side conversions (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h,
// cuda_fp16.h), wrapped per qnum format, used as an independent reference where the toolkit exists.
#pragma once

#if QNUM_TEST_HAVE_CUDA_HEADERS
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>

#include "qnum/format.hpp"

namespace qtest {

// Which reference a (format, rounding, saturation) triple has in CUDA; `available` is false if none.
template <class F, bool Sat>
struct cuda_ref {
  static constexpr bool available = false;
};
template <bool Sat>
struct cuda_ref<qnum::fp8_e4m3, Sat> {
  static constexpr bool available = true;
  static std::uint32_t rne(float x) {
    return __nv_cvt_float_to_fp8(x, Sat ? __NV_SATFINITE : __NV_NOSAT, __NV_E4M3);
  }
};
template <bool Sat>
struct cuda_ref<qnum::fp8_e5m2, Sat> {
  static constexpr bool available = true;
  static std::uint32_t rne(float x) {
    return __nv_cvt_float_to_fp8(x, Sat ? __NV_SATFINITE : __NV_NOSAT, __NV_E5M2);
  }
};
template <>
struct cuda_ref<qnum::fp4_e2m1, true> {
  static constexpr bool available = true;
  static std::uint32_t rne(float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); }
  static std::uint32_t rtz(float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundZero); }
};
template <bool Sat>
struct cuda_ref<qnum::e8m0, Sat> {
  static constexpr bool available = true;
  static std::uint32_t rtz(float x) {
    return __nv_cvt_float_to_e8m0(x, Sat ? __NV_SATFINITE : __NV_NOSAT, cudaRoundZero);
  }
  static std::uint32_t raz(float x) {
    return __nv_cvt_float_to_e8m0(x, Sat ? __NV_SATFINITE : __NV_NOSAT, cudaRoundPosInf);
  }
};

inline std::uint32_t cuda_bf16_rn(float x) {
  const __nv_bfloat16_raw r = __float2bfloat16_rn(x);
  return r.x;
}
inline std::uint32_t cuda_fp16_rn(float x) {
  const __half_raw r = __float2half_rn(x);
  return r.x;
}

}  // namespace qtest
#endif
