// qnum/layout/compressed_tensors.hpp: compressed-tensors "pack-quantized" tensors (W4A16 and other
// int 1..8-bit group schemes) built from already-computed signed codes and signed zero points, or for
// int4 straight from the weight (quantize_pack_weight).
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
#include "qnum/format.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/static_scheme.hpp"

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
// Quantize and pack in one call: weight_packed [n, ceil(k/8)] and scales [n, ceil(k/group)] (+ signed zero
// points, asymmetric schemes) of an int4 scheme over w [n, k] (fp32, or bf16 / fp16 bits), the same bits and
// statuses as quantize(s, w, group_size(group), codes, scales, zeros, rd) followed by pack_weight(codes, 4,
// weight_packed), without the [n, k] codes: each row's codes pass through a stack buffer of
// quantize_pack_chunk codes. group: a positive multiple of 8 (else bad_group), as gpu::launch_w4a16_pack
// takes it. Checks first (group, w, scales, zeros, then weight_packed's shape); on an error nothing is written.
constexpr std::int64_t quantize_pack_chunk = 4096;
template <class H, class T, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status quantize_pack_weight(const H& h, matrix_view<const T> w, std::int64_t group, const matrix_view<std::uint32_t>& weight_packed,
                            scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {}) {
  static_assert(std::is_same<typename H::format, qint4>::value, "W4A16 packing: int4 schemes");
  if (group <= 0 || group % 8 != 0) return status::bad_group;
  const scheme<qint4> s = h.get();
  if (status e = detail::check_view(w); e != status::ok) return e;
  detail::grid g;
  bool empty = false;
  if (status e = detail::prepare_groups(s, w.rows, w.cols, group_size(group), scales, zeros, g, empty); e != status::ok || empty)
    return e;
  if (status e = detail::check_extents(weight_packed, w.rows, packed_words(w.cols, 4)); e != status::ok) return e;
  constexpr std::int64_t chunk = quantize_pack_chunk;
  alignas(64) std::uint8_t codes[chunk];
  const std::int64_t k = w.cols;
  auto* scale_bytes = static_cast<unsigned char*>(scales.data);
  // codes [nr, len] (contiguous) -> the words of rows r0.. from column c0 (a multiple of 8), as pack_weight
  // writes them (int4 codes always fit: no range check where the words are the nibble pairs' bytes)
  auto pack = [&](std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t len) {
    std::uint32_t* out = weight_packed.data + r0 * weight_packed.row_stride + c0 / 8;
#if QNUM_NIBBLE_WORDS_AS_BYTES
    for (std::int64_t i = 0; i < nr; ++i) detail::nibble_words_row(codes + i * len, len, 8, out + i * weight_packed.row_stride);
#else
    const std::int64_t pw = packed_words(len, 4);
    const status e = pack_weight(matrix_view<const std::uint8_t>{codes, nr, len, len}, 4,
                                 matrix_view<std::uint32_t>{out, nr, pw, nr > 1 ? weight_packed.row_stride : pw});
    QNUM_ASSERT(e == status::ok);
    (void)e;
#endif
  };
  if (rd.mode == rounding_mode::nearest_even && group <= chunk) {
    // Blocks of whole groups through quantize (its SIMD lanes where it has them): several whole rows when a row
    // fits in a chunk, else up to a chunk of one row's columns; each block reads ahead as the whole weight would
    // (from DRAM, a block alone is too small to prefetch).
    const std::int64_t whole_bytes = w.rows * w.row_stride * static_cast<std::int64_t>(sizeof(T));  // as the lanes count
    auto block = [&](std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t len) {
      const std::int64_t b0 = c0 / group, nb = (len + group - 1) / group;
      const scale_view sv{scale_bytes + (r0 * scales.row_stride + b0) * scales.elem_bytes, nr, nb, nr > 1 ? scales.row_stride : nb,
                          scales.elem_bytes};
      const matrix_view<std::int32_t> zv =
          zeros.data != nullptr ? matrix_view<std::int32_t>{zeros.data + r0 * zeros.row_stride + b0, nr, nb, nr > 1 ? zeros.row_stride : nb}
                                : matrix_view<std::int32_t>{};
      const status e = detail::quantize_piece(
          h, matrix_view<const T>{w.data + r0 * w.row_stride + c0, nr, len, nr > 1 ? w.row_stride : len, w.type}, group_size(group),
          matrix_view<std::uint8_t>{codes, nr, len, len}, sv, zv, rd, 0.0f, whole_bytes);
      QNUM_ASSERT(e == status::ok);  // the views were checked above
      (void)e;
      pack(r0, nr, c0, len);
    };
    if (k <= chunk) {
      const std::int64_t rows_per = chunk / k;
      for (std::int64_t r0 = 0; r0 < w.rows; r0 += rows_per) block(r0, w.rows - r0 < rows_per ? w.rows - r0 : rows_per, 0, k);
    } else {
      const std::int64_t step = chunk / group * group;
      for (std::int64_t r = 0; r < w.rows; ++r)
        for (std::int64_t c0 = 0; c0 < k; c0 += step) block(r, 1, c0, k - c0 < step ? k - c0 : step);
    }
    return status::ok;
  }
  // Groups longer than a chunk, or stochastic rounding (element (r, c) draws random_bits(seed, r * k + c)):
  // each group's parameters as quantize forms them, then its codes a chunk at a time.
  for (std::int64_t r = 0; r < w.rows; ++r) {
    const T* x = w.data + r * w.row_stride;
    for (std::int64_t bj = 0; bj < g.nc; ++bj) {
      const group_params p = detail::group_params_stored(s, w, g, r, bj, 0.0f, scales, zeros);
      const std::int64_t end = (bj + 1) * group < k ? (bj + 1) * group : k;
      for (std::int64_t c0 = bj * group; c0 < end; c0 += chunk) {
        const std::int64_t len = end - c0 < chunk ? end - c0 : chunk;
        if (rd.mode == rounding_mode::nearest_even) {
          quantize_row(s, p, x + c0, len, codes, w.type);
        } else {
          for (std::int64_t i = 0; i < len; ++i)
            codes[i] = detail::quantize_with(s, p, detail::load_elem(x + c0 + i, w.type), rd, r * k + c0 + i);
        }
        pack(r, 1, c0, len);
      }
    }
  }
  return status::ok;
}
template <class T>
status quantize_pack_weight(const scheme<qint4>& s, matrix_view<const T> w, std::int64_t group,
                            const matrix_view<std::uint32_t>& weight_packed, scale_view scales, matrix_view<std::int32_t> zeros = {},
                            rounding rd = {}) {
  return quantize_pack_weight(as_holder(s), w, group, weight_packed, scales, zeros, rd);
}
template <class S, class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status quantize_pack_weight(const S& s, matrix_view<T> w, std::int64_t group, const matrix_view<std::uint32_t>& weight_packed,
                            scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {}) {
  return quantize_pack_weight(s, matrix_view<const T>(w), group, weight_packed, scales, zeros, rd);
}

