// tests/layout/layout_test_util.hpp: helpers shared by the layout tests (tests/layout/test_*.cpp): the
// records of tests/data/layouts_golden.txt (tools/gen_golden.py --only layouts), bit comparison,
// pseudo-random codes, strided copies, and the checks that a view one row or column off its shape is
// rejected with nothing written.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "qnum/host/simd.hpp"
#include "qnum/random.hpp"
#include "qnum/status.hpp"
#include "qnum/view.hpp"
#include "test_util.hpp"

namespace qtest::layout {

using rec = std::vector<std::vector<std::int64_t>>;

// Records of tests/data/layouts_golden.txt: kind | group | group ...
inline const std::multimap<std::string, rec>& golden() {
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
  return lo + static_cast<std::int32_t>(qnum::random_bits(seed, i) % span);
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

// Strided packing of one [n, k] tensor held twice (qa and qb, two element types with the same codes): each,
// read through row stride `is` with its padding poisoned (pad_a, pad_b), packs by pack(in, out) into words
// [pr, pc] equal to `want`, into a contiguous output and into one of row stride `os` whose padding stays.
template <class A, class B, class Pack>
void check_strided_pack(const std::vector<A>& qa, A pad_a, const std::vector<B>& qb, B pad_b, std::int64_t n, std::int64_t k,
                        std::int64_t is, std::int64_t pr, std::int64_t pc, std::int64_t os,
                        const std::vector<std::uint32_t>& want, Pack pack) {
  const auto as_ = strided(qa, n, k, is, pad_a);
  const auto bs_ = strided(qb, n, k, is, pad_b);
  for (const bool strided_out : {false, true}) {
    const std::int64_t st = strided_out ? os : pc;
    std::vector<std::uint32_t> a(static_cast<std::size_t>(pr * st), 0xDEADBEEFu), b(a);
    REQUIRE(pack(qnum::view(as_.data(), n, k, is), qnum::view(a.data(), pr, pc, st)) == qnum::status::ok);
    REQUIRE(pack(qnum::view(bs_.data(), n, k, is), qnum::view(b.data(), pr, pc, st)) == qnum::status::ok);
    CHECK(gather(a, pr, pc, st) == want);
    CHECK(gather(b, pr, pc, st) == want);
    CHECK(padding_holds(a, pr, pc, st, 0xDEADBEEFu));
    CHECK(padding_holds(b, pr, pc, st, 0xDEADBEEFu));
  }
}
// The inverse through strided views: words `want` [pr, pc] at row stride os (padding 0xFFFFFFFF) unpack by
// unpack(words, out) into codes [n, k] at row stride `is` equal to q, the codes' padding (0x5A) untouched.
template <class Q, class Unpack>
void check_strided_unpack(const std::vector<std::uint32_t>& want, std::int64_t pr, std::int64_t pc, std::int64_t os,
                          const std::vector<Q>& q, std::int64_t n, std::int64_t k, std::int64_t is, Unpack unpack) {
  const auto ws = strided(want, pr, pc, os, 0xFFFFFFFFu);
  std::vector<Q> back(static_cast<std::size_t>(n * is), Q{0x5A});
  REQUIRE(unpack(qnum::view(ws.data(), pr, pc, os), qnum::view(back.data(), n, k, is)) == qnum::status::ok);
  CHECK(gather(back, n, k, is) == q);
  CHECK(padding_holds(back, n, k, is, Q{0x5A}));
}

// Every host SIMD target this CPU has, and none (the per-element loops); the caller's target is restored.
template <class Fn>
void each_simd_target(Fn&& fn) {
  using qnum::simd_target;
  const simd_target saved = qnum::host_simd_target();
  for (const simd_target t : {simd_target::none, simd_target::sse2, simd_target::avx2, simd_target::avx512, simd_target::neon}) {
    if (!qnum::set_host_simd_target(t)) continue;
    CAPTURE(qnum::simd_target_name(t));
    fn();
  }
  REQUIRE(qnum::set_host_simd_target(saved));
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
    const qnum::status got = call(qnum::view(buf.data(), r, c));
    const qnum::status expected = want(r, c);
    CHECK(got == expected);
    if (got != qnum::status::ok) {
      CHECK(same_bits(buf, before));
      CHECK(snap() == snap_before);
    }
  }
}
// An output of exactly [rows, cols]: every other near shape is bad_shape and leaves it untouched.
template <class T, class Call>
void check_output_shape(std::int64_t rows, std::int64_t cols, T fill, Call&& call) {
  check_near_shapes(
      rows, cols, fill, call,
      [&](std::int64_t r, std::int64_t c) { return r == rows && c == cols ? qnum::status::ok : qnum::status::bad_shape; },
      [] { return 0; });
}
// An input whose shape another argument fixes at [rows, cols] (holding `contents` where given): any other
// near shape is bad_shape and `out` (the call's output) keeps its contents.
template <class T, class U, class Call>
void check_input_shape(std::int64_t rows, std::int64_t cols, T fill, const std::vector<U>& out, Call&& call,
                       const std::vector<T>* contents = nullptr) {
  check_near_shapes(
      rows, cols, fill, call,
      [&](std::int64_t r, std::int64_t c) { return r == rows && c == cols ? qnum::status::ok : qnum::status::bad_shape; },
      [&] {
        std::vector<unsigned char> b(out.size() * sizeof(U));
        if (!out.empty()) std::memcpy(b.data(), out.data(), b.size());
        return b;
      },
      contents);
}

// The fixture of the "row_stride below cols" cases (one per layout test): buffers for inputs of the right
// shape given a row stride one short (or 0), and for outputs likewise; untouched() says none was written.
// (The float buffer is f32, not f: doctest's fixture test body is a member function named f.)
struct bad_stride_buffers {
  const std::uint32_t wp = 0xDEADBEEFu;
  std::vector<std::int8_t> q8 = std::vector<std::int8_t>(64 * 32, 1);
  std::vector<std::uint8_t> u8 = std::vector<std::uint8_t>(64 * 32, 1);
  std::vector<std::int32_t> i32 = std::vector<std::int32_t>(64, 1);
  std::vector<std::uint32_t> w = std::vector<std::uint32_t>(256, wp), win = std::vector<std::uint32_t>(256, 0);
  std::vector<std::int8_t> o8 = std::vector<std::int8_t>(64, 0x5A);
  std::vector<std::uint8_t> ou8 = std::vector<std::uint8_t>(256, 0x5A);
  std::vector<std::int32_t> o32 = std::vector<std::int32_t>(64, -77);
  std::vector<float> f32 = std::vector<float>(64, 1.0f);
  std::vector<std::uint16_t> h = std::vector<std::uint16_t>(64, 0xA5A5);
  const qnum::status bs = qnum::status::bad_stride;

  bool untouched() const {
    return std::all_of(w.begin(), w.end(), [&](std::uint32_t v) { return v == wp; }) &&
           std::all_of(o8.begin(), o8.end(), [](std::int8_t v) { return v == 0x5A; }) &&
           std::all_of(ou8.begin(), ou8.end(), [](std::uint8_t v) { return v == 0x5A; }) &&
           std::all_of(o32.begin(), o32.end(), [](std::int32_t v) { return v == -77; }) &&
           std::all_of(h.begin(), h.end(), [](std::uint16_t v) { return v == 0xA5A5; });
  }
};

}  // namespace qtest::layout
