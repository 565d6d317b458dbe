// tests/gpu/test_divide_device.cu: gpu::divide (one reciprocal per group, Markstein's correction per element)
// against the correctly rounded division __fdiv_rn, on the GPU.
//   1. Mantissa pairs: x, b in [1, 2), every x for a stride of b (every b with QNUM_DIVIDE_EXHAUSTIVE=1: 2^46
//      pairs, about a minute on an H100): the same bits. The other exponents scale exactly while nothing
//      underflows or overflows, which part 2 covers.
//   2. Every float32 x (2^32 bit patterns, NaN and Inf included) for divisors at the ends of the fast range and
//      between: the same code in every format (gpu::divide's contract): the same bits, or both NaN, or both
//      below 2^-36 in magnitude with the same sign, or both at least 2^127 with the same sign.
//   3. A divisor outside the fast range takes __fdiv_rn: the same bits.
//   Parts 2 and 3 also check divide_bounded (divide without its clamp) against divide's bits for every x that
//   bounded_quotients admits (|x| as the bound; NaN x: NaN).
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "qnum/gpu/quantize.cuh"
#include "../divide_contract.hpp"

namespace {

struct tally {
  unsigned long long bad;      // contract broken
  unsigned long long differ;   // bits differ (allowed only in part 2's tails)
  unsigned int first_x, first_b;
};

__device__ inline void record(tally* t, bool bad, bool differ, std::uint32_t x, std::uint32_t b) {
  if (differ) atomicAdd(&t->differ, 1ull);
  if (bad && atomicAdd(&t->bad, 1ull) == 0ull) {
    t->first_x = x;
    t->first_b = b;
  }
}

// Block k takes divisor mantissa k * stride; its threads sweep all 2^23 mantissas of x.
__global__ void mantissa_pairs(std::uint32_t stride, tally* t) {
  const std::uint32_t bbits = 0x3F800000u | (blockIdx.x * stride);
  const float b = __uint_as_float(bbits);
  const qnum::gpu::divisor d = qnum::gpu::make_divisor(b);
  unsigned long long bad = 0;
  for (std::uint32_t m = threadIdx.x; m < (1u << 23); m += blockDim.x) {
    const float x = __uint_as_float(0x3F800000u | m);
    bad += __float_as_uint(qnum::gpu::divide(d, x)) != __float_as_uint(__fdiv_rn(x, b));
  }
  if (bad != 0ull && atomicAdd(&t->bad, bad) == 0ull) t->first_b = bbits;
}

// Every 32-bit pattern x against one divisor.
__global__ void all_x(float b, tally* t) {
  const qnum::gpu::divisor d = qnum::gpu::make_divisor(b);
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < (std::uint64_t{1} << 32);
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t xb = static_cast<std::uint32_t>(i);
    const float x = __uint_as_float(xb);
    const float q = qnum::gpu::divide(d, x), r = __fdiv_rn(x, b);
    const bool differ = __float_as_uint(q) != __float_as_uint(r);
    if (differ) record(t, !qtest::same_code(q, r), true, xb, __float_as_uint(b));
    // divide_bounded (no clamp) for every x that bounded_quotients admits: divide's bits, NaN for NaN.
    if (x != x || qnum::gpu::bounded_quotients(d, fabsf(x))) {
      const float qb = qnum::gpu::divide_bounded(d, x);
      if (!(__float_as_uint(qb) == __float_as_uint(q) || (qb != qb && q != q))) record(t, true, false, xb, __float_as_uint(b));
    }
  }
}

tally run_pairs(std::uint32_t stride) {
  tally* d = nullptr;
  tally h{};
  REQUIRE(cudaMalloc(&d, sizeof(tally)) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, sizeof(tally)) == cudaSuccess);
  mantissa_pairs<<<(1u << 23) / stride, 256>>>(stride, d);
  REQUIRE(cudaMemcpy(&h, d, sizeof(tally), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  cudaFree(d);
  return h;
}

tally run_all_x(float b) {
  tally* d = nullptr;
  tally h{};
  REQUIRE(cudaMalloc(&d, sizeof(tally)) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, sizeof(tally)) == cudaSuccess);
  all_x<<<132 * 16, 256>>>(b, d);
  REQUIRE(cudaMemcpy(&h, d, sizeof(tally), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  cudaFree(d);
  return h;
}

float next_up(float v) { return qnum::detail::bits_to_float(qnum::detail::float_to_bits(v) + 1u); }
float next_down(float v) { return qnum::detail::bits_to_float(qnum::detail::float_to_bits(v) - 1u); }

}  // namespace

TEST_CASE("divide: every pair of mantissas gives the bits of __fdiv_rn") {
  const char* env = std::getenv("QNUM_DIVIDE_EXHAUSTIVE");
  const bool exhaustive = env != nullptr && env[0] == '1';
  const std::uint32_t stride = exhaustive ? 1u : 4096u;  // quick: 2048 divisors x 2^23 x
  const tally t = run_pairs(stride);
  std::printf("mantissa pairs (divisor stride %u): %llu differ\n", stride, t.bad);
  if (t.bad) std::printf("  first divisor 0x%08x\n", t.first_b);
  CHECK(t.bad == 0ull);
}

TEST_CASE("divide: every float32 x gives the code of __fdiv_rn, at the ends of the fast range and between") {
  const float bs[] = {0x1p-64f, next_up(0x1p-64f), 0x1.fffffep-64f, 0x1p64f, next_down(0x1p64f), 0x1.000002p63f,
                      1.0f, 1.5f, next_down(2.0f), 1.0f / 127.0f, 3.0f / 7.0f, 0x1.7f3a2cp-20f, 0x1.123456p+30f,
                      0x1p-40f * 3.0f, 8.5e-12f, 6.1e15f, 2.0f / 448.0f};
  for (float b : bs) {
    const tally t = run_all_x(b);
    std::printf("b = %a: %llu of 2^32 x differ in bits, %llu in code\n", b, t.differ, t.bad);
    if (t.bad) std::printf("  first x 0x%08x\n", t.first_x);
    CHECK(t.bad == 0ull);
  }
}

TEST_CASE("divide: divisors outside the fast range are __fdiv_rn") {
  const float bs[] = {next_down(0x1p-64f), 0x1p-100f, 1e-40f, next_up(0x1p64f), 0x1p100f, 3.0e38f};
  for (float b : bs) {
    const tally t = run_all_x(b);
    std::printf("b = %a: %llu of 2^32 x differ in bits\n", b, t.differ);
    CHECK(t.differ == 0ull);
  }
}
