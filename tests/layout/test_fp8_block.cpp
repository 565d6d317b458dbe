// tests/layout/test_fp8_block.cpp: the DeepSeek FP8 block layout of qnum/layout/fp8_block.hpp (fp8_block::,
// E4M3 codes with one fp32 weight_scale_inv per 128x128 block) — hand examples of dequantize and
// check_scales (no golden file: the values are worked by hand), shapes not made by fp8_block::layout,
// nothing written unless ok, and views (exact shapes, row strides).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "layout_test_util.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/view.hpp"

using namespace qnum;
using namespace qtest::layout;

TEST_CASE("DeepSeek FP8 block layout") {
  fp8_block::shape s;
  REQUIRE(fp8_block::layout(300, 129, &s) == status::ok);
  CHECK(s.scale_rows == 3);
  CHECK(s.scale_cols == 2);
  std::vector<std::uint8_t> w(300 * 129, 0x38);  // e4m3 1.0
  std::vector<float> sc(8);  // 3 x 2 scales (8: the 4 x 2 view of the hand-built shape below)
  for (int i = 0; i < 6; ++i) sc[i] = static_cast<float>(1 << i) * 0.5f;
  std::vector<float> y(w.size());
  REQUIRE(fp8_block::dequantize(s, view(w.data(), s.n, s.k), view(sc.data(), s.scale_rows, s.scale_cols), view(y.data(), s.n, s.k)) ==
          status::ok);
  CHECK(y[0] == 0.5f);
  CHECK(y[128] == 1.0f);         // row 0, col 128 -> block (0, 1)
  CHECK(y[299 * 129 + 128] == 16.0f);  // block (2, 1)
  std::uint8_t e[8];  // 3 x 2 scale bytes; 8 so that the 4 x 2 view of the hand-built shape below is honest
  CHECK(fp8_block::check_scales(s, view(sc.data(), 3, 2), true, view(e, 3, 2)) == status::ok);
  CHECK(e[0] == 126);
  CHECK(e[5] == 131);
  sc[3] = 0.3f;
  e[0] = 0xA5;
  CHECK(fp8_block::check_scales(s, view(sc.data(), 3, 2), true, view(e, 3, 2)) == status::code_out_of_range);
  CHECK(e[0] == 0xA5);  // nothing written unless ok
  CHECK(e[5] == 131);
  CHECK(fp8_block::check_scales(s, view(sc.data(), 3, 2), false) == status::ok);
  CHECK(fp8_block::check_scales(s, view(sc.data(), 3, 2), false, {}) == status::ok);
  CHECK(fp8_block::check_scales(s, view(sc.data(), 3, 2), true) == status::code_out_of_range);
  sc[3] = 4.0f;
  CHECK(fp8_block::check_scales(s, view(sc.data(), 3, 2), true) == status::ok);  // e omitted: checks only
  CHECK(e[0] == 0xA5);
  // A shape not made by fp8_block::layout: bad_shape.
  fp8_block::shape hand = s;
  hand.scale_rows = 4;
  CHECK(fp8_block::check_scales(hand, view(sc.data(), 4, 2), true, view(e, 4, 2)) == status::bad_shape);
  CHECK(fp8_block::dequantize(hand, view(w.data(), s.n, s.k), view(sc.data(), 4, 2), view(y.data(), s.n, s.k)) ==
        status::bad_shape);
  CHECK(e[0] == 0xA5);
}

// ---------------------------------------------------------------------------------------------------
// What the views add: exact output shapes, row strides.

TEST_CASE("views (fp8_block): an output one row or column off its shape is bad_shape and nothing is written") {
  fp8_block::shape s;
  REQUIRE(fp8_block::layout(300, 129, &s) == status::ok);
  std::vector<float> sc(6);
  for (int i = 0; i < 6; ++i) sc[i] = static_cast<float>(1 << i) * 0.5f;
  check_output_shape(3, 2, std::uint8_t{0xA5},
                     [&](matrix_view<std::uint8_t> e) { return fp8_block::check_scales(s, view(sc.data(), 3, 2), true, e); });
  std::vector<std::uint8_t> e(6, 0xA5);
  check_input_shape(3, 2, 1.0f, e, [&](matrix_view<float> v) { return fp8_block::check_scales(s, v, true, view(e.data(), 3, 2)); });
  CHECK(e[5] == 127);  // the exact shape's scale_inv of ones
  std::vector<std::uint8_t> w(300 * 129);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::uint8_t>(rnd(11, i, 0, 0x7F));
  const float pad = detail::bits_to_float(0x7F812345u);
  check_output_shape(300, 129, pad,
                     [&](matrix_view<float> o) { return fp8_block::dequantize(s, view(w.data(), 300, 129), view(sc.data(), 3, 2), o); });
  std::vector<float> y(w.size(), pad);
  check_input_shape(300, 129, std::uint8_t{0x38}, y, [&](matrix_view<std::uint8_t> wv) {
    return fp8_block::dequantize(s, wv, view(sc.data(), 3, 2), view(y.data(), 300, 129));
  });
  std::fill(y.begin(), y.end(), pad);
  check_input_shape(3, 2, 1.0f, y, [&](matrix_view<float> sv) {
    return fp8_block::dequantize(s, view(w.data(), 300, 129), sv, view(y.data(), 300, 129));
  });
}

