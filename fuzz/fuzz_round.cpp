// fuzz/fuzz_round.cpp: property fuzzing of round_to_int (qnum/round.hpp) and of Philox /
// random_bits (qnum/random.hpp).
//
// Input bytes: float x (raw bits), two uint32 random words, a uint64 seed, a uint64 offset, four
// uint32 counter words. Properties:
//   round/nearest     rne == nearbyint(x) (ties to even), for finite |x| < 2^31
//   round/directed    rtz == trunc(x), raz == sign(x) * ceil(|x|)
//   round/order       |rtz| <= |x| <= |raz|
//   round/stochastic  the result is rtz or raz, up exactly when floor(frac(|x|) * 2^32) + r >= 2^32;
//                     r = 0 gives rtz, and the result is monotone in r
//   random/philox     philox4x32 equals an independent reference (Random123's round function,
//                     written with 16-bit limb products), for random counters and keys
//   random/stream     random_bits(seed, offset) is word offset%4 of the block offset/4
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fuzz_util.hpp"
#include "qnum/random.hpp"
#include "qnum/round.hpp"

namespace {

constexpr double two32 = 4294967296.0;

// 32x32 -> 64 product from 16-bit limbs (a different route from qnum's 64-bit multiply).
void ref_mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint32_t a0 = a & 0xFFFFu, a1 = a >> 16, b0 = b & 0xFFFFu, b1 = b >> 16;
  const std::uint32_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const std::uint32_t mid = (p00 >> 16) + (p01 & 0xFFFFu) + (p10 & 0xFFFFu);
  lo = (p00 & 0xFFFFu) | (mid << 16);
  hi = p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16);
}

// Random123 philox4x32 with 10 rounds: ctr = round(ctr, key); key bumped between rounds.
void ref_philox(std::uint32_t ctr[4], std::uint32_t key[2]) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    std::uint32_t hi0, lo0, hi1, lo1;
    ref_mulhilo(0xD2511F53u, ctr[0], hi0, lo0);
    ref_mulhilo(0xCD9E8D57u, ctr[2], hi1, lo1);
    const std::uint32_t out[4] = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    std::memcpy(ctr, out, sizeof out);
  }
}

void check_round(float x, std::uint32_t r1, std::uint32_t r2) {
  if (!std::isfinite(x) || std::fabs(x) >= 2147483648.0f) return;  // outside round_to_int's contract
  std::uint32_t xb;
  std::memcpy(&xb, &x, 4);
  const double d = x, m = std::fabs(d), fl = std::floor(m), cl = std::ceil(m);
  const double sgn = std::signbit(x) ? -1.0 : 1.0;
  const std::int32_t n = qnum::round_to_int(x, qnum::rne);
  const std::int32_t z = qnum::round_to_int(x, qnum::rtz);
  const std::int32_t u = qnum::round_to_int(x, qnum::raz);
  QNUM_FUZZ_PROPERTY("round/nearest", n == static_cast<std::int32_t>(std::nearbyint(d)), "x=0x%08x -> %d", xb, n);
  QNUM_FUZZ_PROPERTY("round/directed", z == static_cast<std::int32_t>(sgn * fl) && u == static_cast<std::int32_t>(sgn * cl),
                     "x=0x%08x -> rtz %d raz %d", xb, z, u);
  QNUM_FUZZ_PROPERTY("round/order", std::fabs(static_cast<double>(z)) <= m && m <= std::fabs(static_cast<double>(u)), "x=0x%08x", xb);
  const std::uint32_t rs[4] = {r1, r2, 0u, 0xFFFFFFFFu};
  const double f32 = std::floor((m - fl) * two32);
  for (const std::uint32_t r : rs) {
    const std::int32_t s = qnum::round_to_int(x, qnum::stochastic(r));
    const bool up = f32 + r >= two32;
    QNUM_FUZZ_PROPERTY("round/stochastic", s == (up ? u : z) && (r != 0 || s == z), "x=0x%08x r=%u -> %d", xb, r, s);
  }
  const std::uint32_t lo = r1 < r2 ? r1 : r2, hi = r1 < r2 ? r2 : r1;
  const std::int32_t slo = qnum::round_to_int(x, qnum::stochastic(lo));
  const std::int32_t shi = qnum::round_to_int(x, qnum::stochastic(hi));
  QNUM_FUZZ_PROPERTY("round/stochastic", slo == z || shi == u, "monotone: x=0x%08x r=%u,%u -> %d,%d", xb, lo, hi, slo, shi);
}

void check_random(std::uint64_t seed, std::uint64_t offset, const std::uint32_t c[4]) {
  std::uint32_t ctr[4] = {c[0], c[1], c[2], c[3]};
  std::uint32_t key[2] = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  ref_philox(ctr, key);
  const qnum::philox_result p = qnum::philox4x32(c[0], c[1], c[2], c[3], static_cast<std::uint32_t>(seed),
                                                 static_cast<std::uint32_t>(seed >> 32));
  QNUM_FUZZ_PROPERTY("random/philox", std::memcmp(p.v, ctr, sizeof ctr) == 0, "seed=%llu", static_cast<unsigned long long>(seed));
  const std::uint64_t block = offset >> 2;
  std::uint32_t bctr[4] = {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u};
  std::uint32_t bkey[2] = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  ref_philox(bctr, bkey);
  QNUM_FUZZ_PROPERTY("random/stream", qnum::random_bits(seed, offset) == bctr[offset & 3u], "seed=%llu offset=%llu",
                     static_cast<unsigned long long>(seed), static_cast<unsigned long long>(offset));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qnum_fuzz::input in(data, size);
  const float x = in.take<float>();
  const std::uint32_t r1 = in.take<std::uint32_t>();
  const std::uint32_t r2 = in.take<std::uint32_t>();
  const std::uint64_t seed = in.take<std::uint64_t>();
  const std::uint64_t offset = in.take<std::uint64_t>();
  std::uint32_t c[4];
  for (std::uint32_t& w : c) w = in.take<std::uint32_t>();
  check_round(x, r1, r2);
  check_random(seed, offset, c);
  return 0;
}
