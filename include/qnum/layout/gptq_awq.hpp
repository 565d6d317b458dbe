// qnum/layout/gptq_awq.hpp: GPTQ (AutoGPTQ "gptq"/"gptq_v2") and AWQ checkpoint tensors from
// already-computed unsigned codes, zero points and scales.
//
// Inputs are always in the torch Linear orientation: codes q[N, K], zeros z[N, G], scales s[N, G]
// (row-major, N = out_features, K = in_features, G = K/g groups). Codes and zeros are the stored
// unsigned values 0..2^bits-1 (GPTQ symmetric int4 stores q+8 with zero 8: use the int8 overload).
//
// GPTQ (what vLLM/SGLang gptq, gptq_marlin load):
//   qweight  int32 [K*bits/32, N]  packed along K: word r, field j <- q[n, r*(32/bits) + j]
//   qzeros   int32 [G, N*bits/32]  packed along N, sequential fields; "gptq" (v1) stores zero-1,
//                                  "gptq_v2" stores zero. Symmetric int4 v1 = 0x77777777.
//   scales   fp16  [G, N]
//   (g_idx int32 [K] = k / g when present; act-order is not produced here)
// AWQ (AutoAWQ GEMM):
//   qweight  int32 [K, N/8]  packed along N, field i of word j <- column 8j + {0,2,4,6,1,3,5,7}[i]
//   qzeros   int32 [G, N/8]  same interleave
//   scales   fp16  [G, N]
// Dequantization: w[n, k] = (q - z) * s (GPTQ v1: z = stored + 1).
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/layout/pack.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {
inline bool gptq_bits_ok(int bits) { return bits == 2 || bits == 4 || bits == 8; }
}  // namespace detail

namespace gptq {

enum class format : int { v1 = 1, v2 = 2 };

// GPTQ qweight [K*bits/32, N] from codes q [N, K]: std::uint8_t unsigned codes (0..2^bits-1) stored as
// they are, or std::int8_t signed codes in [-2^(bits-1), 2^(bits-1)-1] stored offset-binary (uint4b8:
// q + 8), the symmetric GPTQ convention (zero = 2^(bits-1)). bits in {2, 4, 8}; K must be a multiple of
// 32/bits (bad_shape otherwise).
template <class T, std::enable_if_t<detail::one_of<T, std::int8_t, std::uint8_t>, int> = 0>
inline status pack_qweight(const matrix_view<T>& q, int bits, const matrix_view<std::uint32_t>& qweight) {
  constexpr bool is_signed = std::is_same<std::remove_const_t<T>, std::int8_t>::value;
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (status e = detail::check_extents(q); e != status::ok) return e;
  const std::int64_t n = q.rows, k = q.cols;
  if (k % (32 / bits) != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  const int pf = 32 / bits;
  if (status e = detail::check_extents(qweight, k / pf, n); e != status::ok) return e;
  if (!detail::codes_fit(q, bits, is_signed)) return status::code_out_of_range;
  for (std::int64_t r = 0; r < k / pf; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      std::uint32_t w = 0;
      for (int j = 0; j < pf; ++j) {
        const std::int32_t v = static_cast<std::int32_t>(q(c, r * pf + j));
        w |= (is_signed ? to_offset_binary(v, bits) : static_cast<std::uint32_t>(v)) << (bits * j);
      }
      qweight(r, c) = w;
    }
  return status::ok;
}
// Inverse of gptq::pack_qweight: unsigned codes q [N, K] (q's shape).
inline status unpack_qweight(const matrix_view<const std::uint32_t>& qweight, int bits, const matrix_view<std::uint8_t>& q) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (status e = detail::check_extents(q); e != status::ok) return e;
  const std::int64_t n = q.rows, k = q.cols;
  if (k % (32 / bits) != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  const int pf = 32 / bits;
  if (status e = detail::check_extents(qweight, k / pf, n); e != status::ok) return e;
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t kk = 0; kk < k; ++kk)
      q(c, kk) = static_cast<std::uint8_t>((qweight(kk / pf, c) >> (bits * (kk % pf))) & low_mask(bits));
  return status::ok;
}

// GPTQ qzeros [G, N*bits/32] from zero points z [N, G] (0..2^bits-1; std::uint8_t, or the std::int32_t
// zero points quantize writes for asymmetric schemes). v1 stores z-1 (so z = 0 cannot be stored:
// code_out_of_range, as AutoGPTQ would corrupt the neighbouring field); v2 stores z. N must be a
// multiple of 32/bits.
template <class Z, std::enable_if_t<detail::one_of<Z, std::uint8_t, std::int32_t>, int> = 0>
inline status pack_qzeros(const matrix_view<Z>& z, int bits, format fmt, const matrix_view<std::uint32_t>& qzeros) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (status e = detail::check_extents(z); e != status::ok) return e;
  const std::int64_t n = z.rows, groups = z.cols;
  if (n % (32 / bits) != 0) return status::bad_shape;
  if (n * groups == 0) return status::ok;
  const int pf = 32 / bits;
  const std::int64_t wpr = n / pf;
  if (status e = detail::check_extents(qzeros, groups, wpr); e != status::ok) return e;
  if (!detail::codes_fit(z, bits, false)) return status::code_out_of_range;
  const int sub = fmt == format::v1 ? 1 : 0;
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t g = 0; g < groups; ++g)
      if (z(c, g) < sub) return status::code_out_of_range;
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t w = 0; w < wpr; ++w) {
      std::uint32_t word = 0;
      for (int j = 0; j < pf; ++j) word |= static_cast<std::uint32_t>(z(w * pf + j, g) - sub) << (bits * j);
      qzeros(g, w) = word;
    }
  return status::ok;
}
// Inverse of gptq::pack_qzeros: z [N, G] (z's shape; v1 adds the 1 back: a stored field of 2^bits-1
// gives 2^bits).
inline status unpack_qzeros(const matrix_view<const std::uint32_t>& qzeros, int bits, format fmt, const matrix_view<std::int32_t>& z) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (status e = detail::check_extents(z); e != status::ok) return e;
  const std::int64_t n = z.rows, groups = z.cols;
  if (n % (32 / bits) != 0) return status::bad_shape;
  if (n * groups == 0) return status::ok;
  const int pf = 32 / bits;
  if (status e = detail::check_extents(qzeros, groups, n / pf); e != status::ok) return e;
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t g = 0; g < groups; ++g)
      z(c, g) = static_cast<std::int32_t>((qzeros(g, c / pf) >> (bits * (c % pf))) & low_mask(bits)) + (fmt == format::v1 ? 1 : 0);
  return status::ok;
}

