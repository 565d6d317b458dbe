// tests/test_codec_exhaustive.cpp: all 2^32 float32 bit patterns through every encode that CUDA's
// host conversions define and through the host SIMD lanes, compared bit for bit; plus round_to_int against
// nearbyint. One sweep on all hardware threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_reference.hpp"
#include "qnum/codec.hpp"
#include "qnum/host/simd.hpp"
#include "test_util.hpp"

namespace {

// Calls block(u0) for u0 = 0, step, 2 step, ... below 2^32 (step a power of two) on all hardware threads, each
// taking the next block when it is done with one: the blocks differ in cost (NaN blocks, the UE4M3 lanes of the
// non-negative half) and other tests share the cores, so fixed halves can leave one core idle at the end.
template <class Block>
void sweep_blocks(std::uint64_t step, Block block) {
  const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  const std::uint64_t blocks = (std::uint64_t{1} << 32) / step;
  std::atomic<std::uint64_t> next{0};
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([&] {
      for (std::uint64_t i = next++; i < blocks; i = next++) block(i * step);
    });
  }
  for (auto& th : pool) th.join();
}

// One sweep of every float32 input, in blocks of 2^16 on all hardware threads. Each element's qnum
// conversions are computed once and compared with every reference that exists here: nearbyint, CUDA's host
// conversions (where the toolkit's headers are found) and the host SIMD lanes of every target this CPU has
// (their bf16 rounding also by AVX512-BF16's conversion where the CPU has it). Each comparison family keeps
// its own count and prints its first mismatches.
constexpr std::int64_t sweep_block = 1 << 16;

enum family : int {
  f_round_to_int,
#if QNUM_TEST_HAVE_CUDA_HEADERS
  f_cuda_e4m3,
  f_cuda_e5m2,
  f_cuda_e2m1,
  f_cuda_e8m0,
  f_cuda_bf16_fp16,
#endif
#if QNUM_HOST_SIMD
  f_lanes,
#endif
  f_count
};
constexpr const char* family_name[f_count] = {
    "round_to_int == nearbyint (|x| < 2^31)",
#if QNUM_TEST_HAVE_CUDA_HEADERS
    "fp8 e4m3, rne, satfinite and nosat == CUDA",
    "fp8 e5m2, rne, satfinite and nosat == CUDA",
    "fp4 e2m1, rne and rtz == CUDA",
    "e8m0, rtz and raz, satfinite and nosat == CUDA",
    "bf16 and fp16 rne == CUDA (NaN: 0x7FC0, 0x7E00)",
#endif
#if QNUM_HOST_SIMD
    "host SIMD lanes (e4m3/e5m2/e2m1 codes and values, bf16 nosat/satfinite, fp16, ue4m3 scales) == codec, every target",
#endif
};

struct counts {
  std::uint64_t n[f_count] = {};
};

// The per-element codec over one block, kept for the lanes' comparison.
struct scalar_block {
  std::vector<float> x = std::vector<float>(sweep_block);
  std::vector<std::uint8_t> a = std::vector<std::uint8_t>(sweep_block), e = a, f = a;
  std::vector<std::uint16_t> h = std::vector<std::uint16_t>(sweep_block), hs = h, hp = h;
  std::vector<float> va = std::vector<float>(sweep_block), ve = va, vf = va;  // decode(encode(x)) of the three
  std::vector<std::uint8_t> u4 = std::vector<std::uint8_t>(sweep_block);  // encode<ue4m3>(x, rne, satfinite), x >= 0
  std::vector<float> vu4 = std::vector<float>(sweep_block);               // its value
  std::vector<std::uint32_t> nan;  // the indices of the NaN inputs
};
// The blocks of non-negative inputs (sign bit clear): the UE4M3 scale lanes' domain.
bool non_negative_block(std::uint64_t u0) { return u0 < 0x80000000u; }

