// tests/test_util.hpp: helpers shared by the host tests (golden-file reading, bit comparison).
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "qnum/detail/bits.hpp"

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

inline std::uint32_t bits(float x) { return qnum::detail::float_to_bits(x); }
inline float from_bits(std::uint32_t u) { return qnum::detail::bits_to_float(u); }

inline std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace qtest
