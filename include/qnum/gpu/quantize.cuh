// qnum/gpu/quantize.cuh: device group quantization: in-kernel primitives and ready kernels with launchers (nvcc only).
//
// One engine, every choice fixed at compile time. The kernels are templates over
//   - the scheme: a scheme holder (qnum/static_scheme.hpp): fixed_scheme<S> makes every field a compile-time
//     constant, so compute_params' decision tree, the storage switch and the zero-point rules fold away;
//     runtime_scheme<F> carries a scheme<F> value (the fallback; a plain scheme<F> argument means this);
//   - the input and output element types: float, qnum::bf16 or qnum::fp16 (bits as std::uint16_t in memory);
//   - the rounding: nearest-even or stochastic;
//   - the lanes per group (sub-warp width L) and the chunk width V (elements per 16-byte load).
// The launchers turn the run-time choices (a view's dtype, rounding.mode, the group width) into
// these template arguments once, at their edge. The loops in the kernels are thin: they call the public
// thread- and warp-level primitives below, which a user can call inside a fused kernel of their own (a
// GEMM epilogue, a norm + quantize) and get the same bits as the host API.
//
// Primitives (device code; the per-element math is quantize.hpp's QNUM_HD functions, so host == device):
//   fragment_stats(s, v[N])                       group_stats of N register values, one instruction per element
//                                                 and statistic; if stats_need_exact(merged), redo with
//                                                 fragment_stats_exact(v[N]) (an infinite element met, or for
//                                                 asymmetric schemes a NaN one: their min/max propagate NaN)
//   subgroup_reduce<L>(s, st, lane)               merge the stats of an aligned L-lane sub-warp group
//                                                 (__shfl_xor_sync; only amax for symmetric/float schemes)
//   subgroup_reduce<L>(st, lane), subgroup_amax<L>(amax, lane), block_stats<BLOCK>::reduce(storage, st)
//   warp_subgroup_reduce<LMin, LMax>(s, st, L)    the same for a whole warp running together, L at run time
//   warp_transpose_reduce<K, LMin, LMax>(s, st[K], lane, L)   K groups on the same L lanes: lane i gets group
//                                                 i % K's merged stats (K - 1 shuffles a step, not K)
//   quantize_fragment(s, p, v[N], codes[N][, bound])  codes of N values, nearest-even (sm_89+: cvt.satfinite
//                                                 for FP8), == quantize_value(s, p, v[i]); bound: max |v[i]| over
//                                                 the non-NaN elements where known (fewer instructions, same bits)
//   quantize_fragment(s, p, d, path, v[N], codes[N])  the same with the group's divisor d = divisor_of(s, p) and
//                                                 path = code_path_of(s, p, d, bound) given (once for a group's
//                                                 fragments, or from another thread of the group), or as
//                                                 std::integral_constant<code_path, P> (a warp's common choice:
//                                                 warp_common_path); fake_quantize_fragment<true>(s, p, d, path, v)
//                                                 where p.scale is known finite
//   group_code_path(s, p, d, st, bound)           code_path_of from a group's statistics: asymmetric groups
//                                                 without NaN whose ends need no clamp take code_path::unclamped
//   quantize_fragment_stochastic(s, p, v[N], codes[N], seed, index0)   element index0 + i uses
//                                                 stochastic(random_bits(seed, index0 + i)), as the host API
//   fake_quantize_fragment(s, p, v[N][, bound])    v[i] = fake_quant_value(s, p, v[i]) in place (nearest-even)
//   dequantize_fragment(s, p, codes[N], out[N])    out[i] = dequantize_value(s, p, codes[i])
//   pack_int4x8(codes[8])                          compressed-tensors word: nibble i = (q_i + 8) & 0xF
//   then compute_params(scheme, stats[, outer]) gives the group's parameters.
// `s` is a scheme<F> value: pass Holder::get() of a fixed_scheme and the compiler sees constants.
//
// Launchers (device pointers in the views; enqueue on `stream`; return a qnum::status: without launching,
// the host API's status for bad shapes/strides/group sizes, null pointers and mismatched scale buffers,
// status::misaligned for a pointer not aligned to its element, status::bad_type for a 16-bit view marked
// fp32; otherwise the launch's CUDA error as a status (gpu/status.cuh), status::ok for empty tensors). Same views, groups, rounding, outer_scale
// and bits as the host API in quantize_tensor.hpp (codes one byte per element, scales in scheme.store's
// type, int32 zero points for asymmetric schemes, padded tail groups as on the host). `scheme` is a
// scheme<F> (run-time fields) or a holder (fixed_scheme<...>{} for compile-time fields):
//   launch_quantize(scheme, in, groups, codes, scales, zeros, rounding, outer, stream, tensor_scratch)
//   launch_fake_quantize(scheme, in, groups, out, rounding, outer, stream, tensor_scratch)
//   launch_dequantize(scheme, codes, groups, scales, zeros, out, outer, stream)
//   launch_tensor_stats(in, stats_out, stream)        per-tensor amax/min/max (3 x uint32, see below)
//   launch_w4a16_pack(scheme, w, group, weight_packed, scales, zeros, stream)   bf16/fp16/fp32 [N, K] ->
//       compressed-tensors weight_packed int32 [N, ceil(K/8)] (nibble k%8 of word k/8 = q + 8; unused
//       high nibbles of the last word 0) + weight_scale [N, ceil(K/G)] (+ signed int32 zero points
//       [N, ceil(K/G)], asymmetric), one pass; equal to ct::quantize_pack_weight (= quantize +
//       ct::pack_weight) on the host. G % 8 == 0.
// Inputs: float, or bf16/fp16 bits as std::uint16_t with matrix_view::type (device_view() wraps
// __nv_bfloat16 / __half pointers). Outputs of dequantize / fake_quantize likewise. NaN outputs are the
// canonical quiet NaN (fp32 0x7FC00000, bf16 0x7FC0, fp16 0x7E00), as on the host.
// Kernel choice: 1xG groups with G <= 32 * V * 4 (V = 16 / sizeof(element): 512 fp32, 1024 bf16/fp16
// elements) use a sub-warp of L lanes per group (L = the smallest power of two with 4 * L >= ceil(G / V)
// 16-byte chunks, so each lane holds up to 4 chunks), so G = 16/32/64/128 map to L = 1/1/2/4 (bf16) or
// 1/2/4/8 (fp32) with the group held in registers (fixed schemes with L <= 2 take whole tiles of a warp); other shapes (2-D
// blocks, long rows) use one 256-thread block per group with cub::BlockReduce. A tensor that is a single
// group (per_tensor) uses two kernels (stats, then quantize) when tensor_scratch (3 x uint32 of device
// memory) is given, else one block. Loads are 16-byte vectors when the view is 16-byte aligned with a row
// stride and group width that keep every chunk aligned (decided once per launch), scalar otherwise; flat
// group indices are 32-bit (a launch covers at most 2^30 groups; larger tensors take several launches) and
// map to (row, column) with a multiply-high (detail::fast_div), not a 64-bit division.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <cub/block/block_reduce.cuh>
#include <type_traits>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/gpu/codec_hw.cuh"
#include "qnum/gpu/status.cuh"
#include "qnum/detail/fast_div.hpp"
#include "qnum/quantize.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/scale.hpp"
#include "qnum/static_scheme.hpp"

QNUM_BEGIN_NAMESPACE
namespace gpu {

// ---------------------------------------------------------------------------------------------------
// Primitives

// Shuffle mask of the aligned L-lane sub-group that holds `lane`.
template <int L>
__device__ __forceinline__ unsigned subgroup_mask(unsigned lane) {
  static_assert(L == 1 || L == 2 || L == 4 || L == 8 || L == 16 || L == 32, "L must be a power of two <= 32");
  return L == 32 ? 0xFFFFFFFFu : (((1u << L) - 1u) << (lane & static_cast<unsigned>(32 - L)));
}

// Every lane of the sub-group calls it and gets the merged stats, the same bits on every lane: the merge is
// qnum::detail::fast_merge (min/max: a NaN operand gives NaN, -0 orders below +0), so the result
// does not depend on the order of the lanes. For statistics built by accumulate() (finite, min <= 0 <= max) it
// equals merge()'s value.
template <int L>
__device__ __forceinline__ group_stats subgroup_reduce(group_stats st, unsigned lane) {
  const unsigned mask = subgroup_mask<L>(lane);
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) {
    group_stats b;
    b.amax = __shfl_xor_sync(mask, st.amax, o);
    b.min = __shfl_xor_sync(mask, st.min, o);
    b.max = __shfl_xor_sync(mask, st.max, o);
    st = qnum::detail::fast_merge(st, b, true);
  }
  return st;
}

template <int L>
__device__ __forceinline__ float subgroup_amax(float amax, unsigned lane) {
  const unsigned mask = subgroup_mask<L>(lane);
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) {
    amax = fmaxf(amax, __shfl_xor_sync(mask, amax, o));  // non-negative, never NaN: b > a ? b : a
  }
  return amax;
}

// Whether compute_params reads min/max (asymmetric schemes) or only amax.
template <class F>
QNUM_HD constexpr bool needs_min_max(const scheme<F>& s) { return s.kind == scheme_kind::asymmetric; }

// The sub-group merge of what scheme s needs: amax alone (one shuffle a step) unless it is asymmetric.
template <int L, class F>
__device__ __forceinline__ group_stats subgroup_reduce(const scheme<F>& s, group_stats st, unsigned lane) {
  if (needs_min_max(s)) return subgroup_reduce<L>(st, lane);
  st.amax = subgroup_amax<L>(st.amax, lane);
  return st;
}

// The same with the width L (1, 2, 4, 8, 16 or 32) known only at run time (uniform across the warp).
__device__ __forceinline__ unsigned subgroup_mask_n(unsigned lane, int L) {
  return L == 32 ? 0xFFFFFFFFu : (((1u << L) - 1u) << (lane & static_cast<unsigned>(32 - L)));
}
template <class F>
__device__ __forceinline__ group_stats subgroup_reduce_n(const scheme<F>& s, group_stats st, unsigned lane, int L) {
  const unsigned mask = subgroup_mask_n(lane, L);
  for (int o = L / 2; o > 0; o >>= 1) {
    group_stats b = st;
    b.amax = __shfl_xor_sync(mask, st.amax, o);
    if (needs_min_max(s)) {
      b.min = __shfl_xor_sync(mask, st.min, o);
      b.max = __shfl_xor_sync(mask, st.max, o);
    }
    st = qnum::detail::fast_merge(st, b, needs_min_max(s));
  }
  return st;
}

// The xor shuffle over the whole warp of the fields of fast statistics that scheme s reads (amax; min and max
// too when it is asymmetric); they merge by qnum::detail::fast_merge.
template <class F>
__device__ __forceinline__ group_stats warp_shfl_xor(const scheme<F>& s, group_stats st, int o) {
  st.amax = __shfl_xor_sync(0xFFFFFFFFu, st.amax, o);
  if (needs_min_max(s)) {
    st.min = __shfl_xor_sync(0xFFFFFFFFu, st.min, o);
    st.max = __shfl_xor_sync(0xFFFFFFFFu, st.max, o);
  }
  return st;
}
// Butterfly steps o = LMax / 2, ..., OMin over the whole warp for a sub-group width L in [LMin, LMax]: the
// partner lane ^ (o & (L - 1)) (a step at or above L pairs a lane with itself), o itself below LMin.
template <int OMin, int LMin, int LMax, class F>
__device__ __forceinline__ group_stats warp_butterfly(const scheme<F>& s, group_stats st, int L) {
#pragma unroll
  for (int o = LMax / 2; o >= OMin; o >>= 1)
    st = qnum::detail::fast_merge(st, warp_shfl_xor(s, st, o < LMin ? o : (o & (L - 1))), needs_min_max(s));
  return st;
}

// subgroup_reduce for a caller whose whole warp runs it together (every lane, every call), with the width L
// known only at run time, between LMin and LMax (powers of two, compile time). Full-warp shuffles, unrolled:
// a lane's xor partner o & (L - 1) stays in its sub-group, and a step with o >= L pairs a lane with itself
// (no change: max and min are idempotent). No run-time loop and no convergence test.
template <int LMin, int LMax, class F>
__device__ __forceinline__ group_stats warp_subgroup_reduce(const scheme<F>& s, group_stats st, int L) {
  static_assert(LMin >= 1 && LMin <= LMax && LMax <= 32 && (LMin & (LMin - 1)) == 0 && (LMax & (LMax - 1)) == 0,
                "LMin <= LMax, powers of two <= 32");
  return warp_butterfly<1, LMin, LMax>(s, st, L);
}

// warp_subgroup_reduce<1, 32>(s, st, L) with the steps of width L only: a warp-uniform switch on L, then that
// width's unrolled butterfly (steps at or above L, which pair a lane with itself, are not run). The same bits.
template <class F>
__device__ __forceinline__ group_stats warp_subgroup_reduce_switch(const scheme<F>& s, group_stats st, int L) {
  switch (L) {
    case 1: return warp_subgroup_reduce<1, 1>(s, st, 1);
    case 2: return warp_subgroup_reduce<2, 2>(s, st, 2);
    case 4: return warp_subgroup_reduce<4, 4>(s, st, 4);
    case 8: return warp_subgroup_reduce<8, 8>(s, st, 8);
    case 16: return warp_subgroup_reduce<16, 16>(s, st, 16);
    default: return warp_subgroup_reduce<32, 32>(s, st, 32);
  }
}

// K statistics a lane holds, one for each of K groups that the same L lanes share (lane i of the sub-group
// holds st[k], its part of group k), merged so that lane i gets group i % K's whole statistics (the return
// value): a transposed reduction, K - 1 shuffles for the first log2(K) steps instead of K each, then the
// butterfly of warp_subgroup_reduce for L > K. The whole warp calls it; K <= LMin <= L <= LMax as there.
template <int K, int LMin, int LMax, class F>
__device__ __forceinline__ group_stats warp_transpose_reduce(const scheme<F>& s, group_stats (&st)[K], unsigned lane, int L) {
  static_assert(K >= 1 && K <= LMin && (K & (K - 1)) == 0, "K a power of two <= LMin");
  // Step h (K/2, ..., 1): a lane whose bit h is set keeps the upper h of its 2h groups and sends the lower h to
  // its partner lane ^ h, which keeps the lower ones. After step h, st[i] (i < h) is group i + (lane & (K - h))
  // merged over the lanes that differ from this one in bits h to K/2 only; after step 1, st[0] is group lane % K.
#pragma unroll
  for (int h = K / 2; h > 0; h >>= 1) {
    const bool up = (lane & static_cast<unsigned>(h)) != 0u;
#pragma unroll
    for (int i = 0; i < h; ++i) {
      const group_stats keep = up ? st[i + h] : st[i], send = up ? st[i] : st[i + h];
      st[i] = qnum::detail::fast_merge(keep, warp_shfl_xor(s, send, h), needs_min_max(s));
    }
  }
  return warp_butterfly<K, LMin, LMax>(s, st[0], L);
}

