// tests/gpu/quantize_check.cuh: the host-vs-device comparison the device quantize tests share: adversarial
// inputs, bitwise comparison that prints what differs, and one shape checked through quantize, dequantize,
// fake quantize and stochastic rounding (codes, scales, zero points, outputs: memcmp against the host API).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "device_buffer.cuh"
#include "qnum/gpu/quantize.cuh"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/static_scheme.hpp"

namespace qtest {


// Adversarial value for element i: zero rows/groups, NaN, +-Inf, exact ties (k + 0.5), huge, subnormal.
// special_every: one element in special_every / 8 is special (41: most groups of 128 hold a NaN or an
// infinity; 4099: most groups are finite, so the paths for finite groups run, and some are not).
inline float value_at(std::uint64_t i, std::int64_t r, std::int64_t c, std::uint32_t special_every = 41) {
  const std::uint32_t b = qnum::random_bits(77, i);
  if (r % 7 == 3) return 0.0f;  // all-zero rows (groups)
  switch (b % special_every) {
    case 0: return qnum::detail::bits_to_float(0x7FC00000u);
    case 1: return qnum::detail::bits_to_float(0x7F800000u);
    case 2: return qnum::detail::bits_to_float(0xFF800000u);
    case 3: return static_cast<float>(static_cast<int>(b >> 8) % 15 - 7) + 0.5f;  // ties
    case 4: return 0.0f;
    case 5: return -0.0f;
    case 6: return qnum::detail::bits_to_float(0x00000100u | (b & 0x80000000u));  // subnormal
    case 7: return (b & 1) ? 3.0e38f : -3.0e38f;
    default: break;
  }
  const float m = static_cast<float>((b >> 8) & 0xFFFF) / 65536.0f - 0.5f;
  return m * static_cast<float>(1 << (c % 9));
}

template <class T>
std::vector<T> make_input(std::int64_t rows, std::int64_t cols, std::int64_t stride, bool bf16, bool fp16 = false,
                          std::uint32_t special_every = 41) {
  std::vector<T> v(static_cast<std::size_t>(rows * stride + 8), T{});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const float x = value_at(static_cast<std::uint64_t>(r * cols + c), r, c, special_every);
      if constexpr (sizeof(T) == 4) {
        v[r * stride + c] = x;
      } else {
        v[r * stride + c] = fp16 ? qnum::to_fp16(x) : (bf16 ? qnum::to_bf16(x) : qnum::to_bf16(x));
      }
    }
  return v;
}

// Bitwise equality; on a difference, prints how many elements differ and the first few (index, device
// bits, host bits), so a failure on a GPU says what differs without a debugger.
template <class T>
bool same(const std::vector<T>& dev, const std::vector<T>& host) {
  if (dev.size() != host.size()) return false;
  if (std::memcmp(dev.data(), host.data(), dev.size() * sizeof(T)) == 0) return true;
  std::size_t n = 0;
  for (std::size_t i = 0; i < dev.size(); ++i) {
    if (std::memcmp(&dev[i], &host[i], sizeof(T)) == 0) continue;
    if (n < 4) {
      std::uint32_t a = 0, b = 0;
      std::memcpy(&a, &dev[i], sizeof(T));
      std::memcpy(&b, &host[i], sizeof(T));
      MESSAGE("index " << i << ": device 0x" << std::hex << a << ", host 0x" << b << std::dec);
    }
    ++n;
  }
  MESSAGE(n << " of " << dev.size() << " elements differ");
  return false;
}

