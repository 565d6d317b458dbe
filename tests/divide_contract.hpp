// tests/divide_contract.hpp: the contract of detail::divide against the correctly rounded division (see
// detail/fp_rn.hpp), one definition for the host test (tests/test_divide.cpp) and the device test
// (tests/gpu/test_divide_device.cu).
#pragma once

#include <cstdint>

#include "qnum/config.hpp"
#include "qnum/detail/bits.hpp"

namespace qtest {

// Whether q (divide) and r (div_rn) give the same code in every format: the same bits, both NaN, both below
// 2^-36 in magnitude with the same sign (a code of zero everywhere), or both at least 2^127 with the same sign.
QNUM_HD bool same_code(float q, float r) {
  const std::uint32_t a = qnum::detail::float_to_bits(q), b = qnum::detail::float_to_bits(r);
  if (a == b) return true;
  if (q != q && r != r) return true;
  const bool same_sign = (a >> 31) == (b >> 31);
  const float aq = qnum::detail::abs_bits(q), ar = qnum::detail::abs_bits(r);
  if (same_sign && aq < 0x1p-36f && ar < 0x1p-36f) return true;
  return same_sign && aq >= 0x1p127f && ar >= 0x1p127f;
}

}  // namespace qtest
