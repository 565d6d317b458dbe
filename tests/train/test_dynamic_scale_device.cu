// tests/train/test_dynamic_scale_device.cu: the fused dynamic-scale INT8 gradient pass and the INT8
// Adam step on the GPU equal the host reference bit for bit (codes, residuals, states, parameters).
#define QNUM_TEST_DEVICE_MAIN
#include "hd_harness.cuh"
#include "device_buffer.cuh"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "qnum/train/dynamic_scale.cuh"
#include "qnum/qnum.hpp"

namespace {

__host__ __device__ inline float rnd_float(std::uint64_t seed, std::uint64_t i, float scale) {
  // a uniform-ish float in (-scale, scale) from 24 random bits
  const std::uint32_t b = qnum::random_bits(seed, i);
  return (static_cast<float>(b >> 8) * (1.0f / 8388608.0f) - 1.0f) * scale;
}

// Element functions: scale update, multipliers, fused element (rne and stochastic), Adam element.
struct element_all {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    using namespace qnum;
    const dynamic_scale_config cfg;
    const float prev = detail::abs_bits(rnd_float(1, i, 10.0f));
    const float amax = detail::abs_bits(rnd_float(2, i, (i & 1) ? 1000.0f : 1.0f));
    const float s = dynamic_scale_update((i & 7) == 0 ? 0.0f : prev, amax, cfg);
    const int8_multipliers m = int8_multipliers_for(s);
    const float g = rnd_float(3, i, s * 1.5f);
    const float r = rnd_float(4, i, s * 0.01f);
    const int8_element a = quantize_grad_element(g, r, m, rne);
    const int8_element b = quantize_grad_element(g, r, m, stochastic(random_bits(5, i)));
    std::uint32_t h = detail::float_to_bits(s);
    auto mix = [&h](std::uint32_t v) { h = h * 0x9E3779B1u + v; };
    mix(detail::float_to_bits(m.inv));
    mix(detail::float_to_bits(m.dq));
    mix(static_cast<std::uint32_t>(a.code));
    mix(detail::float_to_bits(a.residual));
    mix(static_cast<std::uint32_t>(b.code));
    mix(detail::float_to_bits(b.residual));
    mix(to_bf16(int8_dequant(a.code, m.dq)));
    int8_adam_config c;
    c.weight_decay = 0.1f;
    const int8_adam_scalars sc = int8_adam_scalars_for_device_safe(c);
    float p = rnd_float(6, i, 1.0f), mm = rnd_float(7, i, 0.1f), w = detail::abs_bits(rnd_float(8, i, 0.1f));
    int8_adam_element(p, mm, w, g, sc);
    mix(detail::float_to_bits(p));
    mix(detail::float_to_bits(mm));
    mix(detail::float_to_bits(w));
    mix(static_cast<std::uint32_t>(int8_adam_m_code(mm, 0.2f, stochastic(random_bits(9, i)))));
    mix(static_cast<std::uint32_t>(int8_adam_v_code(w, 0.2f, rne)));
    return h;
  }
  // fixed scalars (int8_adam_scalars_for is host-only: it uses double pow)
  __host__ __device__ static qnum::int8_adam_scalars int8_adam_scalars_for_device_safe(const qnum::int8_adam_config&) {
    return {0.9f, 0.1f, 0.999f, 0.001f, 3.1e-4f, 3.2e-10f, 0.9999f};
  }
};

bool same_states(const std::vector<qnum::dynamic_scale_state>& a, const std::vector<qnum::dynamic_scale_state>& b) {
  for (std::size_t k = 0; k < a.size(); ++k)
    if (std::memcmp(&a[k], &b[k], sizeof a[k]) != 0) return false;
  return true;
}

