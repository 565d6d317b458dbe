// tests/train/test_int8_adam.cpp: Adam/AdamW with INT8 block-scaled states (qnum/train/int8_adam.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "qnum/train/int8_adam.hpp"

namespace {
struct int8_state {
  std::vector<std::int8_t> m;
  std::vector<std::uint8_t> v;
  std::vector<float> ma, va;
  int8_state(std::size_t n, std::size_t block) : m(n), v(n), ma(qnum::int8_adam_blocks(n, block)), va(ma.size()) {}
  qnum::int8_adam_state view() { return {m.data(), v.data(), ma.data(), va.data()}; }
};
// A vector as a 1 x n tensor.
qnum::matrix_view<float> V(std::vector<float>& x) { return qnum::view(x.data(), static_cast<std::int64_t>(x.size())); }
}  // namespace

TEST_CASE("int8 adam: first step equals fp32 Adam bit for bit; state layout") {
  const std::size_t n = 300;  // two blocks, the second one short
  qnum::int8_adam_config c;
  std::vector<float> p(n), g(n), m(n, 0.0f), v(n, 0.0f);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = nd(rng);
    g[i] = nd(rng);
  }
  std::vector<float> p8 = p;
  int8_state s(n, c.block_size);
  REQUIRE(qnum::fp32_adam_step(V(p), V(g), V(m), V(v), c, 1) == qnum::status::ok);
  REQUIRE(qnum::int8_adam_step(V(p8), V(g), s.view(), c, 1) == qnum::status::ok);
  CHECK(p8 == p);
  // absmax per block = max |m|, max sqrt(v); the largest element gets the extreme code
  for (std::size_t b = 0; b < 2; ++b) {
    float am = 0, aw = 0;
    for (std::size_t i = b * 256; i < std::min(n, b * 256 + 256); ++i) {
      am = std::fmax(am, std::fabs(m[i]));
      aw = std::fmax(aw, std::sqrt(v[i]));
    }
    CHECK(s.ma[b] == am);
    CHECK(s.va[b] == aw);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float am = s.ma[i / 256], aw = s.va[i / 256];
    CHECK(s.m[i] == qnum::int8_adam_m_code(m[i], am, qnum::rne));
    CHECK(s.v[i] == qnum::int8_adam_v_code(std::sqrt(v[i]), aw, qnum::rne));
    CHECK(std::fabs(qnum::int8_adam_m(s.m[i], am) - m[i]) <= am / 254 * 1.0001f);
    CHECK(std::fabs(qnum::int8_adam_w(s.v[i], aw) - std::sqrt(v[i])) <= aw / 510 * 1.0001f);
  }
}

TEST_CASE("int8 adam: the square-root domain keeps a small second moment away from zero") {
  // w = 1 and w = 1/300 in one block: linear v codes would give round(255 / 90000) = 0
  CHECK(qnum::int8_adam_v_code(1.0f / 300.0f, 1.0f, qnum::rne) == 1);
  CHECK(qnum::int8_adam_v_code(1.0f, 1.0f, qnum::rne) == 255);
  CHECK(qnum::int8_adam_m_code(-1.0f, 1.0f, qnum::rne) == -127);
  CHECK(qnum::int8_adam_m_code(5.0f, 0.0f, qnum::rne) == 0);
}

