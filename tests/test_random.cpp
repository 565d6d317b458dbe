// tests/test_random.cpp: Philox4x32-10 against known-answer vectors produced by randomgen.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <sstream>
#include <string>

#include "qnum/random.hpp"
#include "test_util.hpp"

TEST_CASE("philox4x32-10 known-answer vectors (randomgen)") {
  std::stringstream ss(qtest::read_text(qtest::data_path("philox_kat.txt")));
  std::string line;
  int n = 0;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ls(line);
    std::uint32_t w[10];
    for (auto& v : w) {
      std::string t;
      ls >> t;
      v = static_cast<std::uint32_t>(std::stoul(t, nullptr, 16));
    }
    const auto r = qnum::philox4x32(w[0], w[1], w[2], w[3], w[4], w[5]);
    for (int i = 0; i < 4; ++i) CHECK(r.v[i] == w[6 + i]);
    ++n;
  }
  CHECK(n >= 5);
}

TEST_CASE("random_bits: stream layout and independence of (seed, offset)") {
  const auto r = qnum::philox4x32(3, 0, 0, 0, 0x11, 0x22);
  for (int i = 0; i < 4; ++i) CHECK(qnum::random_bits(0x2200000011ull, 12 + i) == r.v[i]);
  const auto hi = qnum::philox4x32(0, 1, 0, 0, 5, 0);
  CHECK(qnum::random_bits(5, (1ull << 34) + 2) == hi.v[2]);
  // Different seeds give different streams; a stream has no short repeats.
  std::set<std::uint32_t> seen;
  for (std::uint64_t i = 0; i < 4096; ++i) seen.insert(qnum::random_bits(1, i));
  CHECK(seen.size() > 4090);
  CHECK(qnum::random_bits(1, 0) != qnum::random_bits(2, 0));
}

TEST_CASE("random_bits4: the four words of random_bits, one Philox block at aligned offsets") {
  const std::uint64_t seeds[3] = {0, 0x2200000011ull, 0xFFFFFFFFFFFFFFFFull};
  const std::uint64_t bases[4] = {0, 12, (1ull << 34) + 4, 0xFFFFFFFFFFFFFFF0ull};
  for (const std::uint64_t seed : seeds) {
    for (const std::uint64_t base : bases) {
      for (std::uint64_t k = 0; k < 8; ++k) {  // aligned (k % 4 == 0) and not
        const std::uint64_t off = base + k;
        std::uint32_t w[4];
        qnum::random_bits4(seed, off, w);
        for (int e = 0; e < 4; ++e) CHECK(w[e] == qnum::random_bits(seed, off + static_cast<std::uint64_t>(e)));
      }
    }
  }
  // An aligned call is the block's words in order (a mutation that permutes them fails here).
  std::uint32_t w[4];
  qnum::random_bits4(0x2200000011ull, 12, w);
  const auto r = qnum::philox4x32(3, 0, 0, 0, 0x11, 0x22);
  for (int i = 0; i < 4; ++i) CHECK(w[i] == r.v[i]);
}
