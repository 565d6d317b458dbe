// tests/test_util.hpp: helpers shared by the host tests (golden-file reading, bit comparison).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "qnum/detail/bits.hpp"
#include "qnum/scale.hpp"

#ifndef QNUM_TEST_DATA_DIR
#error "QNUM_TEST_DATA_DIR must name tests/data"
#endif

namespace qtest {

inline std::string data_path(const std::string& name) { return std::string(QNUM_TEST_DATA_DIR) + "/" + name; }

inline std::vector<unsigned char> read_file(const std::string& name) {
  std::ifstream f(data_path(name), std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Little-endian reader over a byte buffer.
struct reader {
  const std::vector<unsigned char>& b;
  std::size_t pos = 0;
  template <class T>
  T get() {
    T v{};
    for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | (static_cast<T>(b.at(pos + i)) << (8 * i)));
    pos += sizeof(T);
    return v;
  }
};

// The statistics of one group holding NaN, +Inf, -Inf and the finite 0.5, -0.25 and 0.125: the set-up of the
// non-finite policy tests (NaN and Inf are ignored by accumulate).
inline qnum::group_stats nan_inf_group_stats() {
  const float xs[] = {0.5f, -0.25f, std::nanf(""), HUGE_VALF, -HUGE_VALF, 0.125f};
  qnum::group_stats st;
  for (float x : xs) qnum::accumulate(st, x);
  return st;
}

inline std::uint32_t bits(float x) { return qnum::detail::float_to_bits(x); }
inline float from_bits(std::uint32_t u) { return qnum::detail::bits_to_float(u); }

inline std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// One case of tests/data/groupquant.bin (tools/gen_golden.py, section groupquant): a rows x cols tensor
// quantized with gr x gc groups (gr == 0: one row), input fp32 (in_type 0) or bf16 (1), and the reference's
// arrays by tag ("x", "scale", "zero", "q", "dq", "fq", "dx", ...) as u32 words (floats as fp32 bits).
struct gq_case {
  std::string name;
  std::uint32_t rows, cols, gr, gc, in_type;
  std::map<std::string, std::vector<std::uint32_t>> a;
};

// Parses groupquant.bin: b"QGV1", u32 ncases, then per case u32 len + name, u32 rows, cols, group_rows,
// group_cols, in_type, u32 narrays, per array u32 len + tag, u32 count, u32 words[count]. Returns no cases
// when the bytes are not a QGV1 file (the caller checks the file, or fails on the missing case).
inline std::vector<gq_case> parse_groupquant(const std::vector<unsigned char>& b) {
  std::vector<gq_case> out;
  if (b.size() <= 8 || std::memcmp(b.data(), "QGV1", 4) != 0) return out;
  reader rd{b, 4};
  const std::uint32_t n = rd.get<std::uint32_t>();
  auto str = [&] {
    const std::uint32_t l = rd.get<std::uint32_t>();
    std::string s(b.begin() + static_cast<long>(rd.pos), b.begin() + static_cast<long>(rd.pos + l));
    rd.pos += l;
    return s;
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    gq_case c;
    c.name = str();
    c.rows = rd.get<std::uint32_t>(); c.cols = rd.get<std::uint32_t>(); c.gr = rd.get<std::uint32_t>();
    c.gc = rd.get<std::uint32_t>(); c.in_type = rd.get<std::uint32_t>();
    const std::uint32_t na = rd.get<std::uint32_t>();
    for (std::uint32_t k = 0; k < na; ++k) {
      std::string tag = str();
      const std::uint32_t cnt = rd.get<std::uint32_t>();
      std::vector<std::uint32_t> v(cnt);
      for (auto& w : v) w = rd.get<std::uint32_t>();
      c.a[tag] = std::move(v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The case `name` of cases; a missing one fails the test case (FAIL ends it, the return is never reached).
inline const gq_case& find_case(const std::vector<gq_case>& cases, std::string_view name) {
  for (const auto& c : cases)
    if (c.name == name) return c;
  FAIL("missing golden case " << name);
  return cases.front();
}

}  // namespace qtest
