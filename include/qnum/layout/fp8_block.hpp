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

}  // namespace fp8_block
namespace detail {
// A shape fp8_block::layout could have written: ok, ok for an empty tensor (nothing to read, whatever its
// grid says), bad_shape otherwise.
inline status fp8_shape_check(const fp8_block::shape& s) {
  if (s.n < 0 || s.k < 0 || s.block_n <= 0 || s.block_k <= 0) return status::bad_shape;
  if (s.n * s.k == 0) return status::ok;
  if (s.scale_rows != (s.n + s.block_n - 1) / s.block_n || s.scale_cols != (s.k + s.block_k - 1) / s.block_k) return status::bad_shape;
  return status::ok;
}
}  // namespace detail
namespace fp8_block {

// Checks weight_scale_inv [shape.scale_rows, shape.scale_cols]: every scale finite and > 0 (else
// non_finite / code_out_of_range); with require_ue8m0 also an exact power of two ("scale_fmt":"ue8m0"),
// and then writes its UE8M0 byte (float_bits >> 23) to e (same shape) when e is given (non-empty).
// The shape must be what fp8_block::layout writes (bad_shape otherwise; an empty tensor is ok).
inline status check_scales(const shape& shape, const matrix_view<const float>& scale_inv, bool require_ue8m0,
                           const matrix_view<std::uint8_t>& e = {}) {
  if (status st = detail::fp8_shape_check(shape); st != status::ok) return st;
  if (shape.n * shape.k == 0) return status::ok;
  if (status st = detail::check_extents(scale_inv, shape.scale_rows, shape.scale_cols); st != status::ok) return st;
  const bool write = require_ue8m0 && e.size() != 0;
  if (write)
    if (status st = detail::check_extents(e, shape.scale_rows, shape.scale_cols); st != status::ok) return st;
  for (std::int64_t r = 0; r < shape.scale_rows; ++r)
    for (std::int64_t c = 0; c < shape.scale_cols; ++c) {
      const float v = scale_inv(r, c);
      if (detail::is_nonfinite(v)) return status::non_finite;
      if (!(v > 0.0f)) return status::code_out_of_range;
      if (require_ue8m0 && ue8m0_of_pow2(v) < 0) return status::code_out_of_range;
    }
  if (write)
    for (std::int64_t r = 0; r < shape.scale_rows; ++r)
      for (std::int64_t c = 0; c < shape.scale_cols; ++c) e(r, c) = static_cast<std::uint8_t>(ue8m0_of_pow2(scale_inv(r, c)));
  return status::ok;
}

// Dequantize (fp8_cast_bf16.py / weight_dequant, in fp32): out[n, k] = decode<fp8_e4m3>(weight[n, k]) *
// scale_inv[n / block_n, k / block_k]. weight and out are [shape.n, shape.k], scale_inv [shape.scale_rows,
// shape.scale_cols]; the shape must be what fp8_block::layout writes (a hand-built scale grid is bad_shape for a
// non-empty tensor).
inline status dequantize(const shape& shape, const matrix_view<const std::uint8_t>& weight,
                         const matrix_view<const float>& scale_inv, const matrix_view<float>& out) {
  if (status st = detail::fp8_shape_check(shape); st != status::ok) return st;
  if (shape.n * shape.k == 0) return status::ok;
  if (status e = detail::check_extents(weight, shape.n, shape.k); e != status::ok) return e;
  if (status e = detail::check_extents(scale_inv, shape.scale_rows, shape.scale_cols); e != status::ok) return e;
  if (status e = detail::check_extents(out, shape.n, shape.k); e != status::ok) return e;
  for (std::int64_t r = 0; r < shape.n; ++r)
    for (std::int64_t c = 0; c < shape.k; ++c)
      out(r, c) = detail::canonical_nan(
          detail::mul_rn(decode<fp8_e4m3>(weight(r, c)), scale_inv(r / shape.block_n, c / shape.block_k)));
  return status::ok;
}

}  // namespace fp8_block
QNUM_END_NAMESPACE