#if QNUM_HOST_SIMD
struct lane_block {
  std::vector<std::uint8_t> a = std::vector<std::uint8_t>(sweep_block), e = a, f = a;
  std::vector<std::uint16_t> h = std::vector<std::uint16_t>(sweep_block), hs = h, hp = h, hc = h;
  std::vector<float> va = std::vector<float>(sweep_block), ve = va, vf = va;
  std::vector<std::uint8_t> u4 = std::vector<std::uint8_t>(sweep_block);
  std::vector<float> vu4 = std::vector<float>(sweep_block);
};
// The lanes of target t over b.x (bf16 also by AVX512-BF16's conversion where `convert`, into l.hc).
void run_lanes(qnum::simd_target t, bool convert, bool non_negative, const scalar_block& b, lane_block& l) {
  auto run = [&](auto eng) {
    using E = decltype(eng);
    E::template encode_row<qnum::fp8_e4m3>(b.x.data(), sweep_block, l.a.data());
    E::template encode_row<qnum::fp8_e5m2>(b.x.data(), sweep_block, l.e.data());
    E::template encode_row<qnum::fp4_e2m1>(b.x.data(), sweep_block, l.f.data());
    E::bf16_row(b.x.data(), sweep_block, l.h.data(), false);
    E::bf16_row(b.x.data(), sweep_block, l.hs.data(), true);
    E::bf16_row(b.x.data(), sweep_block, l.hc.data(), false, convert);
    E::fp16_row(b.x.data(), sweep_block, l.hp.data());  // defined for non-NaN inputs
    E::template value_row<qnum::fp8_e4m3>(b.x.data(), sweep_block, l.va.data());  // likewise
    E::template value_row<qnum::fp8_e5m2>(b.x.data(), sweep_block, l.ve.data());
    E::template value_row<qnum::fp4_e2m1>(b.x.data(), sweep_block, l.vf.data());
    if (non_negative) E::ue4m3_row(b.x.data(), sweep_block, l.u4.data(), l.vu4.data());  // defined for x >= 0, not NaN
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
}
std::vector<qnum::simd_target> lane_targets() {
  std::vector<qnum::simd_target> targets;
  for (auto t : {qnum::simd_target::sse2, qnum::simd_target::avx2, qnum::simd_target::avx512, qnum::simd_target::neon})
    if (qnum::detail::simd::target_supported(t)) targets.push_back(t);
  return targets;
}
#endif

}  // namespace

