// tests/layout/test_pack.cpp: the packing primitives of qnum/layout/pack.hpp (dense pack_int32 /
// unpack_int32, nibble pairs, UE8M0, the QNUM_HD per-element helpers, dequantize_int4_word) — exhaustive
// round trips, hand examples from the references' documentation, bad input statuses, views (exact shapes,
// row strides, 2-D nibbles), and golden vectors from the real references: compressed-tensors
// pack_to_int32 / unpack_from_int32 and torchao pack_uint4, recorded in tests/data/layouts_golden.txt by
// tools/gen_golden.py --only layouts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "layout_test_util.hpp"
#include "qnum/host/simd.hpp"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/view.hpp"

using namespace qnum;
using namespace qtest::layout;

TEST_CASE("dense packing: documented examples") {
  // compressed-tensors: q = [-4..3] int4 -> 0xBA987654
  const std::int8_t q[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
  std::uint32_t w = 0;
  REQUIRE(pack_int32(view(q, 1, 8), 4, packed_dim::cols, view(&w, 1, 1)) == status::ok);
  CHECK(w == 0xBA987654u);
  // 3-bit elements straddle: element 10 occupies bits 30..32.
  std::uint32_t ws[2] = {0, 0};
  dense_or(ws, 10, 3, 0x7);
  CHECK(ws[0] == 0xC0000000u);
  CHECK(ws[1] == 0x1u);
  CHECK(dense_get(ws, 10, 3) == 7u);
}

TEST_CASE("dense packing: exhaustive round trip of every code at every position, 1..8 bits, both dims") {
  for (int bits = 1; bits <= 8; ++bits) {
    const int ncodes = 1 << bits;
    for (int dim = 0; dim < 2; ++dim) {
      // Every code at every position of a 32-element period (+ an odd tail): len = 32 + 5.
      const std::int64_t len = 37;
      for (int code = 0; code < ncodes; ++code) {
        for (int lines = 1; lines <= 2; ++lines) {
          const std::int64_t rows = dim == 1 ? lines : len, cols = dim == 1 ? len : lines;
          std::vector<std::int8_t> s(rows * cols);
          std::vector<std::uint8_t> u(rows * cols);
          for (std::int64_t i = 0; i < rows * cols; ++i) {
            const int c = static_cast<int>((code + i * 7) % ncodes);
            u[i] = static_cast<std::uint8_t>(c);
            s[i] = static_cast<std::int8_t>(c - (ncodes / 2));
          }
          const packed_dim pd = static_cast<packed_dim>(dim);
          const extent pe = pack_int32_shape(rows, cols, bits, pd);
          std::vector<std::uint32_t> ws(static_cast<std::size_t>(pe.rows * pe.cols)), wu(ws.size());
          REQUIRE(pack_int32(view(s.data(), rows, cols), bits, pd, view(ws.data(), pe.rows, pe.cols)) == status::ok);
          REQUIRE(pack_int32(view(u.data(), rows, cols), bits, pd, view(wu.data(), pe.rows, pe.cols)) == status::ok);
          // signed offset-binary and unsigned codes c give the same words (c = q + 2^(b-1))
          CHECK(ws == wu);
          std::vector<std::int8_t> s2(s.size());
          std::vector<std::uint8_t> u2(u.size());
          REQUIRE(unpack_int32(view(ws.data(), pe.rows, pe.cols), bits, pd, view(s2.data(), rows, cols)) == status::ok);
          REQUIRE(unpack_int32(view(wu.data(), pe.rows, pe.cols), bits, pd, view(u2.data(), rows, cols)) == status::ok);
          CHECK(s2 == s);
          CHECK(u2 == u);
          // only the bits of real elements are set
          const std::int64_t len_bits = len * bits;
          if (dim == 1 && len_bits % 32) CHECK((ws[ws.size() - 1] >> (len_bits % 32)) == 0u);
        }
      }
    }
  }
}

TEST_CASE("nibble pairs and UE8M0: exhaustive") {
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b) {
      const std::uint8_t lo = pack_nibble_pair(a, b, nibble_order::low_first);
      const std::uint8_t hi = pack_nibble_pair(a, b, nibble_order::high_first);
      CHECK(lo == (a | (b << 4)));
      CHECK(hi == ((a << 4) | b));
      CHECK(unpack_nibble(lo, 0, nibble_order::low_first) == std::uint32_t(a));
      CHECK(unpack_nibble(lo, 1, nibble_order::low_first) == std::uint32_t(b));
      CHECK(unpack_nibble(hi, 0, nibble_order::high_first) == std::uint32_t(a));
      CHECK(unpack_nibble(hi, 1, nibble_order::high_first) == std::uint32_t(b));
    }
  std::uint8_t c[5] = {1, 2, 3, 4, 15}, p[3], back[5];
  REQUIRE(pack_nibbles(view(c, 5), nibble_order::high_first, view(p, 3)) == status::ok);
  CHECK(p[0] == 0x12);
  CHECK(p[2] == 0xF0);
  REQUIRE(unpack_nibbles(view(p, 3), nibble_order::high_first, view(back, 5)) == status::ok);
  CHECK(std::vector<std::uint8_t>(back, back + 5) == std::vector<std::uint8_t>(c, c + 5));
  c[1] = 16;
  CHECK(pack_nibbles(view(c, 5), nibble_order::low_first, view(p, 3)) == status::code_out_of_range);
  CHECK(p[0] == 0x12);  // nothing written
  CHECK(p[2] == 0xF0);

  // UE8M0: every byte value at every byte position.
  for (int v = 0; v < 256; ++v) {
    std::uint8_t e[6] = {0, 0, 0, 0, 0, 0};
    for (int pos = 0; pos < 6; ++pos) {
      e[pos] = static_cast<std::uint8_t>(v);
      std::uint32_t w[2] = {0, 0};
      REQUIRE(pack_ue8m0(view(e, 1, 6), view(w, 1, 2)) == status::ok);
      CHECK(((pos < 4 ? w[0] : w[1]) >> (8 * (pos % 4)) & 0xFF) == std::uint32_t(v));
      std::uint8_t e2[6];
      REQUIRE(unpack_ue8m0(view(w, 1, 2), view(e2, 1, 6)) == status::ok);
      CHECK(std::vector<std::uint8_t>(e2, e2 + 6) == std::vector<std::uint8_t>(e, e + 6));
      e[pos] = 0;
    }
  }
  const float s[3] = {1.0f, 0.0078125f, 3.0f};
  std::uint8_t e[3];
  e[2] = 0xA5;
  CHECK(ue8m0_from_pow2_scales(view(s, 2), view(e, 2)) == status::ok);
  CHECK(e[0] == 127);
  CHECK(e[1] == 120);
  CHECK(e[2] == 0xA5);
  e[0] = e[1] = 0xA5;
  CHECK(ue8m0_from_pow2_scales(view(s, 3), view(e, 3)) == status::code_out_of_range);
  CHECK((e[0] == 0xA5 && e[1] == 0xA5 && e[2] == 0xA5));  // nothing written on error
  // any 2-D shape, the same for both
  std::uint8_t e2d[2][2];
  const float s2d[4] = {2.0f, 0.5f, 1024.0f, 1.0f};
  REQUIRE(ue8m0_from_pow2_scales(view(s2d, 2, 2), view(&e2d[0][0], 2, 2)) == status::ok);
  CHECK(e2d[0][0] == 128);
  CHECK(e2d[0][1] == 126);
  CHECK(e2d[1][0] == 137);
  CHECK(e2d[1][1] == 127);
}

