// tests/layout/test_pack_device.cu: the packing primitives, the GGUF block codecs and the W4A16
// dequantize-from-packed primitive give the same words on the GPU as on the host; the primitives applied
// through matrix_view element access (strided rows) on the device give what the host functions over
// views (pack_int32, gguf::quantize) write.
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"

#include <doctest/doctest.h>

#include "qnum/layout/gguf.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/random.hpp"
#include "qnum/view.hpp"

namespace {

// Dense pack then unpack of 32 pseudo-random codes at width 1..8 (i selects width and seed); returns
// a hash of the packed words and the unpacked codes.
struct dense_pack {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    const int bits = 1 + static_cast<int>(i % 8);
    std::uint32_t words[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int e = 0; e < 32; ++e) {
      const std::uint32_t c = qnum::random_bits(3, i * 32 + e) & qnum::low_mask(bits);
      qnum::dense_or(words, e, bits, c);
    }
    std::uint32_t h = 0;
    for (int w = 0; w < bits; ++w) h = h * 0x9E3779B1u + words[w];
    for (int e = 0; e < 32; ++e) h = h * 31u + qnum::dense_get(words, e, bits);
    h = h * 31u + qnum::to_offset_binary(static_cast<std::int32_t>(i % 16) - 8, 4);
    h = h * 31u + qnum::pack_nibble_pair(i & 0xF, (i >> 4) & 0xF, (i & 1) ? qnum::nibble_order::low_first
                                                                           : qnum::nibble_order::high_first);
    h = h * 31u + qnum::pack_ue8m0x4(i & 0xFF, (i >> 8) & 0xFF, 3, 250);
    return h;
  }
};

// GGUF Q4_0/Q4_1/Q8_0 of one pseudo-random block (scaled by a varying power of two) and its dequant.
struct gguf_blocks {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    float x[32];
    for (int j = 0; j < 32; ++j) {
      const std::uint32_t r = qnum::random_bits(11, i * 32 + j);
      x[j] = (static_cast<float>(static_cast<std::int32_t>(r >> 8) - (1 << 23)) / 8388608.0f);
    }
    std::uint8_t b[34];
    float y[32];
    std::uint32_t h = 0;
    qnum::gguf::quantize_block_q4_0(x, b);
    qnum::gguf::dequantize_block_q4_0(b, y);
    for (int k = 0; k < 18; ++k) h = h * 31u + b[k];
    for (int k = 0; k < 32; ++k) h = h * 0x9E3779B1u + qnum::detail::float_to_bits(y[k]);
    qnum::gguf::quantize_block_q4_1(x, b);
    qnum::gguf::dequantize_block_q4_1(b, y);
    for (int k = 0; k < 20; ++k) h = h * 31u + b[k];
    for (int k = 0; k < 32; ++k) h = h * 0x9E3779B1u + qnum::detail::float_to_bits(y[k]);
    qnum::gguf::quantize_block_q8_0(x, b);
    qnum::gguf::dequantize_block_q8_0(b, y);
    for (int k = 0; k < 34; ++k) h = h * 31u + b[k];
    for (int k = 0; k < 32; ++k) h = h * 0x9E3779B1u + qnum::detail::float_to_bits(y[k]);
    return h;
  }
};

// W4A16: dequantize_int4_word on random words, scales (any float bits) and zeros.
struct w4a16_dequant {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    float out[8];
    const float s = qnum::detail::bits_to_float(qnum::random_bits(5, i));
    qnum::dequantize_int4_word(qnum::random_bits(6, i), s, static_cast<std::int32_t>(i % 16), out);
    std::uint32_t h = 0;
    for (int k = 0; k < 8; ++k) h = h * 0x9E3779B1u + qnum::detail::float_to_bits(out[k]);
    return h;
  }
};

// A hash of the elements a view covers (not its padding), in row-major order.
template <class T>
__host__ __device__ std::uint32_t view_hash(const qnum::matrix_view<T>& v) {
  std::uint32_t h = 0;
  for (std::int64_t r = 0; r < v.rows; ++r)
    for (std::int64_t c = 0; c < v.cols; ++c) h = h * 0x9E3779B1u + static_cast<std::uint32_t>(v(r, c));
  return h;
}

// Signed codes [2, 37] of width 1..8 (i selects width and seed) in rows of 40 (padding 100: out of range),
// packed row by row through matrix_view element access and dense_or into words [2, ceil(37*bits/32)] in
// rows one word longer; returns a hash of the words the view covers.
struct view_rows {
  static constexpr int rows = 2, cols = 37, cstride = 40, wstride = 11;  // 11 >= ceil(37*8/32) + 1
  __host__ __device__ static int bits_of(std::uint64_t i) { return 1 + static_cast<int>(i % 8); }
  __host__ __device__ static void codes(std::uint64_t i, std::int8_t (&buf)[rows * cstride]) {
    const int bits = bits_of(i);
    for (int k = 0; k < rows * cstride; ++k) buf[k] = 100;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const std::uint32_t u = qnum::random_bits(7, i * 128 + static_cast<std::uint64_t>(r * cols + c)) & qnum::low_mask(bits);
        buf[r * cstride + c] = static_cast<std::int8_t>(static_cast<std::int32_t>(u) - (1 << (bits - 1)));
      }
  }
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    std::int8_t buf[rows * cstride];
    codes(i, buf);
    const int bits = bits_of(i);
    const qnum::matrix_view<const std::int8_t> q{buf, rows, cols, cstride};
    std::uint32_t words[rows * wstride] = {};
    const qnum::matrix_view<std::uint32_t> o{words, rows, qnum::packed_words(cols, bits), wstride};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) qnum::dense_or(&o(r, 0), c, bits, qnum::to_offset_binary(q(r, c), bits));
    return view_hash(o);
  }
};

