// tests/host/test_mixed_isa.cpp: objects built with different instruction-set flags link into one program and
// agree. This file has the project's flags; mixed_isa_avx2.cpp is built with -mavx2 -mfma
// -ffp-contract=fast; where nvcc exists, mixed_isa_cuda.cu is compiled by nvcc. All run the same entry
// points (mixed_isa_body.hpp) under every host SIMD target and with none (the generic loops): every
// result must be the same bytes.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "avx2_guard.hpp"  // the AVX2 object needs AVX2/FMA: exit 77 (skip) without them
#include "mixed_isa_body.hpp"

std::vector<std::uint8_t> mixed_isa_avx2_work();
#if QNUM_TEST_MIXED_CUDA
std::vector<std::uint8_t> mixed_isa_cuda_work();
void* mixed_isa_cuda_kernel();
#endif

TEST_CASE("objects built with and without -mavx2 link together and give the same bits, every target") {
  REQUIRE(qnum::set_host_simd_target(qnum::simd_target::none));
  const std::vector<std::uint8_t> generic = mixed_isa::work();
  REQUIRE(!generic.empty());
  for (auto t : {qnum::simd_target::sse2, qnum::simd_target::avx2, qnum::simd_target::avx512, qnum::simd_target::neon}) {
    if (!qnum::set_host_simd_target(t)) continue;
    const std::string name = qnum::simd_target_name(t);
    CAPTURE(name);
    CHECK(mixed_isa::work() == generic);
    CHECK(mixed_isa_avx2_work() == generic);
#if QNUM_TEST_MIXED_CUDA
    CHECK(mixed_isa_cuda_work() == generic);
#endif
  }
#if QNUM_TEST_MIXED_CUDA
  CHECK(mixed_isa_cuda_kernel() != nullptr);
#endif
}
