// fuzz/fuzz_pack.cpp: property fuzzing of qnum/layout/pack.hpp and every layout writer in qnum/layout/*.hpp
// (compressed_tensors, gptq_awq, marlin, gguf, fp8_block), all called through qnum::matrix_view (view.hpp).
//
// Input bytes: op (which API), then shape and option bytes, then code/value bytes (reused cyclically). The
// layouts of the view properties (row paddings, the wrong extent, the short stride, the padding bytes) are
// drawn from the same value bytes. Shapes are random (0..~100 per dimension, including ones the layout
// rejects). Every buffer is allocated with exactly the size the call needs for a valid shape, and with size 0
// for a shape the layout rejects (so any access at all is an ASan report); one op in eight passes a null
// pointer.
//
// Properties (prefix pack/):
//   status     the documented status for the shape/bits/group (ok, bad_bits, bad_shape, bad_group,
//              null_pointer, code_out_of_range, non_finite, scale_overflow); a refused call writes nothing.
//              A null input with a non-zero extent is null_pointer before the layout's own shape rule
//              (view.hpp's check of each view comes first)
//   roundtrip  unpack(pack(c)) == c: dense int32 (signed offset-binary and unsigned, both packed dims),
//              nibbles (both orders, odd n, and 2-D rows), UE8M0 words, pow2 float scales -> UE8M0 bytes,
//              compressed-tensors weight_packed and weight_zero_point, GPTQ qweight (unsigned and signed
//              uint4b8) and qzeros (v1, v2), AWQ qweight and qzeros (qzeros through awq::unpack_qweight:
//              the same layout), Marlin (no unpack in qnum: inverted here through marlin::weight_perm)
//   reference  packed words equal an independent bit-by-bit packer (dense int32: bit i*bits of the
//              line, unused high bits 0); int32 codes / zero points pack as the int8 ones;
//              ct::pack_weight of qnum::quantize's uint8 two's complement codes == of the int8 codes (a
//              byte with bits above `bits` set: code_out_of_range); the uint8 and int32 overloads of
//              gptq/awq::pack_qzeros agree; Marlin's signed overload == unsigned of q + 8, and
//              marlin::repack_gptq(gptq::pack_qweight(q)) == marlin::pack_weight(q); marlin::weight_perm is a
//              permutation of 0..1023; marlin::permute_scales is a permutation of its input;
//              gptq::scales_to_fp16_transposed is to_fp16 of the transpose; fp8_block::dequantize is
//              decode<fp8_e4m3>(code) * its block's scale, bit for bit
//   rows       2-D calls work per row: pack_nibbles [R, C] == R calls on 1 x C; gguf::quantize [R, n] ==
//              gguf::quantize_block per block of every row (bytes and the overflow status; NaN/Inf in any
//              row -> non_finite, nothing written)
//   stride_in  an input view with a random row_stride >= cols whose padding holds input bytes (out-of-range
//              codes, NaN, ...) gives the status and output of the contiguous call (every packer, unpacker,
//              gguf, fp8_block scales and weights)
//   stride_out an output view with a random row_stride gets the contiguous call's elements and status and
//              its padding (also after the last row) keeps its bytes
//   wrong_extent  an output view one row/column too many or too few (or both) is bad_shape for a call that
//              writes (one refused for its values may report that instead), and nothing is written
//   bad_stride a view (input or output) with more than one row and row_stride < cols is bad_stride for a
//              call that writes (or the refusal's own status), and nothing is written
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
#include <type_traits>
#include <vector>

#include "fuzz_util.hpp"
#include "qnum/codec.hpp"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/layout/marlin.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/view.hpp"

namespace {

using qnum::status;
using qnum::view;

template <class T>
struct buf {
  std::unique_ptr<T[]> p;
  std::int64_t n;
  explicit buf(std::int64_t k) : p(new T[static_cast<std::size_t>(k < 0 ? 0 : k)]()), n(k < 0 ? 0 : k) {}
  T* data() { return p.get(); }
  const T* data() const { return p.get(); }
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
long long ll(std::int64_t v) { return static_cast<long long>(v); }

// ---------------------------------------------------------------------------------------------------
// View properties shared by every entry point: strided input, strided output, wrong output extent, short
// strides. The layouts come from the input bytes at `salt`.

// A row padding of 0..7 elements, sometimes up to 63.
std::int64_t pad_of(const source& s, std::int64_t i) {
  const std::uint8_t b = s.at(i);
  return (b & 0x40) ? (b & 0x3F) : (b & 7);
}

template <class T>
bool all_bytes(const T* p, std::int64_t n, std::uint8_t v) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < sizeof(T) * static_cast<std::size_t>(n); ++i)
    if (b[i] != v) return false;
  return true;
}
template <class T>
bool same_elems(const T* a, const T* b, std::int64_t n) {
  return n == 0 || std::memcmp(a, b, sizeof(T) * static_cast<std::size_t>(n)) == 0;
}

// Whether a call with this status wrote its output (gguf::quantize: scale_overflow writes everything;
// elsewhere a refusal writes nothing).
bool writes(status s, bool overflow_writes) { return s == status::ok || (overflow_writes && s == status::scale_overflow); }

