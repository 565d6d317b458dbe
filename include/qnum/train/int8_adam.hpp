// qnum/train/int8_adam.hpp: Adam/AdamW with INT8 optimizer states (block-scaled m, square-root-domain v).
//
//   status int8_adam_step(p, g, state, config, t)   one step with INT8 states (host reference of the device kernel)
//   status fp32_adam_step(p, g, m, v, config, t)    the same formulas with fp32 states
//   status int8_adam_check(p, g, state, config, t)  the argument checks both int8 entry points share
//
// p and g (and fp32 m, v) are matrix_view<float> tensors of one shape [rows, cols], contiguous
// (row_stride == cols, or one row), taken as n = rows * cols elements flat in row-major order:
// qnum::view(p, n) is a 1 x n tensor. Element i below is that flat index.
//
// State of n parameters, in blocks of block_size (default 256) contiguous elements (the last block
// may be shorter), all caller-owned and zero-initialised (zero codes and zero absmax mean m = v = 0):
//   m_codes [n] int8 in [-127, 127]  m ~ q_m * fl(m_absmax[b] / 127)       (symmetric, linear)
//   v_codes [n] uint8 in [0, 255]    sqrt(v) ~ q_v * fl(v_absmax[b] / 255)  (square-root domain)
//   m_absmax[b] = max |m|, v_absmax[b] = max sqrt(v) over the block after the update (fp32)
//
// Why v in the square-root domain: v = E[g^2] spans twice the dynamic range (in log) of the
// gradient; 255 linear levels over sqrt(v) reach v down to 1/65025 of the block maximum (linear
// codes over v itself would reach only 1/255 and flush most small second moments to zero, turning
// m / (sqrt(v) + eps) into m / eps). The update needs sqrt(v), so the square root is where the
// precision matters; unsigned codes give v (which is >= 0) the sign bit as an extra bit.
//
// One step t (1-based), per element, with scalars from int8_adam_scalars_for() (computed once on the
// host in double and rounded to float, so host and device use identical values):
//   m0 = fl(q_m * dq_m)             w0 = fl(q_v * dq_v)               v0 = fl(w0 * w0)
//   m  = fl(fl(b1 * m0) + fl(omb1 * g))
//   v  = fl(fl(b2 * v0) + fl(omb2 * fl(g * g)))          w = sqrt_rn(v)
//   p  = fl(p * decay)                                   decay = fl(1 - lr * weight_decay) (AdamW)
//   p  = fl(p - fl(step_size * fl(m / fl(w + eps_hat)))) step_size = lr * sqrt(1-b2^t) / (1-b1^t),
//                                                         eps_hat = eps * sqrt(1-b2^t)
// (algebraically torch's Adam: lr * m_hat / (sqrt(v_hat) + eps); step_size 0 leaves p as decayed, even
// where m / eps_hat overflows). A non-finite g leaves p unchanged
// and keeps m = m0, w = w0 (the element still gets re-quantized with its block's new absmax).
// Then per block: absmax of the updated m and w, codes q_m = round(clamp(fl(m * fl(127 / m_absmax)),
// -127, 127)), q_v = round(clamp(fl(w * fl(255 / v_absmax)), 0, 255)); an absmax of 0 gives code 0.
// Rounding: nearest even, or stochastic with random_bits(seed, 2 * ((t - 1) * n + i) + k), k = 0
// for m and 1 for v. Stochastic rounding keeps slow EMAs moving: with b2 = 0.999 a nearest-rounded
// state changes by less than half a quantum per step and can stall.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "qnum/config.hpp"
#include "qnum/train/dynamic_scale.hpp"
#include "qnum/random.hpp"
#include "qnum/round.hpp"
#include "qnum/view.hpp"

QNUM_BEGIN_NAMESPACE

struct int8_adam_config {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // decoupled (AdamW); 0 = Adam
  std::size_t block_size = 256;
  rounding round = nearest_even();  // of the m and v codes (stochastic_seed(s): see the random bits above)
};

// The per-step scalars (host-computed once, identical on host and device).
struct int8_adam_scalars {
  float beta1, omb1, beta2, omb2, step_size, eps_hat, decay;
};
inline int8_adam_scalars int8_adam_scalars_for(const int8_adam_config& c, std::uint64_t t) {
  const double td = static_cast<double>(t);
  const double c1 = 1.0 - std::pow(static_cast<double>(c.beta1), td);
  const double c2 = std::sqrt(1.0 - std::pow(static_cast<double>(c.beta2), td));
  int8_adam_scalars s;
  s.beta1 = c.beta1;
  s.omb1 = static_cast<float>(1.0 - static_cast<double>(c.beta1));
  s.beta2 = c.beta2;
  s.omb2 = static_cast<float>(1.0 - static_cast<double>(c.beta2));
  s.step_size = static_cast<float>(static_cast<double>(c.lr) * c2 / c1);
  s.eps_hat = static_cast<float>(static_cast<double>(c.eps) * c2);
  s.decay = static_cast<float>(1.0 - static_cast<double>(c.lr) * static_cast<double>(c.weight_decay));
  return s;
}

