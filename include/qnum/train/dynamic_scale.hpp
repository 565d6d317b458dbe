// qnum/train/dynamic_scale.hpp: INT8 gradients with EMA-clipped dynamic scales and residual error feedback.
//
//   status quantize_gradient_int8(g, groups, codes, residual, states, cfg)   codes, residual and states of one step
//   status dequantize_gradient_int8(codes, groups, states, out)             out = fl(q * fl(s / 127)), then RNE
//
// qnum's definition of the "Q-GaLore-style" INT8 gradient mechanism (no public code implements it;
// see docs/qgalore.md). One definition, host and device, bit for bit.
//
// Tensors are matrix_view (view.hpp): a [rows, cols] gradient is n = rows * cols elements taken flat in
// row-major order (element (r, c) is element i = r * cols + c below: groups, random bits and rng_offset
// count that way), so every view must be contiguous (row_stride == cols, or one row): qnum::view(p, n)
// is a 1 x n tensor. Groups (view.hpp's group_shape): per_tensor() = one group of all n
// elements; group_size(G) (G dividing cols) = contiguous groups of G elements along the rows; per_row()
// = group_size(cols). The states view holds one state per group, shape scale_shape(rows, cols, groups).
//
// Per group of the tensor, at step t:
//
//   g'_i    = fl(g_i + r_i)                        r = residual buffer (0 without error feedback)
//   amax_t  = max |g'_i| over the finite g'_i of the group
//   new     = max(amax, scale_floor)               scale_floor = 1e-6
//   s_t     = update(s_{t-1}, new)                 see dynamic_scale_update()
//   inv     = fl(127 / s_t)          dq = fl(s_t / 127)      (computed once per group)
//   q_i     = round(clamp(fl(g'_i * inv), -127, 127))       (rne, or stochastic with
//                                                            random_bits(seed, rng_offset + i))
//   r_i    <- fl(g'_i - fl(q_i * dq))               the error, including what saturation cut off
//   dequant(q_i) = fl(q_i * dq)
//
// Scale timing (which amax feeds step t's scale):
//   scale_timing::delayed (default, what makes one fused pass possible): s_t = update(s_{t-1}, new
//     from amax_{t-1}), the amax observed during step t-1's own pass. Step t's pass then computes
//     codes, the new residual and amax_t (for step t+1) at once. Step 0 has no previous scale: it
//     runs an amax pre-pass and uses s_0 = max(amax_0, scale_floor) (the only two-pass step).
//   scale_timing::current: s_t = update(s_{t-1}, new from amax_t) (the seed's literal rule; an amax
//     pre-pass every step, so two passes over memory).
//
// Non-finite gradients (an element with g'_i NaN or +-Inf; g finite but g + r overflowing counts too):
//   nonfinite_policy::skip_step (default): if any element of the tensor is non-finite the whole step
//     is skipped: every code is written 0, residual and states are left exactly as they were except
//     state.skipped += 1; the call returns status::skipped_nonfinite. A NaN never reaches a scale.
//   nonfinite_policy::zero_elements: the step proceeds; a non-finite element gets code 0, its
//     residual is left unchanged and it is excluded from amax; the call returns
//     status::ok_zeroed_nonfinite (one pass on the device, no pre-scan needed).
//
// Arithmetic is done with explicitly rounded single operations (detail::mul_rn etc.): on the device
// __fmul_rn/__fadd_rn/__fdiv_rn/__fsqrt_rn (never contracted into FMA, immune to -use_fast_math), on
// the host IEEE float operations behind a register barrier that stops FMA contraction.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/detail/fp_rn.hpp"
#include "qnum/detail/bits.hpp"
#include "qnum/host/simd.hpp"
#include "qnum/random.hpp"
#include "qnum/round.hpp"
#include "qnum/status.hpp"
#include "qnum/view.hpp"

QNUM_BEGIN_NAMESPACE

