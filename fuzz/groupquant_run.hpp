// fuzz/groupquant_run.hpp: the property checks of fuzz_groupquant (see fuzz_groupquant.cpp for the
// properties and the input format), included by the two translation units that instantiate them:
// groupquant_4bit.cpp (int4, uint4, e2m1) and groupquant_8bit.cpp (int8, uint8, e4m3, e5m2), which compile in
// parallel.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_groupquant.hpp"
#include "fuzz_util.hpp"
#include "qnum/quantize_tensor.hpp"

namespace {

using qnum_fuzz::groupquant::header;

using qnum::status;

using qnum_fuzz::bits_of;
using qnum_fuzz::float_of;

// Exactly-sized heap buffer (no slack: ASan sees the first byte past it).
template <class T>
struct buf {
  std::unique_ptr<T[]> p;
  std::int64_t n = 0;
  explicit buf(std::int64_t k) : p(new T[static_cast<std::size_t>(k)]), n(k) {}
  T* data() { return p.get(); }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> v(static_cast<std::size_t>(n) * sizeof(T));
    if (n) std::memcpy(v.data(), p.get(), v.size());
    return v;
  }
};

std::int64_t view_elems(std::int64_t rows, std::int64_t cols, std::int64_t stride) {
  return rows <= 0 || cols <= 0 ? 0 : (rows - 1) * stride + cols;
}

float pick_eps(const header& h) {
  switch (h.eps_sel % 8) {
    case 0: return 0.0f;
    case 1: return 1e-5f;              // slime
    case 2: return float_of(1u);          // 2^-149
    case 3: return 1e-12f;
    case 4: return 1.0f;
    case 5: return 65504.0f;
    case 6: return std::ldexp(1.0f, -126);
    default: {
      const float e = std::fabs(h.eps_raw);
      return std::isfinite(e) ? e : 1e-5f;
    }
  }
}

// Builds the scheme the fuzzer asked for through the public factories and modifiers only (so the
// static_asserts of scale.hpp define what "allowed" means). Order of with_pow2 and stored_as is fuzzed
// (with_pow2(mx_*) forces e8m0 storage; a later stored_as overrides it).
template <class F>
qnum::scheme<F> make_scheme(const header& h) {
  qnum::scheme<F> s;
  if constexpr (F::is_integer) {
    const int k = h.kind % (F::is_signed ? 3 : 2);
    if constexpr (F::is_signed) {
      s = k == 0 ? qnum::symmetric_restricted<F>() : k == 1 ? qnum::symmetric_full<F>() : qnum::asymmetric<F>();
    } else {
      s = k == 0 ? qnum::symmetric_full<F>() : qnum::asymmetric<F>();
    }
  } else {
    s = h.kind % 2 == 0 ? qnum::float_amax<F>() : qnum::te_current<F>();
  }
  const float eps = pick_eps(h);
  switch ((h.eps_sel >> 3) % 3) {
    case 1: s = s.eps_floor(eps); break;
    case 2: s = s.eps_zero_to(eps); break;
    default: break;
  }
  if (h.eps_sel & 0x80) s = s.eps_after_storage();
  if (h.flags & 1) s = s.scale_multiply();
  if (h.flags & 2) s = (h.flags & 4) ? s.x_multiply() : s.x_divide();
  if (h.flags & 8) s = s.codes_from_fp32_scale();
  if (h.flags & 16) s = s.zero_before_round();
  if (h.flags & 32) s = s.zero_round_after_subtract();
  const qnum::pow2_rule p = static_cast<qnum::pow2_rule>(h.pow2 % 4);
  const bool set_store = (h.store % 6) != 5;
  const qnum::dtype st = static_cast<qnum::dtype>(h.store % 6 % 5);
  if (h.flags & 64) {
    if (set_store) s = s.stored_as(st);
    s = s.with_pow2(p);
  } else {
    s = s.with_pow2(p);
    if (set_store) s = s.stored_as(st);
  }
  s = s.in_work(static_cast<qnum::dtype>(h.work % 3));
  return s;
}


float load(const float* p) { return *p; }
float load16(std::uint16_t v, qnum::dtype t) {
  return t == qnum::dtype::fp16 ? qnum::from_fp16(v) : float_of(std::uint32_t{v} << 16);
}

