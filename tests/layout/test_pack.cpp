// tests/layout/test_pack.cpp: packing primitives and layouts — exhaustive round trips, hand examples from
// the references' documentation, bad input statuses, and golden vectors from the real references.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/layout/marlin.hpp"
#include "qnum/layout/pack.hpp"
#include "test_util.hpp"

using namespace qnum;

namespace {

using rec = std::vector<std::vector<std::int64_t>>;

// Records of tests/data/layouts_golden.txt: kind | group | group ...
const std::multimap<std::string, rec>& golden() {
  static std::multimap<std::string, rec> m = [] {
    std::multimap<std::string, rec> r;
    std::stringstream ss(qtest::read_text(qtest::data_path("layouts_golden.txt")));
    std::string line;
    while (std::getline(ss, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::stringstream ls(line);
      std::string kind, tok;
      ls >> kind;
      rec g;
      while (ls >> tok) {
        if (tok == "|") g.emplace_back();
        else g.back().push_back(std::stoll(tok));
      }
      r.emplace(kind, g);
    }
    return r;
  }();
  return m;
}

template <class T>
std::vector<T> as(const std::vector<std::int64_t>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("dense packing: documented examples") {
  // compressed-tensors: q = [-4..3] int4 -> 0xBA987654
  const std::int8_t q[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
  std::uint32_t w = 0;
  REQUIRE(pack_int32(q, 1, 8, 4, packed_dim::cols, &w) == status::ok);
  CHECK(w == 0xBA987654u);
  // AWQ order of nibbles 4..11 -> 0xB975A864
  std::uint8_t z[8] = {4, 5, 6, 7, 8, 9, 10, 11};
  std::uint32_t a = 0;
  REQUIRE(awq::pack_qzeros(z, 8, 1, &a) == status::ok);
  CHECK(a == 0xB975A864u);
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
          std::vector<std::uint32_t> ws(pack_int32_size(rows, cols, bits, pd)), wu(ws.size());
          REQUIRE(pack_int32(s.data(), rows, cols, bits, pd, ws.data()) == status::ok);
          REQUIRE(pack_int32(u.data(), rows, cols, bits, pd, wu.data()) == status::ok);
          // signed offset-binary and unsigned codes c give the same words (c = q + 2^(b-1))
          CHECK(ws == wu);
          std::vector<std::int8_t> s2(s.size());
          std::vector<std::uint8_t> u2(u.size());
          REQUIRE(unpack_int32(ws.data(), rows, cols, bits, pd, s2.data()) == status::ok);
          REQUIRE(unpack_int32(wu.data(), rows, cols, bits, pd, u2.data()) == status::ok);
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
  REQUIRE(pack_nibbles(c, 5, nibble_order::high_first, p) == status::ok);
  CHECK(p[0] == 0x12);
  CHECK(p[2] == 0xF0);
  REQUIRE(unpack_nibbles(p, 5, nibble_order::high_first, back) == status::ok);
  CHECK(std::vector<std::uint8_t>(back, back + 5) == std::vector<std::uint8_t>(c, c + 5));
  c[1] = 16;
  CHECK(pack_nibbles(c, 5, nibble_order::low_first, p) == status::code_out_of_range);

  // UE8M0: every byte value at every byte position.
  for (int v = 0; v < 256; ++v) {
    std::uint8_t e[6] = {0, 0, 0, 0, 0, 0};
    for (int pos = 0; pos < 6; ++pos) {
      e[pos] = static_cast<std::uint8_t>(v);
      std::uint32_t w[2] = {0, 0};
      REQUIRE(pack_ue8m0(e, 1, 6, w) == status::ok);
      CHECK(((pos < 4 ? w[0] : w[1]) >> (8 * (pos % 4)) & 0xFF) == std::uint32_t(v));
      std::uint8_t e2[6];
      REQUIRE(unpack_ue8m0(w, 1, 6, e2) == status::ok);
      CHECK(std::vector<std::uint8_t>(e2, e2 + 6) == std::vector<std::uint8_t>(e, e + 6));
      e[pos] = 0;
    }
  }
  const float s[3] = {1.0f, 0.0078125f, 3.0f};
  std::uint8_t e[3];
  CHECK(ue8m0_from_pow2_scales(s, 2, e) == status::ok);
  CHECK(e[0] == 127);
  CHECK(e[1] == 120);
  CHECK(ue8m0_from_pow2_scales(s, 3, e) == status::code_out_of_range);
}

TEST_CASE("bad input gives a status") {
  std::int8_t q[4] = {0, 1, 2, 8};
  std::uint32_t w[4];
  CHECK(pack_int32(q, 1, 4, 4, packed_dim::cols, w) == status::code_out_of_range);
  CHECK(pack_int32(q, 1, 3, 0, packed_dim::cols, w) == status::bad_bits);
  CHECK(pack_int32(q, 1, 3, 9, packed_dim::cols, w) == status::bad_bits);
  CHECK(pack_int32(q, -1, 3, 4, packed_dim::cols, w) == status::bad_shape);
  CHECK(pack_int32(static_cast<const std::int8_t*>(nullptr), 1, 3, 4, packed_dim::cols, w) == status::null_pointer);
  CHECK(pack_int32(q, 1, 3, 4, packed_dim::cols, nullptr) == status::null_pointer);
  CHECK(pack_int32(q, 0, 3, 4, packed_dim::cols, nullptr) == status::ok);  // empty
  const std::int8_t neg[1] = {-1};
  CHECK(pack_int32(reinterpret_cast<const std::uint8_t*>(neg), 1, 1, 4, packed_dim::cols, w) ==
        status::code_out_of_range);  // 255 does not fit 4 bits
  std::uint8_t u[16] = {};
  CHECK(gptq::pack_qweight(u, 2, 7, 4, w) == status::bad_shape);   // K not a multiple of 8
  CHECK(gptq::pack_qweight(u, 2, 8, 3, w) == status::bad_bits);
  CHECK(gptq::pack_qzeros(u, 8, 1, 4, gptq::format::v1, w) == status::code_out_of_range);  // zero 0 in v1
  CHECK(gptq::pack_qzeros(u, 8, 1, 4, gptq::format::v2, w) == status::ok);
  CHECK(awq::pack_qweight(u, 7, 2, w) == status::bad_shape);      // N not a multiple of 8
  CHECK(marlin::pack_weight(u, 32, 16, w) == status::bad_shape);  // N % 64
  CHECK(marlin::pack_weight(u, 64, 8, w) == status::bad_shape);   // K % 16
  float x[32] = {};
  std::uint8_t b[34];
  CHECK(gguf::quantize(gguf::type::q4_0, x, 31, b) == status::bad_shape);
  x[3] = detail::bits_to_float(0x7FC00000u);
  CHECK(gguf::quantize(gguf::type::q8_0, x, 32, b) == status::non_finite);
  ct::pack_quantized_shape cs;
  CHECK(ct::pack_quantized_layout(4, 64, 4, 0, &cs) == status::bad_group);
  const float sc[2] = {1.0f, 1e6f};
  std::uint16_t h[2];
  CHECK(gptq::scales_to_fp16_transposed(sc, 1, 2, h) == status::scale_overflow);
  std::uint16_t s16[64] = {};
  std::uint16_t o16[64];
  CHECK(marlin::permute_scales(s16, 64, 1, 64, 32, o16) == status::bad_group);  // G*g != K
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
    REQUIRE(pack_int32_size(rows, cols, bits, dim) == r[0][4] * r[0][5]);
    std::vector<std::uint32_t> w(want.size());
    REQUIRE(pack_int32(q.data(), rows, cols, bits, dim, w.data()) == status::ok);
    CHECK(w == want);
    std::vector<std::int8_t> back(q.size());
    REQUIRE(unpack_int32(want.data(), rows, cols, bits, dim, back.data()) == status::ok);
    CHECK(back == q);
  }
  CHECK(n == 8 * 2 * 6);
}

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
    REQUIRE(ct::pack_weight(codes.data(), N, K, 4, wp.data()) == status::ok);
    CHECK(wp == as<std::uint32_t>(r[3]));
    std::int32_t shape[2];
    REQUIRE(ct::weight_shape(N, K, shape) == status::ok);
    CHECK(shape[0] == r[5][0]);
    CHECK(shape[1] == r[5][1]);
    if (!sym) {
      CHECK(s.zp_rows == r[6][2]);
      CHECK(s.zp_cols == r[6][3]);
      std::vector<std::uint32_t> zw(s.zp_rows * s.zp_cols);
      REQUIRE(ct::pack_zero_point(zp.data(), N, s.groups, 4, zw.data()) == status::ok);
      CHECK(zw == as<std::uint32_t>(r[4]));
      // The int32 zero points quantize writes give the same words.
      const std::vector<std::int32_t> zp32(zp.begin(), zp.end());
      std::vector<std::uint32_t> zw32(zw.size(), 0xDEADBEEFu);
      REQUIRE(ct::pack_zero_point(zp32.data(), N, s.groups, 4, zw32.data()) == status::ok);
      CHECK(zw32 == as<std::uint32_t>(r[4]));
      std::vector<std::int8_t> zb(zp.size());
      REQUIRE(ct::unpack_zero_point(zw.data(), N, s.groups, 4, zb.data()) == status::ok);
      CHECK(zb == zp);
    }
  }
  CHECK(n == 4);
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
    const status st = gguf::quantize(t, x.data(), n, b.data());
    CHECK((st == status::ok || st == status::scale_overflow));
    const auto want = as<std::uint8_t>(r[2]);
    REQUIRE(b.size() == want.size());
    int bad = 0;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (b[i] != want[i] && bad++ < 5) MESSAGE(name << " byte " << i << " got " << int(b[i]) << " want " << int(want[i]));
    CHECK(bad == 0);
    std::vector<float> y(n);
    REQUIRE(gguf::dequantize(t, want.data(), n, y.data()) == status::ok);
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

TEST_CASE("torchao pack_uint4 golden") {
  auto it = golden().find("torchao_pack_uint4");
  REQUIRE(it != golden().end());
  const rec& r = it->second;
  const auto c = as<std::uint8_t>(r[1]);
  std::vector<std::uint8_t> p(c.size() / 2);
  REQUIRE(pack_nibbles(c.data(), static_cast<std::int64_t>(c.size()), nibble_order::low_first, p.data()) == status::ok);
  CHECK(p == as<std::uint8_t>(r[2]));
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
    REQUIRE(gptq::pack_qweight(q.data(), N, K, bits, qw.data()) == status::ok);
    CHECK(qw == as<std::uint32_t>(r[3]));
    std::vector<std::uint8_t> qb(q.size());
    REQUIRE(gptq::unpack_qweight(qw.data(), N, K, bits, qb.data()) == status::ok);
    CHECK(qb == q);
    REQUIRE(gptq::pack_qzeros(z.data(), N, K / g, bits, gptq::format::v1, qz.data()) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
    std::vector<std::int32_t> zb(z.size());
    REQUIRE(gptq::unpack_qzeros(qz.data(), N, K / g, bits, gptq::format::v1, zb.data()) == status::ok);
    CHECK(zb == as<std::int32_t>(r[2]));
    REQUIRE(gptq::pack_qzeros(z.data(), N, K / g, bits, gptq::format::v2, qz.data()) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[5]));
    const std::vector<std::int32_t> z32(z.begin(), z.end());  // the int32 zero points quantize writes
    std::fill(qz.begin(), qz.end(), 0u);
    REQUIRE(gptq::pack_qzeros(z32.data(), N, K / g, bits, gptq::format::v1, qz.data()) == status::ok);
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
    REQUIRE(awq::pack_qweight(q.data(), N, K, qw.data()) == status::ok);
    CHECK(qw == as<std::uint32_t>(r[3]));
    std::vector<std::uint8_t> qb(q.size());
    REQUIRE(awq::unpack_qweight(qw.data(), N, K, qb.data()) == status::ok);
    CHECK(qb == q);
    REQUIRE(awq::pack_qzeros(z.data(), N, K / g, qz.data()) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
    const std::vector<std::int32_t> z32(z.begin(), z.end());
    std::fill(qz.begin(), qz.end(), 0u);
    REQUIRE(awq::pack_qzeros(z32.data(), N, K / g, qz.data()) == status::ok);
    CHECK(qz == as<std::uint32_t>(r[4]));
  }
  CHECK(n == 3);
  // symmetric int4 v1 qzeros are 0x77777777
  std::uint8_t eight[8] = {8, 8, 8, 8, 8, 8, 8, 8};
  std::uint32_t w = 0;
  REQUIRE(gptq::pack_qzeros(eight, 8, 1, 4, gptq::format::v1, &w) == status::ok);
  CHECK(w == 0x77777777u);
  // int32 zero points outside the field: code_out_of_range, nothing else accepted.
  std::int32_t z32[8] = {8, 8, 8, 8, 8, 8, 8, 16};
  CHECK(gptq::pack_qzeros(z32, 8, 1, 4, gptq::format::v2, &w) == status::code_out_of_range);
  CHECK(awq::pack_qzeros(z32, 8, 1, &w) == status::code_out_of_range);
  z32[7] = -1;
  CHECK(gptq::pack_qzeros(z32, 8, 1, 4, gptq::format::v2, &w) == status::code_out_of_range);
  CHECK(awq::pack_qzeros(z32, 8, 1, &w) == status::code_out_of_range);
  z32[7] = 0;
  CHECK(gptq::pack_qzeros(z32, 8, 1, 4, gptq::format::v1, &w) == status::code_out_of_range);  // v1 stores zero - 1
  std::int32_t s32[8] = {-8, -1, 0, 7, 1, 2, 3, 8};  // signed 4-bit: 8 does not fit
  std::uint32_t ct_w[1] = {0};
  CHECK(ct::pack_zero_point(s32, 8, 1, 4, ct_w) == status::code_out_of_range);
  s32[7] = 4;
  CHECK(ct::pack_zero_point(s32, 8, 1, 4, ct_w) == status::ok);
  const std::int8_t s8[8] = {-8, -1, 0, 7, 1, 2, 3, 4};
  std::uint32_t ct_w8[1] = {0};
  REQUIRE(ct::pack_zero_point(s8, 8, 1, 4, ct_w8) == status::ok);
  CHECK(ct_w[0] == ct_w8[0]);
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
    REQUIRE(marlin::pack_weight(q.data(), N, K, m.data()) == status::ok);
    CHECK(m == as<std::uint32_t>(r[2]));
    // via the GPTQ checkpoint layout (gptq_marlin_repack)
    std::vector<std::uint32_t> qw(K / 8 * N), m2(m.size());
    REQUIRE(gptq::pack_qweight(q.data(), N, K, 4, qw.data()) == status::ok);
    REQUIRE(marlin::repack_gptq(qw.data(), K, N, m2.data()) == status::ok);
    CHECK(m2 == m);
    const auto s = as<std::uint16_t>(r[3]);
    const std::int64_t G = g == -1 ? 1 : K / g;
    std::vector<std::uint16_t> sp(s.size());
    REQUIRE(marlin::permute_scales(s.data(), N, G, K, g, sp.data()) == status::ok);
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
    REQUIRE(marlin::pack_weight(q.data(), N, K, m.data()) == status::ok);
    int ones = 0;
    for (auto w : m)
      for (int i = 0; i < 8; ++i) ones += nibble_of(w, i) == 15;
    CHECK(ones == 1);
  }
}

TEST_CASE("DeepSeek FP8 block layout") {
  fp8_block::shape s;
  REQUIRE(fp8_block::layout(300, 129, &s) == status::ok);
  CHECK(s.scale_rows == 3);
  CHECK(s.scale_cols == 2);
  std::vector<std::uint8_t> w(300 * 129, 0x38);  // e4m3 1.0
  std::vector<float> sc(6);
  for (int i = 0; i < 6; ++i) sc[i] = static_cast<float>(1 << i) * 0.5f;
  std::vector<float> y(w.size());
  REQUIRE(fp8_block::dequantize(s, w.data(), sc.data(), y.data()) == status::ok);
  CHECK(y[0] == 0.5f);
  CHECK(y[128] == 1.0f);         // row 0, col 128 -> block (0, 1)
  CHECK(y[299 * 129 + 128] == 16.0f);  // block (2, 1)
  std::uint8_t e[6];
  CHECK(fp8_block::check_scales(s, sc.data(), true, e) == status::ok);
  CHECK(e[0] == 126);
  sc[3] = 0.3f;
  CHECK(fp8_block::check_scales(s, sc.data(), true, e) == status::code_out_of_range);
  CHECK(fp8_block::check_scales(s, sc.data(), false) == status::ok);
}

TEST_CASE("dequantize_int4_word") {
  float out[8];
  dequantize_int4_word(0xBA987654u, 0.5f, 8, out);
  for (int k = 0; k < 8; ++k) CHECK(out[k] == 0.5f * static_cast<float>(k - 4));
}

TEST_CASE("pack_int32 4-bit rows (the 8-codes-per-word fast path): every field in place, signed and unsigned") {
  // Every nibble value at every field position of a word, for rows whose length is a multiple of 8 (the
  // word-at-a-time path) and one that is not (the per-field path): both must give the same fields.
  for (const std::int64_t cols : {64, 72, 67}) {
    const std::int64_t rows = 5;
    std::vector<std::int8_t> s(static_cast<std::size_t>(rows * cols));
    std::vector<std::uint8_t> u(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      const int v = static_cast<int>((i * 7 + i / 16) % 16);
      u[i] = static_cast<std::uint8_t>(v);
      s[i] = static_cast<std::int8_t>(v - 8);
    }
    const std::int64_t wpl = (cols * 4 + 31) / 32;
    std::vector<std::uint32_t> ws(static_cast<std::size_t>(rows * wpl)), wu(ws.size());
    REQUIRE(qnum::pack_int32(s.data(), rows, cols, 4, qnum::packed_dim::cols, ws.data()) == qnum::status::ok);
    REQUIRE(qnum::pack_int32(u.data(), rows, cols, 4, qnum::packed_dim::cols, wu.data()) == qnum::status::ok);
    long bad = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::size_t w = static_cast<std::size_t>(r * wpl + c / 8);
        const int sh = static_cast<int>(4 * (c % 8));
        const std::size_t i = static_cast<std::size_t>(r * cols + c);
        bad += ((ws[w] >> sh) & 15u) != static_cast<std::uint32_t>(s[i] + 8);  // offset binary
        bad += ((wu[w] >> sh) & 15u) != u[i];
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("ct::pack_weight_codes (qnum's two's complement codes) == ct::pack_weight of the sign-extended codes") {
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
      REQUIRE(qnum::ct::pack_weight(q.data(), n, k, bits, a.data()) == qnum::status::ok);
      REQUIRE(qnum::ct::pack_weight_codes(codes.data(), n, k, bits, b.data()) == qnum::status::ok);
      CHECK_MESSAGE(a == b, "bits " << bits << " k " << k);
    }
  std::uint8_t bad[8] = {0x10, 0, 0, 0, 0, 0, 0, 0};
  std::uint32_t w[1];
  CHECK(qnum::ct::pack_weight_codes(bad, 1, 8, 4, w) == qnum::status::code_out_of_range);
  CHECK(qnum::ct::pack_weight_codes(bad, 1, 8, 0, w) == qnum::status::bad_bits);
}
