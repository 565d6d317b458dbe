// qnum/gpu/codec_hw.cuh: hardware float->fp8/fp4 conversions (cvt.rn.satfinite) for device code.
//
// encode_hw<F>(x) returns exactly encode<F>(x, rne, satfinite), and encode2_hw<F>(x0, x1) the two codes of a pair
// (tests/gpu/test_codec_device.cu compares them over every bf16 pattern and a million random floats). On sm_89 and newer it is
// one cvt instruction for E4M3/E5M2, on sm_100+ also for E2M1; elsewhere, and in host code, it is
// the portable bit-exact path. Include it only from code compiled by nvcc.
#pragma once

// CUDA 13's cuda_fp4.hpp has unused parameters; keep users' -Werror builds working.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <cuda_fp8.h>
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12 && __has_include(<cuda_fp4.h>)
#include <cuda_fp4.h>
#define QNUM_HAS_CUDA_FP4_HEADER() 1
#else
#define QNUM_HAS_CUDA_FP4_HEADER() 0
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "qnum/codec.hpp"

QNUM_BEGIN_NAMESPACE
namespace gpu {

template <class F>
__host__ __device__ inline code_t<F> encode_hw(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (std::is_same_v<F, fp8_e4m3>) {
    return static_cast<code_t<F>>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
  } else if constexpr (std::is_same_v<F, fp8_e5m2>) {
    return static_cast<code_t<F>>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
  }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && QNUM_HAS_CUDA_FP4_HEADER()
  if constexpr (std::is_same_v<F, fp4_e2m1>) {
    return static_cast<code_t<F>>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest));
  }
#endif
  return encode<F>(x, rne, satfinite);
}

// encode_hw<F> of two values: x0's code in bits 0-7, x1's in bits 8-15. On sm_89 and newer one
// cvt.rn.satfinite.e4m3x2 / e5m2x2 for E4M3/E5M2 (the conversion encode_hw makes of each value alone), where two
// single conversions cost a cvt each and a byte merge; elsewhere, and for the other formats, two encode_hw.
template <class F>
__host__ __device__ inline std::uint32_t encode2_hw(float x0, float x1) {
  static_assert(F::bits <= 8, "encode2_hw: codes of at most 8 bits");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (std::is_same_v<F, fp8_e4m3> || std::is_same_v<F, fp8_e5m2>) {
    return __nv_cvt_float2_to_fp8x2(make_float2(x0, x1), __NV_SATFINITE, std::is_same_v<F, fp8_e4m3> ? __NV_E4M3 : __NV_E5M2);
  }
#endif
  return static_cast<std::uint32_t>(encode_hw<F>(x0)) | static_cast<std::uint32_t>(encode_hw<F>(x1)) << 8;
}

// Two floats as bf16 / binary16 bits, lo | hi << 16, by one cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32: RNE, overflow to
// Inf, subnormals kept (to_bf16 / to_fp16's bits) except a NaN, which the hardware writes as 0x7FFF. Device only.
__device__ inline unsigned bf16x2_bits_rn(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}
__device__ inline unsigned fp16x2_bits_rn(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}

// decode<F> of two codes: exact values, on sm_89+ one cvt.rn.f16x2.e4m3x2 / e5m2x2 (exact: every FP8 value
// is a binary16 value) and two widenings for E4M3/E5M2; a NaN code gives a NaN whose bits are the hardware's
// (callers canonicalise NaN outputs, as dequantize_value does). Elsewhere decode<F>.
template <class F>
__host__ __device__ inline void decode2_hw(std::uint32_t c0, std::uint32_t c1, float& v0, float& v1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (std::is_same_v<F, fp8_e4m3> || std::is_same_v<F, fp8_e5m2>) {
    const __nv_fp8x2_storage_t pair = static_cast<__nv_fp8x2_storage_t>((c0 & 0xFFu) | ((c1 & 0xFFu) << 8));
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(pair, std::is_same_v<F, fp8_e4m3> ? __NV_E4M3 : __NV_E5M2);
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
    v0 = f.x;
    v1 = f.y;
    return;
  }
#endif
  v0 = decode<F>(c0);
  v1 = decode<F>(c1);
}

}  // namespace gpu
QNUM_END_NAMESPACE
