// tests/layout/test_gptq_awq.cpp: the GPTQ (v1 and v2 qzeros) and AWQ checkpoint layouts of
// qnum/layout/gptq_awq.hpp (gptq::, awq::) — the documented AWQ nibble order, bad input statuses, views
// (exact shapes, row strides), and golden vectors in tests/data/layouts_golden.txt (tools/gen_golden.py
// --only layouts): vLLM cannot be installed there, so they come from an independent numpy statement of
// the layouts read in vLLM's source (quant_utils.py pack_rows/pack_cols/awq_pack; see docs/layouts.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "layout_test_util.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/view.hpp"

using namespace qnum;
using namespace qtest::layout;

TEST_CASE("AWQ: documented example (qzeros of nibbles 4..11)") {
  // AWQ order of nibbles 4..11 -> 0xB975A864
  std::uint8_t z[8] = {4, 5, 6, 7, 8, 9, 10, 11};
  std::uint32_t a = 0;
  REQUIRE(awq::pack_qzeros(view(z, 8, 1), view(&a, 1, 1)) == status::ok);
  CHECK(a == 0xB975A864u);
}

TEST_CASE("bad input gives a status (gptq/awq)") {
  std::uint32_t w[4];
  std::uint8_t u[16] = {};
  CHECK(gptq::pack_qweight(view(u, 2, 7), 4, view(w, 0, 2)) == status::bad_shape);   // K not a multiple of 8
  CHECK(gptq::pack_qweight(view(u, 2, 8), 3, view(w, 1, 2)) == status::bad_bits);
  CHECK(gptq::pack_qzeros(view(u, 8, 1), 4, gptq::format::v1, view(w, 1, 1)) == status::code_out_of_range);  // zero 0 in v1
  CHECK(gptq::pack_qzeros(view(u, 8, 1), 4, gptq::format::v2, view(w, 1, 1)) == status::ok);
  CHECK(awq::pack_qweight(view(u, 7, 2), view(w, 2, 1)) == status::bad_shape);      // N not a multiple of 8
  const float sc[2] = {1.0f, 1e6f};
  std::uint16_t h[2];
  h[0] = h[1] = 0xA5A5;
  CHECK(gptq::scales_to_fp16_transposed(view(sc, 1, 2), view(h, 2, 1)) == status::scale_overflow);
  CHECK((h[0] == 0xA5A5 && h[1] == 0xA5A5));  // nothing written
}