// Caller-owned INT8 state (see the file comment for the layout).
struct int8_adam_state {
  std::int8_t* m_codes;
  std::uint8_t* v_codes;
  float* m_absmax;
  float* v_absmax;
};

// Number of blocks for n elements.
QNUM_HD std::size_t int8_adam_blocks(std::size_t n, std::size_t block) { return (n + block - 1) / block; }

// The fp32 update of one element: p, m in/out; v0 = the old second moment; on return v is the new
// second moment and w = sqrt_rn(v). A non-finite g leaves p and m unchanged and returns v = v0,
// w = sqrt_rn(v0) (callers holding w0 keep w0 instead). Returns false for a non-finite g.
QNUM_HD bool adam_element(float& p, float& m, float v0, float g, const int8_adam_scalars& s, float& v, float& w) {
  using namespace detail;
  if (is_nonfinite(g)) {
    v = v0;
    w = sqrt_rn(v0);
    return false;
  }
  m = add_rn(mul_rn(s.beta1, m), mul_rn(s.omb1, g));
  v = add_rn(mul_rn(s.beta2, v0), mul_rn(s.omb2, mul_rn(g, g)));
  w = sqrt_rn(v);
  p = mul_rn(p, s.decay);
  // lr = 0 (step_size 0): no update, even where m / (w + eps_hat) overflows (0 * Inf would make p NaN).
  if (s.step_size != 0.0f) p = sub_rn(p, mul_rn(s.step_size, div_rn(m, add_rn(w, s.eps_hat))));
  return true;
}

// The INT8-state element: m and w enter as the dequantized old state (v0 = fl(w * w)) and leave as
// the updated m and sqrt(v); a non-finite g leaves all three unchanged.
QNUM_HD void int8_adam_element(float& p, float& m, float& w, float g, const int8_adam_scalars& s) {
  float v, w_new;
  if (adam_element(p, m, detail::mul_rn(w, w), g, s, v, w_new)) w = w_new;
}

// Dequantize one state element: m = fl(q * fl(absmax / 127)), w = fl(q * fl(absmax / 255)).
QNUM_HD float int8_adam_m(std::int8_t q, float absmax) {
  return detail::mul_rn(static_cast<float>(q), detail::div_rn(absmax, 127.0f));
}
QNUM_HD float int8_adam_w(std::uint8_t q, float absmax) {
  return detail::mul_rn(static_cast<float>(q), detail::div_rn(absmax, 255.0f));
}

// Re-quantize: q = round(clamp(fl(x * fl(qmax / absmax)), lo, qmax)); absmax 0 gives 0.
template <class Round>
QNUM_HD int int8_adam_code(float x, float absmax, float qmax, float lo, Round mode) {
  if (!(absmax > 0.0f)) return 0;
  float y = detail::mul_rn(x, detail::div_rn(qmax, absmax));
  y = y < lo ? lo : y;
  y = y > qmax ? qmax : y;
  return round_to_int(y, mode);
}
template <class Round>
QNUM_HD std::int8_t int8_adam_m_code(float m, float absmax, Round mode) {
  return static_cast<std::int8_t>(int8_adam_code(m, absmax, 127.0f, -127.0f, mode));
}
template <class Round>
QNUM_HD std::uint8_t int8_adam_v_code(float w, float absmax, Round mode) {
  return static_cast<std::uint8_t>(int8_adam_code(w, absmax, 255.0f, 0.0f, mode));
}

// The random bits of element i at step t for state k (0 = m, 1 = v).
QNUM_HD std::uint32_t int8_adam_random(std::uint64_t seed, std::uint64_t t, std::size_t n, std::size_t i, int k) {
  return random_bits(seed, 2 * ((t - 1) * n + i) + static_cast<std::uint64_t>(k));
}

namespace detail {

// Views that must have g's shape (rows, cols) and be contiguous, after g's own extents: bad_shape (a negative
// extent of g), ok for an empty g (nothing else read), null_pointer (g or one of v), bad_shape (one of v not
// of g's shape), bad_stride (a view not contiguous).
template <class... V>
status check_adam_views(const matrix_view<const float>& g, const V&... v) {
  if (g.rows < 0 || g.cols < 0) return status::bad_shape;
  if (g.rows == 0 || g.cols == 0) return status::ok;
  if (g.data == nullptr || ((v.data == nullptr) || ...)) return status::null_pointer;
  if (((v.rows != g.rows || v.cols != g.cols) || ...)) return status::bad_shape;
  if (!g.contiguous() || ((!v.contiguous()) || ...)) return status::bad_stride;
  return status::ok;
}

}  // namespace detail

