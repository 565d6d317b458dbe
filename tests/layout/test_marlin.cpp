// tests/layout/test_marlin.cpp: the Marlin weight and scale layouts of qnum/layout/marlin.hpp (marlin::,
// directly and repacked from GPTQ) — bad input statuses, the weight map as a permutation, views (exact
// shapes, row strides), and golden vectors in tests/data/layouts_golden.txt (tools/gen_golden.py --only
// layouts): vLLM cannot be installed there, so they come from an independent numpy statement of the
// layouts read in vLLM's source (marlin_utils_test.py marlin_weights/get_weight_perm, marlin_utils.py
// marlin_permute_scales; see docs/layouts.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "layout_test_util.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/layout/marlin.hpp"
#include "qnum/view.hpp"

using namespace qnum;
using namespace qtest::layout;

TEST_CASE("bad input gives a status (marlin)") {
  std::vector<std::uint8_t> big(64 * 16, 0);
  std::vector<std::uint32_t> mw(2 * 64, 0);
  CHECK(marlin::pack_weight(view(big.data(), 32, 16), view(mw.data(), 1, 64)) == status::bad_shape);  // N % 64
  CHECK(marlin::pack_weight(view(big.data(), 64, 8), view(mw.data(), 0, 128)) == status::bad_shape);  // K % 16
  CHECK(marlin::pack_weight(view(big.data(), 64, 16), view(mw.data(), 1, 128)) == status::ok);
  std::uint16_t s16[64] = {};
  std::uint16_t o16[64];
  CHECK(marlin::permute_scales(view(s16, 64, 1), 64, 32, view(o16, 1, 64)) == status::bad_group);  // G*g != K
}

TEST_CASE("Marlin weights and scales golden (vLLM-documented layout)") {
  int n = 0;
  for (auto [it, end] = golden().equal_range("marlin"); it != end; ++it, ++n) {
    const rec& r = it->second;
    const std::int64_t N = r[0][0], K = r[0][1], g = r[0][2];
    CAPTURE(N);
    CAPTURE(K);
    const auto q = as<std::uint8_t>(r[1]);
    std::vector<std::uint32_t> m(K / 16 * 2 * N);
    REQUIRE(marlin::pack_weight(view(q.data(), N, K), view(m.data(), K / 16, 2 * N)) == status::ok);
    CHECK(m == as<std::uint32_t>(r[2]));
    // via the GPTQ checkpoint layout (gptq_marlin_repack)
    std::vector<std::uint32_t> qw(K / 8 * N), m2(m.size());
    REQUIRE(gptq::pack_qweight(view(q.data(), N, K), 4, view(qw.data(), K / 8, N)) == status::ok);
    REQUIRE(marlin::repack_gptq(view(qw.data(), K / 8, N), view(m2.data(), K / 16, 2 * N)) == status::ok);
    CHECK(m2 == m);
    const auto s = as<std::uint16_t>(r[3]);
    const std::int64_t G = g == -1 ? 1 : K / g;
    std::vector<std::uint16_t> sp(s.size());
    REQUIRE(marlin::permute_scales(view(s.data(), N, G), K, g, view(sp.data(), G, N)) == status::ok);
    CHECK(sp == as<std::uint16_t>(r[4]));
  }
  CHECK(n == 4);
  // Every nibble value lands exactly once: the Marlin map is a permutation of (n, k).
  const std::int64_t N = 64, K = 16;
  std::vector<int> seen(N * K, 0);
  for (std::int64_t e = 0; e < N * K; ++e) {
    std::vector<std::uint8_t> q(N * K, 0);
    q[e] = 15;
    std::vector<std::uint32_t> m(K / 16 * 2 * N);
    REQUIRE(marlin::pack_weight(view(q.data(), N, K), view(m.data(), K / 16, 2 * N)) == status::ok);
    int ones = 0;
    for (auto w : m)
      for (int i = 0; i < 8; ++i) ones += nibble_of(w, i) == 15;
    CHECK(ones == 1);
  }
}

// ---------------------------------------------------------------------------------------------------
// What the views add: exact output shapes, row strides.

