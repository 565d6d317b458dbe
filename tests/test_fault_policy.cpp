// tests/test_fault_policy.cpp: the element codecs' fault policies of docs/reliability.md, one test
// case per policy, exact codes asserted (each row of the doc names its case here).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "qnum/codec.hpp"
#include "test_util.hpp"

using qtest::from_bits;

namespace {
const float kNaN = from_bits(0x7FC00000u);
const float kInf = INFINITY;
}  // namespace

TEST_CASE("fault policy: zero inputs keep their sign where the format has -0") {
  using namespace qnum;
  CHECK(encode<fp8_e4m3>(0.0f) == 0x00);
  CHECK(encode<fp8_e4m3>(-0.0f) == 0x80);
  CHECK(encode<fp8_e5m2>(-0.0f) == 0x80);
  CHECK(encode<fp4_e2m1>(-0.0f) == 0x8);
  CHECK(to_bf16(-0.0f) == 0x8000);
  CHECK(to_fp16(-0.0f) == 0x8000);
  CHECK(encode<ue4m3>(-0.0f) == 0x00);
  CHECK(encode<qnum::qint4>(-0.0f) == 0x0);
  CHECK(encode<e8m0>(0.0f) == 0x00);  // E8M0 has no zero: 0 gives its smallest value 2^-127
  CHECK(decode<e8m0>(0x00) == std::ldexp(1.0f, -127));
}

TEST_CASE("fault policy: NaN gives the format's NaN code; formats without NaN give 0 (int) or +max (E2M1)") {
  using namespace qnum;
  for (const float n : {kNaN, -kNaN}) {
    CHECK(encode<fp8_e4m3>(n, rne, nosat) == 0x7F);
    CHECK(encode<fp8_e4m3>(n, rtz, satfinite) == 0x7F);
    CHECK(encode<fp8_e5m2>(n) == 0x7F);
    CHECK(encode<ue4m3>(n) == 0x7F);
    CHECK(encode<e8m0>(n, raz) == 0xFF);
    CHECK(encode<fp4_e2m1>(n) == 0x7);
    CHECK(encode<qnum::qint4>(n, stochastic(123u)) == 0x0);
    CHECK(encode<quint8>(n) == 0x00);
    CHECK(quantize_int<qint8>(n) == 0);
  }
}

TEST_CASE("fault policy: +-Inf saturates under satfinite, gives Inf or NaN under nosat") {
  using namespace qnum;
  CHECK(encode<fp8_e4m3>(kInf) == 0x7E);
  CHECK(encode<fp8_e4m3>(-kInf) == 0xFE);
  CHECK(encode<fp8_e4m3>(-kInf, rne, nosat) == 0xFF);
  CHECK(encode<fp8_e5m2>(kInf) == 0x7B);
  CHECK(encode<fp8_e5m2>(kInf, rne, nosat) == 0x7C);
  CHECK(encode<fp4_e2m1>(-kInf, rne, nosat) == 0xF);  // no Inf, no NaN: always saturates
  CHECK(encode<ue4m3>(kInf) == 0x7E);
  CHECK(encode<ue4m3>(-kInf) == 0x00);
  CHECK(encode<ue4m3>(-kInf, rne, nosat) == 0x7F);
  CHECK(encode<e8m0>(-kInf) == 0xFE);  // sign ignored
  CHECK(encode<e8m0>(kInf, rne, nosat) == 0xFF);
  CHECK(to_bf16(kInf) == 0x7F80);
  CHECK(encode<bf16>(kInf) == 0x7F7F);
  CHECK(encode<fp16>(-kInf) == 0xFBFF);
  CHECK(encode<qnum::qint4>(kInf) == 0x7);
  CHECK(encode<qnum::qint4>(-kInf) == 0x8);
}

TEST_CASE("fault policy: a finite input never gives NaN or Inf under satfinite (huge inputs, every mode)") {
  using namespace qnum;
  for (const float x : {3.4028235e38f, -3.4028235e38f, 1e30f, 65520.0f, 61440.0f, 480.0f, 6.5f}) {
    CHECK(std::isfinite(decode<fp8_e4m3>(encode<fp8_e4m3>(x, raz))));
    CHECK(std::isfinite(decode<fp8_e5m2>(encode<fp8_e5m2>(x, raz))));
    CHECK(std::isfinite(decode<fp16>(encode<fp16>(x, raz))));
    CHECK(std::isfinite(decode<bf16>(encode<bf16>(x, raz))));
    CHECK(std::isfinite(decode<ue4m3>(encode<ue4m3>(x, stochastic(0xFFFFFFFFu)))));
    CHECK(std::isfinite(decode<e8m0>(encode<e8m0>(x, raz))));
    CHECK(std::isfinite(decode<fp4_e2m1>(encode<fp4_e2m1>(x, raz))));
  }
}

