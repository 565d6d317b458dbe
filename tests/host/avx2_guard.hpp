// tests/host/avx2_guard.hpp: included by test programs with code built for AVX2 + FMA (QNUM_TEST_SKIP_WITHOUT_AVX2):
// on a CPU without them, print why and exit 77 (meson's SKIP) before any test runs.
#pragma once

#if defined(QNUM_TEST_SKIP_WITHOUT_AVX2)
#include <cstdio>
#include <cstdlib>
namespace qtest {
inline const bool avx2_present = [] {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("CPU without AVX2/FMA: skipped\n");
    std::exit(77);
  }
  return true;
}();
}  // namespace qtest
#endif
