// qnum/layout/pack.hpp: lossless bit packing of integer codes (dense N-bit into int32 words, nibble pairs in
// bytes, UE8M0 scales four per int32), as QNUM_HD primitives and checked host functions over views.
//
// Conventions (all layouts in this header are little-endian and least significant first):
//   dense N-bit (compressed-tensors pack_to_int32): element i of a packed line lives at global bit
//     i*bits of the line's word array; an element may straddle two words when 32 % bits != 0. The
//     words of one line are ceil(n*bits/32); unused high bits of the last word are 0.
//   offset-binary: a signed code q in [-2^(b-1), 2^(b-1)-1] is stored as q + 2^(b-1) (int4 -8 -> 0,
//     0 -> 8, 7 -> 15), as compressed-tensors, GPTQ's uint4b8 and Marlin's uint4b8 do.
//   nibble pairs: element 2i and 2i+1 share byte i; low_first puts 2i in bits 3..0 (MX/NVFP4 fp4,
//     torchao pack_uint4, compressed-tensors pack_fp4_to_uint8); high_first puts 2i in bits 7..4
//     (bitsandbytes NF4/FP4, torchao NF4Tensor).
//   UE8M0 (DeepGEMM pack_ue8m0_to_int): byte i of word j holds group 4j+i.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/detail/fp_rn.hpp"
#include "qnum/host/simd.hpp"
#include "qnum/status.hpp"
#include "qnum/view.hpp"

QNUM_BEGIN_NAMESPACE

// Which dimension of a row-major [rows, cols] array is packed. packed_dim::cols (compressed-tensors
// packed_dim=1): each row becomes ceil(cols*bits/32) words, output [rows, ceil(cols*bits/32)].
// packed_dim::rows (packed_dim=0): each column is packed, output [ceil(rows*bits/32), cols].
enum class packed_dim : int { rows = 0, cols = 1 };

// How a byte holds two 4-bit codes (see the header comment).
enum class nibble_order : int { low_first = 0, high_first = 1 };

// ---------------------------------------------------------------------------------------------------
// QNUM_HD primitives (same bits on host and device; no floating point)

// Mask of the low `bits` bits, bits in [1, 32].
QNUM_HD constexpr std::uint32_t low_mask(int bits) { return bits >= 32 ? 0xFFFFFFFFu : ((1u << bits) - 1u); }

// Number of 32-bit words that hold n dense `bits`-bit elements: ceil(n*bits/32).
QNUM_HD constexpr std::int64_t packed_words(std::int64_t n, int bits) { return (n * bits + 31) / 32; }

// Signed code -> offset-binary field: (q + 2^(bits-1)) & mask. In range iff result - 2^(bits-1) == q.
QNUM_HD constexpr std::uint32_t to_offset_binary(std::int32_t q, int bits) {
  return static_cast<std::uint32_t>(q + (1 << (bits - 1))) & low_mask(bits);
}
// Offset-binary field -> signed code: (field & mask) - 2^(bits-1).
QNUM_HD constexpr std::int32_t from_offset_binary(std::uint32_t field, int bits) {
  return static_cast<std::int32_t>(field & low_mask(bits)) - (1 << (bits - 1));
}

// True iff q is a valid signed (two's complement range) / unsigned code of `bits` bits.
QNUM_HD constexpr bool signed_code_fits(std::int32_t q, int bits) {
  return q >= -(1 << (bits - 1)) && q <= (1 << (bits - 1)) - 1;
}
QNUM_HD constexpr bool unsigned_code_fits(std::int32_t v, int bits) {
  return v >= 0 && static_cast<std::uint32_t>(v) <= low_mask(bits);
}

// OR the low `bits` bits of v into the dense stream `words` at element index i (bit i*bits). The
// words must start zeroed. Writes word i*bits/32 and, when the field straddles, the next one.
QNUM_HD void dense_or(std::uint32_t* words, std::int64_t i, int bits, std::uint32_t v) {
  v &= low_mask(bits);
  const std::int64_t bit = i * bits;
  const std::int64_t w = bit >> 5;
  const int off = static_cast<int>(bit & 31);
  words[w] |= v << off;
  if (off + bits > 32) words[w + 1] |= v >> (32 - off);
}

