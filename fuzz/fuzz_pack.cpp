// fuzz/fuzz_pack.cpp: property fuzzing of qnum/layout/pack.hpp and every layout writer in qnum/layout/*.hpp
// (compressed_tensors, gptq_awq, marlin, gguf, fp8_block).
//
// Input bytes: op (which API), then shape and option bytes, then code/value bytes (reused cyclically).
// Shapes are random (0..~100 per dimension, including ones the layout rejects). Every buffer is
// allocated with exactly the size the call needs for a valid shape, and with size 0 for a shape the
// layout rejects (so any access at all is an ASan report); one op in eight passes a null pointer.
//
// Properties (prefix pack/):
//   status     the documented status for the shape/bits/group (ok, bad_bits, bad_shape, bad_group,
//              null_pointer, code_out_of_range, non_finite, scale_overflow); a refused call writes nothing
//   roundtrip  unpack(pack(c)) == c: dense int32 (signed offset-binary and unsigned, both packed dims),
//              nibbles (both orders, odd n), UE8M0 words, pow2 float scales -> UE8M0 bytes,
//              compressed-tensors weight_packed and weight_zero_point, GPTQ qweight (unsigned and signed
//              uint4b8) and qzeros (v1, v2), AWQ qweight and qzeros (qzeros through awq::unpack_qweight:
//              the same layout), Marlin (no unpack in qnum: inverted here through marlin::weight_perm)
//   reference  packed words equal an independent bit-by-bit packer (dense int32: bit i*bits of the
//              line, unused high bits 0); Marlin's signed overload == unsigned of q + 8, and
//              marlin::repack_gptq(gptq::pack_qweight(q)) == marlin::pack_weight(q); marlin::weight_perm is a
//              permutation of 0..1023; marlin::permute_scales is a permutation of its input;
//              gptq::scales_to_fp16_transposed is to_fp16 of the transpose; fp8_block::dequantize is
//              decode<fp8_e4m3>(code) * its block's scale, bit for bit
//   gguf       finite input: status ok or scale_overflow; without overflow the dequantized block is
//              finite and |x - y| <= e per element, with d the fp32 block scale, dh/mh the stored fp16
//              values: Q8_0 e = (1/2 + 2^-14) |d| + 127 |d - dh| + 2^-23 |y|; Q4_0 e = (1 + 2^-14) |d| +
//              15 |d - dh| + 2^-23 |y| (the clamp at code 15 costs one step); Q4_1 e = (1/2 + 2^-14) |d|
//              + 15 |d - dh| + |min - mh| + 2^-21 (|x| + |min| + |y|) -- skipped when 1/d overflows
//              (d < 2^-128: ggml's documented code-0 path); NaN/Inf input -> non_finite, nothing written
//   gguf/definition  gguf::quantize (the host lanes) == gguf::quantize_block per block, every byte and the
//              overflow status
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_util.hpp"
#include "qnum/codec.hpp"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/layout/marlin.hpp"
#include "qnum/layout/pack.hpp"