TEST_CASE("views (fp8_block dequantize, check_scales): strided inputs give the contiguous words, strided outputs keep their padding") {
  fp8_block::shape s;
  REQUIRE(fp8_block::layout(200, 260, &s) == status::ok);
  std::vector<std::uint8_t> w(static_cast<std::size_t>(s.n * s.k));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::uint8_t>(rnd(70, i, 0, 256) & 0xF7);  // no NaN code
  std::vector<float> sc(static_cast<std::size_t>(s.scale_rows * s.scale_cols));
  for (std::size_t i = 0; i < sc.size(); ++i) sc[i] = static_cast<float>(rnd(71, i, 1, 100)) / 64.0f;
  std::vector<float> want(w.size());
  REQUIRE(fp8_block::dequantize(s, view(w.data(), s.n, s.k), view(sc.data(), s.scale_rows, s.scale_cols), view(want.data(), s.n, s.k)) ==
          status::ok);
  const float fpad = detail::bits_to_float(0x7F812345u);
  const auto ws = strided(w, s.n, s.k, s.k + 3, std::uint8_t{0x7F});  // e4m3 NaN if read
  const auto scs = strided(sc, s.scale_rows, s.scale_cols, s.scale_cols + 2, fpad);
  std::vector<float> o(static_cast<std::size_t>(s.n * (s.k + 1)), fpad);
  REQUIRE(fp8_block::dequantize(s, view(ws.data(), s.n, s.k, s.k + 3), view(scs.data(), s.scale_rows, s.scale_cols, s.scale_cols + 2),
                                view(o.data(), s.n, s.k, s.k + 1)) == status::ok);
  CHECK(same_bits(gather(o, s.n, s.k, s.k + 1), want));
  CHECK(padding_holds(o, s.n, s.k, s.k + 1, fpad));
  // check_scales through a strided scale view, writing a strided e
  std::vector<float> p2(sc.size());
  for (std::size_t i = 0; i < p2.size(); ++i) p2[i] = detail::bits_to_float(static_cast<std::uint32_t>(rnd(72, i, 100, 50)) << 23);
  std::vector<std::uint8_t> e(p2.size());
  REQUIRE(fp8_block::check_scales(s, view(p2.data(), s.scale_rows, s.scale_cols), true, view(e.data(), s.scale_rows, s.scale_cols)) ==
          status::ok);
  const auto p2s = strided(p2, s.scale_rows, s.scale_cols, s.scale_cols + 2, fpad);
  std::vector<std::uint8_t> es(static_cast<std::size_t>(s.scale_rows * (s.scale_cols + 1)), 0xA5);
  REQUIRE(fp8_block::check_scales(s, view(p2s.data(), s.scale_rows, s.scale_cols, s.scale_cols + 2), true,
                                  view(es.data(), s.scale_rows, s.scale_cols, s.scale_cols + 1)) == status::ok);
  CHECK(gather(es, s.scale_rows, s.scale_cols, s.scale_cols + 1) == e);
  CHECK(padding_holds(es, s.scale_rows, s.scale_cols, s.scale_cols + 1, std::uint8_t{0xA5}));
}

TEST_CASE_FIXTURE(bad_stride_buffers, "views (fp8_block): row_stride below cols with more than one row is bad_stride, nothing written") {
  fp8_block::shape s;
  REQUIRE(fp8_block::layout(256, 256, &s) == status::ok);
  std::vector<std::uint8_t> wt(256 * 256, 0x38);
  std::vector<float> y(256 * 256, -1.0f);
  CHECK(fp8_block::check_scales(s, view(f32.data(), 2, 2, 1), true, view(ou8.data(), 2, 2)) == bs);
  CHECK(fp8_block::check_scales(s, view(f32.data(), 2, 2), true, view(ou8.data(), 2, 2, 1)) == bs);
  CHECK(fp8_block::dequantize(s, view(wt.data(), 256, 256, 255), view(f32.data(), 2, 2), view(y.data(), 256, 256)) == bs);
  CHECK(fp8_block::dequantize(s, view(wt.data(), 256, 256), view(f32.data(), 2, 2, 1), view(y.data(), 256, 256)) == bs);
  CHECK(fp8_block::dequantize(s, view(wt.data(), 256, 256), view(f32.data(), 2, 2), view(y.data(), 256, 256, 255)) == bs);
  CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -1.0f; }));
  CHECK(untouched());
}
