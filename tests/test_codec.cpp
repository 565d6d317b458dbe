// tests/test_codec.cpp: element codecs against ml_dtypes golden vectors and CUDA's host conversions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_reference.hpp"
#include "qnum/codec.hpp"
#include "test_util.hpp"

using qtest::bits;
using qtest::from_bits;
using qtest::hex;

namespace {

std::map<std::string, std::vector<std::uint32_t>> decode_tables() {
  std::map<std::string, std::vector<std::uint32_t>> t;
  std::stringstream ss(qtest::read_text(qtest::data_path("decode_ml_dtypes.txt")));
  std::string line;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ls(line);
    std::string name, word;
    ls >> name;
    while (ls >> word) t[name].push_back(static_cast<std::uint32_t>(std::stoul(word, nullptr, 16)));
  }
  return t;
}

template <class F>
void check_decode_table(const std::vector<std::uint32_t>& want, unsigned ncodes) {
  CAPTURE(F::name);
  REQUIRE(want.size() >= ncodes);
  int bad = 0;
  for (unsigned c = 0; c < ncodes; ++c) {
    const float got = qnum::decode<F>(c);
    const float ref = from_bits(want[c]);
    const bool same = std::isnan(ref) ? std::isnan(got) : bits(got) == want[c];
    if (!same && bad++ < 5) FAIL_CHECK("code " << c << ": qnum " << hex(bits(got)) << " ml_dtypes " << hex(want[c]));
  }
  CHECK(bad == 0);
}

struct encode_golden {
  std::vector<std::uint32_t> in;
  std::vector<std::uint8_t> e4m3, e5m2, e2m1, e8m0;
  std::vector<std::uint16_t> bf16, fp16;
};

const encode_golden& golden() {
  static const encode_golden g = [] {
    encode_golden r;
    const auto buf = qtest::read_file("encode_ml_dtypes.bin");
    REQUIRE(buf.size() > 4);
    qtest::reader rd{buf};
    const std::uint32_t n = rd.get<std::uint32_t>();
    REQUIRE(buf.size() == 4 + std::size_t{n} * (4 + 4 + 4));
    for (std::uint32_t i = 0; i < n; ++i) r.in.push_back(rd.get<std::uint32_t>());
    for (auto* v : {&r.e4m3, &r.e5m2, &r.e2m1, &r.e8m0})
      for (std::uint32_t i = 0; i < n; ++i) v->push_back(rd.get<std::uint8_t>());
    for (auto* v : {&r.bf16, &r.fp16})
      for (std::uint32_t i = 0; i < n; ++i) v->push_back(rd.get<std::uint16_t>());
    return r;
  }();
  return g;
}

// Compare fn(x) with want[i] over the golden inputs that `use` accepts; report the first mismatches.
template <class Want, class Fn, class Use>
int compare_golden(const char* what, const std::vector<Want>& want, Fn fn, Use use) {
  const auto& g = golden();
  int bad = 0, used = 0;
  for (std::size_t i = 0; i < g.in.size(); ++i) {
    const float x = from_bits(g.in[i]);
    if (!use(x)) continue;
    ++used;
    const std::uint32_t got = fn(x);
    if (got != want[i] && bad++ < 5)
      FAIL_CHECK(what << ": x=" << x << " (" << hex(g.in[i]) << ") qnum " << hex(got) << " ml_dtypes " << hex(want[i]));
  }
  CHECK(used > 1000);
  return bad;
}

bool not_nan(float x) { return !std::isnan(x); }

}  // namespace

TEST_CASE("decode: every code of every 4- and 8-bit format equals ml_dtypes") {
  const auto t = decode_tables();
  check_decode_table<qnum::fp8_e4m3>(t.at("fp8_e4m3"), 256);
  check_decode_table<qnum::fp8_e5m2>(t.at("fp8_e5m2"), 256);
  check_decode_table<qnum::fp4_e2m1>(t.at("fp4_e2m1"), 16);
  check_decode_table<qnum::e8m0>(t.at("e8m0"), 256);
  check_decode_table<qnum::ue4m3>(t.at("fp8_e4m3"), 128);  // the non-negative half of E4M3
  check_decode_table<qnum::qint4>(t.at("int4"), 16);
  check_decode_table<qnum::quint4>(t.at("uint4"), 16);
  check_decode_table<qnum::qint8>(t.at("int8"), 256);
  check_decode_table<qnum::quint8>(t.at("uint8"), 256);
}