// The `bits`-bit field of element i of the dense stream `words` (inverse of dense_or).
QNUM_HD std::uint32_t dense_get(const std::uint32_t* words, std::int64_t i, int bits) {
  const std::int64_t bit = i * bits;
  const std::int64_t w = bit >> 5;
  const int off = static_cast<int>(bit & 31);
  std::uint32_t v = words[w] >> off;
  if (off + bits > 32) v |= words[w + 1] << (32 - off);
  return v & low_mask(bits);
}

// Eight 4-bit fields into one word, field k at bits 4k..4k+3 (each masked to 4 bits).
QNUM_HD constexpr std::uint32_t pack8_nibbles(const std::uint32_t (&v)[8]) {
  std::uint32_t w = 0;
  for (int k = 0; k < 8; ++k) w |= (v[k] & 0xFu) << (4 * k);
  return w;
}
// Field k (0..7) of a word of eight nibbles.
QNUM_HD constexpr std::uint32_t nibble_of(std::uint32_t word, int k) { return (word >> (4 * k)) & 0xFu; }

// Two 4-bit codes into one byte: `first` is element 2i, `second` element 2i+1.
QNUM_HD constexpr std::uint8_t pack_nibble_pair(std::uint32_t first, std::uint32_t second, nibble_order order) {
  return order == nibble_order::low_first ? static_cast<std::uint8_t>((first & 0xFu) | ((second & 0xFu) << 4))
                                          : static_cast<std::uint8_t>(((first & 0xFu) << 4) | (second & 0xFu));
}
// Element 2i (which = 0) or 2i+1 (which = 1) of a byte packed with `order`.
QNUM_HD constexpr std::uint32_t unpack_nibble(std::uint8_t byte, int which, nibble_order order) {
  const int low = order == nibble_order::low_first ? (which == 0) : (which != 0);
  return low ? (byte & 0xFu) : ((byte >> 4) & 0xFu);
}

// Four UE8M0 bytes into one word, byte i = e[i] (DeepGEMM pack_ue8m0_to_int, little endian).
QNUM_HD constexpr std::uint32_t pack_ue8m0x4(std::uint8_t e0, std::uint8_t e1, std::uint8_t e2, std::uint8_t e3) {
  return std::uint32_t{e0} | (std::uint32_t{e1} << 8) | (std::uint32_t{e2} << 16) | (std::uint32_t{e3} << 24);
}

// UE8M0 byte of a float scale that is a positive power of two (normal): its biased exponent
// (float_bits >> 23). Returns -1 when s is not an exact positive normal power of two.
QNUM_HD std::int32_t ue8m0_of_pow2(float s) {
  const std::uint32_t u = detail::float_to_bits(s);
  if ((u >> 31) != 0 || (u & 0x7FFFFFu) != 0) return -1;
  const std::uint32_t e = u >> 23;
  if (e == 0 || e == 0xFF) return -1;
  return static_cast<std::int32_t>(e);
}

// W4A16 building block for a user's kernel: the 8 weights of one packed word,
// out[k] = float(nibble_k - zero) * scale, one IEEE fp32 multiply of an exact integer (no FMA
// possible, same bits on host and device). For signed offset-binary (uint4b8) codes pass zero = 8;
// for GPTQ/AWQ/compressed-tensors asymmetric pass the stored zero nibble (+8 for compressed-tensors'
// signed zero point). A NaN scale gives the canonical quiet NaN 0x7FC00000 (detail::canonical_nan), an
// infinite one +-Inf (or that NaN where the nibble equals the zero point).
QNUM_HD void dequantize_int4_word(std::uint32_t word, float scale, std::int32_t zero, float (&out)[8]) {
  for (int k = 0; k < 8; ++k)
    out[k] = detail::canonical_nan(detail::mul_rn(static_cast<float>(static_cast<std::int32_t>(nibble_of(word, k)) - zero), scale));
}

