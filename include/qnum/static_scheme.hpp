// qnum/static_scheme.hpp: a scheme fixed at compile time, or carried at run time, behind one interface.
//
//   fixed_scheme<S>      S names a constexpr scheme<F> with static storage (every presets:: scheme, or an
//                        `inline constexpr` scheme of your own). Every field is a compile-time constant:
//                        kernels and group functions instantiated with it fold the scheme's decision tree
//                        (kind, eps rule, pow2 rule, storage, work dtype, zero-point order) away.
//   runtime_scheme<F>    the same interface over a scheme<F> value known only at run time (the fallback).
//   Both: ::format, ::is_static, and get() -> scheme<F> (static constexpr for fixed_scheme).
//   is_scheme_holder<T>  true for both; as_holder(x) turns a scheme<F> into runtime_scheme<F> and passes
//                        a holder through.
//
// Usage (device launchers in qnum/gpu/quantize.cuh take either; a plain scheme<F> means runtime_scheme):
//   qnum::gpu::launch_quantize(qnum::fixed_scheme<qnum::presets::slime_int4_qat>{}, in, groups, codes, scales);
// The two give the same bits: a fixed scheme is the runtime one with its fields known to the compiler.
// Device code may use fixed_scheme freely: it reads only the scalar constants copied from S (CUDA lets
// device code use constexpr scalars of the host, not the host object itself).
#pragma once

#include <type_traits>

#include "qnum/config.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE

template <const auto& S>
struct fixed_scheme {
  using scheme_type = std::remove_cv_t<std::remove_reference_t<decltype(S)>>;
  using format = typename scheme_type::format;
  static constexpr bool is_static = true;

  static constexpr scheme_kind kind = S.kind;
  static constexpr scale_op scale_by = S.scale_by;
  static constexpr eps_mode eps_rule = S.eps_rule;
  static constexpr float eps = S.eps;
  static constexpr pow2_rule pow2 = S.pow2;
  static constexpr dtype store = S.store;
  static constexpr bool codes_from_stored = S.codes_from_stored;
  static constexpr scale_op x_by = S.x_by;
  static constexpr dtype work = S.work;
  static constexpr bool zero_first = S.zero_first;
  static constexpr bool zero_subtract_first = S.zero_subtract_first;
  static constexpr bool eps_on_stored = S.eps_on_stored;

  QNUM_HD static constexpr scheme_type get() {
    scheme_type s;
    s.kind = kind;
    s.scale_by = scale_by;
    s.eps_rule = eps_rule;
    s.eps = eps;
    s.pow2 = pow2;
    s.store = store;
    s.codes_from_stored = codes_from_stored;
    s.x_by = x_by;
    s.work = work;
    s.zero_first = zero_first;
    s.zero_subtract_first = zero_subtract_first;
    s.eps_on_stored = eps_on_stored;
    return s;
  }
};

template <class F>
struct runtime_scheme {
  using scheme_type = scheme<F>;
  using format = F;
  static constexpr bool is_static = false;
  scheme<F> value;
  QNUM_HD constexpr scheme<F> get() const { return value; }
};

template <class T>
struct is_scheme_holder : std::false_type {};
template <const auto& S>
struct is_scheme_holder<fixed_scheme<S>> : std::true_type {};
template <class F>
struct is_scheme_holder<runtime_scheme<F>> : std::true_type {};
template <class T>
inline constexpr bool is_scheme_holder_v = is_scheme_holder<std::remove_cv_t<std::remove_reference_t<T>>>::value;

template <class F>
constexpr runtime_scheme<F> as_holder(const scheme<F>& s) { return {s}; }
template <class H, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
constexpr H as_holder(const H& h) { return h; }

QNUM_END_NAMESPACE
