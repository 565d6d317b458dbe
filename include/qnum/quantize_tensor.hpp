// qnum/quantize_tensor.hpp: host group quantization over strided 2-D views (per tensor, per row, 1xG, RxC blocks).
//
//   status compute_scales(scheme, input, groups, scales, zeros)            scales (+ zero points) only
//   status quantize(scheme, input, groups, codes, scales, zeros, rounding)   scales, zero points and codes
//   status dequantize(scheme, codes, groups, scales, zeros, output)          output = dequantize_value(...)
//   status fake_quantize(scheme, input, groups, output, rounding)             = dequantize(quantize(input))
//   row_stats(x, n), quantize_row(scheme, params, x, n, codes)               building blocks (see below)
//
// Views are row-major with a row stride in elements (>= cols), int64 sizes and indexing. Inputs are
// fp32 (`const float*`), bf16 or fp16 bits (`const std::uint16_t*` with dtype::bf16 / fp16); outputs
// of dequantize/fake_quantize likewise (bf16/fp16 rounded RNE from the fp32 result). Codes are one
// code_t<F> byte per element (integer formats: two's complement in the low F::bits bits). Scales are
// stored in scheme.store's type (4, 2 or 1 bytes per scale: scale_view.elem_bytes must match), one per
// group, shape [ceil(rows/R), ceil(cols/C)]; zero points are int32, same shape, required for asymmetric.
// Groups: per_tensor(), per_row(), group<G>{} or group_size(G) (1xG along the row), block(R, C).
// A group the tensor does not fill is a padded group: its statistics are those of its elements plus
// zeros (identical, because every scheme includes 0 in its range), its elements are quantized.
// Rounding: rounding_mode::nearest_even, or stochastic with seed: element (r, c) uses
// stochastic(random_bits(seed, r * cols + c)).
// Two-level schemes (NVFP4): pass outer_scale (per-tensor fp32, e.g. amax/(448*6)) to quantize/dequantize.
// Empty tensors (rows or cols 0) are ok and do nothing.
// Schemes: a scheme<F> value, or a holder (static_scheme.hpp: fixed_scheme<presets::x>{} folds the scheme's
// fields at compile time), same bits.
// Speed: fp32/bf16 tensors with nearest-even rounding and an fp32 work dtype take the SIMD lanes of
// host/simd.hpp, the CPU's best instruction set chosen at run time (same bits, tested against the
// generic loop); everything else the generic loop.
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/detail/param_store.hpp"
#include "qnum/host/simd.hpp"
#include "qnum/quantize.hpp"
#include "qnum/random.hpp"
#include "qnum/scale.hpp"
#include "qnum/static_scheme.hpp"
#include "qnum/status.hpp"
#include "qnum/view.hpp"

QNUM_BEGIN_NAMESPACE

// Scale storage view: elem_bytes must equal dtype_bytes(scheme.store).
struct scale_view {
  void* data = nullptr;
  std::int64_t rows = 0, cols = 0, row_stride = 0;
  int elem_bytes = 4;
};
inline scale_view scales_of(float* p, std::int64_t r, std::int64_t c, std::int64_t st = -1) { return {p, r, c, st < 0 ? c : st, 4}; }
inline scale_view scales_of(std::uint16_t* p, std::int64_t r, std::int64_t c, std::int64_t st = -1) { return {p, r, c, st < 0 ? c : st, 2}; }
inline scale_view scales_of(std::uint8_t* p, std::int64_t r, std::int64_t c, std::int64_t st = -1) { return {p, r, c, st < 0 ? c : st, 1}; }