// Decoded value of a stored scale code.
double stored_value(qnum::dtype st, std::uint32_t code) {
  switch (st) {
    case qnum::dtype::bf16: return float_of(code << 16);
    case qnum::dtype::fp16: return qnum::from_fp16(static_cast<std::uint16_t>(code));
    case qnum::dtype::ue4m3: return qnum::decode<qnum::ue4m3>(code);
    case qnum::dtype::e8m0: return std::ldexp(1.0, static_cast<int>(code) - 127);
    default: return float_of(code);
  }
}

std::uint32_t read_code(const void* p, int bytes, std::int64_t k) {
  if (bytes == 4) return static_cast<const std::uint32_t*>(p)[k];
  if (bytes == 2) return static_cast<const std::uint16_t*>(p)[k];
  return static_cast<const std::uint8_t*>(p)[k];
}

// Non-negative finite values of float format F in code order.
template <class F>
const std::vector<double>& grid() {
  static const std::vector<double> t = [] {
    std::vector<double> v;
    for (std::uint32_t c = 0; c <= F::max_code; ++c) v.push_back(qnum::decode<F>(c));
    return v;
  }();
  return t;
}
// Gap of F's grid around a >= 0 (integers: 1); a above max gives the top gap.
template <class F>
double grid_gap(double a) {
  if constexpr (F::is_integer) {
    return 1.0;
  } else {
    const std::vector<double>& t = grid<F>();
    std::size_t i = 1;
    while (i + 1 < t.size() && t[i] <= a) ++i;
    return t[i] - t[i - 1];
  }
}

double unit_roundoff(qnum::dtype w) {
  return w == qnum::dtype::bf16 ? std::ldexp(1.0, -8) : w == qnum::dtype::fp16 ? std::ldexp(1.0, -11)
                                                                                          : std::ldexp(1.0, -24);
}
double abs_err(qnum::dtype w) {
  return w == qnum::dtype::bf16 ? std::ldexp(1.0, -133) : w == qnum::dtype::fp16 ? std::ldexp(1.0, -24)
                                                                                            : std::ldexp(1.0, -149);
}
// Smallest magnitude that rounds to Inf in the dtype (fp32: 2^128 - 2^103; bf16: 2^128 - 2^119; fp16: 65520).
double overflow_threshold(qnum::dtype w) {
  return w == qnum::dtype::bf16 ? std::ldexp(1.0, 128) - std::ldexp(1.0, 119)
         : w == qnum::dtype::fp16 ? 65520.0
                                       : std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
}

std::uint32_t obits(float v) { return bits_of(v); }
std::uint32_t obits(std::uint16_t v) { return v; }

// Outputs are fp32 (float) or 16-bit (bf16/fp16 bits); U is the output element type.
template <class U>
double out_value(U v, qnum::dtype t) {
  if constexpr (sizeof(U) == 4) {
    return v;
  } else {
    return load16(v, t);
  }
}

