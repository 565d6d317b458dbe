// tests/host/mixed_isa_avx2.cpp: the second translation unit of test_mixed_isa, built with -mavx2 -mfma
// -ffp-contract=fast (tests/meson.build).
#include "mixed_isa_body.hpp"

std::vector<std::uint8_t> mixed_isa_avx2_work() { return mixed_isa::work(); }
