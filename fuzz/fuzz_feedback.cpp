// fuzz/fuzz_feedback.cpp: property fuzzing of the INT8 gradient quantizer with EMA/clip dynamic scales
// and residual error feedback (qnum/train/dynamic_scale.hpp) and of INT8 Adam (qnum/train/int8_adam.hpp).
//
// Input bytes: op (0-2: gradient quantizer over several steps, 3: dynamic_scale_update alone, 4: INT8
// Adam), option bytes, then values. Buffers are exactly sized (new T[n]). The n elements are passed as a
// [rows, cols] matrix_view (rows 1 to 4, a divisor of n chosen by spare option bits; cols = n / rows).
//
// Properties (prefix feedback/ and adam/):
//   feedback/status        valid config: ok / ok_zeroed_nonfinite / skipped_nonfinite as documented;
//                          invalid config (alpha outside [0, 1], clip < 1, floor <= 0, non-finite),
//                          group size not dividing cols, null pointers: the error status and nothing written
//   feedback/conserve      per element and step with g' = fl(g + r_old) finite (docs/qgalore.md,
//                          "Conservation"): dequant(q) + r_new == g + r_old up to the two roundings,
//                            |(dequant(q) + r_new) - (g + r_old)| <= 2^-24 |g'| + u_r |r_new|
//                          exactly computed in double; u_r = 2^-24 (fp32 residual) or 2^-8 + 2^-24 (bf16,
//                          the RNE store of r_new, saturating to the largest finite bf16 -- a residual
//                          beyond it is not conserved and is excluded: |r_new| < 2^127);
//                          and over all steps: |sum_t dequant(q_t) + r_T - sum_t g_t| <= sum of those
//                          per-step bounds (+ the saturation excess of bf16, excluded as above)
//   feedback/dequant       dequantize_gradient_int8 (fp32) == fl(q * fl(scale / 127)), the value used above
//   feedback/skip          skip_step with a non-finite element: every code 0, residual and scale/amax/steps
//                          bit-identical, skipped += 1, rng_offset += n
//   feedback/zeroed        zero_elements: a non-finite element gets code 0 and keeps its residual
//   feedback/code_range    codes in [-127, 127] (never -128)
//   feedback/scale         after every call from finite inputs each group's scale is finite and > 0 (and >=
//                          scale_floor after a first step); dynamic_scale_update(prev, amax) is finite and > 0
//                          for any prev and amax bits (valid config), equals max(amax, floor) without a
//                          previous scale, prev for a non-finite amax, and otherwise is >= floor and lies
//                          in [fl(prev / clip), min(fl(prev * clip), FLT_MAX)] or equals floor
//   adam/status            invalid block sizes / betas / non-finite hyper-parameters / t = 0 / nulls: the
//                          error status and nothing written
//   adam/finite            |g| <= 2^62 (so g*g is finite), eps_hat > 0 and step_size * max|g| / eps_hat
//                          <= 1e30 (one update bounded; |p| starts <= 1e30): parameters and the dequantized
//                          m and sqrt(v) stay finite over every step; absmax finite and >= 0 always
//   adam/code_range        m codes in [-127, 127], v codes in [0, 255]
//   adam/block_max         nearest rounding: in every block with absmax > 0 some m code is +-127 and some v
//                          code is 255 (the block maximum maps to the top code)
//   adam/skip              a non-finite g leaves that parameter bit-identical
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_util.hpp"
#include "qnum/train/dynamic_scale.hpp"
#include "qnum/train/int8_adam.hpp"

