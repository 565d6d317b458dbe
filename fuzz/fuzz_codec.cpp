// fuzz/fuzz_codec.cpp: property fuzzing of encode/decode for every format, rounding mode and
// saturation policy (qnum/codec.hpp).
//
// Input bytes: float x (raw bits), two uint32 random words, a uint16 code. For every format:
//   nearest     rne of an in-range x is the nearest representable (ties: even code; E8M0: up)
//   directed    rtz gives the largest representable <= |x|, raz the smallest >= |x| (same sign)
//   order       |decode(rtz)| <= |x| <= |decode(raz)| for in-range x
//   stochastic  the result is rtz or raz, up exactly when floor(frac * 2^32) + random >= 2^32
//               (frac = (|x| - lo) / (hi - lo), computed exactly in double); random 0 gives rtz
//   no_nan      a finite x never decodes to NaN or Inf under satfinite (every mode)
//   saturate    a finite |x| > max gives +-max under satfinite, +-max or the overflow code under nosat
//   sat_agree   for in-range x, nosat and satfinite give the same code
//   special     NaN and +-Inf inputs give the documented codes
//   roundtrip   encode(decode(c), mode) == c for every finite code c, every mode
//   width       no code has bits above the format's width
// The oracle for float formats is the sorted table of the format's non-negative finite values
// (decode of codes 0..max_code, checked strictly increasing), searched in double: independent of the
// encoder's bit arithmetic. decode itself is pinned to ml_dtypes and CUDA by tests/test_codec*.cpp.
// Integer formats are checked against clamp + nearbyint/trunc/ceil in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fuzz_util.hpp"
#include "qnum/codec.hpp"

