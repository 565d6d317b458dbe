// qnum/host/simd.hpp: the host fast path of quantize_tensor.hpp, dynamic_scale.hpp and layout/gguf.hpp:
// SIMD lanes that compute, bit for bit, what the generic per-element functions (quantize_value,
// dequantize_value, to_bf16, the GGUF block formulas) compute, for the best instruction set of the CPU the
// program runs on, chosen once at run time (no compiler flag needed).
//
// Targets: x86-64 SSE2 (4 lanes), AVX2 (8 lanes), AVX-512 F/BW/DQ/VL (16 lanes); AArch64 NEON (4 lanes).
// Each target's code lives in its own namespace (detail::simd::sse2, ::avx2, ::avx512, ::neon), compiled
// with that target's instruction set through the compiler's target attribute (GCC `#pragma GCC target`,
// Clang `#pragma clang attribute`), whatever flags the translation unit has: objects built with and
// without -mavx2 / -march=native link together and give the same bits. Only pointers and scalars cross
// from the caller into a target (no vector type in any signature the caller sees).
//
//   simd_target host_simd_target()            the target in use: the best the CPU has, or what
//                                             set_host_simd_target / QNUM_HOST_SIMD chose
//   bool set_host_simd_target(simd_target t)  use t from now on (none: the generic per-element loops);
//                                             false, and nothing changes, if the CPU or build lacks t
//   QNUM_HOST_SIMD=none|sse2|avx2|avx512|neon environment variable read at the first use (same rule)
//   simd_target_name(t)                       "none", "sse2", "avx2", "avx512", "neon"
//
// Covered (everything else takes the generic path): input fp32 or bf16; output (dequantize / fake_quantize)
// fp32 or bf16; rounding nearest-even; work dtype fp32; element format qint4/quint4/qint8/quint8 (any scheme
// kind, x_by, zero_first) or fp8_e4m3/fp8_e5m2/fp4_e2m1; the group's code scale finite and > 0 (always
// true unless a scale underflows to zero in its storage type). Group statistics take the lanes for every
// scheme when the input is fp32 or bf16. GGUF Q8_0/Q4_0/Q4_1 writers from fp32.
//
// How the bits stay the same:
//   - x / s and x * inv are single IEEE operations in vector registers (divps/mulps), followed by a
//     register barrier so that -ffp-contract=fast cannot fuse them with the next add; in the batched groups of
//     the AVX-512 target x / s may instead be RN(x * RN(1/s)) corrected by two FMAs (Markstein): the correctly
//     rounded quotient wherever the lanes take it (detail::divide_bounded's contract), so the same codes;
//   - after the clamp |v| <= 2^9, so round-to-nearest-even is (v + 1.5*2^23) - 1.5*2^23, read from the
//     sum's bits, or the conversion instruction (cvtps2dq, fcvtns) (both exact for |v| < 2^22 in the default
//     rounding mode, the mode every host path assumes); integer codes of whole-row groups are narrowed to
//     bytes by saturating packs of values already in range;
//   - float element codes are rounded on the bit pattern (add half-ulp-minus-one plus the lsb, as the
//     generic codec does), subnormal codes as round(|v| * 2^k) with an exact power-of-two multiply;
//   - bf16 output is RNE on the bit pattern, NaN -> 0x7FC0, overflow -> Inf (to_bf16's rules); on CPUs with
//     AVX512-BF16 the AVX-512 target converts values known to be neither NaN nor subnormal (fake quantization
//     and integer dequantization with a group scale >= 2^-126, INT8 gradient residuals of vector pairs with no
//     subnormal residual) by vcvtne2ps2bf16, which rounds them the same;
//   - statistics use max/min without NaN operands (non-finite lanes are zeroed first), whose result does not
//     depend on the order of the lanes except for the sign of a zero, which finish() fixes;
//   - GGUF: x86's truncating conversion (cvttps2dq) is what ggml's (int8_t) cast compiles to; roundf is
//     trunc(|v|) + (frac >= 0.5) with an exact fraction; ggml's first-of-equal-extremes rule is kept.
// tests/host/test_simd.cpp and test_simd_float.cpp compare every case against the generic path on adversarial
// random data under every target the CPU has, and test_codec_exhaustive runs the float-code lanes over all 2^32
// fp32 inputs.
//
// Enabled with GCC or Clang on x86-64 and AArch64; off under nvcc and elsewhere (QNUM_HOST_SIMD 0), or
// when the user defines QNUM_NO_HOST_SIMD (then define it in every translation unit of the program).
// QNUM_HOST_SIMD_TARGETS (x86-64; default 7, every target): a bit mask of the targets compiled in, 1 SSE2,
// 2 AVX2, 4 AVX-512. A target left out is never chosen (set_host_simd_target refuses it; with none left, the
// generic loops run); fewer targets compile faster (CI's sanitizer build keeps only the machine's best).
// Like QNUM_NO_HOST_SIMD, define it the same in every translation unit of the program.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/detail/ggml_blocks.hpp"
#include "qnum/detail/param_store.hpp"
#include "qnum/format.hpp"
#include "qnum/scale.hpp"

