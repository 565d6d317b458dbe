// tests/train/test_dynamic_scale.cpp: EMA-clipped dynamic INT8 gradient scales, residual error feedback,
// the non-finite policies and stochastic rounding (qnum/train/dynamic_scale.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
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
  qnum::status step(const std::vector<float>& g, bool feedback = true, std::size_t gs = 0) {
    return qnum::quantize_gradient_int8(g.data(), q.data(), feedback ? r.data() : static_cast<float*>(nullptr),
                                        g.size(), gs, st.data(), cfg);
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

TEST_CASE("dequantization to fp32, bf16, fp16 is fl(q * fl(s / 127)), then RNE") {
  run R(3);
  CHECK(R.step({3.0f, -1.5f, 0.001f}, false) == qnum::status::ok);
  const float dq = 3.0f / 127.0f;
  std::vector<float> f(3);
  std::vector<std::uint16_t> b(3), h(3);
  CHECK(qnum::dequantize_gradient_int8(R.q.data(), 3, 0, R.st.data(), f.data(), qnum::dtype::fp32) ==
        qnum::status::ok);
  CHECK(qnum::dequantize_gradient_int8(R.q.data(), 3, 0, R.st.data(), b.data(), qnum::dtype::bf16) ==
        qnum::status::ok);
  CHECK(qnum::dequantize_gradient_int8(R.q.data(), 3, 0, R.st.data(), h.data(), qnum::dtype::fp16) ==
        qnum::status::ok);
  for (int i = 0; i < 3; ++i) {
    volatile float v = static_cast<float>(R.q[i]) * dq;
    CHECK(f[i] == v);
    CHECK(b[i] == qnum::to_bf16(v));
    CHECK(h[i] == qnum::to_fp16(v));
  }
  CHECK(f[0] == 3.0f * 127.0f / 127.0f);
  CHECK(qnum::dequantize_gradient_int8(nullptr, 3, 0, R.st.data(), f.data(), qnum::dtype::fp32) ==
        qnum::status::null_pointer);
  CHECK(qnum::dequantize_gradient_int8(R.q.data(), 3, 2, R.st.data(), f.data(), qnum::dtype::fp32) ==
        qnum::status::bad_group);
  for (qnum::dtype t : {qnum::dtype::e8m0, qnum::dtype::ue4m3})  // outputs are fp32, bf16 or fp16
    CHECK(qnum::dequantize_gradient_int8(R.q.data(), 3, 0, R.st.data(), f.data(), t) == qnum::status::bad_type);
}

TEST_CASE("bad input gives a status, never a crash") {
  run R(4);
  std::vector<float> g(4, 1.0f);
  CHECK(qnum::quantize_gradient_int8(static_cast<const float*>(nullptr), R.q.data(), R.r.data(), 4, 0, R.st.data(),
                                     R.cfg) == qnum::status::null_pointer);
  CHECK(qnum::quantize_gradient_int8(g.data(), R.q.data(), R.r.data(), 4, 3, R.st.data(), R.cfg) ==
        qnum::status::bad_group);
  CHECK(qnum::quantize_gradient_int8(g.data(), R.q.data(), R.r.data(), 0, 0, R.st.data(), R.cfg) ==
        qnum::status::ok);
  qnum::dynamic_scale_config bad;
  bad.alpha = 1.5f;
  CHECK(qnum::quantize_gradient_int8(g.data(), R.q.data(), R.r.data(), 4, 0, R.st.data(), bad) ==
        qnum::status::bad_config);
  bad = {};
  bad.scale_clip = 0.5f;
  CHECK(qnum::quantize_gradient_int8(g.data(), R.q.data(), R.r.data(), 4, 0, R.st.data(), bad) ==
        qnum::status::bad_config);
  bad = {};
  bad.scale_floor = std::nanf("");
  CHECK(qnum::quantize_gradient_int8(g.data(), R.q.data(), R.r.data(), 4, 0, R.st.data(), bad) ==
        qnum::status::bad_config);
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
        const auto status = bf16_residual ? qnum::quantize_gradient_int8(g.data(), q.data(), r16.data(), n, 128,
                                                                         st.data(), cfg)
                                          : qnum::quantize_gradient_int8(g.data(), q.data(), r32.data(), n, 128,
                                                                         st.data(), cfg);
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