// `call(matrix_view<const In>, matrix_view<Out>)` is an entry point with every other argument bound; in
// [ir, ic] contiguous; ref [orows, ocols] the contiguous call's output and ref_st its status. Nothing is
// checked for an empty input (ok, output unchecked). wrong_extent: the output's extent is fixed by the
// input (not so for the unpackers, whose output gives the shape). overflow_writes: scale_overflow is a
// status that writes every element (gguf::quantize).
template <class In, class Out, class F>
void view_props(const char* what, const source& src, std::int64_t salt, const In* in, std::int64_t ir, std::int64_t ic,
                const Out* ref, std::int64_t orows, std::int64_t ocols, status ref_st, const F& call, bool wrong_extent = true,
                bool overflow_writes = false) {
  if (ir * ic == 0) return;
  const bool w = writes(ref_st, overflow_writes);
  const std::uint8_t fill = static_cast<std::uint8_t>(src.at(salt + 2) ^ 0xA5);
  const std::int64_t osize = orows * ocols;
  const qnum::matrix_view<const In> cin = view(in, ir, ic);
  {  // input rows apart, the padding filled with input bytes; the buffer ends with the last row
    const std::int64_t stride = ic + pad_of(src, salt);
    buf<In> sin((ir - 1) * stride + ic);
    unsigned char* b = reinterpret_cast<unsigned char*>(sin.data());
    for (std::size_t j = 0; j < sizeof(In) * static_cast<std::size_t>(sin.n); ++j) b[j] = src.at(salt + 5 + static_cast<std::int64_t>(j));
    for (std::int64_t r = 0; r < ir; ++r) std::memcpy(&sin[r * stride], in + r * ic, sizeof(In) * static_cast<std::size_t>(ic));
    buf<Out> o(osize);
    o.fill(fill);
    const In* sp = sin.data();
    const status s = call(view(sp, ir, ic, stride), view(o.data(), orows, ocols));
    const bool body = w ? same_elems(o.data(), ref, osize) : all_bytes(o.data(), osize, fill);
    QNUM_FUZZ_PROPERTY("pack/stride_in", s == ref_st && body, "%s: input %lldx%lld row_stride %lld: %s (contiguous: %s), output %s",
                       what, ll(ir), ll(ic), ll(stride), st(s), st(ref_st), body ? "same" : "differs");
  }
  {  // output rows apart: the elements of the contiguous call, padding (also after the last row) unchanged
    const std::int64_t stride = ocols + pad_of(src, salt + 1);
    buf<Out> o(orows * stride);
    o.fill(fill);
    const status s = call(cin, view(o.data(), orows, ocols, stride));
    bool body = true, padding = true;
    for (std::int64_t r = 0; r < orows; ++r) {
      const Out* row = o.data() + r * stride;
      body = body && (w ? same_elems(row, ref + r * ocols, ocols) : all_bytes(row, ocols, fill));
      padding = padding && all_bytes(row + ocols, stride - ocols, fill);
    }
    QNUM_FUZZ_PROPERTY("pack/stride_out", s == ref_st && body && padding, "%s: output %lldx%lld row_stride %lld: %s (contiguous: %s), elements %s, padding %s",
                       what, ll(orows), ll(ocols), ll(stride), st(s), st(ref_st), body ? "same" : "differ", padding ? "kept" : "written");
  }
  if (wrong_extent) {  // one row/column too many or too few (never empty: check_scales reads an empty e as absent)
    const std::uint8_t b = src.at(salt + 3);
    std::int64_t wr = orows, wc = ocols;
    switch (b % 5) {
      case 0: ++wr; break;
      case 1: ++wc; break;
      case 2: --wr; break;
      case 3: --wc; break;
      default: wr += 1 + (b >> 5) % 3; wc -= 1 + (b >> 3) % 3; break;
    }
    if (wr <= 0 || wc <= 0) {
      wr = orows + 1;
      wc = ocols;
    }
    buf<Out> o(wr * wc);
    o.fill(fill);
    const status s = call(cin, view(o.data(), wr, wc));
    const bool st_ok = w ? s == status::bad_shape : (s == status::bad_shape || s == ref_st);
    QNUM_FUZZ_PROPERTY("pack/wrong_extent", st_ok && all_bytes(o.data(), o.n, fill), "%s: output %lldx%lld given for %lldx%lld: %s (contiguous: %s)%s",
                       what, ll(wr), ll(wc), ll(orows), ll(ocols), st(s), st(ref_st), all_bytes(o.data(), o.n, fill) ? "" : ", and it wrote");
  }
  if (ir >= 2) {  // input row_stride < cols
    const std::int64_t bs = src.at(salt + 4) % ic;
    buf<Out> o(osize);
    o.fill(fill);
    const status s = call(view(in, ir, ic, bs), view(o.data(), orows, ocols));
    const bool st_ok = w ? s == status::bad_stride : (s == status::bad_stride || s == ref_st);
    QNUM_FUZZ_PROPERTY("pack/bad_stride", st_ok && all_bytes(o.data(), osize, fill), "%s: input %lldx%lld row_stride %lld: %s (contiguous: %s)",
                       what, ll(ir), ll(ic), ll(bs), st(s), st(ref_st));
  }
  if (orows >= 2 && ocols >= 1) {  // output row_stride < cols
    const std::int64_t bs = src.at(salt + 4) % ocols;
    buf<Out> o(osize);
    o.fill(fill);
    const status s = call(cin, view(o.data(), orows, ocols, bs));
    const bool st_ok = w ? s == status::bad_stride : (s == status::bad_stride || s == ref_st);
    QNUM_FUZZ_PROPERTY("pack/bad_stride", st_ok && all_bytes(o.data(), osize, fill), "%s: output %lldx%lld row_stride %lld: %s (contiguous: %s)",
                       what, ll(orows), ll(ocols), ll(bs), st(s), st(ref_st));
  }
}

// ---------------------------------------------------------------------------------------------------