#if !defined(QNUM_NO_HOST_SIMD) && !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__aarch64__))
#define QNUM_HOST_SIMD 1
#else
#define QNUM_HOST_SIMD 0
#endif
#ifndef QNUM_HOST_SIMD_TARGETS
#define QNUM_HOST_SIMD_TARGETS 7
#endif

QNUM_BEGIN_NAMESPACE

enum class simd_target : int { none = 0, sse2, avx2, avx512, neon };

constexpr const char* simd_target_name(simd_target t) {
  return t == simd_target::sse2 ? "sse2" : t == simd_target::avx2 ? "avx2" : t == simd_target::avx512 ? "avx512"
       : t == simd_target::neon ? "neon" : "none";
}

namespace detail {

// The groups of a tensor (quantize_tensor.hpp's make_grid): gr x gc elements each, nr x nc of them.
struct grid {
  std::int64_t gr = 1, gc = 1, nr = 0, nc = 0;  // group rows/cols, number of groups down/across
};
// Rows [r0, r1) and columns [c0, c1) of group (bi, bj) of a rows x cols tensor (the last groups clipped).
struct group_span {
  std::int64_t r0, r1, c0, c1;
};
QNUM_HD group_span span_of(const grid& g, std::int64_t rows, std::int64_t cols, std::int64_t bi, std::int64_t bj) {
  const std::int64_t r0 = bi * g.gr, c0 = bj * g.gc;
  return {r0, r0 + g.gr < rows ? r0 + g.gr : rows, c0, c0 + g.gc < cols ? c0 + g.gc : cols};
}

namespace simd {

// Whether the lanes treat `bytes` of input (or output) as read from beyond the caches, prefetching it (or
// writing it around them): more than 2 MiB, a core's L2 and then some. The one threshold of every such choice.
constexpr bool beyond_caches(std::int64_t bytes) { return bytes > (std::int64_t{1} << 21); }
// The bytes of gradient and residual (fp32 or bf16) of n elements: the INT8 gradient lanes prefetch both in a
// tensor where beyond_caches of its n is true (counted with the residual even where there is none).
template <class Residual>
constexpr std::int64_t grad_row_bytes(std::int64_t n) {
  return n * static_cast<std::int64_t>(sizeof(float) + sizeof(Residual));
}

// The groups of a rows x cols tensor as the lanes see them, with the input's and the output's row strides
// in elements. whole_bytes: where the call is one piece of a larger input that a caller walks in order (a row
// of a weight quantized and packed a chunk at a time), the bytes that input spans, so that reading ahead is
// chosen as for the whole; 0: the call's own input.
struct group_grid {
  grid g;
  std::int64_t rows = 0, cols = 0, in_stride = 0, out_stride = 0, whole_bytes = 0;
  group_span span(std::int64_t bi, std::int64_t bj) const { return span_of(g, rows, cols, bi, bj); }
  // Whether the input (elements of elem_bytes) is read from beyond the caches, so that the lanes prefetch: more
  // than 2 MiB (a core's L2 and then some) spanned by the call's own rows, or by the whole input it is a piece of.
  bool input_beyond_caches(std::int64_t elem_bytes) const {
    const std::int64_t own = rows * in_stride * elem_bytes;
    return beyond_caches(own > whole_bytes ? own : whole_bytes);
  }
};
// A symmetric scheme's stored scales as dequantize reads them (scale_view's buffer, its storage, the outer
// scale as given); data null where the groups have zero points.
struct stored_scales {
  const void* data = nullptr;
  std::int64_t row_stride = 0;
  int elem_bytes = 4;
  dtype store = dtype::fp32;
  float outer = 0.0f;
};

template <class F>
constexpr bool float_covered() {
  return std::is_same<F, fp8_e4m3>::value || std::is_same<F, fp8_e5m2>::value || std::is_same<F, fp4_e2m1>::value;
}
template <class F>
constexpr bool format_covered() { return F::is_integer || float_covered<F>(); }

// Whether a group with parameters p can take the lanes (the caller has checked format, types, rounding).
template <class F>
inline bool group_covered(const scheme<F>& s, const group_params& p) {
  if (s.work != dtype::fp32) return false;
  const float d = s.x_by == scale_op::multiply ? p.inv : p.code_scale;  // then x * d or x / d is NaN only for NaN x
  return d > 0.0f && d <= flt_max;
}

}  // namespace simd
}  // namespace detail
QNUM_END_NAMESPACE

