// apps/qnum-convert/src/convert_gpu.hpp: qnum-convert's GPU path. convert_gpu.cu implements it where nvcc builds the
// tool (QNUM_CONVERT_CUDA); elsewhere qnum_convert.cpp answers "built without CUDA". The output bytes are
// the CPU path's: the kernels are qnum/gpu/quantize.cuh's launchers (tests/gpu checks them against the
// host API bit for bit) and one per-group FP4 kernel here built from the same QNUM_HD functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qconv {

enum class out_format { w4a16, fp8_block, fp8_channel, fp8_tensor, nvfp4, mxfp4 };

// One source tensor: row-major [n, k] host data (a memory map is fine) of dtype "BF16", "F16" or "F32".
struct gpu_tensor {
  out_format format = out_format::w4a16;
  std::int64_t group = 128;  // W4A16 only
  bool asym = false;         // W4A16 only
  bool bf16_work = false;    // --work-dtype bf16 (presets' *_bf16_work rules; not fp8-block)
  bool has_global = false;   // NVFP4: `global` is the fused group's weight_global_scale (else from this tensor)
  float global = 0.0f;
  const std::uint8_t* data = nullptr;
  std::string dtype;
  std::int64_t n = 0, k = 0;
};

// Usable CUDA devices; 0 with the reason in `why` (built without CUDA, no driver, no device).
// `name`: device 0's name when there is one.
int gpu_devices(std::string& why, std::string& name);

// Quantizes `t` on the current device into `bufs`, already sized in the plan's order (qnum_convert.cpp's
// plan_source), leaving the host-side tail to the caller exactly as on the CPU path: for W4A16 the
// zero-point packing (asymmetric: `zeros` gets the int32 zero points [n, k / group]) and weight_shape.
// false with a message on any CUDA error (out of memory, failed launch); bufs are then unspecified.
bool gpu_quantize(const gpu_tensor& t, std::vector<std::vector<std::uint8_t>>& bufs, std::vector<std::int32_t>& zeros,
                  std::string& err);

}  // namespace qconv
