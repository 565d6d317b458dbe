// tests/test_codec_exhaustive.cpp: all 2^32 float32 bit patterns through every encode that CUDA's
// host conversions define, compared bit for bit; plus round_to_int against nearbyint. Two threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "cuda_reference.hpp"
#include "qnum/codec.hpp"
#include "qnum/host/simd.hpp"
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
// The host fast path's lanes (host/simd.hpp) against the per-element codec, which the cases
// below hold to CUDA: float element codes (RNE, satfinite), the bf16 output rounding (overflow to Inf;
// also by AVX512-BF16's conversion where the CPU has it), the bf16 residual rounding (satfinite) and the
// fp16 rounding of GGUF scales (non-NaN inputs), under every instruction set this CPU has (the scalar
// references are computed once per block and compared with each target's lanes).
TEST_CASE("host SIMD lanes: e4m3/e5m2/e2m1 codes, bf16 rounding (nosat, satfinite) and fp16 rounding equal the codec on all 2^32 inputs, every target") {
  std::vector<qnum::simd_target> targets;
  for (auto t : {qnum::simd_target::sse2, qnum::simd_target::avx2, qnum::simd_target::avx512, qnum::simd_target::neon})
    if (qnum::detail::simd::target_supported(t)) targets.push_back(t);
  constexpr std::int64_t block = 1 << 16;
  struct buffers {  // one set per thread, reused for every block
    std::vector<float> x = std::vector<float>(block);
    std::vector<std::uint8_t> ra = std::vector<std::uint8_t>(block), re = ra, rf = ra, a = ra, e = ra, f = ra;
    std::vector<std::uint16_t> rh = std::vector<std::uint16_t>(block), rs = rh, rp = rh, h = rh, hs = rh, hp = rh, hc = rh;
  };
  const bool convert = qnum::detail::simd::cpu_has_bf16_convert();
  // The lanes of target t over b.x into b.a, b.e, b.f, b.h, b.hs, b.hp, and b.hc (the bf16 rounding by
  // AVX512-BF16's conversion where the CPU has it and the target uses it, else the same as b.h).
  auto run_lanes = [convert](qnum::simd_target t, buffers& b) {
    auto run = [&](auto eng) {
      using E = decltype(eng);
      E::template encode_row<qnum::fp8_e4m3>(b.x.data(), block, b.a.data());
      E::template encode_row<qnum::fp8_e5m2>(b.x.data(), block, b.e.data());
      E::template encode_row<qnum::fp4_e2m1>(b.x.data(), block, b.f.data());
      E::bf16_row(b.x.data(), block, b.h.data(), false);
      E::bf16_row(b.x.data(), block, b.hs.data(), true);
      E::bf16_row(b.x.data(), block, b.hc.data(), false, convert);
      E::fp16_row(b.x.data(), block, b.hp.data());  // defined for non-NaN inputs
    };
    switch (t) {
#if defined(__x86_64__)
      case qnum::simd_target::sse2: run(qnum::detail::simd::sse2::engine{}); break;
      case qnum::simd_target::avx2: run(qnum::detail::simd::avx2::engine{}); break;
      case qnum::simd_target::avx512: run(qnum::detail::simd::avx512::engine{}); break;
#else
      case qnum::simd_target::neon: run(qnum::detail::simd::neon::engine{}); break;
#endif
      default: break;
    }
  };
  const std::uint64_t mismatches = sweep_blocks(block, [&](std::uint64_t u0, bool print) -> std::uint64_t {
    thread_local buffers b;
    for (std::size_t k = 0; k < static_cast<std::size_t>(block); ++k) {
      const float x = qtest::from_bits(static_cast<std::uint32_t>(u0 + k));
      b.x[k] = x;
      b.ra[k] = static_cast<std::uint8_t>(qnum::encode<qnum::fp8_e4m3>(x, qnum::rne, qnum::satfinite));
      b.re[k] = static_cast<std::uint8_t>(qnum::encode<qnum::fp8_e5m2>(x, qnum::rne, qnum::satfinite));
      b.rf[k] = static_cast<std::uint8_t>(qnum::encode<qnum::fp4_e2m1>(x, qnum::rne, qnum::satfinite));
      b.rh[k] = qnum::to_bf16(x);
      b.rs[k] = static_cast<std::uint16_t>(qnum::encode<qnum::bf16>(x, qnum::rne, qnum::satfinite));
      b.rp[k] = qnum::to_fp16(x);
    }
    std::uint64_t bad = 0;
    for (qnum::simd_target t : targets) {
      run_lanes(t, b);
      for (std::size_t k = 0; k < static_cast<std::size_t>(block); ++k) {
        const bool ok = b.a[k] == b.ra[k] && b.e[k] == b.re[k] && b.f[k] == b.rf[k] && b.h[k] == b.rh[k] &&
                        b.hc[k] == b.rh[k] && b.hs[k] == b.rs[k] && (b.hp[k] == b.rp[k] || std::isnan(b.x[k]));
        if (!ok && print && bad == 0)
          std::printf("host lanes (%s): mismatch at 0x%08x\n", qnum::simd_target_name(t), static_cast<unsigned>(u0 + k));
        bad += !ok;
      }
    }
    return bad;
  });
  CHECK(std::find(targets.begin(), targets.end(), qnum::detail::simd::best_target()) != targets.end());
  CHECK(mismatches == 0);
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