TEST_CASE("GPTQ and AWQ golden (vLLM-documented layout)") {
  int n = 0;
  for (auto [it, end] = golden().equal_range("gptq"); it != end; ++it, ++n) {
    const rec& r = it->second;
    const std::int64_t N = r[0][0], K = r[0][1], g = r[0][2];
    const int bits = static_cast<int>(r[0][3]);
    const auto q = as<std::uint8_t>(r[1]);
    const auto z = as<std::uint8_t>(r[2]);
    std::vector<std::uint32_t> qw(K * bits / 32 * N), qz(K / g * N * bits / 32);
    REQUIRE(gptq::pack_qweight(view(q.data(), N, K), bits, view(qw.data(), K * bits / 32, N)) == status::ok);
    CHECK(qw == as<std::uint32_t>(r[3]));
    std::vector<std::uint8_t> qb(q.size());
    REQUIRE(gptq::unpack_qweight(view(qw.data(), K * bits / 32, N), bits, view(qb.data(), N, K)) == status::ok);
    CHECK(qb == q);
    REQUIRE(gptq::pack_qzeros(view(z.data(), N, K / g), bits, gptq::format::v1, view(qz.data(), K / g, N * bits / 32)) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
    std::vector<std::int32_t> zb(z.size());
    REQUIRE(gptq::unpack_qzeros(view(qz.data(), K / g, N * bits / 32), bits, gptq::format::v1, view(zb.data(), N, K / g)) == status::ok);
    CHECK(zb == as<std::int32_t>(r[2]));
    REQUIRE(gptq::pack_qzeros(view(z.data(), N, K / g), bits, gptq::format::v2, view(qz.data(), K / g, N * bits / 32)) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[5]));
    const std::vector<std::int32_t> z32(z.begin(), z.end());  // the int32 zero points quantize writes
    std::fill(qz.begin(), qz.end(), 0u);
    REQUIRE(gptq::pack_qzeros(view(z32.data(), N, K / g), bits, gptq::format::v1, view(qz.data(), K / g, N * bits / 32)) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
  }
  CHECK(n == 5);
  n = 0;
  for (auto [it, end] = golden().equal_range("awq"); it != end; ++it, ++n) {
    const rec& r = it->second;
    const std::int64_t N = r[0][0], K = r[0][1], g = r[0][2];
    const auto q = as<std::uint8_t>(r[1]);
    const auto z = as<std::uint8_t>(r[2]);
    std::vector<std::uint32_t> qw(K * N / 8), qz(K / g * N / 8);
    REQUIRE(awq::pack_qweight(view(q.data(), N, K), view(qw.data(), K, N / 8)) == status::ok);
    CHECK(qw == as<std::uint32_t>(r[3]));
    std::vector<std::uint8_t> qb(q.size());
    REQUIRE(awq::unpack_qweight(view(qw.data(), K, N / 8), view(qb.data(), N, K)) == status::ok);
    CHECK(qb == q);
    REQUIRE(awq::pack_qzeros(view(z.data(), N, K / g), view(qz.data(), K / g, N / 8)) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
    const std::vector<std::int32_t> z32(z.begin(), z.end());
    std::fill(qz.begin(), qz.end(), 0u);
    REQUIRE(awq::pack_qzeros(view(z32.data(), N, K / g), view(qz.data(), K / g, N / 8)) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
  }
  CHECK(n == 3);
  // symmetric int4 v1 qzeros are 0x77777777
  std::uint8_t eight[8] = {8, 8, 8, 8, 8, 8, 8, 8};
  std::uint32_t w = 0;
  REQUIRE(gptq::pack_qzeros(view(eight, 8, 1), 4, gptq::format::v1, view(&w, 1, 1)) == status::ok);
  CHECK(w == 0x77777777u);
  // int32 zero points outside the field: code_out_of_range, nothing else accepted.
  std::int32_t z32[8] = {8, 8, 8, 8, 8, 8, 8, 16};
  CHECK(gptq::pack_qzeros(view(z32, 8, 1), 4, gptq::format::v2, view(&w, 1, 1)) == status::code_out_of_range);
  CHECK(awq::pack_qzeros(view(z32, 8, 1), view(&w, 1, 1)) == status::code_out_of_range);
  z32[7] = -1;
  CHECK(gptq::pack_qzeros(view(z32, 8, 1), 4, gptq::format::v2, view(&w, 1, 1)) == status::code_out_of_range);
  CHECK(awq::pack_qzeros(view(z32, 8, 1), view(&w, 1, 1)) == status::code_out_of_range);
  z32[7] = 0;
  CHECK(gptq::pack_qzeros(view(z32, 8, 1), 4, gptq::format::v1, view(&w, 1, 1)) == status::code_out_of_range);  // v1 stores zero - 1
  CHECK(w == 0x77777777u);  // nothing written by the failing calls
}

// ---------------------------------------------------------------------------------------------------
// What the views add: exact output shapes, row strides.

TEST_CASE("views (gptq/awq): an output one row or column off its shape is bad_shape and nothing is written") {
  SUBCASE("GPTQ") {
    const std::int64_t n = 6, k = 16, groups = 3, zn = 16;
    const int bits = 4;
    std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k));
    std::vector<std::int8_t> q8(q.size());
    for (std::size_t i = 0; i < q.size(); ++i) {
      q[i] = static_cast<std::uint8_t>(rnd(6, i, 0, 16));
      q8[i] = static_cast<std::int8_t>(q[i] - 8);
    }
    check_output_shape(k / 8, n, 0xDEADBEEFu,
                       [&](matrix_view<std::uint32_t> o) { return gptq::pack_qweight(view(q.data(), n, k), bits, o); });
    check_output_shape(k / 8, n, 0xDEADBEEFu,
                       [&](matrix_view<std::uint32_t> o) { return gptq::pack_qweight(view(q8.data(), n, k), bits, o); });
    std::vector<std::uint32_t> qw(static_cast<std::size_t>(k / 8 * n));
    REQUIRE(gptq::pack_qweight(view(q.data(), n, k), bits, view(qw.data(), k / 8, n)) == status::ok);
    check_output_shape(n, k, std::uint8_t{0xA5},
                       [&](matrix_view<std::uint8_t> o) { return gptq::unpack_qweight(view(qw.data(), k / 8, n), bits, o); });
    std::vector<std::uint8_t> qb(q.size(), 0xA5);
    check_input_shape(
        k / 8, n, 0u, qb, [&](matrix_view<std::uint32_t> w) { return gptq::unpack_qweight(w, bits, view(qb.data(), n, k)); }, &qw);
    CHECK(qb == q);
    std::vector<std::uint8_t> z(static_cast<std::size_t>(zn * groups));
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = static_cast<std::uint8_t>(rnd(7, i, 1, 15));
    const std::vector<std::int32_t> z32(z.begin(), z.end());
    for (const gptq::format fmt : {gptq::format::v1, gptq::format::v2}) {
      check_output_shape(groups, zn / 8, 0xDEADBEEFu,
                         [&](matrix_view<std::uint32_t> o) { return gptq::pack_qzeros(view(z.data(), zn, groups), bits, fmt, o); });
      check_output_shape(groups, zn / 8, 0xDEADBEEFu,
                         [&](matrix_view<std::uint32_t> o) { return gptq::pack_qzeros(view(z32.data(), zn, groups), bits, fmt, o); });
      std::vector<std::uint32_t> qz(static_cast<std::size_t>(groups * zn / 8));
      REQUIRE(gptq::pack_qzeros(view(z.data(), zn, groups), bits, fmt, view(qz.data(), groups, zn / 8)) == status::ok);
      check_output_shape(zn, groups, std::int32_t{-77},
                         [&](matrix_view<std::int32_t> o) { return gptq::unpack_qzeros(view(qz.data(), groups, zn / 8), bits, fmt, o); });
      std::vector<std::int32_t> zb(z.size(), -77);
      check_input_shape(
          groups, zn / 8, 0u, zb,
          [&](matrix_view<std::uint32_t> w) { return gptq::unpack_qzeros(w, bits, fmt, view(zb.data(), zn, groups)); }, &qz);
      CHECK(zb == z32);
    }
    const float s[15] = {0.5f, 1.0f, 2.0f, 0.25f, 3.0f, 1.5f, 0.125f, 4.0f, 1.0f, 0.75f, 6.0f, 0.5f, 1.0f, 2.0f, 8.0f};
    check_output_shape(3, 5, std::uint16_t{0xA5A5},
                       [&](matrix_view<std::uint16_t> o) { return gptq::scales_to_fp16_transposed(view(s, 5, 3), o); });
    check_output_shape(3, 5, std::uint16_t{0xA5A5},
                       [&](matrix_view<std::uint16_t> o) { return awq::scales_to_fp16_transposed(view(s, 5, 3), o); });
  }
  SUBCASE("AWQ") {
    const std::int64_t n = 16, k = 5, groups = 3;
    std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k));
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::uint8_t>(rnd(8, i, 0, 16));
    check_output_shape(k, n / 8, 0xDEADBEEFu, [&](matrix_view<std::uint32_t> o) { return awq::pack_qweight(view(q.data(), n, k), o); });
    std::vector<std::uint32_t> qw(static_cast<std::size_t>(k * n / 8));
    REQUIRE(awq::pack_qweight(view(q.data(), n, k), view(qw.data(), k, n / 8)) == status::ok);
    check_output_shape(n, k, std::uint8_t{0xA5},
                       [&](matrix_view<std::uint8_t> o) { return awq::unpack_qweight(view(qw.data(), k, n / 8), o); });
    std::vector<std::uint8_t> qb(q.size(), 0xA5);
    check_input_shape(
        k, n / 8, 0u, qb, [&](matrix_view<std::uint32_t> w) { return awq::unpack_qweight(w, view(qb.data(), n, k)); }, &qw);
    CHECK(qb == q);
    std::vector<std::uint8_t> z(static_cast<std::size_t>(n * groups));
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = static_cast<std::uint8_t>(rnd(9, i, 0, 16));
    const std::vector<std::int32_t> z32(z.begin(), z.end());
    check_output_shape(groups, n / 8, 0xDEADBEEFu,
                       [&](matrix_view<std::uint32_t> o) { return awq::pack_qzeros(view(z.data(), n, groups), o); });
    check_output_shape(groups, n / 8, 0xDEADBEEFu,
                       [&](matrix_view<std::uint32_t> o) { return awq::pack_qzeros(view(z32.data(), n, groups), o); });
  }
}

