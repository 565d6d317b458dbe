// fuzz/fuzz_groupquant.cpp: property fuzzing of host group quantization (qnum/quantize_tensor.hpp:
// compute_scales, quantize, dequantize, fake_quantize, tensor_amax) for every scheme scale.hpp lets
// one build (factories + chainable modifiers), every group shape, fp32/bf16/fp16 inputs and outputs,
// row strides > cols, nearest and stochastic rounding, with and without an NVFP4-style outer scale.
//
// Every buffer is allocated with exactly the size the view needs (new T[n]), so ASan reports any read
// or write outside it; row padding (stride > cols) and scale-buffer padding hold sentinels that must
// survive every call.
//
// Input bytes (see parse()): a header choosing format, scheme, group shape, shape, dtypes, rounding,
// outer scale and an optional corruption, then the element values (raw fp32 / 16-bit bits; reused
// cyclically when the input is shorter than the tensor). Tensors: rows 0..24, cols 0..80.
//
// Properties (prefix groupquant/):
//   status        valid arguments give status::ok from all five entry points; one deliberately wrong
//                 argument (null pointer, negative shape, mismatched shape, stride < cols, negative
//                 group size, scale/zero buffer of the wrong shape or element size) gives the
//                 documented non-ok status, and no output byte changes
//   untouched     padding between cols and row_stride (inputs, codes, outputs, scales) is never written
//   fq_eq_dq      fake_quantize(x) == dequantize(quantize(x)) bit for bit, same rounding and seed, in the
//                 fuzzed output dtype (fp32, bf16 or fp16)
//   scales_agree  compute_scales writes the same scale (and zero point) bits as quantize
//   amax          tensor_amax == max |x| over the finite elements (0 when none)
//   code_range    integer codes: no bits above F::bits, code_to_int in [code_min, code_max];
//                 float codes: no bits above F::bits
//   scale_valid   every stored scale decodes to a finite value > 0 (eps >= 0 here)
//   nan_input     NaN x: integer schemes give the zero-point code (dequantizes to 0), float schemes
//                 F's NaN code (fp4_e2m1: +6, code 0x7)
//   no_nan        a finite x never dequantizes to NaN; it dequantizes to +-Inf only when the scale is
//                 "huge": |q - z|_max * scale (integer formats, |q - z|_max = qmax - code_min... see
//                 huge_scale()) or max_value * scale (float formats) reaches the overflow threshold of
//                 the dtype the dequantized value is rounded to (work dtype for integer formats, fp32
//                 for float formats) -- the IEEE product overflowing, nothing else
//   error_bound   for finite x whose scaled value is in range and a scale that is not huge, with codes
//                 decided by the stored scale (codes_from_stored; codes_from_fp32_scale is slime's
//                 documented off-grid path), work dtype fp32 or equal to the input dtype:
//                   |x - dq| <= cs * (h + 2 rel (|t| + |t + z|) + 2^-20) + |q - z| |s - cs|
//                               + |dq| (w + 2^-23) + a_w
//                 cs = stored scale (times outer, exact in double), s = the fp32 scale dequantize uses,
//                 t = x / cs, z = zero point; h = half the element grid's gap at |t| for nearest
//                 rounding (integers: 1/2), the whole gap just above |t| for stochastic rounding (integers:
//                 1); w = unit roundoff of the work dtype (fp32 2^-24, bf16 2^-8, fp16 2^-11),
//                 rel = w + 2^-21 (the roundings of x/cs or x*inv and of the work dtype), a_w = the work
//                 dtype's absolute subnormal error (2^-149, 2^-133, 2^-24).
//                 Not checked where scale.hpp's documented reciprocal clamp applies: x_by multiply or an
//                 outer scale, and 1/cs (within 2^-8) reaches the overflow threshold of the work dtype
//                 (fp32 with an outer scale): 1/scale overflows and is clamped to FLT_MAX.
//                 "In range": integer formats
//                 code_min - 1/2 <= t + z <= code_max + 1/2; float formats |t| <= max_value.
//                 For integer formats with fp32 work this is the textbook |x - dq| <= cs/2 (+ a few
//                 ulps); for float formats half an ulp of the element grid times the scale.
//
// Translation units: this file (the entry point), groupquant_4bit.cpp and groupquant_8bit.cpp (the checks
// of groupquant_run.hpp for the 4-bit and the 8-bit formats, compiled in parallel).
#include <cstddef>
#include <cstdint>

#include "fuzz_groupquant.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qnum_fuzz::input in(data, size);
  const qnum_fuzz::groupquant::header h = qnum_fuzz::groupquant::parse(in);
  const int fmt = h.fmt % 7;
  if (fmt == 0 || fmt == 1 || fmt == 6) {
    qnum_fuzz::groupquant::run_4bit(h, in, fmt);
  } else {
    qnum_fuzz::groupquant::run_8bit(h, in, fmt);
  }
  return 0;
}
