// qnum/layout/fp8_block.hpp: DeepSeek-V3/R1 fine-grained FP8 block weights (what the HF checkpoints,
// SGLang, vLLM and DeepGEMM load) from already-computed E4M3 codes and fp32 block scales.
//
//   weight            float8_e4m3fn [N, K]                        (codes, unchanged)
//   weight_scale_inv  float32 [ceil(N/128), ceil(K/128)]           dequant multiplier of block (i, j)
//   w[n, k] = decode(weight[n, k]) * weight_scale_inv[n/128, k/128]   (one fp32 multiply)
//   quantization_config {"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic",
//                        "weight_block_size":[128,128]} (+ "scale_fmt":"ue8m0": scales are powers of 2)
#pragma once

#include <cstdint>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/format.hpp"
#include "qnum/layout/pack.hpp"

QNUM_BEGIN_NAMESPACE
namespace fp8_block {

struct shape {
  std::int64_t n = 0, k = 0, block_n = 128, block_k = 128;
  std::int64_t scale_rows = 0, scale_cols = 0;  // weight_scale_inv [ceil(n/block_n), ceil(k/block_k)]
};

inline status layout(std::int64_t n, std::int64_t k, shape* out, std::int64_t block_n = 128,
                     std::int64_t block_k = 128) {
  if (out == nullptr) return status::null_pointer;
  if (n < 0 || k < 0) return status::bad_shape;
  if (block_n <= 0 || block_k <= 0) return status::bad_group;
  out->n = n;
  out->k = k;
  out->block_n = block_n;
  out->block_k = block_k;
  out->scale_rows = (n + block_n - 1) / block_n;
  out->scale_cols = (k + block_k - 1) / block_k;
  return status::ok;
}

// Checks a weight_scale_inv array: every scale finite and > 0 (else non_finite / code_out_of_range);
// with require_ue8m0 also an exact power of two ("scale_fmt":"ue8m0"), writing its UE8M0 byte
// (float_bits >> 23) to e when e is not null.
inline status check_scales(const shape& shape, const float* scale_inv, bool require_ue8m0,
                           std::uint8_t* e = nullptr) {
  const std::int64_t m = shape.scale_rows * shape.scale_cols;
  if (m == 0) return status::ok;
  if (scale_inv == nullptr) return status::null_pointer;
  for (std::int64_t i = 0; i < m; ++i) {
    if (detail::is_nonfinite(scale_inv[i])) return status::non_finite;
    if (!(scale_inv[i] > 0.0f)) return status::code_out_of_range;
    if (require_ue8m0) {
      const std::int32_t v = ue8m0_of_pow2(scale_inv[i]);
      if (v < 0) return status::code_out_of_range;
      if (e != nullptr) e[i] = static_cast<std::uint8_t>(v);
    }
  }
  return status::ok;
}

// Dequantize (fp8_cast_bf16.py / weight_dequant, in fp32): w[n, k] = decode<fp8_e4m3>(code) * scale.
// The shape must be what fp8_block::layout writes: a scale grid other than [ceil(n/block_n),
// ceil(k/block_k)] (a hand-built shape) is bad_shape for a non-empty tensor, so scale_inv is never read
// past its end.
inline status dequantize(const shape& shape, const std::uint8_t* weight, const float* scale_inv,
                         float* out) {
  if (shape.n < 0 || shape.k < 0 || shape.block_n <= 0 || shape.block_k <= 0) return status::bad_shape;
  if (shape.n * shape.k == 0) return status::ok;
  if (shape.scale_rows != (shape.n + shape.block_n - 1) / shape.block_n ||
      shape.scale_cols != (shape.k + shape.block_k - 1) / shape.block_k)
    return status::bad_shape;
  if (weight == nullptr || scale_inv == nullptr || out == nullptr) return status::null_pointer;
  for (std::int64_t r = 0; r < shape.n; ++r)
    for (std::int64_t c = 0; c < shape.k; ++c)
      out[r * shape.k + c] = detail::canonical_nan(detail::mul_rn(
          decode<fp8_e4m3>(weight[r * shape.k + c]), scale_inv[(r / shape.block_n) * shape.scale_cols + c / shape.block_k]));
  return status::ok;
}

}  // namespace fp8_block
QNUM_END_NAMESPACE