// GPTQ/AWQ scales: fp16 bits [G, N] from float scales s [N, G] (transpose; to_fp16 = IEEE RNE).
// NaN or Inf -> non_finite; a finite scale that rounds to fp16 Inf -> scale_overflow (nothing written).
// Quantize with fp16-representable scales if the codes must match the stored scale exactly.
inline status scales_to_fp16_transposed(const matrix_view<const float>& s, const matrix_view<std::uint16_t>& out) {
  if (status e = detail::check_extents(s); e != status::ok) return e;
  const std::int64_t n = s.rows, groups = s.cols;
  if (n * groups == 0) return status::ok;
  if (status e = detail::check_extents(out, groups, n); e != status::ok) return e;
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t g = 0; g < groups; ++g) {
      const float v = s(c, g);
      if (detail::is_nan(v)) return status::non_finite;
      if ((to_fp16(v) & 0x7FFFu) == 0x7C00u) return detail::is_nonfinite(v) ? status::non_finite : status::scale_overflow;
    }
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t g = 0; g < groups; ++g) out(g, c) = to_fp16(s(c, g));
  return status::ok;
}

}  // namespace gptq

namespace awq {

// AWQ's nibble order: field i of a word holds column order[i] of its 8-column group.
inline constexpr int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// AWQ stores its scales as GPTQ does: fp16 [G, N].
using gptq::scales_to_fp16_transposed;

}  // namespace awq

namespace detail {
// AWQ's packing of a [N, X] matrix of 4-bit values v (N a multiple of 8) into words [X, N/8]: transposed,
// packed along N with the interleave awq::order (qweight: X = K; qzeros: X = G).
template <class T>
inline status awq_pack_transposed(const matrix_view<T>& v, const matrix_view<std::uint32_t>& words) {
  if (status e = check_extents(v); e != status::ok) return e;
  const std::int64_t n = v.rows, x = v.cols;
  if (n % 8 != 0) return status::bad_shape;
  if (n * x == 0) return status::ok;
  if (status e = check_extents(words, x, n / 8); e != status::ok) return e;
  if (!codes_fit(v, 4, false)) return status::code_out_of_range;
  for (std::int64_t c = 0; c < x; ++c)
    for (std::int64_t w = 0; w < n / 8; ++w) {
      std::uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(v(8 * w + awq::order[i], c)) << (4 * i);
      words(c, w) = word;
    }
  return status::ok;
}
}  // namespace detail

namespace awq {

// AWQ qweight [K, N/8] from unsigned 4-bit codes q [N, K] (N a multiple of 8). Transposes to [K, N]
// and packs along N with the interleave awq::order.
inline status pack_qweight(const matrix_view<const std::uint8_t>& q, const matrix_view<std::uint32_t>& qweight) {
  return detail::awq_pack_transposed(q, qweight);
}
// Inverse of awq::pack_qweight: q [N, K] (q's shape).
inline status unpack_qweight(const matrix_view<const std::uint32_t>& qweight, const matrix_view<std::uint8_t>& q) {
  if (status e = detail::check_extents(q); e != status::ok) return e;
  const std::int64_t n = q.rows, k = q.cols;
  if (n % 8 != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  if (status e = detail::check_extents(qweight, k, n / 8); e != status::ok) return e;
  for (std::int64_t kk = 0; kk < k; ++kk)
    for (std::int64_t w = 0; w < n / 8; ++w)
      for (int i = 0; i < 8; ++i) q(8 * w + order[i], kk) = static_cast<std::uint8_t>(nibble_of(qweight(kk, w), i));
  return status::ok;
}
// AWQ qzeros [G, N/8] from zero points z [N, G] (0..15; std::uint8_t, or the std::int32_t zero points
// quantize writes for asymmetric schemes).
template <class Z, std::enable_if_t<detail::one_of<Z, std::uint8_t, std::int32_t>, int> = 0>
inline status pack_qzeros(const matrix_view<Z>& z, const matrix_view<std::uint32_t>& qzeros) {
  return detail::awq_pack_transposed(z, qzeros);
}

}  // namespace awq
QNUM_END_NAMESPACE