namespace {

constexpr double two32 = 4294967296.0;

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Non-negative finite values of F in code order (codes 0..max_code).
template <class F>
const std::vector<double>& table() {
  static const std::vector<double> t = [] {
    std::vector<double> v;
    for (std::uint32_t c = 0; c <= F::max_code; ++c) v.push_back(qnum::decode<F>(c));
    for (std::size_t i = 1; i < v.size(); ++i) {
      QNUM_FUZZ_PROPERTY("codec/table_monotone", v[i - 1] < v[i], "%s codes %zu, %zu", F::name, i - 1, i);
    }
    return v;
  }();
  return t;
}

struct expected_codes {
  std::uint32_t lo, hi;  // codes of the largest value <= a and the smallest >= a
  double vlo, vhi;
};

template <class F>
expected_codes neighbours(double a) {
  const std::vector<double>& t = table<F>();
  const auto it = std::lower_bound(t.begin(), t.end(), a);  // first >= a
  const std::uint32_t hi = static_cast<std::uint32_t>(it - t.begin());
  const std::uint32_t lo = (it != t.end() && *it == a) ? hi : hi - 1;
  return {lo, hi, t[lo], t[hi]};
}

// Stochastic rounding oracle: round up iff floor(frac * 2^32) + r >= 2^32.
bool stochastic_up(double a, double vlo, double vhi, std::uint32_t r) {
  if (vhi == vlo) return false;
  const double frac = (a - vlo) / (vhi - vlo);  // exact: vhi - vlo is a power of two
  const double f32 = std::floor(frac * two32);
  return f32 + static_cast<double>(r) >= two32;
}

template <class F, class Round>
void check_float_mode(float x, Round mode, const char* mode_name, std::uint32_t r) {
  constexpr bool exp_only = F::special == qnum::special_encoding::exponent_only;
  constexpr std::uint32_t width_mask = (F::bits >= 32) ? 0xFFFFFFFFu : ((1u << F::bits) - 1u);
  constexpr std::uint32_t sign_bit = (F::is_signed && !exp_only) ? (1u << (F::bits - 1)) : 0u;
  const std::uint32_t cs = qnum::encode<F>(x, mode, qnum::satfinite);
  const std::uint32_t cn = qnum::encode<F>(x, mode, qnum::nosat);
  QNUM_FUZZ_PROPERTY("codec/width", (cs & ~width_mask) == 0 && (cn & ~width_mask) == 0,
                     "%s %s x=0x%08x: codes 0x%x 0x%x", F::name, mode_name, bits_of(x), cs, cn);
  const float ds = qnum::decode<F>(cs);
  if (std::isnan(x)) {
    const std::uint32_t want = F::has_nan ? F::nan_code : F::max_code;
    QNUM_FUZZ_PROPERTY("codec/special", cs == want && cn == want, "%s %s NaN x=0x%08x: 0x%x 0x%x", F::name,
                       mode_name, bits_of(x), cs, cn);
    return;
  }
  QNUM_FUZZ_PROPERTY("codec/no_nan", !std::isnan(ds) && !std::isinf(ds), "%s %s satfinite x=0x%08x -> 0x%x",
                     F::name, mode_name, bits_of(x), cs);
  const bool neg = std::signbit(x) && !exp_only;
  const double a = std::fabs(static_cast<double>(x));
  const std::uint32_t sign = neg ? sign_bit : 0u;
  const std::uint32_t overflow_nosat =
      F::special == qnum::special_encoding::finite_only ? F::max_code
      : F::has_inf                                       ? F::inf_code
                                                         : F::nan_code;
  if (neg && !F::is_signed) {  // unsigned format, negative input: 0 (satfinite), NaN (nosat); -0 -> 0
    QNUM_FUZZ_PROPERTY("codec/special", cs == 0 && cn == (a == 0 ? 0u : F::nan_code),
                       "%s %s negative x=0x%08x: 0x%x 0x%x", F::name, mode_name, bits_of(x), cs, cn);
    return;
  }
  if (std::isinf(x)) {
    QNUM_FUZZ_PROPERTY("codec/special", cs == (sign | F::max_code) && cn == (sign | overflow_nosat),
                       "%s %s Inf x=0x%08x: 0x%x 0x%x", F::name, mode_name, bits_of(x), cs, cn);
    return;
  }
  if (a > static_cast<double>(F::max_value)) {
    QNUM_FUZZ_PROPERTY("codec/saturate",
                       cs == (sign | F::max_code) && (cn == (sign | F::max_code) || cn == (sign | overflow_nosat)),
                       "%s %s x=0x%08x: 0x%x 0x%x", F::name, mode_name, bits_of(x), cs, cn);
    return;
  }
  if (exp_only && a < static_cast<double>(F::min_value)) {  // E8M0 below 2^-127 (and 0): code 0
    QNUM_FUZZ_PROPERTY("codec/special", cs == 0 && cn == 0, "%s %s tiny x=0x%08x: 0x%x 0x%x", F::name, mode_name,
                       bits_of(x), cs, cn);
    return;
  }
  // In range: the table decides.
  QNUM_FUZZ_PROPERTY("codec/sat_agree", cs == cn, "%s %s x=0x%08x: satfinite 0x%x nosat 0x%x", F::name, mode_name,
                     bits_of(x), cs, cn);
  const expected_codes e = neighbours<F>(a);
  QNUM_FUZZ_PROPERTY("codec/sign", (cs & sign_bit) == sign, "%s %s x=0x%08x -> 0x%x", F::name, mode_name, bits_of(x),
                     cs);
  const std::uint32_t got = cs & ~sign_bit;
  const double vgot = std::fabs(static_cast<double>(ds));
  QNUM_FUZZ_PROPERTY("codec/order", got == e.lo || got == e.hi, "%s %s x=0x%08x -> 0x%x, neighbours 0x%x 0x%x",
                     F::name, mode_name, bits_of(x), cs, e.lo, e.hi);
  QNUM_FUZZ_PROPERTY("codec/order", got != e.lo || vgot <= a, "%s %s x=0x%08x", F::name, mode_name, bits_of(x));
  QNUM_FUZZ_PROPERTY("codec/order", got != e.hi || vgot >= a, "%s %s x=0x%08x", F::name, mode_name, bits_of(x));
  std::uint32_t want;
  const char* prop;
  if constexpr (std::is_same_v<Round, qnum::round_nearest_even>) {
    const double dlo = a - e.vlo, dhi = e.vhi - a;
    if (dlo < dhi) {
      want = e.lo;
    } else if (dhi < dlo) {
      want = e.hi;
    } else {
      want = exp_only ? e.hi : ((e.lo & 1u) == 0 ? e.lo : e.hi);
    }
    prop = "codec/nearest";
    QNUM_FUZZ_PROPERTY("codec/half_ulp", std::fabs(vgot - a) <= (e.vhi - e.vlo) / 2, "%s x=0x%08x", F::name,
                       bits_of(x));
  } else if constexpr (std::is_same_v<Round, qnum::round_toward_zero>) {
    want = e.lo;
    prop = "codec/directed";
  } else if constexpr (std::is_same_v<Round, qnum::round_away_from_zero>) {
    want = e.hi;
    prop = "codec/directed";
  } else {
    want = stochastic_up(a, e.vlo, e.vhi, r) ? e.hi : e.lo;
    prop = "codec/stochastic";
    if (r == 0) QNUM_FUZZ_PROPERTY("codec/stochastic", got == e.lo, "%s r=0 x=0x%08x", F::name, bits_of(x));
  }
  QNUM_FUZZ_PROPERTY(prop, got == want, "%s %s x=0x%08x (%.9g) -> 0x%x, want 0x%x (neighbours %.9g %.9g, r=%u)",
                     F::name, mode_name, bits_of(x), static_cast<double>(x), got, want, e.vlo, e.vhi, r);
}

template <class F, class Round>
void check_int_mode(float x, Round mode, const char* mode_name, std::uint32_t r) {
  constexpr std::uint32_t mask = (1u << F::bits) - 1u;
  const int q = qnum::quantize_int<F>(x, mode);
  const std::uint32_t cs = qnum::encode<F>(x, mode, qnum::satfinite);
  const std::uint32_t cn = qnum::encode<F>(x, mode, qnum::nosat);
  QNUM_FUZZ_PROPERTY("codec/width", (cs & ~mask) == 0 && cs == cn, "%s %s x=0x%08x: 0x%x 0x%x", F::name, mode_name,
                     bits_of(x), cs, cn);
  QNUM_FUZZ_PROPERTY("codec/no_nan", !std::isnan(qnum::decode<F>(cs)), "%s", F::name);
  long long want;
  const char* prop = "codec/nearest";
  if (std::isnan(x)) {
    want = 0;
    prop = "codec/special";
  } else {
    const double c = std::min(std::max(static_cast<double>(x), static_cast<double>(F::qmin)), static_cast<double>(F::qmax));
    const double m = std::fabs(c), fl = std::floor(m);
    double mag;
    if constexpr (std::is_same_v<Round, qnum::round_nearest_even>) {
      mag = std::nearbyint(m);  // default FE mode: ties to even
    } else if constexpr (std::is_same_v<Round, qnum::round_toward_zero>) {
      mag = fl;
      prop = "codec/directed";
    } else if constexpr (std::is_same_v<Round, qnum::round_away_from_zero>) {
      mag = std::ceil(m);
      prop = "codec/directed";
    } else {
      mag = fl + (stochastic_up(m, fl, fl + 1, r) ? 1 : 0);
      prop = "codec/stochastic";
    }
    want = static_cast<long long>(c < 0 ? -mag : mag);
    if (std::fabs(static_cast<double>(x)) > static_cast<double>(F::qmax) || static_cast<double>(x) < static_cast<double>(F::qmin)) {
      prop = "codec/saturate";
    } else {
      QNUM_FUZZ_PROPERTY("codec/order", std::fabs(static_cast<double>(q)) >= fl && std::fabs(static_cast<double>(q)) <= std::ceil(m),
                         "%s %s x=%.9g -> %d", F::name, mode_name, static_cast<double>(x), q);
    }
  }
  QNUM_FUZZ_PROPERTY(prop,
                     q == want && cs == (static_cast<std::uint32_t>(want) & mask) &&
                         qnum::code_to_int<F>(cs) == want && qnum::decode<F>(cs) == static_cast<float>(want),
                     "%s %s x=0x%08x (%.9g): quantize_int %d code 0x%x, want %lld", F::name, mode_name, bits_of(x),
                     static_cast<double>(x), q, cs, want);
}

template <class F, class Round>
void check_mode(float x, Round mode, const char* mode_name, std::uint32_t r) {
  if constexpr (F::is_integer) {
    check_int_mode<F>(x, mode, mode_name, r);
  } else {
    check_float_mode<F>(x, mode, mode_name, r);
  }
}

template <class F>
void check_roundtrip(std::uint32_t code) {
  const std::uint32_t c = code & ((1u << F::bits) - 1u);
  const float v = qnum::decode<F>(c);
  if (std::isnan(v) || std::isinf(v)) return;
  const std::uint32_t got[4] = {qnum::encode<F>(v, qnum::rne), qnum::encode<F>(v, qnum::rtz),
                                qnum::encode<F>(v, qnum::raz), qnum::encode<F>(v, qnum::stochastic(code * 2654435761u))};
  for (const std::uint32_t g : got) {
    QNUM_FUZZ_PROPERTY("codec/roundtrip", g == c, "%s code 0x%x -> %.9g -> 0x%x", F::name, c, static_cast<double>(v), g);
  }
}

template <class F>
void check_format(float x, std::uint32_t r1, std::uint32_t r2, std::uint32_t code) {
  check_mode<F>(x, qnum::rne, "rne", 0);
  check_mode<F>(x, qnum::rtz, "rtz", 0);
  check_mode<F>(x, qnum::raz, "raz", 0);
  check_mode<F>(x, qnum::stochastic(r1), "stochastic", r1);
  check_mode<F>(x, qnum::stochastic(r2), "stochastic", r2);
  check_mode<F>(x, qnum::stochastic(0), "stochastic", 0);
  check_mode<F>(x, qnum::stochastic(0xFFFFFFFFu), "stochastic", 0xFFFFFFFFu);
  check_roundtrip<F>(code);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qnum_fuzz::input in(data, size);
  const float x = in.take<float>();
  const std::uint32_t r1 = in.take<std::uint32_t>();
  const std::uint32_t r2 = in.take<std::uint32_t>();
  const std::uint32_t code = in.take<std::uint16_t>();
  check_format<qnum::qint4>(x, r1, r2, code);
  check_format<qnum::quint4>(x, r1, r2, code);
  check_format<qnum::qint8>(x, r1, r2, code);
  check_format<qnum::quint8>(x, r1, r2, code);
  check_format<qnum::fp8_e4m3>(x, r1, r2, code);
  check_format<qnum::fp8_e5m2>(x, r1, r2, code);
  check_format<qnum::fp4_e2m1>(x, r1, r2, code);
  check_format<qnum::ue4m3>(x, r1, r2, code);
  check_format<qnum::e8m0>(x, r1, r2, code);
  check_format<qnum::bf16>(x, r1, r2, code);
  check_format<qnum::fp16>(x, r1, r2, code);
  return 0;
}
