// qnum/layout/marlin.hpp: Marlin's tiled INT4 weight layout (what vLLM/SGLang gptq_marlin_repack
// writes) and marlin::permute_scales, so an engine can take Marlin-ready tensors without repacking.
//
// Source read (vllm-project/vllm, marlin_utils_test.py @04aa528e: marlin_permute_weights,
// marlin_weights, get_weight_perm; marlin_utils.py: get_scale_perms, marlin_permute_scales), 16-bit
// activations (is_a_8bit = false), 4-bit codes, no act-order:
//   1. view the [K, N] codes as 16x16 tiles, tile-major: row K/16, column (n/16)*256 + (k%16)*16 + n%16
//   2. within each chunk of 1024 columns (four 16x16 tiles = one 16x64 Marlin tile) take the columns
//      in the order `marlin::weight_perm()` (the mma.m16n8k16 B-fragment order, with the 0,2,4,6,1,3,5,7
//      interleave of each 8 folded in)
//   3. pack 8 consecutive values per int32, value i at bits 4i -> output int32 [K/16, 2N].
// Requires K % 16 == 0 and N % 64 == 0 (the repack's tile; vLLM layers additionally need K % 128).
// Scales: grouped (group < K, group != -1) -> each run of 64 values of the [G, N] array is permuted by
// scale_perm[8i+j] = i + 8j; channel-wise -> runs of 32 by single[8i+j] = 2i + {0,1,8,9,16,17,24,25}[j].
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/layout/pack.hpp"

