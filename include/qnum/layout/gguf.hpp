// qnum/layout/gguf.hpp: GGUF/ggml blocks Q4_0, Q4_1, Q8_0, quantized and dequantized with ggml's
// reference formulas (ggml-quants.c quantize_row_*_ref / dequantize_row_*), bit for bit.
//
// Blocks run along a row (contiguous K), 32 elements each; the row length must be a multiple of 32.
//   Q4_0 (18 bytes): fp16 d, u8 qs[16]; qs[j] = nib[j] | nib[j+16] << 4 (first half = low nibbles)
//   Q4_1 (20 bytes): fp16 d, fp16 m, u8 qs[16]; same nibble layout
//   Q8_0 (34 bytes): fp16 d, i8 qs[32]
// fp16 = IEEE RNE (to_fp16), little-endian. The multiplier id is computed from the fp32 d.
//
// FMA: ggml's Q4_0/Q4_1 reference computes trunc(x*id + 8.5f) (Q4_1: (x-min)*id + 0.5f); a compiler
// that contracts x*id + 8.5f into one FMA changes a few codes. qnum rounds every step separately
// (no contraction, on host and device), which equals ggml built with -ffp-contract=off or for a
// target without FMA, and gguf-py 0.19's numpy emulation (float32, unfused) — the golden vectors come
// from gguf-py. Q4_1 dequantization is nib*d + m with the product rounded first (gguf-py; the C
// reference may contract it). Q8_0 rounds x*id half away from zero (roundf), exact in both.
//
// Edge behaviour (ggml's, made explicit): a block of zeros gives d = 0 and every code 8 (Q4_0) /
// 0 (Q4_1, Q8_0). When d is so small that id = 1/d overflows to Inf, x*id is Inf or NaN; such a value
// converts to the code of integer 0 (x86 cvttss2si then truncation, what ggml does on x86-64).
// NaN/Inf inputs -> non_finite, nothing written. A finite block whose d or m overflows fp16 is still
// written exactly as ggml writes it (Inf scale) and the function returns scale_overflow.
#pragma once

#include <cstdint>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/detail/fp_rn.hpp"
#include "qnum/detail/ggml_blocks.hpp"
#include "qnum/host/simd.hpp"
#include "qnum/layout/pack.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {
// C's (int8_t)(float v) as compiled for x86-64 (cvttss2si to int32, keep the low byte): truncation
// toward zero; NaN and |v| >= 2^31 give int32 0x80000000 whose low byte is 0.
QNUM_HD std::int32_t ggml_trunc_i8(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return static_cast<std::int32_t>(static_cast<std::int8_t>(static_cast<std::int32_t>(v) & 0xFF));
}
// C's roundf then (int8_t): half away from zero, exact (no |v|+0.5 rounding error).
QNUM_HD std::int32_t ggml_roundf_i8(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  const float a = abs_bits(v);
  const std::int32_t t = static_cast<std::int32_t>(a);      // floor(|v|)
  const float frac = a - static_cast<float>(t);              // exact (Sterbenz / integer part)
  std::int64_t r = t + (frac >= 0.5f ? 1 : 0);
  if (v < 0) r = -r;
  return static_cast<std::int32_t>(static_cast<std::int8_t>(static_cast<std::uint32_t>(r) & 0xFFu));
}
// A Q4 nibble: min(15, trunc(v * id + offset)) as ggml's uint8 arithmetic gives it (v = x, or x - min for Q4_1).
QNUM_HD std::uint32_t ggml_q4_code(float v, float id, float offset) {
  const std::int32_t t = ggml_trunc_i8(add_rn(mul_rn(v, id), offset));
  return static_cast<std::uint8_t>(t < ggml_q4_max ? t : ggml_q4_max);
}
}  // namespace detail

