// tests/layout/test_compressed_tensors.cpp: the compressed-tensors pack-quantized layout of
// qnum/layout/compressed_tensors.hpp (ct::) — int8 and two's complement uint8 codes, int8 and int32 zero
// points, bad input statuses, views (exact shapes, row strides), and golden vectors from compressed-tensors'
// own PackedQuantizationCompressor.compress (W4A16 g32 sym, g128 asym), recorded in
// tests/data/layouts_golden.txt by tools/gen_golden.py --only layouts. The dense packing it is built on
// (pack_to_int32) is tested in test_pack.cpp. ct::quantize_pack_weight is checked against quantize followed
// by ct::pack_weight (qnum-convert's W4A16 tests compare its output with compressed-tensors' own).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "layout_test_util.hpp"
#include "qnum/codec.hpp"
#include "qnum/host/simd.hpp"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/static_scheme.hpp"
#include "qnum/view.hpp"

using namespace qnum;
using namespace qtest::layout;

TEST_CASE("compressed-tensors PackedQuantizationCompressor golden (W4A16 g32 sym, g128 asym)") {
  int n = 0;
  for (auto [it, end] = golden().equal_range("ctcompress"); it != end; ++it, ++n) {
    const rec& r = it->second;
    const std::int64_t N = r[0][0], K = r[0][1], g = r[0][2];
    const bool sym = r[0][3] != 0;
    ct::pack_quantized_shape s;
    REQUIRE(ct::pack_quantized_layout(N, K, 4, g, &s) == status::ok);
    CHECK(s.packed_rows == r[6][0]);
    CHECK(s.packed_cols == r[6][1]);
    const auto codes = as<std::int8_t>(r[1]);
    const auto zp = as<std::int8_t>(r[2]);
    std::vector<std::uint32_t> wp(s.packed_rows * s.packed_cols);
    REQUIRE(ct::pack_weight(view(codes.data(), N, K), 4, view(wp.data(), s.packed_rows, s.packed_cols)) == status::ok);
    CHECK(wp == as<std::uint32_t>(r[3]));
    std::int32_t shape[2];
    REQUIRE(ct::weight_shape(N, K, shape) == status::ok);
    CHECK(shape[0] == r[5][0]);
    CHECK(shape[1] == r[5][1]);
    if (!sym) {
      CHECK(s.zp_rows == r[6][2]);
      CHECK(s.zp_cols == r[6][3]);
      std::vector<std::uint32_t> zw(s.zp_rows * s.zp_cols);
      REQUIRE(ct::pack_zero_point(view(zp.data(), N, s.groups), 4, view(zw.data(), s.zp_rows, s.zp_cols)) == status::ok);
      CHECK(zw == as<std::uint32_t>(r[4]));
      // The int32 zero points quantize writes give the same words.
      const std::vector<std::int32_t> zp32(zp.begin(), zp.end());
      std::vector<std::uint32_t> zw32(zw.size(), 0xDEADBEEFu);
      REQUIRE(ct::pack_zero_point(view(zp32.data(), N, s.groups), 4, view(zw32.data(), s.zp_rows, s.zp_cols)) == status::ok);
      CHECK(zw32 == as<std::uint32_t>(r[4]));
      std::vector<std::int8_t> zb(zp.size());
      REQUIRE(ct::unpack_zero_point(view(zw.data(), s.zp_rows, s.zp_cols), 4, view(zb.data(), N, s.groups)) == status::ok);
      CHECK(zb == zp);
    }
  }
  CHECK(n == 4);
}

TEST_CASE("bad input gives a status (compressed-tensors)") {
  ct::pack_quantized_shape cs;
  CHECK(ct::pack_quantized_layout(4, 64, 4, 0, &cs) == status::bad_group);
}

TEST_CASE("ct::pack_zero_point of int32 zero points: out of range writes nothing, in range gives the int8 words") {
  std::int32_t s32[8] = {-8, -1, 0, 7, 1, 2, 3, 8};  // signed 4-bit: 8 does not fit
  std::uint32_t ct_w[1] = {0};
  CHECK(ct::pack_zero_point(view(s32, 8, 1), 4, view(ct_w, 1, 1)) == status::code_out_of_range);
  CHECK(ct_w[0] == 0u);  // nothing written
  s32[7] = 4;
  CHECK(ct::pack_zero_point(view(s32, 8, 1), 4, view(ct_w, 1, 1)) == status::ok);
  const std::int8_t s8[8] = {-8, -1, 0, 7, 1, 2, 3, 4};
  std::uint32_t ct_w8[1] = {0};
  REQUIRE(ct::pack_zero_point(view(s8, 8, 1), 4, view(ct_w8, 1, 1)) == status::ok);
  CHECK(ct_w[0] == ct_w8[0]);
}