// GGUF rows [2, 64] (i selects Q4_0 / Q4_1 / Q8_0 and the seed) in rows of 70 floats (NaN padding),
// quantized block by block through matrix_view element access into bytes [2, row_bytes] in rows two
// bytes longer; returns a hash of the bytes the view covers.
struct gguf_view_rows {
  static constexpr int rows = 2, cols = 64, xstride = 70, bstride = 2 * 34 + 2;
  __host__ __device__ static qnum::gguf::type type_of(std::uint64_t i) {
    return i % 3 == 0 ? qnum::gguf::type::q4_0 : i % 3 == 1 ? qnum::gguf::type::q4_1 : qnum::gguf::type::q8_0;
  }
  __host__ __device__ static void values(std::uint64_t i, float (&x)[rows * xstride]) {
    for (int k = 0; k < rows * xstride; ++k) x[k] = qnum::detail::bits_to_float(0x7FC01234u);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const std::uint32_t b = qnum::random_bits(13, i * 128 + static_cast<std::uint64_t>(r * cols + c));
        x[r * xstride + c] = static_cast<float>(static_cast<std::int32_t>(b >> 8) - (1 << 23)) / 8388608.0f;
      }
  }
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    float buf[rows * xstride];
    values(i, buf);
    const qnum::gguf::type t = type_of(i);
    const int bb = qnum::gguf::block_bytes(t);
    const qnum::matrix_view<const float> x{buf, rows, cols, xstride};
    std::uint8_t bytes[rows * bstride] = {};
    const qnum::matrix_view<std::uint8_t> o{bytes, rows, qnum::gguf::row_bytes(t, cols), bstride};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t b = 0; b < cols / qnum::gguf::block_size; ++b)
        qnum::gguf::quantize_block(t, &x(r, b * qnum::gguf::block_size), &o(r, b * bb));
    return view_hash(o);
  }
};

}  // namespace

TEST_CASE("pack primitives: host == device") { CHECK(qtest::host_device_mismatches("dense_pack", dense_pack{}, 1u << 18) == 0); }
TEST_CASE("GGUF blocks: host == device") { CHECK(qtest::host_device_mismatches("gguf", gguf_blocks{}, 1u << 16) == 0); }
TEST_CASE("W4A16 dequantize from packed: host == device") {
  CHECK(qtest::host_device_mismatches("w4a16", w4a16_dequant{}, 1u << 20) == 0);
}

TEST_CASE("matrix_view rows on the device == host pack_int32 / gguf::quantize over the same strided views") {
  // The host functions over views write what the functors compute through view element access ...
  long bad = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    std::int8_t buf[view_rows::rows * view_rows::cstride];
    view_rows::codes(i, buf);
    const int bits = view_rows::bits_of(i);
    std::uint32_t words[view_rows::rows * view_rows::wstride] = {};
    const auto o = qnum::view(words, view_rows::rows, qnum::packed_words(view_rows::cols, bits), view_rows::wstride);
    const qnum::status st =
        qnum::pack_int32(qnum::view(static_cast<const std::int8_t*>(buf), view_rows::rows, view_rows::cols, view_rows::cstride), bits,
                         qnum::packed_dim::cols, o);
    bad += st != qnum::status::ok || view_hash(o) != view_rows{}(i);
  }
  CHECK(bad == 0);
  bad = 0;
  for (std::uint64_t i = 0; i < 3072; ++i) {
    float x[gguf_view_rows::rows * gguf_view_rows::xstride];
    gguf_view_rows::values(i, x);
    const qnum::gguf::type t = gguf_view_rows::type_of(i);
    std::uint8_t bytes[gguf_view_rows::rows * gguf_view_rows::bstride] = {};
    const auto o = qnum::view(bytes, gguf_view_rows::rows, qnum::gguf::row_bytes(t, gguf_view_rows::cols), gguf_view_rows::bstride);
    const qnum::status st = qnum::gguf::quantize(
        t, qnum::view(static_cast<const float*>(x), gguf_view_rows::rows, gguf_view_rows::cols, gguf_view_rows::xstride), o);
    bad += st != qnum::status::ok || view_hash(o) != gguf_view_rows{}(i);
  }
  CHECK(bad == 0);
  // ... and the device computes the same.
  CHECK(qtest::host_device_mismatches("view_rows", view_rows{}, 1u << 16) == 0);
  CHECK(qtest::host_device_mismatches("gguf_view_rows", gguf_view_rows{}, 3u << 14) == 0);
}
