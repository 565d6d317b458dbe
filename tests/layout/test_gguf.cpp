// tests/layout/test_gguf.cpp: the GGUF Q4_0 / Q4_1 / Q8_0 block codecs of qnum/layout/gguf.hpp (gguf::) —
// the documented Q4_0 sign example, every nibble at every position, bad input statuses, views (exact
// shapes, rows through strided views, NaN/Inf writes nothing), and golden vectors from gguf-py's
// gguf.quants (bit-exact with ggml's C reference), recorded in tests/data/layouts_golden.txt by
// tools/gen_golden.py --only layouts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "layout_test_util.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/view.hpp"
#include "test_util.hpp"

using namespace qnum;
using namespace qtest::layout;

TEST_CASE("bad input gives a status (gguf)") {
  float x[32] = {};
  std::uint8_t b[34];
  CHECK(gguf::quantize(gguf::type::q4_0, view(x, 31), view(b, 18)) == status::bad_shape);
  x[3] = detail::bits_to_float(0x7FC00000u);
  CHECK(gguf::quantize(gguf::type::q8_0, view(x, 32), view(b, 34)) == status::non_finite);
}

TEST_CASE("GGUF Q4_0 / Q4_1 / Q8_0 golden (gguf-py)") {
  const std::pair<const char*, gguf::type> types[] = {
      {"gguf_q4_0", gguf::type::q4_0}, {"gguf_q4_1", gguf::type::q4_1}, {"gguf_q8_0", gguf::type::q8_0}};
  for (const auto& type : types) {
    const char* name = type.first;  // not a structured binding: CAPTURE's lambda captures it (C++20 only)
    const gguf::type t = type.second;
    CAPTURE(name);
    auto it = golden().find(name);
    REQUIRE(it != golden().end());
    const rec& r = it->second;
    const std::int64_t n = r[0][0];
    std::vector<float> x(n);
    for (std::int64_t i = 0; i < n; ++i) x[i] = qtest::from_bits(static_cast<std::uint32_t>(r[1][i]));
    std::vector<std::uint8_t> b(gguf::row_bytes(t, n));
    const status st = gguf::quantize(t, view(x.data(), n), view(b.data(), gguf::row_bytes(t, n)));
    CHECK((st == status::ok || st == status::scale_overflow));
    const auto want = as<std::uint8_t>(r[2]);
    REQUIRE(b.size() == want.size());
    int bad = 0;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (b[i] != want[i] && bad++ < 5) MESSAGE(name << " byte " << i << " got " << int(b[i]) << " want " << int(want[i]));
    CHECK(bad == 0);
    std::vector<float> y(n);
    REQUIRE(gguf::dequantize(t, view(want.data(), gguf::row_bytes(t, n)), view(y.data(), n)) == status::ok);
    bad = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (qtest::bits(y[i]) != static_cast<std::uint32_t>(r[3][i]) && bad++ < 5)
        MESSAGE(name << " dq " << i << " got " << qtest::hex(qtest::bits(y[i])) << " want " << qtest::hex(static_cast<std::uint32_t>(r[3][i])));
    CHECK(bad == 0);
  }
}

TEST_CASE("GGUF Q4_0 documented sign example and exhaustive nibble placement") {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.0f;
  x[0] = -1.0f;
  x[16] = 0.9f;
  std::uint8_t b[18];
  gguf::quantize_block_q4_0(x, b);
  CHECK(detail::get_u16(b) == to_fp16(0.125f));
  CHECK(b[2] == 0xF0);  // extreme -> nibble 0 (low: first half), 0.9/0.125+8.5 = 15.7 -> 15 (high)
  // Every nibble value at every position survives quantize -> dequantize when x is on the grid.
  for (int pos = 0; pos < 32; ++pos)
    for (int v = 0; v < 16; ++v) {
      for (int j = 0; j < 32; ++j) x[j] = 0.0f;
      x[pos == 0 ? 1 : 0] = -8.0f;  // fixes d = 1
      x[pos] = static_cast<float>(v - 8);
      gguf::quantize_block_q4_0(x, b);
      float y[32];
      gguf::dequantize_block_q4_0(b, y);
      CHECK(y[pos] == static_cast<float>(v - 8));
    }
}