TEST_CASE("ct::pack_weight of uint8 codes (qnum's two's complement codes) == ct::pack_weight of the sign-extended codes") {
  for (int bits = 1; bits <= 8; ++bits)
    for (const std::int64_t k : {64, 72, 67, 1}) {
      const std::int64_t n = 3;
      std::vector<std::uint8_t> codes(static_cast<std::size_t>(n * k));
      std::vector<std::int8_t> q(codes.size());
      for (std::size_t i = 0; i < codes.size(); ++i) {
        const int v = static_cast<int>((i * 37 + 11) % (1u << bits)) - (1 << (bits - 1));  // every signed value
        q[i] = static_cast<std::int8_t>(v);
        codes[i] = static_cast<std::uint8_t>(static_cast<unsigned>(v) & ((1u << bits) - 1u));
      }
      const std::int64_t words = n * ((k * bits + 31) / 32);
      std::vector<std::uint32_t> a(static_cast<std::size_t>(words)), b(a.size());
      const std::int64_t wpr = packed_words(k, bits);
      REQUIRE(qnum::ct::pack_weight(view(q.data(), n, k), bits, view(a.data(), n, wpr)) == qnum::status::ok);
      REQUIRE(qnum::ct::pack_weight(view(codes.data(), n, k), bits, view(b.data(), n, wpr)) == qnum::status::ok);
      std::vector<std::int8_t> back(q.size());
      REQUIRE(qnum::ct::unpack_weight(view(b.data(), n, wpr), bits, view(back.data(), n, k)) == qnum::status::ok);
      CHECK(back == q);
      CHECK_MESSAGE(a == b, "bits " << bits << " k " << k);
    }
  std::uint8_t bad[8] = {0x10, 0, 0, 0, 0, 0, 0, 0};
  std::uint32_t w[1] = {0xDEADBEEFu};
  CHECK(qnum::ct::pack_weight(view(bad, 1, 8), 4, view(w, 1, 1)) == qnum::status::code_out_of_range);
  CHECK(qnum::ct::pack_weight(view(bad, 1, 8), 0, view(w, 1, 1)) == qnum::status::bad_bits);
  CHECK(w[0] == 0xDEADBEEFu);
}

// ---------------------------------------------------------------------------------------------------
// What the views add: exact output shapes, row strides.

TEST_CASE("views (compressed-tensors): an output one row or column off its shape is bad_shape and nothing is written") {
  const std::int64_t n = 5, k = 20, groups = 3;
  const int bits = 4;
  std::vector<std::int8_t> q(static_cast<std::size_t>(n * k));
  std::vector<std::uint8_t> codes(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<std::int8_t>(rnd(4, i, -8, 16));
    codes[i] = static_cast<std::uint8_t>(q[i] & 15);
  }
  const std::int64_t wpr = packed_words(k, bits);  // 3
  check_output_shape(n, wpr, 0xDEADBEEFu, [&](matrix_view<std::uint32_t> o) { return ct::pack_weight(view(q.data(), n, k), bits, o); });
  check_output_shape(n, wpr, 0xDEADBEEFu,
                     [&](matrix_view<std::uint32_t> o) { return ct::pack_weight(view(codes.data(), n, k), bits, o); });
  std::vector<std::uint32_t> wp(static_cast<std::size_t>(n * wpr));
  REQUIRE(ct::pack_weight(view(q.data(), n, k), bits, view(wp.data(), n, wpr)) == status::ok);
  check_near_shapes(
      n, k, std::int8_t{0x55}, [&](matrix_view<std::int8_t> o) { return ct::unpack_weight(view(wp.data(), n, wpr), bits, o); },
      [&](std::int64_t r, std::int64_t c) { return r == n && packed_words(c, bits) == wpr ? status::ok : status::bad_shape; },
      [] { return 0; });
  std::vector<std::int8_t> back(q.size(), 0x55);
  check_input_shape(
      n, wpr, 0u, back, [&](matrix_view<std::uint32_t> w) { return ct::unpack_weight(w, bits, view(back.data(), n, k)); }, &wp);
  CHECK(back == q);
  // zero points [20, 3] packed along the 20: [3, 3]
  const std::int64_t zn = 20, zr = packed_words(zn, bits);
  std::vector<std::int8_t> zp(static_cast<std::size_t>(zn * groups));
  for (std::size_t i = 0; i < zp.size(); ++i) zp[i] = static_cast<std::int8_t>(rnd(5, i, -8, 16));
  const std::vector<std::int32_t> zp32(zp.begin(), zp.end());
  check_output_shape(zr, groups, 0xDEADBEEFu,
                     [&](matrix_view<std::uint32_t> o) { return ct::pack_zero_point(view(zp.data(), zn, groups), bits, o); });
  check_output_shape(zr, groups, 0xDEADBEEFu,
                     [&](matrix_view<std::uint32_t> o) { return ct::pack_zero_point(view(zp32.data(), zn, groups), bits, o); });
  std::vector<std::uint32_t> zw(static_cast<std::size_t>(zr * groups));
  REQUIRE(ct::pack_zero_point(view(zp.data(), zn, groups), bits, view(zw.data(), zr, groups)) == status::ok);
  check_near_shapes(
      zn, groups, std::int8_t{0x55},
      [&](matrix_view<std::int8_t> o) { return ct::unpack_zero_point(view(zw.data(), zr, groups), bits, o); },
      [&](std::int64_t r, std::int64_t c) { return packed_words(r, bits) == zr && c == groups ? status::ok : status::bad_shape; },
      [] { return 0; });
  std::vector<std::int8_t> zb(zp.size(), 0x55);
  check_input_shape(
      zr, groups, 0u, zb, [&](matrix_view<std::uint32_t> w) { return ct::unpack_zero_point(w, bits, view(zb.data(), zn, groups)); }, &zw);
  CHECK(zb == zp);
}