namespace {

using qnum::status;

template <class T>
struct buf {
  std::unique_ptr<T[]> p;
  std::int64_t n;
  explicit buf(std::int64_t k) : p(new T[static_cast<std::size_t>(k < 0 ? 0 : k)]()), n(k < 0 ? 0 : k) {}
  T* data() { return p.get(); }
  T& operator[](std::int64_t i) { return p[static_cast<std::size_t>(i)]; }
  bool same(const std::vector<T>& v) const { return n == static_cast<std::int64_t>(v.size()) && (n == 0 || std::memcmp(p.get(), v.data(), sizeof(T) * static_cast<std::size_t>(n)) == 0); }
  std::vector<T> copy() const { return std::vector<T>(p.get(), p.get() + n); }
  void fill(unsigned char b) { if (n) std::memset(p.get(), b, sizeof(T) * static_cast<std::size_t>(n)); }
};

struct source {
  std::vector<std::uint8_t> bytes;
  std::uint8_t at(std::int64_t i) const { return bytes.empty() ? 0 : bytes[static_cast<std::size_t>(i) % bytes.size()]; }
};

// A code for element i: mostly in range for `bits` (signed or not), out of range when `wild`.
std::int32_t code_of(const source& s, std::int64_t i, int bits, bool is_signed, bool wild) {
  const std::uint8_t b = s.at(i);
  if (wild) return is_signed ? static_cast<std::int8_t>(b) : b;
  const std::uint32_t m = bits >= 8 ? 0xFFu : ((1u << bits) - 1u);
  return is_signed ? qnum::from_offset_binary(b & m, bits) : static_cast<std::int32_t>(b & m);
}

template <class T>
bool fits_all(const buf<T>& c, int bits, bool is_signed) {
  for (std::int64_t i = 0; i < c.n; ++i) {
    const std::int32_t v = c.p[static_cast<std::size_t>(i)];
    if (is_signed ? !qnum::signed_code_fits(v, bits) : !qnum::unsigned_code_fits(v, bits)) return false;
  }
  return true;
}

const char* st(status s) { return qnum::to_string(s); }

// Dense int32 packing (pack.hpp) and compressed-tensors weight/zero-point wrappers.
template <class T>
void dense(const source& src, int rows, int cols, int bits, qnum::packed_dim dim, bool wild, bool nulls, bool via_ct) {
  constexpr bool sgn = std::is_signed<T>::value;
  const bool bits_ok = bits >= 1 && bits <= 8;
  const std::int64_t words = bits_ok ? qnum::pack_int32_size(rows, cols, bits, dim) : 0;
  buf<T> c(static_cast<std::int64_t>(rows) * cols);
  for (std::int64_t i = 0; i < c.n; ++i) c[i] = static_cast<T>(code_of(src, i, bits_ok ? bits : 8, sgn, wild));
  buf<std::uint32_t> w(words);
  w.fill(0xA5);
  const std::vector<std::uint32_t> w0 = w.copy();
  status want = status::ok;
  if (!bits_ok) want = status::bad_bits;
  else if (c.n == 0) want = status::ok;
  else if (nulls) want = status::null_pointer;
  else if (!fits_all(c, bits, sgn)) want = status::code_out_of_range;
  status got;
  T* cp = nulls ? nullptr : c.data();
  if (via_ct && sgn) {
    const std::int8_t* q = reinterpret_cast<const std::int8_t*>(cp);
    got = dim == qnum::packed_dim::cols ? qnum::ct::pack_weight(q, rows, cols, bits, w.data())
                                        : qnum::ct::pack_zero_point(q, rows, cols, bits, w.data());
  } else {
    got = qnum::pack_int32(cp, rows, cols, bits, dim, w.data());
  }
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "pack_int32 %dx%d bits %d dim %d signed %d: %s want %s", rows, cols, bits, static_cast<int>(dim), sgn ? 1 : 0, st(got), st(want));
  if (got != status::ok) {
    QNUM_FUZZ_PROPERTY("pack/status", w.same(w0), "pack_int32 refused but wrote");
    return;
  }
  if (c.n == 0) return;
  // Independent reference: line-by-line bit stream, unused high bits 0.
  const std::int64_t lines = dim == qnum::packed_dim::cols ? rows : cols;
  const std::int64_t len = dim == qnum::packed_dim::cols ? cols : rows;
  const std::int64_t wpl = (len * bits + 31) / 32;
  std::vector<std::uint32_t> ref(static_cast<std::size_t>(words), 0u);
  for (std::int64_t l = 0; l < lines; ++l)
    for (std::int64_t e = 0; e < len; ++e) {
      const std::int64_t r = dim == qnum::packed_dim::cols ? l : e, cc = dim == qnum::packed_dim::cols ? e : l;
      const std::int32_t v = c[r * cols + cc];
      const std::uint32_t field = sgn ? static_cast<std::uint32_t>(v + (1 << (bits - 1))) : static_cast<std::uint32_t>(v);
      for (int b = 0; b < bits; ++b) {
        if (!((field >> b) & 1u)) continue;
        const std::int64_t bit = e * bits + b;
        const std::int64_t widx = dim == qnum::packed_dim::cols ? l * wpl + bit / 32 : (bit / 32) * cols + l;
        ref[static_cast<std::size_t>(widx)] |= 1u << (bit % 32);
      }
    }
  QNUM_FUZZ_PROPERTY("pack/reference", w.same(ref), "pack_int32 %dx%d bits %d dim %d: words differ from the bit-by-bit reference", rows, cols, bits, static_cast<int>(dim));
  buf<T> back(c.n);
  status u;
  if (via_ct && sgn) {
    std::int8_t* q = reinterpret_cast<std::int8_t*>(back.data());
    u = dim == qnum::packed_dim::cols ? qnum::ct::unpack_weight(w.data(), rows, cols, bits, q)
                                      : qnum::ct::unpack_zero_point(w.data(), rows, cols, bits, q);
  } else {
    u = qnum::unpack_int32(w.data(), rows, cols, bits, dim, back.data());
  }
  QNUM_FUZZ_PROPERTY("pack/roundtrip", u == status::ok && back.same(c.copy()), "unpack_int32 %dx%d bits %d dim %d: %s", rows, cols, bits, static_cast<int>(dim), st(u));
}

