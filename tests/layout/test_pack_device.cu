// tests/layout/test_pack_device.cu: the packing primitives, the GGUF block codecs and the W4A16
// dequantize-from-packed primitive give the same words on the GPU as on the host.
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"

#include <doctest/doctest.h>

#include "qnum/layout/gguf.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/random.hpp"

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

}  // namespace

TEST_CASE("pack primitives: host == device") { CHECK(qtest::host_device_mismatches("dense_pack", dense_pack{}, 1u << 18) == 0); }
TEST_CASE("GGUF blocks: host == device") { CHECK(qtest::host_device_mismatches("gguf", gguf_blocks{}, 1u << 16) == 0); }
TEST_CASE("W4A16 dequantize from packed: host == device") {
  CHECK(qtest::host_device_mismatches("w4a16", w4a16_dequant{}, 1u << 20) == 0);
}