// Host quantize / dequantize / fake_quantize vs the device launchers on one shape; bitwise equal.
// h: a scheme holder (fixed_scheme: compile-time fields; runtime_scheme: the fallback) for the device side;
// the host side always takes the plain scheme value.
template <class H, class T, class U = float>
void check_holder(const char* name, const H& h, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                  qnum::group_shape groups, bool scratch = false, qnum::dtype type = qnum::dtype::bf16,
                  bool nvfp4_outer = false, std::uint32_t special_every = 41, bool dense_out = false) {
  using F = typename H::format;
  const qnum::scheme<F> s = h.get();
  CAPTURE(name);
  CAPTURE(H::is_static);
  CAPTURE(rows);
  CAPTURE(cols);
  const qnum::dtype in_type = sizeof(T) == 4 ? qnum::dtype::fp32 : type;
  const std::vector<T> hin = make_input<T>(rows, cols, stride, true, in_type == qnum::dtype::fp16, special_every);
  const qnum::matrix_view<const T> hv = qnum::view(hin.data(), rows, cols, stride, in_type);
  float outer = 0.0f;
  if (nvfp4_outer) {
    float amax = 0.0f;
    REQUIRE(qnum::tensor_amax(hv, amax) == qnum::status::ok);
    outer = qnum::presets::nvfp4_tensor_scale(amax);
  }
  qnum::detail::grid g;
  REQUIRE(qnum::detail::make_grid(rows, cols, groups, g) == qnum::status::ok);
  const int sb = qnum::dtype_bytes(s.store);
  const bool asym = s.kind == qnum::scheme_kind::asymmetric;
  const std::int64_t cstride = dense_out ? cols : cols + 3;  // strided codes (dense_out: contiguous codes and outputs)
  std::vector<std::uint8_t> hcodes(static_cast<std::size_t>(rows * cstride), 0xAB), dcodes_init = hcodes;
  std::vector<std::uint8_t> hscales(static_cast<std::size_t>(g.nr * g.nc * 4), 0xCD);
  std::vector<std::int32_t> hzeros(static_cast<std::size_t>(g.nr * g.nc), -99);
  const qnum::scale_view hsv{hscales.data(), g.nr, g.nc, g.nc, sb};
  const qnum::matrix_view<std::int32_t> hzv = asym ? qnum::view(hzeros.data(), g.nr, g.nc) : qnum::matrix_view<std::int32_t>{};
  REQUIRE(qnum::quantize(s, hv, groups, qnum::view(hcodes.data(), rows, cols, cstride), hsv, hzv, qnum::nearest_even(), outer) ==
          qnum::status::ok);

  T* din = to_device(hin);
  std::uint8_t* dcodes = to_device(dcodes_init);
  std::vector<std::uint8_t> sinit(hscales.size(), 0xCD);
  std::uint8_t* dscales = to_device(sinit);
  std::vector<std::int32_t> zinit(hzeros.size(), -99);
  std::int32_t* dzeros = to_device(zinit);
  std::uint32_t* dscratch = nullptr;
  if (scratch) REQUIRE(cudaMalloc(&dscratch, 3 * sizeof(std::uint32_t)) == cudaSuccess);
  const qnum::matrix_view<const T> dv = qnum::view(static_cast<const T*>(din), rows, cols, stride, in_type);
  const qnum::scale_view dsv{dscales, g.nr, g.nc, g.nc, sb};
  const qnum::matrix_view<std::int32_t> dzv = asym ? qnum::view(dzeros, g.nr, g.nc) : qnum::matrix_view<std::int32_t>{};
  REQUIRE(qnum::gpu::launch_quantize(h, dv, groups, qnum::view(dcodes, rows, cols, cstride), dsv, dzv, qnum::nearest_even(),
                                      outer, nullptr, dscratch) == qnum::status::ok);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dcodes, hcodes.size()), hcodes));
  CHECK(same(from_device(dscales, hscales.size()), hscales));
  CHECK(same(from_device(dzeros, hzeros.size()), hzeros));

  // Dequantize (device codes/scales, which equal the host's).
  const qnum::dtype out_type = sizeof(U) == 4 ? qnum::dtype::fp32 : qnum::dtype::bf16;
  const std::int64_t ostride = dense_out ? cols : cols + 5;
  std::vector<U> hout(static_cast<std::size_t>(rows * ostride), U{});
  REQUIRE(qnum::dequantize(s, qnum::view(static_cast<const std::uint8_t*>(hcodes.data()), rows, cols, cstride), groups, hsv,
                           qnum::view(static_cast<const std::int32_t*>(hzeros.data()), g.nr, g.nc),
                           qnum::view(hout.data(), rows, cols, ostride, out_type), outer) == qnum::status::ok);
  U* dout = to_device(std::vector<U>(hout.size(), U{}));
  REQUIRE(qnum::gpu::launch_dequantize(h, qnum::view(static_cast<const std::uint8_t*>(dcodes), rows, cols, cstride), groups,
                                        dsv, qnum::view(static_cast<const std::int32_t*>(dzeros), g.nr, g.nc),
                                        qnum::view(dout, rows, cols, ostride, out_type), outer) == qnum::status::ok);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dout, hout.size()), hout));

  // Fake quantize.
  std::vector<U> hfq(hout.size(), U{});
  REQUIRE(qnum::fake_quantize(s, hv, groups, qnum::view(hfq.data(), rows, cols, ostride, out_type), qnum::nearest_even(), outer) ==
          qnum::status::ok);
  REQUIRE(cudaMemset(dout, 0, hout.size() * sizeof(U)) == cudaSuccess);
  REQUIRE(qnum::gpu::launch_fake_quantize(h, dv, groups, qnum::view(dout, rows, cols, ostride, out_type), qnum::nearest_even(),
                                           outer, nullptr, dscratch) == qnum::status::ok);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dout, hfq.size()), hfq));

  // Stochastic rounding: same random stream on host and device.
  if constexpr (F::is_integer) {
    std::vector<std::uint8_t> hc2(hcodes.size(), 0xAB);
    REQUIRE(qnum::quantize(s, hv, groups, qnum::view(hc2.data(), rows, cols, cstride), hsv, hzv, qnum::stochastic_seed(5),
                           outer) == qnum::status::ok);
    REQUIRE(cudaMemcpy(dcodes, dcodes_init.data(), dcodes_init.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(qnum::gpu::launch_quantize(h, dv, groups, qnum::view(dcodes, rows, cols, cstride), dsv, dzv,
                                        qnum::stochastic_seed(5), outer, nullptr, dscratch) == qnum::status::ok);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(same(from_device(dcodes, hc2.size()), hc2));
  }
  cudaFree(din);
  cudaFree(dcodes);
  cudaFree(dscales);
  cudaFree(dzeros);
  cudaFree(dout);
  if (dscratch) cudaFree(dscratch);
}

// The run-time scheme on the device (the fallback path).
template <class F, class T, class U = float>
void check_case(const char* name, const qnum::scheme<F>& s, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                qnum::group_shape groups, bool scratch = false, qnum::dtype type = qnum::dtype::bf16,
                bool nvfp4_outer = false) {
  check_holder<qnum::runtime_scheme<F>, T, U>(name, qnum::runtime_scheme<F>{s}, rows, cols, stride, groups, scratch, type,
                                               nvfp4_outer);
}

}  // namespace qtest