namespace detail {

QNUM_HD float load_elem(const float* p, dtype) { return *p; }
QNUM_HD float load_elem(const std::uint16_t* p, dtype t) { return t == dtype::fp16 ? from_fp16(*p) : from_bf16(*p); }
QNUM_HD void store_elem(float* p, dtype, float v) { *p = v; }
QNUM_HD void store_elem(std::uint16_t* p, dtype t, float v) { *p = t == dtype::fp16 ? to_fp16(v) : to_bf16(v); }

template <class T>
status check_view(const matrix_view<T>& v) {
  // Float tensors: fp32 in float, bf16 / fp16 in 16-bit elements (codes and zero points carry no dtype).
  if (std::is_same<std::remove_const_t<T>, float>::value && v.type != dtype::fp32) return status::bad_type;
  if (std::is_same<std::remove_const_t<T>, std::uint16_t>::value && (!is_tensor_dtype(v.type) || v.type == dtype::fp32))
    return status::bad_type;
  return check_extents(v);
}

inline status make_grid(std::int64_t rows, std::int64_t cols, group_shape g, grid& out) {
  if (g.rows < 0 || g.cols < 0) return status::bad_group;
  const extent ge = group_extent(rows, cols, g);
  out.gr = ge.rows;
  out.gc = ge.cols;
  const extent e = scale_shape(rows, cols, g);
  out.nr = e.rows;
  out.nc = e.cols;
  return status::ok;
}

inline status check_scales(const scale_view& s, const grid& g, int bytes) {
  if (g.nr == 0 || g.nc == 0) return status::ok;
  if (s.data == nullptr) return status::null_pointer;
  if (s.elem_bytes != bytes || s.rows != g.nr || s.cols != g.nc || s.row_stride < s.cols) return status::bad_scale_buffer;
  return status::ok;
}
inline status check_zeros(const matrix_view<std::int32_t>& z, const grid& g, bool needed) {
  if (!needed || g.nr == 0 || g.nc == 0) return status::ok;
  if (z.data == nullptr) return status::null_pointer;
  if (z.rows != g.nr || z.cols != g.nc || z.row_stride < z.cols) return status::bad_scale_buffer;
  return status::ok;
}

// Where group parameters go: the scale buffer, and the zero points where the scheme is asymmetric (a symmetric
// scheme leaves a zero-point buffer it was given untouched).
inline param_store store_of(const scale_view& s, const matrix_view<std::int32_t>& zeros, bool asymmetric) {
  return {s.data, s.cols, s.row_stride, s.elem_bytes, asymmetric ? zeros.data : nullptr, zeros.row_stride};
}
QNUM_HD std::uint32_t read_scale(const scale_view& s, std::int64_t i, std::int64_t j) {
  return scale_code_at(s.data, s.elem_bytes, i * s.row_stride + j);
}

// Rebuild a group's dequantization parameters from a stored scale code (and zero point).
template <class F>
QNUM_HD group_params params_from_stored(const scheme<F>& s, std::uint32_t code, std::int32_t zero, float outer) {
  group_params p;
  float v = scale_value(s.store, code);
  outer = sanitize_outer(outer);
  if (outer > 0.0f) v = finite_or_max(mul_rn(v, outer));
  p.scale = v;
  p.code_scale = v;
  p.scale_code = code;
  p.zero = zero;
  return p;
}

// Whether the host lanes can load/store this view's elements (fp32, or 16-bit elements holding bf16).
template <class T>
constexpr bool lane_type() {
  return std::is_same<std::remove_const_t<T>, float>::value || std::is_same<std::remove_const_t<T>, std::uint16_t>::value;
}
template <class T>
bool lane_view(const matrix_view<T>& v) {
  return QNUM_HOST_SIMD && lane_type<T>() && (sizeof(T) == 4 || v.type == dtype::bf16);
}
// Whether groups of scheme s with rounding rd may take the lanes (per group, simd::group_covered too).
template <class F>
constexpr bool lane_scheme(const scheme<F>& s, const rounding& rd) {
  return QNUM_HOST_SIMD && rd.mode == rounding_mode::nearest_even && s.work == dtype::fp32;
}

template <class F, class T>
group_stats stats_of(const matrix_view<T>& in, const grid& g, std::int64_t bi, std::int64_t bj) {
  group_stats st;
  const group_span sp = span_of(g, in.rows, in.cols, bi, bj);
#if QNUM_HOST_SIMD
  if constexpr (lane_type<T>()) {
    if (lane_view(in) && simd::dispatch([&](auto e) {
          st = decltype(e)::stats(in.data + sp.r0 * in.row_stride + sp.c0, in.row_stride, sp.r1 - sp.r0, sp.c1 - sp.c0);
        }))
      return st;
  }
#endif
  for (std::int64_t r = sp.r0; r < sp.r1; ++r)
    for (std::int64_t c = sp.c0; c < sp.c1; ++c) accumulate(st, load_elem(in.data + r * in.row_stride + c, in.type));
  return st;
}

// Visit each group: fn(bi, bj).
template <class Fn>
void for_each_group(const grid& g, Fn&& fn) {
  for (std::int64_t bi = 0; bi < g.nr; ++bi)
    for (std::int64_t bj = 0; bj < g.nc; ++bj) fn(bi, bj);
}

template <class F>
QNUM_HD code_t<F> quantize_with(const scheme<F>& s, const group_params& p, float x, const rounding& rd, std::int64_t idx) {
  if (rd.mode == rounding_mode::stochastic)
    return quantize_value(s, p, x, stochastic(random_bits(rd.seed, static_cast<std::uint64_t>(idx))));
  return quantize_value(s, p, x, rne);
}

// The checks shared by compute_scales and quantize: group grid, scale buffer, zero-point buffer (needed
// for asymmetric schemes). `empty` is set (with status ok) when the tensor has no element.
template <class F>
status prepare_groups(const scheme<F>& s, std::int64_t rows, std::int64_t cols, group_shape groups,
                      const scale_view& scales, const matrix_view<std::int32_t>& zeros, grid& g, bool& empty) {
  if (status e = make_grid(rows, cols, groups, g); e != status::ok) return e;
  empty = rows == 0 || cols == 0;
  if (empty) return status::ok;
  if (status e = check_scales(scales, g, dtype_bytes(s.store)); e != status::ok) return e;
  return check_zeros(zeros, g, s.kind == scheme_kind::asymmetric);
}

// Group (bi, bj)'s parameters from its data; its stored scale (and zero point, asymmetric) written out.
template <class F, class T>
group_params group_params_stored(const scheme<F>& s, const matrix_view<const T>& in, const grid& g, std::int64_t bi,
                                 std::int64_t bj, float outer_scale, const scale_view& scales,
                                 const matrix_view<std::int32_t>& zeros) {
  const group_params p = compute_params(s, stats_of<F>(in, g, bi, bj), outer_scale);
  put_group(store_of(scales, zeros, s.kind == scheme_kind::asymmetric), bi, bj, p);
  return p;
}

}  // namespace detail

