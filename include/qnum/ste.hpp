// qnum/ste.hpp: straight-through-estimator gradients for fake quantization (identity, clipped, LSQ / learnable scale).
//
// All take the same scheme and group parameters as the forward pass (quantize.hpp), per element.
//   ste_identity(dy)                      dx = dy (slime _FakeInt4QuantizationSTE: no clip mask)
//   ste_clip_mask(s, p, x)                true where the unclamped integer t lies in [code_min, code_max],
//                                         t = round(x/s + z) (zero_first) or round(x/s) + z, rne, the value
//                                         torch's fake_quantize_*_cachemask computes before clamping.
//                                         NaN x gives false.
//   ste_clipped(s, p, x, dy)              dx = dy * mask (torch fake_quantize backward; sign of 0 kept)
//   learnable_grad(s, p, x, dy, gf)       torch _fake_quantize_learnable_* per-element gradients:
//        in range:  dx = dy, dscale = ((dy * (xfq - x)) * (1/s)) * gf, dzero = 0  (NOT bit-exact with torch CPU:
//        within 8 ulp in the golden test; torch's kernel operation order is not reproduced)
//        below/above: dx = 0, dscale = (dy * (code_min - z | code_max - z)) * gf, dzero = ((dy * -1) * s) * gf
//      with t = round(x/s + z) (zero point first, whatever s.zero_first says: torch's backward kernel),
//      xfq = (clamp(t) - z) * s; each product rounded to fp32 left to right (no FMA). Sum the per-element
//      dscale/dzero over a group to get the group's gradient (LSQ's 1/sqrt(n*qmax) is gf).
// Integer schemes only.
#pragma once

#include <cstdint>

#include "qnum/config.hpp"
#include "qnum/quantize.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE

QNUM_HD float ste_identity(float dy) { return dy; }

namespace detail {
template <class F>
QNUM_HD std::int64_t unclamped_int(const scheme<F>& s, const group_params& p, float x) {
  float v = scaled_value(s, p, x);
  const float big = 1073741824.0f;  // keep round_to_int exact; far outside any code range
  if (s.zero_first) v = to_work(add_rn(v, static_cast<float>(p.zero)), s.work);
  v = v < -big ? -big : (v > big ? big : v);
  std::int64_t t = round_to_int(v, rne);
  if (!s.zero_first) t += p.zero;
  return t;
}
}  // namespace detail

template <class F>
QNUM_HD bool ste_clip_mask(const scheme<F>& s, const group_params& p, float x) {
  static_assert(F::is_integer, "integer formats only");
  if (detail::is_nan(x)) return false;
  const std::int64_t t = detail::unclamped_int(s, p, x);
  return t >= s.code_min() && t <= s.code_max();
}

template <class F>
QNUM_HD float ste_clipped(const scheme<F>& s, const group_params& p, float x, float dy) {
  return ste_clip_mask(s, p, x) ? dy : detail::mul_rn(dy, 0.0f);  // dy * mask, as torch: -0 / NaN kept
}

struct learnable_grads {
  float dx;
  float dscale;
  float dzero;
};

template <class F>
QNUM_HD learnable_grads learnable_grad(const scheme<F>& s, const group_params& p, float x, float dy,
                                       float grad_factor = 1.0f) {
  static_assert(F::is_integer, "integer formats only");
  using namespace detail;
  scheme<F> sz = s;
  sz.zero_first = true;  // torch's learnable backward kernels round x * (1/s) + z (zero point first)
  const std::int64_t t = unclamped_int(sz, p, x);
  const std::int64_t lo = s.code_min(), hi = s.code_max();
  learnable_grads g;
  if (t < lo || t > hi) {
    g.dx = 0.0f;
    g.dzero = mul_rn(mul_rn(mul_rn(dy, -1.0f), p.scale), grad_factor);
    g.dscale = mul_rn(mul_rn(dy, static_cast<float>((t < lo ? lo : hi) - p.zero)), grad_factor);
  } else {
    const float xfq = mul_rn(static_cast<float>(t - p.zero), p.scale);
    g.dx = dy;
    g.dzero = 0.0f;
    g.dscale = mul_rn(mul_rn(mul_rn(dy, sub_rn(xfq, x)), p.inv), grad_factor);
  }
  return g;
}

QNUM_END_NAMESPACE