namespace {

using qnum::status;

using qnum_fuzz::bits_of;
using qnum_fuzz::float_of;

template <class T>
struct buf {
  std::unique_ptr<T[]> p;
  std::size_t n;
  explicit buf(std::size_t k) : p(new T[k]()), n(k) {}
  T* data() { return p.get(); }
  T& operator[](std::size_t i) { return p[i]; }
  std::vector<T> copy() const { return std::vector<T>(p.get(), p.get() + n); }
  bool same(const std::vector<T>& v) const { return n == v.size() && (n == 0 || std::memcmp(p.get(), v.data(), n * sizeof(T)) == 0); }
};

// A float from 3 bytes: mantissa-ish value times 2^(e), e in [-40, 40]; byte 0xFF..: NaN/Inf specials.
float value_of(qnum_fuzz::input& in, float spike) {
  const std::uint8_t e = in.take<std::uint8_t>();
  const std::int16_t m = in.take<std::int16_t>();
  if (e == 0xFF) return (m & 1) ? float_of(0x7FC00000u) : (m & 2 ? -INFINITY : INFINITY);
  if (e == 0xFE) return float_of(static_cast<std::uint32_t>(static_cast<std::uint16_t>(m)) * 0x10001u);  // raw bits
  return std::ldexp(static_cast<float>(m), static_cast<int>(e % 81) - 40 - 15) * spike;
}

bool config_valid(const qnum::dynamic_scale_config& c) {
  return std::isfinite(c.alpha) && std::isfinite(c.scale_clip) && std::isfinite(c.scale_floor) && c.alpha >= 0.0f &&
         c.alpha <= 1.0f && c.scale_clip >= 1.0f && c.scale_floor > 0.0f;
}

qnum::dynamic_scale_config make_config(std::uint8_t a, std::uint8_t b, qnum_fuzz::input& in) {
  qnum::dynamic_scale_config c;
  static const float alphas[] = {0.99f, 0.0f, 1.0f, 0.5f, 0.9f, -0.1f, 1.5f, NAN};
  static const float clips[] = {2.0f, 1.0f, 1.5f, 100.0f, 0.5f, INFINITY, 2.0f, 4.0f};
  static const float floors[] = {1e-6f, 1e-30f, 1.0f, 1e-45f, 0.0f, -1.0f, 1e-6f, 3.0e38f};
  c.alpha = alphas[a % 8];
  c.scale_clip = clips[(a >> 3) % 8];
  c.scale_floor = floors[b % 8];
  c.timing = (b & 8) ? qnum::scale_timing::current : qnum::scale_timing::delayed;
  c.on_nonfinite = (b & 16) ? qnum::nonfinite_policy::zero_elements : qnum::nonfinite_policy::skip_step;
  c.round = ((b & 32) != 0) ? qnum::stochastic_seed(in.take<std::uint64_t>()) : qnum::nearest_even();
  return c;
}

// op 3: dynamic_scale_update alone.
void scale_update(qnum_fuzz::input& in, std::uint8_t a, std::uint8_t b) {
  qnum::dynamic_scale_config c = make_config(a, b, in);
  if (!config_valid(c)) return;
  const float prev = float_of(in.take<std::uint32_t>()), amax0 = float_of(in.take<std::uint32_t>());
  const float amax = std::isnan(amax0) ? amax0 : std::fabs(amax0);  // the contract: amax >= 0 or non-finite
  const float s = qnum::dynamic_scale_update(prev, amax, c);
  QNUM_FUZZ_PROPERTY("feedback/scale", std::isfinite(s) && s > 0.0f, "update(prev 0x%08x, amax 0x%08x) = %.9g (alpha %g clip %g floor %g)", bits_of(prev), bits_of(amax), static_cast<double>(s),
                     static_cast<double>(c.alpha), static_cast<double>(c.scale_clip), static_cast<double>(c.scale_floor));
  const bool have_prev = prev > 0.0f && std::isfinite(prev);
  if (!std::isfinite(amax)) {
    QNUM_FUZZ_PROPERTY("feedback/scale", s == (have_prev ? prev : c.scale_floor), "non-finite amax");
  } else if (!have_prev) {
    QNUM_FUZZ_PROPERTY("feedback/scale", s == (amax > c.scale_floor ? amax : c.scale_floor), "no previous scale");
  } else {
    const float lo = prev / c.scale_clip, hi0 = prev * c.scale_clip;
    const float hi = std::isfinite(hi0) ? hi0 : 3.40282347e38f;
    QNUM_FUZZ_PROPERTY("feedback/scale", s >= c.scale_floor && ((s >= lo && s <= hi) || s == c.scale_floor), "update(%.9g, %.9g) = %.9g outside [%.9g, %.9g]", static_cast<double>(prev), static_cast<double>(amax),
                       static_cast<double>(s), static_cast<double>(lo), static_cast<double>(hi));
  }
}

template <class R>
double rv(R v) {
  if constexpr (sizeof(R) == 4) return v; else return float_of(static_cast<std::uint32_t>(v) << 16);
}

template <class R>
float load_r(const buf<R>& r, std::size_t i) {
  if constexpr (sizeof(R) == 4) return r.p[i]; else return float_of(static_cast<std::uint32_t>(r.p[i]) << 16);
}

// The rows of the [rows, cols] view of n elements: 1 for sel 0, else sel + 1 where that divides n (else 1).
std::size_t rows_for(std::size_t n, unsigned sel) {
  const std::size_t r = sel % 4 + 1;
  return r > 1 && n > 0 && n % r == 0 ? r : 1;
}

// op 0-2: several steps of quantize_gradient_int8 with residual none / fp32 / bf16.
template <class R>
void gradient_steps(qnum_fuzz::input& in, std::uint8_t a, std::uint8_t b, bool with_residual) {
  const qnum::dynamic_scale_config c = make_config(a, b, in);
  const std::uint8_t shape = in.take<std::uint8_t>(), gsel = in.take<std::uint8_t>(), steps_sel = in.take<std::uint8_t>();
  const std::size_t n = shape % 97;
  std::size_t gs = 0;
  switch (gsel % 4) {
    case 1: gs = 1 + gsel / 4 % 16; break;            // often not dividing n
    case 2: gs = n > 0 && n % 8 == 0 ? 8 : (n > 0 && n % 3 == 0 ? 3 : 1); break;
    default: gs = 0; break;
  }
  const bool corrupt = (steps_sel & 0xC0) == 0xC0;
  const int steps = 1 + steps_sel % 6;
  const std::size_t rows = rows_for(n, static_cast<unsigned>(gsel >> 6)), cols = n / rows;  // gsel's bits 6-7 are not used above
  const bool divides = gs == 0 || cols % gs == 0;
  const std::size_t ng = n == 0 ? 1 : (gs == 0 ? 1 : (divides ? n / gs : 1));
  const std::int64_t r64 = static_cast<std::int64_t>(rows), c64 = static_cast<std::int64_t>(cols);
  const qnum::group_shape groups = gs == 0 ? qnum::per_tensor() : qnum::group_size(static_cast<std::int64_t>(gs));
  // the states' shape: scale_shape(rows, cols, groups) where the group size divides cols, else any (bad_group)
  const std::int64_t sr = gs == 0 || !divides ? 1 : r64, sc = gs == 0 || !divides ? 1 : c64 / static_cast<std::int64_t>(gs);
  buf<float> g(n);
  buf<std::int8_t> codes(n);
  buf<R> res(with_residual ? n : 0);
  buf<qnum::dynamic_scale_state> st(ng);
  buf<float> out(n);
  constexpr bool bf16 = sizeof(R) == 2;
  std::vector<double> sum_g(n, 0.0), sum_dq(n, 0.0), bound(n, 0.0);
  std::vector<bool> tracked(n, true);
  const double u = std::ldexp(1.0, -24), ur = bf16 ? std::ldexp(1.0, -8) + std::ldexp(1.0, -24) : std::ldexp(1.0, -24);
  for (int t = 0; t < steps; ++t) {
    const float spike = (in.take<std::uint8_t>() % 7 == 0) ? 300.0f : 1.0f;
    for (std::size_t i = 0; i < n; ++i) g[i] = value_of(in, spike);
    const std::vector<R> r0 = res.copy();
    const std::vector<qnum::dynamic_scale_state> s0 = st.copy();
    const std::vector<std::int8_t> c0 = codes.copy();
    // Expected status.
    bool any_nonfinite = false;
    for (std::size_t i = 0; i < n; ++i) {
      const float x = g[i] + (with_residual ? load_r(res, i) : 0.0f);
      any_nonfinite = any_nonfinite || !std::isfinite(x);
    }
    status want;
    const bool nulls = corrupt && t == 0 && n > 0;
    if (!config_valid(c)) want = status::bad_config;
    else if (n == 0) want = status::ok;
    else if (nulls) want = status::null_pointer;
    else if (!divides) want = status::bad_group;
    else if (any_nonfinite) want = c.on_nonfinite == qnum::nonfinite_policy::skip_step ? status::skipped_nonfinite : status::ok_zeroed_nonfinite;
    else want = status::ok;
    const status got = qnum::quantize_gradient_int8<R>(
        qnum::view(g.data(), r64, c64), groups, qnum::view(nulls ? nullptr : codes.data(), r64, c64),
        with_residual ? qnum::view(res.data(), r64, c64) : qnum::matrix_view<R>{}, qnum::view(st.data(), sr, sc), c);
    QNUM_FUZZ_PROPERTY("feedback/status", got == want, "step %d [%zu, %zu] gs=%zu: %s want %s", t, rows, cols, gs, qnum::to_string(got), qnum::to_string(want));
    if (got != status::ok && got != status::ok_zeroed_nonfinite && got != status::skipped_nonfinite) {
      QNUM_FUZZ_PROPERTY("feedback/status", codes.same(c0) && res.same(r0) && st.same(s0), "refused call wrote");
      if (!nulls) return;
      continue;
    }
    if (n == 0) return;
    for (std::size_t i = 0; i < n; ++i) QNUM_FUZZ_PROPERTY("feedback/code_range", codes[i] >= -127, "code %d", codes[i]);
    if (got == status::skipped_nonfinite) {
      bool same_state = true;
      for (std::size_t k = 0; k < ng; ++k)
        same_state = same_state && bits_of(st[k].scale) == bits_of(s0[k].scale) && bits_of(st[k].amax) == bits_of(s0[k].amax) && st[k].steps == s0[k].steps &&
                     st[k].skipped == s0[k].skipped + 1 && st[k].rng_offset == s0[k].rng_offset + n;
      bool zero = true;
      for (std::size_t i = 0; i < n; ++i) zero = zero && codes[i] == 0;
      QNUM_FUZZ_PROPERTY("feedback/skip", zero && res.same(r0) && same_state, "skip_step changed state (n=%zu)", n);
      continue;
    }
    // Scales.
    for (std::size_t k = 0; k < ng; ++k)
      QNUM_FUZZ_PROPERTY("feedback/scale", std::isfinite(st[k].scale) && st[k].scale >= c.scale_floor && std::isfinite(st[k].amax), "group %zu scale %.9g amax %.9g", k,
                         static_cast<double>(st[k].scale), static_cast<double>(st[k].amax));
    // Dequantize through the API (fp32) and check conservation.
    QNUM_FUZZ_PROPERTY("feedback/status", qnum::dequantize_gradient_int8(qnum::view(codes.data(), r64, c64), groups, qnum::view(st.data(), sr, sc), qnum::view(out.data(), r64, c64)) == status::ok, "dequantize");
    const std::size_t gsz = gs == 0 ? n : gs;
    for (std::size_t i = 0; i < n; ++i) {
      const float s = st[i / gsz].scale;
      const float want_dq = static_cast<float>(codes[i]) * (s / 127.0f);
      QNUM_FUZZ_PROPERTY("feedback/dequant", bits_of(out[i]) == bits_of(want_dq), "element %zu: 0x%08x want 0x%08x", i, bits_of(out[i]), bits_of(want_dq));
      const double r_old = with_residual ? rv(r0[i]) : 0.0;
      const float gp = g[i] + static_cast<float>(r_old);
      if (!std::isfinite(gp)) {
        QNUM_FUZZ_PROPERTY("feedback/zeroed", codes[i] == 0 && (!with_residual || std::memcmp(&res.p[i], &r0[i], sizeof(R)) == 0), "non-finite element %zu", i);
        tracked[i] = false;
        continue;
      }
      if (!with_residual) continue;
      const double r_new = load_r(res, i);
      if (bf16 && std::fabs(r_new) >= std::ldexp(1.0, 127)) tracked[i] = false;  // bf16 saturation: not conserved
      if (!tracked[i]) continue;
      const double lhs = static_cast<double>(out[i]) + r_new, rhs = static_cast<double>(g[i]) + r_old;
      const double e = (u * std::fabs(static_cast<double>(gp)) + ur * std::fabs(r_new)) * (1.0 + std::ldexp(1.0, -6)) +
                       (bf16 ? std::ldexp(1.0, -133) : std::ldexp(1.0, -149));
      QNUM_FUZZ_PROPERTY("feedback/conserve", std::fabs(lhs - rhs) <= e, "step %d element %zu: g=%.9g r_old=%.9g dq=%.9g r_new=%.9g |diff|=%.9g > %.9g", t, i,
                         static_cast<double>(g[i]), r_old, static_cast<double>(out[i]), r_new, std::fabs(lhs - rhs), e);
      sum_g[i] += g[i];
      sum_dq[i] += out[i];
      bound[i] += e;
      const double total = std::fabs(sum_dq[i] + r_new - sum_g[i]);
      QNUM_FUZZ_PROPERTY("feedback/conserve", total <= bound[i] * (1.0 + 1e-9) + 1e-300, "after %d steps element %zu: |sum dq + r - sum g| = %.9g > %.9g", t + 1, i, total, bound[i]);
    }
  }
}

void adam(qnum_fuzz::input& in, std::uint8_t a, std::uint8_t b) {
  qnum::int8_adam_config c;
  static const float lrs[] = {1e-3f, 1e-1f, 1.0f, 1e-6f, 0.0f, 10.0f, NAN, -1e-3f};
  static const float b1s[] = {0.9f, 0.0f, 0.5f, 0.99f, 0.999f, 1.0f, -0.1f, 0.9f};
  static const float b2s[] = {0.999f, 0.0f, 0.9f, 0.99f, 0.9999f, 1.0f, INFINITY, 0.95f};
  static const float epss[] = {1e-8f, 1e-6f, 1e-30f, 0.0f, 1.0f, -1.0f, 1e-8f, 1e-45f};
  c.lr = lrs[a % 8];
  c.beta1 = b1s[(a >> 3) % 8];
  c.beta2 = b2s[b % 8];
  c.eps = epss[(b >> 3) % 8];
  c.weight_decay = (a & 0x40) ? 0.01f : 0.0f;
  c.round = ((b & 0x40) != 0) ? qnum::stochastic_seed(in.take<std::uint64_t>()) : qnum::nearest_even();
  const std::uint8_t nsel = in.take<std::uint8_t>(), bsel = in.take<std::uint8_t>(), ssel = in.take<std::uint8_t>();
  const std::size_t n = nsel % 200 + (nsel & 0x80 ? 57 : 0);
  c.block_size = bsel % 8 == 7 ? (bsel & 8 ? 0 : 5000) : 1 + bsel % 70 * 4;
  const int steps = 1 + ssel % 4;
  const std::size_t rows = rows_for(n, static_cast<unsigned>(ssel >> 2) & 3u), cols = n / rows;  // ssel's bits 2-3 are not used otherwise
  const auto r64 = static_cast<std::int64_t>(rows), c64 = static_cast<std::int64_t>(cols);
  const bool tzero = (ssel & 0x30) == 0x30;
  const bool nulls = (ssel & 0xC0) == 0xC0 && n > 0;
  const std::size_t blocks = c.block_size == 0 ? 1 : qnum::int8_adam_blocks(n, c.block_size);
  buf<float> p(n), g(n), mab(blocks), vab(blocks);
  buf<std::int8_t> mc(n);
  buf<std::uint8_t> vc(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = value_of(in, 1.0f);
  for (std::size_t i = 0; i < n; ++i) if (!std::isfinite(p[i]) || std::fabs(p[i]) > 1e30f) p[i] = 1.0f;
  const bool cfg_ok = c.block_size != 0 && c.block_size <= 4096 && std::isfinite(c.lr) && std::isfinite(c.eps) && c.beta1 >= 0.0f && c.beta1 < 1.0f &&
                      c.beta2 >= 0.0f && c.beta2 < 1.0f && c.eps >= 0.0f;
  double gmax = 0.0;
  bool bounded = true;
  for (int t = 1; t <= steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      const float v = value_of(in, 1.0f);
      g[i] = std::isfinite(v) && std::fabs(v) > std::ldexp(1.0f, 62) ? std::ldexp(1.0f, 62) : v;
    }
    const std::vector<float> p0 = p.copy(), ma0 = mab.copy(), va0 = vab.copy();
    const std::vector<std::int8_t> mc0 = mc.copy();
    const std::vector<std::uint8_t> vc0 = vc.copy();
    const std::uint64_t tt = tzero ? 0 : static_cast<std::uint64_t>(t);
    status want = status::ok;
    if (c.block_size == 0 || c.block_size > 4096) want = status::bad_group;
    else if (!cfg_ok) want = status::bad_config;
    else if (tt == 0) want = status::bad_config;  // steps count from 1
    else if (n == 0) want = status::ok;
    else if (nulls) want = status::null_pointer;
    qnum::int8_adam_state s{nulls ? nullptr : mc.data(), vc.data(), mab.data(), vab.data()};
    const status got = qnum::int8_adam_step(qnum::view(p.data(), r64, c64), qnum::view(g.data(), r64, c64), s, c, tt);
    QNUM_FUZZ_PROPERTY("adam/status", got == want, "int8_adam_step [%zu, %zu] block %zu t=%llu: %s want %s", rows, cols, c.block_size, static_cast<unsigned long long>(tt), qnum::to_string(got), qnum::to_string(want));
    if (got != status::ok || n == 0) {
      QNUM_FUZZ_PROPERTY("adam/status", p.same(p0) && mab.same(ma0) && vab.same(va0) && mc.same(mc0) && vc.same(vc0), "refused call wrote");
      return;
    }
    const qnum::int8_adam_scalars sc = qnum::int8_adam_scalars_for(c, tt);
    // |m| <= max |g| seen so far (an EMA of the g's, re-quantized within its block's absmax) and
    // w + eps_hat >= eps_hat, so one update is at most step_size * gmax / eps_hat: finite while that stays
    // below 1e30 (|p| starts <= 1e30, at most 4 steps). Beyond it (tiny eps with an m whose v code rounded
    // to 0) the update may overflow, as m / eps would in fp32 Adam.
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(g[i])) gmax = std::max(gmax, static_cast<double>(std::fabs(g[i])));
    bounded = bounded && sc.eps_hat > 0.0f && std::isfinite(sc.step_size) &&
              std::fabs(static_cast<double>(sc.step_size)) * gmax / static_cast<double>(sc.eps_hat) <= 1e30;
    const bool finite_expected = bounded;  // every step so far had a bounded update
    for (std::size_t i = 0; i < n; ++i) {
      QNUM_FUZZ_PROPERTY("adam/code_range", mc[i] >= -127, "m code %d", mc[i]);
      if (!std::isfinite(g[i])) QNUM_FUZZ_PROPERTY("adam/skip", bits_of(p[i]) == bits_of(p0[i]), "element %zu with non-finite g changed p", i);
      const std::size_t bk = i / c.block_size;
      const float m = qnum::int8_adam_m(mc[i], mab[bk]), w = qnum::int8_adam_w(vc[i], vab[bk]);
      if (finite_expected)
        QNUM_FUZZ_PROPERTY("adam/finite", std::isfinite(p[i]) && std::isfinite(m) && std::isfinite(w) && w >= 0.0f, "step %d element %zu: p=%.9g m=%.9g w=%.9g (g=%.9g lr %g b1 %g b2 %g eps %g)", t, i,
                           static_cast<double>(p[i]), static_cast<double>(m), static_cast<double>(w), static_cast<double>(g[i]), static_cast<double>(c.lr),
                           static_cast<double>(c.beta1), static_cast<double>(c.beta2), static_cast<double>(c.eps));
    }
    for (std::size_t bk = 0; bk < blocks; ++bk) {
      QNUM_FUZZ_PROPERTY("adam/finite", std::isfinite(mab[bk]) && mab[bk] >= 0.0f && std::isfinite(vab[bk]) && vab[bk] >= 0.0f, "block %zu absmax m %.9g w %.9g", bk,
                         static_cast<double>(mab[bk]), static_cast<double>(vab[bk]));
      if (c.round.mode == qnum::rounding_mode::stochastic) continue;
      const std::size_t lo = bk * c.block_size, hi = lo + c.block_size < n ? lo + c.block_size : n;
      bool m_top = !(mab[bk] > 0.0f), v_top = !(vab[bk] > 0.0f);
      for (std::size_t i = lo; i < hi; ++i) {
        m_top = m_top || mc[i] == 127 || mc[i] == -127;
        v_top = v_top || vc[i] == 255;
      }
      QNUM_FUZZ_PROPERTY("adam/block_max", m_top && v_top, "block %zu (absmax m %.9g w %.9g): no top code", bk, static_cast<double>(mab[bk]), static_cast<double>(vab[bk]));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qnum_fuzz::input in(data, size);
  const std::uint8_t op = in.take<std::uint8_t>(), a = in.take<std::uint8_t>(), b = in.take<std::uint8_t>();
  switch (op % 5) {
    case 0: gradient_steps<float>(in, a, b, false); break;
    case 1: gradient_steps<float>(in, a, b, true); break;
    case 2: gradient_steps<std::uint16_t>(in, a, b, true); break;
    case 3: scale_update(in, a, b); break;
    default: adam(in, a, b); break;
  }
  return 0;
}