// Building blocks for callers that form group parameters themselves (e.g. presets::ct_nvfp4_params):
// the statistics of n contiguous elements (as accumulate() gives them), and codes[i] =
// quantize_value(s, p, x[i], rne) for i < n. x is fp32 (`const float*`) or 16-bit bits of type t.
// Both take the SIMD lanes where quantize() would.
template <class T>
group_stats row_stats(const T* x, std::int64_t n, dtype t = sizeof(T) == 2 ? dtype::bf16 : dtype::fp32) {
  const matrix_view<const T> v{x, 1, n, n, t};
  detail::grid g;
  g.gr = 1;
  g.gc = n;
  g.nr = g.nc = 1;
  return n > 0 ? detail::stats_of<float>(v, g, 0, 0) : group_stats{};
}
template <class F, class T>
void quantize_row(const scheme<F>& s, const group_params& p, const T* x, std::int64_t n, std::uint8_t* codes,
                  dtype t = sizeof(T) == 2 ? dtype::bf16 : dtype::fp32) {
#if QNUM_HOST_SIMD
  if constexpr (detail::simd::format_covered<F>() && detail::lane_type<T>()) {
    if (detail::lane_scheme(s, nearest_even()) && (sizeof(T) == 4 || t == dtype::bf16) && detail::simd::group_covered(s, p) &&
        detail::simd::dispatch([&](auto e) { decltype(e)::quantize_row(s, p, x, n, codes); }))
      return;
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) codes[i] = quantize_value(s, p, detail::load_elem(x + i, t), rne);
}