// Statistics of N register values: what accumulate() over them gives, whenever the result is finite.
// The fast form (detail::fast_accumulate, scale.hpp): amax = fmaxf(amax, |x|) (fmaxf drops a NaN operand),
// and for asymmetric schemes min = min.NaN(min, x), max = max.NaN(max, x) (a NaN operand gives NaN),
// amax = max.NaN(-min, max): one instruction per element and statistic. An infinite element (and, for
// asymmetric schemes, a NaN one) makes the result non-finite instead of being ignored: when a merged result is
// not finite (stats_need_exact), recompute with fragment_stats_exact (accumulate()), as the kernels below do for
// the whole group. Merge partial results with detail::fast_merge (the shuffle reductions and block_stats do),
// not merge(), which could drop a NaN. Both are exact: no rounding is involved.
template <class F, int N>
__device__ __forceinline__ group_stats fragment_stats(const scheme<F>& s, const float (&v)[N]) {
  group_stats st;
#pragma unroll
  for (int i = 0; i < N; ++i) qnum::detail::fast_accumulate(st, v[i], needs_min_max(s));
  qnum::detail::fast_stats_finish(st, needs_min_max(s));
  return st;
}
// The same over K chunks of N values (one statistics chain for the whole fragment).
template <class F, int K, int N>
__device__ __forceinline__ group_stats fragment_stats(const scheme<F>& s, const float (&v)[K][N]) {
  group_stats st;
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int i = 0; i < N; ++i) qnum::detail::fast_accumulate(st, v[k][i], needs_min_max(s));
  qnum::detail::fast_stats_finish(st, needs_min_max(s));
  return st;
}
// Whether merged fast statistics met an infinite element (then the group's statistics are recomputed).
__device__ __forceinline__ bool stats_need_exact(const group_stats& st) { return qnum::detail::fast_stats_need_exact(st); }
// accumulate() over N register values: NaN and +-Inf ignored element by element.
template <int N>
__device__ __forceinline__ group_stats fragment_stats_exact(const float (&v)[N]) {
  group_stats st;
#pragma unroll
  for (int i = 0; i < N; ++i) accumulate(st, v[i]);
  return st;
}
template <int K, int N>
__device__ __forceinline__ group_stats fragment_stats_exact(const float (&v)[K][N]) {
  group_stats st;
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int i = 0; i < N; ++i) accumulate(st, v[k][i]);
  return st;
}

// x / code_scale by the group's divisor (qnum::detail::divisor, detail/fp_rn.hpp): one reciprocal per group,
// five instructions per element, the code of the true division.
using qnum::detail::divide;
using qnum::detail::bounded_quotients;
using qnum::detail::divide_bounded;
using qnum::detail::divide_fast;
using qnum::detail::divisor;
using qnum::detail::make_divisor;
using qnum::detail::make_divisor_from;
// The group's divisor for scheme s (unused, and never computed, when codes come from x * inv).
template <class F>
__device__ __forceinline__ divisor divisor_of(const scheme<F>& s, const group_params& p) {
  return s.x_by == scale_op::divide ? make_divisor(p.code_scale) : divisor{};
}
// scaled_value(s, p, x) with x / code_scale from the group's divisor d, d.fast (the caller tests it once):
// the same code (see divide). Bounded: x within a bound that bounded_quotients(d, bound) accepts (the same
// value by divide_bounded).
template <bool Bounded = false, class F>
__device__ __forceinline__ float scaled_value(const scheme<F>& s, const group_params& p, const divisor& d, float x) {
  const float v = s.x_by == scale_op::multiply ? __fmul_rn(x, p.inv) : (Bounded ? divide_bounded(d, x) : divide_fast(d, x));
  return qnum::detail::to_work(v, s.work);
}
// Whether a group takes the divisor path: codes from x * inv, or a fast divisor.
template <class F>
__device__ __forceinline__ bool divisor_path(const scheme<F>& s, const divisor& d) {
  return s.x_by == scale_op::multiply || d.fast;
}

// The code of a scaled value v (scaled_value(s, p, x), by either path): nearest even, the hardware FP8
// conversion where there is one (encode_hw: the same bits); integers by detail::quantize_int_rne_scaled (the
// same code as quantize_value(s, p, x, rne)).
// InRange: the caller knows the rounding cannot leave the code range (codes_in_range): no clamp.
// int_rne: the integer q in [code_min, code_max] of an integer format, before storage (code_rne masks it).
template <bool InRange = false, class F>
__device__ __forceinline__ int int_rne(const scheme<F>& s, const group_params& p, float v) {
  static_assert(F::is_integer, "int_rne is for integer formats");
  if constexpr (InRange) {
    return qnum::detail::f2i8_rn_sat(v);  // |v| < code_max + 1/2 <= 127.5 or NaN (-> 0); z == 0
  } else {
    return qnum::detail::quantize_int_rne_scaled(s, p, v);
  }
}
template <bool InRange = false, class F>
__device__ __forceinline__ code_t<F> code_rne(const scheme<F>& s, const group_params& p, float v) {
  if constexpr (F::is_integer) {
    constexpr std::uint32_t mask = (1u << F::bits) - 1u;
    return static_cast<code_t<F>>(static_cast<std::uint32_t>(int_rne<InRange>(s, p, v)) & mask);
  } else {
    return encode_hw<F>(v);
  }
}
// quantize_value(s, p, x, rne), with x / code_scale by the group's divisor d = divisor_of(s, p) where
// divisor_path(s, d) (the same code), else by the division. Bounded, InRange: see scaled_value, code_rne.
template <bool Bounded = false, bool InRange = false, class F>
__device__ __forceinline__ code_t<F> quantize_rne(const scheme<F>& s, const group_params& p, const divisor& d, float x) {
  return code_rne<InRange>(s, p, scaled_value<Bounded>(s, p, d, x));
}
template <class F>
__device__ __forceinline__ code_t<F> quantize_rne(const scheme<F>& s, const group_params& p, float x) {
  const divisor d = divisor_of(s, p);
  return divisor_path(s, d) ? quantize_rne(s, p, d, x) : code_rne(s, p, scaled_value(s, p, x));
}

// The `bound` of a fragment whose elements' magnitudes are not known: +Inf.
QNUM_HD float no_bound() { return qnum::detail::bits_to_float(0x7F800000u); }

// Whether a fragment of a dividing scheme takes divide_bounded: its elements' magnitudes are at most `bound`
// (NaN elements aside), and the group's divisor keeps those quotients finite.
template <class F>
__device__ __forceinline__ bool bounded_path(const scheme<F>& s, const divisor& d, float bound) {
  return s.x_by == scale_op::divide && bounded_quotients(d, bound);
}

// Whether every element x of a fragment with |x| <= bound (or NaN) rounds to a code inside the code range, so
// that code_rne needs no clamp: a symmetric integer scheme of a signed format of at most 8 bits (z == 0)
// whose scaled bound is below code_max + 1/2 (scaled_value and the rounding are monotonic in |x|; the low
// bound -code_max or -code_max - 1 is then met too). The multiply path, or a dividing scheme's bounded path.
// bound_can_skip_clamp(s): the part that depends on the scheme alone (whether a bound can ever matter).
template <class F>
QNUM_HD constexpr bool bound_can_skip_clamp(const scheme<F>& s) {
  if constexpr (!F::is_integer || !F::is_signed || F::qmin < -128 || F::qmax > 127) {
    return false;
  } else {
    // The full INT8 range needs no clamp anyway (f2i8_rn_sat saturates there): no test.
    return s.kind != scheme_kind::asymmetric && !s.zero_first && (s.code_min() > -128 || s.code_max() < 127);
  }
}
template <class F>
__device__ __forceinline__ bool codes_in_range(const scheme<F>& s, const group_params& p, const divisor& d, float bound) {
  return bound_can_skip_clamp(s) && scaled_value<true>(s, p, d, bound) < static_cast<float>(s.code_max()) + 0.5f;
}

// How a fragment's codes are computed, chosen once per fragment (code_path_of): without clamp (codes_in_range),
// by divide_bounded, by the group's divisor (or x * inv), or by the division. Every path gives the same code.
// unclamped (group_code_path only): an asymmetric integer scheme's group without NaN whose codes need no clamp,
// by divide_bounded (or x * inv), then detail::quantize_int_rne_scaled_unclamped: no clamp and no NaN rule.
enum class code_path : int { in_range, bounded, divisor, division, unclamped };
// x scaled by path P (the division, the group's divisor, or divide_bounded / x * inv under a bound).
template <code_path P, class F>
__device__ __forceinline__ float scaled_on(const scheme<F>& s, const group_params& p, const divisor& d, float x) {
  if constexpr (P == code_path::division) return scaled_value(s, p, x);
  else return scaled_value<P != code_path::divisor>(s, p, d, x);
}
// The integer q of quantize_on's code (integer formats): code_to_int(quantize_on<P>(s, p, d, x)).
template <code_path P, class F>
__device__ __forceinline__ int quantize_int_on(const scheme<F>& s, const group_params& p, const divisor& d, float x) {
  if constexpr (P == code_path::unclamped) return qnum::detail::quantize_int_rne_scaled_unclamped(s, p, scaled_on<P>(s, p, d, x));
  else return int_rne<P == code_path::in_range>(s, p, scaled_on<P>(s, p, d, x));
}
template <code_path P, class F>
__device__ __forceinline__ code_t<F> quantize_on(const scheme<F>& s, const group_params& p, const divisor& d, float x) {
  if constexpr (P == code_path::unclamped) {
    static_assert(F::is_integer, "code_path::unclamped is for integer formats");
    constexpr std::uint32_t mask = (1u << F::bits) - 1u;
    return static_cast<code_t<F>>(static_cast<std::uint32_t>(quantize_int_on<P>(s, p, d, x)) & mask);
  } else {
    return code_rne<P == code_path::in_range>(s, p, scaled_on<P>(s, p, d, x));
  }
}
// fn(std::integral_constant<code_path, P>{}) with the path of a fragment whose non-NaN elements have
// magnitudes at most `bound` (+Inf: no bound known).
template <class F, class Fn>
__device__ __forceinline__ void with_code_path(const scheme<F>& s, const group_params& p, const divisor& d, float bound, Fn&& fn) {
  const bool divide_by_bound = bounded_path(s, d, bound);
  const bool bounded = s.x_by == scale_op::multiply ? bound <= qnum::detail::flt_max : divide_by_bound;
  if (bounded && codes_in_range(s, p, d, bound)) fn(std::integral_constant<code_path, code_path::in_range>{});
  else if (divide_by_bound) fn(std::integral_constant<code_path, code_path::bounded>{});
  else if (divisor_path(s, d)) fn(std::integral_constant<code_path, code_path::divisor>{});
  else fn(std::integral_constant<code_path, code_path::division>{});
}
// The same path as a value (for a caller that passes it on, to another thread say).
template <class F>
__device__ __forceinline__ code_path code_path_of(const scheme<F>& s, const group_params& p, const divisor& d, float bound) {
  code_path path = code_path::division;
  with_code_path(s, p, d, bound, [&](auto P) { path = decltype(P)::value; });
  return path;
}
// code_path_of for a whole group from its statistics: st and bound as fragment_group_stats (or raw_group_stats)
// gives them. Where bound is finite, st are the fast statistics, and for an asymmetric scheme they are finite only
// when the group holds no NaN and no infinity (detail::fast_pick_nan): every element lies in [st.min, st.max].
// When the unclamped codes of those two ends lie in the code range (detail::asym_codes_in_range; the code is
// monotonic in x), so do every element's: code_path::unclamped, no clamp and no NaN rule (the same codes).
// Otherwise, and for every other scheme, code_path_of(s, p, d, bound).
template <class F>
__device__ __forceinline__ code_path group_code_path(const scheme<F>& s, const group_params& p, const divisor& d,
                                                     const group_stats& st, float bound) {
  if constexpr (F::is_integer) {
    if (needs_min_max(s)) {
      const bool bounded = s.x_by == scale_op::multiply ? bound <= qnum::detail::flt_max : bounded_path(s, d, bound);
      if (bounded && qnum::detail::asym_codes_in_range(s, p, scaled_value<true>(s, p, d, st.min), scaled_value<true>(s, p, d, st.max)))
        return code_path::unclamped;
    }
  }
  return code_path_of(s, p, d, bound);
}
// fn(std::integral_constant<code_path, P>{}) for P == path, among the paths that code_path_of and group_code_path
// can give for s: in_range where bound_can_skip_clamp(s), bounded and division for dividing schemes, unclamped for
// asymmetric integer schemes, divisor. Any other value takes the division (x * inv for multiplying schemes), which
// is valid for every group. A fixed scheme's tests fold, so its kernels hold the code of its own paths only.
template <class F, class Fn>
__device__ __forceinline__ void on_code_path(const scheme<F>& s, code_path path, Fn&& fn) {
  if constexpr (F::is_integer) {
    if (needs_min_max(s) && path == code_path::unclamped) {
      fn(std::integral_constant<code_path, code_path::unclamped>{});
      return;
    }
  }
  const bool divides = s.x_by == scale_op::divide;
  if (path == code_path::in_range && bound_can_skip_clamp(s)) fn(std::integral_constant<code_path, code_path::in_range>{});
  else if (path == code_path::bounded && divides) fn(std::integral_constant<code_path, code_path::bounded>{});
  else if (path == code_path::divisor || !divides) fn(std::integral_constant<code_path, code_path::divisor>{});
  else fn(std::integral_constant<code_path, code_path::division>{});
}
// The same for a path known at compile time (a caller that chose it once for several groups): fn(path).
template <class F, code_path P, class Fn>
__device__ __forceinline__ void on_code_path(const scheme<F>&, std::integral_constant<code_path, P> path, Fn&& fn) {
  fn(path);
}
// A warp's vote on one code path for all its groups' fragments. path_key: a lane's group path and whether the
// caller may treat its scale as finite, as one int. warp_common_path (every lane of the warp calls it): true when
// every lane has the same path and a finite scale, that path in `common`; the caller then passes
// std::integral_constant<code_path, common> to every fragment (on_code_path), and otherwise the group's own path
// or code_path::division, which is valid for every group.
__device__ __forceinline__ int path_key(code_path path, bool finite_scale) {
  return static_cast<int>(path) | (finite_scale ? 0 : 8);
}
__device__ __forceinline__ bool warp_common_path(int key, code_path& common) {
  const int key_0 = __shfl_sync(0xFFFFFFFFu, key, 0);
  common = static_cast<code_path>(key_0 & 7);
  return __all_sync(0xFFFFFFFFu, key == key_0) && key_0 < 8;
}

// The codes of a fragment by path P. Float formats in pairs (encode2_hw: one conversion for two codes on sm_89+,
// the bits of code_rne's encode_hw for each).
template <code_path P, class F, int N>
__device__ __forceinline__ void quantize_fragment_on(const scheme<F>& s, const group_params& p, const divisor& d,
                                                     const float (&v)[N], std::uint8_t (&codes)[N]) {
  if constexpr (!F::is_integer && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const std::uint16_t pair = static_cast<std::uint16_t>(encode2_hw<F>(scaled_on<P>(s, p, d, v[i]), scaled_on<P>(s, p, d, v[i + 1])));
      memcpy(&codes[i], &pair, 2);  // little-endian: codes[i] = the low byte
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) codes[i] = static_cast<std::uint8_t>(quantize_on<P>(s, p, d, v[i]));
  }
}
// One choice of path per fragment, then a branch-free loop. bound: an upper bound of the magnitudes of v's
// non-NaN elements where the caller knows one (the group's amax when no element is infinite), else +Inf:
// dividing schemes then take divide_bounded, and where codes_in_range holds no code is clamped. The same bits.
// The forms with (d, path) take the group's divisor d = divisor_of(s, p) and path = code_path_of(s, p, d, bound)
// from the caller (computed once for a group's fragments, or by another thread of the group); the path is a
// code_path, or a std::integral_constant<code_path, P> where the caller chose one for several groups (any path
// valid for each of them, such as code_path::division, which every group may take). A run-time path that neither
// code_path_of nor group_code_path gives for s (in_range for an asymmetric scheme, say) takes the division.
template <class F, int N>
__device__ __forceinline__ void quantize_fragment(const scheme<F>& s, const group_params& p, const float (&v)[N],
                                                  std::uint8_t (&codes)[N], float bound = no_bound()) {
  const divisor d = divisor_of(s, p);
  with_code_path(s, p, d, bound, [&](auto P) { quantize_fragment_on<decltype(P)::value>(s, p, d, v, codes); });
}
template <class F, int N, class Path>
__device__ __forceinline__ void quantize_fragment(const scheme<F>& s, const group_params& p, const divisor& d, Path path,
                                                  const float (&v)[N], std::uint8_t (&codes)[N]) {
  on_code_path(s, path, [&](auto P) { quantize_fragment_on<decltype(P)::value>(s, p, d, v, codes); });
}