// ---------------------------------------------------------------------------------------------------
// Host functions over views (qnum/view.hpp: row-major, any row stride). Each checks bit widths, extents
// (an output view must have exactly the shape the layout writes: bad_shape otherwise), pointers and
// code ranges before it writes anything. An empty input (no elements) is ok and writes nothing.

namespace detail {
// Whether every code of v is a signed / unsigned `bits`-bit value.
// A line's least and greatest codes, then one test: the loop has no exit, so the compiler vectorizes it (a
// contiguous view is one line).
template <class T>
inline bool codes_fit(const matrix_view<T>& v, int bits, bool is_signed) {
  using E = std::remove_const_t<T>;
  auto fit = [&](std::int32_t l, std::int32_t h) {
    return is_signed ? signed_code_fits(l, bits) && signed_code_fits(h, bits) : unsigned_code_fits(l, bits) && unsigned_code_fits(h, bits);
  };
  const bool one = v.contiguous();
  const std::int64_t lines = one ? (v.size() > 0 ? 1 : 0) : v.rows, n = one ? v.size() : v.cols;
#if QNUM_HOST_SIMD
  if constexpr (sizeof(E) == 1) {  // one-byte codes: the lanes' byte range (offset 0x80 orders signed bytes)
    const std::uint8_t flip = std::is_signed<E>::value ? 0x80 : 0;
    bool fits = true, lanes = false;
    for (std::int64_t r = 0; r < lines && n > 0 && fits; ++r) {
      std::uint8_t lo = 0, hi = 0;
      lanes = simd::dispatch([&](auto e) { decltype(e)::byte_range(reinterpret_cast<const std::uint8_t*>(&v(r, 0)), n, flip, lo, hi); });
      if (!lanes) break;
      const std::int32_t l = static_cast<E>(static_cast<std::uint8_t>(lo ^ flip)), h = static_cast<E>(static_cast<std::uint8_t>(hi ^ flip));
      fits = fit(l, h);
    }
    if (lanes || !fits) return fits;
  }
#endif
  for (std::int64_t r = 0; r < lines && n > 0; ++r) {
    const E* p = &v(r, 0);
    E lo = p[0], hi = p[0];
    for (std::int64_t c = 1; c < n; ++c) {
      lo = p[c] < lo ? p[c] : lo;
      hi = p[c] > hi ? p[c] : hi;
    }
    if (!fit(static_cast<std::int32_t>(lo), static_cast<std::int32_t>(hi))) return false;
  }
  return true;
}
// Shape of the words pack_int32 writes for a rows x cols array.
inline void packed_extent(std::int64_t rows, std::int64_t cols, int bits, packed_dim dim, std::int64_t& pr, std::int64_t& pc) {
  pr = dim == packed_dim::cols ? rows : packed_words(rows, bits);
  pc = dim == packed_dim::cols ? packed_words(cols, bits) : cols;
}
// The checks of both directions, in order: bits (1..8), the codes' view, then (codes not empty) the words'
// view against the packed shape of the codes.
template <class C, class W>
inline status dense_check(int bits, packed_dim dim, const matrix_view<C>& codes, const matrix_view<W>& words) {
  if (bits < 1 || bits > 8) return status::bad_bits;
  if (status e = check_extents(codes); e != status::ok || codes.size() == 0) return e;
  std::int64_t pr, pc;
  packed_extent(codes.rows, codes.cols, bits, dim, pr, pc);
  return check_extents(words, pr, pc);
}
// out[j] = the nibble pair of codes c[2j], c[2j + 1] (each ^ flip, low 4 bits; the first in the low nibble, or
// in the high one when high_first), j < pairs: the lanes of the CPU's best instruction set, else bytes.
inline void nibble_pair_row(const std::uint8_t* c, std::int64_t pairs, std::uint8_t flip, bool high_first, std::uint8_t* out) {
  std::int64_t j = 0;  // the pairs the lanes wrote (whole vectors)
#if QNUM_HOST_SIMD
  simd::dispatch([&](auto e) { j = decltype(e)::nibble_pairs(c, pairs, flip, high_first, out); });
#endif
  const nibble_order order = high_first ? nibble_order::high_first : nibble_order::low_first;
  for (; j < pairs; ++j) out[j] = pack_nibble_pair(c[2 * j] ^ flip, c[2 * j + 1] ^ flip, order);
}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define QNUM_NIBBLE_WORDS_AS_BYTES 1
// The packed_words(cols, 4) words of one row of 4-bit codes c[0, cols) (each ^ f, low 4 bits), field i at bits
// 4i: on a little-endian host those words are the row's nibble pairs (low nibble first) as bytes; the last
// word's unused fields 0. No range check (the caller's).
inline void nibble_words_row(const std::uint8_t* c, std::int64_t cols, std::uint8_t f, std::uint32_t* words) {
  auto* dst = reinterpret_cast<std::uint8_t*>(words);
  nibble_pair_row(c, cols / 2, f, false, dst);
  std::int64_t b = cols / 2;
  if (cols % 2) dst[b++] = static_cast<std::uint8_t>((c[cols - 1] ^ f) & 15u);
  for (; b < 4 * packed_words(cols, 4); ++b) dst[b] = 0;
}
#else
#define QNUM_NIBBLE_WORDS_AS_BYTES 0
#endif
// flip: XORed into every (unsigned) field before packing: qnum's two's complement codes become offset
// binary with flip = 2^(bits-1).
template <class T>
inline status pack_dense_impl(const matrix_view<const T>& codes, int bits, packed_dim dim, bool is_signed,
                              const matrix_view<std::uint32_t>& out, std::uint32_t flip = 0) {
  if (status e = dense_check(bits, dim, codes, out); e != status::ok || codes.size() == 0) return e;
  const std::int64_t rows = codes.rows, cols = codes.cols;
  std::int64_t pr, pc;
  packed_extent(rows, cols, bits, dim, pr, pc);
  if (!codes_fit(codes, bits, is_signed)) return status::code_out_of_range;
#if QNUM_NIBBLE_WORDS_AS_BYTES
  if (sizeof(T) == 1 && bits == 4 && dim == packed_dim::cols) {
    // offset-binary for signed codes: (v + 8) & 15 == (v & 15) ^ 8
    const std::uint8_t f = static_cast<std::uint8_t>(is_signed ? 8u : flip & 15u);
    for (std::int64_t r = 0; r < rows; ++r) nibble_words_row(reinterpret_cast<const std::uint8_t*>(&codes(r, 0)), cols, f, &out(r, 0));
    return status::ok;
  }
#endif
  for (std::int64_t r = 0; r < pr; ++r)
    for (std::int64_t c = 0; c < pc; ++c) out(r, c) = 0;
  // packed_dim::cols: line r is row r of out. packed_dim::rows: line c is column c of out, word w of it
  // at out(w, c) (the [ceil(rows*bits/32), cols] transpose).
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int32_t v = static_cast<std::int32_t>(codes(r, c));
      const std::uint32_t field = is_signed ? to_offset_binary(v, bits) : static_cast<std::uint32_t>(v) ^ flip;
      if (dim == packed_dim::cols) {
        dense_or(&out(r, 0), c, bits, field);
      } else {
        const std::int64_t bit = r * bits;
        const std::int64_t w = bit >> 5;
        const int off = static_cast<int>(bit & 31);
        out(w, c) |= field << off;
        if (off + bits > 32) out(w + 1, c) |= field >> (32 - off);
      }
    }
  }
  return status::ok;
}
template <class T>
inline status unpack_dense_impl(const matrix_view<const std::uint32_t>& words, int bits, packed_dim dim, bool is_signed,
                                const matrix_view<T>& out) {
  if (status e = dense_check(bits, dim, out, words); e != status::ok || out.size() == 0) return e;
  const std::int64_t rows = out.rows, cols = out.cols;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (sizeof(T) == 1 && bits == 4 && dim == packed_dim::cols) {
    // The row's words as bytes of nibble pairs (low nibble first); signed: offset-binary, field - 8. A loop
    // of plain byte operations, which the compiler vectorizes.
    const std::uint8_t sub = is_signed ? 8 : 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto* src = reinterpret_cast<const std::uint8_t*>(&words(r, 0));
      auto* dst = reinterpret_cast<std::uint8_t*>(&out(r, 0));
      const std::int64_t pairs = cols / 2;
      for (std::int64_t j = 0; j < pairs; ++j) {
        dst[2 * j] = static_cast<std::uint8_t>(unpack_nibble(src[j], 0, nibble_order::low_first) - sub);
        dst[2 * j + 1] = static_cast<std::uint8_t>(unpack_nibble(src[j], 1, nibble_order::low_first) - sub);
      }
      if (cols % 2) dst[cols - 1] = static_cast<std::uint8_t>(unpack_nibble(src[pairs], 0, nibble_order::low_first) - sub);
    }
    return status::ok;
  }