// compute_scales, quantize, dequantize and fake_quantize take the scheme as a scheme<F> value (known at run
// time) or as a holder (static_scheme.hpp): fixed_scheme<presets::x>{} makes every field a compile-time
// constant in the group loop, runtime_scheme<F> is the scheme<F> form. Same bits either way.
template <class F, class T>
status compute_scales(const scheme<F>& s, matrix_view<const T> in, group_shape groups, scale_view scales,
                      matrix_view<std::int32_t> zeros = {}, float outer_scale = 0.0f) {
  if (status e = detail::check_view(in); e != status::ok) return e;
  detail::grid g;
  bool empty = false;
  if (status e = detail::prepare_groups(s, in.rows, in.cols, groups, scales, zeros, g, empty); e != status::ok || empty)
    return e;
  detail::for_each_group(g, [&](std::int64_t bi, std::int64_t bj) {
    detail::group_params_stored(s, in, g, bi, bj, outer_scale, scales, zeros);
  });
  return status::ok;
}
template <class H, class T, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status compute_scales(const H& h, matrix_view<const T> in, group_shape groups, scale_view scales,
                      matrix_view<std::int32_t> zeros = {}, float outer_scale = 0.0f) {
  return compute_scales(h.get(), in, groups, scales, zeros, outer_scale);
}

namespace detail {
// quantize, where `in` may be one piece of a larger input of whole_bytes bytes that the caller walks in order
// (simd::group_grid::whole_bytes; 0: in is the whole input).
template <class H, class T>
status quantize_piece(const H& h, matrix_view<const T> in, group_shape groups, matrix_view<std::uint8_t> codes, scale_view scales,
                      matrix_view<std::int32_t> zeros, rounding rd, float outer_scale, std::int64_t whole_bytes) {
  using F = typename H::format;
  const scheme<F> s = h.get();
  if (status e = detail::check_view(in); e != status::ok) return e;
  if (status e = detail::check_view(codes); e != status::ok) return e;
  if (codes.rows != in.rows || codes.cols != in.cols) return status::bad_shape;
  detail::grid g;
  bool empty = false;
  if (status e = detail::prepare_groups(s, in.rows, in.cols, groups, scales, zeros, g, empty); e != status::ok || empty)
    return e;
  // One group's codes by the per-element definition (rounding rd), its parameters given.
  auto generic_codes = [&](std::int64_t bi, std::int64_t bj, const group_params& p) {
    const detail::group_span sp = detail::span_of(g, in.rows, in.cols, bi, bj);
    for (std::int64_t r = sp.r0; r < sp.r1; ++r)
      for (std::int64_t c = sp.c0; c < sp.c1; ++c)
        codes.data[r * codes.row_stride + c] =
            detail::quantize_with(s, p, detail::load_elem(in.data + r * in.row_stride + c, in.type), rd, r * in.cols + c);
  };
#if QNUM_HOST_SIMD
  if constexpr (detail::simd::format_covered<F>() && detail::lane_type<T>()) {
    if (detail::lane_scheme(s, rd) && detail::lane_view(in)) {
      const detail::param_store store = detail::store_of(scales, zeros, s.kind == scheme_kind::asymmetric);
      const detail::simd::group_grid lg{g, in.rows, in.cols, in.row_stride, codes.row_stride, whole_bytes};
      if (detail::simd::dispatch([&](auto e) {
            decltype(e)::quantize_groups(h, in.data, lg, outer_scale, codes.data, codes.row_stride, store, generic_codes);
          }))
        return status::ok;
    }
  }
#else
  static_cast<void>(whole_bytes);  // read by the SIMD lanes only
#endif
  detail::for_each_group(g, [&](std::int64_t bi, std::int64_t bj) {
    generic_codes(bi, bj, detail::group_params_stored(s, in, g, bi, bj, outer_scale, scales, zeros));
  });
  return status::ok;
}
}  // namespace detail

template <class H, class T, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status quantize(const H& h, matrix_view<const T> in, group_shape groups, matrix_view<std::uint8_t> codes,
                scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {}, float outer_scale = 0.0f) {
  return detail::quantize_piece(h, in, groups, codes, scales, zeros, rd, outer_scale, 0);
}
template <class F, class T>
status quantize(const scheme<F>& s, matrix_view<const T> in, group_shape groups, matrix_view<std::uint8_t> codes,
                scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {}, float outer_scale = 0.0f) {
  return quantize(as_holder(s), in, groups, codes, scales, zeros, rd, outer_scale);
}