// The integers q[i] (before storage: code_to_int of quantize_fragment's codes) of a fragment of an integer format,
// by the group's divisor d and path (as quantize_fragment(s, p, d, path, ...) takes them).
template <class F, int N, class Path>
__device__ __forceinline__ void quantize_int_fragment(const scheme<F>& s, const group_params& p, const divisor& d, Path path,
                                                      const float (&v)[N], int (&q)[N]) {
  static_assert(F::is_integer, "integer formats only");
  on_code_path(s, path, [&](auto P) {
#pragma unroll
    for (int i = 0; i < N; ++i) q[i] = quantize_int_on<decltype(P)::value>(s, p, d, v[i]);
  });
}

template <class F, int N>
__device__ __forceinline__ void quantize_fragment_stochastic(const scheme<F>& s, const group_params& p, const float (&v)[N],
                                                             std::uint8_t (&codes)[N], std::uint64_t seed,
                                                             std::uint64_t index0) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    codes[i] = static_cast<std::uint8_t>(quantize_value(s, p, v[i], stochastic(random_bits(seed, index0 + static_cast<std::uint64_t>(i)))));
}

// FiniteScale: the caller knows that p.scale is finite (integer formats: the finite-scale form without the test).
template <code_path P, bool FiniteScale = false, class F, int N>
__device__ __forceinline__ void fake_quantize_fragment_on(const scheme<F>& s, const group_params& p, const divisor& d,
                                                          float (&v)[N]) {
  if constexpr (F::is_integer) {
    // A finite scale: (q - z) * scale is finite or +-Inf, never NaN, so dequantize_int_q without its NaN select.
    // Otherwise dequantize_value of the code, from its integer (no masking and sign extension).
    if (FiniteScale || !qnum::detail::is_nonfinite(p.scale)) {
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] = qnum::detail::dequantize_int_q_finite_scale(s, p, quantize_int_on<P>(s, p, d, v[i]));
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] = qnum::detail::dequantize_int_q(s, p, quantize_int_on<P>(s, p, d, v[i]));
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = dequantize_value(s, p, quantize_on<P>(s, p, d, v[i]));
  }
}
template <class F, int N>
__device__ __forceinline__ void fake_quantize_fragment(const scheme<F>& s, const group_params& p, float (&v)[N],
                                                       float bound = no_bound()) {
  const divisor d = divisor_of(s, p);
  with_code_path(s, p, d, bound, [&](auto P) { fake_quantize_fragment_on<decltype(P)::value>(s, p, d, v); });
}
// FiniteScale: as fake_quantize_fragment_on's (the caller knows p.scale is finite; integer formats).
template <bool FiniteScale = false, class F, int N, class Path>
__device__ __forceinline__ void fake_quantize_fragment(const scheme<F>& s, const group_params& p, const divisor& d,
                                                       Path path, float (&v)[N]) {
  on_code_path(s, path, [&](auto P) { fake_quantize_fragment_on<decltype(P)::value, FiniteScale>(s, p, d, v); });
}

template <class F, int N>
__device__ __forceinline__ void dequantize_fragment(const scheme<F>& s, const group_params& p, const std::uint8_t (&codes)[N],
                                                    float (&out)[N]) {
  if constexpr (F::is_integer) {
    if (!qnum::detail::is_nonfinite(p.scale)) {
      // A finite scale: dequantize_value without its NaN select.
#pragma unroll
      for (int i = 0; i < N; ++i)
        out[i] = qnum::detail::dequantize_int_finite_scale(s, p, codes[i]);
      return;
    }
  }
  if constexpr (!F::is_integer && N % 2 == 0) {
    // Pairs of FP8 codes by the hardware conversion (exact; decode2_hw), then dequantize_value's product and
    // canonical NaN.
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      float a, b;
      decode2_hw<F>(codes[i], codes[i + 1], a, b);
      out[i] = qnum::detail::canonical_nan(qnum::detail::mul_rn(a, p.scale));
      out[i + 1] = qnum::detail::canonical_nan(qnum::detail::mul_rn(b, p.scale));
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = dequantize_value(s, p, codes[i]);
  }
}

// compressed-tensors pack-quantized word of 8 signed 4-bit codes (two's complement in the low nibble):
// nibble i = (q_i + 8) & 0xF, element 0 in the lowest nibble.
__device__ __forceinline__ std::uint32_t pack_int4x8(const std::uint8_t (&codes)[8]) {
  return qnum::detail::pack_int4x8_codes(codes);
}

struct merge_stats_op {
  // fast_merge with min and max: equal to merge() for statistics built by accumulate(), and it keeps the NaN of
  // an asymmetric scheme's fast statistics (fragment_stats), which merge() could drop.
  __device__ __forceinline__ group_stats operator()(const group_stats& a, const group_stats& b) const {
    return qnum::detail::fast_merge(a, b, true);
  }
};

template <int BLOCK>
struct block_stats {
  using reduce_t = cub::BlockReduce<group_stats, BLOCK>;
  struct storage {
    typename reduce_t::TempStorage cub;
    float bcast[3];
  };
  // Every thread of the block calls this (1-D block of BLOCK threads); every thread gets the merge.
  __device__ static group_stats reduce(storage& ts, group_stats st) {
    const group_stats r = reduce_t(ts.cub).Reduce(st, merge_stats_op{});
    if (threadIdx.x == 0) {
      ts.bcast[0] = r.amax;
      ts.bcast[1] = r.min;
      ts.bcast[2] = r.max;
    }
    __syncthreads();
    group_stats out;
    out.amax = ts.bcast[0];
    out.min = ts.bcast[1];
    out.max = ts.bcast[2];
    __syncthreads();  // storage may be reused at once
    return out;
  }
};

// ---------------------------------------------------------------------------------------------------
// Views of CUDA's 16-bit types as bit views.
inline matrix_view<const std::uint16_t> device_view(const __nv_bfloat16* p, std::int64_t rows, std::int64_t cols,
                                                    std::int64_t row_stride = -1) {
  return view(reinterpret_cast<const std::uint16_t*>(p), rows, cols, row_stride, dtype::bf16);
}
inline matrix_view<const std::uint16_t> device_view(const __half* p, std::int64_t rows, std::int64_t cols,
                                                    std::int64_t row_stride = -1) {
  return view(reinterpret_cast<const std::uint16_t*>(p), rows, cols, row_stride, dtype::fp16);
}
inline matrix_view<std::uint16_t> device_view(__nv_bfloat16* p, std::int64_t rows, std::int64_t cols,
                                              std::int64_t row_stride = -1) {
  return view(reinterpret_cast<std::uint16_t*>(p), rows, cols, row_stride, dtype::bf16);
}
inline matrix_view<std::uint16_t> device_view(__half* p, std::int64_t rows, std::int64_t cols,
                                              std::int64_t row_stride = -1) {
  return view(reinterpret_cast<std::uint16_t*>(p), rows, cols, row_stride, dtype::fp16);
}

namespace detail {

// ---- element types: float, qnum::bf16, qnum::fp16 (fixed at compile time) --------------------------
template <class D>
struct io;
template <>
struct io<float> {
  using storage = float;
  static constexpr int size = 4;
  __device__ __forceinline__ static float load(float v) { return v; }
  // v is a dequantized value: not NaN, or the canonical NaN already.
  __device__ __forceinline__ static float store(float v) { return v; }
};
template <>
struct io<qnum::bf16> {
  using storage = std::uint16_t;
  static constexpr int size = 2;
  __device__ __forceinline__ static float load(std::uint16_t h) { return __uint_as_float(static_cast<unsigned>(h) << 16); }
  // v is never a NaN other than the canonical one here (see detail::bf16_bits_rn): no NaN select.
  __device__ __forceinline__ static std::uint16_t store(float v) { return qnum::detail::bf16_bits_rn(v); }
  // lo | hi << 16 by one cvt.rn.bf16x2.f32: store()'s bits for non-NaN values (a NaN gives 0x7FFF).
  __device__ __forceinline__ static unsigned store2(float lo, float hi) { return bf16x2_bits_rn(lo, hi); }
};
template <>
struct io<qnum::fp16> {
  using storage = std::uint16_t;
  static constexpr int size = 2;
  __device__ __forceinline__ static float load(std::uint16_t h) { return __half2float(__ushort_as_half(h)); }  // exact
  // to_fp16: cvt.rn.f16.f32 (RNE, overflow to Inf) with to_fp16's NaN (the hardware's is 0x7FFF).
  __device__ __forceinline__ static std::uint16_t store(float v) {
    return qnum::detail::is_nan(v) ? std::uint16_t{0x7E00} : __half_as_ushort(__float2half_rn(v));
  }
  // lo | hi << 16 by one cvt.rn.f16x2.f32: store()'s bits for non-NaN values (a NaN gives 0x7FFF).
  __device__ __forceinline__ static unsigned store2(float lo, float hi) { return fp16x2_bits_rn(lo, hi); }
};
template <class D>
using storage_t = typename io<D>::storage;

template <class D>
struct vec {
  static constexpr int size = 16 / io<D>::size;  // elements per 16-byte load
};

// The 16-byte word `raw` of V = 16 / io<D>::size elements, widened to float (exact).
template <class D, int V>
__device__ __forceinline__ void widen_chunk(const ::uint4& raw, float (&v)[V]) {
  static_assert(V * io<D>::size == 16, "one 16-byte word");
  const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < V; ++i) {
    if constexpr (io<D>::size == 4) {
      v[i] = __uint_as_float(w[i]);
    } else if constexpr (std::is_same_v<D, qnum::bf16>) {
      v[i] = __uint_as_float(i % 2 ? (w[i / 2] & 0xFFFF0000u) : (w[i / 2] << 16));
    } else {
      v[i] = io<D>::load(static_cast<std::uint16_t>(w[i / 2] >> (16 * (i % 2))));
    }
  }
}

// Whether the kernels take statistics by raw_amax for elements of type D: bf16 from sm_80 on (max.bf16x2).
// Not fp16: its widening is a conversion instruction a element, and the tile kernel then held more
// registers and spilled (nvcc 13, sm_90).
template <class D>
__device__ __forceinline__ constexpr bool has_raw_amax() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return std::is_same_v<D, qnum::bf16>;
#else
  return false;
