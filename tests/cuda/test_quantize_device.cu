// tests/cuda/test_quantize_device.cu: device group quantization (qnum/cuda/quantize.cuh) gives the host
// API's bits: codes, scales, zero points, dequantize and fake quantize (memcmp), the per-element functions
// through the host/device harness, the fused W4A16 pack against quantize + ct_pack_weight, bad arguments.
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "qnum/cuda/quantize.cuh"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/static_scheme.hpp"

namespace {

// Adversarial value for element i: zero rows/groups, NaN, +-Inf, exact ties (k + 0.5), huge, subnormal.
float value_at(std::uint64_t i, std::int64_t r, std::int64_t c) {
  const std::uint32_t b = qnum::random_bits(77, i);
  if (r % 7 == 3) return 0.0f;  // all-zero rows (groups)
  switch (b % 41) {
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
std::vector<T> make_input(std::int64_t rows, std::int64_t cols, std::int64_t stride, bool bf16, bool fp16 = false) {
  std::vector<T> v(static_cast<std::size_t>(rows * stride + 8), T{});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const float x = value_at(static_cast<std::uint64_t>(r * cols + c), r, c);
      if constexpr (sizeof(T) == 4) {
        v[r * stride + c] = x;
      } else {
        v[r * stride + c] = fp16 ? qnum::to_fp16(x) : (bf16 ? qnum::to_bf16(x) : qnum::to_bf16(x));
      }
    }
  return v;
}

template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  REQUIRE(cudaMalloc(&d, h.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return d;
}
template <class T>
std::vector<T> from_device(const T* d, std::size_t n) {
  std::vector<T> h(n);
  REQUIRE(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return h;
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
                  qnum::group_shape groups, bool scratch = false, qnum::tensor_type type = qnum::tensor_type::bf16,
                  bool nvfp4_outer = false) {
  using F = typename H::format;
  const qnum::scheme<F> s = h.get();
  CAPTURE(name);
  CAPTURE(H::is_static);
  CAPTURE(rows);
  CAPTURE(cols);
  const qnum::tensor_type in_type = sizeof(T) == 4 ? qnum::tensor_type::fp32 : type;
  const std::vector<T> hin = make_input<T>(rows, cols, stride, true, in_type == qnum::tensor_type::fp16);
  const qnum::matrix_view<const T> hv = qnum::view(hin.data(), rows, cols, stride, in_type);
  float outer = 0.0f;
  if (nvfp4_outer) {
    float amax = 0.0f;
    REQUIRE(qnum::tensor_amax(hv, amax) == qnum::status::ok);
    outer = qnum::presets::nvfp4_tensor_scale(amax);
  }
  qnum::detail::grid g;
  REQUIRE(qnum::detail::make_grid(rows, cols, groups, g) == qnum::status::ok);
  const int sb = qnum::scale_bytes(s.store);
  const bool asym = s.kind == qnum::scheme_kind::asymmetric;
  const std::int64_t cstride = cols + 3;  // strided codes
  std::vector<std::uint8_t> hcodes(static_cast<std::size_t>(rows * cstride), 0xAB), dcodes_init = hcodes;
  std::vector<std::uint8_t> hscales(static_cast<std::size_t>(g.nr * g.nc * 4), 0xCD);
  std::vector<std::int32_t> hzeros(static_cast<std::size_t>(g.nr * g.nc), -99);
  const qnum::scale_view hsv{hscales.data(), g.nr, g.nc, g.nc, sb};
  const qnum::matrix_view<std::int32_t> hzv = asym ? qnum::view(hzeros.data(), g.nr, g.nc) : qnum::matrix_view<std::int32_t>{};
  REQUIRE(qnum::quantize(s, hv, groups, qnum::view(hcodes.data(), rows, cols, cstride), hsv, hzv, qnum::nearest(), outer) ==
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
  REQUIRE(qnum::cuda::launch_quantize(h, dv, groups, qnum::view(dcodes, rows, cols, cstride), dsv, dzv, qnum::nearest(),
                                      outer, nullptr, dscratch) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dcodes, hcodes.size()), hcodes));
  CHECK(same(from_device(dscales, hscales.size()), hscales));
  CHECK(same(from_device(dzeros, hzeros.size()), hzeros));

  // Dequantize (device codes/scales, which equal the host's).
  const qnum::tensor_type out_type = sizeof(U) == 4 ? qnum::tensor_type::fp32 : qnum::tensor_type::bf16;
  const std::int64_t ostride = cols + 5;
  std::vector<U> hout(static_cast<std::size_t>(rows * ostride), U{});
  REQUIRE(qnum::dequantize(s, qnum::view(static_cast<const std::uint8_t*>(hcodes.data()), rows, cols, cstride), groups, hsv,
                           qnum::view(static_cast<const std::int32_t*>(hzeros.data()), g.nr, g.nc),
                           qnum::view(hout.data(), rows, cols, ostride, out_type), outer) == qnum::status::ok);
  U* dout = to_device(std::vector<U>(hout.size(), U{}));
  REQUIRE(qnum::cuda::launch_dequantize(h, qnum::view(static_cast<const std::uint8_t*>(dcodes), rows, cols, cstride), groups,
                                        dsv, qnum::view(static_cast<const std::int32_t*>(dzeros), g.nr, g.nc),
                                        qnum::view(dout, rows, cols, ostride, out_type), outer) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dout, hout.size()), hout));

  // Fake quantize.
  std::vector<U> hfq(hout.size(), U{});
  REQUIRE(qnum::fake_quantize(s, hv, groups, qnum::view(hfq.data(), rows, cols, ostride, out_type), qnum::nearest(), outer) ==
          qnum::status::ok);
  REQUIRE(cudaMemset(dout, 0, hout.size() * sizeof(U)) == cudaSuccess);
  REQUIRE(qnum::cuda::launch_fake_quantize(h, dv, groups, qnum::view(dout, rows, cols, ostride, out_type), qnum::nearest(),
                                           outer, nullptr, dscratch) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dout, hfq.size()), hfq));

  // Stochastic rounding: same random stream on host and device.
  if constexpr (F::is_integer) {
    std::vector<std::uint8_t> hc2(hcodes.size(), 0xAB);
    REQUIRE(qnum::quantize(s, hv, groups, qnum::view(hc2.data(), rows, cols, cstride), hsv, hzv, qnum::stochastic_seed(5),
                           outer) == qnum::status::ok);
    REQUIRE(cudaMemcpy(dcodes, dcodes_init.data(), dcodes_init.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(qnum::cuda::launch_quantize(h, dv, groups, qnum::view(dcodes, rows, cols, cstride), dsv, dzv,
                                        qnum::stochastic_seed(5), outer, nullptr, dscratch) == cudaSuccess);
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
                qnum::group_shape groups, bool scratch = false, qnum::tensor_type type = qnum::tensor_type::bf16,
                bool nvfp4_outer = false) {
  check_holder<qnum::runtime_scheme<F>, T, U>(name, qnum::runtime_scheme<F>{s}, rows, cols, stride, groups, scratch, type,
                                               nvfp4_outer);
}

inline constexpr qnum::scheme<qnum::int8> int8_sym = qnum::symmetric_restricted<qnum::int8>();

}  // namespace

TEST_CASE("device 1xG groups == host (slime int4 g32, compressed-tensors asym g128, generic G)") {
  namespace p = qnum::presets;
  check_case<qnum::int4, std::uint16_t>("slime g32 bf16", p::slime_int4_qat, 9, 100, 104, qnum::group_size(32));
  check_case<qnum::int4, std::uint16_t, std::uint16_t>("slime g32 bf16 out", p::slime_int4_qat, 9, 96, 96, qnum::group_size(32));
  check_case<qnum::int4, std::uint16_t>("slime ckpt g128", p::slime_int4_checkpoint, 5, 300, 301, qnum::group_size(128));
  check_case<qnum::int4, float>("ct asym g128 fp32", p::ct_w4a16_asym, 8, 300, 300, p::ct_group128);
  check_case<qnum::int4, std::uint16_t>("ct asym g128 fp16", p::ct_w4a16_asym, 8, 260, 264, p::ct_group128, false,
                                        qnum::tensor_type::fp16);
  check_case<qnum::uint8, float>("torchao uint8 asym g64", p::torchao_uint8_asym, 6, 130, 133, qnum::group_size(64));
  check_case<qnum::int4, float>("generic G=48", p::torchao_int4_sym, 7, 150, 150, qnum::group_size(48));
  check_case<qnum::int4, std::uint16_t>("generic G=5", p::slime_int4_qat, 7, 23, 23, qnum::group_size(5));
  check_case<qnum::int8, float>("per-row short", p::torchao_int8_sym, 11, 777, 780, qnum::per_row());
  check_case<qnum::int8, std::uint16_t>("per-row long (block kernel)", p::torchao_int8_sym, 3, 5000, 5000, qnum::per_row());
}

TEST_CASE("device float formats == host (DeepGEMM 1x128 ue8m0, 128x128, MXFP4, NVFP4, TE per tensor)") {
  namespace p = qnum::presets;
  check_case<qnum::fp8_e4m3, std::uint16_t>("deepgemm 1x128 ue8m0", p::deepgemm_fp8_ue8m0, 9, 200, 200, p::deepseek_act);
  check_case<qnum::fp8_e4m3, std::uint16_t>("deepgemm 128x128", p::deepgemm_fp8, 130, 260, 264, p::deepseek_weight);
  check_case<qnum::fp8_e4m3, float>("deepgemm 128x128 fp32", p::deepgemm_fp8_ue8m0, 129, 131, 131, p::deepseek_weight);
  check_case<qnum::fp4_e2m1, std::uint16_t>("mxfp4", p::mxfp4, 9, 70, 72, p::mx_block);
  check_case<qnum::fp8_e4m3, float>("mxfp8 rceil", p::mxfp8_rceil, 9, 64, 64, p::mx_block);
  check_case<qnum::fp4_e2m1, float>("nvfp4 one-level", p::nvfp4, 9, 50, 50, p::nvfp4_block);
  check_case<qnum::fp4_e2m1, std::uint16_t>("nvfp4 two-level", p::nvfp4, 9, 50, 56, p::nvfp4_block, false,
                                            qnum::tensor_type::bf16, true);
  check_case<qnum::fp8_e4m3, float>("te per tensor, two kernels", p::te_fp8_current, 33, 1000, 1003, qnum::per_tensor(), true);
  check_case<qnum::fp8_e4m3, std::uint16_t>("te per tensor, one block", p::te_fp8_current, 5, 100, 100, qnum::per_tensor(), false);
  check_case<qnum::int4, float>("asym per tensor, two kernels", p::ct_w4a16_asym,
                                17, 300, 300, qnum::per_tensor(), true);
}

TEST_CASE("device fused W4A16 pack == host quantize + ct_pack_weight") {
  namespace p = qnum::presets;
  const qnum::scheme<qnum::int4> schemes[2] = {p::ct_w4a16_sym_bf16, p::ct_w4a16_asym};
  const std::int64_t gs[2] = {32, 128};
  for (int t = 0; t < 2; ++t) {
    const auto& s = schemes[t];
    const std::int64_t n = 13, k = 203, stride = 208, G = gs[t];
    CAPTURE(t);
    const std::vector<std::uint16_t> hw = make_input<std::uint16_t>(n, k, stride, true);
    const auto hv = qnum::view(hw.data(), n, k, stride, qnum::tensor_type::bf16);
    qnum::ct_pack_quantized_shape shp;
    REQUIRE(qnum::ct_pack_quantized_layout(n, k, 4, G, &shp) == qnum::pack_status::ok);
    const bool asym = s.kind == qnum::scheme_kind::asymmetric;
    const int sb = qnum::scale_bytes(s.store);
    std::vector<std::uint8_t> codes(static_cast<std::size_t>(n * k));
    std::vector<std::uint8_t> hscales(static_cast<std::size_t>(n * shp.groups * 4), 0);
    std::vector<std::int32_t> hzeros(static_cast<std::size_t>(n * shp.groups), 0);
    const qnum::scale_view hsv{hscales.data(), n, shp.groups, shp.groups, sb};
    REQUIRE(qnum::quantize(s, hv, qnum::group_size(G), qnum::view(codes.data(), n, k), hsv,
                           asym ? qnum::view(hzeros.data(), n, shp.groups) : qnum::matrix_view<std::int32_t>{}) ==
            qnum::status::ok);
    std::vector<std::int8_t> q(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) q[i] = static_cast<std::int8_t>(static_cast<std::int8_t>(codes[i] << 4) >> 4);
    std::vector<std::uint32_t> hpacked(static_cast<std::size_t>(shp.packed_rows * shp.packed_cols), 0);
    REQUIRE(qnum::ct_pack_weight(q.data(), n, k, 4, hpacked.data()) == qnum::pack_status::ok);

    std::uint16_t* dw = to_device(hw);
    std::uint32_t* dpacked = to_device(std::vector<std::uint32_t>(hpacked.size(), 0xDEADBEEFu));
    std::uint8_t* dscales = to_device(std::vector<std::uint8_t>(hscales.size(), 0));
    std::int32_t* dzeros = to_device(std::vector<std::int32_t>(hzeros.size(), 0));
    REQUIRE(qnum::cuda::launch_w4a16_pack(s, qnum::view(static_cast<const std::uint16_t*>(dw), n, k, stride, qnum::tensor_type::bf16),
                                          G, dpacked, qnum::scale_view{dscales, n, shp.groups, shp.groups, sb},
                                          asym ? qnum::view(dzeros, n, shp.groups) : qnum::matrix_view<std::int32_t>{}) ==
            cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(same(from_device(dpacked, hpacked.size()), hpacked));
    CHECK(same(from_device(dscales, hscales.size()), hscales));
    CHECK(same(from_device(dzeros, hzeros.size()), hzeros));
    cudaFree(dw);
    cudaFree(dpacked);
    cudaFree(dscales);
    cudaFree(dzeros);
  }
}

namespace {

// Per-element functions with parameters from pseudo-random group statistics, on host and device:
// hash of the codes and fake-quant values of four presets.
// Presets are host constexpr variables: device code gets them by value (as the launchers do).
struct element_functions {
  struct presets_by_value {
    qnum::scheme<qnum::int4> slime_int4_qat = qnum::presets::slime_int4_qat;
    qnum::scheme<qnum::int4> ct_w4a16_asym = qnum::presets::ct_w4a16_asym;
    qnum::scheme<qnum::fp8_e4m3> deepgemm_fp8_ue8m0 = qnum::presets::deepgemm_fp8_ue8m0;
    qnum::scheme<qnum::fp4_e2m1> nvfp4 = qnum::presets::nvfp4;
    qnum::scheme<qnum::fp4_e2m1> mxfp4 = qnum::presets::mxfp4;
  } p;
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    qnum::group_stats st;
    for (int e = 0; e < 4; ++e)
      qnum::accumulate(st, value_at_hd(i * 4 + e));
    const float x = value_at_hd(i * 7 + 1);
    std::uint32_t h = 0;
    const auto a = qnum::compute_params(p.slime_int4_qat, st);
    h = h * 31u + qnum::quantize_value(p.slime_int4_qat, a, x);
    h = h * 31u + qnum::detail::float_to_bits(qnum::fake_quant_value(p.slime_int4_qat, a, x));
    const auto b = qnum::compute_params(p.ct_w4a16_asym, st);
    h = h * 31u + qnum::quantize_value(p.ct_w4a16_asym, b, x, qnum::stochastic(qnum::random_bits(1, i)));
    h = h * 31u + qnum::detail::float_to_bits(qnum::fake_quant_value(p.ct_w4a16_asym, b, x));
    const auto c = qnum::compute_params(p.deepgemm_fp8_ue8m0, st);
    h = h * 31u + qnum::quantize_value(p.deepgemm_fp8_ue8m0, c, x) + c.scale_code;
    const auto d = qnum::compute_params(p.nvfp4, st, 0.001f);
    h = h * 31u + qnum::detail::float_to_bits(qnum::fake_quant_value(p.nvfp4, d, x)) + d.scale_code;
    const auto e = qnum::compute_params(p.mxfp4, st);
    h = h * 31u + qnum::detail::float_to_bits(qnum::fake_quant_value(p.mxfp4, e, x)) + e.scale_code;
    return h;
  }
  __host__ __device__ static float value_at_hd(std::uint64_t i) {
    const std::uint32_t b = qnum::random_bits(99, i);
    if (b % 23 == 0) return qnum::detail::bits_to_float(0x7FC00000u);
    if (b % 23 == 1) return qnum::detail::bits_to_float(0xFF800000u);
    if (b % 23 == 2) return 0.0f;
    return qnum::detail::bits_to_float((b & 0x8FFFFFFFu) | 0x38000000u);  // |x| in [2^-15, 2^17)
  }
};

}  // namespace

TEST_CASE("per-element functions: host == device") {
  CHECK(qtest::host_device_mismatches("element_functions", element_functions{}, 1u << 20) == 0);
}

TEST_CASE("launchers reject bad arguments without launching") {
  namespace p = qnum::presets;
  float* d = nullptr;
  REQUIRE(cudaMalloc(&d, 4096) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, 4096) == cudaSuccess);  // the accepted calls read it (initcheck)
  std::uint8_t* c = nullptr;
  REQUIRE(cudaMalloc(&c, 4096) == cudaSuccess);
  REQUIRE(cudaMemset(c, 0, 4096) == cudaSuccess);
  const qnum::scale_view sv{c + 2048, 4, 2, 2, 4};
  const auto good = qnum::view(static_cast<const float*>(d), 4, 64, 64);
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, good, qnum::group_size(32), qnum::view(c, 4, 64), sv) == cudaSuccess);
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(nullptr), 4, 64), qnum::group_size(32),
                                    qnum::view(c, 4, 64), sv) == cudaErrorInvalidValue);
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, qnum::view(reinterpret_cast<const float*>(c + 1), 4, 64),
                                    qnum::group_size(32), qnum::view(c, 4, 64), sv) == cudaErrorInvalidValue);
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(d), 4, 64, 10), qnum::group_size(32),
                                    qnum::view(c, 4, 64), sv) == cudaErrorInvalidValue);
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, good, qnum::group_size(-1), qnum::view(c, 4, 64), sv) ==
        cudaErrorInvalidValue);
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, good, qnum::group_size(16), qnum::view(c, 4, 64), sv) ==
        cudaErrorInvalidValue);  // scale buffer shape mismatch
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, good, qnum::group_size(32), qnum::view(c, 4, 63), sv) ==
        cudaErrorInvalidValue);
  CHECK(qnum::cuda::launch_quantize(p::ct_w4a16_asym, good, qnum::group_size(32), qnum::view(c, 4, 64), sv) ==
        cudaErrorInvalidValue);  // asymmetric without zero points
  CHECK(qnum::cuda::launch_w4a16_pack(p::ct_w4a16_sym, good, 12, reinterpret_cast<std::uint32_t*>(c), sv) ==
        cudaErrorInvalidValue);  // G % 8 != 0
  CHECK(qnum::cuda::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(d), 0, 64), qnum::group_size(32),
                                    qnum::view(c, 0, 64), sv) == cudaSuccess);  // empty
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(d);
  cudaFree(c);
}

