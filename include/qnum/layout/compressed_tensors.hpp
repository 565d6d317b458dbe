// qnum/layout/compressed_tensors.hpp: compressed-tensors "pack-quantized" tensors (W4A16 and other
// int 1..8-bit group schemes) built from already-computed signed codes and signed zero points.
//
// What SGLang/vLLM load (names, dtypes, shapes; N = out_features, K = in_features, G = ceil(K/g)):
//   weight_packed      int32  [N, ceil(K*bits/32)]  codes along K, offset-binary (q + 2^(bits-1)),
//                                                  element k of a row at bit k*bits (pack_to_int32,
//                                                  packed_dim=1); int4: 8 per word, nibble k%8.
//   weight_scale       scale dtype (bf16/fp16/fp32) [N, G]   (copied as given: no transform here)
//   weight_zero_point  int32  [ceil(N*bits/32), G]  asymmetric only: signed zero points (quantized in
//                                                  the signed domain, [-8,7] for int4) packed along N
//                                                  (pack_to_int32, packed_dim=0), offset-binary
//   weight_shape       [2] = {N, K} (int32 here; compressed-tensors 0.20 writes int64, as qnum-convert does)
// Dequantization (compressed-tensors): w = (q - zp) * scale, zp = 0 when symmetric.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/layout/pack.hpp"

QNUM_BEGIN_NAMESPACE
namespace ct {

// Shapes of the tensors of one pack-quantized weight. group = -1 means one group per row (channel).
struct pack_quantized_shape {
  std::int64_t n = 0, k = 0, group = 0, groups = 0;
  int bits = 0;
  std::int64_t packed_rows = 0, packed_cols = 0;  // weight_packed [n, ceil(k*bits/32)]
  std::int64_t scale_rows = 0, scale_cols = 0;    // weight_scale [n, groups]
  std::int64_t zp_rows = 0, zp_cols = 0;          // weight_zero_point [ceil(n*bits/32), groups]
};

// Fills `out` for an [n, k] weight with `bits`-bit codes and group size `group` (> 0, or -1 for
// channel-wise). groups = ceil(k/group): a ragged last group is allowed (compressed-tensors pads).
inline status pack_quantized_layout(std::int64_t n, std::int64_t k, int bits, std::int64_t group,
                                    pack_quantized_shape* out) {
  if (out == nullptr) return status::null_pointer;
  if (bits < 1 || bits > 8) return status::bad_bits;
  if (n < 0 || k < 0) return status::bad_shape;
  if (group == 0 || group < -1) return status::bad_group;
  pack_quantized_shape s;
  s.n = n;
  s.k = k;
  s.bits = bits;
  s.group = group;
  s.groups = group == -1 ? (k > 0 ? 1 : 0) : (k + group - 1) / group;
  s.packed_rows = n;
  s.packed_cols = packed_words(k, bits);
  s.scale_rows = n;
  s.scale_cols = s.groups;
  s.zp_rows = packed_words(n, bits);
  s.zp_cols = s.groups;
  *out = s;
  return status::ok;
}

// weight_packed [n, ceil(k*bits/32)] from codes q [n, k] (packed_dim::cols):
//   std::int8_t: signed codes in [-2^(bits-1), 2^(bits-1)-1];
//   std::uint8_t: qnum::quantize's codes as they are (integer formats: two's complement in the low `bits`
//     bits of each byte, e.g. int4 -1 = 0x0F), the same words as the sign-extended int8 codes give; a code
//     with bits set above `bits` -> code_out_of_range.
template <class T, std::enable_if_t<detail::one_of<T, std::int8_t, std::uint8_t>, int> = 0>
inline status pack_weight(const matrix_view<T>& q, int bits, const matrix_view<std::uint32_t>& weight_packed) {
  if (bits < 1 || bits > 8) return status::bad_bits;
  if (std::is_same<std::remove_const_t<T>, std::int8_t>::value) return pack_int32(q, bits, packed_dim::cols, weight_packed);
  return detail::pack_dense_impl<std::remove_const_t<T>>(detail::as_const(q), bits, packed_dim::cols, false, weight_packed,
                                                         1u << (bits - 1));
}
// Inverse: signed codes q [n, k] (q's shape) from weight_packed.
inline status unpack_weight(const matrix_view<const std::uint32_t>& weight_packed, int bits, const matrix_view<std::int8_t>& q) {
  return unpack_int32(weight_packed, bits, packed_dim::cols, q);
}
// weight_zero_point [ceil(n*bits/32), groups] from signed zero points zp [n, groups] (the orientation of
// weight_scale; std::int8_t, or the std::int32_t zero points quantize writes), packed along n.
template <class T, std::enable_if_t<detail::one_of<T, std::int8_t, std::int32_t>, int> = 0>
inline status pack_zero_point(const matrix_view<T>& zp, int bits, const matrix_view<std::uint32_t>& weight_zero_point) {
  return pack_int32(zp, bits, packed_dim::rows, weight_zero_point);
}
// Inverse: zp [n, groups] (zp's shape) from weight_zero_point.
inline status unpack_zero_point(const matrix_view<const std::uint32_t>& weight_zero_point, int bits, const matrix_view<std::int8_t>& zp) {
  return unpack_int32(weight_zero_point, bits, packed_dim::rows, zp);
}
// weight_shape = {n, k} as int32 (bad_shape when either does not fit int32).
inline status weight_shape(std::int64_t n, std::int64_t k, std::int32_t* out) {
  if (out == nullptr) return status::null_pointer;
  if (n < 0 || k < 0 || n > 0x7FFFFFFF || k > 0x7FFFFFFF) return status::bad_shape;
  out[0] = static_cast<std::int32_t>(n);
  out[1] = static_cast<std::int32_t>(k);
  return status::ok;
}

}  // namespace ct
QNUM_END_NAMESPACE