namespace gguf {

enum class type : int { q4_0 = detail::ggml_q4_0, q4_1 = detail::ggml_q4_1, q8_0 = detail::ggml_q8_0 };  // GGMLQuantizationType

inline constexpr int block_size = 32;

// Bytes of one 32-element block.
QNUM_HD constexpr int block_bytes(type t) { return detail::ggml_block_bytes(static_cast<int>(t)); }

// Bytes of n elements (n a multiple of 32), -1 otherwise.
QNUM_HD constexpr std::int64_t row_bytes(type t, std::int64_t n) {
  return (n < 0 || n % block_size != 0) ? -1 : n / block_size * block_bytes(t);
}

// One Q4_0 block from x[32] into out[18] (ggml quantize_row_q4_0_ref). Returns true when the fp16 d
// overflowed (written as Inf, as ggml does).
QNUM_HD bool quantize_block_q4_0(const float* x, std::uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = detail::abs_bits(x[j]);
    if (amax < a) {
      amax = a;
      max = x[j];
    }
  }
  const float d = detail::div_rn(max, detail::ggml_scale_divisor(detail::ggml_q4_0));
  const float id = d != 0.0f ? detail::div_rn(1.0f, d) : 0.0f;
  const std::uint16_t dh = to_fp16(d);
  detail::put_u16(out, dh);
  const float off = detail::ggml_q4_offset(detail::ggml_q4_0);
  for (int j = 0; j < 16; ++j)  // ggml: qs = xi0; qs |= xi1 << 4 (uint8)
    out[2 + j] = static_cast<std::uint8_t>(detail::ggml_q4_code(x[j], id, off) | (detail::ggml_q4_code(x[j + 16], id, off) << 4));
  return detail::fp16_is_inf(dh);
}
// One Q4_0 block -> y[32]: (nib - 8) * d (one exact-integer multiply).
QNUM_HD void dequantize_block_q4_0(const std::uint8_t* in, float* y) {
  const float d = from_fp16(detail::get_u16(in));
  for (int j = 0; j < 16; ++j) {
    y[j] = detail::canonical_nan(detail::mul_rn(static_cast<float>(static_cast<std::int32_t>(in[2 + j] & 0xF) - 8), d));
    y[j + 16] = detail::canonical_nan(detail::mul_rn(static_cast<float>(static_cast<std::int32_t>(in[2 + j] >> 4) - 8), d));
  }
}

// One Q4_1 block (ggml quantize_row_q4_1_ref): d = (max-min)/15, m = min, nib = min(15, trunc((x-min)*id + 0.5)).
QNUM_HD bool quantize_block_q4_1(const float* x, std::uint8_t* out) {
  float min = 3.40282347e38f, max = -3.40282347e38f;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = detail::div_rn(detail::sub_rn(max, min), detail::ggml_scale_divisor(detail::ggml_q4_1));
  const float id = d != 0.0f ? detail::div_rn(1.0f, d) : 0.0f;
  const std::uint16_t dh = to_fp16(d), mh = to_fp16(min);
  detail::put_u16(out, dh);
  detail::put_u16(out + 2, mh);
  const float off = detail::ggml_q4_offset(detail::ggml_q4_1);
  for (int j = 0; j < 16; ++j)
    out[4 + j] = static_cast<std::uint8_t>(detail::ggml_q4_code(detail::sub_rn(x[j], min), id, off) |
                                           (detail::ggml_q4_code(detail::sub_rn(x[j + 16], min), id, off) << 4));
  return detail::fp16_is_inf(dh) || detail::fp16_is_inf(mh);
}
// One Q4_1 block -> y[32]: fl(fl(nib * d) + m).
QNUM_HD void dequantize_block_q4_1(const std::uint8_t* in, float* y) {
  const float d = from_fp16(detail::get_u16(in));
  const float m = from_fp16(detail::get_u16(in + 2));
  for (int j = 0; j < 16; ++j) {
    y[j] = detail::canonical_nan(detail::add_rn(detail::mul_rn(static_cast<float>(in[4 + j] & 0xF), d), m));
    y[j + 16] = detail::canonical_nan(detail::add_rn(detail::mul_rn(static_cast<float>(in[4 + j] >> 4), d), m));
  }
}

// One Q8_0 block (ggml quantize_row_q8_0_ref): d = amax/127, q = roundf(x*id) (half away from zero).
QNUM_HD bool quantize_block_q8_0(const float* x, std::uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = detail::abs_bits(x[j]);
    amax = amax < a ? a : amax;
  }
  const float d = detail::div_rn(amax, detail::ggml_scale_divisor(detail::ggml_q8_0));
  const float id = d != 0.0f ? detail::div_rn(1.0f, d) : 0.0f;
  const std::uint16_t dh = to_fp16(d);
  detail::put_u16(out, dh);
  for (int j = 0; j < 32; ++j)
    out[2 + j] = static_cast<std::uint8_t>(static_cast<std::uint32_t>(detail::ggml_roundf_i8(detail::mul_rn(x[j], id))) & 0xFFu);
  return detail::fp16_is_inf(dh);
}
// One Q8_0 block -> y[32]: q * d.
QNUM_HD void dequantize_block_q8_0(const std::uint8_t* in, float* y) {
  const float d = from_fp16(detail::get_u16(in));
  for (int j = 0; j < 32; ++j) y[j] = detail::canonical_nan(detail::mul_rn(static_cast<float>(static_cast<std::int8_t>(in[2 + j])), d));
}