enum class scale_timing : int { delayed = 0, current = 1 };
enum class nonfinite_policy : int { skip_step = 0, zero_elements = 1 };

// Parameters of the mechanism (defaults: the seed's). alpha weighs the previous scale.
struct dynamic_scale_config {
  float alpha = 0.99f;
  float scale_clip = 2.0f;
  float scale_floor = 1e-6f;
  scale_timing timing = scale_timing::delayed;
  nonfinite_policy on_nonfinite = nonfinite_policy::skip_step;
  rounding round = nearest_even();  // of the codes; stochastic_seed(s): element i of a call uses random_bits(s, offset + i)
};

// Per-group state (one per tensor under per_tensor()). Plain data: copy it to the device as is.
//   scale   scale of the last successful step (what that step's codes dequantize with); 0 = none yet
//   amax    max |g'| over the finite elements seen during that step's pass (feeds the next scale
//           under scale_timing::delayed)
//   steps   successful steps; skipped: steps skipped by the non-finite policy
//   rng_offset  first random_bits offset of the next call (advances by n on every call)
struct dynamic_scale_state {
  float scale = 0.0f;
  float amax = 0.0f;
  std::uint64_t steps = 0;
  std::uint64_t skipped = 0;
  std::uint64_t rng_offset = 0;
};

// True if the configuration is usable (finite, alpha in [0, 1], scale_clip >= 1, scale_floor > 0).
QNUM_HD bool dynamic_scale_config_valid(const dynamic_scale_config& c) {
  return !detail::is_nonfinite(c.alpha) && !detail::is_nonfinite(c.scale_clip) &&
         !detail::is_nonfinite(c.scale_floor) && c.alpha >= 0.0f && c.alpha <= 1.0f &&
         c.scale_clip >= 1.0f && c.scale_floor > 0.0f;
}

// The scale of a step from the previous scale and an observed amax (finite, >= 0):
//   new = max(amax, floor); if prev is not > 0 (no previous step) the result is new; otherwise
//   smoothed = fl(fl(alpha * prev) + fl(fl(1 - alpha) * new))
//   result   = min(max(smoothed, fl(prev / clip)), fl(prev * clip)), then at most FLT_MAX and at least
//              floor (the products of the EMA and prev / clip can round below floor, and underflow to 0
//              when floor or prev is subnormal; a zero scale would make inv = 127 / 0 infinite).
// A non-finite amax is treated as "no observation": the result is prev (or floor when prev is
// not > 0), so a NaN can never enter a scale.
QNUM_HD float dynamic_scale_update(float prev, float amax, const dynamic_scale_config& c) {
  using namespace detail;
  const bool have_prev = prev > 0.0f && !is_nonfinite(prev);
  if (is_nonfinite(amax)) return have_prev ? prev : c.scale_floor;
  const float nw = amax > c.scale_floor ? amax : c.scale_floor;
  if (!have_prev) return nw;
  const float beta = sub_rn(1.0f, c.alpha);
  float s = add_rn(mul_rn(c.alpha, prev), mul_rn(beta, nw));
  const float lo = div_rn(prev, c.scale_clip);
  const float hi = mul_rn(prev, c.scale_clip);
  s = s < lo ? lo : s;
  s = s > hi ? hi : s;
  s = s > flt_max ? flt_max : s;  // also catches an Inf from the sum
  return s < c.scale_floor ? c.scale_floor : s;
}

