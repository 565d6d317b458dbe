// tests/test_divide.cpp: detail::divide (one reciprocal per group, Markstein's correction) against the
// correctly rounded division on the CPU: the definition the device kernels use (the same correctly rounded
// operations; tests/gpu/test_divide_device.cu runs the same checks on a GPU, exhaustively there).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>

#include "divide_contract.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/detail/fp_rn.hpp"
#include "qnum/random.hpp"

namespace {

using qnum::detail::bits_to_float;
using qnum::detail::float_to_bits;
using qtest::same_code;

float next_up(float v) { return bits_to_float(float_to_bits(v) + 1u); }
float next_down(float v) { return bits_to_float(float_to_bits(v) - 1u); }

}  // namespace

TEST_CASE("divide: mantissa pairs give the bits of the correctly rounded quotient") {
  // 1 <= x, b < 2: every x mantissa for 16 divisor mantissas (both ends and a stride), 2^27 pairs.
  std::uint64_t bad = 0;
  for (std::uint32_t k = 0; k < 16; ++k) {
    const std::uint32_t mb = k == 15 ? 0x7FFFFFu : k * 0x88889u;
    const float b = bits_to_float(0x3F800000u | mb);
    const qnum::detail::divisor d = qnum::detail::make_divisor(b);
    for (std::uint32_t m = 0; m < (1u << 23); ++m) {
      const float x = bits_to_float(0x3F800000u | m);
      bad += float_to_bits(qnum::detail::divide(d, x)) != float_to_bits(qnum::detail::div_rn(x, b));
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("divide: the code of the quotient for every bf16 pattern and random floats, across the fast range") {
  const float bs[] = {0x1p-64f, next_up(0x1p-64f), 0x1p64f, next_down(0x1p64f), 1.0f, next_down(2.0f), 1.0f / 127.0f,
                      3.0f / 7.0f, 0x1.7f3a2cp-20f, 6.1e15f, 2.0f / 448.0f,
                      // outside the fast range: div_rn itself
                      next_down(0x1p-64f), 1e-40f, next_up(0x1p64f), 3.0e38f};
  for (float b : bs) {
    const qnum::detail::divisor d = qnum::detail::make_divisor(b);
    std::uint64_t bad = 0, differ = 0;
    for (std::uint64_t i = 0; i < 65536 + (std::uint64_t{1} << 20); ++i) {
      const std::uint32_t xb = i < 65536 ? static_cast<std::uint32_t>(i) << 16 : qnum::random_bits(99, i);
      const float x = bits_to_float(xb);
      const float q = qnum::detail::divide(d, x), r = qnum::detail::div_rn(x, b);
      differ += float_to_bits(q) != float_to_bits(r);
      bad += !same_code(q, r);
    }
    INFO("b = " << b);
    CHECK(bad == 0);
    if (!d.fast) CHECK(differ == 0);
  }
}

TEST_CASE("divide: signed zeros, infinities and NaN") {
  const qnum::detail::divisor d = qnum::detail::make_divisor(0.25f);
  CHECK(float_to_bits(qnum::detail::divide(d, -0.0f)) == 0x80000000u);
  CHECK(float_to_bits(qnum::detail::divide(d, 0.0f)) == 0u);
  CHECK(qnum::detail::divide(d, bits_to_float(0x7F800000u)) == bits_to_float(0x7F800000u));
  CHECK(qnum::detail::divide(d, bits_to_float(0xFF800000u)) == bits_to_float(0xFF800000u));
  const float n = qnum::detail::divide(d, bits_to_float(0x7FC00000u));
  CHECK(n != n);
  CHECK(qnum::detail::divide(d, 3.0f) == 12.0f);
}

TEST_CASE("divide_bounded == divide_fast for every x within a bound that bounded_quotients accepts") {
  const float bs[] = {0x1p-64f, 0x1p64f, next_down(0x1p64f), 1.0f, 1.0f / 127.0f, 3.0f / 7.0f, 0x1.7f3a2cp-20f,
                      -2.5f, 2.0f / 448.0f};
  for (float b : bs) {
    const qnum::detail::divisor d = qnum::detail::make_divisor(b);
    REQUIRE(d.fast);
    const float ay = d.y < 0.0f ? -d.y : d.y;
    // The largest accepted bound (2^126 / |y| rounded down, stepped down until accepted) and smaller ones.
    float top = 0x1p126f / ay;
    while (qnum::detail::bounded_quotients(d, next_up(top))) top = next_up(top);
    while (!qnum::detail::bounded_quotients(d, top)) top = next_down(top);
    CHECK_FALSE(qnum::detail::bounded_quotients(d, next_up(top)));
    const float bounds[] = {top, 127.0f * (b < 0.0f ? -b : b), 1.0f};
    for (float bound : bounds) {
      REQUIRE(qnum::detail::bounded_quotients(d, bound));
      std::uint64_t bad = 0;
      for (std::uint64_t i = 0; i < 65536 + (std::uint64_t{1} << 20); ++i) {
        const std::uint32_t xb = i < 65536 ? static_cast<std::uint32_t>(i) << 16 : qnum::random_bits(98, i);
        float x = bits_to_float(xb);
        if (!(x != x) && qnum::detail::abs_bits(x) > bound) x = x < 0.0f ? -bound : bound;  // the bound itself
        const float q = qnum::detail::divide_bounded(d, x), r = qnum::detail::divide_fast(d, x);
        bad += !(float_to_bits(q) == float_to_bits(r) || (q != q && r != r));
      }
      INFO("b = " << b << ", bound = " << bound);
      CHECK(bad == 0);
    }
  }
  const qnum::detail::divisor d = qnum::detail::make_divisor(0.25f);
  CHECK_FALSE(qnum::detail::bounded_quotients(d, bits_to_float(0x7F800000u)));  // an infinite element
  CHECK_FALSE(qnum::detail::bounded_quotients(d, bits_to_float(0x7FC00000u)));
  CHECK_FALSE(qnum::detail::bounded_quotients(qnum::detail::make_divisor(1e-30f), 1.0f));  // not fast
  CHECK(float_to_bits(qnum::detail::divide_bounded(d, -0.0f)) == 0x80000000u);
}
