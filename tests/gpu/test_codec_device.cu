// tests/gpu/test_codec_device.cu: the codecs and the random stream on the GPU equal the host, bit
// for bit; the hardware cvt path equals the portable one.
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"

#include <doctest/doctest.h>

#include "qnum/gpu/codec_hw.cuh"
#include "qnum/gpu/quantize.cuh"
#include "qnum/qnum.hpp"

namespace {

// Input i: every bf16 pattern for i < 2^16, then pseudo-random float32 patterns.
__host__ __device__ inline float input(std::uint64_t i) {
  if (i < 65536) return qnum::detail::bits_to_float(static_cast<std::uint32_t>(i) << 16);
  return qnum::detail::bits_to_float(qnum::random_bits(12345, i));
}

constexpr std::uint64_t n_inputs = 65536 + (1u << 20);

struct encode_all {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    using namespace qnum;
    const float x = input(i);
    const std::uint32_t r = random_bits(7, i);
    std::uint32_t h = 0;
    auto mix = [&h](std::uint32_t v) { h = h * 0x9E3779B1u + v; };
    mix(encode<fp8_e4m3>(x, rne, satfinite));
    mix(encode<fp8_e4m3>(x, rne, nosat));
    mix(encode<fp8_e5m2>(x, rne, satfinite));
    mix(encode<fp8_e5m2>(x, rne, nosat));
    mix(encode<fp4_e2m1>(x, rne));
    mix(encode<fp4_e2m1>(x, stochastic(r)));
    mix(encode<fp8_e4m3>(x, stochastic(r)));
    mix(encode<ue4m3>(x, rne));
    mix(encode<e8m0>(x, rtz));
    mix(encode<e8m0>(x, raz));
    mix(encode<e8m0>(x, rne, nosat));
    mix(to_bf16(x));
    mix(to_fp16(x));
    mix(encode<bf16>(x, stochastic(r)));
    mix(static_cast<std::uint32_t>(encode<qnum::qint8>(x * 0.01f)));
    mix(static_cast<std::uint32_t>(encode<qnum::qint4>(x, stochastic(r))));
    mix(detail::float_to_bits(decode<fp8_e4m3>(i & 0xFF)));
    mix(detail::float_to_bits(decode<fp8_e5m2>(i & 0xFF)));
    mix(detail::float_to_bits(decode<e8m0>(i & 0xFF)));
    mix(detail::float_to_bits(decode<fp16>(i & 0xFFFF)));
    return h;
  }
};

struct hw_vs_portable {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    using namespace qnum;
    const float x = input(i);
    // On the device this compares cvt.rn.satfinite with the portable path; 0 means equal.
    const std::uint32_t a = gpu::encode_hw<fp8_e4m3>(x) ^ encode<fp8_e4m3>(x);
    const std::uint32_t b = gpu::encode_hw<fp8_e5m2>(x) ^ encode<fp8_e5m2>(x);
    const std::uint32_t c = gpu::encode_hw<fp4_e2m1>(x) ^ encode<fp4_e2m1>(x);
    // A pair: x with its bit complement (the other sign, another magnitude), x's code in the low byte.
    const float y = detail::bits_to_float(~detail::float_to_bits(x));
    const std::uint32_t a2 = gpu::encode2_hw<fp8_e4m3>(x, y) ^ (encode<fp8_e4m3>(x) | std::uint32_t{encode<fp8_e4m3>(y)} << 8);
    const std::uint32_t b2 = gpu::encode2_hw<fp8_e5m2>(x, y) ^ (encode<fp8_e5m2>(x) | std::uint32_t{encode<fp8_e5m2>(y)} << 8);
#if defined(__CUDA_ARCH__)
    return a | b | c | a2 | b2;
#else
    return 0u * (a | b | c | a2 | b2);  // host: both sides are the portable path
#endif
  }
};

struct random_stream {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const { return qnum::random_bits(0xABCDEF0123ull, i); }
};

// Every float32 pattern (as pairs: x and its bit complement) through the 16-bit pair stores the kernels use
// (one cvt.rn.bf16x2 / f16x2 per pair, a NaN redone by io<D>::store): the bits of to_bf16 / to_fp16, the
// canonical NaN included. Counts the pairs that differ.
template <class D>
__global__ void pair_store_sweep(unsigned long long* bad) {
  unsigned long long n = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < (std::uint64_t{1} << 32);
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t b = static_cast<std::uint32_t>(i);
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __uint_as_float(k % 2 ? ~b : b);
    std::uint16_t out[8];
    qnum::gpu::detail::store_chunk<D, 8>(out, 8, true, v);
    for (int k = 0; k < 8; ++k) {
      const std::uint16_t want = std::is_same_v<D, qnum::bf16> ? qnum::to_bf16(v[k]) : qnum::to_fp16(v[k]);
      n += out[k] != want;
    }
  }
  if (n) atomicAdd(bad, n);
}

// launch(counter): a sweep kernel that adds its mismatches to *counter; returns their number (~0 on a CUDA
// error).
template <class Launch>
unsigned long long sweep_mismatches(Launch&& launch) {
  unsigned long long* d = nullptr;
  unsigned long long h = 0;
  if (cudaMalloc(&d, sizeof h) != cudaSuccess || cudaMemset(d, 0, sizeof h) != cudaSuccess) return ~0ull;
  launch(d);
  const bool ok = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess && cudaGetLastError() == cudaSuccess;
  cudaFree(d);
  return ok ? h : ~0ull;
}