void nibbles(const source& src, int n, bool high_first, bool wild, bool nulls) {
  const qnum::nibble_order ord = high_first ? qnum::nibble_order::high_first : qnum::nibble_order::low_first;
  buf<std::uint8_t> c(n);
  for (std::int64_t i = 0; i < n; ++i) c[i] = static_cast<std::uint8_t>(wild ? src.at(i) : src.at(i) & 0xF);
  buf<std::uint8_t> out((n + 1) / 2);
  out.fill(0x5A);
  const std::vector<std::uint8_t> o0 = out.copy();
  bool fit = true;
  for (std::int64_t i = 0; i < n; ++i) fit = fit && c[i] <= 15;
  const status want = n == 0 ? status::ok : nulls ? status::null_pointer : !fit ? status::code_out_of_range : status::ok;
  const status got = qnum::pack_nibbles(nulls ? nullptr : c.data(), n, ord, out.data());
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "pack_nibbles n=%d: %s want %s", n, st(got), st(want));
  if (got != status::ok) {
    QNUM_FUZZ_PROPERTY("pack/status", out.same(o0), "pack_nibbles refused but wrote");
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t b = out[i / 2];
    const std::uint32_t nib = (i % 2 == 0) == !high_first ? (b & 0xFu) : (b >> 4);
    QNUM_FUZZ_PROPERTY("pack/reference", nib == c[i], "pack_nibbles n=%d order %d element %lld", n, high_first ? 1 : 0, static_cast<long long>(i));
  }
  if (n % 2) QNUM_FUZZ_PROPERTY("pack/reference", (high_first ? (out[n / 2] & 0xF) : (out[n / 2] >> 4)) == 0, "pack_nibbles odd tail not 0");
  buf<std::uint8_t> back(n);
  const status u = qnum::unpack_nibbles(out.data(), n, ord, back.data());
  QNUM_FUZZ_PROPERTY("pack/roundtrip", u == status::ok && back.same(c.copy()), "unpack_nibbles n=%d", n);
}

void ue8m0(const source& src, int rows, int groups, bool nulls) {
  buf<std::uint8_t> e(static_cast<std::int64_t>(rows) * groups);
  for (std::int64_t i = 0; i < e.n; ++i) e[i] = src.at(i);
  const std::int64_t wpr = (groups + 3) / 4;
  buf<std::uint32_t> w(static_cast<std::int64_t>(rows) * wpr);
  const status want = e.n == 0 ? status::ok : nulls ? status::null_pointer : status::ok;
  const status got = qnum::pack_ue8m0(nulls ? nullptr : e.data(), rows, groups, w.data());
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "pack_ue8m0 %dx%d: %s", rows, groups, st(got));
  if (nulls || e.n == 0) return;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < wpr; ++j)
      for (int i = 0; i < 4; ++i) {
        const std::uint32_t b = (w[r * wpr + j] >> (8 * i)) & 0xFFu;
        const std::uint32_t want_b = 4 * j + i < groups ? e[r * groups + 4 * j + i] : 0u;
        QNUM_FUZZ_PROPERTY("pack/reference", b == want_b, "pack_ue8m0 row %lld word %lld byte %d", static_cast<long long>(r), static_cast<long long>(j), i);
      }
  buf<std::uint8_t> back(e.n);
  QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::unpack_ue8m0(w.data(), rows, groups, back.data()) == status::ok && back.same(e.copy()), "unpack_ue8m0 %dx%d", rows, groups);
  // Power-of-two float scales -> UE8M0 bytes: 2^(e-127) for e in 1..254 round-trips; anything else is refused.
  buf<float> s(e.n);
  bool all_ok = true;
  for (std::int64_t i = 0; i < e.n; ++i) {
    const std::uint32_t b = e[i];
    std::uint32_t bits = b << 23;
    if (src.at(i + 7) == 0xEE) bits |= 1u;  // occasionally not a power of two
    all_ok = all_ok && b >= 1 && b <= 254 && (bits & 0x7FFFFFu) == 0;
    std::memcpy(&s[i], &bits, 4);
  }
  buf<std::uint8_t> eb(e.n);
  const status g2 = qnum::ue8m0_from_pow2_scales(s.data(), e.n, eb.data());
  QNUM_FUZZ_PROPERTY("pack/status", g2 == (all_ok ? status::ok : status::code_out_of_range), "ue8m0_from_pow2_scales: %s", st(g2));
  if (all_ok) QNUM_FUZZ_PROPERTY("pack/roundtrip", eb.same(e.copy()), "ue8m0_from_pow2_scales");
}