TEST_CASE("bad input gives a status (pack_int32 / unpack_int32)") {
  std::int8_t q[4] = {0, 1, 2, 8};
  std::uint32_t w[4];
  CHECK(pack_int32(view(q, 1, 4), 4, packed_dim::cols, view(w, 1, 1)) == status::code_out_of_range);
  CHECK(pack_int32(view(q, 1, 3), 0, packed_dim::cols, view(w, 1, 1)) == status::bad_bits);
  CHECK(pack_int32(view(q, 1, 3), 9, packed_dim::cols, view(w, 1, 1)) == status::bad_bits);
  CHECK(pack_int32(view(q, -1, 3), 4, packed_dim::cols, view(w, 1, 1)) == status::bad_shape);
  CHECK(pack_int32(view(q, 1, -3), 4, packed_dim::cols, view(w, 1, 1)) == status::bad_shape);
  CHECK(pack_int32(view(static_cast<const std::int8_t*>(nullptr), 1, 3), 4, packed_dim::cols, view(w, 1, 1)) ==
        status::null_pointer);
  CHECK(pack_int32(view(q, 1, 3), 4, packed_dim::cols, view(static_cast<std::uint32_t*>(nullptr), 1, 1)) ==
        status::null_pointer);
  CHECK(pack_int32(view(q, 0, 3), 4, packed_dim::cols, matrix_view<std::uint32_t>{}) == status::ok);  // empty
  CHECK(pack_int32(view(q, 0, 3), 4, packed_dim::cols, view(static_cast<std::uint32_t*>(nullptr), 5, 7)) ==
        status::ok);  // empty input: the output is not checked
  CHECK(pack_int32(view(static_cast<const std::int8_t*>(nullptr), 3, 0), 4, packed_dim::cols, matrix_view<std::uint32_t>{}) ==
        status::ok);
  CHECK(unpack_int32(view(static_cast<const std::uint32_t*>(nullptr), 1, 1), 4, packed_dim::cols, view(q, 1, 4)) ==
        status::null_pointer);
  CHECK(unpack_int32(view(w, 1, 1), 4, packed_dim::cols, view(q, 1, -4)) == status::bad_shape);
  const std::int8_t neg[1] = {-1};
  CHECK(pack_int32(view(reinterpret_cast<const std::uint8_t*>(neg), 1, 1), 4, packed_dim::cols, view(w, 1, 1)) ==
        status::code_out_of_range);  // 255 does not fit 4 bits
}