TEST_CASE("decode: every bf16 code is the top half of a float32, every fp16 code equals numpy") {
  int bad = 0;
  for (std::uint32_t c = 0; c < 65536; ++c) {
    const float b = qnum::decode<qnum::bf16>(c);
    const bool nan = std::isnan(from_bits(c << 16));
    if (nan ? !std::isnan(b) : bits(b) != (c << 16)) ++bad;
    if (bits(qnum::from_bf16(static_cast<std::uint16_t>(c))) != (c << 16)) ++bad;
  }
  CHECK(bad == 0);
  const auto buf = qtest::read_file("decode_fp16_numpy.bin");
  REQUIRE(buf.size() == 65536u * 4u);
  qtest::reader rd{buf};
  int bad16 = 0;
  for (std::uint32_t c = 0; c < 65536; ++c) {
    const std::uint32_t want = rd.get<std::uint32_t>();
    const float got = qnum::decode<qnum::fp16>(c);
    const bool same = std::isnan(from_bits(want)) ? std::isnan(got) : bits(got) == want;
    if (!same && bad16++ < 5) FAIL_CHECK("fp16 code " << c << ": qnum " << hex(bits(got)) << " numpy " << hex(want));
  }
  CHECK(bad16 == 0);
}

TEST_CASE("encode: non-saturating round-to-nearest-even equals ml_dtypes") {
  const auto& g = golden();
  CHECK(compare_golden("e4m3 nosat", g.e4m3,
                       [](float x) { return qnum::encode<qnum::fp8_e4m3>(x, qnum::rne, qnum::nosat); }, not_nan) == 0);
  CHECK(compare_golden("e5m2 nosat", g.e5m2,
                       [](float x) { return qnum::encode<qnum::fp8_e5m2>(x, qnum::rne, qnum::nosat); }, not_nan) == 0);
  // ml_dtypes' E2M1 saturates (there is nothing else to do without Inf or NaN).
  CHECK(compare_golden("e2m1", g.e2m1, [](float x) { return qnum::encode<qnum::fp4_e2m1>(x); }, not_nan) == 0);
  // UE4M3 = E4M3 restricted to non-negative inputs.
  CHECK(compare_golden("ue4m3 nosat", g.e4m3,
                       [](float x) { return qnum::encode<qnum::ue4m3>(x, qnum::rne, qnum::nosat); },
                       [](float x) { return !std::isnan(x) && !std::signbit(x); }) == 0);
  // E8M0: ml_dtypes agrees with qnum on positive normal inputs (qnum follows CUDA for 0 and
  // negatives; for float32 subnormals qnum rounds to the nearer of 2^-127 and 2^-126, where ml_dtypes
  // sends everything above 2^-127 up to 2^-126).
  CHECK(compare_golden("e8m0 rne nosat", g.e8m0,
                       [](float x) { return qnum::encode<qnum::e8m0>(x, qnum::rne, qnum::nosat); },
                       [](float x) { return !std::isnan(x) && x >= 1.17549435e-38f; }) == 0);
  CHECK(qnum::encode<qnum::e8m0>(from_bits(0x00400001u)) == 0x00);  // 2^-127 (1 + 2^-22): nearer 2^-127
  CHECK(qnum::encode<qnum::e8m0>(from_bits(0x00600000u)) == 0x01);  // 1.5 * 2^-127: the tie goes up
  CHECK(qnum::encode<qnum::e8m0>(from_bits(0x00000001u)) == 0x00);
  CHECK(compare_golden("bf16", g.bf16, [](float x) { return qnum::to_bf16(x); }, not_nan) == 0);
  CHECK(compare_golden("fp16", g.fp16, [](float x) { return qnum::to_fp16(x); }, not_nan) == 0);
}

TEST_CASE("is_nonfinite_magnitude: the largest magnitude bits of a chunk say whether one element is Inf or NaN") {
  // every upper half of a magnitude, with the extreme lower halves: both signs against std::isfinite
  for (std::uint32_t hi = 0; hi <= 0x7FFFu; ++hi)
    for (const std::uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0xFFFFu}) {
      const std::uint32_t m = hi << 16 | lo;
      CAPTURE(hex(m));
      REQUIRE(qnum::detail::is_nonfinite_magnitude(m) == !std::isfinite(from_bits(m)));
      REQUIRE(qnum::detail::is_nonfinite_magnitude(m) == qnum::detail::is_nonfinite(from_bits(m | 0x80000000u)));
    }
  // a chunk of four: the maximum of their magnitude bits
  const float chunk_values[] = {0.0f, -1.5f, 3.4028235e38f, -1e-45f, INFINITY, -INFINITY, from_bits(0x7FC00000u), from_bits(0xFF800001u)};
  for (const float a : chunk_values)
    for (const float b : chunk_values) {
      std::uint32_t top = 0;
      for (const float v : {a, b, 1.0f, -2.0f}) top = std::max(top, bits(v) & 0x7FFFFFFFu);
      CHECK(qnum::detail::is_nonfinite_magnitude(top) == (!std::isfinite(a) || !std::isfinite(b)));
    }
}

