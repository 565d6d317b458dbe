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

// GPTQ qweight [K*bits/32, N] from unsigned codes q[N, K] (0..2^bits-1). bits in {2, 4, 8};
// K must be a multiple of 32/bits (bad_shape otherwise).
inline status pack_qweight(const std::uint8_t* q, std::int64_t n, std::int64_t k, int bits,
                           std::uint32_t* qweight) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (n < 0 || k < 0 || k % (32 / bits) != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  if (q == nullptr || qweight == nullptr) return status::null_pointer;
  if (!detail::codes_fit(q, n * k, bits, false)) return status::code_out_of_range;
  const int pf = 32 / bits;
  for (std::int64_t r = 0; r < k / pf; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      std::uint32_t w = 0;
      for (int j = 0; j < pf; ++j) w |= std::uint32_t{q[c * k + r * pf + j]} << (bits * j);
      qweight[r * n + c] = w;
    }
  return status::ok;
}
// Signed codes q[N, K] in [-2^(bits-1), 2^(bits-1)-1] stored offset-binary (uint4b8: q + 8), the
// symmetric GPTQ convention (zero = 2^(bits-1)).
inline status pack_qweight(const std::int8_t* q, std::int64_t n, std::int64_t k, int bits,
                           std::uint32_t* qweight) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (n < 0 || k < 0 || k % (32 / bits) != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  if (q == nullptr || qweight == nullptr) return status::null_pointer;
  if (!detail::codes_fit(q, n * k, bits, true)) return status::code_out_of_range;
  const int pf = 32 / bits;
  for (std::int64_t r = 0; r < k / pf; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      std::uint32_t w = 0;
      for (int j = 0; j < pf; ++j) w |= to_offset_binary(q[c * k + r * pf + j], bits) << (bits * j);
      qweight[r * n + c] = w;
    }
  return status::ok;
}
// Inverse of gptq::pack_qweight: unsigned codes q[N, K].
inline status unpack_qweight(const std::uint32_t* qweight, std::int64_t n, std::int64_t k, int bits,
                             std::uint8_t* q) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (n < 0 || k < 0 || k % (32 / bits) != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  if (q == nullptr || qweight == nullptr) return status::null_pointer;
  const int pf = 32 / bits;
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t kk = 0; kk < k; ++kk)
      q[c * k + kk] = static_cast<std::uint8_t>((qweight[(kk / pf) * n + c] >> (bits * (kk % pf))) & low_mask(bits));
  return status::ok;
}

// GPTQ qzeros [G, N*bits/32] from zero points z[N, G] (0..2^bits-1). v1 stores z-1 (so z = 0 cannot
// be stored: code_out_of_range, as AutoGPTQ would corrupt the neighbouring field); v2 stores z.
// N must be a multiple of 32/bits.
// Z: std::uint8_t, or std::int32_t (the zero points quantize writes for asymmetric schemes).
template <class Z, std::enable_if_t<std::is_same<Z, std::uint8_t>::value || std::is_same<Z, std::int32_t>::value, int> = 0>
inline status pack_qzeros(const Z* z, std::int64_t n, std::int64_t groups, int bits, format fmt,
                          std::uint32_t* qzeros) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (n < 0 || groups < 0 || n % (32 / bits) != 0) return status::bad_shape;
  if (n * groups == 0) return status::ok;
  if (z == nullptr || qzeros == nullptr) return status::null_pointer;
  if (!detail::codes_fit(z, n * groups, bits, false)) return status::code_out_of_range;
  const int sub = fmt == format::v1 ? 1 : 0;
  for (std::int64_t i = 0; i < n * groups; ++i)
    if (z[i] < sub) return status::code_out_of_range;
  const int pf = 32 / bits;
  const std::int64_t wpr = n / pf;
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t w = 0; w < wpr; ++w) {
      std::uint32_t word = 0;
      for (int j = 0; j < pf; ++j) word |= static_cast<std::uint32_t>(z[(w * pf + j) * groups + g] - sub) << (bits * j);
      qzeros[g * wpr + w] = word;
    }
  return status::ok;
}
// Inverse of gptq::pack_qzeros: z[N, G] (v1 adds the 1 back; a stored field of 2^bits-1 gives 2^bits).
inline status unpack_qzeros(const std::uint32_t* qzeros, std::int64_t n, std::int64_t groups, int bits,
                            format fmt, std::int32_t* z) {
  if (!detail::gptq_bits_ok(bits)) return status::bad_bits;
  if (n < 0 || groups < 0 || n % (32 / bits) != 0) return status::bad_shape;
  if (n * groups == 0) return status::ok;
  if (z == nullptr || qzeros == nullptr) return status::null_pointer;
  const int pf = 32 / bits;
  const std::int64_t wpr = n / pf;
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t g = 0; g < groups; ++g)
      z[c * groups + g] = static_cast<std::int32_t>((qzeros[g * wpr + c / pf] >> (bits * (c % pf))) & low_mask(bits)) +
                          (fmt == format::v1 ? 1 : 0);
  return status::ok;
}