// GPTQ (qweight both overloads, qzeros v1/v2, fp16 scales) and AWQ (qweight, qzeros).
void gptq_awq(const source& src, int n, int k, int bits, bool wild, bool nulls, std::uint8_t opt) {
  const bool bits_ok = bits == 2 || bits == 4 || bits == 8;
  const int pf = bits_ok ? 32 / bits : 1;
  const bool shape_ok = bits_ok && k % pf == 0;
  // qweight [K*bits/32, N]
  buf<std::uint8_t> q(static_cast<std::int64_t>(n) * k);
  for (std::int64_t i = 0; i < q.n; ++i) q[i] = static_cast<std::uint8_t>(code_of(src, i, bits_ok ? bits : 8, false, wild));
  buf<std::uint32_t> qw(shape_ok ? static_cast<std::int64_t>(k / pf) * n : 0);
  qw.fill(0x77);
  const std::vector<std::uint32_t> qw0 = qw.copy();
  status want = !bits_ok ? status::bad_bits : !shape_ok ? status::bad_shape : q.n == 0 ? status::ok
                     : nulls ? status::null_pointer : !fits_all(q, bits, false) ? status::code_out_of_range : status::ok;
  status got = qnum::gptq::pack_qweight(nulls ? nullptr : q.data(), n, k, bits, qw.data());
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "gptq::pack_qweight n=%d k=%d bits %d: %s want %s", n, k, bits, st(got), st(want));
  if (got != status::ok) QNUM_FUZZ_PROPERTY("pack/status", qw.same(qw0), "gptq::pack_qweight refused but wrote");
  if (got == status::ok && q.n) {
    buf<std::uint8_t> back(q.n);
    QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::gptq::unpack_qweight(qw.data(), n, k, bits, back.data()) == status::ok && back.same(q.copy()), "gptq qweight n=%d k=%d bits %d", n, k, bits);
    // Signed overload: q - 2^(bits-1) packs to the same words.
    buf<std::int8_t> qs(q.n);
    for (std::int64_t i = 0; i < q.n; ++i) qs[i] = static_cast<std::int8_t>(q[i] - (1 << (bits - 1)));
    buf<std::uint32_t> qw2(qw.n);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::gptq::pack_qweight(qs.data(), n, k, bits, qw2.data()) == status::ok && qw2.same(qw.copy()), "gptq signed overload");
  }
  // qzeros [G, N*bits/32], z[N, G]; groups from opt.
  const int groups = opt % 9;
  const qnum::gptq::format fmt = opt & 0x80 ? qnum::gptq::format::v1 : qnum::gptq::format::v2;
  const bool zshape_ok = bits_ok && n % pf == 0;
  buf<std::uint8_t> z(static_cast<std::int64_t>(n) * groups);
  for (std::int64_t i = 0; i < z.n; ++i) z[i] = static_cast<std::uint8_t>(code_of(src, i + 3, bits_ok ? bits : 8, false, wild));
  buf<std::uint32_t> qz(zshape_ok ? static_cast<std::int64_t>(groups) * (n / pf) : 0);
  bool zfit = fits_all(z, bits_ok ? bits : 8, false);
  if (fmt == qnum::gptq::format::v1)
    for (std::int64_t i = 0; i < z.n; ++i) zfit = zfit && z[i] >= 1;
  want = !bits_ok ? status::bad_bits : !zshape_ok ? status::bad_shape : z.n == 0 ? status::ok
         : nulls ? status::null_pointer : !zfit ? status::code_out_of_range : status::ok;
  got = qnum::gptq::pack_qzeros(nulls ? nullptr : z.data(), n, groups, bits, fmt, qz.data());
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "gptq::pack_qzeros n=%d g=%d bits %d v%d: %s want %s", n, groups, bits, static_cast<int>(fmt), st(got), st(want));
  if (got == status::ok && z.n) {
    buf<std::int32_t> zb(z.n);
    const status u = qnum::gptq::unpack_qzeros(qz.data(), n, groups, bits, fmt, zb.data());
    bool same = u == status::ok;
    for (std::int64_t i = 0; i < z.n && same; ++i) same = zb[i] == z[i];
    QNUM_FUZZ_PROPERTY("pack/roundtrip", same, "gptq qzeros n=%d g=%d bits %d v%d", n, groups, bits, static_cast<int>(fmt));
  }
  // fp16 scales [G, N] from s[N, G].
  if (!nulls) {
    buf<float> s(static_cast<std::int64_t>(n) * groups);
    for (std::int64_t i = 0; i < s.n; ++i) {
      std::uint32_t b = static_cast<std::uint32_t>(src.at(i)) << 24 | static_cast<std::uint32_t>(src.at(i + 1)) << 16 | static_cast<std::uint32_t>(src.at(i + 2)) << 8;
      if (!(opt & 0x40)) b = (b & 0x80FFFFFFu) | (0x38u << 24) | ((b >> 24) & 0x7u) << 23;  // mostly fp16-range values
      std::memcpy(&s[i], &b, 4);
    }
    buf<std::uint16_t> o(s.n);
    status sw = status::ok;
    for (std::int64_t i = 0; i < s.n && sw == status::ok; ++i) {
      if (std::isnan(s[i]) || std::isinf(s[i])) sw = status::non_finite;
      else if ((qnum::to_fp16(s[i]) & 0x7FFFu) == 0x7C00u) sw = status::scale_overflow;
    }
    const status sg = qnum::gptq::scales_to_fp16_transposed(s.data(), n, groups, o.data());
    QNUM_FUZZ_PROPERTY("pack/status", sg == sw, "gptq::scales_to_fp16_transposed: %s want %s", st(sg), st(sw));
    if (sg == status::ok)
      for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t g = 0; g < groups; ++g)
          QNUM_FUZZ_PROPERTY("pack/reference", o[g * n + c] == qnum::to_fp16(s[c * groups + g]), "gptq::scales_to_fp16_transposed (%lld, %lld)", static_cast<long long>(c), static_cast<long long>(g));
  }
  // AWQ: 4-bit, N % 8.
  {
    const bool aok = n % 8 == 0;
    buf<std::uint8_t> a(static_cast<std::int64_t>(n) * k);
    for (std::int64_t i = 0; i < a.n; ++i) a[i] = static_cast<std::uint8_t>(code_of(src, i, 4, false, wild));
    buf<std::uint32_t> aw(aok ? static_cast<std::int64_t>(k) * (n / 8) : 0);
    const status aw_want = !aok ? status::bad_shape : a.n == 0 ? status::ok : nulls ? status::null_pointer
                                : !fits_all(a, 4, false) ? status::code_out_of_range : status::ok;
    const status ag = qnum::awq::pack_qweight(nulls ? nullptr : a.data(), n, k, aw.data());
    QNUM_FUZZ_PROPERTY("pack/status", ag == aw_want, "awq::pack_qweight n=%d k=%d: %s want %s", n, k, st(ag), st(aw_want));
    if (ag == status::ok && a.n) {
      buf<std::uint8_t> back(a.n);
      QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::awq::unpack_qweight(aw.data(), n, k, back.data()) == status::ok && back.same(a.copy()), "awq qweight n=%d k=%d", n, k);
    }
    buf<std::uint8_t> az(static_cast<std::int64_t>(n) * groups);
    for (std::int64_t i = 0; i < az.n; ++i) az[i] = static_cast<std::uint8_t>(code_of(src, i + 5, 4, false, wild));
    buf<std::uint32_t> azw(aok ? static_cast<std::int64_t>(groups) * (n / 8) : 0);
    const status az_want = !aok ? status::bad_shape : az.n == 0 ? status::ok : nulls ? status::null_pointer
                                : !fits_all(az, 4, false) ? status::code_out_of_range : status::ok;
    const status zg = qnum::awq::pack_qzeros(nulls ? nullptr : az.data(), n, groups, azw.data());
    QNUM_FUZZ_PROPERTY("pack/status", zg == az_want, "awq::pack_qzeros n=%d g=%d: %s want %s", n, groups, st(zg), st(az_want));
    if (zg == status::ok && az.n) {
      buf<std::uint8_t> back(az.n);  // qzeros [G, N/8] has qweight's layout with K = G
      QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::awq::unpack_qweight(azw.data(), n, groups, back.data()) == status::ok && back.same(az.copy()), "awq qzeros n=%d g=%d", n, groups);
    }
  }
}