#if QNUM_HOST_SIMD
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#else
#include <arm_neon.h>
#endif

#if defined(__clang__)
#define QNUM_SIMD_PUSH_(t) _Pragma(t)
#define QNUM_SIMD_PUSH_AVX2 QNUM_SIMD_PUSH_("clang attribute push(__attribute__((target(\"avx2\"))), apply_to = function)")
#define QNUM_SIMD_PUSH_AVX512 \
  QNUM_SIMD_PUSH_("clang attribute push(__attribute__((target(\"avx2,avx512f,avx512bw,avx512dq,avx512vl\"))), apply_to = function)")
#define QNUM_SIMD_POP _Pragma("clang attribute pop")
#else
#define QNUM_SIMD_PUSH_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
#define QNUM_SIMD_PUSH_AVX512 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,avx512f,avx512bw,avx512dq,avx512vl\")")
#define QNUM_SIMD_POP _Pragma("GCC pop_options")
#endif

QNUM_BEGIN_NAMESPACE
namespace detail {
namespace simd {

// A run-time choice of the lanes that changes their time, never a bit: a value of T (bool, or an enum) from now on
// for every thread, its default asked of the CPU once (Default). The tests run the lanes under each code path.
template <class T, T (*Default)()>
inline std::atomic<T>& lane_choice() {
  static std::atomic<T> value{Default()};
  return value;
}

// AVX512-BF16's fp32 -> bf16 conversion (vcvtne2ps2bf16), which the AVX-512 lanes use for bf16 outputs known
// to be neither NaN nor subnormal: there it gives to_bf16's words (RNE; it takes subnormal inputs as zero).
// On where the CPU has it; the tests turn it off to run the lanes' integer rounding on such CPUs too.
inline bool cpu_has_bf16_convert() {
#if defined(__x86_64__) && (QNUM_HOST_SIMD_TARGETS & 4)
  return __builtin_cpu_supports("avx512bf16") != 0;
#else
  return false;
#endif
}
inline bool bf16_convert() { return lane_choice<bool, cpu_has_bf16_convert>().load(std::memory_order_relaxed); }
// Use the conversion (where the CPU has it: false otherwise) or not, from now on.
inline bool set_bf16_convert(bool on) {
  if (on && !cpu_has_bf16_convert()) return false;
  lane_choice<bool, cpu_has_bf16_convert>().store(on, std::memory_order_relaxed);
  return true;
}

// Where the AVX-512 lanes divide x / s by the group's reciprocal and two FMAs (detail::divide_bounded: the same
// quotients) rather than by vdivps. Only the time differs, never a bit; the tests run the lanes with `never` and
// with `everywhere`, and the other modes pick, per call, one of those two tested code paths.
//   never              vdivps in every group
//   large_bf16_groups  the FMAs in quantize's groups of four vectors or more (64 elements) from bf16 input
//   large_groups       the FMAs in quantize's groups of four vectors or more, from fp32 or bf16 input
//   everywhere         the FMAs in every group, quantize and fake quantization alike
enum class fma_division : int { never = 0, large_bf16_groups = 1, large_groups = 2, everywhere = 3 };
// The CPU's default, measured (docs/performance.md): Intel's cores (Skylake-SP to Emerald Rapids) return 16
// quotients per 10 cycles from vdivps zmm against two FMAs a cycle: everywhere (a 512x512 int8 g32 quantize
// 1.72x faster on Emerald Rapids). AMD Zen 4 (family 19h): vdivps for groups of two vectors and for fake
// quantization, where the FMAs share pipes with the conversions, the FMAs for quantize's larger groups (int8
// g128 1.16-1.19x from fp32): large_groups. AMD Zen 5 (family 1Ah) and later: the divider keeps up from fp32
// (int8 g128 quantize 1.07-1.14x faster by vdivps), not from bf16 (0.88-0.95x): large_bf16_groups. Other CPUs
// never run the AVX-512 lanes, or are not measured: large_groups.
inline fma_division cpu_fma_division() {
#if defined(__x86_64__) && (QNUM_HOST_SIMD_TARGETS & 4)
  if (__builtin_cpu_is("intel")) return fma_division::everywhere;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__builtin_cpu_is("amd") && __get_cpuid(1, &a, &b, &c, &d) != 0) {
    const unsigned base = (a >> 8) & 0xFu, family = base == 0xFu ? base + ((a >> 20) & 0xFFu) : base;
    if (family >= 0x1Au) return fma_division::large_bf16_groups;
  }
#endif
  return fma_division::large_groups;
}
inline fma_division fma_division_mode() { return lane_choice<fma_division, cpu_fma_division>().load(std::memory_order_relaxed); }
// Use mode m from now on, for every thread.
inline void set_fma_division(fma_division m) { lane_choice<fma_division, cpu_fma_division>().store(m, std::memory_order_relaxed); }
// The mode's name as the enumerator is spelled (benchmark contexts, test names).
constexpr const char* fma_division_name(fma_division m) {
  return m == fma_division::never               ? "never"
         : m == fma_division::large_bf16_groups ? "large_bf16_groups"
         : m == fma_division::large_groups      ? "large_groups"
                                                : "everywhere";
}
inline bool fma_division_everywhere() { return fma_division_mode() == fma_division::everywhere; }
// Whether a group of nv vectors takes the FMAs: quantize_put, the put allows it (Put::fma_division); bf16_in,
// the input is bf16. Always inlined: the lanes call it with vector state live (a call into this generic code
// would need vzeroupper).
__attribute__((always_inline)) constexpr bool fma_division_for(fma_division m, bool quantize_put, std::int64_t nv,
                                                               bool bf16_in) {
  return m == fma_division::everywhere ||
         (quantize_put && nv >= 4 && (m == fma_division::large_groups || (m == fma_division::large_bf16_groups && bf16_in)));
}

#if defined(__x86_64__)
#if QNUM_HOST_SIMD_TARGETS & 1
namespace sse2 {
#define QNUM_SIMD_NS sse2
#define QNUM_SIMD_LANES 4
#define QNUM_SIMD_LEVEL 1
#define QNUM_SIMD_ATTR
#include "qnum/host/simd_lanes.inc"
#undef QNUM_SIMD_NS
#undef QNUM_SIMD_LANES
#undef QNUM_SIMD_LEVEL
#undef QNUM_SIMD_ATTR
}  // namespace sse2
#endif

#if QNUM_HOST_SIMD_TARGETS & 2
QNUM_SIMD_PUSH_AVX2
namespace avx2 {
#define QNUM_SIMD_NS avx2
#define QNUM_SIMD_LANES 8
#define QNUM_SIMD_LEVEL 2
#define QNUM_SIMD_ATTR __attribute__((target("avx2")))
#include "qnum/host/simd_lanes.inc"
#undef QNUM_SIMD_NS
#undef QNUM_SIMD_LANES
#undef QNUM_SIMD_LEVEL
#undef QNUM_SIMD_ATTR
}  // namespace avx2
QNUM_SIMD_POP
#endif

#if QNUM_HOST_SIMD_TARGETS & 4
QNUM_SIMD_PUSH_AVX512
namespace avx512 {
#define QNUM_SIMD_NS avx512
#define QNUM_SIMD_LANES 16
#define QNUM_SIMD_LEVEL 3
#define QNUM_SIMD_ATTR __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))
#include "qnum/host/simd_lanes.inc"
#undef QNUM_SIMD_NS
#undef QNUM_SIMD_LANES
#undef QNUM_SIMD_LEVEL
#undef QNUM_SIMD_ATTR
}  // namespace avx512
QNUM_SIMD_POP
#endif
#else
namespace neon {
#define QNUM_SIMD_NS neon
#define QNUM_SIMD_LANES 4
#define QNUM_SIMD_LEVEL 4
#define QNUM_SIMD_ATTR
#include "qnum/host/simd_lanes.inc"
#undef QNUM_SIMD_NS
#undef QNUM_SIMD_LANES
#undef QNUM_SIMD_LEVEL
#undef QNUM_SIMD_ATTR
}  // namespace neon
#endif

// What the CPU can run, best first.
inline bool target_supported(simd_target t) {
#if defined(__x86_64__)
  if (t == simd_target::none) return true;
  if (t == simd_target::sse2) return (QNUM_HOST_SIMD_TARGETS & 1) != 0;
  if (t == simd_target::avx2) return (QNUM_HOST_SIMD_TARGETS & 2) != 0 && __builtin_cpu_supports("avx2");
  if (t == simd_target::avx512)
    return (QNUM_HOST_SIMD_TARGETS & 4) != 0 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
  return false;
#else
  return t == simd_target::neon || t == simd_target::none;
#endif
}
inline simd_target best_target() {
#if defined(__x86_64__)
  if (target_supported(simd_target::avx512)) return simd_target::avx512;
  if (target_supported(simd_target::avx2)) return simd_target::avx2;
  return target_supported(simd_target::sse2) ? simd_target::sse2 : simd_target::none;
#else
  return simd_target::neon;
#endif
}
inline simd_target initial_target() {
  const simd_target best = best_target();
  const char* e = std::getenv("QNUM_HOST_SIMD");
  if (e == nullptr) return best;
  for (simd_target t : {simd_target::none, simd_target::sse2, simd_target::avx2, simd_target::avx512, simd_target::neon})
    if (std::strcmp(e, simd_target_name(t)) == 0 && target_supported(t)) return t;
  return best;
}
inline std::atomic<int>& active_target_slot() {
  static std::atomic<int> t{static_cast<int>(initial_target())};
  return t;
}
inline simd_target active_target() { return static_cast<simd_target>(active_target_slot().load(std::memory_order_relaxed)); }

// fn(engine) with the active target's engine (a type with static members, host/simd_lanes.inc); false
// (fn not called) when the active target is none.
template <class Fn>
inline bool dispatch(Fn&& fn) {
  static_cast<void>(fn);  // unused where QNUM_HOST_SIMD_TARGETS is 0
  switch (active_target()) {
#if defined(__x86_64__)
#if QNUM_HOST_SIMD_TARGETS & 4
    case simd_target::avx512: fn(avx512::engine{}); return true;
#endif
#if QNUM_HOST_SIMD_TARGETS & 2
    case simd_target::avx2: fn(avx2::engine{}); return true;
#endif
#if QNUM_HOST_SIMD_TARGETS & 1
    case simd_target::sse2: fn(sse2::engine{}); return true;
#endif
#else
    case simd_target::neon: fn(neon::engine{}); return true;
#endif
    default: return false;
  }
}

}  // namespace simd
}  // namespace detail

inline simd_target host_simd_target() { return detail::simd::active_target(); }
inline bool set_host_simd_target(simd_target t) {
  if (!detail::simd::target_supported(t)) return false;
  detail::simd::active_target_slot().store(static_cast<int>(t), std::memory_order_relaxed);
  return true;
}

QNUM_END_NAMESPACE
#else
QNUM_BEGIN_NAMESPACE
inline simd_target host_simd_target() { return simd_target::none; }
inline bool set_host_simd_target(simd_target t) { return t == simd_target::none; }
QNUM_END_NAMESPACE
#endif  // QNUM_HOST_SIMD
