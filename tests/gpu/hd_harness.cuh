// tests/gpu/hd_harness.cuh: run one functor on host and on the GPU over an index range and compare
// the 32-bit results exactly. Also the shared main(): exit 77 (meson's SKIP) where no GPU is present.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace qtest {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <class Fn>
__global__ void hd_kernel(Fn fn, std::uint64_t n, std::uint32_t* out) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = fn(i);
  }
}

// Number of indices in [0, n) where fn(i) differs between host and device (prints the first few).
// Returns UINT64_MAX on a CUDA error.
template <class Fn>
std::uint64_t host_device_mismatches(const char* what, Fn fn, std::uint64_t n) {
  std::uint32_t* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(std::uint32_t)) != cudaSuccess) return UINT64_MAX;
  hd_kernel<<<1024, 256>>>(fn, n, d);
  std::vector<std::uint32_t> dev(n);
  const cudaError_t err = cudaMemcpy(dev.data(), d, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (err != cudaSuccess || cudaGetLastError() != cudaSuccess) {
    std::printf("%s: CUDA error %s\n", what, cudaGetErrorString(err));
    return UINT64_MAX;
  }
  std::uint64_t bad = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint32_t h = fn(i);
    if (h != dev[i] && bad++ < 5)
      std::printf("%s: index %llu host 0x%08x device 0x%08x\n", what, static_cast<unsigned long long>(i), h, dev[i]);
  }
  return bad;
}

}  // namespace qtest

#ifdef QNUM_TEST_DEVICE_MAIN
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
int main(int argc, char** argv) {
  if (!qtest::have_gpu()) {
    std::printf("no CUDA device: skipping (exit 77)\n");
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
#endif
