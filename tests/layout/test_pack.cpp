// tests/layout/test_pack.cpp: packing primitives and layouts — exhaustive round trips, hand examples from
// the references' documentation, bad input statuses, and golden vectors from the real references.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/layout/marlin.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/random.hpp"
#include "qnum/view.hpp"
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

// Bitwise equality (floats: NaN padding compares equal to itself).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Pseudo-random values in [lo, lo + span) (span > 0), one per (seed, i).
inline std::int32_t rnd(std::uint64_t seed, std::uint64_t i, std::int32_t lo, std::uint32_t span) {
  return lo + static_cast<std::int32_t>(random_bits(seed, i) % span);
}

// The contiguous [rows, cols] array a copied into rows of `stride` elements whose padding holds pad.
template <class T>
std::vector<T> strided(const std::vector<T>& a, std::int64_t rows, std::int64_t cols, std::int64_t stride, T pad) {
  std::vector<T> b(static_cast<std::size_t>(rows * stride), pad);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) b[static_cast<std::size_t>(r * stride + c)] = a[static_cast<std::size_t>(r * cols + c)];
  return b;
}
// The [rows, cols] elements of a buffer of `stride`-element rows, contiguous.
template <class T>
std::vector<T> gather(const std::vector<T>& b, std::int64_t rows, std::int64_t cols, std::int64_t stride) {
  std::vector<T> a(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) a[static_cast<std::size_t>(r * cols + c)] = b[static_cast<std::size_t>(r * stride + c)];
  return a;
}
// Whether every padding element (column >= cols) of a buffer of `stride`-element rows still holds pad.
template <class T>
bool padding_holds(const std::vector<T>& b, std::int64_t rows, std::int64_t cols, std::int64_t stride, T pad) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = cols; c < stride; ++c)
      if (std::memcmp(&b[static_cast<std::size_t>(r * stride + c)], &pad, sizeof(T)) != 0) return false;
  return true;
}

// Every shape one row or one column off [rows, cols], and [rows, cols] itself.
inline std::vector<std::pair<std::int64_t, std::int64_t>> near_shapes(std::int64_t rows, std::int64_t cols) {
  return {{rows + 1, cols}, {rows - 1, cols}, {rows, cols + 1}, {rows, cols - 1}, {rows, cols}};
}

// For each of near_shapes(rows, cols): call(v), v a view of that shape over a buffer filled with `fill`
// (and, where given, with the [rows, cols] `contents` in the elements both shapes share), must return
// want(r, c); on any status but ok that buffer and snap() (what the call writes when the view is one of
// its inputs) must be as they were.
template <class T, class Call, class Want, class Snap>
void check_near_shapes(std::int64_t rows, std::int64_t cols, T fill, Call&& call, Want&& want, Snap&& snap,
                       const std::vector<T>* contents = nullptr) {
  for (const auto& [rr, cc] : near_shapes(rows, cols)) {
    const std::int64_t r = rr, c = cc;
    CAPTURE(r);
    CAPTURE(c);
    std::vector<T> buf(static_cast<std::size_t>((rows + 1) * (cols + 1)), fill);
    if (contents != nullptr)
      for (std::int64_t i = 0; i < std::min(r, rows); ++i)
        for (std::int64_t j = 0; j < std::min(c, cols); ++j)
          buf[static_cast<std::size_t>(i * c + j)] = (*contents)[static_cast<std::size_t>(i * cols + j)];
    const std::vector<T> before = buf;
    const auto snap_before = snap();
    const status got = call(view(buf.data(), r, c));
    const status expected = want(r, c);
    CHECK(got == expected);
    if (got != status::ok) {
      CHECK(same_bits(buf, before));
      CHECK(snap() == snap_before);
    }
  }
}
// An output of exactly [rows, cols]: every other near shape is bad_shape and leaves it untouched.
template <class T, class Call>
void check_output_shape(std::int64_t rows, std::int64_t cols, T fill, Call&& call) {
  check_near_shapes(
      rows, cols, fill, call, [&](std::int64_t r, std::int64_t c) { return r == rows && c == cols ? status::ok : status::bad_shape; },
      [] { return 0; });
}
// An input whose shape another argument fixes at [rows, cols] (holding `contents` where given): any other
// near shape is bad_shape and `out` (the call's output) keeps its contents.
template <class T, class U, class Call>
void check_input_shape(std::int64_t rows, std::int64_t cols, T fill, const std::vector<U>& out, Call&& call,
                       const std::vector<T>* contents = nullptr) {
  check_near_shapes(
      rows, cols, fill, call, [&](std::int64_t r, std::int64_t c) { return r == rows && c == cols ? status::ok : status::bad_shape; },
      [&] {
        std::vector<unsigned char> b(out.size() * sizeof(U));
        if (!out.empty()) std::memcpy(b.data(), out.data(), b.size());
        return b;
      },
      contents);
}

}  // namespace