// Dense int32 packing (pack.hpp) and compressed-tensors weight/zero-point wrappers.
template <class T>
void dense(const source& src, int rows, int cols, int bits, qnum::packed_dim dim, bool wild, bool nulls, bool via_ct) {
  constexpr bool sgn = std::is_signed<T>::value;
  const bool bits_ok = bits >= 1 && bits <= 8;
  const bool cols_dim = dim == qnum::packed_dim::cols;
  const qnum::extent pe = qnum::pack_int32_shape(rows, cols, bits, dim);  // the buffer: 0 words for bad bits
  buf<T> c(static_cast<std::int64_t>(rows) * cols);
  for (std::int64_t i = 0; i < c.n; ++i) c[i] = static_cast<T>(code_of(src, i, bits_ok ? bits : 8, sgn, wild));
  buf<std::uint32_t> w(bits_ok ? pe.rows * pe.cols : 0);
  w.fill(0xA5);
  const std::vector<std::uint32_t> w0 = w.copy();
  // The packer under test: pack_int32, or for signed codes ct::pack_weight (packed_dim::cols) /
  // ct::pack_zero_point (packed_dim::rows); the unpacker: its inverse.
  const auto pack = [&](qnum::matrix_view<const T> in, qnum::matrix_view<std::uint32_t> out) -> status {
    if constexpr (sgn) {
      if (via_ct) return cols_dim ? qnum::ct::pack_weight(in, bits, out) : qnum::ct::pack_zero_point(in, bits, out);
    }
    return qnum::pack_int32(in, bits, dim, out);
  };
  const auto unpack = [&](qnum::matrix_view<const std::uint32_t> in, qnum::matrix_view<T> out) -> status {
    if constexpr (sgn) {
      if (via_ct) return cols_dim ? qnum::ct::unpack_weight(in, bits, out) : qnum::ct::unpack_zero_point(in, bits, out);
    }
    return qnum::unpack_int32(in, bits, dim, out);
  };
  const char* name = sgn && via_ct ? (cols_dim ? "ct::pack_weight" : "ct::pack_zero_point") : "pack_int32";
  const bool fit = fits_all(c, bits_ok ? bits : 8, sgn);
  status want = status::ok;
  if (!bits_ok) want = status::bad_bits;
  else if (c.n == 0) want = status::ok;
  else if (nulls) want = status::null_pointer;
  else if (!fit) want = status::code_out_of_range;
  const T* cp = nulls ? nullptr : c.data();
  const status got = pack(view(cp, rows, cols), view(w.data(), pe.rows, pe.cols));
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "%s %dx%d bits %d dim %d signed %d: %s want %s", name, rows, cols, bits, static_cast<int>(dim), sgn ? 1 : 0, st(got), st(want));
  if (nulls && bits_ok && c.n > 0) {  // a null output with its extent
    std::uint32_t* np = nullptr;
    const status g2 = pack(view(c.data(), rows, cols), view(np, pe.rows, pe.cols));
    QNUM_FUZZ_PROPERTY("pack/status", g2 == status::null_pointer || (!fit && g2 == status::code_out_of_range), "%s %dx%d null output: %s", name, rows, cols, st(g2));
  }
  if (bits_ok && c.n > 0 && !nulls) view_props(name, src, 101, c.data(), rows, cols, w.data(), pe.rows, pe.cols, got, pack);
  if (got != status::ok) {
    QNUM_FUZZ_PROPERTY("pack/status", w.same(w0), "%s refused but wrote", name);
    return;
  }
  if (c.n == 0) return;
  // Independent reference: line-by-line bit stream, unused high bits 0.
  const std::int64_t lines = cols_dim ? rows : cols;
  const std::int64_t len = cols_dim ? cols : rows;
  const std::int64_t wpl = (len * bits + 31) / 32;
  std::vector<std::uint32_t> ref(static_cast<std::size_t>(w.n), 0u);
  for (std::int64_t l = 0; l < lines; ++l)
    for (std::int64_t e = 0; e < len; ++e) {
      const std::int64_t r = cols_dim ? l : e, cc = cols_dim ? e : l;
      const std::int32_t v = c[r * cols + cc];
      const std::uint32_t field = sgn ? static_cast<std::uint32_t>(v + (1 << (bits - 1))) : static_cast<std::uint32_t>(v);
      for (int b = 0; b < bits; ++b) {
        if (!((field >> b) & 1u)) continue;
        const std::int64_t bit = e * bits + b;
        const std::int64_t widx = cols_dim ? l * wpl + bit / 32 : (bit / 32) * cols + l;
        ref[static_cast<std::size_t>(widx)] |= 1u << (bit % 32);
      }
    }
  QNUM_FUZZ_PROPERTY("pack/reference", w.same(ref), "%s %dx%d bits %d dim %d: words differ from the bit-by-bit reference", name, rows, cols, bits, static_cast<int>(dim));
  if constexpr (sgn) {
    // int32 codes (the zero points quantize writes) pack as the int8 ones.
    buf<std::int32_t> c32(c.n);
    for (std::int64_t i = 0; i < c.n; ++i) c32[i] = c[i];
    buf<std::uint32_t> w32(w.n);
    const status s32 = via_ct && !cols_dim ? qnum::ct::pack_zero_point(view(c32.data(), rows, cols), bits, view(w32.data(), pe.rows, pe.cols))
                                           : qnum::pack_int32(view(c32.data(), rows, cols), bits, dim, view(w32.data(), pe.rows, pe.cols));
    QNUM_FUZZ_PROPERTY("pack/reference", s32 == status::ok && w32.same(ref), "%s int32 codes %dx%d bits %d: %s", name, rows, cols, bits, st(s32));
    if (cols_dim) {
      // ct::pack_weight of qnum::quantize's codes: two's complement in the low `bits` bits of a byte.
      buf<std::uint8_t> u(c.n);
      bool high = false;  // a byte with bits above `bits` set (a negative code, sign-extended)
      for (std::int64_t i = 0; i < c.n; ++i) u[i] = static_cast<std::uint8_t>(static_cast<std::uint32_t>(c[i]) & qnum::low_mask(bits));
      buf<std::uint32_t> wu(w.n);
      const status su = qnum::ct::pack_weight(view(u.data(), rows, cols), bits, view(wu.data(), pe.rows, pe.cols));
      QNUM_FUZZ_PROPERTY("pack/reference", su == status::ok && wu.same(ref), "ct::pack_weight uint8 codes %dx%d bits %d: %s", rows, cols, bits, st(su));
      view_props("ct::pack_weight uint8", src, 151, u.data(), rows, cols, wu.data(), pe.rows, pe.cols, su,
                 [&](qnum::matrix_view<const std::uint8_t> in, qnum::matrix_view<std::uint32_t> out) { return qnum::ct::pack_weight(in, bits, out); });
      for (std::int64_t i = 0; i < c.n; ++i) {
        u[i] = static_cast<std::uint8_t>(c[i]);
        high = high || (bits < 8 && c[i] < 0);
      }
      buf<std::uint32_t> wh(w.n);
      wh.fill(0x3C);
      const status sh = qnum::ct::pack_weight(view(u.data(), rows, cols), bits, view(wh.data(), pe.rows, pe.cols));
      QNUM_FUZZ_PROPERTY("pack/status", sh == (high ? status::code_out_of_range : status::ok) && (high ? all_bytes(wh.data(), wh.n, 0x3C) : wh.same(ref)),
                         "ct::pack_weight uint8 sign-extended codes %dx%d bits %d: %s", rows, cols, bits, st(sh));
    }
  }
  buf<T> back(c.n);
  const status u = unpack(view(w.data(), pe.rows, pe.cols), view(back.data(), rows, cols));
  QNUM_FUZZ_PROPERTY("pack/roundtrip", u == status::ok && back.same(c.copy()), "%s unpack %dx%d bits %d dim %d: %s", name, rows, cols, bits, static_cast<int>(dim), st(u));
  view_props(name, src, 131, w.data(), pe.rows, pe.cols, c.data(), rows, cols, status::ok, unpack, false);
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
  const std::uint8_t* cp = nulls ? nullptr : c.data();
  const status got = qnum::pack_nibbles(view(cp, n), ord, view(out.data(), (n + 1) / 2));
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "pack_nibbles n=%d: %s want %s", n, st(got), st(want));
  const auto pack = [&](qnum::matrix_view<const std::uint8_t> in, qnum::matrix_view<std::uint8_t> o) { return qnum::pack_nibbles(in, ord, o); };
  const auto unpack = [&](qnum::matrix_view<const std::uint8_t> in, qnum::matrix_view<std::uint8_t> o) { return qnum::unpack_nibbles(in, ord, o); };
  if (!nulls && n > 0) {
    // 2-D: [R, C] codes (the first R*C) -> [R, ceil(C/2)] bytes, each row as a 1-D call.
    const std::int64_t rr = 1 + src.at(n + 1) % 4, cc = n / rr, oc = (cc + 1) / 2;
    if (cc > 0) {
      bool fit2 = true;
      for (std::int64_t i = 0; i < rr * cc; ++i) fit2 = fit2 && c[i] <= 15;
      buf<std::uint8_t> ref(rr * oc), o2(rr * oc);
      o2.fill(0x5A);
      for (std::int64_t r = 0; r < rr; ++r) qnum::pack_nibbles(view(c.data() + r * cc, cc), ord, view(ref.data() + r * oc, oc));
      const status s2 = qnum::pack_nibbles(view(c.data(), rr, cc), ord, view(o2.data(), rr, oc));
      QNUM_FUZZ_PROPERTY("pack/rows", s2 == (fit2 ? status::ok : status::code_out_of_range) && (fit2 ? o2.same(ref.copy()) : all_bytes(o2.data(), o2.n, 0x5A)),
                         "pack_nibbles %lldx%lld: %s, not the rows' 1-D calls", ll(rr), ll(cc), st(s2));
      view_props("pack_nibbles", src, 201, c.data(), rr, cc, o2.data(), rr, oc, s2, pack);
      if (s2 == status::ok) {
        buf<std::uint8_t> back(rr * cc);
        const status u2 = qnum::unpack_nibbles(view(o2.data(), rr, oc), ord, view(back.data(), rr, cc));
        QNUM_FUZZ_PROPERTY("pack/roundtrip", u2 == status::ok && same_elems(back.data(), c.data(), rr * cc), "unpack_nibbles %lldx%lld: %s", ll(rr), ll(cc), st(u2));
        view_props("unpack_nibbles", src, 211, o2.data(), rr, oc, c.data(), rr, cc, status::ok, unpack, false);
      }
    }
  }
  if (got != status::ok) {
    QNUM_FUZZ_PROPERTY("pack/status", out.same(o0), "pack_nibbles refused but wrote");
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t b = out[i / 2];
    const std::uint32_t nib = (i % 2 == 0) == !high_first ? (b & 0xFu) : (b >> 4);
    QNUM_FUZZ_PROPERTY("pack/reference", nib == c[i], "pack_nibbles n=%d order %d element %lld", n, high_first ? 1 : 0, ll(i));
  }
  if (n % 2) QNUM_FUZZ_PROPERTY("pack/reference", (high_first ? (out[n / 2] & 0xF) : (out[n / 2] >> 4)) == 0, "pack_nibbles odd tail not 0");
  buf<std::uint8_t> back(n);
  const status u = qnum::unpack_nibbles(view(out.data(), (n + 1) / 2), ord, view(back.data(), n));
  QNUM_FUZZ_PROPERTY("pack/roundtrip", u == status::ok && back.same(c.copy()), "unpack_nibbles n=%d", n);
}