TEST_CASE("views (marlin): an output one row or column off its shape is bad_shape and nothing is written") {
  const std::int64_t n = 64, k = 32;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k));
  std::vector<std::int8_t> q8(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<std::uint8_t>(rnd(10, i, 0, 16));
    q8[i] = static_cast<std::int8_t>(q[i] - 8);
  }
  check_output_shape(k / 16, 2 * n, 0xDEADBEEFu,
                     [&](matrix_view<std::uint32_t> o) { return marlin::pack_weight(view(q.data(), n, k), o); });
  check_output_shape(k / 16, 2 * n, 0xDEADBEEFu,
                     [&](matrix_view<std::uint32_t> o) { return marlin::pack_weight(view(q8.data(), n, k), o); });
  std::vector<std::uint32_t> qw(static_cast<std::size_t>(k / 8 * n));
  REQUIRE(gptq::pack_qweight(view(q.data(), n, k), 4, view(qw.data(), k / 8, n)) == status::ok);
  check_output_shape(k / 16, 2 * n, 0xDEADBEEFu,
                     [&](matrix_view<std::uint32_t> o) { return marlin::repack_gptq(view(qw.data(), k / 8, n), o); });
  // qweight one row or column off: K or N is no longer a multiple of 16 / 64.
  std::vector<std::uint32_t> m(static_cast<std::size_t>(k / 16 * 2 * n), 0xDEADBEEFu);
  check_input_shape(
      k / 8, n, 0u, m, [&](matrix_view<std::uint32_t> w) { return marlin::repack_gptq(w, view(m.data(), k / 16, 2 * n)); }, &qw);
  std::vector<std::uint32_t> m2(m.size());
  REQUIRE(marlin::pack_weight(view(q.data(), n, k), view(m2.data(), k / 16, 2 * n)) == status::ok);
  CHECK(m == m2);
  // scales [64, 2] of a K = 64 weight in groups of 32 -> [2, 64]; channel-wise [64, 1] -> [1, 64]
  std::vector<std::uint16_t> s(128);
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint16_t>(i);
  check_output_shape(2, n, std::uint16_t{0xA5A5},
                     [&](matrix_view<std::uint16_t> o) { return marlin::permute_scales(view(s.data(), n, 2), 64, 32, o); });
  check_output_shape(1, n, std::uint16_t{0xA5A5},
                     [&](matrix_view<std::uint16_t> o) { return marlin::permute_scales(view(s.data(), n, 1), 64, -1, o); });
  // s one row off: N % 64 (bad_shape); one column off: G * group != K (bad_group).
  std::vector<std::uint16_t> sp(128, 0xA5A5);
  check_near_shapes(
      n, 2, std::uint16_t{1}, [&](matrix_view<std::uint16_t> sv) { return marlin::permute_scales(sv, 64, 32, view(sp.data(), 2, n)); },
      [&](std::int64_t r, std::int64_t c) { return r != n   ? status::bad_shape
                                                   : c != 2 ? status::bad_group
                                                            : status::ok; },
      [&] { return sp; });
}