// The per-group multipliers of scale s (> 0, finite): inv = fl(127 / s) and dq = fl(s / 127). For
// s < 127 / FLT_MAX (only with a scale_floor that small) 127 / s overflows; inv is then FLT_MAX, so
// fl(x * inv) is never 0 * Inf = NaN (codes saturate and the residual carries the rest).
struct int8_multipliers {
  float inv;
  float dq;
};
QNUM_HD int8_multipliers int8_multipliers_for(float s) {
  const float inv = detail::div_rn(127.0f, s);
  return {inv > detail::flt_max ? detail::flt_max : inv, detail::div_rn(s, 127.0f)};
}
// The dequantization multiplier of a state (dequantize_gradient_int8, host and device): dq = fl(s / 127) for its
// scale s > 0, else 0 (a zero, negative or NaN scale); a scale of +Inf gives dq = +Inf.
QNUM_HD float int8_state_dq(const dynamic_scale_state& st) {
  return st.scale > 0.0f ? int8_multipliers_for(st.scale).dq : 0.0f;
}
// The input a gradient element is quantized from, g' = fl(g + r_old) (r_old: its residual, 0 without one): what the
// scale's statistics, the code and the new residual all see.
QNUM_HD float grad_input(float g, float r_old) { return detail::add_rn(g, r_old); }

// The code of x under multiplier inv: round(clamp(fl(x * inv), -127, 127)). An overflowing product or +-Inf
// saturates to +-127 (-128 is never produced: the code is symmetric); a NaN product (x NaN, or a NaN
// multiplier) gives 0. Nearest even rounds first (detail::f2i8_rn_sat, host and device alike: saturated to
// [-128, 127], NaN -> 0) and then raises -128 to -127: the same code (the bounds are integers), one
// conversion and one integer max on the device.
template <class Round = round_nearest_even>
QNUM_HD int int8_code(float x, float inv, Round mode = {}) {
  float y = detail::mul_rn(x, inv);
  if constexpr (std::is_same_v<Round, round_nearest_even>) {
    static_cast<void>(mode);
    const int q = detail::f2i8_rn_sat(y);
    return q < -127 ? -127 : q;
  } else {
    y = y < -127.0f ? -127.0f : y;
    y = y > 127.0f ? 127.0f : y;
    return detail::is_nan(y) ? 0 : round_to_int(y, mode);
  }
}

// The dequantized value of code q: fl(q * dq) (exact int -> float, one rounded product).
QNUM_HD float int8_dequant(int q, float dq) { return detail::mul_rn(static_cast<float>(q), dq); }

// Residual buffer element types: float (fp32) or bf16 bits (std::uint16_t, stored with RNE and
// saturation to the largest finite bf16, so a finite residual stays finite).
QNUM_HD float load_residual(const float* r, std::size_t i) { return r[i]; }
QNUM_HD float load_residual(const std::uint16_t* r, std::size_t i) { return from_bf16(r[i]); }
QNUM_HD void store_residual(float* r, std::size_t i, float v) { r[i] = v; }
QNUM_HD void store_residual(std::uint16_t* r, std::size_t i, float v) { r[i] = encode<bf16>(v, rne, satfinite); }

// One element of the fused pass. g_in = g'_i = fl(g + r_old); finite = !nonfinite(g_in).
// For a finite element: code = int8_code(g_in, inv, mode), residual = fl(g_in - fl(code * dq)).
// For a non-finite one: code 0, residual = r_old.
struct int8_element {
  int code;
  float residual;
  float abs_in;  // |g'|, 0 when non-finite
  bool finite;
};
// The element of a finite g_in = x: code int8_code(x, inv, mode), residual fl(x - fl(code * dq)), |x|. The device
// kernel takes a chunk whose every g_in is finite (one test a chunk) through it.
template <class Round>
QNUM_HD int8_element quantize_grad_finite(float x, int8_multipliers m, Round mode) {
  const int q = int8_code(x, m.inv, mode);
  return {q, detail::sub_rn(x, int8_dequant(q, m.dq)), detail::abs_bits(x), true};
}
// Any g_in, written with selects, no early return (the device predicates it): a non-finite g_in is replaced by +0,
// whose code is 0 under every multiplier and rounding (0 * inv is 0, or NaN for a NaN inv: code 0 too), so the
// code, and |g'| = 0, come out of the same arithmetic; the residual is then r_old.
template <class Round>
QNUM_HD int8_element quantize_grad_element(float g, float r_old, int8_multipliers m, Round mode) {
  const float x = grad_input(g, r_old);
  const bool finite = !detail::is_nonfinite(x);
  const int8_element e = quantize_grad_finite(finite ? x : 0.0f, m, mode);
  return {e.code, finite ? e.residual : r_old, e.abs_in, finite};
}