template <class F, class T, class U>
void run(const header& h, qnum_fuzz::input& in) {
  const qnum::scheme<F> s = make_scheme<F>(h);
  const bool asym = s.kind == qnum::scheme_kind::asymmetric;
  const qnum::dtype itype = sizeof(T) == 4 ? qnum::dtype::fp32 : (h.in_type % 2 ? qnum::dtype::fp16 : qnum::dtype::bf16);
  const qnum::dtype otype = sizeof(U) == 4 ? qnum::dtype::fp32 : (h.out_type % 2 ? qnum::dtype::fp16 : qnum::dtype::bf16);
  const std::int64_t rows = h.rows % 25, cols = h.cols % 81;
  const std::int64_t stride = cols + h.pad % 4;  // pad 0..3
  const std::int64_t ostride = cols + (h.pad >> 2) % 3;
  // Group shape.
  qnum::group_shape gs;
  switch (h.group_sel % 6) {
    case 0: gs = qnum::per_tensor(); break;
    case 1: gs = qnum::per_row(); break;
    case 2: gs = qnum::group_size(1 + h.g1 % 40); break;  // often not dividing cols
    case 3: gs = qnum::block(1 + h.g1 % 9, 1 + h.g2 % 40); break;
    case 4: gs = qnum::block(h.g1 % 6, 0); break;          // R x whole row (0 = whole extent)
    default: gs = qnum::block(0, 1 + h.g2 % 40); break;    // whole column x C
  }
  const std::int64_t gr = gs.rows == 0 ? (rows > 0 ? rows : 1) : gs.rows;
  const std::int64_t gc = gs.cols == 0 ? (cols > 0 ? cols : 1) : gs.cols;
  const std::int64_t nr = (rows + gr - 1) / gr, nc = (cols + gc - 1) / gc;
  const int sbytes = qnum::dtype_bytes(s.store);
  const std::int64_t sstride = nc + h.scale_pad % 3;

  // Input, with sentinels (huge values) in the row padding: they must not reach any statistic.
  const std::int64_t n_in = view_elems(rows, cols, stride);
  buf<T> x(n_in);
  {
    std::vector<T> vals;
    while (in.remaining() >= sizeof(T) && vals.size() < 4096) vals.push_back(in.take<T>());
    std::int64_t k = 0;
    for (std::int64_t i = 0; i < n_in; ++i) {
      const bool padding = (i % stride) >= cols;
      T v;
      if constexpr (sizeof(T) == 4) {
        v = padding ? float_of(0x7F7FFFFFu) : (vals.empty() ? 0.0f : vals[static_cast<std::size_t>(k++) % vals.size()]);
      } else {
        v = padding ? T{0x7BFF} : (vals.empty() ? T{0} : vals[static_cast<std::size_t>(k++) % vals.size()]);
      }
      x.data()[i] = v;
    }
  }
  auto xval = [&](std::int64_t r, std::int64_t c) -> float {
    const T v = x.data()[r * stride + c];
    if constexpr (sizeof(T) == 4) return load(&v); else return load16(v, itype);
  };
  const std::vector<unsigned char> x_before = x.bytes();

  // Outer scale (two-level schemes): none, NVFP4's amax/(448*6), 1, fuzzed, negative (= none).
  float outer = 0.0f;
  {
    float amax = -1.0f;
    const status st = qnum::tensor_amax(qnum::view<const T>(x.data(), rows, cols, stride, itype), amax);
    QNUM_FUZZ_PROPERTY("groupquant/status", st == status::ok, "tensor_amax: %s", qnum::to_string(st));
    double want = 0.0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const double a = std::fabs(static_cast<double>(xval(r, c)));
        if (std::isfinite(a) && a > want) want = a;
      }
    QNUM_FUZZ_PROPERTY("groupquant/amax", static_cast<double>(amax) == want, "amax %.9g want %.9g", static_cast<double>(amax), want);
    switch (h.outer_sel % 6) {
      case 1: outer = amax / (448.0f * 6.0f); break;
      case 2: outer = 1.0f; break;
      case 3: outer = std::isfinite(h.outer_raw) ? std::fabs(h.outer_raw) : 0.0f; break;
      case 4: outer = -1.0f; break;
      default: outer = 0.0f; break;
    }
  }
  const qnum::rounding rd = h.rnd % 2 ? qnum::stochastic_seed(h.seed) : qnum::nearest_even();

  // Corruption: one invalid argument (checked: the documented status and no output byte changed).
  const int corrupt = h.corrupt % 16 < 12 ? 0 : 1 + (h.corrupt >> 4) % 12;

  const std::int64_t n_codes = view_elems(rows, cols, ostride);
  const std::int64_t n_out = n_codes;
  const std::int64_t n_scales = view_elems(nr, nc, sstride);
  buf<std::uint8_t> codes(n_codes);
  buf<unsigned char> scales(n_scales * sbytes), scales2(n_scales * sbytes);
  buf<std::int32_t> zeros(asym ? view_elems(nr, nc, sstride) : 0), zeros2(asym ? view_elems(nr, nc, sstride) : 0);
  buf<U> fq(n_out), dq(n_out);
  buf<float> dq32(n_out);
  std::memset(codes.data(), 0xA5, static_cast<std::size_t>(n_codes));
  std::memset(scales.data(), 0xA5, static_cast<std::size_t>(n_scales * sbytes));
  std::memset(scales2.data(), 0x5A, static_cast<std::size_t>(n_scales * sbytes));
  if (asym) {
    for (std::int64_t i = 0; i < zeros.n; ++i) zeros.data()[i] = zeros2.data()[i] = 0x5A5A5A5A;
  }
  for (std::int64_t i = 0; i < n_out; ++i) {
    fq.data()[i] = dq.data()[i] = static_cast<U>(0x7F7F);
    dq32.data()[i] = float_of(0x7FBADBADu);
  }

  qnum::matrix_view<const T> vin = qnum::view<const T>(x.data(), rows, cols, stride, itype);
  qnum::matrix_view<std::uint8_t> vcodes = qnum::view<std::uint8_t>(codes.data(), rows, cols, ostride);
  qnum::scale_view vsc{scales.data(), nr, nc, sstride, sbytes};
  qnum::scale_view vsc2{scales2.data(), nr, nc, sstride, sbytes};
  qnum::matrix_view<std::int32_t> vz = asym ? qnum::view<std::int32_t>(zeros.data(), nr, nc, sstride) : qnum::matrix_view<std::int32_t>{};
  qnum::matrix_view<std::int32_t> vz2 = asym ? qnum::view<std::int32_t>(zeros2.data(), nr, nc, sstride) : qnum::matrix_view<std::int32_t>{};
  qnum::matrix_view<U> vfq = qnum::view<U>(fq.data(), rows, cols, ostride, otype);
  qnum::matrix_view<U> vdq = qnum::view<U>(dq.data(), rows, cols, ostride, otype);
  qnum::matrix_view<float> vdq32 = qnum::view<float>(dq32.data(), rows, cols, ostride);
  qnum::group_shape g = gs;

  const bool nonempty = rows > 0 && cols > 0;
  // Expected status of fake_quantize, quantize, compute_scales, dequantize: a call that does not take
  // the corrupted argument runs normally. A corruption only counts when it is one for this shape.
  const status B = status::ok;
  status want[4] = {B, B, B, B};
  auto expect = [&](status fq_, status q_, status cs_, status dq_) { want[0] = fq_; want[1] = q_; want[2] = cs_; want[3] = dq_; };
  const status NP = status::null_pointer, BS = status::bad_shape, ST = status::bad_stride, BG = status::bad_group,
               SB = status::bad_scale_buffer;
  switch (corrupt) {
    case 1: if (nonempty) { vin.data = nullptr; expect(NP, NP, NP, B); } break;
    case 2: if (nonempty) { vcodes.data = nullptr; vfq.data = nullptr; vdq.data = nullptr; expect(NP, NP, B, NP); } break;
    case 3: if (nonempty) { vsc.data = nullptr; vsc2.data = nullptr; expect(B, NP, NP, NP); } break;
    case 4: if (nonempty && asym) { vz.data = nullptr; vz2.data = nullptr; expect(B, NP, NP, NP); } break;
    case 5: vin.rows = -1 - h.g1 % 3; vcodes.rows = vfq.rows = vdq.rows = vin.rows; expect(BS, BS, BS, BS); break;
    case 6:  // codes claim one more column than the input (and than dequantize's output): refused before any access
      if (nonempty) { vcodes.cols = cols + 1; vcodes.row_stride = ostride > cols ? ostride : cols + 1; expect(B, BS, B, BS); } break;
    case 7: if (rows > 1 && cols > 1) { vin.row_stride = cols - 1; expect(ST, ST, ST, B); } break;
    case 8: if (rows > 1 && cols > 1) { vcodes.row_stride = vfq.row_stride = vdq.row_stride = cols - 1; expect(ST, ST, B, ST); } break;
    case 9: g = qnum::group_shape{h.g1 % 2 ? -1 - h.g2 % 5 : gs.rows, h.g1 % 2 ? gs.cols : -1 - h.g2 % 5}; expect(BG, BG, BG, BG); break;
    case 10: if (nonempty) { vsc.rows = vsc2.rows = nr + 1; expect(B, SB, SB, SB); } break;
    case 11: if (nonempty) { vsc.elem_bytes = vsc2.elem_bytes = sbytes == 4 ? 2 : 4; expect(B, SB, SB, SB); } break;
    case 12: if (nonempty && asym) { vz.cols = vz2.cols = nc + 1; expect(B, SB, SB, SB); } break;
    default: break;
  }
  const bool corrupted = want[0] != B || want[1] != B || want[2] != B || want[3] != B;

  const std::vector<unsigned char> codes0 = codes.bytes(), scales0 = scales.bytes(), scales20 = scales2.bytes(),
                                   zeros0 = zeros.bytes(), zeros20 = zeros2.bytes(), fq0 = fq.bytes(), dq0 = dq.bytes(),
                                   dq320 = dq32.bytes();

  const status s_fq = qnum::fake_quantize(s, vin, g, vfq, rd, outer);
  const status s_q = qnum::quantize(s, vin, g, vcodes, vsc, vz, rd, outer);
  const status s_cs = qnum::compute_scales(s, vin, g, vsc2, vz2, outer);
  const qnum::matrix_view<const std::int32_t> vzc{vz.data, vz.rows, vz.cols, vz.row_stride, vz.type};
  const qnum::matrix_view<const std::uint8_t> vcc{vcodes.data, vcodes.rows, vcodes.cols, vcodes.row_stride, vcodes.type};
  const status s_dq = qnum::dequantize(s, vcc, g, vsc, vzc, vdq, outer);
  status s_dq32 = status::ok;
  if (!corrupted) s_dq32 = qnum::dequantize(s, vcc, g, vsc, vzc, vdq32, outer);

  QNUM_FUZZ_PROPERTY("groupquant/untouched", x.bytes() == x_before, "input modified (corrupt %d)", corrupt);
  if (corrupted) {
    const status got[4] = {s_fq, s_q, s_cs, s_dq};
    const char* names[4] = {"fake_quantize", "quantize", "compute_scales", "dequantize"};
    for (int i = 0; i < 4; ++i)
      QNUM_FUZZ_PROPERTY("groupquant/status", got[i] == want[i], "%s: %s, want %s (corrupt %d, %lldx%lld)", names[i],
                         qnum::to_string(got[i]), qnum::to_string(want[i]), corrupt, static_cast<long long>(rows), static_cast<long long>(cols));
    // A refused call wrote nothing.
    if (s_q != B) QNUM_FUZZ_PROPERTY("groupquant/untouched", codes.bytes() == codes0 && scales.bytes() == scales0 && zeros.bytes() == zeros0, "quantize wrote (corrupt %d)", corrupt);
    if (s_cs != B) QNUM_FUZZ_PROPERTY("groupquant/untouched", scales2.bytes() == scales20 && zeros2.bytes() == zeros20, "compute_scales wrote (corrupt %d)", corrupt);
    if (s_fq != B) QNUM_FUZZ_PROPERTY("groupquant/untouched", fq.bytes() == fq0, "fake_quantize wrote (corrupt %d)", corrupt);
    if (s_dq != B) QNUM_FUZZ_PROPERTY("groupquant/untouched", dq.bytes() == dq0 && dq32.bytes() == dq320, "dequantize wrote (corrupt %d)", corrupt);
    return;
  }
  QNUM_FUZZ_PROPERTY("groupquant/status", s_fq == status::ok && s_q == status::ok && s_cs == status::ok && s_dq == status::ok && s_dq32 == status::ok,
                     "fq %s q %s cs %s dq %s dq32 %s", qnum::to_string(s_fq), qnum::to_string(s_q), qnum::to_string(s_cs),
                     qnum::to_string(s_dq), qnum::to_string(s_dq32));
  if (!nonempty) {
    QNUM_FUZZ_PROPERTY("groupquant/untouched", codes.bytes() == codes0 && scales.bytes() == scales0 && fq.bytes() == fq0 && dq.bytes() == dq0,
                       "empty tensor %lldx%lld: something written", static_cast<long long>(rows), static_cast<long long>(cols));
    return;
  }
  // Padding of outputs and scale buffers untouched.
  for (std::int64_t i = 0; i < n_out; ++i) {
    if (i % ostride < cols) continue;
    QNUM_FUZZ_PROPERTY("groupquant/untouched", codes.data()[i] == 0xA5 && fq.data()[i] == static_cast<U>(0x7F7F) &&
                       dq.data()[i] == static_cast<U>(0x7F7F) && bits_of(dq32.data()[i]) == 0x7FBADBADu, "output padding %lld written", static_cast<long long>(i));
  }
  for (std::int64_t i = 0; i < n_scales; ++i) {
    if (i % sstride < nc) continue;
    for (int b = 0; b < sbytes; ++b)
      QNUM_FUZZ_PROPERTY("groupquant/untouched", scales.data()[i * sbytes + b] == 0xA5 && scales2.data()[i * sbytes + b] == 0x5A, "scale padding %lld written", static_cast<long long>(i));
    if (asym) QNUM_FUZZ_PROPERTY("groupquant/untouched", zeros.data()[i] == 0x5A5A5A5A && zeros2.data()[i] == 0x5A5A5A5A, "zero padding %lld written", static_cast<long long>(i));
  }
  // compute_scales == quantize's scales.
  for (std::int64_t i = 0; i < nr; ++i)
    for (std::int64_t j = 0; j < nc; ++j) {
      const std::int64_t k = i * sstride + j;
      QNUM_FUZZ_PROPERTY("groupquant/scales_agree", std::memcmp(scales.data() + k * sbytes, scales2.data() + k * sbytes, static_cast<std::size_t>(sbytes)) == 0 &&
                         (!asym || zeros.data()[k] == zeros2.data()[k]), "group (%lld, %lld)", static_cast<long long>(i), static_cast<long long>(j));
      const double sv = stored_value(s.store, read_code(scales.data(), sbytes, k));
      QNUM_FUZZ_PROPERTY("groupquant/scale_valid", std::isfinite(sv) && sv > 0.0, "group (%lld, %lld): stored scale code 0x%x = %.9g (store %d, kind %d, pow2 %d)",
                         static_cast<long long>(i), static_cast<long long>(j), read_code(scales.data(), sbytes, k), sv,
                         static_cast<int>(s.store), static_cast<int>(s.kind), static_cast<int>(s.pow2));
    }

  const double w = unit_roundoff(s.work);
  const double aw = abs_err(s.work);
  const qnum::dtype dq_dtype = F::is_integer ? s.work : qnum::dtype::fp32;
  const double thr = overflow_threshold(dq_dtype);
  const bool stoch = rd.mode == qnum::rounding_mode::stochastic;
  const bool work_ok = s.work == qnum::dtype::fp32 ||
                       (s.work == qnum::dtype::bf16 && itype == qnum::dtype::bf16) ||
                       (s.work == qnum::dtype::fp16 && itype == qnum::dtype::fp16);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t o = r * ostride + c;
      // fake_quantize == dequantize(quantize), bit for bit.
      QNUM_FUZZ_PROPERTY("groupquant/fq_eq_dq", obits(fq.data()[o]) == obits(dq.data()[o]),
                         "(%lld, %lld) x=%.9g: fake 0x%x dequant(quant) 0x%x, code 0x%x (fmt %s kind %d store %d pow2 %d work %d outer %.9g)",
                         static_cast<long long>(r), static_cast<long long>(c), static_cast<double>(xval(r, c)),
                         obits(fq.data()[o]), obits(dq.data()[o]), codes.data()[o], F::name, static_cast<int>(s.kind),
                         static_cast<int>(s.store), static_cast<int>(s.pow2), static_cast<int>(s.work), static_cast<double>(outer));
      const std::uint32_t code = codes.data()[o];
      QNUM_FUZZ_PROPERTY("groupquant/code_range", (code >> F::bits) == 0, "code 0x%x wider than %d bits", code, F::bits);
      const std::int64_t k = (r / gr) * sstride + c / gc;
      const std::int32_t z = asym ? zeros.data()[k] : 0;
      const float xv = xval(r, c);
      const double y = dq32.data()[o];
      int q = 0;
      if constexpr (F::is_integer) {
        q = qnum::code_to_int<F>(code);
        QNUM_FUZZ_PROPERTY("groupquant/code_range", q >= s.code_min() && q <= s.code_max(), "%s q=%d outside [%d, %d]", F::name, q, s.code_min(), s.code_max());
      }
      if (std::isnan(xv)) {
        if constexpr (F::is_integer) {
          QNUM_FUZZ_PROPERTY("groupquant/nan_input", q == z && y == 0.0, "%s NaN x: q=%d z=%d dq=%.9g", F::name, q, z, y);
        } else {
          const std::uint32_t want_code = F::has_nan ? F::nan_code : F::max_code;
          QNUM_FUZZ_PROPERTY("groupquant/nan_input", code == want_code, "%s NaN x: code 0x%x", F::name, code);
        }
        continue;
      }
      if (std::isinf(xv)) continue;
      // Scale of this group.
      const double stored = stored_value(s.store, read_code(scales.data(), sbytes, k));
      // The outer scale as qnum uses it (<= 0/NaN none, subnormal -> FLT_MIN, +Inf -> FLT_MAX: policies.md).
      const float outer_eff = qnum::detail::sanitize_outer(outer);
      const double cs = outer_eff > 0.0f ? stored * static_cast<double>(outer_eff) : stored;  // exact in double
      float sfl = static_cast<float>(cs);
      if (!std::isfinite(sfl)) sfl = float_of(0x7F7FFFFFu);
      const double s_used = sfl;
      // Largest |q - z| (integer formats) or |decode(code)| (float formats) the group can produce.
      const double span = !F::is_integer ? static_cast<double>(F::max_value)
                          : asym         ? static_cast<double>(F::qmax - F::qmin)
                                         : static_cast<double>(-s.code_min() > s.code_max() ? -s.code_min() : s.code_max());
      const bool huge = span * s_used >= thr;
      QNUM_FUZZ_PROPERTY("groupquant/no_nan", !std::isnan(y) && (huge || !std::isinf(y)),
                         "%s x=%.9g (0x%08x) -> code 0x%x dq=%.9g scale %.9g (huge %d)", F::name, static_cast<double>(xv), bits_of(xv), code, y, s_used, huge ? 1 : 0);
      if (huge || !s.codes_from_stored || !work_ok || !(cs > 0.0) || !std::isfinite(cs)) continue;
      // scale.hpp's documented clamp: a reciprocal that overflows (fp32, or the work dtype: torch's
      // bf16/fp16 reciprocal) is clamped to FLT_MAX; codes decided through it (x_by multiply, or any
      // two-level scheme, whose code scale is 1/inv) are then not within the bound.
      {
        const double rec_thr = outer_eff > 0.0f ? overflow_threshold(qnum::dtype::fp32) : overflow_threshold(s.work);
        if ((s.x_by == qnum::scale_op::multiply || outer_eff > 0.0f) && 1.0 / cs >= rec_thr * (1.0 - std::ldexp(1.0, -8))) continue;
      }
      const double t = static_cast<double>(xv) / cs;
      bool in_range;
      if constexpr (F::is_integer) {
        in_range = t + z >= s.code_min() - 0.5 && t + z <= s.code_max() + 0.5;
      } else {
        in_range = std::fabs(t) <= static_cast<double>(F::max_value);
      }
      if (!in_range) continue;
      const double rel = w + std::ldexp(1.0, -21);
      const double at = std::fabs(t);
      const double hgap = stoch ? grid_gap<F>(at * (1.0 + 4.0 * rel) + std::ldexp(1.0, -20)) : 0.5 * grid_gap<F>(at);
      const double qz = F::is_integer ? std::fabs(static_cast<double>(q - z)) : std::fabs(static_cast<double>(qnum::decode<F>(code)));
      const double bound = cs * (hgap + 2.0 * rel * (at + std::fabs(t + z)) + std::ldexp(1.0, -20)) + qz * std::fabs(s_used - cs) +
                           std::fabs(y) * (w + std::ldexp(1.0, -23)) + aw;
      const double err = std::fabs(static_cast<double>(xv) - y);
      QNUM_FUZZ_PROPERTY("groupquant/error_bound", err <= bound,
                         "%s kind %d (%lld, %lld) x=%.9g (0x%08x) dq=%.9g |err|=%.9g > bound %.9g; scale %.9g cs %.9g t=%.9g z=%d q=%d code 0x%x work %d store %d pow2 %d stoch %d",
                         F::name, static_cast<int>(s.kind), static_cast<long long>(r), static_cast<long long>(c), static_cast<double>(xv), bits_of(xv), y, err, bound,
                         s_used, cs, t, z, q, code, static_cast<int>(s.work), static_cast<int>(s.store), static_cast<int>(s.pow2), stoch ? 1 : 0);
    }
}

template <class F>
void run_format(const header& h, qnum_fuzz::input& in) {
  const int it = h.in_type % 3, ot = h.out_type % 3;
  if (it == 0) {
    if (ot == 0) run<F, float, float>(h, in); else run<F, float, std::uint16_t>(h, in);
  } else {
    if (ot == 0) run<F, std::uint16_t, float>(h, in); else run<F, std::uint16_t, std::uint16_t>(h, in);
  }
}

}  // namespace