#endif
}
// The fast statistics' amax (fragment_stats of a symmetric or float scheme) of K 16-byte words of 16-bit
// elements, two elements a register: |x| by clearing the sign bits, then max.bf16x2 / max.f16x2 (a NaN
// operand gives the other operand, as fmaxf), one instruction per two elements; the larger half widened at
// the end. The same value as fragment_stats over the widened elements: a maximum is one of its operands.
template <class D, int K>
__device__ __forceinline__ float raw_amax(const ::uint4 (&raw)[K]) {
  unsigned m = 0u;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const unsigned w[4] = {raw[k].x, raw[k].y, raw[k].z, raw[k].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (std::is_same_v<D, qnum::bf16>) {
        asm("max.bf16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(w[i] & 0x7FFF7FFFu));
      } else {
        asm("max.f16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(w[i] & 0x7FFF7FFFu));
      }
    }
  }
#endif
  return fmaxf(io<D>::load(static_cast<std::uint16_t>(m)), io<D>::load(static_cast<std::uint16_t>(m >> 16)));
}

// One 16-byte store of w at p (16-byte aligned; a generic address: global, shared or local memory): st.v4.b32
// written out, since the compiler splits the vector store of store_chunk's 16-bit outputs (two ways of computing
// the words, see there) into four 4-byte stores (fp32 outputs keep the plain vector store, which it leaves whole).
__device__ __forceinline__ void store_v4(void* p, const unsigned (&w)[4]) {
  asm volatile("st.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}

__device__ __forceinline__ bool aligned(const void* p, unsigned bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1u)) == 0;
}

// n (0..V) elements from p into v[0..n), zeros after; one or two 16-byte loads when whole and `vec`.
template <class D, int V>
__device__ __forceinline__ void load_chunk(const storage_t<D>* p, int n, bool vec, float (&v)[V]) {
  constexpr int bytes = V * io<D>::size;
  if constexpr (bytes % 16 == 0) {
    if (vec && n == V) {
      constexpr int per = 16 / io<D>::size;
#pragma unroll
      for (int k = 0; k < bytes / 16; ++k) {
        float part[per];
        widen_chunk<D>(__ldg(reinterpret_cast<const ::uint4*>(p) + k), part);
#pragma unroll
        for (int i = 0; i < per; ++i) v[k * per + i] = part[i];
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = i < n ? io<D>::load(p[i]) : 0.0f;
}

// v[0..n) to p; 16-byte stores when whole and `vec`. v holds dequantized values (see io<D>::store). NoNaN: the
// caller knows that no v[i] is NaN (integer fake quantization with a finite scale), so 16-bit outputs skip the test.
template <class D, int V, bool NoNaN = false>
__device__ __forceinline__ void store_chunk(storage_t<D>* p, int n, bool vec, const float (&v)[V]) {
  constexpr int bytes = V * io<D>::size;
  if constexpr (bytes % 16 == 0) {
    if (vec && n == V) {
      constexpr int per = 16 / io<D>::size;
#pragma unroll
      for (int k = 0; k < bytes / 16; ++k) {
        unsigned w[4] = {0u, 0u, 0u, 0u};
        if constexpr (io<D>::size == 4) {
#pragma unroll
          for (int i = 0; i < per; ++i) w[i] = __float_as_uint(v[k * per + i]);
        } else {
          // Pairs by one conversion each (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32: RNE, overflow to Inf, the
          // same bits as io<D>::store but for a NaN, which the hardware writes as 0x7FFF): a NaN anywhere in
          // the chunk (one unordered test per pair) redoes the chunk by io<D>::store, any NaN canonical.
          bool nan = false;
#pragma unroll
          for (int i = 0; i < per / 2; ++i) {
            const float lo = v[k * per + 2 * i], hi = v[k * per + 2 * i + 1];
            w[i] = io<D>::store2(lo, hi);
            if (!NoNaN) nan |= !(lo == lo && hi == hi);
          }
          if (!NoNaN && nan) {
#pragma unroll
            for (int i = 0; i < per / 2; ++i)
              w[i] = static_cast<unsigned>(io<D>::store(qnum::detail::canonical_nan(v[k * per + 2 * i]))) |
                     (static_cast<unsigned>(io<D>::store(qnum::detail::canonical_nan(v[k * per + 2 * i + 1]))) << 16);
          }
        }
        if constexpr (io<D>::size == 4) reinterpret_cast<::uint4*>(p)[k] = make_uint4(w[0], w[1], w[2], w[3]);
        else store_v4(reinterpret_cast<::uint4*>(p) + k, w);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (i < n) p[i] = io<D>::store(v[i]);
}

// n (0..V) code bytes; one 4-, 8- or 16-byte store when whole and `vec`. Pairs: the codes were written two at a
// time (quantize_fragment of a float format: 16-bit pairs from encode2_hw), so the words are read as the bytes lie
// (one byte permutation a word from two pairs; the shifts and masks of single bytes cost three times that there,
// while for single integer codes they compile to the permutations already).
// V one-byte codes as V / 4 little-endian words at p, one vector store (p aligned to V bytes).
template <int V>
__device__ __forceinline__ void store_code_words(std::uint8_t* p, const unsigned (&w)[V / 4]) {
  static_assert(V == 4 || V == 8 || V == 16, "4, 8 or 16 codes");
  if constexpr (V == 4) *reinterpret_cast<unsigned*>(p) = w[0];
  else if constexpr (V == 8) *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  else *reinterpret_cast<::uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}
template <int V, bool Pairs = false>
__device__ __forceinline__ void store_codes(std::uint8_t* p, int n, bool vec, const std::uint8_t (&c)[V]) {
  if constexpr (V == 4 || V == 8 || V == 16) {
    if (vec && n == V) {
      unsigned w[V / 4];
      if constexpr (Pairs) {
        memcpy(w, c, V);  // code i in byte i % 4 of word i / 4 (little-endian)
      } else {
#pragma unroll
        for (int k = 0; k < V / 4; ++k)
          w[k] = static_cast<unsigned>(c[4 * k]) | (static_cast<unsigned>(c[4 * k + 1]) << 8) |
                 (static_cast<unsigned>(c[4 * k + 2]) << 16) | (static_cast<unsigned>(c[4 * k + 3]) << 24);
      }
      store_code_words<V>(p, w);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (i < n) p[i] = c[i];
}

// n (0..V) code bytes from p, zeros after; one load when whole and `vec`.
template <int V>
__device__ __forceinline__ void load_codes(const std::uint8_t* p, int n, bool vec, std::uint8_t (&c)[V]) {
  static_assert(V == 4 || V == 8 || V == 16, "4, 8 or 16 codes");
  if (vec && n == V) {
    unsigned w[V / 4];
    if constexpr (V == 4) {
      w[0] = *reinterpret_cast<const unsigned*>(p);
    } else if constexpr (V == 8) {
      const uint2 r = *reinterpret_cast<const uint2*>(p);
      w[0] = r.x;
      w[1] = r.y;
    } else {
      const ::uint4 r = *reinterpret_cast<const ::uint4*>(p);
      w[0] = r.x;
      w[1] = r.y;
      w[2] = r.z;
      w[3] = r.w;
    }
#pragma unroll
    for (int i = 0; i < V; ++i) c[i] = static_cast<std::uint8_t>(w[i / 4] >> (8 * (i % 4)));
    return;
  }
#pragma unroll
  for (int i = 0; i < V; ++i) c[i] = i < n ? p[i] : std::uint8_t{0};
}

enum class emit : int { codes, fake, packed };

// Everything a kernel needs (by value) but the scheme. In/Out: float, qnum::bf16, qnum::fp16.
template <class In, class Out>
struct job_fields {
  const storage_t<In>* in = nullptr;
  std::int64_t rows = 0, cols = 0, in_stride = 0;
  std::int64_t gr = 1, gc = 1, nr = 0, nc = 0;
  std::uint8_t* codes = nullptr;            // emit::codes
  std::int64_t codes_stride = 0;
  storage_t<Out>* out = nullptr;            // emit::fake
  std::int64_t out_stride = 0;
  std::uint32_t* packed = nullptr;          // emit::packed
  std::int64_t packed_stride = 0;
  void* scales = nullptr;                   // codes, packed (elements of the scheme's storage)
  std::int64_t scales_stride = 0;
  std::int32_t* zeros = nullptr;            // asymmetric
  std::int64_t zeros_stride = 0;
  std::uint64_t seed = 0;                   // stochastic rounding: element (row0 + r, c) of the tensor
  std::int64_t row0 = 0;
  bool stochastic = false;                  // run-time schemes only (see stochastic_job)
  float outer = 0.0f;
  const std::uint32_t* tensor_stats = nullptr;  // per-tensor path
  bool vec_in = false, vec_out = false;      // every whole chunk 16-byte (in/out) and V-byte (codes) aligned
  std::uint32_t groups = 0;                  // groups in this launch (<= 2^30)
  int lanes_log2 = 0;                        // rows_kernel: log2 of the lanes per group
  qnum::detail::fast_div div_nc;                          // flat group index -> (row of groups, group column)
  std::uint32_t tiles = 0;                   // rows_tile_kernel: tiles in this launch
  qnum::detail::fast_div div_tiles;          // tile index -> row (the divisor: tiles per row)
  int gc_log2 = 0;                           // tile path: log2 of the group width (a power of two there)
  qnum::detail::fast_div div_cpr;            // block_kernel: chunk slot -> group row (chunks per group row)
};
// The job of a kernel: the fields and a scheme holder Sch.
template <class Sch, class In, class Out>
struct job : job_fields<In, Out> {
  Sch sch;
};

template <class S>
__device__ __forceinline__ void write_scale_code(const S& s, void* scales, std::int64_t k, std::uint32_t code) {
  qnum::detail::set_scale_code(scales, dtype_bytes(s.store), k, code);
}
template <class S>
__device__ __forceinline__ std::uint32_t read_scale_code(const S& s, const void* scales, std::int64_t k) {
  return qnum::detail::scale_code_at(scales, dtype_bytes(s.store), k);
}

template <class Sch, class In, class Out, class S>
__device__ __forceinline__ void write_group_params(const job<Sch, In, Out>& j, const S& s, std::int64_t bi, std::int64_t bj,
                                                   const group_params& p) {
  write_scale_code(s, j.scales, bi * j.scales_stride + bj, p.scale_code);
  if (s.kind == scheme_kind::asymmetric) j.zeros[bi * j.zeros_stride + bj] = p.zero;
}

// A group's parameters under the job's outer scale (the one-scale call where there is none, so such jobs
// never evaluate sanitize_outer).
template <class Sch, class In, class Out, class S>
__device__ __forceinline__ group_params job_params(const job<Sch, In, Out>& j, const S& s, const group_stats& st) {
  return j.outer > 0.0f ? compute_params(s, st, j.outer) : compute_params(s, st);
}
// The statistics of a group held in registers (v: this thread's share, float[N] or float[K][N]) that
// reduce() merges over the group's threads: the fast statistics, recomputed with fragment_stats_exact when
// they met an infinite element (the test is uniform over the group). Every thread of the group calls it.
// bound: the merged fast amax when no element is infinite (every non-NaN element's magnitude is at most
// that: quantize_fragment's bound), else +Inf.
// any: how the group's threads decide to take the recomputation; the default (a thread's own test, uniform
// over its group) suits reduce() over a sub-group mask. A reduce() that shuffles over the whole warp needs a
// warp-uniform decision: pass any = __any_sync over the warp (each thread still keeps the fast statistics
// unless its own group met an infinite element; both give the same finite result).
struct own_test {
  __device__ __forceinline__ bool operator()(bool b) const { return b; }
};
struct warp_any {
  __device__ __forceinline__ bool operator()(bool b) const { return __any_sync(0xFFFFFFFFu, b); }
};
template <class Any = own_test, class Frag, class Reduce>
__device__ __forceinline__ group_stats exact_if_needed(const group_stats& st, const Frag& v, Reduce&& reduce) {
  const bool need = stats_need_exact(st);
  if (!Any{}(need)) return st;
  const group_stats e = reduce(fragment_stats_exact(v));  // an infinite element (bound Inf)
  return need ? e : st;
}
template <class Any = own_test, class S, class Frag, class Reduce>
__device__ __forceinline__ group_stats fragment_group_stats(const S& s, const Frag& v, Reduce&& reduce, float& bound) {
  const group_stats st = reduce(fragment_stats(s, v));
  bound = st.amax;
  return exact_if_needed<Any>(st, v, reduce);
}
template <class S, class Frag, class Reduce>
__device__ __forceinline__ group_stats fragment_group_stats(const S& s, const Frag& v, Reduce&& reduce) {
  float bound;
  return fragment_group_stats(s, v, reduce, bound);
}

// fragment_stats of a fragment v whose K 16-byte words `raw` (16-bit elements) were widened into v: for schemes
// that need only amax, from the raw words (raw_amax: half the instructions). The same statistics.
template <class In, class S, int K, class Frag>
__device__ __forceinline__ group_stats raw_fast_stats(const S& s, const ::uint4 (&raw)[K], const Frag& v) {
  if constexpr (has_raw_amax<In>()) {
    if (!needs_min_max(s)) {
      group_stats f;
      f.amax = raw_amax<In>(raw);
      return f;
    }
  }
  return fragment_stats(s, v);
}
// fragment_group_stats of such a fragment, from raw_fast_stats (recomputed from v by fragment_stats_exact when
// the merged result met an infinite element). bound as fragment_group_stats gives it.
template <class In, class Any = own_test, class S, int K, class Frag, class Reduce>
__device__ __forceinline__ group_stats raw_group_stats(const S& s, const ::uint4 (&raw)[K], const Frag& v, Reduce&& reduce,
                                                       float& bound) {
  const group_stats st = reduce(raw_fast_stats<In>(s, raw, v));
  bound = st.amax;
  return exact_if_needed<Any>(st, v, reduce);
}

// Whether a job rounds stochastically: a run-time flag of the run-time scheme's kernels only (a fixed
// scheme's stochastic launches run those kernels), so fixed-scheme kernels hold no stochastic code.
template <class Sch, class In, class Out>
__device__ __forceinline__ bool stochastic_job(const job<Sch, In, Out>& j) {
  if constexpr (Sch::is_static) {
    return false;
  } else {
    return j.stochastic;
  }
}

// Where an emit writes the chunk that starts at element c of row r: its codes (emit::codes), its packed word
// (emit::packed) or its fake-quantized elements (emit::fake).
template <emit E, class Out>
using emit_ptr_t = std::conditional_t<E == emit::packed, std::uint32_t*,
                                      std::conditional_t<E == emit::codes, std::uint8_t*, storage_t<Out>*>>;
template <emit E, class Sch, class In, class Out>
__device__ __forceinline__ emit_ptr_t<E, Out> emit_ptr(const job<Sch, In, Out>& j, std::int64_t r, std::int64_t c) {
  if constexpr (E == emit::packed) return j.packed + r * j.packed_stride + c / 8;
  else if constexpr (E == emit::codes) return j.codes + r * j.codes_stride + c;
  else return j.out + r * j.out_stride + c;
}
// Store the chunk of n elements of values v at dst() (emit_ptr, asked for where it is stored): codes(cb) gives
// v's codes (emit::codes, packed), fake(v) replaces v by its fake-quantized values (emit::fake).
template <emit E, bool Full, bool NoNaN = false, class Sch, class In, class Out, int V, class Dst, class Codes, class Fake>
__device__ __forceinline__ void store_emitted(const job<Sch, In, Out>& j, Dst&& dst, int n, float (&v)[V],
                                              Codes&& codes, Fake&& fake) {
  if constexpr (Full) n = V;  // a whole, aligned chunk: the vector stores below without a test
  if constexpr (E == emit::packed) {
    static_assert(V == 8, "W4A16 packing: 8 elements per word");
    std::uint8_t cb[V];
    codes(cb);
    std::uint32_t word = pack_int4x8(cb);
    if (!Full && n < V) word &= (1u << (4 * n)) - 1u;  // unused high nibbles of the last word: 0
    *dst() = word;
  } else if constexpr (E == emit::codes) {
    std::uint8_t cb[V];
    codes(cb);
    store_codes<V, !Sch::format::is_integer>(dst(), n, Full || j.vec_out, cb);
  } else {
    fake(v);
    store_chunk<Out, V, NoNaN>(dst(), n, Full || j.vec_out, v);
  }
}

// Emit the chunk of n elements at (r, c) of values v with parameters p.
// bound: as quantize_fragment's (the group's finite fast amax, else +Inf).
template <emit E, bool Full = false, class Sch, class In, class Out, class S, int V>
__device__ __forceinline__ void emit_chunk(const job<Sch, In, Out>& j, const S& s, const group_params& p, std::int64_t r,
                                           std::int64_t c, int n, float (&v)[V], float bound = no_bound()) {
  const std::uint64_t idx0 = static_cast<std::uint64_t>((j.row0 + r) * j.cols + c);
  store_emitted<E, Full>(
      j, [&] { return emit_ptr<E>(j, r, c); }, n, v,
      [&](std::uint8_t (&cb)[V]) {
        if (stochastic_job(j)) quantize_fragment_stochastic(s, p, v, cb, j.seed, idx0);
        else quantize_fragment(s, p, v, cb, bound);
      },
      [&](float (&w)[V]) {
        if (stochastic_job(j)) {
#pragma unroll
          for (int i = 0; i < V; ++i)
            w[i] = dequantize_value(s, p, quantize_value(s, p, w[i], stochastic(random_bits(j.seed, idx0 + static_cast<std::uint64_t>(i)))));
        } else {
          fake_quantize_fragment(s, p, w, bound);
        }
      });
}
// The same for a whole chunk of a fixed-scheme job (nearest even) at dst (emit_ptr) with the group's divisor d
// and code path given (divisor_of(s, p), code_path_of(s, p, d, bound); a code_path or a compile-time one).
// FiniteScale: the caller knows p.scale is finite (fake quantization of an integer format then skips the scale test
// and the store's NaN test).
template <emit E, bool FiniteScale = false, class Sch, class In, class Out, class S, int V, class Path>
__device__ __forceinline__ void emit_chunk_on(const job<Sch, In, Out>& j, const S& s, const group_params& p,
                                              const divisor& d, Path path, emit_ptr_t<E, Out> dst, float (&v)[V]) {
  static_assert(Sch::is_static, "run-time schemes may round stochastically: emit_chunk");
  if constexpr (E == emit::packed) {
    // The word from the integers (detail::pack_int4x8_ints: pack_int4x8's word of their codes, without a mask
    // and a merge a code).
    static_assert(V == 8, "W4A16 packing: 8 elements per word");
    int q[V];
    quantize_int_fragment(s, p, d, path, v, q);
    *dst = qnum::detail::pack_int4x8_ints(q);
    return;
  } else if constexpr (E == emit::codes && Sch::format::is_integer && Sch::format::bits < 8 && (V == 4 || V == 8 || V == 16)) {
    // Codes of fewer than 8 bits: the low bytes of four integers gathered by byte permutations, then one mask a
    // word (the code is q & (2^bits - 1)), instead of a mask and a merge a code. The same bytes as store_codes.
    int q[V];
    quantize_int_fragment(s, p, d, path, v, q);
    constexpr unsigned mask = ((1u << Sch::format::bits) - 1u) * 0x01010101u;
    unsigned w[V / 4];
#pragma unroll
    for (int k = 0; k < V / 4; ++k) {
      const auto u = [&](int i) { return static_cast<unsigned>(q[4 * k + i]); };
      w[k] = __byte_perm(__byte_perm(u(0), u(1), 0x0040u), __byte_perm(u(2), u(3), 0x0040u), 0x5410u) & mask;
    }
    store_code_words<V>(dst, w);
    return;
  }
  // An integer format's fake-quantized value (q - z) * scale with a finite scale is never NaN: no NaN test at the store.
  constexpr bool no_nan = FiniteScale && Sch::format::is_integer;
  store_emitted<E, true, no_nan>(
      j, [&] { return dst; }, V, v, [&](std::uint8_t (&cb)[V]) { quantize_fragment(s, p, d, path, v, cb); },
      [&](float (&w)[V]) { fake_quantize_fragment<FiniteScale>(s, p, d, path, w); });
}

// Chunks each lane of rows_kernel holds in registers: a group of up to L * rows_chunks * V elements.
constexpr int rows_chunks = 4;
// Most lanes a group of the tile path spans: it takes the groups rows_kernel would give one or two lanes
// (lanes_for(gc, V) <= 2: at most 2 * rows_chunks chunks of V elements).
constexpr int tile_max_lanes = 2 * rows_chunks;

// One group of rows_kernel: load, statistics, parameters, emit. Full: the group is exactly L * K chunks of
// V elements, all 16-byte aligned (in and out): no per-chunk tests, every access a vector.
// The whole warp calls it together (every lane, the same Full): the reductions are full-warp shuffles. A lane
// that is not `active` (its sub-group has no group left in the launch) runs a valid group's loads and
// reductions and stores nothing.
template <bool Full, emit E, int K, int V, class Sch, class In, class Out, class S>
__device__ __forceinline__ void rows_group(const job<Sch, In, Out>& j, const S& s, int L, unsigned sub, bool active,
                                           std::int64_t r, std::int64_t bj, std::int64_t c0, std::int64_t c1) {
  const storage_t<In>* row = j.in + r * j.in_stride;
  float v[K][V];
  int n[K];
  // Fixed schemes: the steps of width L only (warp_subgroup_reduce_switch); the run-time scheme's kernel keeps the
  // full butterfly (the switch's copies cost it a spill).
  const auto reduce = [&](const group_stats& x) {
    if constexpr (Sch::is_static) return warp_subgroup_reduce_switch(s, x, L);
    else return warp_subgroup_reduce<1, 32>(s, x, L);
  };
  group_stats st;
  float bound;
  // A whole group: chunk k of the lane at k * L * V elements from its first (32-bit offsets from one pointer).
  const int step = L * V;
  const std::int64_t c_first = c0 + static_cast<std::int64_t>(sub) * V;
  if constexpr (Full && V * io<In>::size == 16) {  // one 16-byte word a chunk, kept for raw_group_stats
    const storage_t<In>* first = row + c_first;
    ::uint4 raw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      n[k] = V;
      raw[k] = __ldg(reinterpret_cast<const ::uint4*>(first + k * step));
      widen_chunk<In>(raw[k], v[k]);
    }
    st = raw_group_stats<In, warp_any>(s, raw, v, reduce, bound);
  } else {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = c0 + static_cast<std::int64_t>(sub + static_cast<unsigned>(k * L)) * V;
      n[k] = Full ? V : (c < c1 ? (c1 - c < V ? static_cast<int>(c1 - c) : V) : 0);
      load_chunk<In, V>(row + c, n[k], Full || j.vec_in, v[k]);  // n == 0: zeros, nothing read
    }
    st = fragment_group_stats<warp_any>(s, v, reduce, bound);
  }
  if constexpr (Full) {
    // Fake quantization of an integer format: the inactive lanes go on to the vote below (a valid group's
    // parameters) and store nothing.
    constexpr bool fake_int = E == emit::fake && Sch::format::is_integer;
    if (!fake_int && !active) return;
    const group_params p = job_params(j, s, st);
    if (active && E != emit::fake && sub == 0) write_group_params(j, s, r, bj, p);
    const emit_ptr_t<E, Out> first = emit_ptr<E>(j, r, c_first);
    // The divisor and code path once for the lane's chunks (group_code_path: quantize_fragment's choice, or for an
    // asymmetric scheme's group without NaN whose ends need no clamp, unclamped). Fake quantization of an integer
    // format: where every group of the warp has the same path and a finite scale, which is the rule, the chunks
    // take the path as a compile-time choice and skip the scale and NaN tests of the store. Codes and words keep
    // the path as a value: the same vote there measured 0.1-0.2 instructions an element heavier.
    const divisor d = divisor_of(s, p);
    const code_path path = group_code_path(s, p, d, st, bound);
    const auto chunks = [&](auto path_k, auto finite) {
#pragma unroll
      for (int k = 0; k < K; ++k)
        emit_chunk_on<E, decltype(finite)::value>(j, s, p, d, path_k, first + k * (E == emit::packed ? step / 8 : step), v[k]);
    };
    if constexpr (fake_int) {
      code_path common;
      const bool uniform = warp_common_path(path_key(path, !qnum::detail::is_nonfinite(p.scale)), common);
      if (!active) return;
      if (uniform) on_code_path(s, common, [&](auto P) { chunks(P, std::true_type{}); });
      else chunks(path, std::false_type{});
    } else {
      chunks(path, std::false_type{});
    }
  } else {
    if (!active) return;
    const group_params p = job_params(j, s, st);
    if (E != emit::fake && sub == 0) write_group_params(j, s, r, bj, p);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = c0 + static_cast<std::int64_t>(sub + static_cast<unsigned>(k * L)) * V;
      if (n[k] > 0) emit_chunk<E>(j, s, p, r, c, n[k], v[k], bound);
    }
  }
}

// Lane src's parameters (every lane of the warp calls it), the fields an emit reads: the dequantization scale
// when Dequant (fake quantization), the divisor's code scale or the multiplier inv (the scheme's x_by), the
// zero point of an asymmetric scheme. The others keep group_params' defaults (scale_code: the lane that
// computed the parameters writes it).
template <bool Dequant, class S>
__device__ __forceinline__ group_params shfl_params(const S& s, const group_params& p, unsigned src) {
  group_params q;
  const int l = static_cast<int>(src);
  if (Dequant) q.scale = __shfl_sync(0xFFFFFFFFu, p.scale, l);
  if (s.x_by == scale_op::multiply) q.inv = __shfl_sync(0xFFFFFFFFu, p.inv, l);
  else q.code_scale = __shfl_sync(0xFFFFFFFFu, p.code_scale, l);
  if (s.kind == scheme_kind::asymmetric) q.zero = __shfl_sync(0xFFFFFFFFu, p.zero, l);
  return q;
}

// The tile path of rows_kernel, for group widths gc that divide 32 * V (so a power of two): a warp takes a
// tile of rows_chunks * 32 * V consecutive elements of one row, chunk k of lane i at tile element
// (k * 32 + i) * V, so that each load and store instruction of the warp covers 32 consecutive chunks. The
// gc / V lanes that hold one chunk row of a group reduce its statistics; a group never spans two chunk rows.
// Needs whole chunks (cols % V == 0) and the vector alignment of the job; chunks past the row's end read
// nothing and count as zeros (exact: zeros change no statistic), and emit nothing.
// Whole: the tile lies inside the row (left == K * 32 * V): no chunk tests (the same code with them folded).
template <emit E, bool Shared, bool Whole, int K, int V, class Sch, class In, class Out, class S>
__device__ __forceinline__ void rows_tile(const job<Sch, In, Out>& j, const S& s, unsigned lane, std::int64_t r,
                                          std::int64_t t0, int left) {
  const int L = 1 << j.lanes_log2;
  const storage_t<In>* tile = j.in + r * j.in_stride + t0;
  // Chunk k of this lane starts at tile element off(k) (32-bit: a tile is K * 32 * V elements); it is in the
  // row when off(k) < left, the tile's elements inside the row.
  const auto off = [&](int k) { return (k * 32 + static_cast<int>(lane)) * V; };
  if constexpr (Whole) left = K * 32 * V;
  float v[K][V];
  bool in_row[K];
  // 16-bit elements: one 16-byte word a chunk, kept for raw_group_stats, and the group's bound passed on (a
  // chunk of 8 elements pays for the per-group tests; fp32 chunks of 4 measured heavier with them).
  constexpr bool one_word = V * io<In>::size == 16 && io<In>::size == 2;
  [[maybe_unused]] ::uint4 raw[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    in_row[k] = Whole || off(k) < left;
    const storage_t<In>* x = tile + off(k);
    if constexpr (one_word) {
      raw[k] = in_row[k] ? __ldg(reinterpret_cast<const ::uint4*>(x)) : make_uint4(0u, 0u, 0u, 0u);
      widen_chunk<In>(raw[k], v[k]);
    } else {
      load_chunk<In, V>(x, in_row[k] ? V : 0, true, v[k]);
    }
  }
  // The whole warp runs every reduction together (full-warp shuffles, unrolled; L is at most tile_max_lanes, the
  // launcher's bound, and at least K where Shared, which the launcher picks for L >= K), so the recomputation
  // after an infinite element is decided over the warp.
  constexpr int LMin = Shared ? K : 1, LMax = Shared ? tile_max_lanes : K / 2;
  const unsigned sub = lane & static_cast<unsigned>(L - 1);
  if constexpr (Shared) {
    // Groups of L >= K lanes: one transposed reduction leaves lane sub with the statistics of chunk sub % K's
    // group (warp_transpose_reduce); the lane computes that group's parameters only, writes them (sub < K),
    // and takes those of chunk k from the group's lane k. One compute_params a lane instead of K; the same bits.
    group_stats st[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if constexpr (one_word) {
        const ::uint4 word[1] = {raw[k]};
        st[k] = raw_fast_stats<In>(s, word, v[k]);
      } else {
        st[k] = fragment_stats(s, v[k]);
      }
    }
    const group_stats fast = warp_transpose_reduce<K, LMin, LMax>(s, st, lane, L);
    group_stats mine = fast;
    const bool need = stats_need_exact(fast);  // an infinite element: accumulate() over the group instead
    if (__any_sync(0xFFFFFFFFu, need)) {
#pragma unroll
      for (int k = 0; k < K; ++k) st[k] = fragment_stats_exact(v[k]);
      const group_stats e = warp_transpose_reduce<K, LMin, LMax>(s, st, lane, L);
      if (need) mine = e;
    }
    const float bound_m = fast.amax;  // what fragment_group_stats gives as the bound
    const unsigned m = sub & static_cast<unsigned>(K - 1), first = lane - sub;  // first: the group's lane 0
    const emit_ptr_t<E, Out> dst = emit_ptr<E>(j, r, t0);  // the tile's start
    const group_params pm = job_params(j, s, mine);
    const int om = static_cast<int>(m * 32u + first) * V;  // chunk m's group start in the tile
    if (E != emit::fake && sub < static_cast<unsigned>(K) && om < left) write_group_params(j, s, r, (t0 + om) >> j.gc_log2, pm);
    // A dividing scheme's divisor too (one reciprocal a lane instead of K), pinned to registers: the compiler would
    // otherwise recompute the reciprocal next to each shuffle. Dividing schemes and fake quantization of integer
    // formats choose the code path once for the warp: each lane chooses its group's (group_code_path from the
    // group's fast statistics: an asymmetric group without NaN whose ends need no clamp takes the unclamped path,
    // no clamp and no NaN select an element; otherwise code_path_of, as quantize_fragment would), and where the warp's
    // groups agree (for fake quantization: and every scale is finite), which is the rule, every chunk takes that
    // path as a compile-time choice (no shuffle and no indirect branch a chunk; no scale and NaN tests at the fake
    // store); where they differ, the division, which is valid for every group. The same codes either way (every
    // path gives the definition's). Other x * inv schemes choose a chunk's path from its group's bound, two
    // comparisons (taken from lane k with the parameters where the bound can matter): a vote measured heavier.
    const bool divides = s.x_by == scale_op::divide;
    constexpr bool fake_int = E == emit::fake && Sch::format::is_integer;
    const bool vote = divides || fake_int;
    float ym = 0.0f;
    int path_m = 0;  // path_key of the lane's group
    if (vote) {
      const divisor dm = divisor_of(s, pm);
      if (divides) ym = dm.y;
      path_m = path_key(group_code_path(s, pm, dm, fast, one_word ? bound_m : no_bound()), !(fake_int && qnum::detail::is_nonfinite(pm.scale)));
      asm volatile("" : "+f"(ym), "+r"(path_m));
    }
    unsigned src0 = first;
    asm volatile("" : "+r"(src0));  // the group's first lane, kept (not recomputed from L for each chunk)
    // path_for(p, d, src): chunk's path (a code_path or a compile-time one), asked by every lane
    const auto chunks = [&](auto path_for, auto finite) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const unsigned src = src0 + static_cast<unsigned>(k);
        const group_params p = shfl_params<E == emit::fake>(s, pm, src);  // every lane
        divisor d;
        if (divides) d = make_divisor_from(p.code_scale, __shfl_sync(0xFFFFFFFFu, ym, static_cast<int>(src)));
        const auto path = path_for(p, d, src);
        if (!in_row[k]) continue;
        // codes and packed words from the tile's start; fake quantization's elements from the row (measured lighter)
        emit_chunk_on<E, decltype(finite)::value>(j, s, p, d, path, E == emit::fake ? emit_ptr<E>(j, r, t0 + off(k)) : dst + (E == emit::packed ? off(k) / 8 : off(k)), v[k]);
      }
    };
    if (vote) {
      code_path common;
      if (warp_common_path(path_m, common)) {
        on_code_path(s, common, [&](auto P) {
          chunks([](const group_params&, const divisor&, unsigned) { return decltype(P){}; }, std::integral_constant<bool, fake_int>{});
        });
      } else {
        chunks([](const group_params&, const divisor&, unsigned) { return std::integral_constant<code_path, code_path::division>{}; },
               std::false_type{});
      }
    } else {
      // the bound only where it can choose the path (a fixed scheme's test folds: no shuffle otherwise)
      const bool by_bound = one_word && bound_can_skip_clamp(s);
      chunks([&](const group_params& p, const divisor& d, unsigned src) {
        return code_path_of(s, p, d, by_bound ? __shfl_sync(0xFFFFFFFFu, bound_m, static_cast<int>(src)) : no_bound());
      }, std::false_type{});
    }
  } else {
    const auto reduce = [&](const group_stats& x) { return warp_subgroup_reduce<LMin, LMax>(s, x, L); };
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = t0 + off(k);
      float bound;
      group_stats st;
      if constexpr (one_word) {
        const ::uint4 word[1] = {raw[k]};
        st = raw_group_stats<In, warp_any>(s, word, v[k], reduce, bound);
      } else {
        st = fragment_group_stats<warp_any>(s, v[k], reduce, bound);
      }
      if (!in_row[k]) continue;
      const group_params p = job_params(j, s, st);
      if (E != emit::fake && sub == 0u) write_group_params(j, s, r, c >> j.gc_log2, p);
      emit_chunk<E, true>(j, s, p, r, c, V, v[k], one_word ? bound : no_bound());
    }
  }
}

// 1xG groups along rows, held in registers: L lanes per group, rows_chunks chunks of V elements per lane
// (chunk k of lane i starts at element (i + k * L) * V of the group, so a warp's loads of chunk k are
// contiguous); grid-stride over groups (32-bit). One read of the input, statistics in registers.
template <emit E, class Sch, class In, class Out>
__global__ void __launch_bounds__(256) rows_kernel(const job<Sch, In, Out> j) {
  constexpr int V = E == emit::packed ? 8 : vec<In>::size;
  constexpr int K = rows_chunks;
  const auto s = j.sch.get();
  const int L = 1 << j.lanes_log2;  // lanes per group (a run-time value: one kernel for every group width)
  const unsigned lane = threadIdx.x & 31u;
  const unsigned sub = threadIdx.x & static_cast<unsigned>(L - 1);
  const unsigned per_block = 256u >> j.lanes_log2, per_warp = 32u >> j.lanes_log2;
  const bool full_shape = j.vec_in && (E == emit::packed || j.vec_out) && j.gc == static_cast<std::int64_t>(L) * K * V;
  (void)full_shape;
  // The warp's 32 / L groups (group g of lane threadIdx.x: warp * 32 / L + lane / L), the loop run by the whole
  // warp together; a sub-group past the last group redoes the last one's loads and stores nothing.
  for (std::uint32_t gw = blockIdx.x * per_block + (threadIdx.x >> 5) * per_warp; gw < j.groups; gw += gridDim.x * per_block) {
    const std::uint32_t own = gw + (lane >> j.lanes_log2);
    const bool active = own < j.groups;
    const std::uint32_t g = active ? own : j.groups - 1u;
    const std::uint32_t r32 = j.div_nc.div(g);
    const std::int64_t r = r32, bj = g - r32 * static_cast<std::uint32_t>(j.nc);
    const std::int64_t c0 = bj * j.gc;
    if constexpr (Sch::is_static) {  // the fast path: compile-time scheme (always nearest-even)
      if (__all_sync(0xFFFFFFFFu, full_shape && c0 + j.gc <= j.cols)) {  // every group of the warp whole
        rows_group<true, E, K, V>(j, s, L, sub, active, r, bj, c0, c0 + j.gc);
        continue;
      }
    }
    rows_group<false, E, K, V>(j, s, L, sub, active, r, bj, c0, c0 + j.gc < j.cols ? c0 + j.gc : j.cols);
  }
}

// The tile path as a kernel of its own (launched for fixed schemes only, see launch_rows_any): one warp per
// tile, grid-stride over the launch's tiles.
template <emit E, bool Shared, class Sch, class In, class Out>
__global__ void __launch_bounds__(256) rows_tile_kernel(const job<Sch, In, Out> j) {
  constexpr int V = E == emit::packed ? 8 : vec<In>::size;
  constexpr int K = rows_chunks;
  constexpr std::uint32_t warps_per_block = 256u / 32u;
  const auto s = j.sch.get();
  const unsigned lane = threadIdx.x & 31u;
  for (std::uint32_t t = blockIdx.x * warps_per_block + (threadIdx.x >> 5); t < j.tiles; t += gridDim.x * warps_per_block) {
    const std::uint32_t r32 = j.div_tiles.div(t);
    const std::int64_t t0 = static_cast<std::int64_t>(t - r32 * j.div_tiles.d) * (K * 32 * V), left = j.cols - t0;
    // Whole tiles without the chunk tests (the warp's tile: uniform), but for asymmetric schemes: their whole-tile
    // copy took 80 registers instead of 64 (3 blocks an SM instead of 4) for 0.3 instructions an element.
    if (!needs_min_max(s) && left >= K * 32 * V) rows_tile<E, Shared, true, K, V>(j, s, lane, r32, t0, K * 32 * V);
    else rows_tile<E, Shared, false, K, V>(j, s, lane, r32, t0, left < K * 32 * V ? static_cast<int>(left) : K * 32 * V);
  }
}

constexpr int block_threads = 256;

// Group g of a block-kernel launch: its grid position, first row and column, column end, and chunk slots
// (rows of the group x chunks per group row; < 2^31, the launcher checks).
struct group_box {
  std::int64_t bi, bj, r0, c0, c1;
  std::uint32_t nch;
};
template <class Sch, class In, class Out>
__device__ __forceinline__ group_box box_of(const job<Sch, In, Out>& j, std::uint32_t g) {
  group_box b;
  const std::uint32_t bi32 = j.div_nc.div(g);
  b.bi = bi32;
  b.bj = g - bi32 * static_cast<std::uint32_t>(j.nc);
  b.r0 = b.bi * j.gr;
  b.c0 = b.bj * j.gc;
  const std::int64_t r1 = b.r0 + j.gr < j.rows ? b.r0 + j.gr : j.rows;
  b.c1 = b.c0 + j.gc < j.cols ? b.c0 + j.gc : j.cols;
  b.nch = static_cast<std::uint32_t>(r1 - b.r0) * j.div_cpr.d;
  return b;
}

// Chunk slot ch of group b: its row r, column c and element count (0: past the group's end, nothing read;
// r, c then the group's origin).
template <int V, class Sch, class In, class Out>
__device__ __forceinline__ int block_slot(const job<Sch, In, Out>& j, const group_box& b, std::uint32_t ch, std::int64_t& r,
                                          std::int64_t& c) {
  const std::uint32_t ri = j.div_cpr.div(ch);
  r = b.r0 + ri;
  c = b.c0 + static_cast<std::int64_t>(ch - ri * j.div_cpr.d) * V;
  if (ch >= b.nch || c >= b.c1) {
    r = b.r0;
    c = b.c0;
    return 0;
  }
  return b.c1 - c < V ? static_cast<int>(b.c1 - c) : V;
}

// The statistics of the chunks a block's threads visit, the same in every thread (for_chunks(fn) calls fn(v) for
// each of this thread's chunks of V values; every thread of the block calls this): the fast statistics
// (detail::fast_accumulate, min and max only where min_max), block-reduced, and where they met an infinite (or,
// with min_max, NaN) element, accumulate() over the same chunks again: accumulate()'s result over them all.
template <int V, class ForChunks>
__device__ __forceinline__ group_stats block_chunk_stats(typename block_stats<block_threads>::storage& ts, bool min_max,
                                                         ForChunks&& for_chunks) {
  group_stats st;
  for_chunks([&](const float (&v)[V]) {
#pragma unroll
    for (int i = 0; i < V; ++i) qnum::detail::fast_accumulate(st, v[i], min_max);
  });
  qnum::detail::fast_stats_finish(st, min_max);
  st = block_stats<block_threads>::reduce(ts, st);
  if (stats_need_exact(st)) {  // block-uniform: recompute, ignoring the infinite and NaN elements
    st = group_stats{};
    for_chunks([&](const float (&v)[V]) {
#pragma unroll
      for (int i = 0; i < V; ++i) accumulate(st, v[i]);
    });
    st = block_stats<block_threads>::reduce(ts, st);
  }
  return st;
}

// A group of up to block_threads * 64 elements in registers, one block per group: one read. Launched for
// fixed schemes with fp32 input and groups of more than half that (launch_block): measured on an H100,
// 128x128 fp32 blocks went from 52% to 94% of copy this way, while bf16 blocks and rows of 8192 were slower
// in registers than with two passes (a block waits on its one group between phases). A kernel of its own:
// inside block_kernel its 64 registers of values slowed that kernel's other groups (lower occupancy).
template <emit E, class Sch, class In, class Out>
__global__ void __launch_bounds__(block_threads) block_regs_kernel(const job<Sch, In, Out> j) {
  constexpr int V = E == emit::packed ? 8 : vec<In>::size;
  constexpr int KR = 64 / V;  // chunks per thread
  const auto s = j.sch.get();
  __shared__ typename block_stats<block_threads>::storage ts;
  for (std::uint32_t g = blockIdx.x; g < j.groups; g += gridDim.x) {
    const group_box b = box_of(j, g);
    float v[KR][V];
    int n[KR];
#pragma unroll
    for (int k = 0; k < KR; ++k) {
      std::int64_t r, c;
      n[k] = block_slot<V>(j, b, threadIdx.x + static_cast<std::uint32_t>(k * block_threads), r, c);
      load_chunk<In, V>(j.in + r * j.in_stride + c, n[k], j.vec_in, v[k]);  // n == 0: zeros
    }
    const group_params p =
        job_params(j, s, fragment_group_stats(s, v, [&](const group_stats& x) { return block_stats<block_threads>::reduce(ts, x); }));
    if (E != emit::fake && threadIdx.x == 0) write_group_params(j, s, b.bi, b.bj, p);
#pragma unroll
    for (int k = 0; k < KR; ++k) {
      if (n[k] == 0) continue;
      std::int64_t r, c;
      block_slot<V>(j, b, threadIdx.x + static_cast<std::uint32_t>(k * block_threads), r, c);
      emit_chunk<E>(j, s, p, r, c, n[k], v[k]);
    }
  }
}

// Any RxC groups: one block per group (grid-stride), chunks of V elements along each row of the group (chunk
// slot ch of a group: group row ch / cpr, chunk column ch % cpr, cpr = ceil(gc / V); consecutive threads take
// consecutive chunks). Each group is read twice (statistics, then emit); see block_regs_kernel for the one
// read of fp32 128x128 blocks.
template <emit E, class Sch, class In, class Out>
__global__ void __launch_bounds__(block_threads) block_kernel(const job<Sch, In, Out> j) {
  constexpr int V = E == emit::packed ? 8 : vec<In>::size;
  const auto s = j.sch.get();
  __shared__ typename block_stats<block_threads>::storage ts;
  for (std::uint32_t g = blockIdx.x; g < j.groups; g += gridDim.x) {
    const group_box b = box_of(j, g);
    float v[V];
    const group_stats st = block_chunk_stats<V>(ts, needs_min_max(s), [&](auto&& fn) {
      for (std::uint32_t ch = threadIdx.x; ch < b.nch; ch += block_threads) {
        std::int64_t r, c;
        const int n = block_slot<V>(j, b, ch, r, c);
        load_chunk<In, V>(j.in + r * j.in_stride + c, n, j.vec_in, v);
        fn(v);
      }
    });
    const group_params p = job_params(j, s, st);
    if (E != emit::fake && threadIdx.x == 0) write_group_params(j, s, b.bi, b.bj, p);
    for (std::uint32_t ch = threadIdx.x; ch < b.nch; ch += block_threads) {
      std::int64_t r, c;
      const int n = block_slot<V>(j, b, ch, r, c);
      if (n == 0) continue;
      load_chunk<In, V>(j.in + r * j.in_stride + c, n, j.vec_in, v);
      emit_chunk<E>(j, s, p, r, c, n, v);
    }
  }
}

// fn(r, c, n) for each chunk of V elements (row r, column c, n <= V elements) of a rows x cols tensor that this
// thread takes in the per-tensor kernels' grid-stride loop. flat: contiguous rows of whole chunks (every stride the
// caller uses equals cols, cols % V == 0): chunk ch is (0, ch * V), the same address and element index, without
// the 64-bit row division.
template <int V, class Fn>
__device__ __forceinline__ void for_each_tensor_chunk(std::int64_t rows, std::int64_t cols, bool flat, Fn&& fn) {
  const std::int64_t cpr = (cols + V - 1) / V;
  const std::int64_t nch = rows * cpr;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(block_threads) + threadIdx.x;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * block_threads;
  if (flat) {
    for (std::int64_t ch = first; ch < nch; ch += step) fn(std::int64_t{0}, ch * V, V);
    return;
  }
  for (std::int64_t ch = first; ch < nch; ch += step) {
    const std::int64_t r = ch / cpr, c = (ch % cpr) * V;
    fn(r, c, cols - c < V ? static_cast<int>(cols - c) : V);
  }
}

// Per-tensor statistics into stats[0..3) = bits of amax, |min|, max (non-negative floats: unsigned max
// is float max). stats must be zeroed first.
template <class In>
__global__ void __launch_bounds__(block_threads) tensor_stats_kernel(const storage_t<In>* in, std::int64_t rows,
                                                                     std::int64_t cols, std::int64_t stride, bool vec_in,
                                                                     std::uint32_t* stats) {
  constexpr int V = vec<In>::size;
  __shared__ typename block_stats<block_threads>::storage ts;
  // Contiguous rows of whole chunks: the flat loop (aligned or not: load_chunk takes vec_in, as tensor_quantize_kernel).
  const bool flat = stride == cols && cols % V == 0;
  // Min and max (one instruction an element each; amax from them), recomputed only where the block met an
  // infinite or NaN element.
  const group_stats st = block_chunk_stats<V>(ts, true, [&](auto&& fn) {
    float v[V];
    for_each_tensor_chunk<V>(rows, cols, flat, [&](std::int64_t r, std::int64_t c, int n) {
      load_chunk<In, V>(in + r * stride + c, n, vec_in, v);
      fn(v);
    });
  });
  if (threadIdx.x == 0) {
    atomicMax(stats + 0, qnum::detail::float_to_bits(st.amax));
    atomicMax(stats + 1, qnum::detail::float_to_bits(st.min) & 0x7FFFFFFFu);
    atomicMax(stats + 2, qnum::detail::float_to_bits(st.max) & 0x7FFFFFFFu);
  }
}

__device__ __forceinline__ group_stats stats_from_bits(const std::uint32_t* s) {
  group_stats st;
  st.amax = qnum::detail::bits_to_float(s[0]);
  st.min = s[1] == 0u ? 0.0f : -qnum::detail::bits_to_float(s[1]);
  st.max = qnum::detail::bits_to_float(s[2]);
  return st;
}

// Second pass of the per-tensor path: one group = the tensor; params from the tensor statistics.
template <emit E, class Sch, class In, class Out>
__global__ void __launch_bounds__(block_threads) tensor_quantize_kernel(const job<Sch, In, Out> j) {
  constexpr int V = vec<In>::size;
  const auto s = j.sch.get();
  const group_stats st = stats_from_bits(j.tensor_stats);
  const group_params p = job_params(j, s, st);
  if (E != emit::fake && blockIdx.x == 0 && threadIdx.x == 0) write_group_params(j, s, 0, 0, p);
  float v[V];
  // Contiguous rows of whole chunks: the input and the codes (or the fake-quantized output) with strides cols.
  const bool flat = E != emit::packed && j.cols % V == 0 && j.in_stride == j.cols &&
                    (E == emit::fake ? j.out_stride : j.codes_stride) == j.cols;
  for_each_tensor_chunk<V>(j.rows, j.cols, flat, [&](std::int64_t r, std::int64_t c, int n) {
    load_chunk<In, V>(j.in + r * j.in_stride + c, n, j.vec_in, v);
    emit_chunk<E>(j, s, p, r, c, n, v);
  });
}

// Everything the dequantize kernel needs (by value).
template <class Sch, class Out>
struct dq_job {
  Sch sch;
  const std::uint8_t* codes = nullptr;
  std::int64_t codes_stride = 0;
  std::int64_t rows = 0, cols = 0, gr = 1, gc = 1;
  const void* scales = nullptr;
  std::int64_t scales_stride = 0;
  const std::int32_t* zeros = nullptr;
  std::int64_t zeros_stride = 0;
  storage_t<Out>* out = nullptr;
  std::int64_t out_stride = 0;
  float outer = 0.0f;
  bool vec_codes = false, vec_out = false;  // every whole chunk aligned (codes V bytes, out 16 bytes)
  bool chunk_in_group = false;             // gc % V == 0: a chunk never crosses a group
  std::uint32_t chunks = 0;                 // chunks in this launch (< 2^31)
  qnum::detail::fast_div div_cpr, div_gr, div_gc;  // chunk -> row; row -> group row; column -> group column
};
// Codes per chunk of the dequantize kernel: one 16-byte store of outputs (8 for 16-bit, 4 for fp32).
template <class Out>
inline constexpr int dq_chunk = 16 / io<Out>::size;

// A group's parameters from its stored scale code and zero point, with the outer scale only where there is one.
template <class S, class Sch, class Out>
__device__ __forceinline__ group_params params_of_code(const S& s, const dq_job<Sch, Out>& j, std::uint32_t code, std::int32_t z) {
  return j.outer > 0.0f ? qnum::detail::params_from_stored(s, code, z, j.outer) : qnum::detail::params_from_stored(s, code, z, 0.0f);
}
// Stored parameters of group (bi, bj).
template <class S, class Sch, class Out>
__device__ __forceinline__ group_params stored_params(const S& s, const dq_job<Sch, Out>& j, std::int64_t bi, std::int64_t bj) {
  const std::uint32_t code = read_scale_code(s, j.scales, bi * j.scales_stride + bj);
  return params_of_code(s, j, code, s.kind == scheme_kind::asymmetric ? j.zeros[bi * j.zeros_stride + bj] : 0);
}

// Dequantize: element-wise over chunks of V codes (one 16-byte store of outputs each); each thread takes
// U chunks per step, chunk u of thread t at (step base + u * block_threads + t), so that every load and store
// instruction of a warp covers contiguous memory. A chunk inside one group rebuilds its parameters once.
// 32-bit chunk, row and column indices (multiply-high division): the launcher slices larger tensors.
template <class Sch, class Out>
__global__ void __launch_bounds__(block_threads) dequantize_kernel(const dq_job<Sch, Out> j) {
  constexpr int V = dq_chunk<Out>;
  constexpr int U = 16 / V;
  const auto s = j.sch.get();
  const std::uint32_t cpr = j.div_cpr.d;
  for (std::uint32_t base = blockIdx.x * static_cast<std::uint32_t>(block_threads * U) + threadIdx.x; base < j.chunks;
       base += gridDim.x * static_cast<std::uint32_t>(block_threads * U)) {
    std::uint8_t cb[U][V];
    std::uint32_t r[U], c[U];
    int n[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::uint32_t ch = base + static_cast<std::uint32_t>(u * block_threads);
      const bool in = ch < j.chunks;
      r[u] = in ? j.div_cpr.div(ch) : 0u;
      c[u] = in ? (ch - r[u] * cpr) * static_cast<std::uint32_t>(V) : 0u;
      const std::int64_t left = j.cols - static_cast<std::int64_t>(c[u]);
      n[u] = !in ? 0 : (left < V ? static_cast<int>(left) : V);
      load_codes<V>(j.codes + static_cast<std::int64_t>(r[u]) * j.codes_stride + c[u], n[u], j.vec_codes, cb[u]);
    }
    // The chunks' stored scales (and zero points) loaded beside their codes, before any is needed.
    std::uint32_t code[U];
    std::int32_t zero[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      code[u] = 0u;
      zero[u] = 0;
      if (j.chunk_in_group && n[u] > 0) {
        const std::int64_t bi = j.div_gr.div(r[u]), bj = j.div_gc.div(c[u]);
        code[u] = read_scale_code(s, j.scales, bi * j.scales_stride + bj);
        if (s.kind == scheme_kind::asymmetric) zero[u] = j.zeros[bi * j.zeros_stride + bj];
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (n[u] == 0) continue;
      const std::int64_t bi = j.div_gr.div(r[u]);
      float o[V];
      if (j.chunk_in_group) {
        dequantize_fragment(s, params_of_code(s, j, code[u], zero[u]), cb[u], o);
      } else {
        std::int64_t cur = -1;
        group_params p;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const std::int64_t bj = j.div_gc.div(c[u] + static_cast<std::uint32_t>(i));
          if (i < n[u] && bj != cur) {
            cur = bj;
            p = stored_params(s, j, bi, bj);
          }
          o[i] = i < n[u] ? dequantize_value(s, p, cb[u][i]) : 0.0f;
        }
      }
      store_chunk<Out, V>(j.out + static_cast<std::int64_t>(r[u]) * j.out_stride + c[u], n[u], j.vec_out, o);
    }
  }
}

// Dequantize, the fast shape: 1xG groups with G % 16 == 0, cols % 16 == 0, codes and outputs 16-byte aligned
// rows (the launcher checks). One thread per chunk of 16 codes (one 16-byte load), which lie in one group:
// one stored scale (and zero point), 16 outputs by 16-byte stores. 32-bit chunk indices (the launcher
// slices); row and group column by multiply-high divisions.
template <class Sch, class Out>
__global__ void __launch_bounds__(block_threads) dequantize_rows16_kernel(const dq_job<Sch, Out> j) {
  constexpr int V = 16;
  const auto s = j.sch.get();
  const std::uint32_t cpr = j.div_cpr.d;
  for (std::uint32_t ch = blockIdx.x * static_cast<std::uint32_t>(block_threads) + threadIdx.x; ch < j.chunks;
       ch += gridDim.x * static_cast<std::uint32_t>(block_threads)) {
    const std::uint32_t r = j.div_cpr.div(ch);
    const std::uint32_t c = (ch - r * cpr) * static_cast<std::uint32_t>(V);
    const std::uint32_t bj = j.div_gc.div(c);
    std::uint8_t cb[V];
    load_codes<V>(j.codes + static_cast<std::int64_t>(r) * j.codes_stride + c, V, true, cb);
    const std::int64_t k = static_cast<std::int64_t>(r) * j.scales_stride + bj;
    const std::uint32_t code = read_scale_code(s, j.scales, k);
    const std::int32_t zero = s.kind == scheme_kind::asymmetric ? j.zeros[static_cast<std::int64_t>(r) * j.zeros_stride + bj] : 0;
    float o[V];
    dequantize_fragment(s, params_of_code(s, j, code, zero), cb, o);
    store_chunk<Out, V>(j.out + static_cast<std::int64_t>(r) * j.out_stride + c, V, true, o);
  }
}

inline unsigned grid_for(std::int64_t work_items, std::int64_t per_block) {
  const std::int64_t b = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65536 ? 65536 : b));
}

// Lanes per group of rows_kernel: the power of two L with L * rows_chunks chunks of v elements >= gc.
inline int lanes_for(std::int64_t gc, int v) {
  const std::int64_t chunks = (gc + v - 1) / v;
  int l = 1;
  while (l < 32 && static_cast<std::int64_t>(l) * rows_chunks < chunks) l *= 2;
  return l;
}

// Largest 1xG group held by a sub-warp in registers; longer rows go to a block per group.
template <class D>
constexpr std::int64_t subwarp_max_group() { return 32 * vec<D>::size * rows_chunks; }

template <class T>
inline bool elem_aligned(const T* p) { return (reinterpret_cast<std::uintptr_t>(p) % alignof(T)) == 0; }
inline bool addr_aligned(const void* p, std::uintptr_t bytes) { return (reinterpret_cast<std::uintptr_t>(p) % bytes) == 0; }

// Most groups one launch covers: flat group indices (and their lane offsets) stay below 2^31.
constexpr std::int64_t max_groups_per_launch = std::int64_t{1} << 30;

// Validate the input view and group grid into j (any Out).
template <class Sch, class In, class Out, class T>
status prepare_in(matrix_view<const T> in, group_shape groups, job<Sch, In, Out>& j) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::uint16_t>, "inputs: float or 16-bit bits");
  if (status e = qnum::detail::check_view(in); e != status::ok) return e;
  if (in.rows > 0 && in.cols > 0 && !elem_aligned(in.data)) return status::misaligned;
  qnum::detail::grid g;
  if (status e = qnum::detail::make_grid(in.rows, in.cols, groups, g); e != status::ok) return e;
  j.in = reinterpret_cast<const storage_t<In>*>(in.data);
  j.rows = in.rows;
  j.cols = in.cols;
  j.in_stride = in.row_stride;
  j.gr = g.gr;
  j.gc = g.gc;
  j.nr = g.nr;
  j.nc = g.nc;
  constexpr int V = vec<In>::size;
  j.vec_in = addr_aligned(in.data, 16) && (in.rows <= 1 || in.row_stride % V == 0) && g.gc % V == 0;
  return status::ok;
}