// The random bits for element i of a call whose state has rng_offset `offset`.
QNUM_HD std::uint32_t dynamic_scale_random(const dynamic_scale_config& c, std::uint64_t offset, std::size_t i) {
  return random_bits(c.round.seed, offset + i);
}
// The same for elements i .. i + 3 (one Philox block where offset + i is a multiple of 4).
QNUM_HD void dynamic_scale_random4(const dynamic_scale_config& c, std::uint64_t offset, std::size_t i, std::uint32_t (&out)[4]) {
  random_bits4(c.round.seed, offset + i, out);
}
// Element i of a call under cfg's rounding: nearest-even, or stochastic with element i's random bits.
QNUM_HD int8_element quantize_grad_element_at(float g, float r_old, int8_multipliers m, const dynamic_scale_config& cfg,
                                              std::uint64_t offset, std::size_t i) {
  return cfg.round.mode == rounding_mode::stochastic ? quantize_grad_element(g, r_old, m, stochastic(dynamic_scale_random(cfg, offset, i)))
                        : quantize_grad_element(g, r_old, m, rne);
}

namespace detail {

// max |grad_input(g[i], r[i])| over the finite ones, begin <= i < end (0 if none), any_nonfinite set where one is
// Inf or NaN: the definition, element by element (r null: no residual).
template <class Residual>
float grad_input_amax_ref(const float* g, const Residual* r, std::size_t begin, std::size_t end, bool& any_nonfinite) {
  float amax = 0.0f;
  for (std::size_t i = begin; i < end; ++i) {
    const float x = grad_input(g[i], r != nullptr ? load_residual(r, i) : 0.0f);
    if (is_nonfinite(x)) {
      any_nonfinite = true;
      continue;
    }
    const float a = abs_bits(x);
    amax = a > amax ? a : amax;
  }
  return amax;
}
// The same on the host SIMD lanes where the build has them (the same result: a maximum of magnitudes).
template <class Residual>
float grad_input_amax(const float* g, const Residual* r, std::size_t begin, std::size_t end, bool& any_nonfinite) {
#if QNUM_HOST_SIMD
  float amax = 0.0f;
  if (detail::simd::dispatch([&](auto lanes) {
        amax = decltype(lanes)::grad_amax_row(g + begin, r != nullptr ? r + begin : nullptr,
                                              static_cast<std::int64_t>(end - begin), any_nonfinite);
      }))
    return amax;
#endif
  return grad_input_amax_ref(g, r, begin, end, any_nonfinite);
}

// The checked arguments of a gradient call, shared by the host entry points and the device launchers.
// st: the call's status (ok with n == 0: nothing to do); n = rows * cols elements, taken flat in row-major
// order; gs elements per group (contiguous in that order); n_groups = n / gs.
struct gradient_args {
  status st = status::ok;
  std::size_t n = 0, gs = 0, n_groups = 0;
};
inline gradient_args gradient_error(status s) {
  gradient_args a;
  a.st = s;
  return a;
}

// Elements per group of a rows x cols gradient (rows, cols > 0): per_tensor() -> rows * cols, per_row() ->
// cols, group_size(G) with G dividing cols -> G; 0 (bad_group) for every other group shape.
QNUM_HD constexpr std::int64_t gradient_group_elems(std::int64_t rows, std::int64_t cols, group_shape g) {
  if (g.rows == 0 && g.cols == 0) return rows * cols;
  if (g.rows != 1 || g.cols < 0) return 0;
  const std::int64_t gc = group_extent(rows, cols, g).cols;  // per_row(): cols
  return cols % gc == 0 ? gc : 0;
}

// Whether an optional view (the residual) is given: an empty default view (data null, 0 x 0) is not.
template <class T>
constexpr bool view_given(const matrix_view<T>& v) {
  return !(v.data == nullptr && v.rows == 0 && v.cols == 0);
}

// The views of a gradient call, in the order both sides report them: bad_shape (negative extent of in),
// ok for n == 0 (nothing else read), null_pointer (in, out, states, a given residual, or `missing`: a
// further pointer the caller needs, the device scratch), bad_group, bad_shape (out or a given residual not
// of in's shape, states not scale_shape(rows, cols, groups)), bad_stride (a view not contiguous).
template <class In, class Out, class Residual, class State>
gradient_args check_gradient_views(const matrix_view<In>& in, group_shape groups, const matrix_view<Out>& out,
                                   const matrix_view<Residual>& residual, const matrix_view<State>& states,
                                   bool missing) {
  gradient_args a;
  if (in.rows < 0 || in.cols < 0) return gradient_error(status::bad_shape);
  a.n = static_cast<std::size_t>(in.rows * in.cols);
  if (a.n == 0) return a;
  const bool fb = view_given(residual);
  if (in.data == nullptr || out.data == nullptr || states.data == nullptr || (fb && residual.data == nullptr) || missing)
    return gradient_error(status::null_pointer);
  const std::int64_t gs = gradient_group_elems(in.rows, in.cols, groups);
  if (gs <= 0) return gradient_error(status::bad_group);
  const extent e = scale_shape(in.rows, in.cols, groups);
  if (out.rows != in.rows || out.cols != in.cols || (fb && (residual.rows != in.rows || residual.cols != in.cols)) ||
      states.rows != e.rows || states.cols != e.cols)
    return gradient_error(status::bad_shape);
  if (!in.contiguous() || !out.contiguous() || (fb && !residual.contiguous()) || !states.contiguous())
    return gradient_error(status::bad_stride);
  a.gs = static_cast<std::size_t>(gs);
  a.n_groups = a.n / a.gs;
  return a;
}

// The arguments of quantize_gradient_int8 and gpu::launch_quantize_gradient_int8: bad_config, bad_type (a
// given bf16 residual view whose type is not dtype::bf16), then check_gradient_views.
template <class Residual>
gradient_args check_quantize_gradient(const matrix_view<const float>& g, group_shape groups,
                                      const matrix_view<std::int8_t>& codes, const matrix_view<Residual>& residual,
                                      const matrix_view<dynamic_scale_state>& states, const dynamic_scale_config& cfg,
                                      bool scratch_missing = false) {
  static_assert(std::is_same_v<Residual, float> || std::is_same_v<Residual, std::uint16_t>,
                "residual buffer: float (fp32) or std::uint16_t (bf16 bits)");
  if (!dynamic_scale_config_valid(cfg)) return gradient_error(status::bad_config);
  if (std::is_same_v<Residual, std::uint16_t> && view_given(residual) && residual.type != dtype::bf16)
    return gradient_error(status::bad_type);
  return check_gradient_views(g, groups, codes, residual, states, scratch_missing);
}

// The arguments of dequantize_gradient_int8 and gpu::launch_dequantize_gradient_int8: bad_type (T float
// with out.type not fp32, T std::uint16_t with out.type not bf16 or fp16), then check_gradient_views.
template <class T>
gradient_args check_dequantize_gradient(const matrix_view<const std::int8_t>& codes, group_shape groups,
                                        const matrix_view<const dynamic_scale_state>& states, const matrix_view<T>& out) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::uint16_t>,
                "dequantized gradients: float (fp32) or std::uint16_t (bf16 / fp16 bits, told by out.type)");
  if (std::is_same_v<T, float> ? out.type != dtype::fp32 : (out.type != dtype::bf16 && out.type != dtype::fp16))
    return gradient_error(status::bad_type);
  return check_gradient_views(codes, groups, out, matrix_view<const float>{}, states, false);
}