// One block of type t (q4_0, q4_1 or q8_0) from x[32] into out[block_bytes(t)]; true when a scale overflowed.
QNUM_HD bool quantize_block(type t, const float* x, std::uint8_t* out) {
  return t == type::q4_0 ? quantize_block_q4_0(x, out) : t == type::q4_1 ? quantize_block_q4_1(x, out) : quantize_block_q8_0(x, out);
}

}  // namespace gguf
namespace detail {
// n contiguous floats (n a multiple of 32) -> row_bytes(t, n) contiguous bytes: -1 (a NaN/Inf input,
// nothing written), 1 (every block written, some fp16 scale overflowed) or 0.
inline int gguf_span(gguf::type t, const float* x, std::int64_t n, std::uint8_t* out) {
#if QNUM_HOST_SIMD
  // The lanes of the CPU's best instruction set (host/simd.hpp): the same bytes as the blocks below.
  int lanes_result = 0;
  if (simd::dispatch([&](auto e) {
        lanes_result = decltype(e)::gguf_blocks(static_cast<int>(t), x, n / gguf::block_size, out, [t](const float* xb, std::uint8_t* ob) { return gguf::quantize_block(t, xb, ob); });
      }))
    return lanes_result;
#endif
  for (std::int64_t i = 0; i < n; ++i)
    if (is_nonfinite(x[i])) return -1;
  const int bb = gguf::block_bytes(t);
  bool overflow = false;
  for (std::int64_t b = 0; b < n / gguf::block_size; ++b) overflow |= gguf::quantize_block(t, x + b * gguf::block_size, out + b * bb);
  return overflow ? 1 : 0;
}
inline bool gguf_type_ok(gguf::type t) { return t == gguf::type::q4_0 || t == gguf::type::q4_1 || t == gguf::type::q8_0; }
}  // namespace detail
namespace gguf {

// GGUF rows: x [rows, cols] floats (cols a multiple of 32, else bad_shape) -> out [rows, row_bytes(t, cols)]
// bytes. Any NaN/Inf input -> non_finite, nothing written. Returns scale_overflow (after writing every
// block) when some block's fp16 scale overflowed.
inline status quantize(type t, const matrix_view<const float>& x, const matrix_view<std::uint8_t>& out) {
  if (!detail::gguf_type_ok(t)) return status::bad_bits;
  if (status e = detail::check_extents(x); e != status::ok) return e;
  if (x.cols % block_size != 0) return status::bad_shape;
  if (x.size() == 0) return status::ok;
  if (status e = detail::check_extents(out, x.rows, row_bytes(t, x.cols)); e != status::ok) return e;
  int r = 0;
  if (x.contiguous() && out.contiguous()) {
    r = detail::gguf_span(t, x.data, x.size(), out.data);
  } else {
    // Rows apart in memory: no row is written before every row is known to be finite.
    for (std::int64_t i = 0; i < x.rows; ++i)
      for (std::int64_t j = 0; j < x.cols; ++j)
        if (detail::is_nonfinite(x(i, j))) return status::non_finite;
    for (std::int64_t i = 0; i < x.rows; ++i) r |= detail::gguf_span(t, &x(i, 0), x.cols, &out(i, 0));
  }
  return r < 0 ? status::non_finite : r > 0 ? status::scale_overflow : status::ok;
}
// GGUF rows back to floats: in [rows, row_bytes(t, cols)] bytes -> y [rows, cols] (y's shape; cols a multiple of 32).
inline status dequantize(type t, const matrix_view<const std::uint8_t>& in, const matrix_view<float>& y) {
  if (!detail::gguf_type_ok(t)) return status::bad_bits;
  if (status e = detail::check_extents(y); e != status::ok) return e;
  if (y.cols % block_size != 0) return status::bad_shape;
  if (y.size() == 0) return status::ok;
  if (status e = detail::check_extents(in, y.rows, row_bytes(t, y.cols)); e != status::ok) return e;
  const int bb = block_bytes(t);
  for (std::int64_t i = 0; i < y.rows; ++i)
    for (std::int64_t b = 0; b < y.cols / block_size; ++b) {
      const std::uint8_t* ib = &in(i, b * bb);
      float* yb = &y(i, b * block_size);
      if (t == type::q4_0) dequantize_block_q4_0(ib, yb);
      else if (t == type::q4_1) dequantize_block_q4_1(ib, yb);
      else dequantize_block_q8_0(ib, yb);
    }
  return status::ok;
}

}  // namespace gguf
QNUM_END_NAMESPACE
