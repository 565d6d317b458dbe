// qnum/status.hpp: the one result type of every host entry point and device launcher.
//
// Host entry points return a status and write nothing unless it is ok (or ok_zeroed_nonfinite, where an
// entry point says so). Device launchers validate their arguments on the host before they enqueue
// anything and return the same values; a CUDA runtime error e (from a launch or an async memset) comes
// back as the status with value status_cuda_base + e, which `is_cuda_error` recognises and
// `qnum::gpu::cuda_error` (qnum/gpu/status.cuh) turns back into the cudaError_t.
#pragma once

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE

enum class status : int {
  ok = 0,
  ok_zeroed_nonfinite,  // the step ran; >= 1 non-finite element got code 0 (nonfinite_policy::zero_elements)
  skipped_nonfinite,    // nothing changed but state.skipped (nonfinite_policy::skip_step)
  null_pointer,         // a pointer is null while its extent is non-zero
  misaligned,           // a pointer is not aligned to its element type (device launchers)
  bad_shape,            // negative or mismatched extents, or a size the layout or index type cannot hold
  bad_stride,           // row_stride < cols (for rows > 1) or negative
  bad_group,            // group size or shape not valid for the entry point or layout
  bad_scale_buffer,     // a scale or zero-point view whose shape or element size does not match the groups
  bad_bits,             // bit width outside what the layout supports
  bad_type,             // an element type the entry point does not take (e.g. a 16-bit view marked fp32)
  bad_config,           // configuration values out of range (alpha, clip, floor, block size, step)
  code_out_of_range,    // a code does not fit the bit width (or, GPTQ v1, a zero point of 0)
  non_finite,           // NaN or Inf in a float input the entry point must quantize itself (GGUF)
  scale_overflow,       // a scale does not fit the layout's scale type (fp16 Inf)
};

// Value of the first CUDA error: status(status_cuda_base + e) for cudaError_t e != cudaSuccess.
inline constexpr int status_cuda_base = 1 << 16;

QNUM_HD constexpr bool is_cuda_error(status s) { return static_cast<int>(s) >= status_cuda_base; }

// The enumerator's name ("bad_group"), or "cuda_error" for a CUDA runtime error.
QNUM_HD constexpr const char* to_string(status s) {
  switch (s) {
    case status::ok: return "ok";
    case status::ok_zeroed_nonfinite: return "ok_zeroed_nonfinite";
    case status::skipped_nonfinite: return "skipped_nonfinite";
    case status::null_pointer: return "null_pointer";
    case status::misaligned: return "misaligned";
    case status::bad_shape: return "bad_shape";
    case status::bad_stride: return "bad_stride";
    case status::bad_group: return "bad_group";
    case status::bad_scale_buffer: return "bad_scale_buffer";
    case status::bad_bits: return "bad_bits";
    case status::bad_type: return "bad_type";
    case status::bad_config: return "bad_config";
    case status::code_out_of_range: return "code_out_of_range";
    case status::non_finite: return "non_finite";
    case status::scale_overflow: return "scale_overflow";
  }
  return is_cuda_error(s) ? "cuda_error" : "unknown";
}

QNUM_END_NAMESPACE
