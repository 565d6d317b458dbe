// tests/gpu/test_quantize_device.cu: device group quantization (qnum/gpu/quantize.cuh) gives the host
// API's bits. This file: the per-element functions through the host/device harness, the fragment primitives
// under every code path, the fused W4A16 pack against quantize + ct::pack_weight, bad arguments. test_quantize_device_runtime.cu: every kernel path with the
// run-time scheme; test_quantize_device_fixed.cu: the same with compile-time schemes (one program, three
// translation units so that they compile in parallel).
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"
#include "quantize_check.cuh"

#include "qnum/layout/compressed_tensors.hpp"

using namespace qtest;

namespace {
// launch_w4a16_pack with scheme holder (or scheme) h on an n x k bf16 weight (row stride `stride`, groups of G)
// against the host's quantize + ct::pack_weight, packed words, scales and zero points bit for bit.
template <class H>
void check_pack(const H& h, const qnum::scheme<qnum::qint4>& s, std::int64_t n, std::int64_t k, std::int64_t stride,
                std::int64_t G, std::uint32_t special_every = 41) {
  const std::vector<std::uint16_t> hw = make_input<std::uint16_t>(n, k, stride, true, false, special_every);
  const auto hv = qnum::view(hw.data(), n, k, stride, qnum::dtype::bf16);
  qnum::ct::pack_quantized_shape shp;
  REQUIRE(qnum::ct::pack_quantized_layout(n, k, 4, G, &shp) == qnum::status::ok);
  const bool asym = s.kind == qnum::scheme_kind::asymmetric;
  const int sb = qnum::dtype_bytes(s.store);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(n * k));
  std::vector<std::uint8_t> hscales(static_cast<std::size_t>(n * shp.groups * 4), 0);
  std::vector<std::int32_t> hzeros(static_cast<std::size_t>(n * shp.groups), 0);
  const qnum::scale_view hsv{hscales.data(), n, shp.groups, shp.groups, sb};
  REQUIRE(qnum::quantize(s, hv, qnum::group_size(G), qnum::view(codes.data(), n, k), hsv,
                         asym ? qnum::view(hzeros.data(), n, shp.groups) : qnum::matrix_view<std::int32_t>{}) ==
          qnum::status::ok);
  std::vector<std::uint32_t> hpacked(static_cast<std::size_t>(shp.packed_rows * shp.packed_cols), 0);
  REQUIRE(qnum::ct::pack_weight(qnum::view(codes.data(), n, k), 4, qnum::view(hpacked.data(), shp.packed_rows, shp.packed_cols)) ==
          qnum::status::ok);

  std::uint16_t* dw = to_device(hw);
  std::uint32_t* dpacked = to_device(std::vector<std::uint32_t>(hpacked.size(), 0xDEADBEEFu));
  std::uint8_t* dscales = to_device(std::vector<std::uint8_t>(hscales.size(), 0));
  std::int32_t* dzeros = to_device(std::vector<std::int32_t>(hzeros.size(), 0));
  REQUIRE(qnum::gpu::launch_w4a16_pack(h, qnum::view(static_cast<const std::uint16_t*>(dw), n, k, stride, qnum::dtype::bf16),
                                        G, qnum::view(dpacked, shp.packed_rows, shp.packed_cols), qnum::scale_view{dscales, n, shp.groups, shp.groups, sb},
                                        asym ? qnum::view(dzeros, n, shp.groups) : qnum::matrix_view<std::int32_t>{}) ==
          qnum::status::ok);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(same(from_device(dpacked, hpacked.size()), hpacked));
  CHECK(same(from_device(dscales, hscales.size()), hscales));
  CHECK(same(from_device(dzeros, hzeros.size()), hzeros));
  cudaFree(dw);
  cudaFree(dpacked);
  cudaFree(dscales);
  cudaFree(dzeros);
}
}  // namespace

TEST_CASE("device fused W4A16 pack == host quantize + ct::pack_weight") {
  namespace p = qnum::presets;
  const qnum::scheme<qnum::qint4> schemes[2] = {p::ct_w4a16_sym_bf16, p::ct_w4a16_asym};
  const std::int64_t gs[2] = {32, 128};
  for (int t = 0; t < 4; ++t) {  // t < 2: a ragged K (group kernel); t >= 2: K = 320 (the tile path)
    CAPTURE(t);
    const auto& s = schemes[t % 2];
    check_pack(s, s, 13, t < 2 ? 203 : 320, t < 2 ? 208 : 320, gs[t % 2]);
  }
  // The fixed scheme's whole-group kernel (g128, K = 1024) on mostly finite weights (one element in ~500
  // special): asymmetric groups without NaN whose ends need no clamp take the unclamped path.
  check_pack(qnum::fixed_scheme<p::ct_w4a16_asym>{}, p::ct_w4a16_asym, 24, 1024, 1024, 128, 4099);
  check_pack(qnum::fixed_scheme<p::ct_w4a16_asym>{}, p::ct_w4a16_asym, 13, 1024, 1032, 128);
  // The tile path (g32) of fixed schemes on mostly finite weights: warps whose groups all take one path (the
  // asymmetric ones: unclamped) and warps whose groups differ (a NaN or an infinity in one: every group divides).
  check_pack(qnum::fixed_scheme<p::ct_w4a16_asym>{}, p::ct_w4a16_asym, 16, 2048, 2048, 32, 4099);
  check_pack(qnum::fixed_scheme<p::ct_w4a16_sym_bf16>{}, p::ct_w4a16_sym_bf16, 16, 2048, 2048, 32, 4099);
}

