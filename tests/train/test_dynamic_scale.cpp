// tests/train/test_dynamic_scale.cpp: EMA-clipped dynamic INT8 gradient scales, residual error feedback,
// the non-finite policies and stochastic rounding (qnum/train/dynamic_scale.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "qnum/train/dynamic_scale.hpp"

namespace {

// The scale rule written out literally with plain float operations (x86-64 SSE: every operation is
// rounded on its own; the test binary is not built with FMA).
float literal_update(float prev, float amax) {
  const float nw = amax > 1e-6f ? amax : 1e-6f;
  if (!(prev > 0.0f)) return nw;
  volatile float a = 0.99f * prev;
  volatile float beta = 1.0f - 0.99f;
  volatile float b = beta * nw;
  volatile float s = a + b;
  const float lo = prev / 2.0f, hi = prev * 2.0f;
  float r = s;
  if (r < lo) r = lo;
  if (r > hi) r = hi;
  return r;
}

struct run {
  qnum::dynamic_scale_config cfg;
  std::vector<qnum::dynamic_scale_state> st;
  std::vector<std::int8_t> q;
  std::vector<float> r;
  explicit run(std::size_t n, std::size_t groups = 1) : st(groups), q(n), r(n, 0.0f) {}
  qnum::status step(const std::vector<float>& g, bool feedback = true, std::int64_t gs = 0) {
    const std::int64_t n = static_cast<std::int64_t>(g.size());
    return qnum::quantize_gradient_int8(qnum::view(g.data(), n), gs == 0 ? qnum::per_tensor() : qnum::group_size(gs),
                                        qnum::view(q.data(), n), feedback ? qnum::view(r.data(), n) : qnum::matrix_view<float>{},
                                        qnum::view(st.data(), static_cast<std::int64_t>(st.size())), cfg);
  }
};

}  // namespace

TEST_CASE("dynamic_scale_update: first step, EMA, clip, floor, non-finite amax") {
  const qnum::dynamic_scale_config c;
  CHECK(qnum::dynamic_scale_update(0.0f, 3.0f, c) == 3.0f);      // no previous: new
  CHECK(qnum::dynamic_scale_update(0.0f, 0.0f, c) == 1e-6f);     // floored
  CHECK(qnum::dynamic_scale_update(1.0f, 1.0f, c) == literal_update(1.0f, 1.0f));
  // A 1000x spike: smoothed 0.99 + 10 = 10.99, clipped to 2 * prev.
  CHECK(qnum::dynamic_scale_update(1.0f, 1000.0f, c) == 2.0f);
  // A collapse to zero: smoothed 0.99 * prev + 0.01e-6, above prev / 2: no clip.
  const float z = qnum::dynamic_scale_update(1.0f, 0.0f, c);
  CHECK(z == literal_update(1.0f, 0.0f));
  CHECK(std::fabs(z - 0.99000001f) < 1e-6f);
  // With alpha 0 the clip binds downward too.
  qnum::dynamic_scale_config c0;
  c0.alpha = 0.0f;
  CHECK(qnum::dynamic_scale_update(1.0f, 0.1f, c0) == 0.5f);
  CHECK(qnum::dynamic_scale_update(1.0f, 0.75f, c0) == 0.75f);
  // Non-finite amax never enters the scale.
  CHECK(qnum::dynamic_scale_update(1.5f, std::nanf(""), c) == 1.5f);
  CHECK(qnum::dynamic_scale_update(1.5f, INFINITY, c) == 1.5f);
  CHECK(qnum::dynamic_scale_update(0.0f, INFINITY, c) == 1e-6f);
  // Huge values stay finite.
  CHECK(qnum::dynamic_scale_update(3.4e38f, 3.4e38f, c) <= 3.40282347e38f);
  CHECK(!qnum::detail::is_nonfinite(qnum::dynamic_scale_update(3.4e38f, 3.4e38f, c)));
}