// prepare_in, then the output view (codes or values): valid and of the input's shape.
template <class Sch, class In, class Out, class T, class O>
status prepare_in_out(matrix_view<const T> in, group_shape groups, const matrix_view<O>& out, job<Sch, In, Out>& j) {
  if (status e = prepare_in(in, groups, j); e != status::ok) return e;
  if (status e = qnum::detail::check_view(out); e != status::ok) return e;
  return out.rows != in.rows || out.cols != in.cols ? status::bad_shape : status::ok;
}

template <class Sch, class In, class Out>
status prepare_scales(job<Sch, In, Out>& j, scale_view scales, matrix_view<std::int32_t> zeros) {
  const auto s = j.sch.get();
  qnum::detail::grid g;
  g.gr = j.gr; g.gc = j.gc; g.nr = j.nr; g.nc = j.nc;
  if (status e = qnum::detail::check_scales(scales, g, dtype_bytes(s.store)); e != status::ok) return e;
  if (status e = qnum::detail::check_zeros(zeros, g, s.kind == scheme_kind::asymmetric); e != status::ok) return e;
  if ((reinterpret_cast<std::uintptr_t>(scales.data) % static_cast<unsigned>(scales.elem_bytes)) != 0) return status::misaligned;
  if (zeros.data != nullptr && !elem_aligned(zeros.data)) return status::misaligned;
  j.scales = scales.data;
  j.scales_stride = scales.row_stride;
  j.zeros = zeros.data;
  j.zeros_stride = zeros.row_stride;
  return status::ok;
}