#endif
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      std::uint32_t field;
      if (dim == packed_dim::cols) {
        field = dense_get(&words(r, 0), c, bits);
      } else {
        const std::int64_t bit = r * bits;
        const std::int64_t w = bit >> 5;
        const int off = static_cast<int>(bit & 31);
        field = words(w, c) >> off;
        if (off + bits > 32) field |= words(w + 1, c) << (32 - off);
        field &= low_mask(bits);
      }
      out(r, c) = static_cast<T>(is_signed ? from_offset_binary(field, bits) : static_cast<std::int32_t>(field));
    }
  }
  return status::ok;
}
template <class T, class... U>
inline constexpr bool one_of = (std::is_same<std::remove_const_t<T>, U>::value || ...);
}  // namespace detail

// The shape of the int32 words pack_int32 writes for a [rows, cols] array: [rows, ceil(cols*bits/32)]
// (packed_dim::cols) or [ceil(rows*bits/32), cols] (packed_dim::rows).
inline extent pack_int32_shape(std::int64_t rows, std::int64_t cols, int bits, packed_dim dim) {
  extent e;
  detail::packed_extent(rows, cols, bits, dim, e.rows, e.cols);
  return e;
}

// compressed-tensors pack_to_int32(value, bits, packed_dim) into out [pack_int32_shape], bits 1..8:
//   std::int8_t / std::int32_t codes: signed q in [-2^(b-1), 2^(b-1)-1], stored offset-binary (q + 2^(b-1))
//     (int32: the zero points quantize writes for asymmetric schemes);
//   std::uint8_t codes: unsigned v in [0, 2^b - 1], stored as they are (GPTQ/AWQ nibbles, uint4 codes).
// A code outside its range -> code_out_of_range.
template <class T, std::enable_if_t<detail::one_of<T, std::int8_t, std::uint8_t, std::int32_t>, int> = 0>
inline status pack_int32(const matrix_view<T>& codes, int bits, packed_dim dim, const matrix_view<std::uint32_t>& out) {
  using E = std::remove_const_t<T>;
  return detail::pack_dense_impl<E>(detail::as_const(codes), bits, dim, !std::is_same<E, std::uint8_t>::value, out);
}
// Inverse of pack_int32 (compressed-tensors unpack_from_int32 for signed codes): the codes' shape is out's.
template <class T, std::enable_if_t<detail::one_of<T, std::int8_t, std::uint8_t>, int> = 0>
inline status unpack_int32(const matrix_view<const std::uint32_t>& words, int bits, packed_dim dim, const matrix_view<T>& out) {
  return detail::unpack_dense_impl(words, bits, dim, std::is_same<T, std::int8_t>::value, out);
}