TEST_CASE("views (ct::pack_weight / ct::unpack_weight): strided inputs give the contiguous words, strided outputs keep their padding") {
  // int8 and uint8 codes, 1..8 bits
  const std::int64_t n = 4;
  for (int bits = 1; bits <= 8; ++bits)
    for (const std::int64_t k : {64, 67, 9, 1}) {
      CAPTURE(bits);
      CAPTURE(k);
      const int half = 1 << (bits - 1);
      std::vector<std::int8_t> q(static_cast<std::size_t>(n * k));
      std::vector<std::uint8_t> codes(q.size());
      for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = static_cast<std::int8_t>(rnd(30 + bits, i, -half, 2u * half));
        codes[i] = static_cast<std::uint8_t>(static_cast<unsigned>(q[i]) & ((1u << bits) - 1u));
      }
      const std::int64_t wpr = packed_words(k, bits), is = k + 5, os = wpr + 1;
      std::vector<std::uint32_t> want(static_cast<std::size_t>(n * wpr));
      REQUIRE(ct::pack_weight(view(q.data(), n, k), bits, view(want.data(), n, wpr)) == status::ok);
      check_strided_pack(q, std::int8_t{100}, codes, std::uint8_t{0xFF}, n, k, is, n, wpr, os, want,
                         [&](auto in, auto out) { return ct::pack_weight(in, bits, out); });
      check_strided_unpack(want, n, wpr, os, q, n, k, is, [&](auto w, auto out) { return ct::unpack_weight(w, bits, out); });
    }
}

TEST_CASE_FIXTURE(bad_stride_buffers,
                  "views (compressed-tensors): row_stride below cols with more than one row is bad_stride, nothing written") {
  CHECK(ct::pack_weight(view(q8.data(), 2, 16, 15), 4, view(w.data(), 2, 2)) == bs);
  CHECK(ct::pack_weight(view(u8.data(), 2, 16, 15), 4, view(w.data(), 2, 2)) == bs);
  CHECK(ct::pack_weight(view(q8.data(), 2, 16), 4, view(w.data(), 2, 2, 1)) == bs);
  CHECK(ct::pack_weight(view(u8.data(), 2, 16), 4, view(w.data(), 2, 2, 1)) == bs);
  CHECK(ct::unpack_weight(view(win.data(), 2, 2, 1), 4, view(o8.data(), 2, 16)) == bs);
  CHECK(ct::unpack_weight(view(win.data(), 2, 2), 4, view(o8.data(), 2, 16, 15)) == bs);
  CHECK(ct::pack_zero_point(view(q8.data(), 16, 2, 1), 4, view(w.data(), 2, 2)) == bs);
  CHECK(ct::pack_zero_point(view(i32.data(), 16, 2, 1), 4, view(w.data(), 2, 2)) == bs);
  CHECK(ct::pack_zero_point(view(q8.data(), 16, 2), 4, view(w.data(), 2, 2, 1)) == bs);
  CHECK(ct::unpack_zero_point(view(win.data(), 2, 2, 1), 4, view(o8.data(), 16, 2)) == bs);
  CHECK(ct::unpack_zero_point(view(win.data(), 2, 2), 4, view(o8.data(), 16, 2, 1)) == bs);
  CHECK(untouched());
}

// ---------------------------------------------------------------------------------------------------
// ct::quantize_pack_weight: quantize + pack_weight in one call.