TEST_CASE("int8 adam: tracks fp32 Adam on a noisy quadratic; non-finite g; bad input; determinism") {
  const std::size_t n = 1000;
  for (int sr = 0; sr < 2; ++sr) {
    qnum::int8_adam_config c;
    c.lr = 1e-2f;
    c.weight_decay = 0.01f;
    c.round = (sr != 0) ? qnum::stochastic_seed(3) : qnum::nearest_even();
    std::vector<float> p(n, 1.0f), m(n, 0.0f), v(n, 0.0f), p8(n, 1.0f), g(n), g8(n);
    int8_state s(n, c.block_size);
    std::mt19937 rng(2);
    std::normal_distribution<float> nd;
    for (std::uint64_t t = 1; t <= 500; ++t) {
      for (std::size_t i = 0; i < n; ++i) {
        const float target = 0.001f * static_cast<float>(i);
        const float noise = 0.1f * nd(rng);
        g[i] = (p[i] - target) + noise;
        g8[i] = (p8[i] - target) + noise;
      }
      qnum::fp32_adam_step(V(p), V(g), V(m), V(v), c, t);
      REQUIRE(qnum::int8_adam_step(V(p8), V(g8), s.view(), c, t) == qnum::status::ok);
    }
    double e32 = 0, e8 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double target = 0.001 * double(i);
      e32 += (p[i] - target) * (p[i] - target);
      e8 += (p8[i] - target) * (p8[i] - target);
    }
    MESSAGE("stochastic " << sr << ": fp32 mse " << e32 / n << "  int8-state mse " << e8 / n);
    CHECK(e8 / n < 2.0 * e32 / n + 1e-4);
  }
  // non-finite gradient: parameter untouched, state finite
  int8_state s(4, 256);
  std::vector<float> p{1, 2, 3, 4}, g{0.5f, NAN, INFINITY, -0.5f};
  REQUIRE(qnum::int8_adam_step(V(p), V(g), s.view(), {}, 1) == qnum::status::ok);
  CHECK(p[1] == 2.0f);
  CHECK(p[2] == 3.0f);
  CHECK(p[0] < 1.0f);
  CHECK(s.m[1] == 0);
  CHECK(std::isfinite(s.ma[0]));
  CHECK(std::isfinite(s.va[0]));
  qnum::int8_adam_config bad;
  bad.block_size = 0;
  CHECK(qnum::int8_adam_step(V(p), V(g), s.view(), bad, 1) == qnum::status::bad_group);
  bad = {};
  bad.beta2 = 1.0f;
  CHECK(qnum::int8_adam_step(V(p), V(g), s.view(), bad, 1) == qnum::status::bad_config);
  CHECK(qnum::int8_adam_step(V(p), V(g), s.view(), {}, 0) == qnum::status::bad_config);
  CHECK(qnum::int8_adam_step(qnum::view(static_cast<float*>(nullptr), 4), V(g), s.view(), {}, 1) == qnum::status::null_pointer);
  // stochastic rounding: same seed, same codes
  qnum::int8_adam_config c;
  c.round = qnum::stochastic_seed(11);
  int8_state a(512, 256), b(512, 256);
  std::vector<float> pa(512, 0.0f), pb(512, 0.0f), gg(512);
  for (std::size_t i = 0; i < 512; ++i) gg[i] = std::sin(float(i));
  for (std::uint64_t t = 1; t <= 3; ++t) {
    qnum::int8_adam_step(V(pa), V(gg), a.view(), c, t);
    qnum::int8_adam_step(V(pb), V(gg), b.view(), c, t);
  }
  CHECK(a.m == b.m);
  CHECK(a.v == b.v);
  CHECK(pa == pb);
}

TEST_CASE("int8 adam: lr = 0 leaves every parameter bit-identical, even where m / eps overflows") {
  // beta2 = 0 makes eps_hat = eps exactly; a large g gives m / (w + eps_hat) = Inf for an element whose v
  // code rounds to 0 next to a much larger one in its block, and 0 * Inf would be NaN.
  qnum::int8_adam_config c;
  c.lr = 0.0f;
  c.beta2 = 0.0f;
  c.eps = 1e-30f;
  c.block_size = 4;
  int8_state s(4, 4);
  std::vector<float> p = {1.5f, -0.0f, 3.0e30f, -7.0f}, g = {4.0e8f, 1.0f, 0.0f, 1.0e20f};
  const std::vector<float> p0 = p;
  for (std::uint64_t t = 1; t <= 3; ++t) {
    REQUIRE(qnum::int8_adam_step(V(p), V(g), s.view(), c, t) == qnum::status::ok);
    for (std::size_t i = 0; i < 4; ++i) {
      std::uint32_t a, b;
      std::memcpy(&a, &p[i], 4);
      std::memcpy(&b, &p0[i], 4);
      CHECK_MESSAGE(a == b, "step " << t << " element " << i);
    }
  }
}