TEST_CASE("encode: NaN, Inf, signed zero and the overflow boundaries") {
  using namespace qnum;
  const float nan = from_bits(0x7FC00000u), inf = INFINITY;
  CHECK(encode<fp8_e4m3>(nan) == 0x7F);
  CHECK(encode<fp8_e4m3>(-nan) == 0x7F);
  CHECK(encode<fp8_e5m2>(nan) == 0x7F);
  CHECK(encode<fp4_e2m1>(nan) == 0x7);
  CHECK(encode<e8m0>(nan) == 0xFF);
  CHECK(encode<ue4m3>(nan) == 0x7F);
  CHECK(to_bf16(nan) == 0x7FC0);
  CHECK(to_fp16(nan) == 0x7E00);
  CHECK(encode<fp8_e4m3>(inf) == 0x7E);
  CHECK(encode<fp8_e4m3>(-inf) == 0xFE);
  CHECK(encode<fp8_e4m3>(inf, rne, nosat) == 0x7F);
  CHECK(encode<fp8_e4m3>(-inf, rne, nosat) == 0xFF);
  CHECK(encode<fp8_e5m2>(inf, rne, nosat) == 0x7C);
  CHECK(encode<fp8_e5m2>(-inf, rne, nosat) == 0xFC);
  CHECK(encode<fp8_e4m3>(-0.0f) == 0x80);
  CHECK(encode<fp4_e2m1>(-0.0f) == 0x8);
  CHECK(encode<ue4m3>(-0.0f) == 0x00);
  CHECK(encode<ue4m3>(-1.0f) == 0x00);
  CHECK(encode<ue4m3>(-1.0f, rne, nosat) == 0x7F);
  // E4M3: 464 is the midpoint of 448 and 480 and rounds to even (448); just above overflows.
  CHECK(encode<fp8_e4m3>(464.0f, rne, nosat) == 0x7E);
  CHECK(encode<fp8_e4m3>(std::nextafter(464.0f, 1e9f), rne, nosat) == 0x7F);
  CHECK(encode<fp8_e4m3>(std::nextafter(464.0f, 1e9f)) == 0x7E);
  // E5M2: 61440 overflows (57344 is odd), just below rounds to max.
  CHECK(encode<fp8_e5m2>(61440.0f, rne, nosat) == 0x7C);
  CHECK(encode<fp8_e5m2>(std::nextafter(61440.0f, 0.0f), rne, nosat) == 0x7B);
  // Underflow: half the smallest subnormal ties to zero, just above gives the smallest subnormal.
  CHECK(encode<fp8_e4m3>(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(encode<fp8_e4m3>(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(encode<fp8_e4m3>(-std::ldexp(1.0f, -10)) == 0x80);
  CHECK(encode<fp8_e5m2>(std::ldexp(1.0f, -17)) == 0x00);
  CHECK(encode<fp4_e2m1>(0.25f) == 0x0);
  CHECK(encode<fp4_e2m1>(0.75f) == 0x2);
  CHECK(encode<fp4_e2m1>(5.0f) == 0x6);
  CHECK(encode<fp4_e2m1>(7.0f) == 0x7);
  CHECK(encode<fp4_e2m1>(-1e30f) == 0xF);
  // E8M0: rounding modes and the ends of its range.
  CHECK(encode<e8m0>(1.0f) == 127);
  CHECK(encode<e8m0>(1.5f) == 128);
  CHECK(encode<e8m0>(1.4f) == 127);
  CHECK(encode<e8m0>(1.9f, rtz) == 127);
  CHECK(encode<e8m0>(1.0000001f, raz) == 128);
  CHECK(encode<e8m0>(1.0f, raz) == 127);
  CHECK(encode<e8m0>(0.0f) == 0x00);
  CHECK(encode<e8m0>(-4.0f, rtz) == 129);
  CHECK(encode<e8m0>(std::ldexp(1.0f, 127) * 1.5f, raz) == 0xFE);
  CHECK(encode<e8m0>(std::ldexp(1.0f, 127) * 1.5f, raz, nosat) == 0xFF);
  CHECK(encode<e8m0>(std::ldexp(1.0f, -130)) == 0x00);
  CHECK(encode<e8m0>(std::ldexp(1.0f, -127) * 1.25f, raz) == 0x01);
  // Integers: clamp then round to nearest even.
  CHECK(encode<qnum::qint4>(7.5f) == 0x7);
  CHECK(encode<qnum::qint4>(-8.5f) == 0x8);
  CHECK(encode<qnum::qint4>(-7.5f) == 0x8);
  CHECK(encode<qnum::qint4>(6.5f) == 0x6);
  CHECK(encode<qnum::qint4>(nan) == 0x0);
  CHECK(encode<qnum::qint4>(-inf) == 0x8);
  CHECK(encode<qnum::quint4>(-3.0f) == 0x0);
  CHECK(encode<quint8>(255.5f) == 0xFF);
  CHECK(encode<qint8>(-0.5f) == 0x00);
  CHECK(encode<qint8>(-1.5f) == 0xFE);
}

#if QNUM_TEST_HAVE_CUDA_HEADERS
namespace {
template <class Fn, class Ref>
int sweep16(const char* what, Fn fn, Ref ref, bool skip_nan) {
  int bad = 0;
  const auto& g = golden();
  for (std::size_t i = 0; i < g.in.size(); ++i) {
    const float x = from_bits(g.in[i]);
    if (skip_nan && std::isnan(x)) continue;
    const std::uint32_t a = fn(x), b = ref(x);
    if (a != b && bad++ < 5) FAIL_CHECK(what << ": x=" << x << " (" << hex(g.in[i]) << ") qnum " << hex(a) << " cuda " << hex(b));
  }
  return bad;
}
}  // namespace

TEST_CASE("encode: every bf16/fp16 pattern and midpoint equals CUDA's host conversions") {
  using namespace qnum;
  CHECK(sweep16("e4m3 sat", [](float x) { return encode<fp8_e4m3>(x, rne, satfinite); },
                qtest::cuda_ref<fp8_e4m3, true>::rne, false) == 0);
  CHECK(sweep16("e4m3 nosat", [](float x) { return encode<fp8_e4m3>(x, rne, nosat); },
                qtest::cuda_ref<fp8_e4m3, false>::rne, false) == 0);
  CHECK(sweep16("e5m2 sat", [](float x) { return encode<fp8_e5m2>(x, rne, satfinite); },
                qtest::cuda_ref<fp8_e5m2, true>::rne, false) == 0);
  CHECK(sweep16("e5m2 nosat", [](float x) { return encode<fp8_e5m2>(x, rne, nosat); },
                qtest::cuda_ref<fp8_e5m2, false>::rne, false) == 0);
  CHECK(sweep16("e2m1 rne", [](float x) { return encode<fp4_e2m1>(x, rne); }, qtest::cuda_ref<fp4_e2m1, true>::rne,
                false) == 0);
  CHECK(sweep16("e2m1 rtz", [](float x) { return encode<fp4_e2m1>(x, rtz); }, qtest::cuda_ref<fp4_e2m1, true>::rtz,
                false) == 0);
  CHECK(sweep16("e8m0 rtz sat", [](float x) { return encode<e8m0>(x, rtz, satfinite); },
                qtest::cuda_ref<e8m0, true>::rtz, false) == 0);
  CHECK(sweep16("e8m0 rtz nosat", [](float x) { return encode<e8m0>(x, rtz, nosat); },
                qtest::cuda_ref<e8m0, false>::rtz, false) == 0);
  CHECK(sweep16("e8m0 raz sat", [](float x) { return encode<e8m0>(x, raz, satfinite); },
                qtest::cuda_ref<e8m0, true>::raz, false) == 0);
  CHECK(sweep16("e8m0 raz nosat", [](float x) { return encode<e8m0>(x, raz, nosat); },
                qtest::cuda_ref<e8m0, false>::raz, false) == 0);
  CHECK(sweep16("bf16", [](float x) { return to_bf16(x); }, qtest::cuda_bf16_rn, true) == 0);
  CHECK(sweep16("fp16", [](float x) { return to_fp16(x); }, qtest::cuda_fp16_rn, true) == 0);
}
#endif

TEST_CASE("round trip: decode then encode gives every finite code back") {
  using namespace qnum;
  auto rt = [](auto fmt, unsigned ncodes) {
    using F = decltype(fmt);
    int bad = 0;
    for (unsigned c = 0; c < ncodes; ++c) {
      const float v = decode<F>(c);
      if (!std::isfinite(v)) continue;
      const unsigned back = encode<F>(v, rne, nosat);
      if (back != c && bad++ < 3) FAIL_CHECK(F::name << " code " << c << " -> " << v << " -> " << back);
    }
    return bad;
  };
  CHECK(rt(fp8_e4m3{}, 256) == 0);
  CHECK(rt(fp8_e5m2{}, 256) == 0);
  CHECK(rt(fp4_e2m1{}, 16) == 0);
  CHECK(rt(ue4m3{}, 128) == 0);
  CHECK(rt(e8m0{}, 256) == 0);
  CHECK(rt(bf16{}, 65536) == 0);
  CHECK(rt(fp16{}, 65536) == 0);
  CHECK(rt(qnum::qint4{}, 16) == 0);
  CHECK(rt(qnum::quint4{}, 16) == 0);
  CHECK(rt(qint8{}, 256) == 0);
  CHECK(rt(quint8{}, 256) == 0);
}
