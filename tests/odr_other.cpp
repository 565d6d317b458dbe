// tests/odr_other.cpp: the second translation unit of test_odr.
#include <cstdint>

#include "qnum/qnum.hpp"

std::uint32_t odr_other_tu(float x) {
  return qnum::encode<qnum::fp8_e4m3>(x) | (static_cast<std::uint32_t>(qnum::encode<qnum::qint4>(x)) << 8) |
         (static_cast<std::uint32_t>(qnum::to_bf16(x)) << 16);
}