namespace {

// Weights [n, k] at row stride `stride` (padding NaN): values over several binades, and where the tensor
// has them: row 0's first `zero_span` elements zero (an all-zero group), a NaN, +-Inf, a subnormal, a huge value.
std::vector<float> fused_weights(std::int64_t n, std::int64_t k, std::int64_t stride, std::int64_t zero_span, std::uint64_t seed) {
  std::vector<float> x(static_cast<std::size_t>(n * stride), std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) {
      const std::uint32_t u = random_bits(seed, static_cast<std::uint64_t>(r * k + c));
      x[static_cast<std::size_t>(r * stride + c)] =
          std::ldexp(static_cast<float>(u & 0xFFFF) / 65536.0f - 0.5f, static_cast<int>((u >> 16) % 8) - 3);
    }
  for (std::int64_t c = 0; c < zero_span && c < k; ++c) x[static_cast<std::size_t>(c)] = 0.0f;
  const std::pair<std::int64_t, float> special[] = {{k + 17, std::numeric_limits<float>::quiet_NaN()},
                                                    {k + 40, std::numeric_limits<float>::infinity()},
                                                    {2 * k + 41, -std::numeric_limits<float>::infinity()},
                                                    {k + 71, 1e-40f},
                                                    {2 * k + 90, 3e38f}};
  for (const auto& [i, v] : special)
    if (i < n * k) x[static_cast<std::size_t>(i / k * stride + i % k)] = v;
  return x;
}

// The fused call against quantize + ct::pack_weight on the same input: words, scale bytes and zero points
// equal, the outputs' row padding untouched.
template <class H, class T>
void check_fused(const H& h, const std::vector<T>& x, dtype t, std::int64_t n, std::int64_t k, std::int64_t stride, std::int64_t group,
                 rounding rd) {
  const scheme<qint4> s = h.get();
  const int eb = dtype_bytes(s.store);
  const bool asym = s.kind == scheme_kind::asymmetric;
  const std::int64_t ng = (k + group - 1) / group, wp = packed_words(k, 4);
  const matrix_view<const T> in{x.data(), n, k, stride, t};
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(n * k));
  std::vector<std::uint32_t> sc_ref(static_cast<std::size_t>(n * ng), 0xA5A5A5A5u);
  std::vector<std::int32_t> z_ref(static_cast<std::size_t>(n * ng), 0x5A5A5A5A);
  REQUIRE(quantize(h, in, group_size(group), view(codes.data(), n, k), scale_view{sc_ref.data(), n, ng, ng, eb},
                   asym ? view(z_ref.data(), n, ng) : matrix_view<std::int32_t>{}, rd) == status::ok);
  std::vector<std::uint32_t> w_ref(static_cast<std::size_t>(n * wp));
  REQUIRE(ct::pack_weight(view(codes.data(), n, k), 4, view(w_ref.data(), n, wp)) == status::ok);

  const std::int64_t ws = wp + 3, ss = ng + 2;
  std::vector<std::uint32_t> w(static_cast<std::size_t>(n * ws), 0xDEADBEEFu), sc(static_cast<std::size_t>(n * ss), 0xA5A5A5A5u);
  std::vector<std::int32_t> z(static_cast<std::size_t>(n * ss), 0x5A5A5A5A);
  REQUIRE(ct::quantize_pack_weight(h, in, group, view(w.data(), n, wp, ws), scale_view{sc.data(), n, ng, ss * 4 / eb, eb},
                                   asym ? view(z.data(), n, ng, ss) : matrix_view<std::int32_t>{}, rd) == status::ok);
  CHECK(gather(w, n, wp, ws) == w_ref);
  CHECK(padding_holds(w, n, wp, ws, 0xDEADBEEFu));
  for (std::int64_t r = 0; r < n; ++r) {  // scale rows of ng elements of eb bytes, ss words apart
    CAPTURE(r);
    const auto* got = reinterpret_cast<const unsigned char*>(sc.data() + r * ss);
    const auto* want = reinterpret_cast<const unsigned char*>(sc_ref.data()) + r * ng * eb;
    CHECK(std::memcmp(got, want, static_cast<std::size_t>(ng * eb)) == 0);
    for (std::int64_t b = ng * eb; b < ss * 4; ++b) CHECK(got[b] == 0xA5);
  }
  if (asym) {
    CHECK(gather(z, n, ng, ss) == z_ref);
    CHECK(padding_holds(z, n, ng, ss, std::int32_t{0x5A5A5A5A}));
  } else {
    CHECK(z == std::vector<std::int32_t>(z.size(), 0x5A5A5A5A));
  }
}

template <class H>
void check_fused_scheme(const H& h) {
  struct shape {
    std::int64_t n, k, group;
  };
  // Groups of 8 to 8200 against the 4096-code chunk: tails of groups and of words, rows of several chunks (of
  // whole groups that do not divide 4096: 24, 1000), a group longer than a chunk (and one longer than the row).
  const shape shapes[] = {{3, 64, 32}, {5, 100, 32}, {4, 37, 16}, {3, 6, 8},      {2, 4296, 128},
                          {2, 5000, 8}, {2, 5000, 24}, {2, 9100, 1000}, {2, 9000, 8192}, {1, 8200, 8200}, {3, 130, 4104}};
  for (const auto& sh : shapes)
    for (const std::int64_t pad : {0, 5})
      for (const rounding rd : {nearest_even(), stochastic_seed(7)}) {
        CAPTURE(sh.n);
        CAPTURE(sh.k);
        CAPTURE(sh.group);
        CAPTURE(pad);
        CAPTURE(static_cast<int>(rd.mode));
        const std::int64_t stride = sh.k + pad;
        const std::vector<float> x = fused_weights(sh.n, sh.k, stride, sh.group, static_cast<std::uint64_t>(sh.k * 3 + pad));
        std::vector<std::uint16_t> xb(x.size()), xh(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
          xb[i] = to_bf16(x[i]);
          xh[i] = to_fp16(x[i]);
        }
        check_fused(h, x, dtype::fp32, sh.n, sh.k, stride, sh.group, rd);
        check_fused(h, xb, dtype::bf16, sh.n, sh.k, stride, sh.group, rd);
        check_fused(h, xh, dtype::fp16, sh.n, sh.k, stride, sh.group, rd);
      }
}

}  // namespace