// The arguments of one step, checked in the order both entry points (int8_adam_step and
// gpu::launch_int8_adam_step) report them: bad_group (block_size 0 or above 4096), bad_config (non-finite
// hyper-parameters, betas outside [0, 1), eps < 0, step t == 0), bad_shape (negative extent of g), ok for
// n == 0, null_pointer (p, g or a state pointer), bad_shape (p not of g's shape), bad_stride (p or g not
// contiguous).
inline status int8_adam_check(matrix_view<const float> p, matrix_view<const float> g, const int8_adam_state& st,
                              const int8_adam_config& c, std::uint64_t t) {
  if (c.block_size == 0 || c.block_size > 4096) return status::bad_group;
  if (detail::is_nonfinite(c.lr) || detail::is_nonfinite(c.eps) || detail::is_nonfinite(c.weight_decay) ||
      !(c.beta1 >= 0.0f && c.beta1 < 1.0f) || !(c.beta2 >= 0.0f && c.beta2 < 1.0f) || !(c.eps >= 0.0f))
    return status::bad_config;
  if (t == 0) return status::bad_config;
  if (g.rows < 0 || g.cols < 0) return status::bad_shape;
  if (g.size() == 0) return status::ok;
  if (st.m_codes == nullptr || st.v_codes == nullptr || st.m_absmax == nullptr || st.v_absmax == nullptr)
    return status::null_pointer;
  return detail::check_adam_views(g, p);
}

// One Adam/AdamW step t (1-based) on the parameters p with gradients g (fp32 [rows, cols], contiguous; n =
// rows * cols) and INT8 states (host reference of the fused device kernel). Returns int8_adam_check's
// status, else ok.
inline status int8_adam_step(matrix_view<float> p, matrix_view<const float> g, int8_adam_state st,
                             const int8_adam_config& c, std::uint64_t t) {
  if (status e = int8_adam_check(p, g, st, c, t); e != status::ok || g.size() == 0) return e;
  const std::size_t n = static_cast<std::size_t>(g.size());
  const int8_adam_scalars s = int8_adam_scalars_for(c, t);
  float mb[4096], wb[4096];
  for (std::size_t b = 0; b < int8_adam_blocks(n, c.block_size); ++b) {
    const std::size_t lo = b * c.block_size;
    const std::size_t hi = lo + c.block_size < n ? lo + c.block_size : n;
    float am = 0.0f, aw = 0.0f;
    for (std::size_t i = lo; i < hi; ++i) {
      float m = int8_adam_m(st.m_codes[i], st.m_absmax[b]);
      float w = int8_adam_w(st.v_codes[i], st.v_absmax[b]);
      int8_adam_element(p.data[i], m, w, g.data[i], s);
      mb[i - lo] = m;
      wb[i - lo] = w;
      const float a = detail::abs_bits(m);
      am = a > am ? a : am;
      aw = w > aw ? w : aw;
    }
    st.m_absmax[b] = am;
    st.v_absmax[b] = aw;
    for (std::size_t i = lo; i < hi; ++i) {
      if (c.round.mode == rounding_mode::stochastic) {
        st.m_codes[i] = int8_adam_m_code(mb[i - lo], am, stochastic(int8_adam_random(c.round.seed, t, n, i, 0)));
        st.v_codes[i] = int8_adam_v_code(wb[i - lo], aw, stochastic(int8_adam_random(c.round.seed, t, n, i, 1)));
      } else {
        st.m_codes[i] = int8_adam_m_code(mb[i - lo], am, rne);
        st.v_codes[i] = int8_adam_v_code(wb[i - lo], aw, rne);
      }
    }
  }
  return status::ok;
}

// Plain fp32 Adam/AdamW with the same formulas (the reference the INT8 states approximate): p, m, v updated
// in place, all of g's shape [rows, cols], contiguous. Returns bad_config (t == 0), then
// detail::check_adam_views' status (bad_shape, ok for n == 0, null_pointer, bad_shape, bad_stride), else ok.
inline status fp32_adam_step(matrix_view<float> p, matrix_view<const float> g, matrix_view<float> m,
                             matrix_view<float> v, const int8_adam_config& c, std::uint64_t t) {
  if (t == 0) return status::bad_config;
  if (status e = detail::check_adam_views(g, p, m, v); e != status::ok || g.size() == 0) return e;
  const std::size_t n = static_cast<std::size_t>(g.size());
  const int8_adam_scalars s = int8_adam_scalars_for(c, t);
  for (std::size_t i = 0; i < n; ++i) {
    float vn, w;
    adam_element(p.data[i], m.data[i], v.data[i], g.data[i], s, vn, w);
    v.data[i] = vn;
  }
  return status::ok;
}

QNUM_END_NAMESPACE
