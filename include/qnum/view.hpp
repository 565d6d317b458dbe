// qnum/view.hpp: matrix_view, the one tensor type of every host entry point and device launcher, and the
// group shapes (group_shape) that split a tensor into quantization groups.
//
//   matrix_view<T>{data, rows, cols, row_stride, type}    row-major, element (r, c) at data[r * row_stride + c]
//   view(p, rows, cols [, row_stride [, dtype]])          row_stride defaults to cols
//   view<fp16>(bits, rows, cols [, row_stride])           16-bit elements named by their format
//   view(p, n)                                            a 1 x n view (flat buffers: gradients, optimizer state)
//   group_shape: per_tensor(), per_row(), group<G>{} / group_size(G) (1xG), block(R, C); group_extent(rows, cols, g),
//   scale_shape(rows, cols, g)
//
// Extents and strides are int64. `type` gives the meaning of 16-bit float elements (bf16 or fp16 bits in
// std::uint16_t; view() defaults 16-bit elements to bf16 and everything else to fp32); integer views
// (codes, zero points, packed words, bytes) do not read it. A view of mutable elements converts to the
// read-only view (matrix_view<const T>) the entry points take for their inputs.
//
// What an entry point checks (the bad-input policy, docs/reliability.md): a negative extent is
// bad_shape, an output whose extent is not the one the entry point writes is bad_shape, a row_stride
// below cols with more than one row is bad_stride, a null data pointer with a non-zero extent is
// null_pointer. An entry point reads and writes only the elements its views cover (never the padding
// between rows).
#pragma once

#include <cstdint>
#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/format.hpp"
#include "qnum/status.hpp"

QNUM_BEGIN_NAMESPACE

template <class T>
struct matrix_view {
  T* data = nullptr;
  std::int64_t rows = 0, cols = 0, row_stride = 0;
  dtype type = dtype::fp32;  // meaning of 16-bit float elements
  // A view of mutable elements converts to the read-only view of the same element type.
  template <class U = T, std::enable_if_t<!std::is_const<U>::value && std::is_same<U, T>::value, int> = 0>
  constexpr operator matrix_view<const U>() const { return {data, rows, cols, row_stride, type}; }
  // Element (r, c).
  QNUM_HD constexpr T& operator()(std::int64_t r, std::int64_t c) const { return data[r * row_stride + c]; }
  // Whether the rows follow each other with no gap (row_stride == cols, or at most one row).
  QNUM_HD constexpr bool contiguous() const { return row_stride == cols || rows <= 1; }
  QNUM_HD constexpr std::int64_t size() const { return rows * cols; }
};

// The rows x cols shape of a tensor an entry point writes (scale_shape, pack_int32_shape, ...).
struct extent {
  std::int64_t rows = 0, cols = 0;
};

template <class T>
constexpr matrix_view<T> view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t row_stride = -1,
                              dtype t = sizeof(T) == 2 ? dtype::bf16 : dtype::fp32) {
  return {data, rows, cols, row_stride < 0 ? cols : row_stride, t};
}
// A flat buffer of n elements as a 1 x n view.
template <class T>
constexpr matrix_view<T> view(T* data, std::int64_t n) {
  return {data, 1, n, n, sizeof(T) == 2 ? dtype::bf16 : dtype::fp32};
}
// 16-bit elements named by their format: view<fp16>(bits, rows, cols) == view(bits, rows, cols, -1, dtype::fp16).
template <class F, class T,
          std::enable_if_t<(std::is_same<F, bf16>::value || std::is_same<F, fp16>::value) &&
                               std::is_same<std::remove_const_t<T>, std::uint16_t>::value, int> = 0>
constexpr matrix_view<T> view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t row_stride = -1) {
  return {data, rows, cols, row_stride < 0 ? cols : row_stride, dtype_of<F>};
}

// Group shape: rows x cols of one group; 0 means the tensor's whole extent in that dimension.
struct group_shape {
  std::int64_t rows = 1, cols = 0;
};
template <int G>
struct group {
  static_assert(G > 0, "group size must be positive");
  static constexpr int size = G;
  constexpr operator group_shape() const { return {1, G}; }
};
constexpr group_shape group_size(std::int64_t g) { return {1, g}; }
constexpr group_shape per_row() { return {1, 0}; }
constexpr group_shape per_tensor() { return {0, 0}; }
constexpr group_shape block(std::int64_t r, std::int64_t c) { return {r, c}; }

// The rows x cols of one group of g in a rows x cols tensor: a 0 dimension of g is the tensor's whole extent
// (at least 1). For group dimensions >= 0.
QNUM_HD constexpr extent group_extent(std::int64_t rows, std::int64_t cols, group_shape g) {
  return {g.rows == 0 ? (rows > 0 ? rows : 1) : g.rows, g.cols == 0 ? (cols > 0 ? cols : 1) : g.cols};
}
// The number of groups down and across a rows x cols tensor: the shape of its scale (and zero-point)
// buffer. A negative extent or group dimension gives {0, 0} (quantize reports it as a bad shape / group size).
QNUM_HD constexpr extent scale_shape(std::int64_t rows, std::int64_t cols, group_shape g) {
  if (rows < 0 || cols < 0 || g.rows < 0 || g.cols < 0) return {};
  const extent e = group_extent(rows, cols, g);
  return {(rows + e.rows - 1) / e.rows, (cols + e.cols - 1) / e.cols};
}

namespace detail {

// The read-only view of v's elements.
template <class T>
QNUM_HD constexpr matrix_view<const T> as_const(const matrix_view<T>& v) {
  return {v.data, v.rows, v.cols, v.row_stride, v.type};
}

// Extents, stride and pointer of a view of any shape: ok, bad_shape, bad_stride or null_pointer.
template <class T>
QNUM_HD constexpr status check_extents(const matrix_view<T>& v) {
  if (v.rows < 0 || v.cols < 0) return status::bad_shape;
  if (v.rows == 0 || v.cols == 0) return status::ok;
  if (v.data == nullptr) return status::null_pointer;
  if (v.row_stride < v.cols && v.rows > 1) return status::bad_stride;
  return status::ok;
}
// The same for a view that must be exactly rows x cols (an output whose shape the entry point fixes, or
// an input whose shape another argument fixes).
template <class T>
QNUM_HD constexpr status check_extents(const matrix_view<T>& v, std::int64_t rows, std::int64_t cols) {
  if (v.rows != rows || v.cols != cols) return status::bad_shape;
  return check_extents(v);
}

}  // namespace detail

QNUM_END_NAMESPACE