// ---------------------------------------------------------------------------------------------------
// What the views add: exact output shapes, row strides.

TEST_CASE("views (gguf): an output one row or column off its shape is bad_shape and nothing is written") {
  const std::int64_t rows = 3, cols = 64;
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rnd(12, i, -1000, 2001)) / 256.0f;
  for (const gguf::type t : {gguf::type::q4_0, gguf::type::q4_1, gguf::type::q8_0}) {
    CAPTURE(static_cast<int>(t));
    const std::int64_t rb = gguf::row_bytes(t, cols);
    check_output_shape(rows, rb, std::uint8_t{0xA5},
                       [&](matrix_view<std::uint8_t> o) { return gguf::quantize(t, view(x.data(), rows, cols), o); });
    std::vector<std::uint8_t> b(static_cast<std::size_t>(rows * rb));
    REQUIRE(gguf::quantize(t, view(x.data(), rows, cols), view(b.data(), rows, rb)) == status::ok);
    const float pad = detail::bits_to_float(0x7F812345u);
    check_output_shape(rows, cols, pad, [&](matrix_view<float> y) { return gguf::dequantize(t, view(b.data(), rows, rb), y); });
    std::vector<float> y(x.size(), pad);
    check_input_shape(rows, rb, std::uint8_t{0}, y,
                      [&](matrix_view<std::uint8_t> in) { return gguf::dequantize(t, in, view(y.data(), rows, cols)); });
  }
}

