// qnum/random.hpp: Philox4x32-10 counter-based random bits, the same stream on host and device.
//
// philox4x32(counter, key) is the Random123 Philox4x32 bijection with 10 rounds (Salmon et al.,
// SC'11), the generator behind curand's and torch's Philox. random_bits(seed, offset) is qnum's
// stream: element `offset` of stream `seed` is word offset%4 of
// philox4x32({offset/4 low, offset/4 high, 0, 0}, {seed low, seed high}). Any (seed, offset) pair can
// be evaluated independently, so a kernel thread and a host loop agree without sharing state.
// random_bits4(seed, offset, out) gives four consecutive elements, from one Philox block when offset % 4 == 0.
#pragma once

#include <cstdint>

#include "qnum/config.hpp"

QNUM_BEGIN_NAMESPACE

struct philox_result {
  std::uint32_t v[4];
};

namespace detail {
QNUM_HD void mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}
}  // namespace detail

// Philox4x32-10: 10 rounds of the Philox S-box over a 128-bit counter with a 64-bit key.
QNUM_HD philox_result philox4x32(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                 std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    detail::mulhilo32(m0, c0, hi0, lo0);
    detail::mulhilo32(m1, c2, hi1, lo1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0;
    const std::uint32_t n1 = lo1;
    const std::uint32_t n2 = hi0 ^ c3 ^ k1;
    const std::uint32_t n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += w0;
    k1 += w1;
  }
  return philox_result{{c0, c1, c2, c3}};
}

namespace detail {
// Block `block` of the stream `seed`: elements 4 * block .. 4 * block + 3 (see the file comment).
QNUM_HD philox_result random_block(std::uint64_t seed, std::uint64_t block) {
  return philox4x32(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u,
                    static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}
}  // namespace detail

// 32 random bits for element `offset` of the stream `seed` (see the file comment).
QNUM_HD std::uint32_t random_bits(std::uint64_t seed, std::uint64_t offset) {
  return detail::random_block(seed, offset >> 2).v[offset & 3u];
}
// random_bits(seed, offset + e) for e = 0..3: one Philox block where offset % 4 == 0 (its four words, in order),
// else four. The same bits as four calls of random_bits.
QNUM_HD void random_bits4(std::uint64_t seed, std::uint64_t offset, std::uint32_t (&out)[4]) {
  if ((offset & 3u) == 0u) {
    const philox_result r = detail::random_block(seed, offset >> 2);
    for (int e = 0; e < 4; ++e) out[e] = r.v[e];
  } else {
    for (int e = 0; e < 4; ++e) out[e] = random_bits(seed, offset + static_cast<std::uint64_t>(e));
  }
}

QNUM_END_NAMESPACE