TEST_CASE("int8 adam: a [rows, cols] tensor is its elements flat; shape and stride checks") {
  const std::int64_t rows = 5, cols = 120, n = rows * cols;  // blocks of 256 straddle the rows
  for (int sr = 0; sr < 2; ++sr) {
    qnum::int8_adam_config c;
    c.round = (sr != 0) ? qnum::stochastic_seed(5) : qnum::nearest_even();
    std::vector<float> p2(static_cast<std::size_t>(n)), g(static_cast<std::size_t>(n));
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (auto& x : p2) x = nd(rng);
    std::vector<float> p1 = p2, q2 = p2, q1 = p2, m2(p2.size(), 0.0f), v2(p2.size(), 0.0f), m1 = m2, v1 = v2;
    int8_state a(static_cast<std::size_t>(n), c.block_size), b(static_cast<std::size_t>(n), c.block_size);
    for (std::uint64_t t = 1; t <= 4; ++t) {
      for (auto& x : g) x = nd(rng);
      REQUIRE(qnum::int8_adam_step(qnum::view(p2.data(), rows, cols), qnum::view(g.data(), rows, cols), a.view(), c, t) ==
              qnum::status::ok);
      REQUIRE(qnum::int8_adam_step(V(p1), V(g), b.view(), c, t) == qnum::status::ok);
      REQUIRE(qnum::fp32_adam_step(qnum::view(q2.data(), rows, cols), qnum::view(g.data(), rows, cols),
                                   qnum::view(m2.data(), rows, cols), qnum::view(v2.data(), rows, cols), c, t) == qnum::status::ok);
      REQUIRE(qnum::fp32_adam_step(V(q1), V(g), V(m1), V(v1), c, t) == qnum::status::ok);
      CHECK(std::memcmp(p2.data(), p1.data(), p1.size() * 4) == 0);
      CHECK(a.m == b.m);
      CHECK(a.v == b.v);
      CHECK(std::memcmp(a.ma.data(), b.ma.data(), a.ma.size() * 4) == 0);
      CHECK(std::memcmp(a.va.data(), b.va.data(), a.va.size() * 4) == 0);
      CHECK(std::memcmp(q2.data(), q1.data(), q1.size() * 4) == 0);
      CHECK(std::memcmp(m2.data(), m1.data(), m1.size() * 4) == 0);
      CHECK(std::memcmp(v2.data(), v1.data(), v1.size() * 4) == 0);
    }
  }
  using qnum::status;
  int8_state s(16, 256);
  std::vector<float> p(32, 1.0f), g(32, 0.5f), m(32, 0.0f), v(32, 0.0f);
  const auto P = qnum::view(p.data(), 2, 8), G = qnum::view(g.data(), 2, 8);
  const auto M = qnum::view(m.data(), 2, 8), W = qnum::view(v.data(), 2, 8);
  // bad_shape: p (m, v) not of g's shape; a negative extent
  CHECK(qnum::int8_adam_step(qnum::view(p.data(), 16), G, s.view(), {}, 1) == status::bad_shape);
  CHECK(qnum::int8_adam_step(qnum::view(p.data(), 2, 4), G, s.view(), {}, 1) == status::bad_shape);
  CHECK(qnum::int8_adam_step(P, qnum::view(g.data(), 2, -8), s.view(), {}, 1) == status::bad_shape);
  CHECK(qnum::fp32_adam_step(P, G, qnum::view(m.data(), 16), W, {}, 1) == status::bad_shape);
  CHECK(qnum::fp32_adam_step(P, G, M, qnum::view(v.data(), 8, 2), {}, 1) == status::bad_shape);
  CHECK(qnum::fp32_adam_step(qnum::view(p.data(), 1, 8), G, M, W, {}, 1) == status::bad_shape);
  // bad_stride: rows with a gap
  CHECK(qnum::int8_adam_step(qnum::view(p.data(), 2, 8, 16), G, s.view(), {}, 1) == status::bad_stride);
  CHECK(qnum::int8_adam_step(P, qnum::view(g.data(), 2, 8, 16), s.view(), {}, 1) == status::bad_stride);
  CHECK(qnum::fp32_adam_step(P, G, qnum::view(m.data(), 2, 8, 9), W, {}, 1) == status::bad_stride);
  CHECK(qnum::fp32_adam_step(P, G, M, qnum::view(v.data(), 2, 8, 12), {}, 1) == status::bad_stride);
  // null_pointer, the order of the checks, empty tensors
  CHECK(qnum::int8_adam_step(P, G, {nullptr, s.v.data(), s.ma.data(), s.va.data()}, {}, 1) == status::null_pointer);
  CHECK(qnum::fp32_adam_step(P, G, qnum::view(static_cast<float*>(nullptr), 2, 8), W, {}, 1) == status::null_pointer);
  CHECK(qnum::int8_adam_step(qnum::view(p.data(), 16), G, s.view(), {}, 0) == status::bad_config);  // config first
  CHECK(qnum::fp32_adam_step(P, G, M, W, {}, 0) == status::bad_config);
  CHECK(qnum::int8_adam_step(qnum::view(p.data(), 16), qnum::view(g.data(), 0, 8), s.view(), {}, 1) == status::ok);
  CHECK(qnum::int8_adam_check(P, G, s.view(), {}, 1) == status::ok);
  CHECK(qnum::int8_adam_check(qnum::view(p.data(), 2, 8, 16), G, s.view(), {}, 1) == status::bad_stride);
  CHECK(p == std::vector<float>(32, 1.0f));
  CHECK(m == std::vector<float>(32, 0.0f));
  CHECK(s.m == std::vector<std::int8_t>(16, 0));
  // the good calls, 2-D
  CHECK(qnum::int8_adam_step(P, G, s.view(), {}, 1) == status::ok);
  CHECK(qnum::fp32_adam_step(P, G, M, W, {}, 1) == status::ok);
  CHECK(p[15] < 1.0f);
  CHECK(p[16] == 1.0f);
}