TEST_CASE("ct::quantize_pack_weight == quantize + ct::pack_weight: int4 schemes, fp32/bf16/fp16, tails, chunks, strides, roundings, every SIMD target") {
  each_simd_target([] {
    check_fused_scheme(fixed_scheme<presets::ct_w4a16_sym>{});
    check_fused_scheme(fixed_scheme<presets::ct_w4a16_sym_bf16>{});
    check_fused_scheme(fixed_scheme<presets::ct_w4a16_asym>{});
    check_fused_scheme(fixed_scheme<presets::ct_w4a16_sym_bf16_work>{});
    check_fused_scheme(fixed_scheme<presets::ct_w4a16_asym_bf16_work>{});
    check_fused_scheme(runtime_scheme<qint4>{presets::torchao_int4_sym});
    check_fused_scheme(runtime_scheme<qint4>{presets::slime_int4_checkpoint});
  });
}

TEST_CASE("the lanes' prefetch rule: a chunk of a weight reads ahead as the whole weight does") {
  // One 4096-column row, as ct::quantize_pack_weight hands quantize a chunk: 16 KiB alone, beyond the caches as a
  // piece of a weight over 2 MiB (whole_bytes), not at 2 MiB exactly; a whole_bytes below the call's own is ignored.
  detail::simd::group_grid g{};
  g.rows = 1;
  g.cols = g.in_stride = g.out_stride = 4096;
  CHECK_FALSE(g.input_beyond_caches(4));
  g.whole_bytes = 136 * 4096 * 4;
  CHECK(g.input_beyond_caches(4));
  CHECK(g.input_beyond_caches(2));
  g.whole_bytes = std::int64_t{1} << 21;
  CHECK_FALSE(g.input_beyond_caches(4));
  g.whole_bytes = 0;
  g.rows = 129;  // 129 rows of 16 KiB: the call's own input
  CHECK(g.input_beyond_caches(4));
  g.whole_bytes = 4096;
  CHECK(g.input_beyond_caches(4));
  CHECK_FALSE(g.input_beyond_caches(2));
}

TEST_CASE("ct::quantize_pack_weight == quantize + ct::pack_weight: a weight beyond the caches (its chunks read ahead)") {
  // More than 2 MiB of input, so each row's chunk takes the prefetching batches (the rule above): their bits
  // must equal quantize's on the whole weight. (That they prefetch is a speed, shown by qnum-bench-host.)
  const std::int64_t k = 4096, n = 136, nb = 264;  // fp32: 2.2 MB; bf16: 2.2 MB with nb rows
  const std::vector<float> x = fused_weights(nb, k, k, 128, 11);
  std::vector<std::uint16_t> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xb[i] = to_bf16(x[i]);
  each_simd_target([&] {
    check_fused(fixed_scheme<presets::ct_w4a16_sym>{}, x, dtype::fp32, n, k, k, 128, nearest_even());
    check_fused(fixed_scheme<presets::ct_w4a16_asym>{}, x, dtype::fp32, n, k, k, 128, nearest_even());
    check_fused(runtime_scheme<qint4>{presets::slime_int4_checkpoint}, xb, dtype::bf16, nb, k, k, 32, nearest_even());
  });
}