// Launch kernel k over rows [0, rows) in slices of whole group rows, each with at most
// max_groups_per_launch groups (the kernels' 32-bit flat indices); pointers are offset per slice.
template <class Sch, class In, class Out, class Launch>
status sliced(job<Sch, In, Out> j, Launch&& launch) {
  const std::int64_t rows_of_groups = j.nr;
  std::int64_t step = max_groups_per_launch / (j.nc > 0 ? j.nc : 1);
  if (step < 1) return status::bad_shape;  // a single group row with more than 2^30 groups
  for (std::int64_t b0 = 0; b0 < rows_of_groups; b0 += step) {
    const std::int64_t nb = rows_of_groups - b0 < step ? rows_of_groups - b0 : step;
    job<Sch, In, Out> k = j;
    const std::int64_t r0 = b0 * j.gr;
    k.in = j.in + r0 * j.in_stride;
    k.rows = (j.rows - r0) < nb * j.gr ? (j.rows - r0) : nb * j.gr;
    k.nr = nb;
    if (k.codes) k.codes = j.codes + r0 * j.codes_stride;
    if (k.out) k.out = j.out + r0 * j.out_stride;
    if (k.packed) k.packed = j.packed + r0 * j.packed_stride;
    if (k.scales) k.scales = static_cast<char*>(j.scales) + b0 * j.scales_stride * dtype_bytes(j.sch.get().store);
    if (k.zeros) k.zeros = j.zeros + b0 * j.zeros_stride;
    k.groups = static_cast<std::uint32_t>(nb * j.nc);
    k.div_nc = qnum::detail::fast_div(static_cast<std::uint32_t>(j.nc));
    k.row0 = j.row0 + r0;  // stochastic rounding indexes elements of the whole tensor
    if (status e = launch(k); e != status::ok) return e;
  }
  return status::ok;
}

}  // namespace detail