TEST_CASE("dense packing: documented examples") {
  // compressed-tensors: q = [-4..3] int4 -> 0xBA987654
  const std::int8_t q[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
  std::uint32_t w = 0;
  REQUIRE(pack_int32(view(q, 1, 8), 4, packed_dim::cols, view(&w, 1, 1)) == status::ok);
  CHECK(w == 0xBA987654u);
  // AWQ order of nibbles 4..11 -> 0xB975A864
  std::uint8_t z[8] = {4, 5, 6, 7, 8, 9, 10, 11};
  std::uint32_t a = 0;
  REQUIRE(awq::pack_qzeros(view(z, 8, 1), view(&a, 1, 1)) == status::ok);
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

TEST_CASE("bad input gives a status") {
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
  std::uint8_t u[16] = {};
  CHECK(gptq::pack_qweight(view(u, 2, 7), 4, view(w, 0, 2)) == status::bad_shape);   // K not a multiple of 8
  CHECK(gptq::pack_qweight(view(u, 2, 8), 3, view(w, 1, 2)) == status::bad_bits);
  CHECK(gptq::pack_qzeros(view(u, 8, 1), 4, gptq::format::v1, view(w, 1, 1)) == status::code_out_of_range);  // zero 0 in v1
  CHECK(gptq::pack_qzeros(view(u, 8, 1), 4, gptq::format::v2, view(w, 1, 1)) == status::ok);
  CHECK(awq::pack_qweight(view(u, 7, 2), view(w, 2, 1)) == status::bad_shape);      // N not a multiple of 8
  std::vector<std::uint8_t> big(64 * 16, 0);
  std::vector<std::uint32_t> mw(2 * 64, 0);
  CHECK(marlin::pack_weight(view(big.data(), 32, 16), view(mw.data(), 1, 64)) == status::bad_shape);  // N % 64
  CHECK(marlin::pack_weight(view(big.data(), 64, 8), view(mw.data(), 0, 128)) == status::bad_shape);  // K % 16
  CHECK(marlin::pack_weight(view(big.data(), 64, 16), view(mw.data(), 1, 128)) == status::ok);
  float x[32] = {};
  std::uint8_t b[34];
  CHECK(gguf::quantize(gguf::type::q4_0, view(x, 31), view(b, 18)) == status::bad_shape);
  x[3] = detail::bits_to_float(0x7FC00000u);
  CHECK(gguf::quantize(gguf::type::q8_0, view(x, 32), view(b, 34)) == status::non_finite);
  ct::pack_quantized_shape cs;
  CHECK(ct::pack_quantized_layout(4, 64, 4, 0, &cs) == status::bad_group);
  const float sc[2] = {1.0f, 1e6f};
  std::uint16_t h[2];
  h[0] = h[1] = 0xA5A5;
  CHECK(gptq::scales_to_fp16_transposed(view(sc, 1, 2), view(h, 2, 1)) == status::scale_overflow);
  CHECK((h[0] == 0xA5A5 && h[1] == 0xA5A5));  // nothing written
  std::uint16_t s16[64] = {};
  std::uint16_t o16[64];
  CHECK(marlin::permute_scales(view(s16, 64, 1), 64, 32, view(o16, 1, 64)) == status::bad_group);  // G*g != K
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

TEST_CASE("DeepSeek FP8 block layout") {
  fp8_block::shape s;
  REQUIRE(fp8_block::layout(300, 129, &s) == status::ok);
  CHECK(s.scale_rows == 3);
  CHECK(s.scale_cols == 2);
  std::vector<std::uint8_t> w(300 * 129, 0x38);  // e4m3 1.0
  std::vector<float> sc(6);
  for (int i = 0; i < 6; ++i) sc[i] = static_cast<float>(1 << i) * 0.5f;
  std::vector<float> y(w.size());
  REQUIRE(fp8_block::dequantize(s, view(w.data(), s.n, s.k), view(sc.data(), s.scale_rows, s.scale_cols), view(y.data(), s.n, s.k)) ==
          status::ok);
  CHECK(y[0] == 0.5f);
  CHECK(y[128] == 1.0f);         // row 0, col 128 -> block (0, 1)
  CHECK(y[299 * 129 + 128] == 16.0f);  // block (2, 1)
  std::uint8_t e[6];
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
    REQUIRE(qnum::pack_int32(view(s.data(), rows, cols), 4, qnum::packed_dim::cols, view(ws.data(), rows, wpl)) == qnum::status::ok);
    REQUIRE(qnum::pack_int32(view(u.data(), rows, cols), 4, qnum::packed_dim::cols, view(wu.data(), rows, wpl)) == qnum::status::ok);
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
// What the views add: exact output shapes, row strides, 2-D nibble packing.

TEST_CASE("views: an output one row or column off its shape is bad_shape and nothing is written") {
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
  SUBCASE("compressed-tensors") {
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
  SUBCASE("Marlin") {
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
  SUBCASE("DeepSeek FP8 block") {
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
  SUBCASE("GGUF") {
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

TEST_CASE("views: strided inputs give the contiguous words, strided outputs keep their padding") {
  SUBCASE("pack_int32 / unpack_int32: 1..8 bits, both packed_dim, int8 / uint8 / int32 codes") {
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
  SUBCASE("ct::pack_weight (int8 and uint8 codes) and ct::unpack_weight") {
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
        const auto qs = strided(q, n, k, is, std::int8_t{100});
        const auto cs = strided(codes, n, k, is, std::uint8_t{0xFF});
        for (const bool strided_out : {false, true}) {
          const std::int64_t st = strided_out ? os : wpr;
          std::vector<std::uint32_t> a(static_cast<std::size_t>(n * st), 0xDEADBEEFu), b(a);
          REQUIRE(ct::pack_weight(view(qs.data(), n, k, is), bits, view(a.data(), n, wpr, st)) == status::ok);
          REQUIRE(ct::pack_weight(view(cs.data(), n, k, is), bits, view(b.data(), n, wpr, st)) == status::ok);
          CHECK(gather(a, n, wpr, st) == want);
          CHECK(gather(b, n, wpr, st) == want);
          CHECK(padding_holds(a, n, wpr, st, 0xDEADBEEFu));
          CHECK(padding_holds(b, n, wpr, st, 0xDEADBEEFu));
        }
        const auto ws = strided(want, n, wpr, os, 0xFFFFFFFFu);
        std::vector<std::int8_t> back(static_cast<std::size_t>(n * is), 0x5A);
        REQUIRE(ct::unpack_weight(view(ws.data(), n, wpr, os), bits, view(back.data(), n, k, is)) == status::ok);
        CHECK(gather(back, n, k, is) == q);
        CHECK(padding_holds(back, n, k, is, std::int8_t{0x5A}));
      }
  }
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
      const auto qs = strided(q, n, k, is, std::uint8_t{0xFF});
      const auto q8s = strided(q8, n, k, is, std::int8_t{100});
      for (const bool strided_out : {false, true}) {
        const std::int64_t st = strided_out ? os : n;
        std::vector<std::uint32_t> a(static_cast<std::size_t>(pr * st), 0xDEADBEEFu), b(a);
        REQUIRE(gptq::pack_qweight(view(qs.data(), n, k, is), bits, view(a.data(), pr, n, st)) == status::ok);
        REQUIRE(gptq::pack_qweight(view(q8s.data(), n, k, is), bits, view(b.data(), pr, n, st)) == status::ok);
        CHECK(gather(a, pr, n, st) == want);
        CHECK(gather(b, pr, n, st) == want);
        CHECK(padding_holds(a, pr, n, st, 0xDEADBEEFu));
        CHECK(padding_holds(b, pr, n, st, 0xDEADBEEFu));
      }
      const auto ws = strided(want, pr, n, os, 0xFFFFFFFFu);
      std::vector<std::uint8_t> back(static_cast<std::size_t>(n * is), 0x5A);
      REQUIRE(gptq::unpack_qweight(view(ws.data(), pr, n, os), bits, view(back.data(), n, k, is)) == status::ok);
      CHECK(gather(back, n, k, is) == q);
      CHECK(padding_holds(back, n, k, is, std::uint8_t{0x5A}));
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
  SUBCASE("Marlin pack_weight (uint8 and int8), repack_gptq, permute_scales") {
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
  SUBCASE("DeepSeek FP8 block dequantize") {
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
}

TEST_CASE("views: GGUF rows through strided views (quantize, dequantize, NaN/Inf writes nothing in any row)") {
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

TEST_CASE("views: row_stride below cols with more than one row is bad_stride, nothing written") {
  // Inputs of the right shape with a row stride one short (or 0); outputs of the right shape likewise.
  const std::uint32_t wp = 0xDEADBEEFu;
  std::vector<std::int8_t> q8(64 * 32, 1);
  std::vector<std::uint8_t> u8(64 * 32, 1);
  std::vector<std::int32_t> i32(64, 1);
  std::vector<std::uint32_t> w(256, wp), win(256, 0);
  std::vector<std::int8_t> o8(64, 0x5A);
  std::vector<std::uint8_t> ou8(256, 0x5A);
  std::vector<std::int32_t> o32(64, -77);
  std::vector<float> f(64, 1.0f);
  std::vector<std::uint16_t> h(64, 0xA5A5);
  const auto untouched = [&] {
    return std::all_of(w.begin(), w.end(), [&](std::uint32_t v) { return v == wp; }) &&
           std::all_of(o8.begin(), o8.end(), [](std::int8_t v) { return v == 0x5A; }) &&
           std::all_of(ou8.begin(), ou8.end(), [](std::uint8_t v) { return v == 0x5A; }) &&
           std::all_of(o32.begin(), o32.end(), [](std::int32_t v) { return v == -77; }) &&
           std::all_of(h.begin(), h.end(), [](std::uint16_t v) { return v == 0xA5A5; });
  };
  const status bs = status::bad_stride;
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
    CHECK(ue8m0_from_pow2_scales(view(f.data(), 2, 2, 1), view(ou8.data(), 2, 2)) == bs);
    CHECK(ue8m0_from_pow2_scales(view(f.data(), 2, 2), view(ou8.data(), 2, 2, 1)) == bs);
    CHECK(untouched());
  }
  SUBCASE("compressed-tensors") {
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
  SUBCASE("GPTQ / AWQ") {
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
    CHECK(gptq::scales_to_fp16_transposed(view(f.data(), 2, 2, 1), view(h.data(), 2, 2)) == bs);
    CHECK(gptq::scales_to_fp16_transposed(view(f.data(), 2, 2), view(h.data(), 2, 2, 1)) == bs);
    CHECK(awq::pack_qweight(view(u8.data(), 8, 2, 1), view(w.data(), 2, 1)) == bs);
    CHECK(awq::pack_qweight(view(u8.data(), 8, 2), view(w.data(), 2, 1, 0)) == bs);
    CHECK(awq::unpack_qweight(view(win.data(), 2, 1, 0), view(ou8.data(), 8, 2)) == bs);
    CHECK(awq::unpack_qweight(view(win.data(), 2, 1), view(ou8.data(), 8, 2, 1)) == bs);
    CHECK(awq::pack_qzeros(view(u8.data(), 8, 2, 1), view(w.data(), 2, 1)) == bs);
    CHECK(awq::pack_qzeros(view(i32.data(), 8, 2, 1), view(w.data(), 2, 1)) == bs);
    CHECK(awq::pack_qzeros(view(u8.data(), 8, 2), view(w.data(), 2, 1, 0)) == bs);
    CHECK(untouched());
  }
  SUBCASE("Marlin") {
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
  SUBCASE("DeepSeek FP8 block") {
    fp8_block::shape s;
    REQUIRE(fp8_block::layout(256, 256, &s) == status::ok);
    std::vector<std::uint8_t> wt(256 * 256, 0x38);
    std::vector<float> y(256 * 256, -1.0f);
    CHECK(fp8_block::check_scales(s, view(f.data(), 2, 2, 1), true, view(ou8.data(), 2, 2)) == bs);
    CHECK(fp8_block::check_scales(s, view(f.data(), 2, 2), true, view(ou8.data(), 2, 2, 1)) == bs);
    CHECK(fp8_block::dequantize(s, view(wt.data(), 256, 256, 255), view(f.data(), 2, 2), view(y.data(), 256, 256)) == bs);
    CHECK(fp8_block::dequantize(s, view(wt.data(), 256, 256), view(f.data(), 2, 2, 1), view(y.data(), 256, 256)) == bs);
    CHECK(fp8_block::dequantize(s, view(wt.data(), 256, 256), view(f.data(), 2, 2), view(y.data(), 256, 256, 255)) == bs);
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -1.0f; }));
    CHECK(untouched());
  }
  SUBCASE("GGUF") {
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
}