void marlin(const source& src, int n, int k, bool wild, bool nulls, std::uint8_t opt) {
  static const bool perm_ok = [] {
    std::vector<int> seen(1024, 0);
    for (int p = 0; p < 1024; ++p) {
      const int v = qnum::marlin::weight_perm().v[p];
      if (v < 0 || v >= 1024 || seen[static_cast<std::size_t>(v)]++) return false;
    }
    return true;
  }();
  QNUM_FUZZ_PROPERTY("pack/reference", perm_ok, "marlin::weight_perm is not a permutation of 0..1023");
  const bool ok_shape = k % 16 == 0 && n % 64 == 0;
  buf<std::uint8_t> q(static_cast<std::int64_t>(n) * k);
  for (std::int64_t i = 0; i < q.n; ++i) q[i] = static_cast<std::uint8_t>(code_of(src, i, 4, false, wild));
  const std::int64_t words = ok_shape ? static_cast<std::int64_t>(k / 16) * 2 * n : 0;
  buf<std::uint32_t> out(words);
  const status want = !ok_shape ? status::bad_shape : q.n == 0 ? status::ok : nulls ? status::null_pointer
                           : !fits_all(q, 4, false) ? status::code_out_of_range : status::ok;
  const status got = qnum::marlin::pack_weight(nulls ? nullptr : q.data(), n, k, out.data());
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "marlin::pack_weight n=%d k=%d: %s want %s", n, k, st(got), st(want));
  if (got == status::ok && q.n) {
    // Invert: output word w of strip kt, field i holds tile-major column src = chunk*1024 + perm[p % 1024].
    const std::int64_t row_len = 16 * static_cast<std::int64_t>(n);
    buf<std::uint8_t> back(q.n);
    back.fill(0xFF);
    for (std::int64_t kt = 0; kt < k / 16; ++kt)
      for (std::int64_t w = 0; w < row_len / 8; ++w)
        for (int i = 0; i < 8; ++i) {
          const std::int64_t p = 8 * w + i;
          const std::int64_t s = (p / 1024) * 1024 + qnum::marlin::weight_perm().v[p % 1024];
          const std::int64_t nn = (s / 256) * 16 + s % 16, kk = kt * 16 + (s % 256) / 16;
          back[nn * k + kk] = static_cast<std::uint8_t>((out[kt * (row_len / 8) + w] >> (4 * i)) & 0xFu);
        }
    QNUM_FUZZ_PROPERTY("pack/roundtrip", back.same(q.copy()), "marlin n=%d k=%d: inverse permutation does not give the codes back", n, k);
    buf<std::int8_t> qs(q.n);
    for (std::int64_t i = 0; i < q.n; ++i) qs[i] = static_cast<std::int8_t>(q[i] - 8);
    buf<std::uint32_t> out2(words);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::marlin::pack_weight(qs.data(), n, k, out2.data()) == status::ok && out2.same(out.copy()), "marlin signed overload n=%d k=%d", n, k);
    buf<std::uint32_t> gq(static_cast<std::int64_t>(k / 8) * n), out3(words);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::gptq::pack_qweight(q.data(), n, k, 4, gq.data()) == status::ok &&
                       qnum::marlin::repack_gptq(gq.data(), k, n, out3.data()) == status::ok && out3.same(out.copy()), "marlin::repack_gptq n=%d k=%d", n, k);
  }
  // marlin::permute_scales: s[N, G] -> permutation of its input.
  const std::int64_t group = opt % 4 == 0 ? -1 : (opt % 4 == 1 ? 0 : 16 * (1 + (opt >> 2) % 4));
  const std::int64_t groups = group > 0 && group < k ? (k % group == 0 ? k / group : k / group + 1) : 1 + (opt >> 6) % 2;
  const bool grouped = group != -1 && group < k;
  status pw = status::ok;
  if (n % 64 != 0) pw = status::bad_shape;
  else if (group == 0 || group < -1) pw = status::bad_group;
  else if (grouped ? groups * group != k : groups != 1) pw = status::bad_group;
  else if (n * groups != 0 && nulls) pw = status::null_pointer;
  buf<std::int32_t> s(static_cast<std::int64_t>(n) * groups), o(pw == status::ok ? static_cast<std::int64_t>(n) * groups : 0);
  for (std::int64_t i = 0; i < s.n; ++i) s[i] = static_cast<std::int32_t>(i);
  const status pg = qnum::marlin::permute_scales(nulls ? nullptr : s.data(), n, groups, k, group, o.data());
  QNUM_FUZZ_PROPERTY("pack/status", pg == pw, "marlin::permute_scales n=%d g=%lld k=%d group=%lld: %s want %s", n, static_cast<long long>(groups), k, static_cast<long long>(group), st(pg), st(pw));
  if (pg == status::ok && o.n) {
    std::vector<std::int32_t> v = o.copy();
    std::sort(v.begin(), v.end());
    bool perm = true;
    for (std::size_t i = 0; i < v.size(); ++i) perm = perm && v[i] == static_cast<std::int32_t>(i);
    QNUM_FUZZ_PROPERTY("pack/reference", perm, "marlin::permute_scales is not a permutation (n=%d g=%lld)", n, static_cast<long long>(groups));
  }
}