TEST_CASE("ct::quantize_pack_weight: bad input gives a status and writes nothing; empty weights are ok") {
  const std::int64_t n = 3, k = 40, group = 16, ng = 3, wp = 5;
  const std::vector<float> x = fused_weights(n, k, k, 0, 9);
  std::vector<std::uint32_t> w(static_cast<std::size_t>(n * wp), 0xDEADBEEFu);
  std::vector<float> sc(static_cast<std::size_t>(n * ng), -1.0f);
  std::vector<std::int32_t> z(static_cast<std::size_t>(n * ng), 0x5A5A5A5A);
  const auto w0 = w;
  const auto sc0 = sc;
  const auto z0 = z;
  auto untouched = [&] { return w == w0 && same_bits(sc, sc0) && z == z0; };
  const auto in = view(x.data(), n, k);
  const auto wv = view(w.data(), n, wp);
  const auto sv = scales_of(sc.data(), n, ng);
  const auto zv = view(z.data(), n, ng);
  constexpr auto sym = presets::ct_w4a16_sym;
  constexpr auto asym = presets::ct_w4a16_asym;
  for (const std::int64_t g : {0, -8, 12, 4, 1})
    CHECK(ct::quantize_pack_weight(sym, in, g, wv, sv) == status::bad_group);
  CHECK(ct::quantize_pack_weight(sym, matrix_view<const float>{x.data(), n, k, k, dtype::bf16}, group, wv, sv) == status::bad_type);
  CHECK(ct::quantize_pack_weight(sym, matrix_view<const float>{nullptr, n, k, k}, group, wv, sv) == status::null_pointer);
  CHECK(ct::quantize_pack_weight(sym, matrix_view<const float>{x.data(), n, k, k - 1}, group, wv, sv) == status::bad_stride);
  CHECK(ct::quantize_pack_weight(sym, matrix_view<const float>{x.data(), -1, k, k}, group, wv, sv) == status::bad_shape);
  CHECK(ct::quantize_pack_weight(sym, in, group, wv, scales_of(sc.data(), n, ng - 1)) == status::bad_scale_buffer);
  CHECK(ct::quantize_pack_weight(sym, in, group, wv, scales_of(static_cast<float*>(nullptr), n, ng)) == status::null_pointer);
  CHECK(ct::quantize_pack_weight(presets::ct_w4a16_sym_bf16, in, group, wv, sv) == status::bad_scale_buffer);  // bf16 scales
  CHECK(ct::quantize_pack_weight(asym, in, group, wv, sv) == status::null_pointer);                           // no zero points
  CHECK(ct::quantize_pack_weight(asym, in, group, wv, sv, view(z.data(), n, ng - 1)) == status::bad_scale_buffer);
  for (const auto& [r, c] : near_shapes(n, wp))
    if (r != n || c != wp) CHECK(ct::quantize_pack_weight(asym, in, group, view(w.data(), r, c), sv, zv) == status::bad_shape);
  CHECK(ct::quantize_pack_weight(sym, in, group, matrix_view<std::uint32_t>{nullptr, n, wp, wp}, sv) == status::null_pointer);
  CHECK(untouched());
  // Empty weights: ok, nothing read or written (even through null outputs).
  CHECK(ct::quantize_pack_weight(asym, matrix_view<const float>{x.data(), 0, k, k}, group, matrix_view<std::uint32_t>{}, scale_view{},
                                 matrix_view<std::int32_t>{}) == status::ok);
  CHECK(ct::quantize_pack_weight(sym, matrix_view<const float>{x.data(), n, 0, 0}, group, matrix_view<std::uint32_t>{}, scale_view{}) ==
        status::ok);
  CHECK(untouched());
  // And the valid call writes every output.
  REQUIRE(ct::quantize_pack_weight(asym, in, group, wv, sv, zv) == status::ok);
  CHECK(w != w0);
  CHECK(!same_bits(sc, sc0));
}

namespace {

// FP4 test weights [n, k] at row stride `stride` (padding NaN), group by group (G elements): random magnitudes
// over 2^-150 .. 2^126 (MXFP4's code 0 and code 254, NVFP4 scales that saturate or vanish), all-zero groups,
// groups of -0.0 and subnormals, groups at E2M1's ties under a power-of-two scale (6 * 2^e first: MXFP4's scale
// is then 2^e), and a NaN, an Inf and a 3e38 group.
std::vector<float> fp4_weights(std::int64_t n, std::int64_t k, std::int64_t stride, int g, std::uint64_t seed) {
  std::vector<float> x(static_cast<std::size_t>(n * stride), std::numeric_limits<float>::quiet_NaN());
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 0.5f};
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t j = 0; j < k / g; ++j) {
      const std::uint64_t gi = static_cast<std::uint64_t>(r * (k / g) + j);
      const std::uint32_t h = random_bits(seed ^ 0x5EED, gi);
      const int e = static_cast<int>(h % 277) - 150;
      float* xg = x.data() + r * stride + j * g;
      for (int i = 0; i < g; ++i) {
        const std::uint32_t u = random_bits(seed, gi * 64 + static_cast<std::uint64_t>(i));
        const float sign = (u >> 31) ? -1.0f : 1.0f;
        switch ((h >> 16) % 8) {
          case 0: xg[i] = 0.0f; break;
          case 1: xg[i] = (u & 1) ? -0.0f : sign * std::ldexp(static_cast<float>(u & 0xFFFF), -149 - 8); break;
          case 2: xg[i] = i == 0 ? std::ldexp(6.0f, e / 2) : sign * ties[u % 8] * std::ldexp(1.0f, e / 2); break;
          default: xg[i] = sign * std::ldexp(static_cast<float>(u & 0xFFFFFF) / 16777216.0f, e); break;
        }
      }
    }
  const std::pair<std::int64_t, float> special[] = {{k + 17, std::numeric_limits<float>::quiet_NaN()},
                                                    {k + 40, std::numeric_limits<float>::infinity()},
                                                    {2 * k + 41, -std::numeric_limits<float>::infinity()},
                                                    {2 * k + 90, 3e38f}};
  for (const auto& [i, v] : special)
    if (i < n * k) x[static_cast<std::size_t>(i / k * stride + i % k)] = v;
  return x;
}