TEST_CASE("views (gptq/awq): strided inputs give the contiguous words, strided outputs keep their padding") {
  SUBCASE("GPTQ pack_qweight / unpack_qweight (uint8 and int8 codes, 2/4/8 bits)") {
    const std::int64_t n = 12, k = 32;
    for (const int bits : {2, 4, 8}) {
      CAPTURE(bits);
      const int half = 1 << (bits - 1);
      std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k));
      std::vector<std::int8_t> q8(q.size());
      for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = static_cast<std::uint8_t>(rnd(40 + bits, i, 0, 2u * half));
        q8[i] = static_cast<std::int8_t>(q[i] - half);
      }
      const std::int64_t pr = k * bits / 32, is = k + 3, os = n + 2;
      std::vector<std::uint32_t> want(static_cast<std::size_t>(pr * n));
      REQUIRE(gptq::pack_qweight(view(q.data(), n, k), bits, view(want.data(), pr, n)) == status::ok);
      check_strided_pack(q, std::uint8_t{0xFF}, q8, std::int8_t{100}, n, k, is, pr, n, os, want,
                         [&](auto in, auto out) { return gptq::pack_qweight(in, bits, out); });
      check_strided_unpack(want, pr, n, os, q, n, k, is, [&](auto w, auto out) { return gptq::unpack_qweight(w, bits, out); });
    }
  }
  SUBCASE("AWQ pack_qweight / unpack_qweight") {
    const std::int64_t n = 16, k = 10, is = 13, os = 5;
    std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k));
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::uint8_t>(rnd(50, i, 0, 16));
    std::vector<std::uint32_t> want(static_cast<std::size_t>(k * n / 8));
    REQUIRE(awq::pack_qweight(view(q.data(), n, k), view(want.data(), k, n / 8)) == status::ok);
    const auto qs = strided(q, n, k, is, std::uint8_t{0xFF});
    for (const bool strided_out : {false, true}) {
      const std::int64_t st = strided_out ? os : n / 8;
      std::vector<std::uint32_t> a(static_cast<std::size_t>(k * st), 0xDEADBEEFu);
      REQUIRE(awq::pack_qweight(view(qs.data(), n, k, is), view(a.data(), k, n / 8, st)) == status::ok);
      CHECK(gather(a, k, n / 8, st) == want);
      CHECK(padding_holds(a, k, n / 8, st, 0xDEADBEEFu));
    }
    const auto ws = strided(want, k, n / 8, os, 0xFFFFFFFFu);
    std::vector<std::uint8_t> back(static_cast<std::size_t>(n * is), 0x5A);
    REQUIRE(awq::unpack_qweight(view(ws.data(), k, n / 8, os), view(back.data(), n, k, is)) == status::ok);
    CHECK(gather(back, n, k, is) == q);
    CHECK(padding_holds(back, n, k, is, std::uint8_t{0x5A}));
  }
}