TEST_CASE("compressed-tensors pack_to_int32 golden (1..8 bits, packed_dim 0/1, odd shapes)") {
  int n = 0;
  for (auto [it, end] = golden().equal_range("ctpack"); it != end; ++it, ++n) {
    const rec& r = it->second;
    const int bits = static_cast<int>(r[0][0]);
    const packed_dim dim = static_cast<packed_dim>(r[0][1]);
    const std::int64_t rows = r[0][2], cols = r[0][3];
    CAPTURE(bits);
    CAPTURE(rows);
    CAPTURE(cols);
    const auto q = as<std::int8_t>(r[1]);
    const auto want = as<std::uint32_t>(r[2]);
    const extent pe = pack_int32_shape(rows, cols, bits, dim);
    REQUIRE(pe.rows * pe.cols == r[0][4] * r[0][5]);
    CHECK(pe.rows == r[0][4]);
    CHECK(pe.cols == r[0][5]);
    std::vector<std::uint32_t> w(want.size());
    REQUIRE(pack_int32(view(q.data(), rows, cols), bits, dim, view(w.data(), pe.rows, pe.cols)) == status::ok);
    CHECK(w == want);
    std::vector<std::int8_t> back(q.size());
    REQUIRE(unpack_int32(view(want.data(), pe.rows, pe.cols), bits, dim, view(back.data(), rows, cols)) == status::ok);
    CHECK(back == q);
  }
  CHECK(n == 8 * 2 * 6);
}

TEST_CASE("torchao pack_uint4 golden") {
  auto it = golden().find("torchao_pack_uint4");
  REQUIRE(it != golden().end());
  const rec& r = it->second;
  const auto c = as<std::uint8_t>(r[1]);
  std::vector<std::uint8_t> p(c.size() / 2);
  REQUIRE(pack_nibbles(view(c.data(), static_cast<std::int64_t>(c.size())), nibble_order::low_first,
                       view(p.data(), static_cast<std::int64_t>(p.size()))) == status::ok);
  CHECK(p == as<std::uint8_t>(r[2]));
  // The recorded tensor is [r[0][0], r[0][1]], packed along its last dimension: the 2-D view gives the same bytes.
  const std::int64_t R = r[0][0], C = r[0][1];
  REQUIRE(R * C == static_cast<std::int64_t>(c.size()));
  std::vector<std::uint8_t> p2(static_cast<std::size_t>(R * ((C + 1) / 2)), 0xA5);
  REQUIRE(pack_nibbles(view(c.data(), R, C), nibble_order::low_first, view(p2.data(), R, (C + 1) / 2)) == status::ok);
  CHECK(p2 == as<std::uint8_t>(r[2]));
  std::vector<std::uint8_t> c2(c.size(), 0xA5);
  REQUIRE(unpack_nibbles(view(p2.data(), R, (C + 1) / 2), nibble_order::low_first, view(c2.data(), R, C)) == status::ok);
  CHECK(c2 == c);
}

TEST_CASE("dequantize_int4_word") {
  float out[8];
  dequantize_int4_word(0xBA987654u, 0.5f, 8, out);
  for (int k = 0; k < 8; ++k) CHECK(out[k] == 0.5f * static_cast<float>(k - 4));
}