namespace detail {

template <class D>
struct type_tag {
  using type = D;
};

// f(type_tag<D>{}) with D the element type of a view of T holding dtype t (status::bad_type for
// 16-bit elements marked fp32).
template <class T, class Fn>
status with_type(dtype t, Fn&& f) {
  if constexpr (std::is_same_v<std::remove_const_t<T>, float>) {
    return f(type_tag<float>{});
  } else {
    if (t == dtype::bf16) return f(type_tag<qnum::bf16>{});
    if (t == dtype::fp16) return f(type_tag<qnum::fp16>{});
    return status::bad_type;
  }
}

inline int log2_of(std::int64_t x) {  // x a power of two
  int l = 0;
  while ((std::int64_t{1} << l) < x) ++l;
  return l;
}

template <emit E, class Sch, class In, class Out>
status launch_rows_any(const job<Sch, In, Out>& j, int v, cudaStream_t stream) {
  job<Sch, In, Out> k = j;
  const std::int64_t warp_row = 32 * static_cast<std::int64_t>(v);  // elements of one chunk row of a warp
  // The tile path (rows_tile; fixed schemes): for narrow groups, where a group's one or two lanes would each
  // access 16 or 32 bytes per instruction (measured on an H100: fake quantize g32 at 21-29% of copy that way,
  // 78-96% as tiles). Wider groups keep L >= 4 lanes per group, which measured faster than tiles there.
  if constexpr (Sch::is_static) {
    if (lanes_for(k.gc, v) <= 2 && k.vec_in && (E == emit::packed || k.vec_out) && k.gc % v == 0 && k.gc <= warp_row &&
        warp_row % k.gc == 0 && k.cols % v == 0) {
      const std::int64_t per_row = (k.cols + rows_chunks * warp_row - 1) / (rows_chunks * warp_row);
      k.lanes_log2 = log2_of(k.gc / v);
      k.gc_log2 = log2_of(k.gc);
      k.tiles = static_cast<std::uint32_t>(k.rows * per_row);  // <= the launch's groups (< 2^31)
      k.div_tiles = qnum::detail::fast_div(static_cast<std::uint32_t>(per_row));
      // groups of at least rows_chunks lanes share their parameters (rows_tile, Shared)
      if (k.gc / v >= rows_chunks) rows_tile_kernel<E, true><<<grid_for(static_cast<std::int64_t>(k.tiles), 256 / 32), 256, 0, stream>>>(k);
      else rows_tile_kernel<E, false><<<grid_for(static_cast<std::int64_t>(k.tiles), 256 / 32), 256, 0, stream>>>(k);
      return from_cuda(cudaGetLastError());
    }
  }
  const int L = lanes_for(k.gc, v);
  k.lanes_log2 = 0;
  while ((1 << k.lanes_log2) < L) ++k.lanes_log2;
  rows_kernel<E><<<grid_for(static_cast<std::int64_t>(k.groups), 256 / L), 256, 0, stream>>>(k);
  return from_cuda(cudaGetLastError());
}

// block_kernel over a job's groups: chunk slots of a group < 2^31 (32-bit indices).
template <emit E, class Sch, class In, class Out>
status launch_block(const job<Sch, In, Out>& j, int v, cudaStream_t stream) {
  job<Sch, In, Out> k = j;
  const std::int64_t cpr = (k.gc + v - 1) / v;
  const std::int64_t gr = k.gr < k.rows ? k.gr : k.rows;
  if (gr * cpr >= max_groups_per_launch * 2) return status::bad_group;  // one group of 2^31 chunks or more
  k.div_cpr = qnum::detail::fast_div(static_cast<std::uint32_t>(cpr));
  if constexpr (Sch::is_static && io<In>::size == 4) {
    constexpr std::int64_t chunks_in_registers = block_threads * 64 / (E == emit::packed ? 8 : vec<In>::size);
    if (gr * cpr > chunks_in_registers / 2 && gr * cpr <= chunks_in_registers) {
      block_regs_kernel<E><<<grid_for(static_cast<std::int64_t>(k.groups), 1), block_threads, 0, stream>>>(k);
      return from_cuda(cudaGetLastError());
    }
  }
  block_kernel<E><<<grid_for(static_cast<std::int64_t>(k.groups), 1), block_threads, 0, stream>>>(k);
  return from_cuda(cudaGetLastError());
}

// Pick the kernel for a validated job.
template <emit E, class Sch, class In, class Out>
status run(const job<Sch, In, Out>& j, cudaStream_t stream, std::uint32_t* tensor_scratch) {
  if constexpr (E == emit::packed) {
    if (j.gc <= 32 * rows_chunks * 8)
      return sliced(j, [&](const job<Sch, In, Out>& k) { return launch_rows_any<E>(k, 8, stream); });
    return sliced(j, [&](const job<Sch, In, Out>& k) {  // groups longer than a warp holds: a block per group
      return launch_block<E>(k, 8, stream);
    });
  } else {
    constexpr int V = vec<In>::size;
    if (j.nr * j.nc == 1 && tensor_scratch != nullptr) {
      if (status e = from_cuda(cudaMemsetAsync(tensor_scratch, 0, 3 * sizeof(std::uint32_t), stream)); e != status::ok) return e;
      const std::int64_t chunks = j.rows * ((j.cols + V - 1) / V);
      tensor_stats_kernel<In><<<grid_for(chunks, block_threads * 4), block_threads, 0, stream>>>(j.in, j.rows, j.cols,
                                                                                                   j.in_stride, j.vec_in,
                                                                                                   tensor_scratch);
      if (status e = from_cuda(cudaGetLastError()); e != status::ok) return e;
      job<Sch, In, Out> k = j;
      k.tensor_stats = tensor_scratch;
      tensor_quantize_kernel<E><<<grid_for(chunks, block_threads * 4), block_threads, 0, stream>>>(k);
      return from_cuda(cudaGetLastError());
    }
    if (j.gr == 1 && j.gc <= subwarp_max_group<In>())
      return sliced(j, [&](const job<Sch, In, Out>& k) { return launch_rows_any<E>(k, V, stream); });
    return sliced(j, [&](const job<Sch, In, Out>& k) { return launch_block<E>(k, V, stream); });
  }
}

// The same job over the run-time scheme of its format (a fixed scheme's fields as values).
template <class Sch, class In, class Out>
job<runtime_scheme<typename Sch::format>, In, Out> as_runtime(const job<Sch, In, Out>& j) {
  job<runtime_scheme<typename Sch::format>, In, Out> k;
  static_cast<job_fields<In, Out>&>(k) = j;
  k.sch = runtime_scheme<typename Sch::format>{j.sch.get()};
  return k;
}

// Stochastic rounding runs the run-time scheme's kernels with their run-time flag (the same bits; Philox
// per element dominates its cost): a fixed scheme compiles only its nearest-even kernels, and every
// kernel exists once per scheme, element types and output kind.
template <emit E, class Sch, class In, class Out>
status run_rounding(job<Sch, In, Out> j, const rounding& rd, cudaStream_t stream, std::uint32_t* scratch) {
  j.stochastic = rd.mode == rounding_mode::stochastic;
  if constexpr (Sch::is_static) {
    if (j.stochastic) return run<E>(as_runtime(j), stream, scratch);
  }
  return run<E>(j, stream, scratch);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------
// Launchers

// Codes (one byte per element) + scales (+ zero points) on the device; equal to qnum::quantize.
// tensor_scratch: optional 3 x uint32 device buffer used when the tensor is one group (per_tensor):
// two kernels (stats, quantize) instead of one block for the whole tensor.
template <class H, class T, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status launch_quantize(const H& sch, matrix_view<const T> in, group_shape groups, matrix_view<std::uint8_t> codes,
                       scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {},
                       float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                       std::uint32_t* tensor_scratch = nullptr) {
  return detail::with_type<T>(in.type, [&](auto in_tag) -> status {
    using In = typename decltype(in_tag)::type;
    detail::job<H, In, float> j;
    j.sch = sch;
    if (status e = detail::prepare_in_out(in, groups, codes, j); e != status::ok) return e;
    if (in.rows == 0 || in.cols == 0) return status::ok;
    if (status e = detail::prepare_scales(j, scales, zeros); e != status::ok) return e;
    constexpr int V = detail::vec<In>::size;
    j.codes = codes.data;
    j.codes_stride = codes.row_stride;
    j.vec_out = detail::addr_aligned(codes.data, V) && (codes.rows <= 1 || codes.row_stride % V == 0) && j.gc % V == 0;
    j.seed = rd.seed;
    j.outer = outer_scale;
    return detail::run_rounding<detail::emit::codes>(j, rd, stream, tensor_scratch);
  });
}
template <class F, class T>
status launch_quantize(const scheme<F>& s, matrix_view<const T> in, group_shape groups, matrix_view<std::uint8_t> codes,
                       scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {},
                       float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                       std::uint32_t* tensor_scratch = nullptr) {
  return launch_quantize(runtime_scheme<F>{s}, in, groups, codes, scales, zeros, rd, outer_scale, stream, tensor_scratch);
}

// out = dequantize(quantize(in)) on the device (fp32 or bf16/fp16 bits); equal to qnum::fake_quantize.
template <class H, class T, class U, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status launch_fake_quantize(const H& sch, matrix_view<const T> in, group_shape groups, matrix_view<U> out,
                            rounding rd = {}, float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                            std::uint32_t* tensor_scratch = nullptr) {
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, std::uint16_t>, "outputs: float or 16-bit bits");
  return detail::with_type<T>(in.type, [&](auto in_tag) -> status {
    using In = typename decltype(in_tag)::type;
    return detail::with_type<U>(out.type, [&](auto out_tag) -> status {
      using Out = typename decltype(out_tag)::type;
      detail::job<H, In, Out> j;
      j.sch = sch;
      if (status e = detail::prepare_in_out(in, groups, out, j); e != status::ok) return e;
      if (in.rows == 0 || in.cols == 0) return status::ok;
      if (!detail::elem_aligned(out.data)) return status::misaligned;
      constexpr int V = detail::vec<In>::size;
      j.out = reinterpret_cast<detail::storage_t<Out>*>(out.data);
      j.out_stride = out.row_stride;
      j.vec_out = detail::addr_aligned(out.data, 16) &&
                  (out.rows <= 1 || (out.row_stride * detail::io<Out>::size) % 16 == 0) && j.gc % V == 0;
      j.seed = rd.seed;
      j.outer = outer_scale;
      return detail::run_rounding<detail::emit::fake>(j, rd, stream, tensor_scratch);
    });
  });
}
template <class F, class T, class U>
status launch_fake_quantize(const scheme<F>& s, matrix_view<const T> in, group_shape groups, matrix_view<U> out,
                            rounding rd = {}, float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                            std::uint32_t* tensor_scratch = nullptr) {
  return launch_fake_quantize(runtime_scheme<F>{s}, in, groups, out, rd, outer_scale, stream, tensor_scratch);
}

// out = dequantize_value(s, params_from_stored(scale, zero), code); equal to qnum::dequantize.
template <class H, class U, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status launch_dequantize(const H& sch, matrix_view<const std::uint8_t> codes, group_shape groups, scale_view scales,
                         matrix_view<const std::int32_t> zeros, matrix_view<U> out, float outer_scale = 0.0f,
                         cudaStream_t stream = nullptr) {
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, std::uint16_t>, "outputs: float or 16-bit bits");
  const auto s = sch.get();
  if (status e = qnum::detail::check_view(codes); e != status::ok) return e;
  if (status e = qnum::detail::check_view(out); e != status::ok) return e;
  if (codes.rows != out.rows || codes.cols != out.cols) return status::bad_shape;
  qnum::detail::grid g;
  if (status e = qnum::detail::make_grid(out.rows, out.cols, groups, g); e != status::ok) return e;
  if (out.rows == 0 || out.cols == 0) return status::ok;
  if (!detail::elem_aligned(out.data)) return status::misaligned;
  if (status e = qnum::detail::check_scales(scales, g, dtype_bytes(s.store)); e != status::ok) return e;
  if ((reinterpret_cast<std::uintptr_t>(scales.data) % static_cast<unsigned>(scales.elem_bytes)) != 0) return status::misaligned;
  if (s.kind == scheme_kind::asymmetric) {
    if (zeros.data == nullptr) return status::null_pointer;
    if (zeros.rows != g.nr || zeros.cols != g.nc || zeros.row_stride < zeros.cols) return status::bad_scale_buffer;
    if (!detail::elem_aligned(zeros.data)) return status::misaligned;
  }
  return detail::with_type<U>(out.type, [&](auto out_tag) -> status {
    using Out = typename decltype(out_tag)::type;
    detail::dq_job<H, Out> j;
    j.sch = sch;
    j.codes = codes.data;
    j.codes_stride = codes.row_stride;
    j.rows = out.rows;
    j.cols = out.cols;
    j.gr = g.gr;
    j.gc = g.gc;
    j.scales = scales.data;
    j.scales_stride = scales.row_stride;
    j.zeros = zeros.data;
    j.zeros_stride = zeros.row_stride;
    j.out = reinterpret_cast<detail::storage_t<Out>*>(out.data);
    j.out_stride = out.row_stride;
    j.outer = outer_scale;
    constexpr int V = detail::dq_chunk<Out>;
    j.vec_codes = detail::addr_aligned(codes.data, V) && (codes.rows <= 1 || codes.row_stride % V == 0);
    j.vec_out = detail::addr_aligned(out.data, 16) && (out.rows <= 1 || (out.row_stride * detail::io<Out>::size) % 16 == 0);
    j.chunk_in_group = g.gc % V == 0;
    // The fast shape (dequantize_rows16_kernel): 1xG groups, G and cols multiples of 16, aligned rows.
    const bool rows16 = g.gr == 1 && g.gc % 16 == 0 && out.cols % 16 == 0 && detail::addr_aligned(codes.data, 16) &&
                        (codes.rows <= 1 || codes.row_stride % 16 == 0) && j.vec_out && out.cols < detail::max_groups_per_launch;
    if (rows16) {
      const std::int64_t cpr16 = out.cols / 16;
      j.div_cpr = qnum::detail::fast_div(static_cast<std::uint32_t>(cpr16));
      j.div_gc = qnum::detail::fast_div(static_cast<std::uint32_t>(g.gc < out.cols ? g.gc : out.cols));
      const std::int64_t step16 = detail::max_groups_per_launch / cpr16;
      for (std::int64_t r0 = 0; r0 < out.rows; r0 += step16) {
        detail::dq_job<H, Out> k = j;
        k.rows = out.rows - r0 < step16 ? out.rows - r0 : step16;
        k.codes = codes.data + r0 * codes.row_stride;
        k.out = j.out + r0 * out.row_stride;
        k.scales = static_cast<const std::uint8_t*>(scales.data) + r0 * scales.row_stride * scales.elem_bytes;
        if (zeros.data != nullptr) k.zeros = zeros.data + r0 * zeros.row_stride;
        k.chunks = static_cast<std::uint32_t>(k.rows * cpr16);
        detail::dequantize_rows16_kernel<<<detail::grid_for(k.rows * cpr16, detail::block_threads), detail::block_threads, 0,
                                           stream>>>(k);
      }
      return from_cuda(cudaGetLastError());
    }
    const std::int64_t cpr = (out.cols + V - 1) / V;
    if (out.cols >= detail::max_groups_per_launch || g.gc >= detail::max_groups_per_launch) return status::bad_shape;
    j.div_cpr = qnum::detail::fast_div(static_cast<std::uint32_t>(cpr));
    j.div_gr = qnum::detail::fast_div(static_cast<std::uint32_t>(g.gr < out.rows ? g.gr : out.rows));
    j.div_gc = qnum::detail::fast_div(static_cast<std::uint32_t>(g.gc));
    // Slices of whole group rows, each with fewer than 2^31 chunks (32-bit indices in the kernel).
    const std::int64_t gr = g.gr < out.rows ? g.gr : out.rows;
    const std::int64_t step = (detail::max_groups_per_launch / cpr) / gr * gr;
    if (step < 1) return status::bad_shape;
    for (std::int64_t r0 = 0; r0 < out.rows; r0 += step) {
      detail::dq_job<H, Out> k = j;
      k.rows = out.rows - r0 < step ? out.rows - r0 : step;
      k.codes = codes.data + r0 * codes.row_stride;
      k.out = j.out + r0 * out.row_stride;
      k.scales = static_cast<const std::uint8_t*>(scales.data) + (r0 / g.gr) * scales.row_stride * scales.elem_bytes;
      if (zeros.data != nullptr) k.zeros = zeros.data + (r0 / g.gr) * zeros.row_stride;
      k.chunks = static_cast<std::uint32_t>(k.rows * cpr);
      detail::dequantize_kernel<<<detail::grid_for(k.rows * cpr, detail::block_threads * (16 / V)), detail::block_threads, 0,
                                  stream>>>(k);
    }
    return from_cuda(cudaGetLastError());
  });
}
template <class F, class U>
status launch_dequantize(const scheme<F>& s, matrix_view<const std::uint8_t> codes, group_shape groups,
                         scale_view scales, matrix_view<const std::int32_t> zeros, matrix_view<U> out,
                         float outer_scale = 0.0f, cudaStream_t stream = nullptr) {
  return launch_dequantize(runtime_scheme<F>{s}, codes, groups, scales, zeros, out, outer_scale, stream);
}