void ue8m0(const source& src, int rows, int groups, bool nulls) {
  buf<std::uint8_t> e(static_cast<std::int64_t>(rows) * groups);
  for (std::int64_t i = 0; i < e.n; ++i) e[i] = src.at(i);
  const std::int64_t wpr = (groups + 3) / 4;
  buf<std::uint32_t> w(static_cast<std::int64_t>(rows) * wpr);
  const status want = e.n == 0 ? status::ok : nulls ? status::null_pointer : status::ok;
  const std::uint8_t* ep = nulls ? nullptr : e.data();
  const status got = qnum::pack_ue8m0(view(ep, rows, groups), view(w.data(), rows, wpr));
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "pack_ue8m0 %dx%d: %s", rows, groups, st(got));
  if (nulls || e.n == 0) return;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < wpr; ++j)
      for (int i = 0; i < 4; ++i) {
        const std::uint32_t b = (w[r * wpr + j] >> (8 * i)) & 0xFFu;
        const std::uint32_t want_b = 4 * j + i < groups ? e[r * groups + 4 * j + i] : 0u;
        QNUM_FUZZ_PROPERTY("pack/reference", b == want_b, "pack_ue8m0 row %lld word %lld byte %d", ll(r), ll(j), i);
      }
  view_props("pack_ue8m0", src, 301, e.data(), rows, groups, w.data(), rows, wpr, got,
             [](qnum::matrix_view<const std::uint8_t> in, qnum::matrix_view<std::uint32_t> o) { return qnum::pack_ue8m0(in, o); });
  buf<std::uint8_t> back(e.n);
  QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::unpack_ue8m0(view(w.data(), rows, wpr), view(back.data(), rows, groups)) == status::ok && back.same(e.copy()), "unpack_ue8m0 %dx%d", rows, groups);
  view_props("unpack_ue8m0", src, 311, w.data(), rows, wpr, e.data(), rows, groups, status::ok,
             [](qnum::matrix_view<const std::uint32_t> in, qnum::matrix_view<std::uint8_t> o) { return qnum::unpack_ue8m0(in, o); }, false);
  // Power-of-two float scales -> UE8M0 bytes: 2^(e-127) for e in 1..254 round-trips; anything else is
  // refused and nothing written.
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
  eb.fill(0x99);
  const status g2 = qnum::ue8m0_from_pow2_scales(view(s.data(), e.n), view(eb.data(), e.n));
  QNUM_FUZZ_PROPERTY("pack/status", g2 == (all_ok ? status::ok : status::code_out_of_range), "ue8m0_from_pow2_scales: %s", st(g2));
  if (all_ok) QNUM_FUZZ_PROPERTY("pack/roundtrip", eb.same(e.copy()), "ue8m0_from_pow2_scales");
  else QNUM_FUZZ_PROPERTY("pack/status", all_bytes(eb.data(), eb.n, 0x99), "ue8m0_from_pow2_scales refused but wrote");
  // The same scales as [rows, groups]: the 1-D call's bytes, row by row.
  view_props("ue8m0_from_pow2_scales", src, 321, s.data(), rows, groups, eb.data(), rows, groups, g2,
             [](qnum::matrix_view<const float> in, qnum::matrix_view<std::uint8_t> o) { return qnum::ue8m0_from_pow2_scales(in, o); });
}