TEST_CASE("4-bit rows (the nibble-pair path, every SIMD target): every field in place, signed and unsigned") {
  // Every nibble value at every field position of a word, rows long and short against every vector width
  // (whole vectors, tails, odd lengths, a last word partly filled), each field checked against its definition.
  each_simd_target([] {
    for (const std::int64_t cols : {64, 72, 67, 8, 1, 2, 130, 255, 256, 1000, 1030}) {
      CAPTURE(cols);
      const std::int64_t rows = 5;
      std::vector<std::int8_t> s(static_cast<std::size_t>(rows * cols));
      std::vector<std::uint8_t> u(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) {
        const int v = static_cast<int>((i * 7 + i / 16) % 16);
        u[i] = static_cast<std::uint8_t>(v);
        s[i] = static_cast<std::int8_t>(v - 8);
      }
      const std::int64_t wpl = (cols * 4 + 31) / 32;
      std::vector<std::uint32_t> ws(static_cast<std::size_t>(rows * wpl), 0xA5A5A5A5u), wu(ws), wc(ws);
      REQUIRE(qnum::pack_int32(view(s.data(), rows, cols), 4, qnum::packed_dim::cols, view(ws.data(), rows, wpl)) == qnum::status::ok);
      REQUIRE(qnum::pack_int32(view(u.data(), rows, cols), 4, qnum::packed_dim::cols, view(wu.data(), rows, wpl)) == qnum::status::ok);
      // compressed-tensors' weight from qnum's codes (two's complement nibbles): the offset-binary words
      std::vector<std::uint8_t> tc(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) tc[i] = static_cast<std::uint8_t>(s[i] & 15);
      REQUIRE(qnum::ct::pack_weight(view(tc.data(), rows, cols), 4, view(wc.data(), rows, wpl)) == qnum::status::ok);
      long bad = 0;
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < 8 * wpl; ++c) {
          const std::size_t w = static_cast<std::size_t>(r * wpl + c / 8);
          const int sh = static_cast<int>(4 * (c % 8));
          const std::size_t i = static_cast<std::size_t>(r * cols + c);
          const bool in = c < cols;  // fields past the row's end are 0
          bad += ((ws[w] >> sh) & 15u) != (in ? static_cast<std::uint32_t>(s[i] + 8) : 0u);  // offset binary
          bad += ((wu[w] >> sh) & 15u) != (in ? u[i] : 0u);
          bad += ((wc[w] >> sh) & 15u) != (in ? static_cast<std::uint32_t>(s[i] + 8) : 0u);
        }
      CHECK(bad == 0);
      // pack_nibbles, both orders, every byte of pairs: byte j from codes 2j, 2j + 1 as pack_nibble_pair says
      for (const nibble_order order : {nibble_order::low_first, nibble_order::high_first}) {
        std::vector<std::uint8_t> c2(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < c2.size(); ++i) c2[i] = static_cast<std::uint8_t>((i * 13 + i / 256) % 16);
        const std::int64_t pb = (cols + 1) / 2;
        std::vector<std::uint8_t> p(static_cast<std::size_t>(rows * pb), 0xA5);
        REQUIRE(pack_nibbles(view(c2.data(), rows, cols), order, view(p.data(), rows, pb)) == status::ok);
        long badn = 0;
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t j = 0; j < pb; ++j) {
            const std::size_t a = static_cast<std::size_t>(r * cols + 2 * j);
            const std::uint32_t second = 2 * j + 1 < cols ? c2[a + 1] : 0u;
            badn += p[static_cast<std::size_t>(r * pb + j)] != pack_nibble_pair(c2[a], second, order);
          }
        CHECK(badn == 0);
      }
    }
  });
}
// A code out of range anywhere (first, middle, last element of a contiguous multi-row view) is found before
// anything is written, by every target.
TEST_CASE("4-bit rows: a code out of range anywhere gives code_out_of_range, nothing written") {
  each_simd_target([] {
    const std::int64_t rows = 3, cols = 200, wpl = 25;
    for (const std::int64_t at : {std::int64_t{0}, rows * cols / 2 + 1, rows * cols - 1}) {
      CAPTURE(at);
      std::vector<std::uint8_t> u(static_cast<std::size_t>(rows * cols), 15);
      std::vector<std::int8_t> q(u.size(), -8);
      u[static_cast<std::size_t>(at)] = 16;
      q[static_cast<std::size_t>(at)] = 8;
      std::vector<std::uint32_t> w(static_cast<std::size_t>(rows * wpl), 0xA5A5A5A5u);
      CHECK(qnum::pack_int32(view(u.data(), rows, cols), 4, qnum::packed_dim::cols, view(w.data(), rows, wpl)) == status::code_out_of_range);
      CHECK(qnum::pack_int32(view(q.data(), rows, cols), 4, qnum::packed_dim::cols, view(w.data(), rows, wpl)) == status::code_out_of_range);
      q[static_cast<std::size_t>(at)] = -9;
      CHECK(qnum::pack_int32(view(q.data(), rows, cols), 4, qnum::packed_dim::cols, view(w.data(), rows, wpl)) == status::code_out_of_range);
      CHECK(std::all_of(w.begin(), w.end(), [](std::uint32_t v) { return v == 0xA5A5A5A5u; }));
    }
  });
}