// Steps over a [rows, cols] gradient with groups of gs elements along the rows (0: one group for the tensor), the
// states' random-stream offset starting at rng0.
template <class Residual>
void run_steps(const qnum::dynamic_scale_config& cfg, std::int64_t rows, std::int64_t cols, std::int64_t gs,
               std::uint64_t rng0 = 0) {
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  const qnum::group_shape groups = gs == 0 ? qnum::per_tensor() : qnum::group_size(gs);
  const qnum::extent se = qnum::scale_shape(rows, cols, groups);
  const std::size_t n_groups = static_cast<std::size_t>(se.rows * se.cols);
  std::vector<qnum::dynamic_scale_state> st_h(n_groups);
  for (auto& st : st_h) st.rng_offset = rng0;
  std::vector<std::int8_t> q_h(n);
  std::vector<Residual> r_h(n, Residual{0});
  auto* st_d = qtest::to_device(st_h);
  auto* q_d = qtest::to_device(q_h);
  auto* r_d = qtest::to_device(r_h);
  void* scratch = nullptr;
  REQUIRE(cudaMalloc(&scratch, qnum::gpu::dynamic_scale_scratch_bytes(n_groups)) == cudaSuccess);
  float* g_d = nullptr;
  REQUIRE(cudaMalloc(&g_d, n * sizeof(float)) == cudaSuccess);
  using qnum::view;
  for (int t = 0; t < 12; ++t) {
    std::vector<float> g(n);
    const float mag = t == 4 ? 500.0f : (t == 7 ? 0.0f : 1.0f);  // a spike and a zero gradient
    for (std::size_t i = 0; i < n; ++i) g[i] = rnd_float(100 + t, i, mag) * ((i / 1000) % 2 ? 1e-3f : 1.0f);
    if (t == 9) g[n / 3] = NAN;  // a non-finite step
    REQUIRE(cudaMemcpy(g_d, g.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    const qnum::status sh = qnum::quantize_gradient_int8(view(g.data(), rows, cols), groups, view(q_h.data(), rows, cols),
                                                         view(r_h.data(), rows, cols), view(st_h.data(), se.rows, se.cols), cfg);
    REQUIRE(qnum::gpu::launch_quantize_gradient_int8(view(static_cast<const float*>(g_d), rows, cols), groups, view(q_d, rows, cols),
                                                     view(r_d, rows, cols), view(st_d, se.rows, se.cols), scratch, cfg) ==
            qnum::status::ok);
    qnum::gpu::dynamic_scale_scratch_header hdr;
    REQUIRE(cudaMemcpy(&hdr, scratch, sizeof hdr, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(qnum::gpu::dynamic_scale_status(hdr) == sh);
    CHECK(qtest::from_device(q_d, n) == q_h);
    const auto r_dev = qtest::from_device(r_d, n);
    CHECK(std::memcmp(r_dev.data(), r_h.data(), n * sizeof(Residual)) == 0);
    CHECK(same_states(qtest::from_device(st_d, n_groups), st_h));
    // dequantization
    const auto qc_h = view(static_cast<const std::int8_t*>(q_h.data()), rows, cols);
    const auto qc_d = view(static_cast<const std::int8_t*>(q_d), rows, cols);
    const auto sc_h = view(static_cast<const qnum::dynamic_scale_state*>(st_h.data()), se.rows, se.cols);
    const auto sc_d = view(static_cast<const qnum::dynamic_scale_state*>(st_d), se.rows, se.cols);
    std::vector<std::uint16_t> out_h(n);
    std::uint16_t* out_d = nullptr;
    REQUIRE(cudaMalloc(&out_d, n * 2) == cudaSuccess);
    qnum::dequantize_gradient_int8(qc_h, groups, sc_h, view(out_h.data(), rows, cols));
    REQUIRE(qnum::gpu::launch_dequantize_gradient_int8(qc_d, groups, sc_d, view(out_d, rows, cols)) == qnum::status::ok);
    CHECK(qtest::from_device(out_d, n) == out_h);
    cudaFree(out_d);
    std::vector<float> out32_h(n);
    float* out32_d = nullptr;
    REQUIRE(cudaMalloc(&out32_d, n * 4) == cudaSuccess);
    qnum::dequantize_gradient_int8(qc_h, groups, sc_h, view(out32_h.data(), rows, cols));
    REQUIRE(qnum::gpu::launch_dequantize_gradient_int8(qc_d, groups, sc_d, view(out32_d, rows, cols)) == qnum::status::ok);
    CHECK(std::memcmp(qtest::from_device(out32_d, n).data(), out32_h.data(), n * 4) == 0);
    cudaFree(out32_d);
  }
  cudaFree(st_d);
  cudaFree(q_d);
  cudaFree(r_d);
  cudaFree(scratch);
  cudaFree(g_d);
}

}  // namespace

TEST_CASE("element functions: host == device") {
  CHECK(qtest::host_device_mismatches("dynamic_scale elements", element_all{}, 1u << 20) == 0);
}

TEST_CASE("fused INT8 gradient pass and its dequantization: host == device over steps with a spike, a zero and a NaN step") {
  const std::int64_t n = 3 * 4096;
  for (int variant = 0; variant < 8; ++variant) {
    qnum::dynamic_scale_config cfg;
    cfg.timing = (variant & 1) ? qnum::scale_timing::current : qnum::scale_timing::delayed;
    cfg.on_nonfinite = (variant & 2) ? qnum::nonfinite_policy::zero_elements : qnum::nonfinite_policy::skip_step;
    cfg.round = ((variant & 4) != 0) ? qnum::stochastic_seed(42) : qnum::nearest_even();
    CAPTURE(variant);
    run_steps<float>(cfg, 1, n, 0);
    run_steps<float>(cfg, 1, n, 1024);
    run_steps<std::uint16_t>(cfg, 1, n, 0);
    run_steps<float>(cfg, 1, 3 * 4095, 4095);  // groups of 4095: the element-by-element path (no chunks of 4)
    run_steps<float>(cfg, 6, 2048, 512);       // a [rows, cols] gradient: groups along the rows, states [6, 4]
    run_steps<std::uint16_t>(cfg, 3, 4095, 0);  // [rows, cols], one scale
    // 1000 chunks of 4: threads whose last chunks of a step lie past the end (the partial step), one group and
    // groups of 400 and 80 (chunk -> group by fast_div)
    run_steps<float>(cfg, 1, 4000, 0);
    run_steps<float>(cfg, 5, 800, 400);
    run_steps<std::uint16_t>(cfg, 1, 4000, 80);
    // a random-stream offset that is not a multiple of 4 (stochastic: four Philox blocks a chunk, not one)
    run_steps<float>(cfg, 1, 4000, 0, 3);
  }
}

// Every code (-128 included) under states whose scales take every path of the dequantizer: ordinary, tiny and
// huge scales (products that overflow fp16, and bf16 at -128 * FLT_MAX / 127), +Inf (dq = Inf: 0 * Inf gives the
// canonical NaN), 0, negative and NaN (dq = 0), for fp32, bf16 and fp16 outputs; contiguous groups of 16 (the chunk
// loop, whole and partial steps), of 6 (element by element) and one group (the one-group kernel: once for each
// scale); an output 2 bytes off its alignment.
TEST_CASE("INT8 gradient dequantization: host == device for every code, odd scales and each output type") {
  const float scales[] = {1.0f,     0.37f,     3.0e-38f, 1.0e-45f, 1.0e5f, 3.0e38f, 3.4028235e38f,
                          INFINITY, 0.0f,      -2.0f,    NAN,      8.0e6f,  1.0e-3f, 2.5e9f};
  constexpr int n_scales = sizeof scales / sizeof scales[0];
  for (const std::int64_t gs : {std::int64_t{16}, std::int64_t{6}, std::int64_t{0}}) {
    for (int first = 0; first < (gs == 0 ? n_scales : 1); ++first) {
      for (const std::int64_t cols : {std::int64_t{4096}, std::int64_t{96}}) {
        const std::int64_t rows = 7;
        const std::size_t n = static_cast<std::size_t>(rows * cols);
        const qnum::group_shape groups = gs == 0 ? qnum::per_tensor() : qnum::group_size(gs);
        if (gs != 0 && cols % gs != 0) continue;
        const qnum::extent se = qnum::scale_shape(rows, cols, groups);
        const std::size_t n_groups = static_cast<std::size_t>(se.rows * se.cols);
        std::vector<std::int8_t> q(n);
        for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(static_cast<std::uint8_t>(i * 37u + i / 256u));
        std::vector<qnum::dynamic_scale_state> st(n_groups);
        for (std::size_t k = 0; k < n_groups; ++k)
          st[k].scale = scales[(k * 5 + static_cast<std::size_t>(gs) + static_cast<std::size_t>(first)) % n_scales];
        std::int8_t* q_d = qtest::to_device(q);
        qnum::dynamic_scale_state* st_d = qtest::to_device(st);
        using qnum::view;
        const auto qc_h = view(static_cast<const std::int8_t*>(q.data()), rows, cols);
        const auto qc_d = view(static_cast<const std::int8_t*>(q_d), rows, cols);
        const auto sc_h = view(static_cast<const qnum::dynamic_scale_state*>(st.data()), se.rows, se.cols);
        const auto sc_d = view(static_cast<const qnum::dynamic_scale_state*>(st_d), se.rows, se.cols);
        CAPTURE(gs);
        CAPTURE(first);
        CAPTURE(cols);
        {
          std::vector<float> h(n);
          float* d = qtest::to_device(h);
          REQUIRE(qnum::dequantize_gradient_int8(qc_h, groups, sc_h, view(h.data(), rows, cols)) == qnum::status::ok);
          REQUIRE(qnum::gpu::launch_dequantize_gradient_int8(qc_d, groups, sc_d, view(d, rows, cols)) == qnum::status::ok);
          CHECK(std::memcmp(qtest::from_device(d, n).data(), h.data(), n * 4) == 0);
          cudaFree(d);
        }
        for (const qnum::dtype t : {qnum::dtype::bf16, qnum::dtype::fp16}) {
          for (const std::size_t off : {std::size_t{0}, std::size_t{1}}) {  // off: the output 2 bytes past 16-byte alignment
            CAPTURE(static_cast<int>(t));
            CAPTURE(off);
            std::vector<std::uint16_t> h(n);
            std::uint16_t* d = qtest::to_device(std::vector<std::uint16_t>(n + 1, 0xABCDu));
            REQUIRE(qnum::dequantize_gradient_int8(qc_h, groups, sc_h, view(h.data(), rows, cols, -1, t)) == qnum::status::ok);
            REQUIRE(qnum::gpu::launch_dequantize_gradient_int8(qc_d, groups, sc_d, view(d + off, rows, cols, -1, t)) ==
                    qnum::status::ok);
            const std::vector<std::uint16_t> all = qtest::from_device(d, n + 1);
            CHECK(std::memcmp(all.data() + off, h.data(), n * 2) == 0);
            CHECK(all[off == 0 ? n : 0] == 0xABCDu);  // nothing written outside the view
            cudaFree(d);
          }
        }
        cudaFree(q_d);
        cudaFree(st_d);
      }
    }
  }
}

TEST_CASE("INT8 Adam step: host == device") {
  for (int sr = 0; sr < 2; ++sr) {
    const std::size_t n = 5000;
    qnum::int8_adam_config c;
    c.round = (sr != 0) ? qnum::stochastic_seed(9) : qnum::nearest_even();
    c.weight_decay = 0.01f;
    const std::size_t nb = qnum::int8_adam_blocks(n, c.block_size);
    std::vector<float> p(n), ma(nb, 0.0f), va(nb, 0.0f);
    std::vector<std::int8_t> m(n, 0);
    std::vector<std::uint8_t> v(n, 0);
    for (std::size_t i = 0; i < n; ++i) p[i] = rnd_float(1, i, 1.0f);
    float* p_d = qtest::to_device(p);
    auto* m_d = qtest::to_device(m);
    auto* v_d = qtest::to_device(v);
    float* ma_d = qtest::to_device(ma);
    float* va_d = qtest::to_device(va);
    float* g_d = nullptr;
    REQUIRE(cudaMalloc(&g_d, n * sizeof(float)) == cudaSuccess);
    for (std::uint64_t t = 1; t <= 6; ++t) {
      std::vector<float> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = rnd_float(10 + t, i, 1.0f) * ((i / 256) % 3 == 0 ? 1e-3f : 1.0f);
      if (t == 3) g[7] = INFINITY;
      REQUIRE(cudaMemcpy(g_d, g.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
      const std::int64_t rows = 5, cols = static_cast<std::int64_t>(n) / rows;  // a [5, 1000] tensor
      REQUIRE(qnum::int8_adam_step(qnum::view(p.data(), rows, cols), qnum::view(g.data(), rows, cols),
                                   {m.data(), v.data(), ma.data(), va.data()}, c, t) == qnum::status::ok);
      REQUIRE(qnum::gpu::launch_int8_adam_step(qnum::view(p_d, rows, cols), qnum::view(static_cast<const float*>(g_d), rows, cols),
                                               {m_d, v_d, ma_d, va_d}, c, t) == qnum::status::ok);
      CHECK(std::memcmp(qtest::from_device(p_d, n).data(), p.data(), n * 4) == 0);
      CHECK(qtest::from_device(m_d, n) == m);
      CHECK(qtest::from_device(v_d, n) == v);
      CHECK(std::memcmp(qtest::from_device(ma_d, nb).data(), ma.data(), nb * 4) == 0);
      CHECK(std::memcmp(qtest::from_device(va_d, nb).data(), va.data(), nb * 4) == 0);
    }
    cudaFree(p_d);
    cudaFree(m_d);
    cudaFree(v_d);
    cudaFree(ma_d);
    cudaFree(va_d);
    cudaFree(g_d);
  }
}

TEST_CASE("bad arguments: the launchers report the host functions' status (one shared check) and write nothing") {
  using qnum::status;
  using qnum::view;
  const std::int64_t rows = 4, cols = 64, n = rows * cols;
  const qnum::dynamic_scale_config cfg;
  std::vector<float> g_h(static_cast<std::size_t>(n), 1.0f), r_h(static_cast<std::size_t>(n), 0.0f);
  std::vector<std::int8_t> q_h(static_cast<std::size_t>(n), 5);
  std::vector<std::uint16_t> r16_h(static_cast<std::size_t>(n), 0);
  std::vector<qnum::dynamic_scale_state> st_h(16);
  float* g_d = qtest::to_device(g_h);
  float* r_d = qtest::to_device(r_h);
  auto* q_d = qtest::to_device(q_h);
  auto* r16_d = qtest::to_device(r16_h);
  auto* st_d = qtest::to_device(st_h);
  void* scratch = nullptr;
  REQUIRE(cudaMalloc(&scratch, qnum::gpu::dynamic_scale_scratch_bytes(16)) == cudaSuccess);
  const qnum::group_shape g16 = qnum::group_size(16);
  // (g, groups, codes, residual, states) on host and device; the expected status
  const auto both = [&](auto gv, qnum::group_shape gr, auto qv, auto rv, auto sv, bool on_device, status want) {
    if (on_device) {
      CHECK(qnum::gpu::launch_quantize_gradient_int8(gv, gr, qv, rv, sv, scratch, cfg) == want);
    } else {
      CHECK(qnum::quantize_gradient_int8(gv, gr, qv, rv, sv, cfg) == want);
    }
  };
  for (int dev = 0; dev < 2; ++dev) {
    const bool d = dev != 0;
    const float* G = d ? g_d : g_h.data();
    std::int8_t* Q = d ? q_d : q_h.data();
    float* R = d ? r_d : r_h.data();
    std::uint16_t* R16 = d ? r16_d : r16_h.data();
    qnum::dynamic_scale_state* S = d ? st_d : st_h.data();
    CAPTURE(dev);
    both(view(G, rows, cols, 2 * cols), g16, view(Q, rows, cols), view(R, rows, cols), view(S, rows, 4), d, status::bad_stride);
    both(view(G, rows, cols), g16, view(Q, rows, cols, 2 * cols), view(R, rows, cols), view(S, rows, 4), d, status::bad_stride);
    both(view(G, rows, cols), g16, view(Q, rows, cols), view(R, rows, cols), view(S, rows, 4, 8), d, status::bad_stride);
    both(view(G, rows, cols), g16, view(Q, n), view(R, rows, cols), view(S, rows, 4), d, status::bad_shape);
    both(view(G, rows, cols), g16, view(Q, rows, cols), view(R, n), view(S, rows, 4), d, status::bad_shape);
    both(view(G, rows, cols), g16, view(Q, rows, cols), view(R, rows, cols), view(S, 16), d, status::bad_shape);
    both(view(G, rows, cols), qnum::group_size(24), view(Q, rows, cols), view(R, rows, cols), view(S, rows, 4), d, status::bad_group);
    both(view(G, rows, cols), qnum::block(2, 16), view(Q, rows, cols), view(R, rows, cols), view(S, 2, 4), d, status::bad_group);
    both(view(G, rows, cols), g16, view(Q, rows, cols), view<qnum::fp16>(R16, rows, cols), view(S, rows, 4), d, status::bad_type);
    both(view(G, rows, cols), g16, view(static_cast<std::int8_t*>(nullptr), rows, cols), view(R, rows, cols), view(S, rows, 4), d,
         status::null_pointer);
    both(view(G, 0, cols), g16, view(Q, rows, cols), view(R, rows, cols), view(S, rows, 4), d, status::ok);
  }
  CHECK(qnum::gpu::launch_quantize_gradient_int8(view(static_cast<const float*>(g_d), rows, cols), g16, view(q_d, rows, cols),
                                                 qnum::matrix_view<float>{}, view(st_d, rows, 4), nullptr, cfg) == status::null_pointer);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(qtest::from_device(q_d, static_cast<std::size_t>(n)) == q_h);
  CHECK(q_h == std::vector<std::int8_t>(static_cast<std::size_t>(n), 5));
  CHECK(same_states(qtest::from_device(st_d, 16), st_h));
  // dequantize: out types, shapes
  const auto QC = view(static_cast<const std::int8_t*>(q_d), rows, cols);
  const auto SC = view(static_cast<const qnum::dynamic_scale_state*>(st_d), rows, 4);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(QC, g16, SC, view(r_d, rows, cols, -1, qnum::dtype::bf16)) == status::bad_type);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(QC, g16, SC, view(r16_d, rows, cols, -1, qnum::dtype::fp32)) == status::bad_type);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(QC, g16, SC, view(r_d, n)) == status::bad_shape);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(QC, qnum::block(2, 16), SC, view(r_d, rows, cols)) == status::bad_group);
  CHECK(qnum::gpu::launch_dequantize_gradient_int8(QC, g16, SC, view(r_d, rows, 32, 64)) == status::bad_shape);
  // Adam: p of g's shape, contiguous
  qnum::int8_adam_config c;
  const qnum::int8_adam_state ast{q_d, reinterpret_cast<std::uint8_t*>(r16_d), r_d, r_d + 8};
  CHECK(qnum::gpu::launch_int8_adam_step(view(r_d, n), view(static_cast<const float*>(g_d), rows, cols), ast, c, 1) == status::bad_shape);
  CHECK(qnum::gpu::launch_int8_adam_step(view(r_d, 2, 64, 128), view(static_cast<const float*>(g_d), 2, 64, 128), ast, c, 1) ==
        status::bad_stride);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(std::memcmp(qtest::from_device(r_d, static_cast<std::size_t>(n)).data(), r_h.data(), static_cast<std::size_t>(n) * 4) == 0);
  cudaFree(g_d);
  cudaFree(r_d);
  cudaFree(q_d);
  cudaFree(r16_d);
  cudaFree(st_d);
  cudaFree(scratch);
}