TEST_CASE("views (gguf): rows through strided views (quantize, dequantize, NaN/Inf writes nothing in any row)") {
  const std::int64_t rows = 3, cols = 96, xs = cols + 4;
  const float nan_pad = detail::bits_to_float(0x7FC01234u);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rnd(80, i, -5000, 10001)) / 1024.0f;
  for (const gguf::type t : {gguf::type::q4_0, gguf::type::q4_1, gguf::type::q8_0}) {
    CAPTURE(static_cast<int>(t));
    const std::int64_t rb = gguf::row_bytes(t, cols), bs = rb + 3;
    // The 2-D call equals the 1-D call row by row.
    std::vector<std::uint8_t> want(static_cast<std::size_t>(rows * rb));
    REQUIRE(gguf::quantize(t, view(x.data(), rows, cols), view(want.data(), rows, rb)) == status::ok);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<std::uint8_t> one(static_cast<std::size_t>(rb));
      REQUIRE(gguf::quantize(t, view(x.data() + r * cols, cols), view(one.data(), rb)) == status::ok);
      CHECK(std::equal(one.begin(), one.end(), want.begin() + r * rb));
    }
    const auto xpad = strided(x, rows, cols, xs, nan_pad);  // NaN padding: non_finite if read
    for (const bool sin : {false, true})
      for (const bool sout : {false, true}) {
        CAPTURE(sin);
        CAPTURE(sout);
        const std::int64_t ist = sin ? xs : cols, ost = sout ? bs : rb;
        const float* xp = sin ? xpad.data() : x.data();
        std::vector<std::uint8_t> o(static_cast<std::size_t>(rows * ost), 0xA5);
        REQUIRE(gguf::quantize(t, view(xp, rows, cols, ist), view(o.data(), rows, rb, ost)) == status::ok);
        CHECK(gather(o, rows, rb, ost) == want);
        CHECK(padding_holds(o, rows, rb, ost, std::uint8_t{0xA5}));
        // One NaN or Inf in any row: non_finite, and not one byte of any row written (rows before it included).
        for (const std::uint32_t badbits : {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x7F800001u})
          for (std::int64_t br = 0; br < rows; ++br)
            for (const std::int64_t bc : {std::int64_t{0}, std::int64_t{40}, cols - 1}) {
              CAPTURE(br);
              CAPTURE(bc);
              CAPTURE(badbits);
              std::vector<float> xb(xp, xp + (rows - 1) * ist + cols);
              xb[static_cast<std::size_t>(br * ist + bc)] = detail::bits_to_float(badbits);
              std::vector<std::uint8_t> ob(static_cast<std::size_t>(rows * ost), 0xA5);
              CHECK(gguf::quantize(t, view(xb.data(), rows, cols, ist), view(ob.data(), rows, rb, ost)) == status::non_finite);
              CHECK(std::all_of(ob.begin(), ob.end(), [](std::uint8_t v) { return v == 0xA5; }));
            }
        // A finite block whose fp16 scale overflows: every row written, the same bytes as contiguous.
        std::vector<float> xo(xp, xp + (rows - 1) * ist + cols);
        xo[static_cast<std::size_t>(1 * ist + 5)] = 3.0e38f;
        xo[static_cast<std::size_t>(1 * ist + 6)] = -3.0e38f;
        const std::vector<float> xoc = sin ? gather(xo, rows, cols, ist) : xo;
        std::vector<std::uint8_t> wo(want.size());
        REQUIRE(gguf::quantize(t, view(xoc.data(), rows, cols), view(wo.data(), rows, rb)) == status::scale_overflow);
        std::vector<std::uint8_t> oo(static_cast<std::size_t>(rows * ost), 0xA5);
        CHECK(gguf::quantize(t, view(xo.data(), rows, cols, ist), view(oo.data(), rows, rb, ost)) == status::scale_overflow);
        CHECK(gather(oo, rows, rb, ost) == wo);
        CHECK(padding_holds(oo, rows, rb, ost, std::uint8_t{0xA5}));
      }
    // dequantize: strided bytes (padding 0xFF) into strided floats (NaN padding).
    std::vector<float> y(x.size());
    REQUIRE(gguf::dequantize(t, view(want.data(), rows, rb), view(y.data(), rows, cols)) == status::ok);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<float> one(static_cast<std::size_t>(cols));
      REQUIRE(gguf::dequantize(t, view(want.data() + r * rb, rb), view(one.data(), cols)) == status::ok);
      CHECK(std::memcmp(one.data(), y.data() + r * cols, sizeof(float) * static_cast<std::size_t>(cols)) == 0);
    }
    const auto bpad = strided(want, rows, rb, bs, std::uint8_t{0xFF});
    for (const bool sin : {false, true})
      for (const bool sout : {false, true}) {
        CAPTURE(sin);
        CAPTURE(sout);
        const std::int64_t ist = sin ? bs : rb, ost = sout ? xs : cols;
        std::vector<float> o(static_cast<std::size_t>(rows * ost), nan_pad);
        REQUIRE(gguf::dequantize(t, view(sin ? bpad.data() : want.data(), rows, rb, ist), view(o.data(), rows, cols, ost)) == status::ok);
        CHECK(same_bits(gather(o, rows, cols, ost), y));
        CHECK(padding_holds(o, rows, cols, ost, nan_pad));
      }
  }
}

TEST_CASE_FIXTURE(bad_stride_buffers, "views (gguf): row_stride below cols with more than one row is bad_stride, nothing written") {
  std::vector<float> x(64, 0.5f), y(64, -1.0f);
  for (const gguf::type t : {gguf::type::q4_0, gguf::type::q4_1, gguf::type::q8_0}) {
    const std::int64_t rb = gguf::row_bytes(t, 32);
    CHECK(gguf::quantize(t, view(x.data(), 2, 32, 31), view(ou8.data(), 2, rb)) == bs);
    CHECK(gguf::quantize(t, view(x.data(), 2, 32), view(ou8.data(), 2, rb, rb - 1)) == bs);
    CHECK(gguf::dequantize(t, view(u8.data(), 2, rb, rb - 1), view(y.data(), 2, 32)) == bs);
    CHECK(gguf::dequantize(t, view(u8.data(), 2, rb), view(y.data(), 2, 32, 31)) == bs);
  }
  CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -1.0f; }));
  CHECK(untouched());
  // One row: the stride is never used.
  CHECK(gguf::quantize(gguf::type::q8_0, view(x.data(), 1, 32, 0), view(ou8.data(), 1, 34, 0)) == status::ok);
}