template <class D>
unsigned long long pair_store_mismatches() {
  return sweep_mismatches([](unsigned long long* d) { pair_store_sweep<D><<<132 * 16, 256>>>(d); });
}

// Every float32 pattern through the device's nearest-even float-to-integer conversions (cvt.rni.s32.f32 and
// the saturating cvt.rni.s8.f32) against rintf and float clamps: nearest even, saturated, NaN -> 0. Counts
// the patterns that differ.
__global__ void f2i_sweep(unsigned long long* bad) {
  unsigned long long n = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < (std::uint64_t{1} << 32);
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const float v = __uint_as_float(static_cast<std::uint32_t>(i));
    const float r = rintf(v);
    const bool nan = v != v;
    const int want8 = nan ? 0 : static_cast<int>(fminf(fmaxf(r, -128.0f), 127.0f));
    const long long want32 = nan ? 0 : (r >= 2147483648.0f ? 2147483647ll : (r <= -2147483648.0f ? -2147483648ll : static_cast<long long>(r)));
    n += qnum::detail::f2i8_rn_sat(v) != want8;
    n += qnum::detail::f2i_rn_sat(v) != want32;
  }
  if (n) atomicAdd(bad, n);
}

unsigned long long f2i_mismatches() {
  return sweep_mismatches([](unsigned long long* d) { f2i_sweep<<<132 * 16, 256>>>(d); });
}

// raw_amax (max.bf16x2 / max.f16x2 of sign-cleared words) against fragment_stats over the widened elements, for
// words of random 16-bit halves with NaN, +-Inf, subnormals, +-0 and the largest finite value mixed in: the
// same bits. Counts the fragments that differ.
__device__ inline std::uint16_t hostile16(std::uint32_t b, bool bf) {
  const std::uint16_t nan = bf ? 0x7FC1 : 0x7E01, inf = bf ? 0x7F80 : 0x7C00, big = bf ? 0x7F7F : 0x7BFF;
  const std::uint16_t sign = static_cast<std::uint16_t>(b & 0x8000u);
  switch ((b >> 16) % 8) {
    case 0: return static_cast<std::uint16_t>(nan | sign);
    case 1: return static_cast<std::uint16_t>(inf | sign);
    case 2: return static_cast<std::uint16_t>((b & 0x007Fu) | sign);  // subnormal or +-0
    case 3: return static_cast<std::uint16_t>(big | sign);
    default: return static_cast<std::uint16_t>(b);
  }
}
template <class D>
__global__ void raw_amax_sweep(unsigned long long* bad) {
  using namespace qnum::gpu::detail;
  unsigned long long n = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < (std::uint64_t{1} << 22);
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    ::uint4 raw[2];
    unsigned w[8];
    for (int k = 0; k < 8; ++k) {
      const std::uint32_t lo = hostile16(qnum::random_bits(21, i * 16 + 2 * k), std::is_same_v<D, qnum::bf16>);
      const std::uint32_t hi = hostile16(qnum::random_bits(21, i * 16 + 2 * k + 1), std::is_same_v<D, qnum::bf16>);
      w[k] = lo | (hi << 16);
    }
    raw[0] = make_uint4(w[0], w[1], w[2], w[3]);
    raw[1] = make_uint4(w[4], w[5], w[6], w[7]);
    float v[2][8];
    widen_chunk<D>(raw[0], v[0]);
    widen_chunk<D>(raw[1], v[1]);
    const auto s = qnum::presets::torchao_int8_sym;
    n += __float_as_uint(raw_amax<D>(raw)) != __float_as_uint(qnum::gpu::fragment_stats(s, v).amax);
    const ::uint4 one[1] = {raw[1]};
    n += __float_as_uint(raw_amax<D>(one)) != __float_as_uint(qnum::gpu::fragment_stats(s, v[1]).amax);
  }
  if (n) atomicAdd(bad, n);
}

template <class D>
unsigned long long raw_amax_mismatches() {
  return sweep_mismatches([](unsigned long long* d) { raw_amax_sweep<D><<<132 * 4, 256>>>(d); });
}

}  // namespace

TEST_CASE("raw_amax of 16-bit words == fragment_stats of the widened elements (NaN, Inf, subnormals, zeros)") {
  CHECK(raw_amax_mismatches<qnum::bf16>() == 0ull);
  CHECK(raw_amax_mismatches<qnum::fp16>() == 0ull);
}

TEST_CASE("the device's float-to-integer conversions (32-bit and saturating 8-bit) for every float32") {
  CHECK(f2i_mismatches() == 0ull);
}

TEST_CASE("16-bit pair stores equal to_bf16 / to_fp16 for every float32, NaN included") {
  CHECK(pair_store_mismatches<qnum::bf16>() == 0ull);
  CHECK(pair_store_mismatches<qnum::fp16>() == 0ull);
}

TEST_CASE("every encode and decode gives the same bits on host and device") {
  CHECK(qtest::host_device_mismatches("encode_all", encode_all{}, n_inputs) == 0);
}

TEST_CASE("hardware cvt.rn.satfinite (one value and a pair) equals the portable path") {
  CHECK(qtest::host_device_mismatches("hw_vs_portable", hw_vs_portable{}, n_inputs) == 0);
}

TEST_CASE("philox stream is the same on host and device") {
  CHECK(qtest::host_device_mismatches("random_bits", random_stream{}, 1u << 20) == 0);
}