// Weights whose quotients x / code_scale lie at E2M1's midpoints or one ulp beside them, for groups whose code
// scale follows (ct_fp4_params) from their first element, the largest, under `global` (NVFP4): where a quotient
// formed another way (a reciprocal without its correction) would round the other way.
std::vector<float> fp4_near_ties(ct::fp4_kind kind, std::int64_t n, std::int64_t k, std::int64_t stride, float global, std::uint64_t seed) {
  const int g = ct::fp4_group_size(kind);
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::vector<float> x(static_cast<std::size_t>(n * stride), 0.0f);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t j = 0; j < k / g; ++j) {
      const std::uint64_t gi = static_cast<std::uint64_t>(r * (k / g) + j);
      const std::uint32_t h = random_bits(seed ^ 0x71E5, gi);
      const float amax = std::ldexp(1.0f + static_cast<float>(h & 0xFFFFF) / 1048576.0f, static_cast<int>((h >> 20) % 7) - 3);
      const float cs = presets::ct_fp4_params(kind == ct::fp4_kind::nvfp4, amax, global).code_scale;
      float* xg = x.data() + r * stride + j * g;
      xg[0] = amax;
      for (int i = 1; i < g; ++i) {
        const std::uint32_t u = random_bits(seed, gi * 64 + static_cast<std::uint64_t>(i));
        float v = mids[u % 7] * cs;
        if ((u >> 8) % 3 == 1) v = std::nextafter(v, 0.0f);
        if ((u >> 8) % 3 == 2) v = std::nextafter(v, 1e30f);
        xg[i] = std::min(v, amax) * ((u >> 31) ? -1.0f : 1.0f);
      }
    }
  return x;
}

// The definition, element by element without SIMD lanes: each group's parameters (ct_fp4_params of its largest
// |x| as row_stats gives it), quantize_value's codes, ct_fp4_zero_sign, element 2i in the low nibble of byte i.
template <class T>
void fp4_reference(ct::fp4_kind kind, const std::vector<T>& x, dtype t, std::int64_t n, std::int64_t k, std::int64_t stride,
                   float global, bool bf16_work, std::vector<std::uint8_t>& packed, std::vector<std::uint8_t>& scales) {
  const bool nv = kind == ct::fp4_kind::nvfp4;
  const int g = ct::fp4_group_size(kind);
  const simd_target saved = host_simd_target();
  REQUIRE(set_host_simd_target(simd_target::none));
  packed.assign(static_cast<std::size_t>(n * k / 2), 0);
  scales.assign(static_cast<std::size_t>(n * k / g), 0);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t j = 0; j < k / g; ++j) {
      const T* xg = x.data() + r * stride + j * g;
      const group_params p = presets::ct_fp4_params(nv, row_stats(xg, g, t).amax, global, bf16_work);
      std::uint8_t c[32];
      for (int i = 0; i < g; ++i) c[i] = static_cast<std::uint8_t>(quantize_value(presets::ct_fp4, p, detail::load_elem(xg + i, t), rne));
      presets::ct_fp4_zero_sign(p, xg, g, c, t);
      scales[static_cast<std::size_t>(r * (k / g) + j)] = static_cast<std::uint8_t>(p.scale_code);
      for (int i = 0; i < g; i += 2)
        packed[static_cast<std::size_t>((r * k + j * g + i) / 2)] = static_cast<std::uint8_t>((c[i] & 15) | (c[i + 1] & 15) << 4);
    }
  REQUIRE(set_host_simd_target(saved));
}

template <class T>
void check_fp4_pack(ct::fp4_kind kind, const std::vector<T>& x, dtype t, std::int64_t n, std::int64_t k, std::int64_t stride,
                    float global, bool bf16_work) {
  CAPTURE(static_cast<int>(kind));
  CAPTURE(static_cast<int>(t));
  CAPTURE(k);
  CAPTURE(global);
  CAPTURE(bf16_work);
  const int g = ct::fp4_group_size(kind);
  std::vector<std::uint8_t> want_p, want_s;
  fp4_reference(kind, x, t, n, k, stride, global, bf16_work, want_p, want_s);
  const std::int64_t ps = k / 2 + 3, ss = k / g + 2;  // padded output rows (0xA5 must stay)
#if QNUM_HOST_SIMD
  const detail::simd::fma_division fma_division = detail::simd::fma_division_mode();
#endif
  each_simd_target([&] {
    for (const bool fma : {false, true}) {  // x / code_scale by the division, and by the reciprocal and FMAs
      CAPTURE(fma);
#if QNUM_HOST_SIMD
      detail::simd::set_fma_division(fma ? detail::simd::fma_division::everywhere : detail::simd::fma_division::never);
#else
      if (fma) break;
#endif
      std::vector<std::uint8_t> p(static_cast<std::size_t>(n * ps), 0xA5), s(static_cast<std::size_t>(n * ss), 0xA5);
      REQUIRE(ct::quantize_pack_fp4(kind, matrix_view<const T>{x.data(), n, k, stride, t}, global, view(p.data(), n, k / 2, ps),
                                    view(s.data(), n, k / g, ss), bf16_work) == status::ok);
      CHECK(gather(p, n, k / 2, ps) == want_p);
      CHECK(gather(s, n, k / g, ss) == want_s);
      CHECK(padding_holds(p, n, k / 2, ps, std::uint8_t{0xA5}));
      CHECK(padding_holds(s, n, k / g, ss, std::uint8_t{0xA5}));
    }
  });
#if QNUM_HOST_SIMD
  detail::simd::set_fma_division(fma_division);
#endif
}

}  // namespace

