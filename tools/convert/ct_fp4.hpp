// tools/convert/ct_fp4.hpp: one compressed-tensors NVFP4 / MXFP4 group, as qnum-convert's CPU path
// (qnum_convert.cpp) and GPU path (convert_gpu.cu) both write it. The codes come from quantize_value
// (ct_fp4) on either side: the CPU through quantize_row's lanes, the GPU per element.
#pragma once

#include <cstdint>

#include "qnum/pack.hpp"
#include "qnum/presets.hpp"

namespace qconv {

// Elements per group: 16 (NVFP4, E4M3 weight_scale) or 32 (MXFP4, E8M0 weight_scale).
QNUM_HD constexpr int ct_fp4_group(bool nvfp4) { return nvfp4 ? 16 : 32; }

// The group's parameters from its amax (NVFP4: with the tensor's weight_global_scale).
QNUM_HD qnum::group_params ct_fp4_params(bool nvfp4, float amax, float global_scale) {
  return nvfp4 ? qnum::presets::ct_nvfp4_params(amax, global_scale) : qnum::presets::ct_mxfp4_params(amax);
}

// Stores the group: its weight_scale byte and g / 2 weight_packed bytes (element 2i in the low nibble).
QNUM_HD void ct_fp4_store(const qnum::group_params& p, const std::uint8_t* codes, int g, std::uint8_t* scale,
                                 std::uint8_t* packed) {
  *scale = static_cast<std::uint8_t>(p.scale_code);
  for (int e = 0; e < g; e += 2) packed[e / 2] = qnum::pack_nibble_pair(codes[e], codes[e + 1], qnum::nibble_order::low_first);
}

}  // namespace qconv
