// tests/test_codec_exhaustive.cpp: all 2^32 float32 bit patterns through every encode that CUDA's
// host conversions define, compared bit for bit; plus round_to_int against nearbyint. Two threads.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "cuda_reference.hpp"
#include "qnum/codec.hpp"
#include "qnum/detail/host_simd.hpp"
#include "test_util.hpp"

namespace {

// Calls block(u0, print) for u0 = 0, step, 2 step, ... below 2^32 (step a power of two) on all hardware
// threads; block checks [u0, u0 + step), returns its mismatch count and prints them while `print` (fewer
// than 3 so far in its thread). Returns the total.
template <class Block>
std::uint64_t sweep_blocks(std::uint64_t step, Block block) {
  const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> bad{0};
  std::vector<std::thread> pool;
  const std::uint64_t blocks = (std::uint64_t{1} << 32) / step;
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      std::uint64_t local = 0;
      for (std::uint64_t i = blocks * t / nt; i < blocks * (t + 1) / nt; ++i) local += block(i * step, local < 3);
      bad += local;
    });
  }
  for (auto& th : pool) th.join();
  return bad.load();
}

// Runs check(u) for every u in [0, 2^32); returns the mismatch count and prints the first few.
template <class Check>
std::uint64_t sweep_all(const char* what, Check check) {
  return sweep_blocks(1, [&](std::uint64_t u, bool print) -> std::uint64_t {
    if (check(static_cast<std::uint32_t>(u))) return 0;
    if (print) std::printf("%s: mismatch at 0x%08x\n", what, static_cast<unsigned>(u));
    return 1;
  });
}

}  // namespace

TEST_CASE("round_to_int equals nearbyint on every float below 2^31") {
  CHECK(sweep_all("round_to_int", [](std::uint32_t u) {
          const float x = qtest::from_bits(u);
          if (!(std::fabs(x) < 2147483648.0f)) return true;
          return qnum::round_to_int(x) == static_cast<int>(std::nearbyint(x));
        }) == 0);
}

#if QNUM_HOST_SIMD
// The host fast path's lanes (quantize_tensor.hpp) against the per-element codec, which the cases
// below hold to CUDA: float element codes (RNE, satfinite), the bf16 output rounding (overflow to Inf)
// and the bf16 residual rounding (satfinite).
TEST_CASE("host SIMD lanes: e4m3/e5m2/e2m1 codes and bf16 rounding (nosat, satfinite) equal the codec on all 2^32 inputs") {
  namespace s = qnum::detail::simd;
  CHECK(sweep_blocks(s::lanes, [](std::uint64_t u, bool print) -> std::uint64_t {
          s::vu b;
          for (int l = 0; l < s::lanes; ++l) b[l] = static_cast<std::uint32_t>(u + static_cast<std::uint64_t>(l));
          const s::vf v = s::bit_cast<s::vf>(b);
          const s::vi a = s::float_code_lane<qnum::fp8_e4m3>(v), e = s::float_code_lane<qnum::fp8_e5m2>(v),
                      f = s::float_code_lane<qnum::fp4_e2m1>(v);
          std::uint16_t h[s::lanes], hs[s::lanes];
          s::store(h, v);
          s::store_satfinite(hs, v);
          std::uint64_t bad = 0;
          for (int l = 0; l < s::lanes; ++l) {
            const float x = v[l];
            const bool ok = static_cast<std::uint32_t>(a[l]) == qnum::encode<qnum::fp8_e4m3>(x, qnum::rne, qnum::satfinite) &&
                            static_cast<std::uint32_t>(e[l]) == qnum::encode<qnum::fp8_e5m2>(x, qnum::rne, qnum::satfinite) &&
                            static_cast<std::uint32_t>(f[l]) == qnum::encode<qnum::fp4_e2m1>(x, qnum::rne, qnum::satfinite) &&
                            h[l] == qnum::to_bf16(x) && hs[l] == qnum::encode<qnum::bf16>(x, qnum::rne, qnum::satfinite);
            if (!ok && print && bad == 0) std::printf("host lanes: mismatch at 0x%08x\n", static_cast<unsigned>(b[l]));
            bad += !ok;
          }
          return bad;
        }) == 0);
}
#endif

#if QNUM_TEST_HAVE_CUDA_HEADERS
using namespace qnum;

TEST_CASE("fp8 e4m3 and e5m2, both saturation modes, all 2^32 inputs") {
  CHECK(sweep_all("e4m3", [](std::uint32_t u) {
          const float x = qtest::from_bits(u);
          return encode<fp8_e4m3>(x, rne, satfinite) == qtest::cuda_ref<fp8_e4m3, true>::rne(x) &&
                 encode<fp8_e4m3>(x, rne, nosat) == qtest::cuda_ref<fp8_e4m3, false>::rne(x);
        }) == 0);
  CHECK(sweep_all("e5m2", [](std::uint32_t u) {
          const float x = qtest::from_bits(u);
          return encode<fp8_e5m2>(x, rne, satfinite) == qtest::cuda_ref<fp8_e5m2, true>::rne(x) &&
                 encode<fp8_e5m2>(x, rne, nosat) == qtest::cuda_ref<fp8_e5m2, false>::rne(x);
        }) == 0);
}

TEST_CASE("fp4 e2m1 rne and rtz, all 2^32 inputs") {
  CHECK(sweep_all("e2m1", [](std::uint32_t u) {
          const float x = qtest::from_bits(u);
          return encode<fp4_e2m1>(x, rne) == qtest::cuda_ref<fp4_e2m1, true>::rne(x) &&
                 encode<fp4_e2m1>(x, rtz) == qtest::cuda_ref<fp4_e2m1, true>::rtz(x);
        }) == 0);
}

TEST_CASE("e8m0 rtz and raz, both saturation modes, all 2^32 inputs") {
  CHECK(sweep_all("e8m0", [](std::uint32_t u) {
          const float x = qtest::from_bits(u);
          return encode<e8m0>(x, rtz, satfinite) == qtest::cuda_ref<e8m0, true>::rtz(x) &&
                 encode<e8m0>(x, rtz, nosat) == qtest::cuda_ref<e8m0, false>::rtz(x) &&
                 encode<e8m0>(x, raz, satfinite) == qtest::cuda_ref<e8m0, true>::raz(x) &&
                 encode<e8m0>(x, raz, nosat) == qtest::cuda_ref<e8m0, false>::raz(x);
        }) == 0);
}

TEST_CASE("bf16 and fp16 round to nearest even, all 2^32 non-NaN inputs") {
  CHECK(sweep_all("bf16/fp16", [](std::uint32_t u) {
          const float x = qtest::from_bits(u);
          if (std::isnan(x)) return to_bf16(x) == 0x7FC0 && to_fp16(x) == 0x7E00;
          return to_bf16(x) == qtest::cuda_bf16_rn(x) && to_fp16(x) == qtest::cuda_fp16_rn(x);
        }) == 0);
}
#else
TEST_CASE("CUDA toolkit headers absent: the 2^32 reference sweep is compiled out") {
  MESSAGE("no cuda_fp8.h: install the CUDA toolkit to run the exhaustive CUDA comparison");
}
#endif