// Per-tensor statistics: stats[0] = bits of amax, stats[1] = bits of |min(x, 0)|, stats[2] = bits of
// max(x, 0) over the finite elements (3 x uint32 device buffer; zeroed here first).
template <class T>
status launch_tensor_stats(matrix_view<const T> in, std::uint32_t* stats, cudaStream_t stream = nullptr) {
  if (stats == nullptr) return status::null_pointer;
  if (!detail::elem_aligned(stats)) return status::misaligned;
  if (status e = qnum::detail::check_view(in); e != status::ok) return e;
  if (in.rows > 0 && in.cols > 0 && !detail::elem_aligned(in.data)) return status::misaligned;
  if (status e = from_cuda(cudaMemsetAsync(stats, 0, 3 * sizeof(std::uint32_t), stream)); e != status::ok) return e;
  if (in.rows == 0 || in.cols == 0) return status::ok;
  return detail::with_type<T>(in.type, [&](auto in_tag) -> status {
    using In = typename decltype(in_tag)::type;
    constexpr int V = detail::vec<In>::size;
    const bool vec_in = detail::addr_aligned(in.data, 16) && (in.rows <= 1 || in.row_stride % V == 0);
    const std::int64_t chunks = in.rows * ((in.cols + V - 1) / V);
    detail::tensor_stats_kernel<In><<<detail::grid_for(chunks, detail::block_threads * 4), detail::block_threads, 0, stream>>>(
        reinterpret_cast<const detail::storage_t<In>*>(in.data), in.rows, in.cols, in.row_stride, vec_in, stats);
    return from_cuda(cudaGetLastError());
  });
}

// Fused W4A16 (compressed-tensors pack-quantized): w [N, K] -> weight_packed [N, ceil(K/8)] int32 words (any
// row stride >= ceil(K/8); another shape is bad_shape) with nibble q + 8, weight_scale [N, ceil(K/G)] in
// s.store's type, signed zero points [N, ceil(K/G)] int32 (asymmetric). G must be a multiple of 8.
template <class H, class T, std::enable_if_t<is_scheme_holder_v<H>, int> = 0>
status launch_w4a16_pack(const H& sch, matrix_view<const T> w, std::int64_t group, matrix_view<std::uint32_t> weight_packed,
                         scale_view scales, matrix_view<std::int32_t> zeros = {}, cudaStream_t stream = nullptr,
                         rounding rd = {}) {
  static_assert(std::is_same_v<typename H::format, qnum::qint4>, "W4A16 packing: int4 schemes");
  if (group <= 0 || group % 8 != 0) return status::bad_group;
  return detail::with_type<T>(w.type, [&](auto in_tag) -> status {
    using In = typename decltype(in_tag)::type;
    detail::job<H, In, float> j;
    j.sch = sch;
    if (status e = detail::prepare_in(w, group_size(group), j); e != status::ok) return e;
    if (w.rows == 0 || w.cols == 0) return status::ok;
    if (status e = qnum::detail::check_extents(weight_packed, w.rows, (w.cols + 7) / 8); e != status::ok) return e;
    if (!detail::elem_aligned(weight_packed.data)) return status::misaligned;
    if (status e = detail::prepare_scales(j, scales, zeros); e != status::ok) return e;
    // Chunks of 8 elements: 16-byte aligned for bf16/fp16 (and two 16-byte loads for fp32) when the
    // row stride keeps them so.
    j.vec_in = detail::addr_aligned(w.data, 16) && (w.rows <= 1 || (w.row_stride * detail::io<In>::size) % 16 == 0);
    j.packed = weight_packed.data;
    j.packed_stride = weight_packed.row_stride;
    j.seed = rd.seed;
    return detail::run_rounding<detail::emit::packed>(j, rd, stream, nullptr);
  });
}
template <class T>
status launch_w4a16_pack(const scheme<qnum::qint4>& s, matrix_view<const T> w, std::int64_t group,
                         matrix_view<std::uint32_t> weight_packed, scale_view scales, matrix_view<std::int32_t> zeros = {},
                         cudaStream_t stream = nullptr, rounding rd = {}) {
  return launch_w4a16_pack(runtime_scheme<qnum::qint4>{s}, w, group, weight_packed, scales, zeros, stream, rd);
}

// Mutable input views (a device_view of a non-const pointer, a view(float*, ...)) take the read-only
// launchers above: the same calls, the same status.
template <class S, class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status launch_quantize(const S& sch, matrix_view<T> in, group_shape groups, matrix_view<std::uint8_t> codes,
                       scale_view scales, matrix_view<std::int32_t> zeros = {}, rounding rd = {},
                       float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                       std::uint32_t* tensor_scratch = nullptr) {
  return launch_quantize(sch, matrix_view<const T>(in), groups, codes, scales, zeros, rd, outer_scale, stream,
                         tensor_scratch);
}
template <class S, class T, class U, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status launch_fake_quantize(const S& sch, matrix_view<T> in, group_shape groups, matrix_view<U> out, rounding rd = {},
                            float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                            std::uint32_t* tensor_scratch = nullptr) {
  return launch_fake_quantize(sch, matrix_view<const T>(in), groups, out, rd, outer_scale, stream, tensor_scratch);
}
template <class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status launch_tensor_stats(matrix_view<T> in, std::uint32_t* stats, cudaStream_t stream = nullptr) {
  return launch_tensor_stats(matrix_view<const T>(in), stats, stream);
}
template <class S, class T, std::enable_if_t<!std::is_const<T>::value, int> = 0>
status launch_w4a16_pack(const S& sch, matrix_view<T> w, std::int64_t group, matrix_view<std::uint32_t> weight_packed,
                         scale_view scales, matrix_view<std::int32_t> zeros = {}, cudaStream_t stream = nullptr,
                         rounding rd = {}) {
  return launch_w4a16_pack(sch, matrix_view<const T>(w), group, weight_packed, scales, zeros, stream, rd);
}

}  // namespace gpu
QNUM_END_NAMESPACE