// ---------------------------------------------------------------------------------------------------
// What the views add: exact output shapes, row strides, 2-D nibble packing.

TEST_CASE("views (pack): an output one row or column off its shape is bad_shape and nothing is written") {
  SUBCASE("pack_int32 / unpack_int32, both packed_dim") {
    const std::int64_t rows = 37, cols = 13;
    const int bits = 3;
    std::vector<std::int8_t> q(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::int8_t>(rnd(1, i, -4, 8));
    std::vector<std::uint8_t> u(q.size());
    for (std::size_t i = 0; i < q.size(); ++i) u[i] = static_cast<std::uint8_t>(q[i] + 4);
    const std::vector<std::int32_t> q32(q.begin(), q.end());
    for (const packed_dim dim : {packed_dim::cols, packed_dim::rows}) {
      CAPTURE(static_cast<int>(dim));
      const extent pe = pack_int32_shape(rows, cols, bits, dim);
      check_output_shape(pe.rows, pe.cols, 0xDEADBEEFu,
                         [&](matrix_view<std::uint32_t> o) { return pack_int32(view(q.data(), rows, cols), bits, dim, o); });
      check_output_shape(pe.rows, pe.cols, 0xDEADBEEFu,
                         [&](matrix_view<std::uint32_t> o) { return pack_int32(view(u.data(), rows, cols), bits, dim, o); });
      check_output_shape(pe.rows, pe.cols, 0xDEADBEEFu,
                         [&](matrix_view<std::uint32_t> o) { return pack_int32(view(q32.data(), rows, cols), bits, dim, o); });
      std::vector<std::uint32_t> words(static_cast<std::size_t>(pe.rows * pe.cols));
      REQUIRE(pack_int32(view(q.data(), rows, cols), bits, dim, view(words.data(), pe.rows, pe.cols)) == status::ok);
      // unpack_int32's output gives the problem's shape: a near shape is ok exactly when it packs to the
      // words' shape (37 or 36 rows pack to the same 4 words along rows), bad_shape otherwise.
      const auto fits = [&](std::int64_t r, std::int64_t c) {
        const extent e = pack_int32_shape(r, c, bits, dim);
        return e.rows == pe.rows && e.cols == pe.cols ? status::ok : status::bad_shape;
      };
      check_near_shapes(
          rows, cols, std::int8_t{0x55},
          [&](matrix_view<std::int8_t> o) { return unpack_int32(view(words.data(), pe.rows, pe.cols), bits, dim, o); }, fits,
          [] { return 0; });
      check_near_shapes(
          rows, cols, std::uint8_t{0x55},
          [&](matrix_view<std::uint8_t> o) { return unpack_int32(view(words.data(), pe.rows, pe.cols), bits, dim, o); }, fits,
          [] { return 0; });
      std::vector<std::int8_t> back(q.size(), 0x55);
      check_input_shape(
          pe.rows, pe.cols, 0u, back,
          [&](matrix_view<std::uint32_t> w) { return unpack_int32(w, bits, dim, view(back.data(), rows, cols)); }, &words);
      CHECK(back == q);
    }
  }
  SUBCASE("pack_nibbles / unpack_nibbles") {
    std::vector<std::uint8_t> c(21);
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<std::uint8_t>(rnd(2, i, 0, 16));
    for (const nibble_order order : {nibble_order::low_first, nibble_order::high_first}) {
      check_output_shape(3, 4, std::uint8_t{0xA5},
                         [&](matrix_view<std::uint8_t> o) { return pack_nibbles(view(c.data(), 3, 7), order, o); });
      std::vector<std::uint8_t> bytes(12);
      REQUIRE(pack_nibbles(view(c.data(), 3, 7), order, view(bytes.data(), 3, 4)) == status::ok);
      // 7 or 8 codes a row take 4 bytes, 6 take 3.
      check_near_shapes(
          3, 7, std::uint8_t{0xA5}, [&](matrix_view<std::uint8_t> o) { return unpack_nibbles(view(bytes.data(), 3, 4), order, o); },
          [](std::int64_t r, std::int64_t n) { return r == 3 && (n + 1) / 2 == 4 ? status::ok : status::bad_shape; }, [] { return 0; });
      std::vector<std::uint8_t> back(21, 0xA5);
      check_input_shape(
          3, 4, std::uint8_t{0}, back, [&](matrix_view<std::uint8_t> b) { return unpack_nibbles(b, order, view(back.data(), 3, 7)); },
          &bytes);
      CHECK(back == c);
    }
  }
  SUBCASE("pack_ue8m0 / unpack_ue8m0 / ue8m0_from_pow2_scales") {
    std::vector<std::uint8_t> e(18);
    for (std::size_t i = 0; i < e.size(); ++i) e[i] = static_cast<std::uint8_t>(rnd(3, i, 0, 256));
    check_output_shape(3, 2, 0xDEADBEEFu, [&](matrix_view<std::uint32_t> o) { return pack_ue8m0(view(e.data(), 3, 6), o); });
    std::vector<std::uint32_t> words(6);
    REQUIRE(pack_ue8m0(view(e.data(), 3, 6), view(words.data(), 3, 2)) == status::ok);
    // 5 to 8 groups a row take 2 words.
    check_near_shapes(
        3, 6, std::uint8_t{0xA5}, [&](matrix_view<std::uint8_t> o) { return unpack_ue8m0(view(words.data(), 3, 2), o); },
        [](std::int64_t r, std::int64_t g) { return r == 3 && (g + 3) / 4 == 2 ? status::ok : status::bad_shape; }, [] { return 0; });
    std::vector<std::uint8_t> back(18, 0xA5);
    check_input_shape(
        3, 2, 0u, back, [&](matrix_view<std::uint32_t> w) { return unpack_ue8m0(w, view(back.data(), 3, 6)); }, &words);
    CHECK(back == e);
    const float s[6] = {1.0f, 2.0f, 0.25f, 65536.0f, 0.5f, 1.0f};
    check_output_shape(2, 3, std::uint8_t{0xA5}, [&](matrix_view<std::uint8_t> o) { return ue8m0_from_pow2_scales(view(s, 2, 3), o); });
  }
}

namespace {

// pack_int32 of codes q [rows, cols] read through a strided view (padding `pad`, which would be out of
// range or change the words if read) and/or written through a strided output (padding 0xDEADBEEF) gives
// `want`, the words of the contiguous call, and leaves every padding element as it was.
template <class T>
void check_strided_pack_int32(const std::vector<T>& q, std::int64_t rows, std::int64_t cols, int bits, packed_dim dim, T pad,
                              const std::vector<std::uint32_t>& want) {
  const extent pe = pack_int32_shape(rows, cols, bits, dim);
  const std::int64_t is = cols + 3, os = pe.cols + 2;
  const std::uint32_t wpad = 0xDEADBEEFu;
  const std::vector<T> qs = strided(q, rows, cols, is, pad);
  std::vector<std::uint32_t> a(want.size(), wpad);
  REQUIRE(pack_int32(view(qs.data(), rows, cols, is), bits, dim, view(a.data(), pe.rows, pe.cols)) == status::ok);
  CHECK(a == want);
  for (const bool strided_in : {false, true}) {
    std::vector<std::uint32_t> o(static_cast<std::size_t>(pe.rows * os), wpad);
    const auto in = strided_in ? view(qs.data(), rows, cols, is) : view(q.data(), rows, cols);
    REQUIRE(pack_int32(in, bits, dim, view(o.data(), pe.rows, pe.cols, os)) == status::ok);
    CHECK(gather(o, pe.rows, pe.cols, os) == want);
    CHECK(padding_holds(o, pe.rows, pe.cols, os, wpad));
  }
}

// unpack_int32 of `words` (the words of q) read through a strided view (padding all ones) into a strided
// output (padding 0x5A) gives q and leaves the padding.
template <class T>
void check_strided_unpack_int32(const std::vector<std::uint32_t>& words, std::int64_t rows, std::int64_t cols, int bits, packed_dim dim,
                                const std::vector<T>& q) {
  const extent pe = pack_int32_shape(rows, cols, bits, dim);
  const std::int64_t is = pe.cols + 1, os = cols + 5;
  const std::vector<std::uint32_t> ws = strided(words, pe.rows, pe.cols, is, 0xFFFFFFFFu);
  const T pad = static_cast<T>(0x5A);
  std::vector<T> o(static_cast<std::size_t>(rows * os), pad);
  REQUIRE(unpack_int32(view(ws.data(), pe.rows, pe.cols, is), bits, dim, view(o.data(), rows, cols, os)) == status::ok);
  CHECK(gather(o, rows, cols, os) == q);
  CHECK(padding_holds(o, rows, cols, os, pad));
}

}  // namespace

TEST_CASE("views (pack_int32 / unpack_int32): strided inputs give the contiguous words, strided outputs keep their padding") {
  // 1..8 bits, both packed_dim, int8 / uint8 / int32 codes
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{5, 67}, {37, 13}, {4, 64}, {3, 8}, {1, 40}};
  for (int bits = 1; bits <= 8; ++bits)
    for (const packed_dim dim : {packed_dim::cols, packed_dim::rows})
      for (const auto& [rows_, cols_] : shapes) {
        const std::int64_t rows = rows_, cols = cols_;
        CAPTURE(bits);
        CAPTURE(static_cast<int>(dim));
        CAPTURE(rows);
        CAPTURE(cols);
        const int half = 1 << (bits - 1);
        std::vector<std::int8_t> q(static_cast<std::size_t>(rows * cols));
        std::vector<std::uint8_t> u(q.size());
        for (std::size_t i = 0; i < q.size(); ++i) {
          q[i] = static_cast<std::int8_t>(rnd(20 + bits, i, -half, 2u * half));
          u[i] = static_cast<std::uint8_t>(q[i] + half);
        }
        const std::vector<std::int32_t> q32(q.begin(), q.end());
        const extent pe = pack_int32_shape(rows, cols, bits, dim);
        std::vector<std::uint32_t> want(static_cast<std::size_t>(pe.rows * pe.cols));
        REQUIRE(pack_int32(view(q.data(), rows, cols), bits, dim, view(want.data(), pe.rows, pe.cols)) == status::ok);
        // Padding codes: out of range for every width below 8 (8-bit int8/uint8 take any byte).
        check_strided_pack_int32(q, rows, cols, bits, dim, std::int8_t{100}, want);
        check_strided_pack_int32(u, rows, cols, bits, dim, std::uint8_t{0xFF}, want);
        check_strided_pack_int32(q32, rows, cols, bits, dim, std::int32_t{1 << 20}, want);
        check_strided_unpack_int32(want, rows, cols, bits, dim, q);
        check_strided_unpack_int32(want, rows, cols, bits, dim, u);
      }
}