// GPTQ (qweight both overloads, qzeros v1/v2, fp16 scales) and AWQ (qweight, qzeros).
void gptq_awq(const source& src, int n, int k, int bits, bool wild, bool nulls, std::uint8_t opt) {
  using u8v = qnum::matrix_view<const std::uint8_t>;
  using u32v = qnum::matrix_view<const std::uint32_t>;
  using wv = qnum::matrix_view<std::uint32_t>;
  const bool bits_ok = bits == 2 || bits == 4 || bits == 8;
  const int pf = bits_ok ? 32 / bits : 1;
  const bool shape_ok = bits_ok && k % pf == 0;
  // qweight [K*bits/32, N]
  buf<std::uint8_t> q(static_cast<std::int64_t>(n) * k);
  for (std::int64_t i = 0; i < q.n; ++i) q[i] = static_cast<std::uint8_t>(code_of(src, i, bits_ok ? bits : 8, false, wild));
  const std::int64_t qwr = static_cast<std::int64_t>(k) * bits / 32;  // the view's extent; the buffer: 0 words for a bad shape
  buf<std::uint32_t> qw(shape_ok ? qwr * n : 0);
  qw.fill(0x77);
  const std::vector<std::uint32_t> qw0 = qw.copy();
  status want = !bits_ok ? status::bad_bits : (nulls && q.n) ? status::null_pointer : !shape_ok ? status::bad_shape : q.n == 0 ? status::ok
                : !fits_all(q, bits, false) ? status::code_out_of_range : status::ok;
  const std::uint8_t* qp = nulls ? nullptr : q.data();
  status got = qnum::gptq::pack_qweight(view(qp, n, k), bits, view(qw.data(), qwr, n));
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "gptq::pack_qweight n=%d k=%d bits %d: %s want %s", n, k, bits, st(got), st(want));
  if (got != status::ok) QNUM_FUZZ_PROPERTY("pack/status", qw.same(qw0), "gptq::pack_qweight refused but wrote");
  if (shape_ok && !nulls) {
    view_props("gptq::pack_qweight", src, 401, q.data(), n, k, qw.data(), qwr, n, got,
               [&](u8v in, wv o) { return qnum::gptq::pack_qweight(in, bits, o); });
  }
  if (got == status::ok && q.n) {
    buf<std::uint8_t> back(q.n);
    QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::gptq::unpack_qweight(view(qw.data(), qwr, n), bits, view(back.data(), n, k)) == status::ok && back.same(q.copy()), "gptq qweight n=%d k=%d bits %d", n, k, bits);
    view_props("gptq::unpack_qweight", src, 411, qw.data(), qwr, n, q.data(), n, k, status::ok,
               [&](u32v in, qnum::matrix_view<std::uint8_t> o) { return qnum::gptq::unpack_qweight(in, bits, o); }, false);
    // Signed overload: q - 2^(bits-1) packs to the same words.
    buf<std::int8_t> qs(q.n);
    for (std::int64_t i = 0; i < q.n; ++i) qs[i] = static_cast<std::int8_t>(q[i] - (1 << (bits - 1)));
    buf<std::uint32_t> qw2(qw.n);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::gptq::pack_qweight(view(qs.data(), n, k), bits, view(qw2.data(), qwr, n)) == status::ok && qw2.same(qw.copy()), "gptq signed overload");
    view_props("gptq::pack_qweight int8", src, 421, qs.data(), n, k, qw.data(), qwr, n, status::ok,
               [&](qnum::matrix_view<const std::int8_t> in, wv o) { return qnum::gptq::pack_qweight(in, bits, o); });
  }
  // qzeros [G, N*bits/32], z[N, G]; groups from opt.
  const int groups = opt % 9;
  const qnum::gptq::format fmt = opt & 0x80 ? qnum::gptq::format::v1 : qnum::gptq::format::v2;
  const bool zshape_ok = bits_ok && n % pf == 0;
  buf<std::uint8_t> z(static_cast<std::int64_t>(n) * groups);
  for (std::int64_t i = 0; i < z.n; ++i) z[i] = static_cast<std::uint8_t>(code_of(src, i + 3, bits_ok ? bits : 8, false, wild));
  const std::int64_t qzc = static_cast<std::int64_t>(n) * bits / 32;
  buf<std::uint32_t> qz(zshape_ok ? groups * qzc : 0);
  bool zfit = fits_all(z, bits_ok ? bits : 8, false);
  if (fmt == qnum::gptq::format::v1)
    for (std::int64_t i = 0; i < z.n; ++i) zfit = zfit && z[i] >= 1;
  want = !bits_ok ? status::bad_bits : (nulls && z.n) ? status::null_pointer : !zshape_ok ? status::bad_shape : z.n == 0 ? status::ok
         : !zfit ? status::code_out_of_range : status::ok;
  const std::uint8_t* zp = nulls ? nullptr : z.data();
  got = qnum::gptq::pack_qzeros(view(zp, n, groups), bits, fmt, view(qz.data(), groups, qzc));
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "gptq::pack_qzeros n=%d g=%d bits %d v%d: %s want %s", n, groups, bits, static_cast<int>(fmt), st(got), st(want));
  if (zshape_ok && !nulls)
    view_props("gptq::pack_qzeros", src, 431, z.data(), n, groups, qz.data(), groups, qzc, got,
               [&](u8v in, wv o) { return qnum::gptq::pack_qzeros(in, bits, fmt, o); });
  if (got == status::ok && z.n) {
    buf<std::int32_t> zb(z.n);
    const status u = qnum::gptq::unpack_qzeros(view(qz.data(), groups, qzc), bits, fmt, view(zb.data(), n, groups));
    bool same = u == status::ok;
    for (std::int64_t i = 0; i < z.n && same; ++i) same = zb[i] == z[i];
    QNUM_FUZZ_PROPERTY("pack/roundtrip", same, "gptq qzeros n=%d g=%d bits %d v%d", n, groups, bits, static_cast<int>(fmt));
    view_props("gptq::unpack_qzeros", src, 441, qz.data(), groups, qzc, zb.data(), n, groups, status::ok,
               [&](u32v in, qnum::matrix_view<std::int32_t> o) { return qnum::gptq::unpack_qzeros(in, bits, fmt, o); }, false);
    // int32 zero points (what quantize writes) store the same words.
    buf<std::uint32_t> qz32(qz.n);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::gptq::pack_qzeros(view(zb.data(), n, groups), bits, fmt, view(qz32.data(), groups, qzc)) == status::ok && qz32.same(qz.copy()),
                       "gptq::pack_qzeros int32 overload n=%d g=%d bits %d", n, groups, bits);
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
    o.fill(0x11);
    status sw = status::ok;
    for (std::int64_t i = 0; i < s.n && sw == status::ok; ++i) {
      if (std::isnan(s[i]) || std::isinf(s[i])) sw = status::non_finite;
      else if ((qnum::to_fp16(s[i]) & 0x7FFFu) == 0x7C00u) sw = status::scale_overflow;
    }
    const status sg = qnum::gptq::scales_to_fp16_transposed(view(s.data(), n, groups), view(o.data(), groups, n));
    QNUM_FUZZ_PROPERTY("pack/status", sg == sw, "gptq::scales_to_fp16_transposed: %s want %s", st(sg), st(sw));
    if (sg == status::ok)
      for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t g = 0; g < groups; ++g)
          QNUM_FUZZ_PROPERTY("pack/reference", o[g * n + c] == qnum::to_fp16(s[c * groups + g]), "gptq::scales_to_fp16_transposed (%lld, %lld)", ll(c), ll(g));
    else
      QNUM_FUZZ_PROPERTY("pack/status", all_bytes(o.data(), o.n, 0x11), "gptq::scales_to_fp16_transposed refused but wrote");
    view_props("scales_to_fp16_transposed", src, 451, s.data(), n, groups, o.data(), groups, n, sg,
               [](qnum::matrix_view<const float> in, qnum::matrix_view<std::uint16_t> out) { return qnum::awq::scales_to_fp16_transposed(in, out); });
  }
  // AWQ: 4-bit, N % 8.
  {
    const bool aok = n % 8 == 0;
    buf<std::uint8_t> a(static_cast<std::int64_t>(n) * k);
    for (std::int64_t i = 0; i < a.n; ++i) a[i] = static_cast<std::uint8_t>(code_of(src, i, 4, false, wild));
    const std::int64_t awc = n / 8;
    buf<std::uint32_t> aw(aok ? static_cast<std::int64_t>(k) * awc : 0);
    const status aw_want = (nulls && a.n) ? status::null_pointer : !aok ? status::bad_shape : a.n == 0 ? status::ok
                           : !fits_all(a, 4, false) ? status::code_out_of_range : status::ok;
    const std::uint8_t* ap = nulls ? nullptr : a.data();
    const status ag = qnum::awq::pack_qweight(view(ap, n, k), view(aw.data(), k, awc));
    QNUM_FUZZ_PROPERTY("pack/status", ag == aw_want, "awq::pack_qweight n=%d k=%d: %s want %s", n, k, st(ag), st(aw_want));
    if (aok && !nulls)
      view_props("awq::pack_qweight", src, 461, a.data(), n, k, aw.data(), k, awc, ag, [](u8v in, wv o) { return qnum::awq::pack_qweight(in, o); });
    if (ag == status::ok && a.n) {
      buf<std::uint8_t> back(a.n);
      QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::awq::unpack_qweight(view(aw.data(), k, awc), view(back.data(), n, k)) == status::ok && back.same(a.copy()), "awq qweight n=%d k=%d", n, k);
      view_props("awq::unpack_qweight", src, 471, aw.data(), k, awc, a.data(), n, k, status::ok,
                 [](u32v in, qnum::matrix_view<std::uint8_t> o) { return qnum::awq::unpack_qweight(in, o); }, false);
    }
    buf<std::uint8_t> az(static_cast<std::int64_t>(n) * groups);
    for (std::int64_t i = 0; i < az.n; ++i) az[i] = static_cast<std::uint8_t>(code_of(src, i + 5, 4, false, wild));
    buf<std::uint32_t> azw(aok ? static_cast<std::int64_t>(groups) * awc : 0);
    const status az_want = (nulls && az.n) ? status::null_pointer : !aok ? status::bad_shape : az.n == 0 ? status::ok
                           : !fits_all(az, 4, false) ? status::code_out_of_range : status::ok;
    const std::uint8_t* azp = nulls ? nullptr : az.data();
    const status zg = qnum::awq::pack_qzeros(view(azp, n, groups), view(azw.data(), groups, awc));
    QNUM_FUZZ_PROPERTY("pack/status", zg == az_want, "awq::pack_qzeros n=%d g=%d: %s want %s", n, groups, st(zg), st(az_want));
    if (aok && !nulls)
      view_props("awq::pack_qzeros", src, 481, az.data(), n, groups, azw.data(), groups, awc, zg, [](u8v in, wv o) { return qnum::awq::pack_qzeros(in, o); });
    if (zg == status::ok && az.n) {
      buf<std::uint8_t> back(az.n);  // qzeros [G, N/8] has qweight's layout with K = G
      QNUM_FUZZ_PROPERTY("pack/roundtrip", qnum::awq::unpack_qweight(view(azw.data(), groups, awc), view(back.data(), n, groups)) == status::ok && back.same(az.copy()), "awq qzeros n=%d g=%d", n, groups);
      buf<std::int32_t> az32(az.n);
      for (std::int64_t i = 0; i < az.n; ++i) az32[i] = az[i];
      buf<std::uint32_t> azw32(azw.n);
      QNUM_FUZZ_PROPERTY("pack/reference", qnum::awq::pack_qzeros(view(az32.data(), n, groups), view(azw32.data(), groups, awc)) == status::ok && azw32.same(azw.copy()),
                         "awq::pack_qzeros int32 overload n=%d g=%d", n, groups);
    }
  }
}

