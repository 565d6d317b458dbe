// tests/test_odr.cpp + odr_other.cpp: two translation units include the umbrella header and link
// together (no ODR breaks from non-inline definitions), and agree on every result.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>

#include "qnum/qnum.hpp"

std::uint32_t odr_other_tu(float x);

static std::uint32_t odr_this_tu(float x) {
  return qnum::encode<qnum::fp8_e4m3>(x) | (static_cast<std::uint32_t>(qnum::encode<qnum::qint4>(x)) << 8) |
         (static_cast<std::uint32_t>(qnum::to_bf16(x)) << 16);
}

TEST_CASE("two translation units including qnum.hpp link and agree") {
  for (float x : {0.0f, 1.5f, -3.25f, 464.0f, 1e-3f, -7.5f}) CHECK(odr_this_tu(x) == odr_other_tu(x));
  CHECK(QNUM_VERSION == QNUM_VERSION_MAJOR * 10000 + QNUM_VERSION_MINOR * 100 + QNUM_VERSION_PATCH);
}