// GPTQ/AWQ scales: fp16 bits [G, N] from float scales s[N, G] (transpose; to_fp16 = IEEE RNE).
// NaN -> non_finite; a finite scale that rounds to fp16 Inf -> scale_overflow (nothing written).
// Quantize with fp16-representable scales if the codes must match the stored scale exactly.
inline status scales_to_fp16_transposed(const float* s, std::int64_t n, std::int64_t groups, std::uint16_t* out) {
  if (n < 0 || groups < 0) return status::bad_shape;
  if (n * groups == 0) return status::ok;
  if (s == nullptr || out == nullptr) return status::null_pointer;
  for (std::int64_t i = 0; i < n * groups; ++i) {
    if (detail::is_nan(s[i])) return status::non_finite;
    if ((to_fp16(s[i]) & 0x7FFFu) == 0x7C00u) return detail::is_nonfinite(s[i]) ? status::non_finite : status::scale_overflow;
  }
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t g = 0; g < groups; ++g) out[g * n + c] = to_fp16(s[c * groups + g]);
  return status::ok;
}

}  // namespace gptq

namespace awq {

// AWQ's nibble order: field i of a word holds column order[i] of its 8-column group.
inline constexpr int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// AWQ stores its scales as GPTQ does: fp16 [G, N].
using gptq::scales_to_fp16_transposed;

// AWQ qweight [K, N/8] from unsigned 4-bit codes q[N, K] (N a multiple of 8). Transposes to [K, N]
// and packs along N with the interleave awq::order.
inline status pack_qweight(const std::uint8_t* q, std::int64_t n, std::int64_t k, std::uint32_t* qweight) {
  if (n < 0 || k < 0 || n % 8 != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  if (q == nullptr || qweight == nullptr) return status::null_pointer;
  if (!detail::codes_fit(q, n * k, 4, false)) return status::code_out_of_range;
  for (std::int64_t kk = 0; kk < k; ++kk)
    for (std::int64_t w = 0; w < n / 8; ++w) {
      std::uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= std::uint32_t{q[(8 * w + order[i]) * k + kk]} << (4 * i);
      qweight[kk * (n / 8) + w] = word;
    }
  return status::ok;
}
// Inverse of awq::pack_qweight: q[N, K].
inline status unpack_qweight(const std::uint32_t* qweight, std::int64_t n, std::int64_t k, std::uint8_t* q) {
  if (n < 0 || k < 0 || n % 8 != 0) return status::bad_shape;
  if (n * k == 0) return status::ok;
  if (q == nullptr || qweight == nullptr) return status::null_pointer;
  for (std::int64_t kk = 0; kk < k; ++kk)
    for (std::int64_t w = 0; w < n / 8; ++w)
      for (int i = 0; i < 8; ++i)
        q[(8 * w + order[i]) * k + kk] = static_cast<std::uint8_t>(nibble_of(qweight[kk * (n / 8) + w], i));
  return status::ok;
}
// AWQ qzeros [G, N/8] from zero points z[N, G] (0..15).
// Z: std::uint8_t, or std::int32_t (the zero points quantize writes for asymmetric schemes).
template <class Z, std::enable_if_t<std::is_same<Z, std::uint8_t>::value || std::is_same<Z, std::int32_t>::value, int> = 0>
inline status pack_qzeros(const Z* z, std::int64_t n, std::int64_t groups, std::uint32_t* qzeros) {
  if (n < 0 || groups < 0 || n % 8 != 0) return status::bad_shape;
  if (n * groups == 0) return status::ok;
  if (z == nullptr || qzeros == nullptr) return status::null_pointer;
  if (!detail::codes_fit(z, n * groups, 4, false)) return status::code_out_of_range;
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t w = 0; w < n / 8; ++w) {
      std::uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(z[(8 * w + order[i]) * groups + g]) << (4 * i);
      qzeros[g * (n / 8) + w] = word;
    }
  return status::ok;
}

}  // namespace awq
QNUM_END_NAMESPACE