void marlin(const source& src, int n, int k, bool wild, bool nulls, std::uint8_t opt) {
  using wv = qnum::matrix_view<std::uint32_t>;
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
  const std::int64_t orows = k / 16, ocols = 2 * static_cast<std::int64_t>(n);
  buf<std::uint32_t> out(ok_shape ? orows * ocols : 0);
  const status want = (nulls && q.n) ? status::null_pointer : !ok_shape ? status::bad_shape : q.n == 0 ? status::ok
                      : !fits_all(q, 4, false) ? status::code_out_of_range : status::ok;
  const std::uint8_t* qp = nulls ? nullptr : q.data();
  const status got = qnum::marlin::pack_weight(view(qp, n, k), view(out.data(), orows, ocols));
  QNUM_FUZZ_PROPERTY("pack/status", got == want, "marlin::pack_weight n=%d k=%d: %s want %s", n, k, st(got), st(want));
  if (ok_shape && !nulls)
    view_props("marlin::pack_weight", src, 501, q.data(), n, k, out.data(), orows, ocols, got,
               [](qnum::matrix_view<const std::uint8_t> in, wv o) { return qnum::marlin::pack_weight(in, o); });
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
    buf<std::uint32_t> out2(out.n);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::marlin::pack_weight(view(qs.data(), n, k), view(out2.data(), orows, ocols)) == status::ok && out2.same(out.copy()), "marlin signed overload n=%d k=%d", n, k);
    buf<std::uint32_t> gq(static_cast<std::int64_t>(k / 8) * n), out3(out.n);
    QNUM_FUZZ_PROPERTY("pack/reference", qnum::gptq::pack_qweight(view(q.data(), n, k), 4, view(gq.data(), k / 8, n)) == status::ok &&
                       qnum::marlin::repack_gptq(view(gq.data(), k / 8, n), view(out3.data(), orows, ocols)) == status::ok && out3.same(out.copy()), "marlin::repack_gptq n=%d k=%d", n, k);
    view_props("marlin::repack_gptq", src, 511, gq.data(), k / 8, n, out.data(), orows, ocols, status::ok,
               [](qnum::matrix_view<const std::uint32_t> in, wv o) { return qnum::marlin::repack_gptq(in, o); });
  }
  // marlin::permute_scales: s[N, G] -> permutation of its input.
  const std::int64_t group = opt % 4 == 0 ? -1 : (opt % 4 == 1 ? 0 : 16 * (1 + (opt >> 2) % 4));
  const std::int64_t groups = group > 0 && group < k ? (k % group == 0 ? k / group : k / group + 1) : 1 + (opt >> 6) % 2;
  const bool grouped = group != -1 && group < k;
  status pw = status::ok;
  if (nulls && n * groups != 0) pw = status::null_pointer;
  else if (n % 64 != 0) pw = status::bad_shape;
  else if (group == 0 || group < -1) pw = status::bad_group;
  else if (grouped ? groups * group != k : groups != 1) pw = status::bad_group;
  buf<std::int32_t> s(static_cast<std::int64_t>(n) * groups), o(pw == status::ok ? static_cast<std::int64_t>(n) * groups : 0);
  for (std::int64_t i = 0; i < s.n; ++i) s[i] = static_cast<std::int32_t>(i);
  const std::int32_t* sp = nulls ? nullptr : s.data();
  const status pg = qnum::marlin::permute_scales(view(sp, n, groups), k, group, view(o.data(), groups, n));
  QNUM_FUZZ_PROPERTY("pack/status", pg == pw, "marlin::permute_scales n=%d g=%lld k=%d group=%lld: %s want %s", n, ll(groups), k, ll(group), st(pg), st(pw));
  if (pg == status::ok && o.n) {
    std::vector<std::int32_t> v = o.copy();
    std::sort(v.begin(), v.end());
    bool perm = true;
    for (std::size_t i = 0; i < v.size(); ++i) perm = perm && v[i] == static_cast<std::int32_t>(i);
    QNUM_FUZZ_PROPERTY("pack/reference", perm, "marlin::permute_scales is not a permutation (n=%d g=%lld)", n, ll(groups));
    view_props("marlin::permute_scales", src, 521, s.data(), n, groups, o.data(), groups, n, pg,
               [&](qnum::matrix_view<const std::int32_t> in, qnum::matrix_view<std::int32_t> out) { return qnum::marlin::permute_scales(in, k, group, out); });
  }
}