// The host pass over checked arguments: n elements (flat), n_groups groups of gs, residual null = no feedback.
template <class Residual>
status quantize_gradient_int8_flat(const float* g, std::int8_t* codes, Residual* residual, std::size_t n, std::size_t gs,
                                   std::size_t n_groups, dynamic_scale_state* states, const dynamic_scale_config& cfg) {
  const Residual* rin = residual;

  // Pre-pass, under skip_step only: whether any g + r_old of the tensor is Inf or NaN, before anything is written.
  // (The first step and current timing take each group's max |g + r_old| in the loop below; a tensor of one group
  // takes the pre-pass's, the same maximum over the same elements, instead of reading the tensor once more.)
  const bool first = states[0].steps == 0 || !(states[0].scale > 0.0f);
  bool scanned = false;
  float scan_amax = 0.0f;
  if (cfg.on_nonfinite == nonfinite_policy::skip_step) {
    bool any_nonfinite = false;
    scan_amax = detail::grad_input_amax(g, rin, 0, n, any_nonfinite);
    scanned = n_groups == 1;
    if (any_nonfinite) {
      for (std::size_t i = 0; i < n; ++i) codes[i] = 0;
      for (std::size_t k = 0; k < n_groups; ++k) {
        states[k].skipped += 1;
        states[k].rng_offset += n;
      }
      return status::skipped_nonfinite;
    }
  }
  bool zeroed = false;
  const std::uint64_t offset = states[0].rng_offset;
#if QNUM_HOST_SIMD
  // The lanes prefetch where the whole tensor is read from beyond the caches, whatever the size of its groups.
  const bool prefetch = detail::simd::beyond_caches(detail::simd::grad_row_bytes<Residual>(static_cast<std::int64_t>(n)));
#endif
  for (std::size_t k = 0; k < n_groups; ++k) {
    dynamic_scale_state& st = states[k];
    const std::size_t b = k * gs, e = b + gs;
    float s;
    if (first || cfg.timing == scale_timing::current) {
      bool dummy = false;
      const float amax_now = scanned ? scan_amax : detail::grad_input_amax(g, rin, b, e, dummy);
      s = first ? dynamic_scale_update(0.0f, amax_now, cfg) : dynamic_scale_update(st.scale, amax_now, cfg);
    } else {
      s = dynamic_scale_update(st.scale, st.amax, cfg);
    }
    const int8_multipliers m = int8_multipliers_for(s);
    float amax = 0.0f;
    bool lanes_done = false;
#if QNUM_HOST_SIMD
    if (cfg.round.mode == rounding_mode::nearest_even && m.inv > 0.0f && m.inv <= detail::flt_max && m.dq <= detail::flt_max) {
      bool nonfinite = false;
      lanes_done = detail::simd::dispatch([&](auto lanes) {
        amax = decltype(lanes)::grad_int8_row(g + b, residual != nullptr ? residual + b : nullptr,
                                              static_cast<std::int64_t>(gs), m.inv, m.dq, codes + b, nonfinite, prefetch);
      });
      zeroed = zeroed || nonfinite;
    }
#endif
    if (!lanes_done) {
      for (std::size_t i = b; i < e; ++i) {
        const float r_old = residual != nullptr ? load_residual(residual, i) : 0.0f;
        const int8_element el = quantize_grad_element_at(g[i], r_old, m, cfg, offset, i);
        codes[i] = static_cast<std::int8_t>(el.code);
        if (residual != nullptr) store_residual(residual, i, el.residual);
        amax = el.abs_in > amax ? el.abs_in : amax;
        zeroed = zeroed || !el.finite;
      }
    }
    st.scale = s;
    st.amax = amax;
    st.steps += 1;
    st.rng_offset = offset + n;
  }
  return zeroed ? status::ok_zeroed_nonfinite : status::ok;
}

}  // namespace detail

