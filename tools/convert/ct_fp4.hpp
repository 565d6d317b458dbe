// tools/convert/ct_fp4.hpp: one compressed-tensors NVFP4 / MXFP4 group, as qnum-convert's CPU path
// (qnum_convert.cpp) and GPU path (convert_gpu.cu) both write it, and the schemes of --work-dtype bf16 (W4A16,
// FP8, NVFP4's scales). The codes come from quantize_value (ct_fp4) on either side: the CPU through quantize_row's
// lanes, the GPU per element.
#pragma once

#include <cstdint>

#include "qnum/layout/pack.hpp"
#include "qnum/presets.hpp"

namespace qconv {

// Elements per group: 16 (NVFP4, E4M3 weight_scale) or 32 (MXFP4, E8M0 weight_scale).
QNUM_HD constexpr int ct_fp4_group(bool nvfp4) { return nvfp4 ? 16 : 32; }

// --work-dtype bf16: compressed-tensors on a bf16 weight. The NVFP4 global scale is generate_gparam on the bf16
// absmax: 2688 / a evaluated by torch in bf16 as bf16(bf16(1 / a) * 2688) (a = max(amax, finfo(bf16).tiny), the
// same 2^-126 as fp32), an infinite result 1, stored as fp32 (so a bf16 value).
QNUM_HD float ct_nvfp4_global_scale_bf16(float amax_tensor) {
  namespace d = qnum::detail;
  const float a = amax_tensor < 1.17549435e-38f ? 1.17549435e-38f : amax_tensor;
  const float r = d::to_work(d::div_rn(1.0f, a), qnum::work_dtype::bf16);
  const float g = d::to_work(d::mul_rn(r, 2688.0f), qnum::work_dtype::bf16);
  return d::is_nonfinite(g) ? 1.0f : g;
}
// The block scale on a bf16 weight: amax / 6 rounded to bf16 (calculate_qparams in the weight's dtype), then times
// the fp32 global scale in fp32 (type promotion), e4m3 as in ct_nvfp4_params. Codes: x / (scale / g) in fp32
// (the compressor divides the bf16 weight by an fp32 scale), so ct_fp4 and ct_nvfp4_params_from_code are unchanged.
QNUM_HD qnum::group_params ct_nvfp4_params_bf16(float amax_block, float global_scale) {
  namespace d = qnum::detail;
  return qnum::presets::ct_nvfp4_params_from_scale(
      d::mul_rn(global_scale, d::to_work(d::div_rn(amax_block, 6.0f), qnum::work_dtype::bf16)), global_scale);
}

// NVFP4 weight_global_scale from the amax of the tensor (or of its fused group).
QNUM_HD float ct_nvfp4_global(float amax, bool bf16_work) {
  return bf16_work ? ct_nvfp4_global_scale_bf16(amax) : qnum::presets::ct_nvfp4_global_scale(amax);
}

// The group's parameters from its amax (NVFP4: with the tensor's weight_global_scale). MXFP4 is the same on bf16
// weights: its power-of-two scale comes from the amax bits (bf16's + 2^5 is fp32's + 2^21) and x / 2^k is exact.
QNUM_HD qnum::group_params ct_fp4_params(bool nvfp4, float amax, float global_scale, bool bf16_work = false) {
  if (!nvfp4) return qnum::presets::ct_mxfp4_params(amax);
  return bf16_work ? ct_nvfp4_params_bf16(amax, global_scale) : qnum::presets::ct_nvfp4_params(amax, global_scale);
}

// W4A16 / FP8 schemes of --work-dtype bf16: every step in bf16 as torch computes on a bf16 weight (scale formula,
// x / s, + z), scales stored as bf16 (the weight's dtype: the scale parameters take it), the eps rule on the stored
// scale with finfo(bf16).eps = 2^-7.
inline constexpr qnum::scheme<qnum::qint4> ct_w4a16_sym_bf16_work = qnum::presets::ct_w4a16_sym_bf16.in_work(qnum::work_dtype::bf16);
inline constexpr qnum::scheme<qnum::qint4> ct_w4a16_asym_bf16_work = qnum::presets::ct_w4a16_asym.stored_as(qnum::scale_storage::bf16)
                                                                        .eps_zero_to(0.0078125f)
                                                                        .eps_after_storage()
                                                                        .in_work(qnum::work_dtype::bf16);
inline constexpr qnum::scheme<qnum::fp8_e4m3> ct_fp8_bf16_work =
    qnum::presets::ct_fp8.stored_as(qnum::scale_storage::bf16).eps_zero_to(0.0078125f).eps_after_storage().in_work(qnum::work_dtype::bf16);

// compressed-tensors' E2M1 sign is torch.sign(x / s) (its CPU cast_to_fp4): a quotient of -0 (a -0.0 weight, or
// a negative one whose quotient underflows) is code 0, where quantize_value keeps the sign (0x8). Negative
// quotients that round to zero stay 0x8 in both.
template <class T>
QNUM_HD void ct_fp4_zero_sign(const qnum::group_params& p, const T* x, qnum::tensor_type tt, int g, std::uint8_t* codes) {
  for (int e = 0; e < g; ++e)
    if (codes[e] == 0x8 && qnum::detail::div_rn(qnum::detail::load_elem(x + e, tt), p.code_scale) == 0.0f) codes[e] = 0;
}

// Stores the group: its weight_scale byte and g / 2 weight_packed bytes (element 2i in the low nibble).
QNUM_HD void ct_fp4_store(const qnum::group_params& p, const std::uint8_t* codes, int g, std::uint8_t* scale,
                                 std::uint8_t* packed) {
  *scale = static_cast<std::uint8_t>(p.scale_code);
  for (int e = 0; e < g; e += 2) packed[e / 2] = qnum::pack_nibble_pair(codes[e], codes[e + 1], qnum::nibble_order::low_first);
}

}  // namespace qconv