// gguf::quantize of [R, n] rows (R from the input): every row's blocks are quantize_block's, the status is
// non_finite (nothing written) / scale_overflow / ok over all rows; then the view properties.
template <class X>
void gguf_rows(const source& src, qnum::gguf::type t, int n, const X& xval) {
  const std::int64_t rr = 1 + src.at(n + 9) % 4, rb = qnum::gguf::row_bytes(t, n), bb = qnum::gguf::block_bytes(t);
  buf<float> x(rr * n);
  bool finite = true;
  for (std::int64_t i = 0; i < x.n; ++i) {
    x[i] = xval(i);
    finite = finite && std::isfinite(x[i]);
  }
  buf<std::uint8_t> o(rr * rb);
  o.fill(0xCC);
  const status s = qnum::gguf::quantize(t, view(x.data(), rr, n), view(o.data(), rr, rb));
  if (!finite) {
    QNUM_FUZZ_PROPERTY("pack/rows", s == status::non_finite && all_bytes(o.data(), o.n, 0xCC), "gguf::quantize %lldx%d with NaN/Inf: %s", ll(rr), n, st(s));
  } else {
    std::vector<std::uint8_t> want(static_cast<std::size_t>(o.n));
    bool over = false;
    for (std::int64_t b = 0; b < x.n / 32; ++b) over = qnum::gguf::quantize_block(t, x.data() + b * 32, want.data() + b * bb) || over;
    QNUM_FUZZ_PROPERTY("pack/rows", s == (over ? status::scale_overflow : status::ok) && o.same(want),
                       "gguf::quantize type %d %lldx%d: %s, differs from quantize_block per row", static_cast<int>(t), ll(rr), n, st(s));
  }
  view_props("gguf::quantize", src, 601, x.data(), rr, n, o.data(), rr, rb, s,
             [t](qnum::matrix_view<const float> in, qnum::matrix_view<std::uint8_t> out) { return qnum::gguf::quantize(t, in, out); }, true, true);
  if (!writes(s, true)) return;
  buf<float> y(x.n);
  const status d = qnum::gguf::dequantize(t, view(o.data(), rr, rb), view(y.data(), rr, n));
  QNUM_FUZZ_PROPERTY("gguf/status", d == status::ok, "gguf::dequantize %lldx%d: %s", ll(rr), n, st(d));
  view_props("gguf::dequantize", src, 611, o.data(), rr, rb, y.data(), rr, n, d,
             [t](qnum::matrix_view<const std::uint8_t> in, qnum::matrix_view<float> out) { return qnum::gguf::dequantize(t, in, out); }, false);
}