template <class F, class T>
status dequantize(const scheme<F>& s, matrix_view<const std::uint8_t> codes, group_shape groups, scale_view scales,
                  matrix_view<const std::int32_t> zeros, matrix_view<T> out, float outer_scale = 0.0f) {
  if (status e = detail::check_view(codes); e != status::ok) return e;
  if (status e = detail::check_view(out); e != status::ok) return e;
  if (codes.rows != out.rows || codes.cols != out.cols) return status::bad_shape;
  detail::grid g;
  if (status e = detail::make_grid(out.rows, out.cols, groups, g); e != status::ok) return e;
  if (out.rows == 0 || out.cols == 0) return status::ok;
  if (status e = detail::check_scales(scales, g, dtype_bytes(s.store)); e != status::ok) return e;
  const bool asym = s.kind == scheme_kind::asymmetric;
  if (asym) {
    if (zeros.data == nullptr) return status::null_pointer;
    if (zeros.rows != g.nr || zeros.cols != g.nc || zeros.row_stride < zeros.cols) return status::bad_scale_buffer;
  }
  auto params = [&](std::int64_t bi, std::int64_t bj) {
    return detail::params_from_stored(s, detail::read_scale(scales, bi, bj), asym ? zeros.data[bi * zeros.row_stride + bj] : 0,
                                      outer_scale);
  };
#if QNUM_HOST_SIMD
  if constexpr (detail::simd::format_covered<F>() && detail::lane_type<T>()) {
    if (s.work == dtype::fp32 && detail::lane_view(out)) {
      const detail::simd::group_grid lg{g, out.rows, out.cols, codes.row_stride, out.row_stride};
      const detail::simd::stored_scales st{asym ? nullptr : scales.data, scales.row_stride, scales.elem_bytes, s.store,
                                           outer_scale};
      if (detail::simd::dispatch([&](auto e) { decltype(e)::template dequantize_groups<F>(codes.data, lg, out.data, params, st); }))
        return status::ok;
    }
  }
#endif
  detail::for_each_group(g, [&](std::int64_t bi, std::int64_t bj) {
    const group_params p = params(bi, bj);
    const detail::group_span sp = detail::span_of(g, out.rows, out.cols, bi, bj);
    for (std::int64_t r = sp.r0; r < sp.r1; ++r)
      for (std::int64_t c = sp.c0; c < sp.c1; ++c)
        detail::store_elem(out.data + r * out.row_stride + c, out.type,
                           dequantize_value(s, p, codes.data[r * codes.row_stride + c]));
  });
  return status::ok;
}
template <class H, class T, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status dequantize(const H& h, matrix_view<const std::uint8_t> codes, group_shape groups, scale_view scales,
                  matrix_view<const std::int32_t> zeros, matrix_view<T> out, float outer_scale = 0.0f) {
  return dequantize(h.get(), codes, groups, scales, zeros, out, outer_scale);
}

template <class H, class T, class U, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status fake_quantize(const H& h, matrix_view<const T> in, group_shape groups, matrix_view<U> out, rounding rd = {},
                     float outer_scale = 0.0f) {
  using F = typename H::format;
  const scheme<F> s = h.get();
  if (status e = detail::check_view(in); e != status::ok) return e;
  if (status e = detail::check_view(out); e != status::ok) return e;
  if (out.rows != in.rows || out.cols != in.cols) return status::bad_shape;
  detail::grid g;
  if (status e = detail::make_grid(in.rows, in.cols, groups, g); e != status::ok) return e;
  if (in.rows == 0 || in.cols == 0) return status::ok;
  auto generic_group = [&](std::int64_t bi, std::int64_t bj, const group_params& p) {
    const detail::group_span sp = detail::span_of(g, in.rows, in.cols, bi, bj);
    for (std::int64_t r = sp.r0; r < sp.r1; ++r)
      for (std::int64_t c = sp.c0; c < sp.c1; ++c) {
        const float x = detail::load_elem(in.data + r * in.row_stride + c, in.type);
        detail::store_elem(out.data + r * out.row_stride + c, out.type,
                           dequantize_value(s, p, detail::quantize_with(s, p, x, rd, r * in.cols + c)));
      }
  };
#if QNUM_HOST_SIMD
  if constexpr (detail::simd::format_covered<F>() && detail::lane_type<T>() && detail::lane_type<U>()) {
    if (detail::lane_scheme(s, rd) && detail::lane_view(in) && detail::lane_view(out)) {
      const detail::simd::group_grid lg{g, in.rows, in.cols, in.row_stride, out.row_stride};
      if (detail::simd::dispatch([&](auto e) {
            decltype(e)::fake_quantize_groups(h, in.data, lg, outer_scale, out.data, generic_group);
          }))
        return status::ok;
    }
  }
#endif
  detail::for_each_group(g, [&](std::int64_t bi, std::int64_t bj) {
    generic_group(bi, bj, compute_params(s, detail::stats_of<F>(in, g, bi, bj), outer_scale));
  });
  return status::ok;
}
template <class F, class T, class U>
status fake_quantize(const scheme<F>& s, matrix_view<const T> in, group_shape groups, matrix_view<U> out,
                     rounding rd = {}, float outer_scale = 0.0f) {
  return fake_quantize(as_holder(s), in, groups, out, rd, outer_scale);
}

