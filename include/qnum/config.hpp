// qnum/config.hpp: execution-space macros, version, namespace and the overridable assert.
#pragma once

#define QNUM_VERSION_MAJOR 0
#define QNUM_VERSION_MINOR 1
#define QNUM_VERSION_PATCH 0
#define QNUM_VERSION (QNUM_VERSION_MAJOR * 10000 + QNUM_VERSION_MINOR * 100 + QNUM_VERSION_PATCH)

// QNUM_HD marks every function that must give the same bits on host and device.
// Under a CUDA compiler it is `__host__ __device__ inline`; under a plain host compiler `inline`.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define QNUM_HD __host__ __device__ inline
#define QNUM_DEVICE __device__ inline
#define QNUM_HAS_CUDA_COMPILER() 1
#else
#define QNUM_HD inline
#define QNUM_HAS_CUDA_COMPILER() 0
#endif

// True while compiling device code (nvcc's device pass).
#if defined(__CUDA_ARCH__)
#define QNUM_IS_DEVICE_PASS() 1
#else
#define QNUM_IS_DEVICE_PASS() 0
#endif

// Versioned inline namespace: two copies of qnum of different versions can be linked together.
#define QNUM_BEGIN_NAMESPACE \
  namespace qnum {           \
  inline namespace v0 {
#define QNUM_END_NAMESPACE \
  }                        \
  }

// QNUM_ASSERT(cond): debug-only check of an internal invariant. Define QNUM_ASSERT before including
// any qnum header to route it elsewhere; by default it is `assert` on the host and a no-op on the
// device unless QNUM_DEVICE_ASSERTS is defined. Host entry points never rely on it to reject bad
// input: they return a status.
#ifndef QNUM_ASSERT
#if QNUM_IS_DEVICE_PASS() && !defined(QNUM_DEVICE_ASSERTS)
#define QNUM_ASSERT(cond) ((void)0)
#else
#include <cassert>
#define QNUM_ASSERT(cond) assert(cond)
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#define QNUM_RESTRICT __restrict__
#else
#define QNUM_RESTRICT
#endif