// Quantize one step of gradients to INT8 codes (host reference of the fused device pass).
//   g          [rows, cols] fp32 gradients (contiguous; n = rows * cols elements, flat row-major)
//   groups     per_tensor() (one scale), per_row(), or group_size(G) with G dividing cols
//   codes      [rows, cols] output codes in [-127, 127]
//   residual   [rows, cols] fp32 or bf16-bit (type dtype::bf16) residual buffer, updated in place; an
//              empty view (matrix_view<float>{}) = no error feedback (start it at zeros)
//   states     scale_shape(rows, cols, groups) per-group state, updated (scale = this step's scale,
//              amax, counters); group k (row-major over that grid) is states.data[k]
// Returns ok / ok_zeroed_nonfinite / skipped_nonfinite, or an error status with nothing written
// (detail::check_quantize_gradient: bad_config, bad_type, bad_shape, null_pointer, bad_group, bad_stride).
template <class Residual = float>
status quantize_gradient_int8(matrix_view<const float> g, group_shape groups, matrix_view<std::int8_t> codes,
                              matrix_view<Residual> residual, matrix_view<dynamic_scale_state> states,
                              const dynamic_scale_config& cfg) {
  const detail::gradient_args a = detail::check_quantize_gradient(g, groups, codes, residual, states, cfg);
  if (a.st != status::ok || a.n == 0) return a.st;
  return detail::quantize_gradient_int8_flat(g.data, codes.data, residual.data, a.n, a.gs, a.n_groups, states.data, cfg);
}

