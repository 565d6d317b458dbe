// tests/gpu/test_reduce_device.cu: the sub-group reductions of qnum/gpu/quantize.cuh against the host's
// maximum and minimum over each aligned sub-group, on the GPU, for every width L (1 to 32): subgroup_reduce<L>,
// subgroup_reduce_n (sub-group masks), warp_subgroup_reduce<LMin, LMax> (full-warp shuffles, L at run time),
// warp_transpose_reduce<4, 4, 8> (four groups on the same lanes; lane i gets group i % 4), for a symmetric
// scheme (amax only) and an asymmetric one (amax, min and max). Values include +-0, +-Inf and large and tiny
// magnitudes; the expected values are detail::fast_merge's on the host (the device's fmaxf/fminf: -0 orders
// below +0), compared bit for bit.
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "device_buffer.cuh"
#include "qnum/gpu/quantize.cuh"
#include "qnum/presets.hpp"
#include "qnum/random.hpp"

namespace {

constexpr int K = 4;  // groups a lane holds for the transposed reduction

// Which reduction a launch runs.
enum class form : int { fixed_width, masked, warp, transposed };

// in[w][lane][k]: lane's part of group k (one warp w per block); out the same shape (k = 0 only, but for the
// transposed form, whose result is lane's group lane % K, written to k = 0).
template <form Form, int L, class F>
__global__ void reduce_kernel(qnum::scheme<F> s, const qnum::group_stats* in, qnum::group_stats* out) {
  const unsigned lane = threadIdx.x;
  const qnum::group_stats* x = in + (blockIdx.x * 32 + lane) * K;
  qnum::group_stats r;
  if constexpr (Form == form::fixed_width) {
    r = qnum::gpu::subgroup_reduce<L>(s, x[0], lane);
  } else if constexpr (Form == form::masked) {
    r = qnum::gpu::subgroup_reduce_n(s, x[0], lane, L);
  } else if constexpr (Form == form::warp) {
    r = qnum::gpu::warp_subgroup_reduce<1, 32>(s, x[0], L);
  } else {
    qnum::group_stats st[K];
    for (int k = 0; k < K; ++k) st[k] = x[k];
    r = qnum::gpu::warp_transpose_reduce<K, 4, 8>(s, st, lane, L);
  }
  out[(blockIdx.x * 32 + lane) * K] = r;
}

float value(std::uint64_t i) {
  const std::uint32_t b = qnum::random_bits(91, i);
  switch (b % 23) {
    case 0: return qnum::detail::bits_to_float(0x7F800000u);
    case 1: return qnum::detail::bits_to_float(0xFF800000u);
    case 2: return 0.0f;
    case 3: return -0.0f;
    case 4: return (b & 64) ? 3.0e38f : -3.0e38f;
    case 5: return (b & 64) ? 1.0e-40f : -1.0e-40f;
    default: break;
  }
  return static_cast<float>(static_cast<int>(b >> 9) % 20001 - 10000) / 64.0f;
}

template <form Form, int L, class F>
void check(const qnum::scheme<F>& s, const char* name) {
  CAPTURE(name);
  CAPTURE(L);
  CAPTURE(static_cast<int>(Form));
  constexpr int warps = 16;
  const bool asym = qnum::gpu::needs_min_max(s);
  std::vector<qnum::group_stats> h(static_cast<std::size_t>(warps * 32 * K));
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float a = value(3 * i), b = value(3 * i + 1), c = value(3 * i + 2);
    h[i].amax = std::fabs(a);
    h[i].min = b < c ? b : c;
    h[i].max = b < c ? c : b;
  }
  qnum::group_stats* din = qtest::to_device(h);
  qnum::group_stats* dout = qtest::to_device(h);
  reduce_kernel<Form, L><<<warps, 32>>>(s, din, dout);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<qnum::group_stats> got = qtest::from_device(dout, h.size());
  int bad = 0;
  for (int w = 0; w < warps; ++w)
    for (int lane = 0; lane < 32; ++lane) {
      const int k = Form == form::transposed ? lane % K : 0, first = lane - lane % L;
      // The host form of the device's max/min (fast_merge: -0 below +0; no NaN here), lane by lane: the same
      // bits in any order.
      qnum::group_stats e = h[static_cast<std::size_t>((w * 32 + first) * K + k)];
      for (int l = first + 1; l < first + L; ++l) e = qnum::detail::fast_merge(e, h[static_cast<std::size_t>((w * 32 + l) * K + k)], asym);
      const qnum::group_stats& r = got[static_cast<std::size_t>((w * 32 + lane) * K)];
      const auto bits = [](float x) { return qnum::detail::float_to_bits(x); };
      const bool same = bits(r.amax) == bits(e.amax) && (!asym || (bits(r.min) == bits(e.min) && bits(r.max) == bits(e.max)));
      if (!same && bad++ < 4) MESSAGE("warp " << w << " lane " << lane << ": amax " << r.amax << " expected " << e.amax);
    }
  CHECK(bad == 0);
  cudaFree(din);
  cudaFree(dout);
}

template <int L, class F>
void check_widths(const qnum::scheme<F>& s, const char* name) {
  check<form::fixed_width, L>(s, name);
  check<form::masked, L>(s, name);
  check<form::warp, L>(s, name);
  if constexpr (L == 4 || L == 8) check<form::transposed, L>(s, name);
}

template <class F>
void check_all(const qnum::scheme<F>& s, const char* name) {
  check_widths<1>(s, name);
  check_widths<2>(s, name);
  check_widths<4>(s, name);
  check_widths<8>(s, name);
  check_widths<16>(s, name);
  check_widths<32>(s, name);
}

}  // namespace

TEST_CASE("sub-group reductions == maxima and minima over each aligned sub-group, every width") {
  check_all(qnum::presets::int8_sym, "symmetric: amax");
  check_all(qnum::presets::ct_w4a16_asym, "asymmetric: amax, min, max");
}
