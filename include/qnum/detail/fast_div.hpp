// qnum/detail/fast_div.hpp: division of 32-bit unsigned integers by a divisor fixed at run time, as a
// multiply-high, an add and a shift (Granlund-Montgomery), host and device.
//
//   fast_div f(d);    d in [1, 2^31)
//   f.div(n)          == n / d   for n in [0, 2^31)
// The kernels map a flat group index to (row, group column) with it instead of a 64-bit division.
#pragma once

#include <cstdint>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE
namespace detail {

struct fast_div {
  std::uint32_t d = 1, m = 1, s = 0;

  fast_div() = default;
  explicit fast_div(std::uint32_t divisor) : d(divisor) {
    s = 0;
    while ((std::uint64_t{1} << s) < d) ++s;  // s = ceil(log2 d)
    m = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << s) - d)) / d + 1);
  }
  // n / d for n < 2^31: t = floor(n * m / 2^32); (t + n) < 2^32 cannot overflow.
  QNUM_HD std::uint32_t div(std::uint32_t n) const {
#if QNUM_IS_DEVICE_PASS()
    const std::uint32_t t = __umulhi(n, m);
#else
    const std::uint32_t t = static_cast<std::uint32_t>((std::uint64_t{n} * m) >> 32);
#endif
    return (t + n) >> s;
  }
};

}  // namespace detail
QNUM_END_NAMESPACE