// The stored bits of a dequantized value v in output type t (fp32 bits, or bf16 / fp16 bits rounded RNE).
QNUM_HD std::uint32_t dequant_store_bits(float v, dtype t) {
  return t == dtype::fp32 ? detail::float_to_bits(detail::canonical_nan(v))
                                  : (t == dtype::bf16 ? to_bf16(v) : to_fp16(v));
}

// Dequantize codes with the scales held in states (the scale of the step that produced them):
// out_i = fl(q_i * fl(s / 127)), then converted with RNE (bf16/fp16 overflow to Inf cannot happen:
// |q * dq| <= s <= FLT_MAX is finite but may exceed fp16's range and then gives Inf, as torch's cast).
//   codes   [rows, cols] codes of quantize_gradient_int8 (contiguous)
//   groups  the groups they were quantized with; states: scale_shape(rows, cols, groups) states
//   out     [rows, cols]: T = float with out.type fp32, or T = std::uint16_t with out.type bf16 or fp16 (bits)
// Returns ok, or an error status with nothing written (detail::check_dequantize_gradient: bad_type,
// bad_shape, null_pointer, bad_group, bad_stride).
template <class T>
status dequantize_gradient_int8(matrix_view<const std::int8_t> codes, group_shape groups,
                                matrix_view<const dynamic_scale_state> states, matrix_view<T> out) {
  const detail::gradient_args a = detail::check_dequantize_gradient(codes, groups, states, out);
  if (a.st != status::ok || a.n == 0) return a.st;
  const dtype t = out.type;
  for (std::size_t k = 0; k < a.n_groups; ++k) {
    const float dq = int8_state_dq(states.data[k]);
    for (std::size_t i = k * a.gs; i < (k + 1) * a.gs; ++i) {
      const std::uint32_t b = dequant_store_bits(int8_dequant(codes.data[i], dq), t);
      if constexpr (std::is_same_v<T, float>) {
        out.data[i] = detail::bits_to_float(b);
      } else {
        out.data[i] = static_cast<std::uint16_t>(b);
      }
    }
  }
  return status::ok;
}

QNUM_END_NAMESPACE
