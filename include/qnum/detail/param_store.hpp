// qnum/detail/param_store.hpp: where a quantizer stores each group's parameters: the scale code in the scale
// buffer (1, 2 or 4 bytes an element, row-major with a row stride) and, for asymmetric schemes, the zero point.
// One definition for the generic per-group loop (quantize_tensor.hpp) and the host SIMD engines (host/simd.hpp),
// which add one vector store for a run of codes in a contiguous scale row.
//
//   scale_code_at(scales, bytes, e)     element e of a buffer of 1-, 2- or 4-byte scale codes, as a code
//   set_scale_code(scales, bytes, e, c) and the store of one: the one rule for reading and writing stored
//                                       scales, host and device (a device kernel passes dtype_bytes of its
//                                       scheme's scale type, a constant where the scheme is fixed)
//   param_store o{scales, cols, row_stride, elem_bytes, zeros, zero_stride}
//   put_scale_code(o, e, code)          element e (row * row_stride + column) of the scale buffer
//   put_group(o, bi, bj, p)             group (bi, bj): p.scale_code, and p.zero where o.zeros is set (or the
//   put_group(o, bi, bj, code, zero)    two given apart)
//   put_scale(o, bi, bj, code)          group (bi, bj)'s scale code only: the symmetric engines, whose groups
//                                       have no zero point (their stores have none: store_of)
//   put_scale_codes_flat(o, t, k, c)    groups t .. t + k - 1 in row-major order over the `cols` columns
// A store with a null scale buffer stores nothing (fake quantization keeps no parameters).
#pragma once

#include <cstdint>

#include "qnum/config.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

struct param_store {
  void* scales = nullptr;  // null: nothing is stored
  std::int64_t cols = 0, row_stride = 0;
  int elem_bytes = 4;
  std::int32_t* zeros = nullptr;  // null: no zero points (symmetric schemes)
  std::int64_t zero_stride = 0;
};

// bytes is 4, 2 or 1 (tested in that order: fp32 scales first; any other value reads and writes 1-byte codes).
QNUM_HD std::uint32_t scale_code_at(const void* scales, int bytes, std::int64_t e) {
  if (bytes == 4) return static_cast<const std::uint32_t*>(scales)[e];
  if (bytes == 2) return static_cast<const std::uint16_t*>(scales)[e];
  return static_cast<const std::uint8_t*>(scales)[e];
}
QNUM_HD void set_scale_code(void* scales, int bytes, std::int64_t e, std::uint32_t code) {
  if (bytes == 4) static_cast<std::uint32_t*>(scales)[e] = code;
  else if (bytes == 2) static_cast<std::uint16_t*>(scales)[e] = static_cast<std::uint16_t>(code);
  else static_cast<std::uint8_t*>(scales)[e] = static_cast<std::uint8_t>(code);
}

QNUM_HD void put_scale_code(const param_store& o, std::int64_t e, std::uint32_t code) {
  set_scale_code(o.scales, o.elem_bytes, e, code);
}
QNUM_HD void put_group(const param_store& o, std::int64_t bi, std::int64_t bj, std::uint32_t scale_code, std::int32_t zero) {
  if (o.scales == nullptr) return;
  put_scale_code(o, bi * o.row_stride + bj, scale_code);
  if (o.zeros != nullptr) o.zeros[bi * o.zero_stride + bj] = zero;
}
QNUM_HD void put_scale(const param_store& o, std::int64_t bi, std::int64_t bj, std::uint32_t scale_code) {
  if (o.scales != nullptr) put_scale_code(o, bi * o.row_stride + bj, scale_code);
}
QNUM_HD void put_group(const param_store& o, std::int64_t bi, std::int64_t bj, const group_params& p) {
  put_group(o, bi, bj, p.scale_code, p.zero);
}
// code[j] (anything indexable, a SIMD vector included) for group t + j, j < k.
template <class Codes>
QNUM_HD void put_scale_codes_flat(const param_store& o, std::int64_t t, int k, const Codes& code) {
  if (o.scales == nullptr) return;
  std::int64_t r = t / o.cols, c = t % o.cols;
  for (int j = 0; j < k; ++j) {
    put_scale_code(o, r * o.row_stride + c, static_cast<std::uint32_t>(code[j]));
    if (++c == o.cols) {
      c = 0;
      ++r;
    }
  }
}

}  // namespace detail
QNUM_END_NAMESPACE