TEST_CASE("views: 2-D pack_nibbles / unpack_nibbles equal row-by-row 1-D calls (odd cols: each row's own last byte)") {
  for (const nibble_order order : {nibble_order::low_first, nibble_order::high_first})
    for (const std::int64_t cols : {1, 7, 13, 8}) {
      const std::int64_t rows = 5, pb = (cols + 1) / 2;
      CAPTURE(static_cast<int>(order));
      CAPTURE(cols);
      std::vector<std::uint8_t> c(static_cast<std::size_t>(rows * cols));
      for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<std::uint8_t>(rnd(90, i, 0, 16));
      std::vector<std::uint8_t> want(static_cast<std::size_t>(rows * pb), 0xA5);
      for (std::int64_t r = 0; r < rows; ++r)
        REQUIRE(pack_nibbles(view(c.data() + r * cols, cols), order, view(want.data() + r * pb, pb)) == status::ok);
      std::vector<std::uint8_t> p(want.size(), 0xA5);
      REQUIRE(pack_nibbles(view(c.data(), rows, cols), order, view(p.data(), rows, pb)) == status::ok);
      CHECK(p == want);
      if (cols % 2)  // the last byte of each row holds one code and a zero nibble
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::uint8_t last = p[static_cast<std::size_t>(r * pb + pb - 1)];
          CHECK(unpack_nibble(last, 0, order) == c[static_cast<std::size_t>(r * cols + cols - 1)]);
          CHECK(unpack_nibble(last, 1, order) == 0u);
        }
      // strided codes (padding 0xFF: out of range if read) into strided bytes
      const auto cs = strided(c, rows, cols, cols + 3, std::uint8_t{0xFF});
      std::vector<std::uint8_t> ps(static_cast<std::size_t>(rows * (pb + 2)), 0xA5);
      REQUIRE(pack_nibbles(view(cs.data(), rows, cols, cols + 3), order, view(ps.data(), rows, pb, pb + 2)) == status::ok);
      CHECK(gather(ps, rows, pb, pb + 2) == want);
      CHECK(padding_holds(ps, rows, pb, pb + 2, std::uint8_t{0xA5}));
      // unpack: 2-D == row-by-row 1-D == the codes, strided both ways
      std::vector<std::uint8_t> back1(c.size(), 0x5A), back2(c.size(), 0x5A);
      for (std::int64_t r = 0; r < rows; ++r)
        REQUIRE(unpack_nibbles(view(want.data() + r * pb, pb), order, view(back1.data() + r * cols, cols)) == status::ok);
      REQUIRE(unpack_nibbles(view(want.data(), rows, pb), order, view(back2.data(), rows, cols)) == status::ok);
      CHECK(back1 == c);
      CHECK(back2 == c);
      const auto ws = strided(want, rows, pb, pb + 1, std::uint8_t{0xFF});
      std::vector<std::uint8_t> bs(static_cast<std::size_t>(rows * (cols + 2)), 0x5A);
      REQUIRE(unpack_nibbles(view(ws.data(), rows, pb, pb + 1), order, view(bs.data(), rows, cols, cols + 2)) == status::ok);
      CHECK(gather(bs, rows, cols, cols + 2) == c);
      CHECK(padding_holds(bs, rows, cols, cols + 2, std::uint8_t{0x5A}));
    }
  // A code out of range in the last row: nothing written in any row.
  std::vector<std::uint8_t> c(15, 3), p(12, 0xA5);
  c[13] = 16;
  CHECK(pack_nibbles(view(c.data(), 3, 5), nibble_order::low_first, view(p.data(), 3, 3)) == status::code_out_of_range);
  CHECK(std::all_of(p.begin(), p.end(), [](std::uint8_t v) { return v == 0xA5; }));
}

