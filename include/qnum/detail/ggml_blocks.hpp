// qnum/detail/ggml_blocks.hpp: the constants of ggml's block quantizers (quantize_row_q*_ref), shared by the
// per-block definitions (layout/gguf.hpp) and the host lanes (host/simd_lanes.inc). Not API.
#pragma once

#include <cstdint>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

// The block types by their GGMLQuantizationType value (gguf::type).
constexpr int ggml_q4_0 = 2, ggml_q4_1 = 3, ggml_q8_0 = 8;

// Bytes of one block of 32 elements: fp16 d (Q4_1: then fp16 m), then the codes (Q4: 16 bytes of nibbles).
QNUM_HD constexpr int ggml_block_bytes(int type) { return type == ggml_q4_0 ? 18 : type == ggml_q4_1 ? 20 : 34; }
// d = x / divisor for x = Q8_0's amax, Q4_0's element of largest |x|, Q4_1's max - min.
QNUM_HD constexpr float ggml_scale_divisor(int type) {
  return type == ggml_q4_0 ? -8.0f : type == ggml_q4_1 ? 15.0f : 127.0f;
}
// Q4 codes: min(ggml_q4_max, trunc(v * id + offset)) for v = x (Q4_0) or x - min (Q4_1).
QNUM_HD constexpr float ggml_q4_offset(int type) { return type == ggml_q4_0 ? 8.5f : 0.5f; }
constexpr std::int32_t ggml_q4_max = 15;

}  // namespace detail
QNUM_END_NAMESPACE