void gguf(const source& src, int t_sel, int n, bool nulls, std::uint8_t opt) {
  const qnum::gguf::type t = t_sel % 3 == 0 ? qnum::gguf::type::q4_0 : t_sel % 3 == 1 ? qnum::gguf::type::q4_1 : qnum::gguf::type::q8_0;
  const bool shape_ok = n % 32 == 0;
  const auto xval = [&](std::int64_t i) {
    std::uint32_t b = static_cast<std::uint32_t>(src.at(4 * i)) | static_cast<std::uint32_t>(src.at(4 * i + 1)) << 8 |
                      static_cast<std::uint32_t>(src.at(4 * i + 2)) << 16 | static_cast<std::uint32_t>(src.at(4 * i + 3)) << 24;
    if (!(opt & 1) && ((b >> 23) & 0xFF) == 0xFF) b &= ~(1u << 30);  // mostly finite
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  };
  buf<float> x(n);
  for (std::int64_t i = 0; i < n; ++i) x[i] = xval(i);
  const std::int64_t bytes = shape_ok ? qnum::gguf::row_bytes(t, n) : 0;
  buf<std::uint8_t> out(bytes);
  out.fill(0xCC);
  const std::vector<std::uint8_t> o0 = out.copy();
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) finite = finite && std::isfinite(x[i]);
  const float* xp = nulls ? nullptr : x.data();
  const status got = qnum::gguf::quantize(t, view(xp, n), view(out.data(), bytes));
  if (shape_ok && n > 0 && !nulls) gguf_rows(src, t, n, xval);
  if (!shape_ok || n == 0 || nulls || !finite) {
    const status want = (nulls && n > 0) ? status::null_pointer : !shape_ok ? status::bad_shape : n == 0 ? status::ok : status::non_finite;
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
  QNUM_FUZZ_PROPERTY("gguf/status", qnum::gguf::dequantize(t, view(out.data(), bytes), view(y.data(), n)) == status::ok, "gguf::dequantize");
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
                         static_cast<int>(t), ll(b), j, xv, [&] { std::uint32_t u; std::memcpy(&u, &xb[j], 4); return u; }(), yv,
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
  const std::int64_t sr = sh.scale_rows, sc = sh.scale_cols;
  buf<std::uint8_t> w(static_cast<std::int64_t>(n) * k);
  for (std::int64_t i = 0; i < w.n; ++i) w[i] = src.at(i);
  buf<float> s(sr * sc);
  bool pow2 = true, valid = true;
  for (std::int64_t i = 0; i < s.n; ++i) {
    const int e = src.at(i + 11) % 40;
    s[i] = std::ldexp(1.0f, e - 20) * (opt & 0x40 ? 1.0f + static_cast<float>(src.at(i + 13) % 4) / 4.0f : 1.0f);
    if (src.at(i + 17) == 0xFE) s[i] = -s[i];
    pow2 = pow2 && qnum::ue8m0_of_pow2(s[i]) >= 0;
    valid = valid && s[i] > 0.0f;
  }
  buf<std::uint8_t> e8(s.n);
  e8.fill(0x5C);
  const status cs = qnum::fp8_block::check_scales(sh, view(s.data(), sr, sc), true, view(e8.data(), sr, sc));
  QNUM_FUZZ_PROPERTY("pack/status", cs == (valid && pow2 ? status::ok : status::code_out_of_range), "fp8_block::check_scales: %s", st(cs));
  if (cs == status::ok)
    for (std::int64_t i = 0; i < s.n; ++i) QNUM_FUZZ_PROPERTY("pack/roundtrip", std::ldexp(1.0, e8[i] - 127) == s[i], "fp8 ue8m0 byte %lld", ll(i));
  else
    QNUM_FUZZ_PROPERTY("pack/status", all_bytes(e8.data(), e8.n, 0x5C), "fp8_block::check_scales refused but wrote e");
  {  // without e, and without require_ue8m0 (e then unused)
    const status c2 = qnum::fp8_block::check_scales(sh, view(s.data(), sr, sc), true);
    buf<std::uint8_t> e9(s.n);
    e9.fill(0x5C);
    const status c3 = qnum::fp8_block::check_scales(sh, view(s.data(), sr, sc), false, view(e9.data(), sr, sc));
    QNUM_FUZZ_PROPERTY("pack/status", c2 == cs && c3 == (valid ? status::ok : status::code_out_of_range) && all_bytes(e9.data(), e9.n, 0x5C),
                       "fp8_block::check_scales without e: %s, without ue8m0: %s", st(c2), st(c3));
  }
  view_props("fp8_block::check_scales", src, 701, s.data(), sr, sc, e8.data(), sr, sc, cs,
             [&sh](qnum::matrix_view<const float> in, qnum::matrix_view<std::uint8_t> o) { return qnum::fp8_block::check_scales(sh, in, true, o); });
  buf<float> y(w.n);
  // A shape whose scale grid does not match n, k and the block (hand-built): must be refused, no access.
  qnum::fp8_block::shape bad = sh;
  if (opt & 0x80) bad.scale_cols = sh.scale_cols + 1 + (opt & 1);
  const bool bad_used = (opt & 0x80) && w.n > 0;
  const std::uint8_t* wp = nulls ? nullptr : w.data();
  const status dg = qnum::fp8_block::dequantize(bad, view(wp, n, k), view(s.data(), bad.scale_rows, bad.scale_cols), view(y.data(), n, k));
  const status dw = w.n == 0 ? status::ok : bad_used ? status::bad_shape : nulls ? status::null_pointer : status::ok;
  QNUM_FUZZ_PROPERTY("pack/status", dg == dw, "fp8_block::dequantize %dx%d block %lldx%lld scale grid %lldx%lld: %s want %s", n, k, ll(bn), ll(bk),
                     ll(bad.scale_rows), ll(bad.scale_cols), st(dg), st(dw));
  if (dg == status::ok && w.n) {
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < k; ++c) {
        const float want = static_cast<float>(static_cast<double>(qnum::decode<qnum::fp8_e4m3>(w[r * k + c])) * static_cast<double>(s[(r / bn) * sc + c / bk]));
        const float got = y[r * k + c];
        QNUM_FUZZ_PROPERTY("pack/reference", std::memcmp(&want, &got, 4) == 0 || (std::isnan(want) && std::isnan(got)), "fp8_block::dequantize (%lld, %lld)", ll(r), ll(c));
      }
    // The weight's and then the scales' view varied, the other contiguous.
    const qnum::matrix_view<const float> sv = view(s.data(), sr, sc);
    const qnum::matrix_view<const std::uint8_t> wv = view(w.data(), n, k);
    view_props("fp8_block::dequantize (weight)", src, 711, w.data(), n, k, y.data(), n, k, dg,
               [&](qnum::matrix_view<const std::uint8_t> in, qnum::matrix_view<float> o) { return qnum::fp8_block::dequantize(sh, in, sv, o); });
    view_props("fp8_block::dequantize (scales)", src, 721, s.data(), sr, sc, y.data(), n, k, dg,
               [&](qnum::matrix_view<const float> in, qnum::matrix_view<float> o) { return qnum::fp8_block::dequantize(sh, wv, in, o); });
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