// compressed-tensors 0.20 FP4 weights in one call: "nvfp4-pack-quantized" (NVFP4A16: groups of 16, weight_scale
// the E4M3 code of each group's scale, under the tensor's weight_global_scale) or "mxfp4-pack-quantized" (MXFP4A16:
// groups of 32, weight_scale the E8M0 exponent), by the rules of presets.hpp: presets::ct_fp4_params (with
// bf16_work: the rules on a bf16 weight), the codes of presets::ct_fp4 (x / code_scale, RNE, satfinite) and
// presets::ct_fp4_zero_sign. w [n, k]: fp32, or bf16 / fp16 bits, k a multiple of the group size (else bad_shape);
// weight_packed [n, k / 2] bytes, element 2i in the low nibble of byte i; weight_scale [n, k / G] bytes.
// global_scale: NVFP4's weight_global_scale (presets::ct_nvfp4_global_scale of the tensor's amax, or of the amax
// of the layers that share it); MXFP4 ignores it. Every group gets the bits of that per-group definition
// (quantize_fp4_group below), groups with NaN or Inf elements included; the SIMD lanes of the CPU's best instruction
// set compute them where they can (fp32 and bf16 weights; NVFP4 with 0 < global_scale <= FLT_MAX). Checks
// first (w, k, weight_packed's shape, weight_scale's); on an error nothing is written.
enum class fp4_kind { nvfp4, mxfp4 };
QNUM_HD constexpr int fp4_group_size(fp4_kind f) { return presets::ct_fp4_group_size(f == fp4_kind::nvfp4); }
// The definition for one group of G = fp4_group_size elements at x (type t): its G codes (0..15, one a byte) and
// its weight_scale byte.
template <class T>
void quantize_fp4_group(fp4_kind kind, const T* x, dtype t, float global_scale, bool bf16_work, std::uint8_t* codes,
                        std::uint8_t* scale_code) {
  const bool nv = kind == fp4_kind::nvfp4;
  const int g = fp4_group_size(kind);
  const group_params p = presets::ct_fp4_params(nv, row_stats(x, g, t).amax, global_scale, bf16_work);
  for (int i = 0; i < g; ++i) codes[i] = static_cast<std::uint8_t>(quantize_value(presets::ct_fp4, p, detail::load_elem(x + i, t), rne));
  presets::ct_fp4_zero_sign(p, x, g, codes, t);
  *scale_code = static_cast<std::uint8_t>(p.scale_code);
}
template <class T, std::enable_if_t<detail::one_of<T, float, std::uint16_t>, int> = 0>
status quantize_pack_fp4(fp4_kind kind, matrix_view<const T> w, float global_scale, const matrix_view<std::uint8_t>& weight_packed,
                         const matrix_view<std::uint8_t>& weight_scale, bool bf16_work = false) {
  const std::int64_t g = fp4_group_size(kind);
  if (status e = detail::check_view(w); e != status::ok) return e;
  if (w.cols % g != 0) return status::bad_shape;
  if (status e = detail::check_extents(weight_packed, w.rows, w.cols / 2); e != status::ok) return e;
  if (status e = detail::check_extents(weight_scale, w.rows, w.cols / g); e != status::ok) return e;
#if QNUM_HOST_SIMD
  const bool nv = kind == fp4_kind::nvfp4;
  const bool lanes = (w.type == dtype::fp32 || w.type == dtype::bf16) && (!nv || (global_scale > 0.0f && global_scale <= detail::flt_max));
#endif
  const std::int64_t ng = w.cols / g;
  for (std::int64_t r = 0; r < w.rows; ++r) {
    const T* x = w.data + r * w.row_stride;
    std::uint8_t* sc = weight_scale.data + r * weight_scale.row_stride;
    std::uint8_t* packed = weight_packed.data + r * weight_packed.row_stride;
    auto group = [&](std::int64_t j) {  // the definition: group j's codes, then its nibble pairs
      std::uint8_t codes[32];
      quantize_fp4_group(kind, x + j * g, w.type, global_scale, bf16_work, codes, sc + j);
      for (std::int64_t i = 0; i < g / 2; ++i) packed[j * (g / 2) + i] = pack_nibble_pair(codes[2 * i], codes[2 * i + 1], nibble_order::low_first);
    };
    bool done = false;
#if QNUM_HOST_SIMD
    if (lanes) done = detail::simd::dispatch([&](auto e) { decltype(e)::ct_fp4_groups(nv, x, ng, global_scale, bf16_work, packed, sc, group); });
#endif
    if (!done)
      for (std::int64_t j = 0; j < ng; ++j) group(j);
  }
  return status::ok;
}
template <class T, std::enable_if_t<detail::one_of<T, float, std::uint16_t>, int> = 0>
status quantize_pack_fp4(fp4_kind kind, matrix_view<T> w, float global_scale, const matrix_view<std::uint8_t>& weight_packed,
                         const matrix_view<std::uint8_t>& weight_scale, bool bf16_work = false) {
  return quantize_pack_fp4(kind, matrix_view<const T>(w), global_scale, weight_packed, weight_scale, bf16_work);
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