namespace {

// Per-element functions with parameters from pseudo-random group statistics, on host and device:
// hash of the codes and fake-quant values of four presets.
// Presets are host constexpr variables: device code gets them by value (as the launchers do).
struct element_functions {
  struct presets_by_value {
    qnum::scheme<qnum::qint4> slime_int4_qat = qnum::presets::slime_int4_qat;
    qnum::scheme<qnum::qint4> ct_w4a16_asym = qnum::presets::ct_w4a16_asym;
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

namespace {
// The fragment primitives with the code path given, against quantize_value element by element: the path the group's
// statistics choose (group_code_path, code_path_of), the division (valid for every group), and every run-time
// path value, including those the scheme never takes (in_range for an asymmetric scheme, unclamped for a
// symmetric one, bounded for x * inv), which take the division. One 8-element group a thread, from value_at_hd
// (NaN, -Inf, zeros among them) or, every other group, finite values only.
template <class F>
__global__ void fragment_path_kernel(qnum::scheme<F> s, std::uint32_t n, std::uint32_t* mismatches) {
  const std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float v[8];
  for (int i = 0; i < 8; ++i) {
    const float x = element_functions::value_at_hd(std::uint64_t{t} * 8u + static_cast<std::uint32_t>(i));
    v[i] = (t % 2 == 0 && qnum::detail::is_nonfinite(x)) ? 1.5f : x;
  }
  qnum::group_stats st = qnum::gpu::fragment_stats(s, v);
  float bound = st.amax;
  if (qnum::gpu::stats_need_exact(st)) {
    st = qnum::gpu::fragment_stats_exact(v);
    bound = qnum::gpu::no_bound();
  }
  const qnum::group_params p = qnum::compute_params(s, st);
  const auto d = qnum::gpu::divisor_of(s, p);
  std::uint8_t want[8];
  for (int i = 0; i < 8; ++i) want[i] = static_cast<std::uint8_t>(qnum::quantize_value(s, p, v[i]));
  const qnum::gpu::code_path paths[7] = {qnum::gpu::group_code_path(s, p, d, st, bound), qnum::gpu::code_path_of(s, p, d, qnum::gpu::no_bound()),
                                         qnum::gpu::code_path::in_range, qnum::gpu::code_path::bounded, qnum::gpu::code_path::divisor,
                                         qnum::gpu::code_path::division, qnum::gpu::code_path::unclamped};
  std::uint32_t bad = 0;
  for (int k = 0; k < 7; ++k) {
    const qnum::gpu::code_path path = paths[k];
    // in_range, bounded and divisor are valid only where the group's statistics choose them
    if (k >= 2 && k <= 4 && path != paths[0] && path != paths[1]) {
      const bool never = (path == qnum::gpu::code_path::in_range && !qnum::gpu::bound_can_skip_clamp(s)) ||
                         (path == qnum::gpu::code_path::bounded && s.x_by == qnum::scale_op::multiply);
      if (!never) continue;
    }
    if (k == 6 && qnum::gpu::needs_min_max(s) && path != paths[0]) continue;  // unclamped: valid where chosen
    std::uint8_t got[8];
    qnum::gpu::quantize_fragment(s, p, d, path, v, got);
    for (int i = 0; i < 8; ++i) bad += got[i] != want[i];
  }
  std::uint8_t got[8];
  qnum::gpu::quantize_fragment(s, p, d, std::integral_constant<qnum::gpu::code_path, qnum::gpu::code_path::division>{}, v, got);
  for (int i = 0; i < 8; ++i) bad += got[i] != want[i];
  if (bad != 0) atomicAdd(mismatches, bad);
}

template <class F>
std::uint32_t fragment_path_mismatches(const qnum::scheme<F>& s, std::uint32_t n) {
  std::uint32_t* dm = to_device(std::vector<std::uint32_t>(1, 0u));
  fragment_path_kernel<<<(n + 255) / 256, 256>>>(s, n, dm);
  const bool ok = cudaDeviceSynchronize() == cudaSuccess;
  const std::uint32_t m = from_device(dm, 1)[0];
  cudaFree(dm);
  return ok ? m : 0xFFFFFFFFu;
}
}  // namespace

TEST_CASE("fragment primitives: every code path gives quantize_value's codes") {
  namespace p = qnum::presets;
  CHECK(fragment_path_mismatches(p::ct_w4a16_asym, 1u << 16) == 0);
  CHECK(fragment_path_mismatches(p::torchao_uint4_asym, 1u << 16) == 0);
  CHECK(fragment_path_mismatches(p::slime_int4_qat, 1u << 16) == 0);
  CHECK(fragment_path_mismatches(p::int8_sym, 1u << 16) == 0);
  CHECK(fragment_path_mismatches(p::torchao_int8_sym, 1u << 16) == 0);
}

TEST_CASE("launchers accept good and empty arguments on a device") {
  namespace p = qnum::presets;
  float* d = nullptr;
  REQUIRE(cudaMalloc(&d, 4096) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, 4096) == cudaSuccess);  // the accepted calls read it (initcheck)
  std::uint8_t* c = nullptr;
  REQUIRE(cudaMalloc(&c, 4096) == cudaSuccess);
  REQUIRE(cudaMemset(c, 0, 4096) == cudaSuccess);
  const qnum::scale_view sv{c + 2048, 4, 2, 2, 4};
  const auto good = qnum::view(static_cast<const float*>(d), 4, 64, 64);
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, good, qnum::group_size(32), qnum::view(c, 4, 64), sv) == qnum::status::ok);
  // Every rejection, with its status, is in test_gpu_launch_policy (runs without a GPU).
  CHECK(qnum::gpu::launch_quantize(p::slime_int4_qat, qnum::view(static_cast<const float*>(d), 0, 64), qnum::group_size(32),
                                    qnum::view(c, 0, 64), sv) == qnum::status::ok);  // empty
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(d);
  cudaFree(c);
}