TEST_CASE("hand-computed trace of scales and codes (delayed timing) with a spike and a zero gradient") {
  run R(4);
  // step 0: amax 1 -> s0 = 1, inv = 127, codes round(g * 127) (63.5 -> 64 ties to even)
  CHECK(R.step({0.5f, -1.0f, 0.25f, 0.125f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == 1.0f);
  CHECK(R.st[0].amax == 1.0f);
  CHECK(R.q == std::vector<std::int8_t>{64, -127, 32, 16});
  // step 1: spike 1000; the scale comes from step 0's amax: s1 = update(1, 1) = 0.99f + 0.00999999f
  const float s1 = literal_update(1.0f, 1.0f);
  CHECK(std::fabs(s1 - 1.0f) < 1e-6f);
  CHECK(R.step({1000.0f, 0.0f, 0.0f, -0.5f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == s1);
  CHECK(R.st[0].amax == 1000.0f);
  CHECK(R.q[0] == 127);  // saturates
  CHECK(R.q[3] == qnum::int8_code(-0.5f, 127.0f / s1));
  // step 2: s2 = update(s1, 1000): 0.99 s1 + 10 = 10.99 is clipped to 2 s1
  const float s2 = literal_update(s1, 1000.0f);
  CHECK(s2 == s1 * 2.0f);
  CHECK(R.step({0.5f, 0.25f, 0.0f, 0.0f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == s2);
  CHECK(R.q[0] == qnum::int8_code(0.5f, 127.0f / s2));
  CHECK(R.q[0] == 32);  // 0.5 * 127 / 2 = 31.75
  // step 3: zero gradient; s3 = update(s2, 0.5) = 0.99 * 2 + 0.005 = 1.985
  const float s3 = literal_update(s2, 0.5f);
  CHECK(std::fabs(s3 - 1.985f) < 1e-5f);
  CHECK(R.step({0.0f, 0.0f, 0.0f, 0.0f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == s3);
  CHECK(R.st[0].amax == 0.0f);
  CHECK(R.q == std::vector<std::int8_t>{0, 0, 0, 0});
  // step 4: after the zero gradient the floor 1e-6 is what enters the EMA.
  const float s4 = literal_update(s3, 0.0f);
  CHECK(std::fabs(s4 - (0.99f * 1.985f + 1e-8f)) < 1e-5f);
  CHECK(R.step({0.1f, 0.0f, 0.0f, 0.0f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == s4);
  CHECK(R.st[0].steps == 5);
}

TEST_CASE("current timing: the step's own amax enters its scale") {
  run R(2);
  R.cfg.timing = qnum::scale_timing::current;
  CHECK(R.step({1.0f, 0.5f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == 1.0f);
  CHECK(R.step({1000.0f, 0.0f}, false) == qnum::status::ok);
  CHECK(R.st[0].scale == 2.0f);  // clipped spike
  CHECK(R.q[0] == 127);
}

TEST_CASE("int8_code (nearest even): round(clamp(fl(x * inv), -127, 127)), NaN -> 0, for every bf16 x") {
  // The expected code from float clamps and std::nearbyint (the default mode: nearest even), not from the
  // library's integer rounding.
  const float invs[] = {1.0f, 127.0f / 3.0f, 127.0f / 1e-30f, 3.4e38f, 1e-3f};
  long bad = 0;
  for (const float inv : invs) {
    for (std::uint32_t b = 0; b < 65536u; ++b) {
      const std::uint32_t bits = b << 16;
      float x;
      std::memcpy(&x, &bits, sizeof x);
      volatile float y = x * inv;
      float c = y;
      int want = 0;
      if (c == c) {
        c = c < -127.0f ? -127.0f : (c > 127.0f ? 127.0f : c);
        want = static_cast<int>(std::nearbyint(c));
      }
      bad += qnum::int8_code(x, inv) != want;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("dequantization to fp32, bf16, fp16 is fl(q * fl(s / 127)), then RNE") {
  run R(3);
  CHECK(R.step({3.0f, -1.5f, 0.001f}, false) == qnum::status::ok);
  const float dq = 3.0f / 127.0f;
  std::vector<float> f(3);
  std::vector<std::uint16_t> b(3), h(3);
  const auto q = qnum::view(R.q.data(), 3);
  const auto st = qnum::view(R.st.data(), 1);
  CHECK(qnum::dequantize_gradient_int8(q, qnum::per_tensor(), st, qnum::view(f.data(), 3)) == qnum::status::ok);
  CHECK(qnum::dequantize_gradient_int8(q, qnum::per_tensor(), st, qnum::view(b.data(), 3)) == qnum::status::ok);
  CHECK(qnum::dequantize_gradient_int8(q, qnum::per_tensor(), st, qnum::view<qnum::fp16>(h.data(), 1, 3)) ==
        qnum::status::ok);
  for (int i = 0; i < 3; ++i) {
    volatile float v = static_cast<float>(R.q[i]) * dq;
    CHECK(f[i] == v);
    CHECK(b[i] == qnum::to_bf16(v));
    CHECK(h[i] == qnum::to_fp16(v));
  }
  CHECK(f[0] == 3.0f * 127.0f / 127.0f);
  CHECK(qnum::dequantize_gradient_int8(qnum::view(static_cast<const std::int8_t*>(nullptr), 3), qnum::per_tensor(), st,
                                       qnum::view(f.data(), 3)) == qnum::status::null_pointer);
  CHECK(qnum::dequantize_gradient_int8(q, qnum::group_size(2), st, qnum::view(f.data(), 3)) == qnum::status::bad_group);
  for (qnum::dtype t : {qnum::dtype::e8m0, qnum::dtype::ue4m3})  // outputs are fp32, bf16 or fp16
    CHECK(qnum::dequantize_gradient_int8(q, qnum::per_tensor(), st, qnum::view(f.data(), 1, 3, -1, t)) ==
          qnum::status::bad_type);
}

TEST_CASE("bad input gives a status, never a crash") {
  run R(4);
  std::vector<float> g(4, 1.0f);
  const auto q = qnum::view(R.q.data(), 4);
  const auto r = qnum::view(R.r.data(), 4);
  const auto st = qnum::view(R.st.data(), 1);
  const qnum::group_shape all = qnum::per_tensor();
  CHECK(qnum::quantize_gradient_int8(qnum::view(static_cast<const float*>(nullptr), 4), all, q, r, st, R.cfg) ==
        qnum::status::null_pointer);
  CHECK(qnum::quantize_gradient_int8(qnum::view(g.data(), 4), qnum::group_size(3), q, r, st, R.cfg) ==
        qnum::status::bad_group);
  CHECK(qnum::quantize_gradient_int8(qnum::view(g.data(), 0), all, q, r, st, R.cfg) == qnum::status::ok);
  qnum::dynamic_scale_config bad;
  bad.alpha = 1.5f;
  CHECK(qnum::quantize_gradient_int8(qnum::view(g.data(), 4), all, q, r, st, bad) == qnum::status::bad_config);
  bad = {};
  bad.scale_clip = 0.5f;
  CHECK(qnum::quantize_gradient_int8(qnum::view(g.data(), 4), all, q, r, st, bad) == qnum::status::bad_config);
  bad = {};
  bad.scale_floor = std::nanf("");
  CHECK(qnum::quantize_gradient_int8(qnum::view(g.data(), 4), all, q, r, st, bad) == qnum::status::bad_config);
  CHECK(R.st[0].steps == 0);
}

TEST_CASE("error feedback: saturation is carried, and sum of dequant + residual conserves sum of g") {
  // A spike above the scale saturates; the cut-off part lives in the residual and comes out later.
  run S(2);
  CHECK(S.step({1.0f, 0.0f}) == qnum::status::ok);  // s0 = 1
  CHECK(S.step({10.0f, 0.0f}) == qnum::status::ok);
  CHECK(S.q[0] == 127);
  const float dq1 = qnum::int8_multipliers_for(S.st[0].scale).dq;
  CHECK(S.r[0] == 10.0f - 127.0f * dq1);
  CHECK(S.r[0] > 8.9f);

  for (int bf16_residual = 0; bf16_residual < 2; ++bf16_residual) {
    for (int sr = 0; sr < 2; ++sr) {
      const std::size_t n = 512, T = 300;
      qnum::dynamic_scale_config cfg;
      cfg.round = (sr != 0) ? qnum::stochastic_seed(99) : qnum::nearest_even();
      std::vector<qnum::dynamic_scale_state> st(4);
      std::vector<std::int8_t> q(n);
      std::vector<float> r32(n, 0.0f);
      std::vector<std::uint16_t> r16(n, 0);
      std::vector<double> sum_g(n, 0.0), sum_dq(n, 0.0), bound(n, 0.0);
      std::mt19937 rng(7);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      const double u = bf16_residual ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
      for (std::size_t t = 0; t < T; ++t) {
        std::vector<float> g(n), gin(n);
        const float mag = (t % 50 == 17) ? 300.0f : 1.0f;  // periodic spikes that saturate
        for (std::size_t i = 0; i < n; ++i) {
          g[i] = nd(rng) * mag * (i < 256 ? 1.0f : 1e-3f);
          gin[i] = g[i] + (bf16_residual ? qnum::from_bf16(r16[i]) : r32[i]);
        }
        const std::int64_t nn = static_cast<std::int64_t>(n);
        const auto status =
            bf16_residual
                ? qnum::quantize_gradient_int8(qnum::view(g.data(), nn), qnum::group_size(128), qnum::view(q.data(), nn),
                                               qnum::view(r16.data(), nn), qnum::view(st.data(), 4), cfg)
                : qnum::quantize_gradient_int8(qnum::view(g.data(), nn), qnum::group_size(128), qnum::view(q.data(), nn),
                                               qnum::view(r32.data(), nn), qnum::view(st.data(), 4), cfg);
        REQUIRE(status == qnum::status::ok);
        for (std::size_t i = 0; i < n; ++i) {
          const float dq = qnum::int8_multipliers_for(st[i / 128].scale).dq;
          const float d = qnum::int8_dequant(q[i], dq);
          const float rn = bf16_residual ? qnum::from_bf16(r16[i]) : r32[i];
          sum_g[i] += g[i];
          sum_dq[i] += d;
          // per step: g' = (g + r)(1 + e1), r_new = (g' - d)(1 + e2): |error| <= u_f32 |g'| + u |r_new|
          bound[i] += std::ldexp(1.0, -24) * std::fabs(gin[i]) + u * 1.0001 * std::fabs(rn) * 1.0001;
        }
      }
      double worst = 0.0, naive = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        const double rn = bf16_residual ? qnum::from_bf16(r16[i]) : r32[i];
        const double err = std::fabs(sum_dq[i] + rn - sum_g[i]);
        CHECK(err <= bound[i] * 1.001 + 1e-30);
        worst = std::fmax(worst, err / (bound[i] + 1e-30));
        naive = std::fmax(naive, std::fabs(sum_dq[i] - sum_g[i]));
      }
      MESSAGE("bf16 residual " << bf16_residual << " stochastic " << sr << ": worst error / bound " << worst
                               << ", max |residual| part " << naive);
    }
  }
}

TEST_CASE("non-finite policy: skip_step keeps every state; zero_elements zeroes the element only") {
  run R(4);
  CHECK(R.step({1.0f, -2.0f, 0.5f, 0.3f}) == qnum::status::ok);
  const auto st = R.st[0];
  const auto res = R.r;
  CHECK(R.step({1.0f, std::nanf(""), 0.5f, 0.3f}) == qnum::status::skipped_nonfinite);
  CHECK(R.q == std::vector<std::int8_t>{0, 0, 0, 0});
  CHECK(R.r == res);
  CHECK(R.st[0].scale == st.scale);
  CHECK(R.st[0].amax == st.amax);
  CHECK(R.st[0].steps == st.steps);
  CHECK(R.st[0].skipped == 1);
  CHECK(R.step({INFINITY, 0.0f, 0.0f, 0.0f}) == qnum::status::skipped_nonfinite);
  // finite g whose sum with the residual overflows counts as non-finite
  R.r[2] = 3.0e38f;
  CHECK(R.step({0.0f, 0.0f, 3.0e38f, 0.0f}) == qnum::status::skipped_nonfinite);
  R.r = res;
  CHECK(R.step({1.0f, -2.0f, 0.5f, 0.3f}) == qnum::status::ok);
  CHECK(R.st[0].scale == qnum::dynamic_scale_update(st.scale, st.amax, R.cfg));

  run Z(4);
  Z.cfg.on_nonfinite = qnum::nonfinite_policy::zero_elements;
  CHECK(Z.step({1.0f, -2.0f, 0.5f, 0.3f}) == qnum::status::ok);
  const float r1 = Z.r[1];
  CHECK(Z.step({1.0f, std::nanf(""), 0.5f, -INFINITY}) == qnum::status::ok_zeroed_nonfinite);
  CHECK(Z.q[1] == 0);
  CHECK(Z.q[3] == 0);
  CHECK(Z.r[1] == r1);
  CHECK(Z.q[0] != 0);
  CHECK(Z.st[0].amax == 1.0f + Z.r[0] * 0.0f + (Z.st[0].amax - 1.0f));  // finite
  CHECK(!qnum::detail::is_nonfinite(Z.st[0].amax));
  CHECK(Z.st[0].steps == 2);
  // an all-NaN first step under zero_elements: the scale is the floor, never NaN
  run Y(2);
  Y.cfg.on_nonfinite = qnum::nonfinite_policy::zero_elements;
  CHECK(Y.step({std::nanf(""), std::nanf("")}) == qnum::status::ok_zeroed_nonfinite);
  CHECK(Y.st[0].scale == 1e-6f);
}

TEST_CASE("stochastic rounding: deterministic per (seed, offset), unbiased, offsets advance") {
  const std::size_t n = 1 << 14;
  std::vector<float> g(n, 0.3f / 127.0f);
  g[0] = 1.0f;  // s0 = 1: g * 127 = 0.3 everywhere else
  auto go = [&](std::uint64_t seed) {
    run R(n);
    R.cfg.round = qnum::stochastic_seed(seed);
    R.step(g, false);
    return R;
  };
  const run a = go(5), b = go(5), c = go(6);
  CHECK(a.q == b.q);
  CHECK(a.q != c.q);
  double mean = 0.0;
  for (std::size_t i = 1; i < n; ++i) {
    CHECK((a.q[i] == 0 || a.q[i] == 1));
    const float x = qnum::detail::mul_rn(g[i], 127.0f);
    CHECK(a.q[i] == qnum::round_to_int(x, qnum::stochastic(qnum::random_bits(5, i))));
    mean += a.q[i];
  }
  mean /= double(n - 1);
  CHECK(std::fabs(mean - 0.3) < 0.02);
  CHECK(a.st[0].rng_offset == n);
  // the second call uses offsets n..2n-1
  run R(n);
  R.cfg.round = qnum::stochastic_seed(5);
  R.step(g, false);
  R.step(g, false);
  const float inv = qnum::int8_multipliers_for(R.st[0].scale).inv;
  for (std::size_t i = 0; i < 64; ++i)
    CHECK(R.q[i] == qnum::int8_code(g[i], inv, qnum::stochastic(qnum::random_bits(5, n + i))));
}

TEST_CASE("per-group scales are independent") {
  run R(8, 2);
  CHECK(R.step({1, 1, 1, 1, 8, 8, 8, 8}, false, 4) == qnum::status::ok);
  CHECK(R.st[0].scale == 1.0f);
  CHECK(R.st[1].scale == 8.0f);
  CHECK(R.q == std::vector<std::int8_t>{127, 127, 127, 127, 127, 127, 127, 127});
}

namespace {

// A [rows, cols] run and the same data as a 1 x n run: views of the same shapes as the caller's tensors.
template <class Residual>
struct run2d {
  std::vector<qnum::dynamic_scale_state> st;
  std::vector<std::int8_t> q;
  std::vector<Residual> r;
  run2d(std::size_t n, std::size_t groups) : st(groups), q(n, 0), r(n, Residual{0}) {}
};

bool same_bytes(const void* a, const void* b, std::size_t n) { return std::memcmp(a, b, n) == 0; }

}  // namespace

TEST_CASE("a [rows, cols] gradient is its n = rows * cols elements flat: bit-identical to the 1 x n view") {
  const std::int64_t rows = 6, cols = 32, n = rows * cols;
  struct shape_case {
    qnum::group_shape g2;  // groups of the 2-D tensor
    qnum::group_shape g1;  // the same groups of the 1 x n tensor
    std::int64_t sr, sc;   // states shape of the 2-D tensor
  };
  const shape_case cases[] = {{qnum::group_size(8), qnum::group_size(8), rows, 4},
                              {qnum::per_row(), qnum::group_size(cols), rows, 1},
                              {qnum::group_size(cols), qnum::group_size(cols), rows, 1},
                              {qnum::per_tensor(), qnum::per_tensor(), 1, 1}};
  for (const shape_case& sc : cases) {
    for (int variant = 0; variant < 4; ++variant) {
      qnum::dynamic_scale_config cfg;
      cfg.round = (variant & 1) ? qnum::stochastic_seed(17) : qnum::nearest_even();
      cfg.on_nonfinite = (variant & 2) ? qnum::nonfinite_policy::zero_elements : qnum::nonfinite_policy::skip_step;
      const std::size_t groups = static_cast<std::size_t>(sc.sr * sc.sc);
      REQUIRE(qnum::scale_shape(rows, cols, sc.g2).rows == sc.sr);
      REQUIRE(qnum::scale_shape(rows, cols, sc.g2).cols == sc.sc);
      run2d<float> a(n, groups), b(n, groups);
      run2d<std::uint16_t> c(n, groups), d(n, groups);
      std::mt19937 rng(11);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (int t = 0; t < 6; ++t) {
        std::vector<float> g(static_cast<std::size_t>(n));
        for (auto& x : g) x = nd(rng) * (t == 3 ? 50.0f : 1.0f);
        if (t == 4) g[37] = NAN;
        const auto s2 = qnum::quantize_gradient_int8(qnum::view(g.data(), rows, cols), sc.g2, qnum::view(a.q.data(), rows, cols),
                                                     qnum::view(a.r.data(), rows, cols), qnum::view(a.st.data(), sc.sr, sc.sc), cfg);
        const auto s1 = qnum::quantize_gradient_int8(qnum::view(g.data(), n), sc.g1, qnum::view(b.q.data(), n), qnum::view(b.r.data(), n),
                                                     qnum::view(b.st.data(), static_cast<std::int64_t>(groups)), cfg);
        const auto s2h = qnum::quantize_gradient_int8(qnum::view(g.data(), rows, cols), sc.g2, qnum::view(c.q.data(), rows, cols),
                                                      qnum::view(c.r.data(), rows, cols), qnum::view(c.st.data(), sc.sr, sc.sc), cfg);
        const auto s1h = qnum::quantize_gradient_int8(qnum::view(g.data(), n), sc.g1, qnum::view(d.q.data(), n), qnum::view(d.r.data(), n),
                                                      qnum::view(d.st.data(), static_cast<std::int64_t>(groups)), cfg);
        CHECK(s2 == s1);
        CHECK(s2h == s1h);
        CHECK(s1 == (t != 4 ? qnum::status::ok
                            : ((variant & 2) ? qnum::status::ok_zeroed_nonfinite : qnum::status::skipped_nonfinite)));
        CHECK(a.q == b.q);
        CHECK(same_bytes(a.r.data(), b.r.data(), a.r.size() * sizeof(float)));
        CHECK(same_bytes(a.st.data(), b.st.data(), groups * sizeof(qnum::dynamic_scale_state)));
        CHECK(c.q == d.q);
        CHECK(c.r == d.r);
        CHECK(same_bytes(c.st.data(), d.st.data(), groups * sizeof(qnum::dynamic_scale_state)));
        // dequantization: 2-D == flat
        std::vector<float> o2(static_cast<std::size_t>(n)), o1(static_cast<std::size_t>(n));
        std::vector<std::uint16_t> h2(static_cast<std::size_t>(n)), h1(static_cast<std::size_t>(n));
        REQUIRE(qnum::dequantize_gradient_int8(qnum::view(a.q.data(), rows, cols), sc.g2, qnum::view(a.st.data(), sc.sr, sc.sc),
                                               qnum::view(o2.data(), rows, cols)) == qnum::status::ok);
        REQUIRE(qnum::dequantize_gradient_int8(qnum::view(b.q.data(), n), sc.g1, qnum::view(b.st.data(), static_cast<std::int64_t>(groups)),
                                               qnum::view(o1.data(), n)) == qnum::status::ok);
        REQUIRE(qnum::dequantize_gradient_int8(qnum::view(a.q.data(), rows, cols), sc.g2, qnum::view(a.st.data(), sc.sr, sc.sc),
                                               qnum::view<qnum::fp16>(h2.data(), rows, cols)) == qnum::status::ok);
        REQUIRE(qnum::dequantize_gradient_int8(qnum::view(b.q.data(), n), sc.g1, qnum::view(b.st.data(), static_cast<std::int64_t>(groups)),
                                               qnum::view<qnum::fp16>(h1.data(), 1, n)) == qnum::status::ok);
        CHECK(same_bytes(o2.data(), o1.data(), o1.size() * sizeof(float)));
        CHECK(h2 == h1);
      }
      CHECK(a.st[0].steps == ((variant & 2) ? 6u : 5u));
    }
  }
}

TEST_CASE("view checks of quantize_gradient_int8: bad_stride, bad_shape, bad_group, bad_type; nothing written") {
  const qnum::dynamic_scale_config cfg;
  std::vector<float> g(32, 1.0f), r(32, 0.25f);
  std::vector<std::int8_t> q(32, 5);
  std::vector<std::uint16_t> r16(32, 0);
  std::vector<qnum::dynamic_scale_state> st(8);
  const auto G = qnum::view(g.data(), 2, 8);                     // [2, 8]
  const auto Q = qnum::view(q.data(), 2, 8);
  const auto R = qnum::view(r.data(), 2, 8);
  const auto S = qnum::view(st.data(), 2, 2);                    // group_size(4): scale_shape = [2, 2]
  const qnum::group_shape g4 = qnum::group_size(4);
  using qnum::status;
  const auto quant = [&](auto gv, qnum::group_shape gr, auto qv, auto rv, auto sv) {
    return qnum::quantize_gradient_int8(gv, gr, qv, rv, sv, cfg);
  };
  // bad_stride: a view with a gap between its rows (row_stride 16 > cols 8), for each of the four views
  CHECK(quant(qnum::view(g.data(), 2, 8, 16), g4, Q, R, S) == status::bad_stride);
  CHECK(quant(G, g4, qnum::view(q.data(), 2, 8, 16), R, S) == status::bad_stride);
  CHECK(quant(G, g4, Q, qnum::view(r.data(), 2, 8, 16), S) == status::bad_stride);
  CHECK(quant(G, g4, Q, R, qnum::view(st.data(), 2, 2, 4)) == status::bad_stride);
  CHECK(quant(qnum::view(g.data(), 2, 8, 4), g4, Q, R, S) == status::bad_stride);  // overlapping rows
  // one row: its stride does not matter
  CHECK(quant(qnum::view(g.data(), 1, 8, 3), g4, qnum::view(q.data(), 1, 8), qnum::view(r.data(), 1, 8),
              qnum::view(st.data(), 1, 2)) == status::ok);
  // bad_shape: codes, residual or states not of the shape the gradient fixes
  CHECK(quant(G, g4, qnum::view(q.data(), 1, 16), R, S) == status::bad_shape);
  CHECK(quant(G, g4, qnum::view(q.data(), 2, 4), R, S) == status::bad_shape);
  CHECK(quant(G, g4, Q, qnum::view(r.data(), 16), S) == status::bad_shape);
  CHECK(quant(G, g4, Q, qnum::view(r.data(), 0), S) == status::bad_shape);  // given (data set), but 1 x 0
  CHECK(quant(G, g4, Q, R, qnum::view(st.data(), 4)) == status::bad_shape);
  CHECK(quant(G, g4, Q, R, qnum::view(st.data(), 1, 1)) == status::bad_shape);
  CHECK(quant(G, qnum::per_tensor(), Q, R, qnum::view(st.data(), 2, 2)) == status::bad_shape);
  CHECK(quant(G, qnum::per_row(), Q, R, qnum::view(st.data(), 1, 2)) == status::bad_shape);
  CHECK(quant(qnum::view(g.data(), -1, 8), g4, Q, R, S) == status::bad_shape);
  // bad_group: G not dividing cols (even where it divides n), blocks of more than one row, negative sizes
  CHECK(quant(G, qnum::group_size(16), Q, R, S) == status::bad_group);
  CHECK(quant(qnum::view(g.data(), 3, 4), qnum::group_size(6), qnum::view(q.data(), 3, 4), qnum::view(r.data(), 3, 4),
              qnum::view(st.data(), 2)) == status::bad_group);
  CHECK(quant(G, qnum::group_size(3), Q, R, S) == status::bad_group);
  CHECK(quant(G, qnum::block(2, 4), Q, R, S) == status::bad_group);
  CHECK(quant(G, qnum::block(0, 4), Q, R, S) == status::bad_group);
  CHECK(quant(G, qnum::block(2, 0), Q, R, S) == status::bad_group);
  CHECK(quant(G, qnum::group_size(-4), Q, R, S) == status::bad_group);
  // bad_type: a bf16 residual view must say bf16
  CHECK(quant(G, g4, Q, qnum::view<qnum::fp16>(r16.data(), 2, 8), S) == status::bad_type);
  CHECK(quant(G, g4, Q, qnum::view(r16.data(), 2, 8, -1, qnum::dtype::fp32), S) == status::bad_type);
  // null_pointer: a required view, or a given residual, without data
  CHECK(quant(G, g4, qnum::view(static_cast<std::int8_t*>(nullptr), 2, 8), R, S) == status::null_pointer);
  CHECK(quant(G, g4, Q, qnum::view(static_cast<float*>(nullptr), 2, 8), S) == status::null_pointer);
  CHECK(quant(G, g4, Q, R, qnum::view(static_cast<qnum::dynamic_scale_state*>(nullptr), 2, 2)) == status::null_pointer);
  // nothing was written by any of the calls above except the one-row ok call (codes of row 0, states 0..1)
  const std::vector<std::int8_t> q_after_ok(q.begin(), q.begin() + 8);
  for (std::size_t i = 8; i < 32; ++i) CHECK(q[i] == 5);
  for (std::size_t i = 8; i < 32; ++i) CHECK(r[i] == 0.25f);
  for (std::size_t k = 2; k < 8; ++k) CHECK(st[k].steps == 0);
  // empty tensors are ok and touch nothing, whatever the other views
  CHECK(quant(qnum::view(g.data(), 0, 8), g4, Q, R, S) == status::ok);
  CHECK(quant(qnum::view(static_cast<const float*>(nullptr), 2, 0), qnum::block(2, 4), Q, R, S) == status::ok);
  CHECK(std::vector<std::int8_t>(q.begin(), q.begin() + 8) == q_after_ok);
  // the good call, 2-D: an empty residual view (also a default bf16 one) is no error feedback
  CHECK(quant(G, g4, Q, qnum::matrix_view<std::uint16_t>{}, S) == status::ok);
  CHECK(r16 == std::vector<std::uint16_t>(32, 0));
  CHECK(quant(G, g4, Q, qnum::view(r16.data(), 2, 8), S) == status::ok);
  CHECK(quant(G, qnum::per_row(), Q, R, qnum::view(st.data(), 2, 1)) == status::ok);
  CHECK(quant(G, qnum::per_tensor(), Q, R, qnum::view(st.data(), 1, 1)) == status::ok);
}

TEST_CASE("view checks of dequantize_gradient_int8: out types, shapes, strides, groups") {
  std::vector<std::int8_t> q(16, 3);
  std::vector<qnum::dynamic_scale_state> st(4);
  for (auto& s : st) s.scale = 1.0f;
  std::vector<float> f(32, -1.0f);
  std::vector<std::uint16_t> h(32, 7);
  const auto Q = qnum::view(static_cast<const std::int8_t*>(q.data()), 2, 8);
  const auto S = qnum::view(static_cast<const qnum::dynamic_scale_state*>(st.data()), 2, 2);
  const qnum::group_shape g4 = qnum::group_size(4);
  using qnum::status;
  using qnum::dtype;
  // out type: float needs fp32; std::uint16_t needs bf16 or fp16
  for (dtype t : {dtype::bf16, dtype::fp16, dtype::e8m0, dtype::ue4m3})
    CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(f.data(), 2, 8, -1, t)) == status::bad_type);
  for (dtype t : {dtype::fp32, dtype::e8m0, dtype::ue4m3})
    CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(h.data(), 2, 8, -1, t)) == status::bad_type);
  CHECK(f == std::vector<float>(32, -1.0f));
  CHECK(h == std::vector<std::uint16_t>(32, 7));
  // shapes, strides, groups
  CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(f.data(), 16)) == status::bad_shape);
  CHECK(qnum::dequantize_gradient_int8(Q, g4, qnum::view(static_cast<const qnum::dynamic_scale_state*>(st.data()), 4),
                                       qnum::view(f.data(), 2, 8)) == status::bad_shape);
  CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(f.data(), 2, 8, 16)) == status::bad_stride);
  CHECK(qnum::dequantize_gradient_int8(qnum::view(static_cast<const std::int8_t*>(q.data()), 2, 4, 8), g4,
                                       qnum::view(static_cast<const qnum::dynamic_scale_state*>(st.data()), 2, 1),
                                       qnum::view(f.data(), 2, 4)) == status::bad_stride);
  CHECK(qnum::dequantize_gradient_int8(Q, qnum::block(2, 4), S, qnum::view(f.data(), 2, 8)) == status::bad_group);
  CHECK(qnum::dequantize_gradient_int8(Q, qnum::group_size(3), S, qnum::view(f.data(), 2, 8)) == status::bad_group);
  CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(static_cast<float*>(nullptr), 2, 8)) == status::null_pointer);
  CHECK(f == std::vector<float>(32, -1.0f));
  // the good calls: fp32, bf16, fp16
  const float v = qnum::int8_dequant(3, qnum::int8_multipliers_for(1.0f).dq);
  CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(f.data(), 2, 8)) == status::ok);
  CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view(h.data(), 2, 8)) == status::ok);
  for (std::size_t i = 0; i < 16; ++i) CHECK(f[i] == v);
  for (std::size_t i = 0; i < 16; ++i) CHECK(h[i] == qnum::to_bf16(v));
  CHECK(f[16] == -1.0f);
  CHECK(qnum::dequantize_gradient_int8(Q, g4, S, qnum::view<qnum::fp16>(h.data(), 2, 8)) == status::ok);
  for (std::size_t i = 0; i < 16; ++i) CHECK(h[i] == qnum::to_fp16(v));
  CHECK(h[16] == 7);
}
