// tests/gpu/test_gpu_launch_policy.cu: the device launchers' bad-argument policy, which needs no GPU: every
// launcher validates on the host and returns the host API's qnum::status before it enqueues anything (the
// pointers below are never dereferenced), and the CUDA error carried by a status converts both ways
// (qnum/gpu/status.cuh). This program runs wherever nvcc builds it, with or without a device.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>

#include "qnum/gpu/quantize.cuh"
#include "qnum/gpu/status.cuh"
#include "qnum/presets.hpp"
#include "qnum/train/dynamic_scale.cuh"

namespace {

namespace p = qnum::presets;
using qnum::status;

// Aligned, never dereferenced addresses standing in for device buffers.
template <class T>
T* fake(std::uintptr_t a) { return reinterpret_cast<T*>(a); }

}  // namespace

TEST_CASE("status carries a CUDA error and gives it back") {
  CHECK(qnum::gpu::from_cuda(cudaSuccess) == status::ok);
  for (cudaError_t e : {cudaErrorInvalidValue, cudaErrorMemoryAllocation, cudaErrorLaunchFailure, cudaErrorNoDevice,
                        cudaErrorIllegalAddress}) {
    const status s = qnum::gpu::from_cuda(e);
    CHECK(qnum::is_cuda_error(s));
    CHECK(qnum::gpu::cuda_error(s) == e);
    CHECK(std::string(qnum::to_string(s)) == "cuda_error");
  }
  CHECK(qnum::gpu::cuda_error(status::ok) == cudaSuccess);
  CHECK(qnum::gpu::cuda_error(status::skipped_nonfinite) == cudaSuccess);
  CHECK(qnum::gpu::cuda_error(status::bad_shape) == cudaErrorInvalidValue);
  CHECK_FALSE(qnum::is_cuda_error(status::scale_overflow));
}

TEST_CASE("group launchers reject bad arguments with the host API's status, without a device") {
  float* d = fake<float>(0x10000);
  std::uint8_t* c = fake<std::uint8_t>(0x20000);
  const qnum::scale_view sv{c + 2048, 4, 2, 2, 4};
  const auto good = qnum::view(static_cast<const float*>(d), 4, 64, 64);
  const auto codes = qnum::view(c, 4, 64);
  const auto g32 = qnum::group_size(32);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(nullptr), 4, 64), g32, codes, sv) ==
        status::null_pointer);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(reinterpret_cast<const float*>(c + 1), 4, 64), g32, codes,
                                   sv) == status::misaligned);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(d), 4, 64, 10), g32, codes, sv) ==
        status::bad_stride);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, good, qnum::group_size(-1), codes, sv) == status::bad_group);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, good, qnum::group_size(16), codes, sv) == status::bad_scale_buffer);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, good, g32, qnum::view(c, 4, 63), sv) == status::bad_shape);
  CHECK(qnum::gpu::launch_quantize(p::ct_w4a16_asym, good, g32, codes, sv) == status::null_pointer);  // no zero points
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, good, g32, codes,
                                   qnum::scale_view{c + 2049, 4, 2, 2, 4}) == status::misaligned);
  // A 16-bit view must say bf16 or fp16.
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(fake<const std::uint16_t>(0x10000), 4, 64, 64, qnum::dtype::fp32),
                                   g32, codes, sv) == status::bad_type);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(fake<const std::uint16_t>(0x10000), 4, 64, 64, qnum::dtype::e8m0),
                                   g32, codes, sv) == status::bad_type);
  // Empty tensors: nothing to do, nothing launched.
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(d), 0, 64), g32,
                                   qnum::view(c, 0, 64), sv) == status::ok);
  CHECK(qnum::gpu::launch_fake_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(d), 4, 0), g32,
                                        qnum::view(d, 4, 0)) == status::ok);

  // Mutable input views take the same launchers.
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(d, 4, 64, 10), g32, codes, sv) == status::bad_stride);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<float*>(nullptr), 4, 64),
                                   g32, codes, sv) == status::null_pointer);
  CHECK(qnum::gpu::launch_fake_quantize(p::slime_int4_qat, qnum::view(d, 4, 64), g32, qnum::view(d, 4, 32)) ==
        status::bad_shape);
  CHECK(qnum::gpu::launch_tensor_stats(qnum::view(d, 4, 64), nullptr) == status::null_pointer);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, qnum::gpu::device_view(fake<__nv_bfloat16>(0x10000), 4, 64), 12,
                                     fake<std::uint32_t>(0x30000), sv) == status::bad_group);

  // fake quantize: output shape and alignment.
  CHECK(qnum::gpu::launch_fake_quantize(p::slime_int4_qat, good, g32, qnum::view(d, 4, 32)) == status::bad_shape);
  CHECK(qnum::gpu::launch_fake_quantize(p::slime_int4_qat, good, g32, qnum::view(reinterpret_cast<float*>(c + 2), 4, 64)) ==
        status::misaligned);
  CHECK(qnum::gpu::launch_fake_quantize(p::slime_int4_qat, good, g32, qnum::view(static_cast<float*>(nullptr), 4, 64)) ==
        status::null_pointer);

  // dequantize: codes and output shapes, scales, zero points of an asymmetric scheme.
  const auto ccodes = qnum::view(static_cast<const std::uint8_t*>(c), 4, 64);
  CHECK(qnum::gpu::launch_dequantize(p::slime_int4_qat, ccodes, g32, sv, {}, qnum::view(d, 4, 32)) == status::bad_shape);
  CHECK(qnum::gpu::launch_dequantize(p::slime_int4_qat, ccodes, qnum::group_size(64), sv, {}, qnum::view(d, 4, 64)) ==
        status::bad_scale_buffer);
  CHECK(qnum::gpu::launch_dequantize(p::ct_w4a16_asym, ccodes, g32, sv, {}, qnum::view(d, 4, 64)) == status::null_pointer);
  CHECK(qnum::gpu::launch_dequantize(p::ct_w4a16_asym, ccodes, g32, sv,
                                     qnum::view(fake<const std::int32_t>(0x30000), 4, 1), qnum::view(d, 4, 64)) ==
        status::bad_scale_buffer);
  CHECK(qnum::gpu::launch_dequantize(p::ct_w4a16_asym, ccodes, g32, sv,
                                     qnum::view(fake<const std::int32_t>(0x30002), 4, 2), qnum::view(d, 4, 64)) ==
        status::misaligned);

  // tensor statistics: the output buffer.
  CHECK(qnum::gpu::launch_tensor_stats(good, nullptr) == status::null_pointer);
  CHECK(qnum::gpu::launch_tensor_stats(good, fake<std::uint32_t>(0x30002)) == status::misaligned);

  // Fused W4A16: group a multiple of 8, the packed buffer.
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 12, fake<std::uint32_t>(0x30000), sv) == status::bad_group);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, nullptr, sv) == status::null_pointer);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, fake<std::uint32_t>(0x30002), sv) == status::misaligned);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, fake<std::uint32_t>(0x30000), sv, {}, nullptr, 4) ==
        status::bad_stride);
}