TEST_CASE("fixed_scheme (compile-time fields) == host, every kernel path and element type") {
  namespace p = qnum::presets;
  using qnum::fixed_scheme;
  using qnum::tensor_type;
  check_holder<fixed_scheme<int8_sym>, std::uint16_t>("int8 sym g128 bf16", fixed_scheme<int8_sym>{}, 9, 300, 304, qnum::group_size(128));
  check_holder<fixed_scheme<int8_sym>, float, std::uint16_t>("int8 sym g32 fp32 -> bf16", fixed_scheme<int8_sym>{}, 7, 100, 100,
                                                             qnum::group_size(32));
  check_holder<fixed_scheme<p::slime_int4_qat>, std::uint16_t, std::uint16_t>("slime g32 bf16", fixed_scheme<p::slime_int4_qat>{},
                                                                              9, 96, 96, qnum::group_size(32));
  check_holder<fixed_scheme<p::slime_int4_qat>, std::uint16_t>("slime g32 fp16 in", fixed_scheme<p::slime_int4_qat>{}, 5, 70, 72,
                                                               qnum::group_size(32), false, tensor_type::fp16);
  check_holder<fixed_scheme<p::ct_w4a16_asym>, float>("ct asym g128 fp32", fixed_scheme<p::ct_w4a16_asym>{}, 8, 300, 300,
                                                      p::ct_group128);
  check_holder<fixed_scheme<p::deepgemm_fp8>, std::uint16_t>("deepgemm 1x128", fixed_scheme<p::deepgemm_fp8>{}, 9, 200, 200,
                                                             p::deepseek_act);
  check_holder<fixed_scheme<p::deepgemm_fp8>, float>("deepgemm 128x128 fp32", fixed_scheme<p::deepgemm_fp8>{}, 129, 131, 131,
                                                     p::deepseek_weight);
  check_holder<fixed_scheme<p::torchao_int8_sym>, std::uint16_t>("per-row long", fixed_scheme<p::torchao_int8_sym>{}, 3, 5000,
                                                                 5000, qnum::per_row());
  check_holder<fixed_scheme<p::te_fp8_current>, float>("te per tensor, two kernels", fixed_scheme<p::te_fp8_current>{}, 33, 1000,
                                                       1003, qnum::per_tensor(), true);
  check_holder<fixed_scheme<p::nvfp4>, std::uint16_t>("nvfp4 two-level", fixed_scheme<p::nvfp4>{}, 9, 50, 56, p::nvfp4_block, false,
                                                      tensor_type::bf16, true);
}