// Rows of 4-bit codes (each 0..15, one per byte) [rows, cols] -> bytes [rows, ceil(cols/2)] with `order`;
// an odd cols leaves the last byte's second nibble 0. A code > 15 -> code_out_of_range.
inline status pack_nibbles(const matrix_view<const std::uint8_t>& codes, nibble_order order, const matrix_view<std::uint8_t>& out) {
  if (status e = detail::check_extents(codes); e != status::ok) return e;
  if (codes.size() == 0) return status::ok;
  const std::int64_t n = codes.cols;
  if (status e = detail::check_extents(out, codes.rows, (n + 1) / 2); e != status::ok) return e;
  if (!detail::codes_fit(codes, 4, false)) return status::code_out_of_range;
  for (std::int64_t r = 0; r < codes.rows; ++r) {
    const std::uint8_t* c = &codes(r, 0);
    std::uint8_t* o = &out(r, 0);
    detail::nibble_pair_row(c, n / 2, 0, order == nibble_order::high_first, o);
    if (n % 2) o[n / 2] = pack_nibble_pair(c[n - 1], 0, order);
  }
  return status::ok;
}
// Inverse of pack_nibbles: codes [rows, cols] (out's shape, 0..15) from bytes [rows, ceil(cols/2)].
inline status unpack_nibbles(const matrix_view<const std::uint8_t>& bytes, nibble_order order, const matrix_view<std::uint8_t>& out) {
  if (status e = detail::check_extents(out); e != status::ok) return e;
  if (out.size() == 0) return status::ok;
  if (status e = detail::check_extents(bytes, out.rows, (out.cols + 1) / 2); e != status::ok) return e;
  for (std::int64_t r = 0; r < out.rows; ++r)
    for (std::int64_t i = 0; i < out.cols; ++i) out(r, i) = static_cast<std::uint8_t>(unpack_nibble(bytes(r, i / 2), static_cast<int>(i % 2), order));
  return status::ok;
}