TEST_CASE_FIXTURE(bad_stride_buffers, "views (pack): row_stride below cols with more than one row is bad_stride, nothing written") {
  SUBCASE("pack_int32 / unpack_int32") {
    CHECK(pack_int32(view(q8.data(), 2, 16, 15), 4, packed_dim::cols, view(w.data(), 2, 2)) == bs);
    CHECK(pack_int32(view(q8.data(), 2, 16, 0), 4, packed_dim::cols, view(w.data(), 2, 2)) == bs);
    CHECK(pack_int32(view(u8.data(), 2, 16, 15), 4, packed_dim::cols, view(w.data(), 2, 2)) == bs);
    CHECK(pack_int32(view(i32.data(), 2, 16, 15), 4, packed_dim::cols, view(w.data(), 2, 2)) == bs);
    CHECK(pack_int32(view(q8.data(), 2, 16), 4, packed_dim::cols, view(w.data(), 2, 2, 1)) == bs);
    CHECK(pack_int32(view(q8.data(), 16, 3, 2), 4, packed_dim::rows, view(w.data(), 2, 3)) == bs);
    CHECK(pack_int32(view(q8.data(), 16, 3), 4, packed_dim::rows, view(w.data(), 2, 3, 2)) == bs);
    CHECK(unpack_int32(view(win.data(), 2, 2, 1), 4, packed_dim::cols, view(o8.data(), 2, 16)) == bs);
    CHECK(unpack_int32(view(win.data(), 2, 2), 4, packed_dim::cols, view(o8.data(), 2, 16, 15)) == bs);
    CHECK(unpack_int32(view(win.data(), 2, 2), 4, packed_dim::cols, view(ou8.data(), 2, 16, 15)) == bs);
    CHECK(untouched());
    // One row: the stride is never used, any value is fine.
    CHECK(pack_int32(view(q8.data(), 1, 16, 0), 4, packed_dim::cols, view(w.data(), 1, 2, 0)) == status::ok);
    CHECK(w[0] == 0x99999999u);
  }
  SUBCASE("pack_nibbles / unpack_nibbles / UE8M0") {
    CHECK(pack_nibbles(view(u8.data(), 2, 7, 6), nibble_order::low_first, view(ou8.data(), 2, 4)) == bs);
    CHECK(pack_nibbles(view(u8.data(), 2, 7), nibble_order::low_first, view(ou8.data(), 2, 4, 3)) == bs);
    CHECK(unpack_nibbles(view(u8.data(), 2, 4, 3), nibble_order::low_first, view(ou8.data(), 2, 7)) == bs);
    CHECK(unpack_nibbles(view(u8.data(), 2, 4), nibble_order::low_first, view(ou8.data(), 2, 7, 6)) == bs);
    CHECK(pack_ue8m0(view(u8.data(), 2, 6, 5), view(w.data(), 2, 2)) == bs);
    CHECK(pack_ue8m0(view(u8.data(), 2, 6), view(w.data(), 2, 2, 1)) == bs);
    CHECK(unpack_ue8m0(view(win.data(), 2, 2, 1), view(ou8.data(), 2, 6)) == bs);
    CHECK(unpack_ue8m0(view(win.data(), 2, 2), view(ou8.data(), 2, 6, 5)) == bs);
    CHECK(ue8m0_from_pow2_scales(view(f32.data(), 2, 2, 1), view(ou8.data(), 2, 2)) == bs);
    CHECK(ue8m0_from_pow2_scales(view(f32.data(), 2, 2), view(ou8.data(), 2, 2, 1)) == bs);
    CHECK(untouched());
  }
}
