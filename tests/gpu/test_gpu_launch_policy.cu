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
                                     qnum::view(fake<std::uint32_t>(0x30000), 4, 8), sv) == status::bad_group);

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

  // Fused W4A16: group a multiple of 8, the packed view [4, 8].
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 12, qnum::view(fake<std::uint32_t>(0x30000), 4, 8), sv) == status::bad_group);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, qnum::view(static_cast<std::uint32_t*>(nullptr), 4, 8), sv) ==
        status::null_pointer);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, qnum::view(fake<std::uint32_t>(0x30002), 4, 8), sv) == status::misaligned);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, qnum::view(fake<std::uint32_t>(0x30000), 4, 8, 4), sv) ==
        status::bad_stride);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, qnum::view(fake<std::uint32_t>(0x30000), 4, 7), sv) == status::bad_shape);
  CHECK(qnum::gpu::launch_w4a16_pack(p::ct_w4a16_sym, good, 32, qnum::view(fake<std::uint32_t>(0x30000), 3, 8), sv) == status::bad_shape);
}

TEST_CASE("training launchers reject bad arguments with the host functions' status, without a device") {
  const float* g = fake<const float>(0x10000);
  std::int8_t* q = fake<std::int8_t>(0x20000);
  auto* st = fake<qnum::dynamic_scale_state>(0x30000);
  void* scratch = fake<void>(0x40000);
  qnum::dynamic_scale_config cfg;
  using qnum::view;
  const qnum::matrix_view<float> none{};  // no error feedback
  const auto G = view(g, 64);
  const auto Q = view(q, 64);
  const auto S = view(st, 2);
  const qnum::group_shape g32 = qnum::group_size(32);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(view(g, 0), g32, Q, none, view(st, 0), nullptr, cfg) == status::ok);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(view(static_cast<const float*>(nullptr), 64), g32, Q, none, S, scratch, cfg) ==
        status::null_pointer);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, g32, Q, none, S, nullptr, cfg) == status::null_pointer);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, qnum::group_size(24), Q, none, S, scratch, cfg) == status::bad_group);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(view(g, 2, 32), qnum::block(2, 32), view(q, 2, 32), none, view(st, 1, 1), scratch, cfg) ==
        status::bad_group);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, g32, view(q, 2, 32), none, S, scratch, cfg) == status::bad_shape);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, g32, Q, none, view(st, 1), scratch, cfg) == status::bad_shape);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, g32, Q, view(fake<float>(0x50000), 32), S, scratch, cfg) == status::bad_shape);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(view(g, 2, 32, 48), g32, view(q, 2, 32), none, view(st, 2, 1), scratch, cfg) ==
        status::bad_stride);
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, g32, Q, view<qnum::fp16>(fake<std::uint16_t>(0x50000), 1, 64), S, scratch, cfg) ==
        status::bad_type);
  qnum::dynamic_scale_config bad = cfg;
  bad.alpha = 2.0f;
  CHECK(qnum::gpu::launch_quantize_gradient_int8(G, g32, Q, none, S, scratch, bad) == status::bad_config);
  const auto CQ = view(static_cast<const std::int8_t*>(q), 64);
  const auto CS = view(static_cast<const qnum::dynamic_scale_state*>(st), 2);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(CQ, qnum::group_size(24), CS, view(fake<float>(0x50000), 64)) == status::bad_group);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(CQ, g32, CS, view(static_cast<float*>(nullptr), 64)) == status::null_pointer);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(CQ, g32, CS, view(fake<float>(0x50000), 1, 64, -1, qnum::dtype::e8m0)) ==
        status::bad_type);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(CQ, g32, CS, view(fake<float>(0x50000), 1, 64, -1, qnum::dtype::bf16)) ==
        status::bad_type);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(CQ, g32, CS, view(fake<std::uint16_t>(0x50000), 1, 64, -1, qnum::dtype::fp32)) ==
        status::bad_type);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(CQ, g32, CS, view(fake<float>(0x50000), 2, 32)) == status::bad_shape);

  qnum::int8_adam_config c;
  const qnum::int8_adam_state ast{fake<std::int8_t>(0x20000), fake<std::uint8_t>(0x21000), fake<float>(0x22000),
                                  fake<float>(0x23000)};
  float* pp = fake<float>(0x60000);
  CHECK(qnum::gpu::launch_int8_adam_step(view(pp, 64), G, ast, c, 0) == status::bad_config);  // step t starts at 1
  qnum::int8_adam_config cb = c;
  cb.block_size = 0;
  CHECK(qnum::gpu::launch_int8_adam_step(view(pp, 64), G, ast, cb, 1) == status::bad_group);
  cb = c;
  cb.beta1 = 1.0f;
  CHECK(qnum::gpu::launch_int8_adam_step(view(pp, 64), G, ast, cb, 1) == status::bad_config);
  CHECK(qnum::gpu::launch_int8_adam_step(view(static_cast<float*>(nullptr), 64), G, ast, c, 1) == status::null_pointer);
  CHECK(qnum::gpu::launch_int8_adam_step(view(pp, 2, 32), G, ast, c, 1) == status::bad_shape);
  CHECK(qnum::gpu::launch_int8_adam_step(view(pp, 2, 32, 40), view(g, 2, 32, 40), ast, c, 1) == status::bad_stride);
  CHECK(qnum::gpu::launch_int8_adam_step(view(pp, 64), view(g, 0), ast, c, 1) == status::ok);
}
