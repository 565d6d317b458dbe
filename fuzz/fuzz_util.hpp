// fuzz/fuzz_util.hpp: what every qnum fuzz target shares: a byte reader, property checks that abort
// with a message, and a per-property count of the inputs checked (printed at exit).
//
// A target defines LLVMFuzzerTestOneInput and states each property with
//   QNUM_FUZZ_PROPERTY("group/name", condition, "printf format", args...);
// which counts one checked input for that property and, when the condition is false, prints the
// property, the location and the message, then aborts (libFuzzer saves the input as a crash).
// The same target links against libFuzzer (clang, -Dfuzz=enabled) or against replay_main.cpp (any
// compiler: the committed corpus replayed as a regression test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qnum_fuzz {

// Reads fixed-size values from the fuzzer's bytes; past the end it reads zeros.
class input {
 public:
  input(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  template <class T>
  T take() {
    unsigned char buf[sizeof(T)] = {};
    const std::size_t k = n_ < sizeof(T) ? n_ : sizeof(T);
    if (k != 0) std::memcpy(buf, p_, k);
    p_ += k;
    n_ -= k;
    T v;
    std::memcpy(&v, buf, sizeof(T));
    return v;
  }
  std::size_t remaining() const { return n_; }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

// fp32 <-> bit pattern.
inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

struct property_count {
  const char* name;
  unsigned long long count;
};

inline property_count* property_table() {
  static property_count table[128];
  return table;
}
inline int& property_table_size() {
  static int n = 0;
  return n;
}

inline void print_property_counts() {
  for (int i = 0; i < property_table_size(); ++i) {
    std::fprintf(stderr, "qnum-fuzz property %s: %llu\n", property_table()[i].name, property_table()[i].count);
  }
}

// The counter of the property called `name` (one per name, shared by every template instance).
inline unsigned long long& property_counter(const char* name) {
  for (int i = 0; i < property_table_size(); ++i) {
    if (std::strcmp(property_table()[i].name, name) == 0) return property_table()[i].count;
  }
  if (property_table_size() == 0) std::atexit(print_property_counts);
  if (property_table_size() == 128) {
    std::fprintf(stderr, "qnum-fuzz: more than 128 properties\n");
    std::abort();
  }
  property_count& p = property_table()[property_table_size()++];
  p.name = name;
  p.count = 0;
  return p.count;
}

}  // namespace qnum_fuzz

#define QNUM_FUZZ_PROPERTY(name, cond, ...)                                                        \
  do {                                                                                             \
    static unsigned long long& qnum_fuzz_counter_ = ::qnum_fuzz::property_counter(name);           \
    ++qnum_fuzz_counter_;                                                                          \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "qnum-fuzz: property %s violated at %s:%d: %s\n  ", name, __FILE__,     \
                   __LINE__, #cond);                                                               \
      std::fprintf(stderr, __VA_ARGS__);                                                           \
      std::fputc('\n', stderr);                                                                    \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)