QNUM_BEGIN_NAMESPACE
namespace marlin {

struct perm_table {
  int v[1024];
};

// get_weight_perm(4) for 16-bit activations: output position p of a 1024-chunk takes input column v[p].
inline const perm_table& weight_perm() {
  static const perm_table t = [] {
    perm_table r{};
    int raw[1024];
    int n = 0;
    for (int i = 0; i < 32; ++i) {
      int perm1[8];
      int m = 0;
      const int col = i / 4;
      for (int block = 0; block < 2; ++block) {
        const int rows[4] = {2 * (i % 4), 2 * (i % 4) + 1, 2 * (i % 4 + 4), 2 * (i % 4 + 4) + 1};
        for (int row : rows) perm1[m++] = 16 * row + col + 8 * block;
      }
      for (int j = 0; j < 4; ++j)
        for (int p : perm1) raw[n++] = p + 256 * j;
    }
    const int inter[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int g = 0; g < 128; ++g)
      for (int i = 0; i < 8; ++i) r.v[8 * g + i] = raw[8 * g + inter[i]];
    return r;
  }();
  return t;
}

}  // namespace marlin
namespace detail {
// Marlin words [K/16, 2N] from a source of unsigned 4-bit fields: nib(n, k) for n < N, k < K.
template <class Nib>
inline void marlin_words(std::int64_t n, std::int64_t k, const Nib& nib, const matrix_view<std::uint32_t>& out) {
  const marlin::perm_table& perm = marlin::weight_perm();
  const std::int64_t row_len = 16 * n;  // values per output row (one 16-row strip of K)
  for (std::int64_t kt = 0; kt < k / 16; ++kt)
    for (std::int64_t w = 0; w < row_len / 8; ++w) {
      std::uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        const std::int64_t p = 8 * w + i;
        const std::int64_t src = (p / 1024) * 1024 + perm.v[p % 1024];  // tile-major column
        const std::int64_t nn = (src / 256) * 16 + src % 16;
        const std::int64_t kk = kt * 16 + (src % 256) / 16;
        word |= nib(nn, kk) << (4 * i);
      }
      out(kt, w) = word;
    }
}
inline status marlin_shape(std::int64_t n, std::int64_t k) {
  return (n < 0 || k < 0 || k % 16 != 0 || n % 64 != 0) ? status::bad_shape : status::ok;
}
}  // namespace detail
namespace marlin {

// Marlin int32 [K/16, 2N] from 4-bit codes q [N, K]: std::uint8_t, the stored uint4b8/uint4 nibbles;
// std::int8_t, signed codes in [-8, 7] stored as uint4b8 (q + 8), the symmetric GPTQ/compressed-tensors type.
template <class T, std::enable_if_t<detail::one_of<T, std::int8_t, std::uint8_t>, int> = 0>
inline status pack_weight(const matrix_view<T>& q, const matrix_view<std::uint32_t>& out) {
  constexpr bool is_signed = std::is_same<std::remove_const_t<T>, std::int8_t>::value;
  if (status e = detail::check_extents(q); e != status::ok) return e;
  const std::int64_t n = q.rows, k = q.cols;
  if (status e = detail::marlin_shape(n, k); e != status::ok) return e;
  if (n * k == 0) return status::ok;
  if (status e = detail::check_extents(out, k / 16, 2 * n); e != status::ok) return e;
  if (!detail::codes_fit(q, 4, is_signed)) return status::code_out_of_range;
  detail::marlin_words(n, k, [&](std::int64_t nn, std::int64_t kk) {
    const std::int32_t v = static_cast<std::int32_t>(q(nn, kk));
    return is_signed ? to_offset_binary(v, 4) : static_cast<std::uint32_t>(v);
  }, out);
  return status::ok;
}

// gptq_marlin_repack without act-order: GPTQ qweight [K/8, N] (4-bit) -> Marlin [K/16, 2N].
inline status repack_gptq(const matrix_view<const std::uint32_t>& qweight, const matrix_view<std::uint32_t>& out) {
  if (status e = detail::check_extents(qweight); e != status::ok) return e;
  const std::int64_t n = qweight.cols, k = 8 * qweight.rows;
  if (status e = detail::marlin_shape(n, k); e != status::ok) return e;
  if (n * k == 0) return status::ok;
  if (status e = detail::check_extents(out, k / 16, 2 * n); e != status::ok) return e;
  detail::marlin_words(n, k, [&](std::int64_t nn, std::int64_t kk) { return nibble_of(qweight(kk / 8, nn), static_cast<int>(kk % 8)); }, out);
  return status::ok;
}

// marlin::permute_scales: scales s [N, G] (weight orientation; any element type T, e.g. fp16/bf16
// bits or float) -> permuted out [G, N], for a weight of K input features quantized in groups of `group`.
// group = -1 or group >= k selects the channel-wise permutation (G must then be 1). N % 64 == 0.
template <class T>
inline status permute_scales(const matrix_view<const T>& s, std::int64_t k, std::int64_t group, const matrix_view<T>& out) {
  if (status e = detail::check_extents(s); e != status::ok) return e;
  const std::int64_t n = s.rows, groups = s.cols;
  if (k < 0 || n % 64 != 0) return status::bad_shape;
  if (group == 0 || group < -1) return status::bad_group;
  const bool grouped = group != -1 && group < k;
  if (grouped ? groups * group != k : groups != 1) return status::bad_group;
  if (n * groups == 0) return status::ok;
  if (status e = detail::check_extents(out, groups, n); e != status::ok) return e;
  static const int single_off[8] = {0, 1, 8, 9, 16, 17, 24, 25};
  const int chunk = grouped ? 64 : 32;
  const std::int64_t total = n * groups;
  for (std::int64_t p = 0; p < total; ++p) {
    const int i = static_cast<int>(p % chunk);
    const int src_in_chunk = grouped ? (i / 8) + 8 * (i % 8) : 2 * (i / 8) + single_off[i % 8];
    const std::int64_t src = (p / chunk) * chunk + src_in_chunk;  // flat index into [G, N]
    out(p / n, p % n) = s(src % n, src / n);
  }
  return status::ok;
}
template <class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
inline status permute_scales(const matrix_view<T>& s, std::int64_t k, std::int64_t group, const matrix_view<T>& out) {
  return permute_scales(detail::as_const(s), k, group, out);
}

}  // namespace marlin
QNUM_END_NAMESPACE