TEST_CASE("every float32 input: round_to_int, CUDA's host conversions, the host SIMD lanes of every target") {
  using namespace qnum;
  std::mutex m;
  counts total;
  int printed[f_count] = {};
  auto report = [&](family fam, std::uint32_t u, const char* detail) {
    std::lock_guard<std::mutex> lock(m);
    if (printed[fam]++ < 3) std::printf("%s: mismatch at 0x%08x%s\n", family_name[fam], static_cast<unsigned>(u), detail);
  };
#if QNUM_HOST_SIMD
  const std::vector<simd_target> targets = lane_targets();
  const bool convert = detail::simd::cpu_has_bf16_convert();
#endif
  sweep_blocks(sweep_block, [&](std::uint64_t u0) {
    thread_local scalar_block b;
    counts c;
    b.nan.clear();
    for (std::size_t k = 0; k < static_cast<std::size_t>(sweep_block); ++k) {
      const std::uint32_t u = static_cast<std::uint32_t>(u0 + k);
      const float x = qtest::from_bits(u);
      b.x[k] = x;
      if (std::isnan(x)) b.nan.push_back(static_cast<std::uint32_t>(k));
      const auto a = encode<fp8_e4m3>(x, rne, satfinite), e = encode<fp8_e5m2>(x, rne, satfinite);
      const auto f = encode<fp4_e2m1>(x, rne, satfinite);
      const std::uint16_t h = to_bf16(x), hp = to_fp16(x);
      b.a[k] = static_cast<std::uint8_t>(a);
      b.e[k] = static_cast<std::uint8_t>(e);
      b.f[k] = static_cast<std::uint8_t>(f);
      b.h[k] = h;
      b.hs[k] = static_cast<std::uint16_t>(encode<bf16>(x, rne, satfinite));
      b.hp[k] = hp;
      b.va[k] = decode<fp8_e4m3>(a);
      b.ve[k] = decode<fp8_e5m2>(e);
      b.vf[k] = decode<fp4_e2m1>(f);
      if (non_negative_block(u0)) {
        const auto u4 = encode<ue4m3>(x, rne, satfinite);
        b.u4[k] = static_cast<std::uint8_t>(u4);
        b.vu4[k] = decode<ue4m3>(u4);
      }
      auto count = [&](family fam, bool ok) {
        if (ok) return;
        ++c.n[fam];
        report(fam, u, "");
      };
      if (std::fabs(x) < 2147483648.0f) count(f_round_to_int, round_to_int(x) == static_cast<int>(std::nearbyint(x)));
#if QNUM_TEST_HAVE_CUDA_HEADERS
      count(f_cuda_e4m3, a == qtest::cuda_ref<fp8_e4m3, true>::rne(x) &&
                             encode<fp8_e4m3>(x, rne, nosat) == qtest::cuda_ref<fp8_e4m3, false>::rne(x));
      count(f_cuda_e5m2, e == qtest::cuda_ref<fp8_e5m2, true>::rne(x) &&
                             encode<fp8_e5m2>(x, rne, nosat) == qtest::cuda_ref<fp8_e5m2, false>::rne(x));
      count(f_cuda_e2m1, f == qtest::cuda_ref<fp4_e2m1, true>::rne(x) &&
                             encode<fp4_e2m1>(x, rtz) == qtest::cuda_ref<fp4_e2m1, true>::rtz(x));
      count(f_cuda_e8m0, encode<e8m0>(x, rtz, satfinite) == qtest::cuda_ref<e8m0, true>::rtz(x) &&
                             encode<e8m0>(x, rtz, nosat) == qtest::cuda_ref<e8m0, false>::rtz(x) &&
                             encode<e8m0>(x, raz, satfinite) == qtest::cuda_ref<e8m0, true>::raz(x) &&
                             encode<e8m0>(x, raz, nosat) == qtest::cuda_ref<e8m0, false>::raz(x));
      count(f_cuda_bf16_fp16, std::isnan(x) ? h == 0x7FC0 && hp == 0x7E00
                                            : h == qtest::cuda_bf16_rn(x) && hp == qtest::cuda_fp16_rn(x));
#endif
    }
#if QNUM_HOST_SIMD
    thread_local lane_block l;
    auto same = [](const auto& p, const auto& q) { return std::memcmp(p.data(), q.data(), p.size() * sizeof p[0]) == 0; };
    for (simd_target t : targets) {
      const bool non_negative = non_negative_block(u0);
      run_lanes(t, convert, non_negative, b, l);
      // fp16 and the value rows are defined for non-NaN inputs only: at NaN inputs the definition's bits are taken.
      for (std::uint32_t k : b.nan) {
        l.hp[k] = b.hp[k];
        l.va[k] = b.va[k];
        l.ve[k] = b.ve[k];
        l.vf[k] = b.vf[k];
        l.u4[k] = b.u4[k];
        l.vu4[k] = b.vu4[k];
      }
      if (same(l.a, b.a) && same(l.e, b.e) && same(l.f, b.f) && same(l.h, b.h) && same(l.hc, b.h) && same(l.hs, b.hs) &&
          same(l.hp, b.hp) && same(l.va, b.va) && same(l.ve, b.ve) && same(l.vf, b.vf) &&
          (!non_negative || (same(l.u4, b.u4) && same(l.vu4, b.vu4))))
        continue;  // the whole block equal, bit for bit; else find and count the elements that differ
      for (std::size_t k = 0; k < static_cast<std::size_t>(sweep_block); ++k) {
        const bool ok = l.a[k] == b.a[k] && l.e[k] == b.e[k] && l.f[k] == b.f[k] && l.h[k] == b.h[k] &&
                        l.hc[k] == b.h[k] && l.hs[k] == b.hs[k] && l.hp[k] == b.hp[k] &&
                        qtest::bits(l.va[k]) == qtest::bits(b.va[k]) && qtest::bits(l.ve[k]) == qtest::bits(b.ve[k]) &&
                        qtest::bits(l.vf[k]) == qtest::bits(b.vf[k]) &&
                        (!non_negative || (l.u4[k] == b.u4[k] && qtest::bits(l.vu4[k]) == qtest::bits(b.vu4[k])));
        if (ok) continue;
        ++c.n[f_lanes];
        char target[32];
        std::snprintf(target, sizeof target, " (%s)", simd_target_name(t));
        report(f_lanes, static_cast<std::uint32_t>(u0 + k), target);
      }
    }
#endif
    std::lock_guard<std::mutex> lock(m);
    for (int i = 0; i < f_count; ++i) total.n[i] += c.n[i];
  });
  for (int i = 0; i < f_count; ++i) {
    INFO(family_name[i]);
    CHECK(total.n[i] == 0);
  }
#if QNUM_HOST_SIMD
  CHECK(std::find(targets.begin(), targets.end(), detail::simd::best_target()) != targets.end());
#endif
}

#if !QNUM_TEST_HAVE_CUDA_HEADERS
TEST_CASE("CUDA toolkit headers absent: the 2^32 comparison with CUDA's conversions is compiled out") {
  MESSAGE("no cuda_fp8.h: install the CUDA toolkit to run the exhaustive CUDA comparison");
}
#endif