void gguf(const source& src, int t_sel, int n, bool nulls, std::uint8_t opt) {
  const qnum::gguf::type t = t_sel % 3 == 0 ? qnum::gguf::type::q4_0 : t_sel % 3 == 1 ? qnum::gguf::type::q4_1 : qnum::gguf::type::q8_0;
  const bool shape_ok = n % 32 == 0;
  buf<float> x(n);
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t b = static_cast<std::uint32_t>(src.at(4 * i)) | static_cast<std::uint32_t>(src.at(4 * i + 1)) << 8 |
                      static_cast<std::uint32_t>(src.at(4 * i + 2)) << 16 | static_cast<std::uint32_t>(src.at(4 * i + 3)) << 24;
    if (!(opt & 1) && ((b >> 23) & 0xFF) == 0xFF) b &= ~(1u << 30);  // mostly finite
    std::memcpy(&x[i], &b, 4);
  }
  const std::int64_t bytes = shape_ok ? qnum::gguf::row_bytes(t, n) : 0;
  buf<std::uint8_t> out(bytes);
  out.fill(0xCC);
  const std::vector<std::uint8_t> o0 = out.copy();
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) finite = finite && std::isfinite(x[i]);
  const status got = qnum::gguf::quantize(t, nulls ? nullptr : x.data(), n, out.data());
  if (!shape_ok || n == 0 || nulls || !finite) {
    const status want = !shape_ok ? status::bad_shape : n == 0 ? status::ok : nulls ? status::null_pointer : status::non_finite;
    QNUM_FUZZ_PROPERTY("pack/status", got == want && out.same(o0), "gguf::quantize n=%d: %s want %s", n, st(got), st(want));
    return;
  }
  QNUM_FUZZ_PROPERTY("gguf/status", got == status::ok || got == status::scale_overflow, "gguf::quantize: %s", st(got));
  {  // the host lanes against the per-block definition, byte for byte and in the overflow they report
    std::vector<std::uint8_t> want(static_cast<std::size_t>(bytes));
    bool over = false;
    const int bb = qnum::gguf::block_bytes(t);
    for (std::int64_t b = 0; b < n / 32; ++b) over = qnum::gguf::quantize_block(t, x.data() + b * 32, want.data() + b * bb) || over;
    QNUM_FUZZ_PROPERTY("gguf/definition", out.same(want) && (got == status::scale_overflow) == over,
                       "gguf::quantize type %d n=%d differs from quantize_block", static_cast<int>(t), n);
  }
  buf<float> y(n);
  QNUM_FUZZ_PROPERTY("gguf/status", qnum::gguf::dequantize(t, out.data(), n, y.data()) == status::ok, "gguf::dequantize");
  if (got != status::ok) return;
  const int bb = qnum::gguf::block_bytes(t);
  for (std::int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x.data() + b * 32;
    // The fp32 block scale d (and min) as ggml defines them, computed independently in double where exact.
    double d, mn = 0.0;
    if (t == qnum::gguf::type::q8_0) {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
      d = static_cast<float>(amax / 127.0f);
    } else if (t == qnum::gguf::type::q4_0) {
      float amax = 0.0f, mx = 0.0f;
      for (int j = 0; j < 32; ++j)
        if (amax < std::fabs(xb[j])) { amax = std::fabs(xb[j]); mx = xb[j]; }
      d = static_cast<float>(mx / -8.0f);
    } else {
      float lo = xb[0], hi = xb[0];
      for (int j = 0; j < 32; ++j) { lo = std::min(lo, xb[j]); hi = std::max(hi, xb[j]); }
      d = static_cast<float>(static_cast<float>(static_cast<double>(hi) - static_cast<double>(lo)) / 15.0f);
      mn = lo;
    }
    const std::uint8_t* ob = out.data() + b * bb;
    const double dh = qnum::from_fp16(static_cast<std::uint16_t>(ob[0] | ob[1] << 8));
    const double mh = t == qnum::gguf::type::q4_1 ? qnum::from_fp16(static_cast<std::uint16_t>(ob[2] | ob[3] << 8)) : 0.0;
    if (d != 0.0 && std::fabs(d) < std::ldexp(1.0, -128)) continue;  // 1/d overflows: ggml's code-0 path
    for (int j = 0; j < 32; ++j) {
      const double xv = xb[j], yv = y[b * 32 + j];
      const double ad = std::fabs(d);
      double e;
      if (t == qnum::gguf::type::q8_0) e = (0.5 + std::ldexp(1.0, -14)) * ad + 127.0 * std::fabs(d - dh) + std::ldexp(std::fabs(yv), -23);
      else if (t == qnum::gguf::type::q4_0) e = (1.0 + std::ldexp(1.0, -14)) * ad + 15.0 * std::fabs(d - dh) + std::ldexp(std::fabs(yv), -23);
      else e = (0.5 + std::ldexp(1.0, -14)) * ad + 15.0 * std::fabs(d - dh) + std::fabs(mn - mh) + std::ldexp(std::fabs(xv) + std::fabs(mn) + std::fabs(yv), -21);
      e += std::ldexp(1.0, -140);
      QNUM_FUZZ_PROPERTY("gguf/error_bound", std::isfinite(yv) && std::fabs(xv - yv) <= e,
                         "type %d block %lld elem %d: x=%.9g (0x%08x) y=%.9g |err|=%.9g > %.9g (d=%.9g dh=%.9g min=%.9g mh=%.9g)",
                         static_cast<int>(t), static_cast<long long>(b), j, xv, [&] { std::uint32_t u; std::memcpy(&u, &xb[j], 4); return u; }(), yv,
                         std::fabs(xv - yv), e, d, dh, mn, mh);
    }
  }
}

