// tests/test_round.cpp: qnum/round.hpp: round_to_int against nearbyint, the stochastic rounding rule
// (exact probabilities, rtz/raz neighbours), and the per-call rounding values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "qnum/codec.hpp"
#include "qnum/round.hpp"
#include "test_util.hpp"

using qtest::from_bits;

TEST_CASE("round_to_int equals nearbyint (default environment) on every bf16 value and a float sweep") {
  int bad = 0;
  auto check = [&](float x) {
    if (!std::isfinite(x) || std::fabs(x) >= 2147483648.0f) return;
    const int got = qnum::round_to_int(x);
    const int want = static_cast<int>(std::nearbyint(x));
    if (got != want && bad++ < 5) FAIL_CHECK("x=" << x << " got " << got << " want " << want);
  };
  for (std::uint32_t c = 0; c < 65536; ++c) check(from_bits(c << 16));
  for (std::uint64_t u = 0; u < (1ull << 32); u += 997) check(from_bits(static_cast<std::uint32_t>(u)));
  for (int k = -300; k <= 300; ++k) {
    const float t = static_cast<float>(k) + 0.5f;
    check(t);
    check(std::nextafter(t, 1e9f));
    check(std::nextafter(t, -1e9f));
  }
  CHECK(bad == 0);
}

TEST_CASE("stochastic rounding: P(up) is exactly F / 2^32 and the two neighbours are rtz and raz") {
  using namespace qnum;
  // x = 1 + 5/16 of an E4M3 ulp above 1.0 (ulp 0.125): F = 5/16 * 2^32.
  const float x = 1.0f + 0.125f * 5.0f / 16.0f;
  const auto lo = encode<fp8_e4m3>(x, rtz), hi = encode<fp8_e4m3>(x, raz);
  CHECK(hi == lo + 1);
  int ups = 0;
  for (std::uint32_t k = 0; k < 65536; ++k) {
    const auto c = encode<fp8_e4m3>(x, stochastic(k << 16));
    CHECK((c == lo || c == hi));
    ups += c == hi;
  }
  CHECK(ups == 65536 * 5 / 16);
  // Exact values never move; random 0 truncates; all-ones rounds up any non-zero fraction.
  CHECK(encode<fp8_e4m3>(1.0f, stochastic(0xFFFFFFFFu)) == encode<fp8_e4m3>(1.0f));
  CHECK(encode<fp8_e4m3>(x, stochastic(0)) == lo);
  CHECK(encode<fp8_e4m3>(x, stochastic(0xFFFFFFFFu)) == hi);
  // Integers and negative values: magnitude rounding, so E[q] = x.
  int sum = 0;
  for (std::uint32_t k = 0; k < 4096; ++k) sum += quantize_int<qint8>(-2.25f, stochastic(k << 20));
  CHECK(sum == -2 * 4096 - 1024);
  // E2M1 between 4 and 6 (ulp 2): 4.5 is a quarter of the way.
  int up4 = 0;
  for (std::uint32_t k = 0; k < 1024; ++k) up4 += encode<fp4_e2m1>(4.5f, stochastic(k << 22)) == 0x7;
  CHECK(up4 == 256);
}

TEST_CASE("per-call rounding: nearest_even() and stochastic_seed(s)") {
  constexpr qnum::rounding n = qnum::nearest_even();
  constexpr qnum::rounding r = qnum::stochastic_seed(0x1234567890ull);
  static_assert(n.mode == qnum::rounding_mode::nearest_even && n.seed == 0, "nearest_even()");
  static_assert(r.mode == qnum::rounding_mode::stochastic && r.seed == 0x1234567890ull, "stochastic_seed()");
  CHECK(qnum::rounding{}.mode == qnum::rounding_mode::nearest_even);  // the default of every entry point
}