TEST_CASE("training launchers reject bad arguments with the host functions' status, without a device") {
  const float* g = fake<const float>(0x10000);
  std::int8_t* q = fake<std::int8_t>(0x20000);
  auto* st = fake<qnum::dynamic_scale_state>(0x30000);
  void* scratch = fake<void>(0x40000);
  qnum::dynamic_scale_config cfg;
  CHECK(qnum::gpu::launch_quantize_gradient_int8<float>(g, q, nullptr, 0, 0, nullptr, nullptr, cfg) == status::ok);
  CHECK(qnum::gpu::launch_quantize_gradient_int8<float>(nullptr, q, nullptr, 64, 32, st, scratch, cfg) ==
        status::null_pointer);
  CHECK(qnum::gpu::launch_quantize_gradient_int8<float>(g, q, nullptr, 64, 32, st, nullptr, cfg) == status::null_pointer);
  CHECK(qnum::gpu::launch_quantize_gradient_int8<float>(g, q, nullptr, 64, 24, st, scratch, cfg) == status::bad_group);
  qnum::dynamic_scale_config bad = cfg;
  bad.alpha = 2.0f;
  CHECK(qnum::gpu::launch_quantize_gradient_int8<float>(g, q, nullptr, 64, 32, st, scratch, bad) == status::bad_config);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(q, 64, 24, st, fake<void>(0x50000), qnum::dtype::fp32) ==
        status::bad_group);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(q, 64, 32, st, nullptr, qnum::dtype::fp32) == status::null_pointer);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(q, 64, 32, st, fake<void>(0x50000), qnum::dtype::e8m0) == status::bad_type);

  qnum::int8_adam_config c;
  const qnum::int8_adam_state ast{fake<std::int8_t>(0x20000), fake<std::uint8_t>(0x21000), fake<float>(0x22000),
                                  fake<float>(0x23000)};
  float* pp = fake<float>(0x60000);
  CHECK(qnum::gpu::launch_int8_adam_step(pp, g, 64, ast, c, 0) == status::bad_config);  // step t starts at 1
  qnum::int8_adam_config cb = c;
  cb.block_size = 0;
  CHECK(qnum::gpu::launch_int8_adam_step(pp, g, 64, ast, cb, 1) == status::bad_group);
  cb = c;
  cb.beta1 = 1.0f;
  CHECK(qnum::gpu::launch_int8_adam_step(pp, g, 64, ast, cb, 1) == status::bad_config);
  CHECK(qnum::gpu::launch_int8_adam_step(nullptr, g, 64, ast, c, 1) == status::null_pointer);
  CHECK(qnum::gpu::launch_int8_adam_step(pp, g, 0, ast, c, 1) == status::ok);
}