void fp8_block(const source& src, int n, int k, std::uint8_t opt, bool nulls) {
  const std::int64_t bn = opt % 4 == 0 ? 128 : 1 + opt % 37, bk = (opt >> 2) % 4 == 0 ? 128 : 1 + (opt >> 2) % 41;
  qnum::fp8_block::shape sh;
  const status ls = qnum::fp8_block::layout(n, k, &sh, bn, bk);
  QNUM_FUZZ_PROPERTY("pack/status", ls == status::ok && sh.scale_rows == (n + bn - 1) / bn && sh.scale_cols == (k + bk - 1) / bk, "fp8_block::layout");
  QNUM_FUZZ_PROPERTY("pack/status", qnum::fp8_block::layout(n, k, &sh, opt & 1 ? 0 : -1, bk) == status::bad_group, "fp8_block::layout bad block");
  qnum::fp8_block::layout(n, k, &sh, bn, bk);
  buf<std::uint8_t> w(static_cast<std::int64_t>(n) * k);
  for (std::int64_t i = 0; i < w.n; ++i) w[i] = src.at(i);
  buf<float> s(sh.scale_rows * sh.scale_cols);
  bool pow2 = true, valid = true;
  for (std::int64_t i = 0; i < s.n; ++i) {
    const int e = src.at(i + 11) % 40;
    s[i] = std::ldexp(1.0f, e - 20) * (opt & 0x40 ? 1.0f + static_cast<float>(src.at(i + 13) % 4) / 4.0f : 1.0f);
    if (src.at(i + 17) == 0xFE) s[i] = -s[i];
    pow2 = pow2 && qnum::ue8m0_of_pow2(s[i]) >= 0;
    valid = valid && s[i] > 0.0f;
  }
  buf<std::uint8_t> e8(s.n);
  const status cs = qnum::fp8_block::check_scales(sh, s.data(), true, e8.data());
  QNUM_FUZZ_PROPERTY("pack/status", cs == (valid && pow2 ? status::ok : status::code_out_of_range), "fp8_block::check_scales: %s", st(cs));
  if (cs == status::ok)
    for (std::int64_t i = 0; i < s.n; ++i) QNUM_FUZZ_PROPERTY("pack/roundtrip", std::ldexp(1.0, e8[i] - 127) == s[i], "fp8 ue8m0 byte %lld", static_cast<long long>(i));
  buf<float> y(w.n);
  // A shape whose scale grid does not match n, k and the block (hand-built): must be refused, no access.
  qnum::fp8_block::shape bad = sh;
  if (opt & 0x80) bad.scale_cols = sh.scale_cols + 1 + (opt & 1);
  const bool bad_used = (opt & 0x80) && w.n > 0;
  const status dg = qnum::fp8_block::dequantize(bad, nulls ? nullptr : w.data(), s.data(), y.data());
  const status dw = w.n == 0 ? status::ok : bad_used ? status::bad_shape : nulls ? status::null_pointer : status::ok;
  QNUM_FUZZ_PROPERTY("pack/status", dg == dw, "fp8_block::dequantize %dx%d block %lldx%lld: %s want %s", n, k, static_cast<long long>(bn), static_cast<long long>(bk), st(dg), st(dw));
  if (dg == status::ok)
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < k; ++c) {
        const float want = static_cast<float>(static_cast<double>(qnum::decode<qnum::fp8_e4m3>(w[r * k + c])) * static_cast<double>(s[(r / bn) * sh.scale_cols + c / bk]));
        const float got = y[r * k + c];
        QNUM_FUZZ_PROPERTY("pack/reference", std::memcmp(&want, &got, 4) == 0 || (std::isnan(want) && std::isnan(got)), "fp8_block::dequantize (%lld, %lld)", static_cast<long long>(r), static_cast<long long>(c));
      }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qnum_fuzz::input in(data, size);
  const std::uint8_t op = in.take<std::uint8_t>();
  const std::uint8_t a = in.take<std::uint8_t>(), b = in.take<std::uint8_t>(), c = in.take<std::uint8_t>(), d = in.take<std::uint8_t>();
  source src;
  while (in.remaining() > 0 && src.bytes.size() < 8192) src.bytes.push_back(in.take<std::uint8_t>());
  const bool nulls = (d & 7) == 7;
  const bool wild = (d & 0x18) == 0x18;  // codes out of range for the width
  switch (op % 8) {
    case 0: dense<std::int8_t>(src, a % 40, b % 80, c % 10, (c & 0x80) ? qnum::packed_dim::rows : qnum::packed_dim::cols, wild, nulls, (d & 0x20) != 0); break;
    case 1: dense<std::uint8_t>(src, a % 40, b % 80, c % 10, (c & 0x80) ? qnum::packed_dim::rows : qnum::packed_dim::cols, wild, nulls, false); break;
    case 2: nibbles(src, a + (b & 1) * 256, (c & 1) != 0, wild, nulls); break;
    case 3: ue8m0(src, a % 20, b % 40, nulls); break;
    case 4: gptq_awq(src, (a % 5 == 0 ? 8 * (a % 9) : a % 70), (b % 3 == 0 ? 16 * (b % 7) : b % 100), c % 10, wild, nulls, d); break;
    case 5: marlin(src, (a % 3 == 0 ? 64 * (1 + a % 3) : a % 130), (b % 3 == 0 ? 16 * (b % 8) : b % 70), wild, nulls, c); break;
    case 6: gguf(src, a, (b % 4 == 0 ? b % 200 : 32 * (b % 7)), nulls, c); break;
    default: fp8_block(src, a % 70, b % 90, c, nulls); break;
  }
  {
    qnum::ct::pack_quantized_shape s;
    const std::int64_t group = static_cast<std::int8_t>(d) % 5 == 0 ? -1 : static_cast<std::int8_t>(d) % 40;
    const int bits = c % 10;
    const status ls = qnum::ct::pack_quantized_layout(a, b, bits, group, &s);
    const status want = bits < 1 || bits > 8 ? status::bad_bits : (group == 0 || group < -1) ? status::bad_group : status::ok;
    QNUM_FUZZ_PROPERTY("pack/status", ls == want, "ct::pack_quantized_layout: %s want %s", st(ls), st(want));
    if (ls == status::ok) {
      const std::int64_t g = group == -1 ? (b > 0 ? 1 : 0) : (b + group - 1) / group;
      QNUM_FUZZ_PROPERTY("pack/reference", s.groups == g && s.packed_cols == (static_cast<std::int64_t>(b) * bits + 31) / 32 && s.zp_rows == (static_cast<std::int64_t>(a) * bits + 31) / 32 &&
                         s.scale_cols == g && s.packed_rows == a, "ct::pack_quantized_layout shapes");
    }
    std::int32_t ws[2];
    QNUM_FUZZ_PROPERTY("pack/status", qnum::ct::weight_shape(a, b, ws) == status::ok && ws[0] == a && ws[1] == b, "ct::weight_shape");
  }
  return 0;
}