// UE8M0 scale bytes e [rows, groups] -> int32 words [rows, ceil(groups/4)], byte i of word j = e(r, 4j+i),
// missing tail bytes 0 (DeepGEMM pack_ue8m0_to_int on a K-major scale tensor).
inline status pack_ue8m0(const matrix_view<const std::uint8_t>& e, const matrix_view<std::uint32_t>& out) {
  if (status s = detail::check_extents(e); s != status::ok) return s;
  if (e.size() == 0) return status::ok;
  const std::int64_t groups = e.cols, wpr = (groups + 3) / 4;
  if (status s = detail::check_extents(out, e.rows, wpr); s != status::ok) return s;
  for (std::int64_t r = 0; r < e.rows; ++r)
    for (std::int64_t j = 0; j < wpr; ++j) {
      std::uint8_t b[4] = {0, 0, 0, 0};
      for (int i = 0; i < 4; ++i)
        if (4 * j + i < groups) b[i] = e(r, 4 * j + i);
      out(r, j) = pack_ue8m0x4(b[0], b[1], b[2], b[3]);
    }
  return status::ok;
}
// Inverse of pack_ue8m0: e [rows, groups] (e's shape) from words [rows, ceil(groups/4)].
inline status unpack_ue8m0(const matrix_view<const std::uint32_t>& words, const matrix_view<std::uint8_t>& e) {
  if (status s = detail::check_extents(e); s != status::ok) return s;
  if (e.size() == 0) return status::ok;
  if (status s = detail::check_extents(words, e.rows, (e.cols + 3) / 4); s != status::ok) return s;
  for (std::int64_t r = 0; r < e.rows; ++r)
    for (std::int64_t g = 0; g < e.cols; ++g) e(r, g) = static_cast<std::uint8_t>(words(r, g / 4) >> (8 * (g % 4)));
  return status::ok;
}
// Power-of-two float scales s -> UE8M0 bytes e of the same shape (float_bits >> 23). A scale that is not
// a positive normal power of two (0, negative, subnormal, NaN, Inf, any mantissa bit) ->
// code_out_of_range, nothing written.
inline status ue8m0_from_pow2_scales(const matrix_view<const float>& s, const matrix_view<std::uint8_t>& e) {
  if (status st = detail::check_extents(s); st != status::ok) return st;
  if (s.size() == 0) return status::ok;
  if (status st = detail::check_extents(e, s.rows, s.cols); st != status::ok) return st;
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t c = 0; c < s.cols; ++c)
      if (ue8m0_of_pow2(s(r, c)) < 0) return status::code_out_of_range;
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t c = 0; c < s.cols; ++c) e(r, c) = static_cast<std::uint8_t>(ue8m0_of_pow2(s(r, c)));
  return status::ok;
}

QNUM_END_NAMESPACE
