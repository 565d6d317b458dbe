// qnum/gpu/status.cuh: CUDA runtime errors inside qnum::status (see qnum/status.hpp).
//
// Device launchers return qnum::status: argument errors as on the host (null_pointer, misaligned,
// bad_shape, ...), found before anything is enqueued, and a failed CUDA call (a launch, an async memset)
// as status(status_cuda_base + e). from_cuda and cuda_error convert between the two.
#pragma once

#include <cuda_runtime_api.h>

#include "qnum/config.hpp"
#include "qnum/status.hpp"

QNUM_BEGIN_NAMESPACE
namespace gpu {

// status::ok for cudaSuccess, otherwise the status carrying e.
inline status from_cuda(cudaError_t e) {
  return e == cudaSuccess ? status::ok : static_cast<status>(status_cuda_base + static_cast<int>(e));
}

// The CUDA error a status carries: cudaSuccess for ok (and the other ok_* outcomes), the runtime's error for a
// CUDA failure, and cudaErrorInvalidValue for an argument error (so code that speaks cudaError_t can forward it).
inline cudaError_t cuda_error(status s) {
  if (is_cuda_error(s)) return static_cast<cudaError_t>(static_cast<int>(s) - status_cuda_base);
  if (s == status::ok || s == status::ok_zeroed_nonfinite || s == status::skipped_nonfinite) return cudaSuccess;
  return cudaErrorInvalidValue;
}

}  // namespace gpu
QNUM_END_NAMESPACE
