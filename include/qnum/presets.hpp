// qnum/presets.hpp: named schemes + group shapes for the public systems (docs/schemes.md gives each formula and match).
#pragma once

#include "qnum/format.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE
namespace presets {

// slime Megatron INT4 QAT fake quant (_FakeInt4QuantizationSTE): s = max(amax / 7, 1e-5) fp32 (divide),
// q = clamp(round(x / s), -7, 7), out = q * s. Groups 1x32 (Kimi-K2) or 1x128. Backward: ste_identity.
constexpr scheme<int4> slime_int4_qat = symmetric_restricted<int4>().eps_floor(1e-5f);
// slime CUDA kernel / checkpoint (fake_int4_quant_cuda + pack_layer): s = max(amax * (1/7), 1e-5),
// codes decided with the fp32 scale, scale stored as bf16.
constexpr scheme<int4> slime_int4_checkpoint =
    symmetric_restricted<int4>().eps_floor(1e-5f).scale_multiply().stored_as(scale_storage::bf16).codes_from_fp32_scale();

// compressed-tensors W4A16 (minmax observer, calculate_qparams + _quantize/_dequantize) on fp32 weights:
// sym s = amax / 7.5 (zero -> finfo(fp32).eps), q = clamp then round(x / s). Scale dtype fp32.
constexpr scheme<int4> ct_w4a16_sym = symmetric_full<int4>().eps_zero_to(1.1920928955078125e-07f);
// Same with the scale rounded to bf16 (scale_dtype bf16, eps = finfo(bf16).eps) and codes from the bf16 scale.
constexpr scheme<int4> ct_w4a16_sym_bf16 = symmetric_full<int4>().stored_as(scale_storage::bf16).eps_zero_to(0.0078125f);
// compressed-tensors asym: s = (max' - min') / 15, z = round(clamp(-8 - min'/s)) (with the fp32 scale),
// q = round(clamp(x / s + z)).
constexpr scheme<int4> ct_w4a16_asym =
    asymmetric<int4>().eps_zero_to(1.1920928955078125e-07f).zero_before_round().zero_round_after_subtract();
// compressed-tensors FP8 weights ("float-quantized", presets FP8_DYNAMIC / FP8: strategy channel or tensor) on
// fp32 weights: s = amax / 448 (fp32 divide; amax 0 -> finfo(fp32).eps), e4m3 = satfinite RNE(x / s), scale fp32.
// Groups per_row() (channel, weight_scale [N, 1]) or per_tensor() (weight_scale [1]).
constexpr scheme<fp8_e4m3> ct_fp8 = float_amax<fp8_e4m3>().eps_zero_to(1.1920928955078125e-07f);
constexpr group_shape ct_group32 = group_size(32);
constexpr group_shape ct_group128 = group_size(128);

// torchao choose_qparams_affine / quantize_affine (fp32 input, eps = finfo(fp32).smallest_normal):
// SYMMETRIC int4 in [-8, 7]: s = max(amax / 7.5, eps); q = clamp(round(x * (1/s)), -8, 7).
constexpr scheme<int4> torchao_int4_sym = symmetric_full<int4>().eps_floor(1.17549435e-38f).x_multiply();
constexpr scheme<int8> torchao_int8_sym = symmetric_full<int8>().eps_floor(1.17549435e-38f).x_multiply();
// ASYMMETRIC uint4 [0, 15]: s = max((max'-min') / 15, eps), z = clamp(0 - round(min'/s)), q = clamp(round(x*(1/s)) + z).
constexpr scheme<uint4> torchao_uint4_asym = asymmetric<uint4>().eps_floor(1.17549435e-38f).x_multiply();
constexpr scheme<uint8> torchao_uint8_asym = asymmetric<uint8>().eps_floor(1.17549435e-38f).x_multiply();

// DeepGEMM per_token_cast_to_fp8 (1x128) / per_block_cast_to_fp8 (128x128): s = max(amax, 1e-4) / 448
// (eps 1e-4/448 on the scale is the same floor), e4m3 = satfinite(x * (1/s)); UE8M0 variant rounds s up
// to a power of two (ceil_to_ue8m0) before computing 1/s.
// fl(max(amax, 1e-4) / 448) == max(fl(amax / 448), fl(1e-4 / 448)) (division is monotone), so the amax
// clamp is an eps floor on the scale.
constexpr scheme<fp8_e4m3> deepgemm_fp8 = float_amax<fp8_e4m3>().eps_floor(1e-4f / 448.0f).x_multiply();
constexpr scheme<fp8_e4m3> deepgemm_fp8_ue8m0 =
    float_amax<fp8_e4m3>().eps_floor(1e-4f / 448.0f).x_multiply().with_pow2(pow2_rule::ceil_pow2);
constexpr group_shape deepseek_act = group_size(128);
constexpr group_shape deepseek_weight = block(128, 128);

// TransformerEngine Float8CurrentScaling (per tensor): m = 448 / amax (amax 0 -> 1), e4m3 = satfinite(x * m),
// stored scale_inv = 1/m.
constexpr scheme<fp8_e4m3> te_fp8_current = te_current<fp8_e4m3>();
constexpr scheme<fp8_e5m2> te_fp8_current_e5m2 = te_current<fp8_e5m2>();

// MX (OCP v1.0, torchao to_mx FLOOR / RCEIL), 1x32 blocks, E8M0 scales.
constexpr scheme<fp8_e4m3> mxfp8 = float_amax<fp8_e4m3>().with_pow2(pow2_rule::mx_floor);
constexpr scheme<fp8_e4m3> mxfp8_rceil = float_amax<fp8_e4m3>().with_pow2(pow2_rule::mx_rceil).x_multiply();
constexpr scheme<fp4_e2m1> mxfp4 = float_amax<fp4_e2m1>().with_pow2(pow2_rule::mx_floor);
constexpr scheme<fp4_e2m1> mxfp4_rceil = float_amax<fp4_e2m1>().with_pow2(pow2_rule::mx_rceil).x_multiply();
constexpr group_shape mx_block = group_size(32);

// NVFP4 (torchao nvfp4_quantize): block 1x16, s = clamp(amax / 6 [/ per_tensor], 2^-6, 448) -> UE4M3,
// e2m1 = RNE(x * ((1/per_tensor) / s)). Per-tensor scale amax_tensor / (448 * 6) passed as outer_scale.
constexpr scheme<fp4_e2m1> nvfp4 = float_amax<fp4_e2m1>().eps_floor(0.015625f).stored_as(scale_storage::ue4m3).x_multiply();
constexpr group_shape nvfp4_block = group_size(16);
// NVFP4 per-tensor scale as torchao computes it: amax / (448 * 6) (fp32 divide).
QNUM_HD float nvfp4_tensor_scale(float amax) { return detail::div_rn(amax, 2688.0f); }

}  // namespace presets
QNUM_END_NAMESPACE