TEST_CASE("ct::quantize_pack_fp4 == the per-element definition: NVFP4 and MXFP4, fp32/bf16/fp16, fp32 and bf16 work, odd scales, every SIMD target") {
  CHECK(encode<fp8_e4m3>(0.125f, rne, satfinite) == 0x20);  // the lanes' constant for NVFP4's zero-scale rule
  const std::int64_t n = 7;
  for (const ct::fp4_kind kind : {ct::fp4_kind::nvfp4, ct::fp4_kind::mxfp4})
    for (const std::int64_t k : {std::int64_t{32}, std::int64_t{224}, ct::quantize_pack_chunk + 96}) {
      const std::int64_t stride = k + 8;
      // Groups of every magnitude (batches that mix the lanes' cases); weights of a few octaves (whole batches
      // within the FMA division's bounds: its fast path), both with a NaN, an Inf and a 3e38 group; quotients at
      // and beside E2M1's ties.
      for (const int set : {0, 1, 2}) {
      CAPTURE(set);
      const std::vector<float> x = set == 0 ? fp4_weights(n, k, stride, ct::fp4_group_size(kind), static_cast<std::uint64_t>(k))
                                   : set == 1 ? fused_weights(n, k, stride, 16, static_cast<std::uint64_t>(k) + 1)
                                              : fp4_near_ties(kind, n, k, stride, presets::ct_nvfp4_global_scale(0.75f), static_cast<std::uint64_t>(k) + 2);
      std::vector<std::uint16_t> xb(x.size()), xh(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        xb[i] = to_bf16(x[i]);
        xh[i] = to_fp16(x[i]);
      }
      // NVFP4's global scale: the fp32 and bf16 rules on a typical amax, and out-of-range ones (huge: every block
      // scale saturates; tiny; 0, negative, NaN and Inf: the definition alone)
      std::vector<float> globals = {0.0f};
      if (kind == ct::fp4_kind::nvfp4)
        globals = {presets::ct_nvfp4_global_scale(0.75f), presets::ct_nvfp4_global_scale_bf16_work(3.0f), 3.4e38f, 1e-30f, 0.0f,
                   -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
      for (const float global : globals)
        for (const bool bw : {false, true}) {
          check_fp4_pack(kind, x, dtype::fp32, n, k, stride, global, bw);
          check_fp4_pack(kind, xb, dtype::bf16, n, k, stride, global, bw);
          if (!bw) check_fp4_pack(kind, xh, dtype::fp16, n, k, stride, global, bw);
        }
      }
    }
}

TEST_CASE("ct::quantize_pack_fp4: bad shapes give a status and write nothing; empty weights are ok") {
  const std::int64_t n = 2, k = 64;
  std::vector<float> x(static_cast<std::size_t>(n * k), 1.0f);
  std::vector<std::uint8_t> p(static_cast<std::size_t>(n * k / 2), 0xA5), s(static_cast<std::size_t>(n * k / 16), 0xA5);
  const auto in = view(static_cast<const float*>(x.data()), n, k);
  const float gs = presets::ct_nvfp4_global_scale(1.0f);
  CHECK(ct::quantize_pack_fp4(ct::fp4_kind::nvfp4, view(static_cast<const float*>(x.data()), n, k - 8), gs, view(p.data(), n, k / 2 - 4),
                              view(s.data(), n, k / 16 - 1)) == status::bad_shape);  // k - 8: not whole groups
  CHECK(ct::quantize_pack_fp4(ct::fp4_kind::mxfp4, view(static_cast<const float*>(x.data()), n, k - 16), gs, view(p.data(), n, k / 2 - 8),
                              view(s.data(), n, k / 32)) == status::bad_shape);
  CHECK(ct::quantize_pack_fp4(ct::fp4_kind::nvfp4, in, gs, view(p.data(), n, k / 2 - 1), view(s.data(), n, k / 16)) != status::ok);
  CHECK(ct::quantize_pack_fp4(ct::fp4_kind::nvfp4, in, gs, view(p.data(), n, k / 2), view(s.data(), n - 1, k / 16)) != status::ok);
  CHECK(ct::quantize_pack_fp4(ct::fp4_kind::nvfp4, matrix_view<const float>{nullptr, n, k, k}, gs, view(p.data(), n, k / 2),
                              view(s.data(), n, k / 16)) == status::null_pointer);
  CHECK(std::all_of(p.begin(), p.end(), [](std::uint8_t b) { return b == 0xA5; }));
  CHECK(std::all_of(s.begin(), s.end(), [](std::uint8_t b) { return b == 0xA5; }));
  CHECK(ct::quantize_pack_fp4(ct::fp4_kind::nvfp4, matrix_view<const float>{x.data(), 0, k, k}, gs, matrix_view<std::uint8_t>{p.data(), 0, k / 2, k / 2},
                              matrix_view<std::uint8_t>{s.data(), 0, k / 16, k / 16}) == status::ok);
  REQUIRE(ct::quantize_pack_fp4(ct::fp4_kind::nvfp4, in, gs, view(p.data(), n, k / 2), view(s.data(), n, k / 16)) == status::ok);
  CHECK(p[0] == 0x77);  // 1.0 in a group of amax 1: x / code_scale = 6, E2M1 code 0x7, in both nibbles
}