TEST_CASE("views (marlin): strided inputs give the contiguous words, strided outputs keep their padding") {
  // pack_weight (uint8 and int8 codes), repack_gptq, permute_scales
  const std::int64_t n = 64, k = 32, is = 40, os = 131;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k));
  std::vector<std::int8_t> q8(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<std::uint8_t>(rnd(60, i, 0, 16));
    q8[i] = static_cast<std::int8_t>(q[i] - 8);
  }
  const std::int64_t mr = k / 16, mc = 2 * n;
  std::vector<std::uint32_t> want(static_cast<std::size_t>(mr * mc));
  REQUIRE(marlin::pack_weight(view(q.data(), n, k), view(want.data(), mr, mc)) == status::ok);
  const auto qs = strided(q, n, k, is, std::uint8_t{0xFF});
  const auto q8s = strided(q8, n, k, is, std::int8_t{100});
  std::vector<std::uint32_t> qw(static_cast<std::size_t>(k / 8 * n));
  REQUIRE(gptq::pack_qweight(view(q.data(), n, k), 4, view(qw.data(), k / 8, n)) == status::ok);
  const std::int64_t gs = n + 3;
  const auto qws = strided(qw, k / 8, n, gs, 0xFFFFFFFFu);
  for (const bool strided_out : {false, true}) {
    const std::int64_t st = strided_out ? os : mc;
    std::vector<std::uint32_t> a(static_cast<std::size_t>(mr * st), 0xDEADBEEFu), b(a), c(a);
    REQUIRE(marlin::pack_weight(view(qs.data(), n, k, is), view(a.data(), mr, mc, st)) == status::ok);
    REQUIRE(marlin::pack_weight(view(q8s.data(), n, k, is), view(b.data(), mr, mc, st)) == status::ok);
    REQUIRE(marlin::repack_gptq(view(qws.data(), k / 8, n, gs), view(c.data(), mr, mc, st)) == status::ok);
    CHECK(gather(a, mr, mc, st) == want);
    CHECK(gather(b, mr, mc, st) == want);
    CHECK(gather(c, mr, mc, st) == want);
    CHECK(padding_holds(a, mr, mc, st, 0xDEADBEEFu));
    CHECK(padding_holds(b, mr, mc, st, 0xDEADBEEFu));
    CHECK(padding_holds(c, mr, mc, st, 0xDEADBEEFu));
  }
  // scales [64, 4] (K = 128, groups of 32) and channel-wise [64, 1]
  for (const std::int64_t g : {std::int64_t{4}, std::int64_t{1}}) {
    CAPTURE(g);
    std::vector<std::uint16_t> s(static_cast<std::size_t>(n * g));
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint16_t>(rnd(61, i, 0, 0x7C00));
    const std::int64_t kk = 128, group = g == 1 ? -1 : 32;
    std::vector<std::uint16_t> sw(s.size());
    REQUIRE(marlin::permute_scales(view(s.data(), n, g), kk, group, view(sw.data(), g, n)) == status::ok);
    const auto ss = strided(s, n, g, g + 2, std::uint16_t{0xFFFF});
    std::vector<std::uint16_t> o(static_cast<std::size_t>(g * (n + 1)), 0xA5A5);
    REQUIRE(marlin::permute_scales(view(ss.data(), n, g, g + 2), kk, group, view(o.data(), g, n, n + 1)) == status::ok);
    CHECK(gather(o, g, n, n + 1) == sw);
    CHECK(padding_holds(o, g, n, n + 1, std::uint16_t{0xA5A5}));
  }
}

TEST_CASE_FIXTURE(bad_stride_buffers, "views (marlin): row_stride below cols with more than one row is bad_stride, nothing written") {
  CHECK(marlin::pack_weight(view(u8.data(), 64, 32, 31), view(w.data(), 2, 128)) == bs);
  CHECK(marlin::pack_weight(view(q8.data(), 64, 32, 31), view(w.data(), 2, 128)) == bs);
  CHECK(marlin::pack_weight(view(u8.data(), 64, 32), view(w.data(), 2, 128, 127)) == bs);
  CHECK(marlin::repack_gptq(view(win.data(), 2, 64, 63), view(w.data(), 1, 128)) == bs);
  CHECK(marlin::repack_gptq(view(win.data(), 4, 64), view(w.data(), 2, 128, 127)) == bs);
  CHECK(marlin::permute_scales(view(h.data(), 64, 1, 0), 64, -1, view(h.data(), 1, 64)) == bs);
  std::vector<std::uint16_t> s(128, 1);
  CHECK(marlin::permute_scales(view(s.data(), 64, 2, 1), 64, 32, view(h.data(), 2, 64)) == bs);
  std::vector<std::uint16_t> big(128, 0xA5A5);
  CHECK(marlin::permute_scales(view(s.data(), 64, 2), 64, 32, view(big.data(), 2, 64, 63)) == bs);
  CHECK(std::all_of(big.begin(), big.end(), [](std::uint16_t v) { return v == 0xA5A5; }));
  CHECK(untouched());
}
