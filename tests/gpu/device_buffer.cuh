// tests/gpu/device_buffer.cuh: copies between host vectors and fresh device buffers for the device tests
// (REQUIRE on every CUDA call; the caller frees with cudaFree).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

namespace qtest {

// A device copy of h (one spare byte, so that an empty vector still gets a buffer).
template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  REQUIRE(cudaMalloc(&d, h.size() * sizeof(T) + 1) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return d;
}
// n elements from device memory d.
template <class T>
std::vector<T> from_device(const T* d, std::size_t n) {
  std::vector<T> h(n);
  REQUIRE(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return h;
}

}  // namespace qtest