// Conveniences over the entry points above (the same functions, fewer arguments to spell):
//  - an input view of mutable elements (matrix_view<float>, matrix_view<std::uint16_t>) is read as const;
//  - dequantize without zero points (symmetric schemes; an asymmetric one reports null_pointer);
//  - fake_quantize with an outer (per-tensor) scale and nearest-even rounding.
template <class S, class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status compute_scales(const S& s, matrix_view<T> in, group_shape groups, scale_view scales,
                      matrix_view<std::int32_t> zeros = {}, float outer_scale = 0.0f) {
  return compute_scales(s, matrix_view<const T>(in), groups, scales, zeros, outer_scale);
}
template <class S, class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status quantize(const S& s, matrix_view<T> in, group_shape groups, matrix_view<std::uint8_t> codes, scale_view scales,
                matrix_view<std::int32_t> zeros = {}, rounding rd = {}, float outer_scale = 0.0f) {
  return quantize(s, matrix_view<const T>(in), groups, codes, scales, zeros, rd, outer_scale);
}
template <class S, class T, class U, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status fake_quantize(const S& s, matrix_view<T> in, group_shape groups, matrix_view<U> out, rounding rd = {},
                     float outer_scale = 0.0f) {
  return fake_quantize(s, matrix_view<const T>(in), groups, out, rd, outer_scale);
}
template <class S, class T, class U>
status fake_quantize(const S& s, matrix_view<T> in, group_shape groups, matrix_view<U> out, float outer_scale) {
  return fake_quantize(s, matrix_view<const T>(in), groups, out, nearest_even(), outer_scale);
}
template <class S, class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status dequantize(const S& s, matrix_view<const std::uint8_t> codes, group_shape groups, scale_view scales,
                  matrix_view<T> out, float outer_scale = 0.0f) {
  return dequantize(s, codes, groups, scales, matrix_view<const std::int32_t>{}, out, outer_scale);
}

// The dequantization parameters of one group from its stored scale code (the bits quantize wrote into the
// scale buffer: fp32/bf16/fp16 bits, an E8M0 or UE4M3 byte), its zero point and the outer scale:
// p.scale is the value dequantize multiplies by.
template <class F>
QNUM_HD group_params decode_scale(const scheme<F>& s, std::uint32_t code, std::int32_t zero = 0, float outer_scale = 0.0f) {
  return detail::params_from_stored(s, code, zero, outer_scale);
}

// Per-tensor amax over the finite elements (for two-level schemes and TE current scaling).
template <class T>
status tensor_amax(matrix_view<const T> in, float& amax) {
  amax = 0.0f;
  if (status e = detail::check_view(in); e != status::ok) return e;
  if (in.rows == 0 || in.cols == 0) return status::ok;
  detail::grid g;
  g.gr = in.rows;
  g.gc = in.cols;
  g.nr = g.nc = 1;
  amax = detail::stats_of<float>(in, g, 0, 0).amax;
  return status::ok;
}

QNUM_END_NAMESPACE