TEST_CASE_FIXTURE(bad_stride_buffers, "views (gptq/awq): row_stride below cols with more than one row is bad_stride, nothing written") {
  CHECK(gptq::pack_qweight(view(u8.data(), 2, 16, 15), 4, view(w.data(), 2, 2)) == bs);
  CHECK(gptq::pack_qweight(view(q8.data(), 2, 16, 15), 4, view(w.data(), 2, 2)) == bs);
  CHECK(gptq::pack_qweight(view(u8.data(), 2, 16), 4, view(w.data(), 2, 2, 1)) == bs);
  CHECK(gptq::unpack_qweight(view(win.data(), 2, 2, 1), 4, view(ou8.data(), 2, 16)) == bs);
  CHECK(gptq::unpack_qweight(view(win.data(), 2, 2), 4, view(ou8.data(), 2, 16, 15)) == bs);
  CHECK(gptq::pack_qzeros(view(u8.data(), 8, 2, 1), 4, gptq::format::v2, view(w.data(), 2, 1)) == bs);
  CHECK(gptq::pack_qzeros(view(i32.data(), 8, 2, 1), 4, gptq::format::v2, view(w.data(), 2, 1)) == bs);
  CHECK(gptq::pack_qzeros(view(u8.data(), 8, 2), 4, gptq::format::v2, view(w.data(), 2, 1, 0)) == bs);
  CHECK(gptq::unpack_qzeros(view(win.data(), 2, 1, 0), 4, gptq::format::v2, view(o32.data(), 8, 2)) == bs);
  CHECK(gptq::unpack_qzeros(view(win.data(), 2, 1), 4, gptq::format::v2, view(o32.data(), 8, 2, 1)) == bs);
  CHECK(gptq::scales_to_fp16_transposed(view(f32.data(), 2, 2, 1), view(h.data(), 2, 2)) == bs);
  CHECK(gptq::scales_to_fp16_transposed(view(f32.data(), 2, 2), view(h.data(), 2, 2, 1)) == bs);
  CHECK(awq::pack_qweight(view(u8.data(), 8, 2, 1), view(w.data(), 2, 1)) == bs);
  CHECK(awq::pack_qweight(view(u8.data(), 8, 2), view(w.data(), 2, 1, 0)) == bs);
  CHECK(awq::unpack_qweight(view(win.data(), 2, 1, 0), view(ou8.data(), 8, 2)) == bs);
  CHECK(awq::unpack_qweight(view(win.data(), 2, 1), view(ou8.data(), 8, 2, 1)) == bs);
  CHECK(awq::pack_qzeros(view(u8.data(), 8, 2, 1), view(w.data(), 2, 1)) == bs);
  CHECK(awq::pack_qzeros(view(i32.data(), 8, 2, 1), view(w.data(), 2, 1)) == bs);
  CHECK(awq::pack_qzeros(view(u8.data(), 8, 2), view(w.data(), 2, 1, 0)) == bs);
  CHECK(untouched());
}
