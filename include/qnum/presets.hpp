// qnum/presets.hpp: named schemes + group shapes for the public systems (docs/schemes.md gives each formula and match).
#pragma once

#include "qnum/format.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE
namespace presets {

// slime Megatron INT4 QAT fake quant (_FakeInt4QuantizationSTE): s = max(amax / 7, 1e-5) fp32 (divide),
// q = clamp(round(x / s), -7, 7), out = q * s. Groups 1x32 (Kimi-K2) or 1x128. Backward: ste_identity.
inline constexpr scheme<qint4> slime_int4_qat = symmetric_restricted<qint4>().eps_floor(1e-5f);
// slime CUDA kernel / checkpoint (fake_int4_quant_cuda + pack_layer): s = max(amax * (1/7), 1e-5),
// codes decided with the fp32 scale, scale stored as bf16.
inline constexpr scheme<qint4> slime_int4_checkpoint =
    symmetric_restricted<qint4>().eps_floor(1e-5f).scale_multiply().stored_as(dtype::bf16).codes_from_fp32_scale();

// compressed-tensors W4A16 (minmax observer, calculate_qparams + _quantize/_dequantize) on fp32 weights:
// sym s = amax / 7.5 (zero -> finfo(fp32).eps), q = clamp then round(x / s). Scale dtype fp32.
inline constexpr scheme<qint4> ct_w4a16_sym = symmetric_full<qint4>().eps_zero_to(1.1920928955078125e-07f);
// Same with the scale rounded to bf16 (scale_dtype bf16) and codes from the bf16 scale. As in compressed-tensors,
// the eps rule comes after the rounding: a scale that is 0 in bf16 (all-zero group, or amax / 7.5 below bf16's
// smallest subnormal) becomes finfo(bf16).eps = 2^-7. (With an fp32 scale the two orders agree.)
inline constexpr scheme<qint4> ct_w4a16_sym_bf16 =
    symmetric_full<qint4>().stored_as(dtype::bf16).eps_zero_to(0.0078125f).eps_after_storage();
// compressed-tensors asym: s = (max' - min') / 15, z = round(clamp(-8 - min'/s)) (with the fp32 scale),
// q = round(clamp(x / s + z)).
inline constexpr scheme<qint4> ct_w4a16_asym =
    asymmetric<qint4>().eps_zero_to(1.1920928955078125e-07f).zero_before_round().zero_round_after_subtract();
// compressed-tensors FP8 weights ("float-quantized", presets FP8_DYNAMIC / FP8: strategy channel or tensor) on
// fp32 weights: s = amax / 448 (fp32 divide; amax 0 -> finfo(fp32).eps), e4m3 = satfinite RNE(x / s), scale fp32.
// Groups per_row() (channel, weight_scale [N, 1]) or per_tensor() (weight_scale [1]).
inline constexpr scheme<fp8_e4m3> ct_fp8 = float_amax<fp8_e4m3>().eps_zero_to(1.1920928955078125e-07f);
inline constexpr group_shape ct_group32 = group_size(32);
inline constexpr group_shape ct_group128 = group_size(128);

// Plain symmetric INT8 (Q-Galore-style gradient and state quantization, the throughput benchmarks' baseline):
// s = amax / 127 (fp32 divide), q = clamp(round(x / s), -127, 127), scale fp32; an all-zero group gets s = 1
// and codes 0 (the rule for schemes without an eps).
inline constexpr scheme<qint8> int8_sym = symmetric_restricted<qint8>();

// torchao choose_qparams_affine / quantize_affine (fp32 input, eps = finfo(fp32).smallest_normal):
// SYMMETRIC int4 in [-8, 7]: s = max(amax / 7.5, eps); q = clamp(round(x * (1/s)), -8, 7).
inline constexpr scheme<qint4> torchao_int4_sym = symmetric_full<qint4>().eps_floor(detail::flt_min).x_multiply();
inline constexpr scheme<qint8> torchao_int8_sym = symmetric_full<qint8>().eps_floor(detail::flt_min).x_multiply();
// ASYMMETRIC uint4 [0, 15]: s = max((max'-min') / 15, eps), z = clamp(0 - round(min'/s)), q = clamp(round(x*(1/s)) + z).
inline constexpr scheme<quint4> torchao_uint4_asym = asymmetric<quint4>().eps_floor(detail::flt_min).x_multiply();
inline constexpr scheme<quint8> torchao_uint8_asym = asymmetric<quint8>().eps_floor(detail::flt_min).x_multiply();

// DeepGEMM per_token_cast_to_fp8 (1x128) / per_block_cast_to_fp8 (128x128): s = max(amax, 1e-4) / 448
// (eps 1e-4/448 on the scale is the same floor), e4m3 = satfinite(x * (1/s)); UE8M0 variant rounds s up
// to a power of two (ceil_to_ue8m0) before computing 1/s.
// fl(max(amax, 1e-4) / 448) == max(fl(amax / 448), fl(1e-4 / 448)) (division is monotone), so the amax
// clamp is an eps floor on the scale.
inline constexpr scheme<fp8_e4m3> deepgemm_fp8 = float_amax<fp8_e4m3>().eps_floor(1e-4f / 448.0f).x_multiply();
inline constexpr scheme<fp8_e4m3> deepgemm_fp8_ue8m0 =
    float_amax<fp8_e4m3>().eps_floor(1e-4f / 448.0f).x_multiply().with_pow2(pow2_rule::ceil_pow2);
inline constexpr group_shape deepseek_act = group_size(128);
inline constexpr group_shape deepseek_weight = block(128, 128);

// TransformerEngine Float8CurrentScaling (per tensor): m = 448 / amax (amax 0 -> 1), e4m3 = satfinite(x * m),
// stored scale_inv = 1/m.
inline constexpr scheme<fp8_e4m3> te_fp8_current = te_current<fp8_e4m3>();
inline constexpr scheme<fp8_e5m2> te_fp8_current_e5m2 = te_current<fp8_e5m2>();

// MX (OCP v1.0, torchao to_mx FLOOR / RCEIL), 1x32 blocks, E8M0 scales.
inline constexpr scheme<fp8_e4m3> mxfp8 = float_amax<fp8_e4m3>().with_pow2(pow2_rule::mx_floor);
inline constexpr scheme<fp8_e4m3> mxfp8_rceil = float_amax<fp8_e4m3>().with_pow2(pow2_rule::mx_rceil).x_multiply();
inline constexpr scheme<fp4_e2m1> mxfp4 = float_amax<fp4_e2m1>().with_pow2(pow2_rule::mx_floor);
inline constexpr scheme<fp4_e2m1> mxfp4_rceil = float_amax<fp4_e2m1>().with_pow2(pow2_rule::mx_rceil).x_multiply();
inline constexpr group_shape mx_block = group_size(32);

// NVFP4 (torchao nvfp4_quantize): block 1x16, s = clamp(amax / 6 [/ per_tensor], 2^-6, 448) -> UE4M3,
// e2m1 = RNE(x * ((1/per_tensor) / s)). Per-tensor scale amax_tensor / (448 * 6) passed as outer_scale.
inline constexpr scheme<fp4_e2m1> nvfp4 = float_amax<fp4_e2m1>().eps_floor(0.015625f).stored_as(dtype::ue4m3).x_multiply();
inline constexpr group_shape nvfp4_block = group_size(16);
// NVFP4 per-tensor scale as torchao computes it: amax / (448 * 6) (fp32 divide).
QNUM_HD float nvfp4_tensor_scale(float amax) { return detail::div_rn(amax, 2688.0f); }

// compressed-tensors 0.20 FP4 weights ("nvfp4-pack-quantized" NVFP4A16, "mxfp4-pack-quantized" MXFP4A16) on fp32
// weights. Their scale rules are not those of the torchao-matching `nvfp4` / `mxfp4` presets above (different
// rounding paths), so they are given as group_params builders; the per-element rule is ct_fp4's (float_amax,
// x / code_scale): e2m1 = RNE satfinite(x / code_scale) (compressed-tensors clamps to +-6 and rounds ties to even),
// dequantized decode(e2m1) * scale with quantize_value / dequantize_value / fake_quant_value.
inline constexpr scheme<fp4_e2m1> ct_fp4 = float_amax<fp4_e2m1>();
inline constexpr group_shape ct_nvfp4_block = group_size(16);
inline constexpr group_shape ct_mxfp4_block = group_size(32);

// NVFP4 weight_global_scale (generate_gparam): g = 2688 / max(amax_tensor, FLT_MIN), which torch evaluates
// (python scalar / tensor) as fl(fl(1 / a) * 2688), not one correctly rounded divide (1 ulp apart, e.g. a = 40);
// an infinite g (a below 2688 / FLT_MAX) is 1. The reciprocal convention of torchao's per-tensor scale amax / 2688.
QNUM_HD float ct_nvfp4_global_scale(float amax_tensor) {
  const float a = amax_tensor < detail::flt_min ? detail::flt_min : amax_tensor;
  const float g = detail::mul_rn(detail::div_rn(1.0f, a), 2688.0f);
  return detail::is_nonfinite(g) ? 1.0f : g;
}
// NVFP4 block parameters from a stored weight_scale code (float8_e4m3fn) and g: scale = code_scale =
// decode(code) / g (fp32 divide), as compressed-tensors' quantize and dequantize use it.
QNUM_HD group_params ct_nvfp4_params_from_code(std::uint32_t code, float global_scale) {
  group_params p;
  p.scale_code = code;
  p.scale = detail::div_rn(decode<fp8_e4m3>(code), global_scale);
  p.code_scale = p.scale;
  p.inv = detail::finite_or_max(detail::div_rn(1.0f, p.code_scale));
  return p;
}
// NVFP4 block parameters (calculate_qparams with global_scale, scale_dtype float8_e4m3fn):
// s = e4m3fn(RNE satfinite(g * (amax_block / 6))) (fp32 divide, then multiply); s == 0 -> 0.125 (finfo eps
// of float8_e4m3fn); weight_scale = the e4m3fn code of s; code_scale = scale = s / g.
// The storage step of that rule, from the scaled block scale sc = g * (amax / 6) however it was computed.
QNUM_HD group_params ct_nvfp4_params_from_scale(float sc, float global_scale) {
  std::uint32_t code = encode<fp8_e4m3>(sc, rne, satfinite);
  if (decode<fp8_e4m3>(code) == 0.0f) code = encode<fp8_e4m3>(0.125f, rne, satfinite);
  return ct_nvfp4_params_from_code(code, global_scale);
}
QNUM_HD group_params ct_nvfp4_params(float amax_block, float global_scale) {
  return ct_nvfp4_params_from_scale(detail::mul_rn(global_scale, detail::div_rn(amax_block, 6.0f)), global_scale);
}
// MXFP4 block parameters from a stored weight_scale code (uint8 biased exponent): scale = 2^(code - 127).
QNUM_HD group_params ct_mxfp4_params_from_code(std::uint32_t code) { return detail::pow2_params(code); }
// MXFP4 block parameters (generate_mx_scales, vLLM reference_mxfp4): amax rounded to a power of two at E2M1's
// mantissa width (fp32 bits + 2^21, exponent kept: a mantissa >= 1.75 goes up), code = its biased exponent - 2,
// clamped to [0, 254] (amax 0 or below 2^-127: 0; compressed-tensors would give 255, an infinite scale, for
// amax >= 1.75 * 2^127). Differs from `mxfp4` (OCP floor(log2 amax)) where amax's mantissa is >= 1.75.
QNUM_HD group_params ct_mxfp4_params(float amax_block) {
  const std::uint32_t u = detail::float_to_bits(amax_block) + 0x200000u;
  const int e = static_cast<int>((u >> 23) & 0xFFu);
  const int code = e <= 2 ? 0 : (e - 2 > 254 ? 254 : e - 2);
  return ct_mxfp4_params_from_code(static_cast<std::uint32_t>(code));
}

// Elements per compressed-tensors FP4 group: 16 for NVFP4 (E4M3 weight_scale), 32 for MXFP4 (E8M0 weight_scale).
QNUM_HD constexpr int ct_fp4_group_size(bool is_nvfp4) { return is_nvfp4 ? 16 : 32; }

// The same compressed-tensors 0.20 rules on a bf16 weight (llm-compressor's flow on the CPU, where torch computes
// in the weight's dtype), the `_bf16_work` presets:
// NVFP4 weight_global_scale: generate_gparam on the bf16 absmax, 2688 / a evaluated by torch in bf16 as
// bf16(bf16(1 / a) * 2688) (each step an fp32 operation rounded to bf16, RNE; a = max(amax_tensor,
// finfo(bf16).tiny = 2^-126)); an infinite result is 1. Stored as fp32, so always a bf16 value.
QNUM_HD float ct_nvfp4_global_scale_bf16_work(float amax_tensor) {
  const float a = amax_tensor < detail::flt_min ? detail::flt_min : amax_tensor;
  const float r = detail::to_work(detail::div_rn(1.0f, a), dtype::bf16);
  const float g = detail::to_work(detail::mul_rn(r, 2688.0f), dtype::bf16);
  return detail::is_nonfinite(g) ? 1.0f : g;
}
// ct_nvfp4_global_scale (fp32 weight) or ct_nvfp4_global_scale_bf16_work (bf16_work), for a run-time choice.
QNUM_HD float ct_nvfp4_global_scale(float amax_tensor, bool bf16_work) {
  return bf16_work ? ct_nvfp4_global_scale_bf16_work(amax_tensor) : ct_nvfp4_global_scale(amax_tensor);
}
// NVFP4 block parameters on a bf16 weight: amax_block / 6 rounded to bf16 (calculate_qparams in the weight's
// dtype), times the fp32 global scale in fp32 (type promotion), then ct_nvfp4_params_from_scale's e4m3 storage
// (0 -> 0.125). The codes are unchanged: compressed-tensors divides the bf16 weight by the fp32 scale / g, which
// is ct_fp4's x / code_scale on the bf16 value read as fp32.
QNUM_HD group_params ct_nvfp4_params_bf16_work(float amax_block, float global_scale) {
  return ct_nvfp4_params_from_scale(
      detail::mul_rn(global_scale, detail::to_work(detail::div_rn(amax_block, 6.0f), dtype::bf16)), global_scale);
}
// One FP4 group's parameters from its amax, for a run-time format: NVFP4 (is_nvfp4, with the tensor's or its fused
// group's weight_global_scale) ct_nvfp4_params / ct_nvfp4_params_bf16_work; MXFP4 ct_mxfp4_params (global_scale
// unused), the same on a bf16 weight: its power-of-two scale comes from the amax bits (a bf16 amax + 2^5 in bf16
// units is the fp32 rule's + 2^21) and x / 2^k is exact.
QNUM_HD group_params ct_fp4_params(bool is_nvfp4, float amax_block, float global_scale, bool bf16_work = false) {
  if (!is_nvfp4) return ct_mxfp4_params(amax_block);
  return bf16_work ? ct_nvfp4_params_bf16_work(amax_block, global_scale) : ct_nvfp4_params(amax_block, global_scale);
}
// compressed-tensors' E2M1 sign rule, applied to n codes of ct_fp4 (quantize_value / quantize_row with p) for the
// elements x: its cast_to_fp4 takes the sign from torch.sign(x / s), so a quotient x / code_scale (fp32 divide)
// that is exactly -0 (a -0.0 weight, or a negative one whose quotient underflows) is code 0x0, where
// quantize_value keeps the sign (0x8). Every other code is left as it is: a negative quotient that rounds to zero
// is 0x8 in both; NaN never matches. x is fp32 (`const float*`) or 16-bit bits of type t, as for quantize_row.
template <class T>
QNUM_HD void ct_fp4_zero_sign(const group_params& p, const T* x, std::int64_t n, std::uint8_t* codes,
                              dtype t = sizeof(T) == 2 ? dtype::bf16 : dtype::fp32) {
  for (std::int64_t i = 0; i < n; ++i)
    if (codes[i] == 0x8u && detail::div_rn(detail::load_elem(x + i, t), p.code_scale) == 0.0f) codes[i] = 0;
}

// W4A16 and FP8 on a bf16 weight (--work-dtype bf16 of qnum-convert): every step in bf16 as torch computes on a
// bf16 weight (scale formula, x / s, + z, each fp32 operation rounded to bf16), scales stored as bf16 (the
// weight's dtype: the scale parameters take it), the eps rule on the stored scale with finfo(bf16).eps = 2^-7.
// Symmetric W4A16: s = bf16(amax / 7.5), 0 -> 2^-7, q = round(bf16(x / s)).
inline constexpr scheme<qint4> ct_w4a16_sym_bf16_work = ct_w4a16_sym_bf16.in_work(dtype::bf16);
// Asymmetric W4A16: s = bf16(bf16(max' - min') / 15), z = round(bf16(-8 - bf16(min' / s))),
// q = round(bf16(bf16(x / s) + z)); weight_scale bf16.
inline constexpr scheme<qint4> ct_w4a16_asym_bf16_work =
    ct_w4a16_asym.stored_as(dtype::bf16).eps_zero_to(0.0078125f).eps_after_storage().in_work(dtype::bf16);
// FP8 channel / tensor: s = bf16(amax / 448), 0 -> 2^-7, e4m3 = satfinite RNE(bf16(x / s)); weight_scale bf16.
inline constexpr scheme<fp8_e4m3> ct_fp8_bf16_work =
    ct_fp8.stored_as(dtype::bf16).eps_zero_to(0.0078125f).eps_after_storage().in_work(dtype::bf16);

}  // namespace presets
QNUM_END_NAMESPACE