TEST_CASE("fault policy: overflow is decided after rounding, at the saturation boundary") {
  using namespace qnum;
  // rne: E4M3 464 -> 448, above -> overflow; E5M2 61440 overflows; fp16 65520 overflows; bf16 at 0x7F7F8000.
  CHECK(encode<fp8_e4m3>(464.0f, rne, nosat) == 0x7E);
  CHECK(encode<fp8_e4m3>(std::nextafter(464.0f, 1e9f), rne, nosat) == 0x7F);
  CHECK(encode<fp8_e5m2>(std::nextafter(61440.0f, 0.0f), rne, nosat) == 0x7B);
  CHECK(encode<fp8_e5m2>(61440.0f, rne, nosat) == 0x7C);
  CHECK(to_fp16(std::nextafter(65520.0f, 0.0f)) == 0x7BFF);
  CHECK(to_fp16(65520.0f) == 0x7C00);
  CHECK(to_bf16(from_bits(0x7F7F7FFFu)) == 0x7F7F);
  CHECK(to_bf16(from_bits(0x7F7F8000u)) == 0x7F80);
  // Directed modes: raz overflows just above max, rtz only once the magnitude leaves max's binade slot.
  CHECK(encode<fp8_e4m3>(std::nextafter(448.0f, 1e9f), raz, nosat) == 0x7F);
  CHECK(encode<fp8_e4m3>(479.0f, rtz, nosat) == 0x7E);
  CHECK(encode<fp8_e4m3>(480.0f, rtz, nosat) == 0x7F);
  // satfinite: every one of them is max.
  CHECK(encode<fp8_e4m3>(480.0f, rtz) == 0x7E);
  CHECK(encode<fp8_e5m2>(61440.0f) == 0x7B);
  CHECK(encode<fp16>(65520.0f) == 0x7BFF);
}

TEST_CASE("fault policy: float32 subnormal inputs round at the target's last place") {
  using namespace qnum;
  const float tiny = from_bits(0x00000001u);  // 2^-149
  CHECK(encode<fp8_e4m3>(tiny) == 0x00);
  CHECK(encode<fp8_e4m3>(-tiny) == 0x80);
  CHECK(encode<fp8_e4m3>(tiny, raz) == 0x01);           // smallest subnormal 2^-9
  CHECK(encode<fp8_e4m3>(tiny, stochastic(0xFFFFFFFFu)) == 0x00);  // F = floor(2^-140 * 2^32) = 0
  CHECK(to_bf16(from_bits(0x00010000u)) == 0x0001);     // bf16 keeps float32's subnormal range
  CHECK(to_bf16(from_bits(0x00008000u)) == 0x0000);     // tie to even
  CHECK(to_bf16(from_bits(0x00018000u)) == 0x0002);
  CHECK(encode<e8m0>(from_bits(0x00400000u)) == 0x00);  // 2^-127 exactly
  CHECK(encode<e8m0>(from_bits(0x00200000u)) == 0x00);  // 2^-128: below the range, clamps to 2^-127
}

TEST_CASE("fault policy: scales that underflow in their storage type (fp16, bf16, UE4M3, E8M0)") {
  using namespace qnum;
  // fp16: smallest subnormal 2^-24; 2^-25 ties to 0 under rne, raz keeps any positive scale non-zero.
  CHECK(encode<fp16>(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(encode<fp16>(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(encode<fp16>(std::ldexp(1.0f, -40), raz) == 0x0001);
  CHECK(encode<fp16>(std::ldexp(1.0f, -40), rtz) == 0x0000);
  // bf16: smallest subnormal 2^-133.
  CHECK(encode<bf16>(std::ldexp(1.0f, -134)) == 0x0000);
  CHECK(encode<bf16>(std::ldexp(1.5f, -134)) == 0x0001);
  CHECK(encode<bf16>(std::ldexp(1.0f, -149), raz) == 0x0001);
  // UE4M3 (NVFP4 scale): smallest subnormal 2^-9, 2^-10 ties to 0.
  CHECK(encode<ue4m3>(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(encode<ue4m3>(std::ldexp(1.5f, -10)) == 0x01);
  CHECK(encode<ue4m3>(std::ldexp(1.0f, -20), raz) == 0x01);
  CHECK(decode<ue4m3>(0x01) == std::ldexp(1.0f, -9));
  // E8M0: never zero; anything below 2^-127 (and 0) gives 2^-127, in every mode.
  CHECK(encode<e8m0>(std::ldexp(1.0f, -140), rtz) == 0x00);
  CHECK(encode<e8m0>(std::ldexp(1.0f, -140), raz) == 0x00);
  CHECK(encode<e8m0>(std::ldexp(1.0f, -140), stochastic(0xFFFFFFFFu)) == 0x00);
  CHECK(decode<e8m0>(0x00) > 0.0f);
}
