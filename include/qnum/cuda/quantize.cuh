// qnum/cuda/quantize.cuh: device group quantization: in-kernel primitives and ready kernels with launchers (nvcc only).
//
// Primitives (call inside your own kernel; the per-element math is quantize.hpp's QNUM_HD functions):
//   subgroup_reduce<L>(group_stats st, lane)     merge the stats of the L lanes (L = 1, 2, 4, 8, 16, 32)
//                                                 of an aligned sub-warp group with __shfl_xor_sync; lane
//                                                 is the lane index in the warp (0..31), passed by the
//                                                 caller; every lane of the sub-group must call it and
//                                                 gets the merged stats. Policy = accumulate/merge:
//                                                 NaN and +-Inf ignored, result independent of order.
//   subgroup_amax<L>(float amax, lane)           the same for a bare amax (max of non-negative floats)
//   block_stats<BLOCK>::reduce(storage, st)      block-wide merge through cub::BlockReduce, returned
//                                                 to every thread of the (1-D) block; syncs the block
//   then compute_params(scheme, stats[, outer]) and quantize_value / dequantize_value / fake_quant_value.
//
// Launchers (device pointers in the views; enqueue on `stream`; return cudaErrorInvalidValue without
// launching for bad shapes/strides/group sizes, null or misaligned pointers, mismatched scale buffers;
// otherwise the launch error, cudaSuccess for empty tensors). Same views, groups, rounding, outer_scale
// and bits as the host API in quantize_tensor.hpp (codes one byte per element, scales in scheme.store's
// type, int32 zero points for asymmetric schemes, padded tail groups as on the host):
//   launch_quantize(s, in, groups, codes, scales, zeros, rounding, outer, stream, tensor_scratch)
//   launch_fake_quantize(s, in, groups, out, rounding, outer, stream, tensor_scratch)
//   launch_dequantize(s, codes, groups, scales, zeros, out, outer, stream)
//   launch_tensor_stats(in, stats_out, stream)        per-tensor amax/min/max (3 x uint32, see below)
//   launch_w4a16_pack(s, w, group, weight_packed, scales, zeros, stream)   bf16/fp16/fp32 [N, K] ->
//       compressed-tensors weight_packed int32 [N, ceil(K/8)] (nibble k%8 of word k/8 = q + 8; unused
//       high nibbles of the last word 0) + weight_scale [N, ceil(K/G)] (+ signed int32 zero points
//       [N, ceil(K/G)], asymmetric), one pass; equal to quantize + ct_pack_weight on the host. G % 8 == 0.
// Inputs: float, or bf16/fp16 bits as std::uint16_t with matrix_view::type (device_view() wraps
// __nv_bfloat16 / __half pointers). Outputs of dequantize / fake_quantize likewise.
// Kernel choice: 1xG groups with G <= 32 * (16 / sizeof(T)) * 8 use a sub-warp of L lanes per group
// (L = next power of two of ceil(G / V), V = 16 / sizeof(T) elements per 16-byte load, at most 32), so
// G = 16/32/64/128 map to L = 2/4/8/16 (bf16) or 4/8/16/32 (fp32) with one 16-byte load per lane and the
// group held in registers; other shapes (2-D blocks, long rows) use one 256-thread block per group with
// cub::BlockReduce. A tensor that is a single group (per_tensor) uses two kernels (stats, then quantize)
// when tensor_scratch (3 x uint32 of device memory) is given, else one block. Loads are 16-byte vectors
// where the address is 16-byte aligned and the chunk is whole, scalar otherwise; grid-stride loops.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "qnum/codec.hpp"
#include "qnum/config.hpp"
#include "qnum/quantize.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/scale.hpp"

QNUM_BEGIN_NAMESPACE
namespace cuda {

// ---------------------------------------------------------------------------------------------------
// Primitives

// Shuffle mask of the aligned L-lane sub-group that holds `lane`.
template <int L>
__device__ __forceinline__ unsigned subgroup_mask(unsigned lane) {
  static_assert(L == 1 || L == 2 || L == 4 || L == 8 || L == 16 || L == 32, "L must be a power of two <= 32");
  return L == 32 ? 0xFFFFFFFFu : (((1u << L) - 1u) << (lane & static_cast<unsigned>(32 - L)));
}

template <int L>
__device__ __forceinline__ group_stats subgroup_reduce(group_stats st, unsigned lane) {
  const unsigned mask = subgroup_mask<L>(lane);
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) {
    group_stats b;
    b.amax = __shfl_xor_sync(mask, st.amax, o);
    b.min = __shfl_xor_sync(mask, st.min, o);
    b.max = __shfl_xor_sync(mask, st.max, o);
    st = merge(st, b);
  }
  return st;
}

template <int L>
__device__ __forceinline__ float subgroup_amax(float amax, unsigned lane) {
  const unsigned mask = subgroup_mask<L>(lane);
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) {
    const float b = __shfl_xor_sync(mask, amax, o);
    amax = b > amax ? b : amax;
  }
  return amax;
}

struct merge_stats_op {
  __device__ __forceinline__ group_stats operator()(const group_stats& a, const group_stats& b) const { return merge(a, b); }
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
  return view(reinterpret_cast<const std::uint16_t*>(p), rows, cols, row_stride, tensor_type::bf16);
}
inline matrix_view<const std::uint16_t> device_view(const __half* p, std::int64_t rows, std::int64_t cols,
                                                    std::int64_t row_stride = -1) {
  return view(reinterpret_cast<const std::uint16_t*>(p), rows, cols, row_stride, tensor_type::fp16);
}
inline matrix_view<std::uint16_t> device_view(__nv_bfloat16* p, std::int64_t rows, std::int64_t cols,
                                              std::int64_t row_stride = -1) {
  return view(reinterpret_cast<std::uint16_t*>(p), rows, cols, row_stride, tensor_type::bf16);
}
inline matrix_view<std::uint16_t> device_view(__half* p, std::int64_t rows, std::int64_t cols,
                                              std::int64_t row_stride = -1) {
  return view(reinterpret_cast<std::uint16_t*>(p), rows, cols, row_stride, tensor_type::fp16);
}

namespace detail {

template <class T>
struct vec {
  static constexpr int size = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte load
};

__device__ __forceinline__ bool aligned(const void* p, unsigned bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1u)) == 0;
}

// n (0..V) elements from p into v[0..n), zeros after; 16-byte loads when whole and aligned.
template <class T, int V>
__device__ __forceinline__ void load_chunk(const T* p, tensor_type t, int n, float (&v)[V]) {
  constexpr int bytes = V * static_cast<int>(sizeof(T));
  if constexpr (bytes % 16 == 0) {
    if (n == V && aligned(p, 16)) {
#pragma unroll
      for (int k = 0; k < bytes / 16; ++k) {
        const ::uint4 raw = __ldg(reinterpret_cast<const ::uint4*>(p) + k);
        const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
        constexpr int per = 16 / static_cast<int>(sizeof(T));
#pragma unroll
        for (int i = 0; i < per; ++i) {
          if constexpr (sizeof(T) == 4) {
            v[k * per + i] = __uint_as_float(w[i]);
          } else {
            const std::uint16_t h = static_cast<std::uint16_t>(w[i / 2] >> (16 * (i % 2)));
            v[k * per + i] = qnum::detail::load_elem(&h, t);
          }
        }
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = i < n ? qnum::detail::load_elem(p + i, t) : 0.0f;
}

// v[0..n) to p (fp32, or bf16/fp16 RNE); 16-byte stores when whole and aligned.
template <class T, int V>
__device__ __forceinline__ void store_chunk(T* p, tensor_type t, int n, const float (&v)[V]) {
  constexpr int bytes = V * static_cast<int>(sizeof(T));
  if constexpr (bytes % 16 == 0) {
    if (n == V && aligned(p, 16)) {
      constexpr int per = 16 / static_cast<int>(sizeof(T));
#pragma unroll
      for (int k = 0; k < bytes / 16; ++k) {
        unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int i = 0; i < per; ++i) {
          if constexpr (sizeof(T) == 4) {
            w[i] = __float_as_uint(v[k * per + i]);
          } else {
            std::uint16_t h;
            qnum::detail::store_elem(&h, t, v[k * per + i]);
            w[i / 2] |= static_cast<unsigned>(h) << (16 * (i % 2));
          }
        }
        reinterpret_cast<::uint4*>(p)[k] = make_uint4(w[0], w[1], w[2], w[3]);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (i < n) qnum::detail::store_elem(p + i, t, v[i]);
}

// n (0..V, V = 4 or 8) code bytes; one 4- or 8-byte store when whole and aligned.
template <int V>
__device__ __forceinline__ void store_codes(std::uint8_t* p, int n, const std::uint8_t (&c)[V]) {
  if (n == V && aligned(p, V)) {
    if constexpr (V == 8) {
      unsigned lo = 0u, hi = 0u;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        lo |= static_cast<unsigned>(c[i]) << (8 * i);
        hi |= static_cast<unsigned>(c[i + 4]) << (8 * i);
      }
      *reinterpret_cast<uint2*>(p) = make_uint2(lo, hi);
      return;
    } else if constexpr (V == 4) {
      unsigned w = 0u;
#pragma unroll
      for (int i = 0; i < 4; ++i) w |= static_cast<unsigned>(c[i]) << (8 * i);
      *reinterpret_cast<unsigned*>(p) = w;
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (i < n) p[i] = c[i];
}

enum class emit : int { codes, fake, packed };

// Everything a kernel needs (by value).
template <class F, class T, class U>
struct job {
  scheme<F> s;
  matrix_view<const T> in;
  std::int64_t gr = 1, gc = 1, nr = 0, nc = 0;
  matrix_view<std::uint8_t> codes;        // emit::codes
  matrix_view<U> out;                      // emit::fake
  std::uint32_t* packed = nullptr;         // emit::packed, row stride packed_stride words
  std::int64_t packed_stride = 0;
  scale_view scales;                       // codes, packed
  matrix_view<std::int32_t> zeros;         // asymmetric
  rounding rd;
  float outer = 0.0f;
  const std::uint32_t* tensor_stats = nullptr;  // per-tensor path
};

template <class F, class T, class U>
__device__ __forceinline__ void write_group_params(const job<F, T, U>& j, std::int64_t bi, std::int64_t bj,
                                                   const group_params& p) {
  qnum::detail::write_scale(j.scales, bi, bj, p.scale_code);
  if (j.s.kind == scheme_kind::asymmetric) j.zeros.data[bi * j.zeros.row_stride + bj] = p.zero;
}

// Emit the chunk of n elements at (r, c) of values v with parameters p.
template <emit E, class F, class T, class U, int V>
__device__ __forceinline__ void emit_chunk(const job<F, T, U>& j, const group_params& p, std::int64_t r, std::int64_t c,
                                           int n, const float (&v)[V]) {
  const std::int64_t idx0 = r * j.in.cols + c;
  if constexpr (E == emit::packed) {
    static_assert(V == 8 && F::bits == 4 && F::is_signed, "W4A16 packing: signed 4-bit, 8 elements per word");
    std::uint32_t word = 0u;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (i < n) {
        const int q = j.rd.mode == rounding_mode::stochastic
                          ? quantize_int_value(j.s, p, v[i], stochastic(random_bits(j.rd.seed, static_cast<std::uint64_t>(idx0 + i))))
                          : quantize_int_value(j.s, p, v[i], rne);
        word |= static_cast<std::uint32_t>((q + 8) & 0xF) << (4 * i);
      }
    }
    j.packed[r * j.packed_stride + c / 8] = word;
  } else if constexpr (E == emit::codes) {
    std::uint8_t cb[V];
#pragma unroll
    for (int i = 0; i < V; ++i) cb[i] = static_cast<std::uint8_t>(qnum::detail::quantize_with(j.s, p, v[i], j.rd, idx0 + i));
    if constexpr (V == 4 || V == 8) {
      store_codes<V>(j.codes.data + r * j.codes.row_stride + c, n, cb);
    } else {
      for (int i = 0; i < n; ++i) j.codes.data[r * j.codes.row_stride + c + i] = cb[i];
    }
  } else {
    float o[V];
#pragma unroll
    for (int i = 0; i < V; ++i) o[i] = dequantize_value(j.s, p, qnum::detail::quantize_with(j.s, p, v[i], j.rd, idx0 + i));
    store_chunk<U, V>(j.out.data + r * j.out.row_stride + c, j.out.type, n, o);
  }
}

// 1xG groups along rows; L lanes per group, chunks of V elements; grid-stride over groups.
template <emit E, int L, class F, class T, class U>
__global__ void __launch_bounds__(256) rows_kernel(job<F, T, U> j) {
  constexpr int V = E == emit::packed ? 8 : vec<T>::size;
  const unsigned lane = threadIdx.x & 31u;
  const int sub = static_cast<int>(threadIdx.x % L);
  const std::int64_t per_block = blockDim.x / L;
  const std::int64_t total = j.nr * j.nc;
  const bool single = j.gc <= static_cast<std::int64_t>(L) * V;  // one chunk per lane: stay in registers
  for (std::int64_t g = blockIdx.x * per_block + threadIdx.x / L; g < total; g += gridDim.x * per_block) {
    const std::int64_t r = g / j.nc, bj = g % j.nc;
    const std::int64_t c0 = bj * j.gc;
    const std::int64_t c1 = c0 + j.gc < j.in.cols ? c0 + j.gc : j.in.cols;
    const T* row = j.in.data + r * j.in.row_stride;
    group_stats st;
    float v[V];
    for (std::int64_t c = c0 + static_cast<std::int64_t>(sub) * V; c < c1; c += static_cast<std::int64_t>(L) * V) {
      const int n = c1 - c < V ? static_cast<int>(c1 - c) : V;
      load_chunk<T, V>(row + c, j.in.type, n, v);
#pragma unroll
      for (int i = 0; i < V; ++i) accumulate(st, v[i]);
    }
    st = subgroup_reduce<L>(st, lane);
    const group_params p = compute_params(j.s, st, j.outer);
    if (E != emit::fake && sub == 0) write_group_params(j, r, bj, p);
    for (std::int64_t c = c0 + static_cast<std::int64_t>(sub) * V; c < c1; c += static_cast<std::int64_t>(L) * V) {
      const int n = c1 - c < V ? static_cast<int>(c1 - c) : V;
      if (!single) load_chunk<T, V>(row + c, j.in.type, n, v);
      emit_chunk<E>(j, p, r, c, n, v);
    }
  }
}

constexpr int block_threads = 256;

// Any RxC groups: one block per group (grid-stride), chunks of V elements along each row of the group.
template <emit E, class F, class T, class U>
__global__ void __launch_bounds__(block_threads) block_kernel(job<F, T, U> j) {
  constexpr int V = vec<T>::size;
  __shared__ typename block_stats<block_threads>::storage ts;
  const std::int64_t total = j.nr * j.nc;
  for (std::int64_t g = blockIdx.x; g < total; g += gridDim.x) {
    const std::int64_t bi = g / j.nc, bj = g % j.nc;
    const std::int64_t r0 = bi * j.gr, c0 = bj * j.gc;
    const std::int64_t r1 = r0 + j.gr < j.in.rows ? r0 + j.gr : j.in.rows;
    const std::int64_t c1 = c0 + j.gc < j.in.cols ? c0 + j.gc : j.in.cols;
    const std::int64_t cpr = (c1 - c0 + V - 1) / V;
    const std::int64_t nch = (r1 - r0) * cpr;
    group_stats st;
    float v[V];
    for (std::int64_t ch = threadIdx.x; ch < nch; ch += block_threads) {
      const std::int64_t r = r0 + ch / cpr, c = c0 + (ch % cpr) * V;
      const int n = c1 - c < V ? static_cast<int>(c1 - c) : V;
      load_chunk<T, V>(j.in.data + r * j.in.row_stride + c, j.in.type, n, v);
#pragma unroll
      for (int i = 0; i < V; ++i) accumulate(st, v[i]);
    }
    st = block_stats<block_threads>::reduce(ts, st);
    const group_params p = compute_params(j.s, st, j.outer);
    if (E != emit::fake && threadIdx.x == 0) write_group_params(j, bi, bj, p);
    for (std::int64_t ch = threadIdx.x; ch < nch; ch += block_threads) {
      const std::int64_t r = r0 + ch / cpr, c = c0 + (ch % cpr) * V;
      const int n = c1 - c < V ? static_cast<int>(c1 - c) : V;
      load_chunk<T, V>(j.in.data + r * j.in.row_stride + c, j.in.type, n, v);
      emit_chunk<E>(j, p, r, c, n, v);
    }
  }
}

// Per-tensor statistics into stats[0..3) = bits of amax, |min|, max (non-negative floats: unsigned max
// is float max). stats must be zeroed first.
template <class T>
__global__ void __launch_bounds__(block_threads) tensor_stats_kernel(matrix_view<const T> in, std::uint32_t* stats) {
  constexpr int V = vec<T>::size;
  __shared__ typename block_stats<block_threads>::storage ts;
  const std::int64_t cpr = (in.cols + V - 1) / V;
  const std::int64_t nch = in.rows * cpr;
  group_stats st;
  float v[V];
  for (std::int64_t ch = blockIdx.x * static_cast<std::int64_t>(block_threads) + threadIdx.x; ch < nch;
       ch += static_cast<std::int64_t>(gridDim.x) * block_threads) {
    const std::int64_t r = ch / cpr, c = (ch % cpr) * V;
    const int n = in.cols - c < V ? static_cast<int>(in.cols - c) : V;
    load_chunk<T, V>(in.data + r * in.row_stride + c, in.type, n, v);
#pragma unroll
    for (int i = 0; i < V; ++i) accumulate(st, v[i]);
  }
  st = block_stats<block_threads>::reduce(ts, st);
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
template <emit E, class F, class T, class U>
__global__ void __launch_bounds__(block_threads) tensor_quantize_kernel(job<F, T, U> j) {
  constexpr int V = vec<T>::size;
  const group_params p = compute_params(j.s, stats_from_bits(j.tensor_stats), j.outer);
  if (E != emit::fake && blockIdx.x == 0 && threadIdx.x == 0) write_group_params(j, 0, 0, p);
  const std::int64_t cpr = (j.in.cols + V - 1) / V;
  const std::int64_t nch = j.in.rows * cpr;
  float v[V];
  for (std::int64_t ch = blockIdx.x * static_cast<std::int64_t>(block_threads) + threadIdx.x; ch < nch;
       ch += static_cast<std::int64_t>(gridDim.x) * block_threads) {
    const std::int64_t r = ch / cpr, c = (ch % cpr) * V;
    const int n = j.in.cols - c < V ? static_cast<int>(j.in.cols - c) : V;
    load_chunk<T, V>(j.in.data + r * j.in.row_stride + c, j.in.type, n, v);
    emit_chunk<E>(j, p, r, c, n, v);
  }
}

// Dequantize: element-wise over chunks of 8 codes; each element rebuilds its group's parameters.
template <class F, class U>
__global__ void __launch_bounds__(block_threads) dequantize_kernel(scheme<F> s, matrix_view<const std::uint8_t> codes,
                                                                   std::int64_t gr, std::int64_t gc, scale_view scales,
                                                                   matrix_view<const std::int32_t> zeros,
                                                                   matrix_view<U> out, float outer) {
  constexpr int V = 8;
  const bool asym = s.kind == scheme_kind::asymmetric;
  const std::int64_t cpr = (out.cols + V - 1) / V;
  const std::int64_t nch = out.rows * cpr;
  for (std::int64_t ch = blockIdx.x * static_cast<std::int64_t>(block_threads) + threadIdx.x; ch < nch;
       ch += static_cast<std::int64_t>(gridDim.x) * block_threads) {
    const std::int64_t r = ch / cpr, c = (ch % cpr) * V;
    const int n = out.cols - c < V ? static_cast<int>(out.cols - c) : V;
    const std::uint8_t* cp = codes.data + r * codes.row_stride + c;
    std::uint8_t cb[V];
    if (n == V && aligned(cp, 8)) {
      const uint2 w = *reinterpret_cast<const uint2*>(cp);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        cb[i] = static_cast<std::uint8_t>(w.x >> (8 * i));
        cb[i + 4] = static_cast<std::uint8_t>(w.y >> (8 * i));
      }
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) cb[i] = i < n ? cp[i] : std::uint8_t{0};
    }
    const std::int64_t bi = r / gr;
    float o[V];
    std::int64_t cur = -1;
    group_params p;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const std::int64_t bj = (c + i) / gc;
      if (i < n && bj != cur) {
        cur = bj;
        p = qnum::detail::params_from_stored(s, qnum::detail::read_scale(scales, bi, bj),
                                             asym ? zeros.data[bi * zeros.row_stride + bj] : 0, outer);
      }
      o[i] = i < n ? dequantize_value(s, p, cb[i]) : 0.0f;
    }
    store_chunk<U, V>(out.data + r * out.row_stride + c, out.type, n, o);
  }
}

inline unsigned grid_for(std::int64_t work_items, std::int64_t per_block) {
  const std::int64_t b = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65536 ? 65536 : b));
}

inline int lanes_for(std::int64_t gc, int v) {
  const std::int64_t chunks = (gc + v - 1) / v;
  int l = 1;
  while (l < 32 && l < chunks) l *= 2;
  return l < 2 ? 2 : l;
}

// Largest 1xG group handled by a sub-warp (8 chunks per lane); longer rows go to a block per group.
template <class T>
constexpr std::int64_t subwarp_max_group() { return 32 * vec<T>::size * 8; }

template <class T>
inline bool elem_aligned(const T* p) { return (reinterpret_cast<std::uintptr_t>(p) % alignof(T)) == 0; }

template <class F, class T, class U>
cudaError_t check_in(const scheme<F>& s, matrix_view<const T> in, group_shape groups, job<F, T, U>& j) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::uint16_t>, "inputs: float or 16-bit bits");
  if (qnum::detail::check_view(in) != status::ok) return cudaErrorInvalidValue;
  if (in.rows > 0 && in.cols > 0 && !elem_aligned(in.data)) return cudaErrorInvalidValue;
  if (sizeof(T) == 2 && in.type == tensor_type::fp32) return cudaErrorInvalidValue;
  qnum::detail::grid g;
  if (qnum::detail::make_grid(in.rows, in.cols, groups, g) != status::ok) return cudaErrorInvalidValue;
  j.s = s;
  j.in = in;
  j.gr = g.gr;
  j.gc = g.gc;
  j.nr = g.nr;
  j.nc = g.nc;
  return cudaSuccess;
}

template <class F, class T, class U>
cudaError_t check_scales(job<F, T, U>& j, scale_view scales, matrix_view<std::int32_t> zeros) {
  qnum::detail::grid g;
  g.gr = j.gr; g.gc = j.gc; g.nr = j.nr; g.nc = j.nc;
  if (qnum::detail::check_scales(scales, g, scale_bytes(j.s.store)) != status::ok) return cudaErrorInvalidValue;
  if (qnum::detail::check_zeros(zeros, g, j.s.kind == scheme_kind::asymmetric) != status::ok) return cudaErrorInvalidValue;
  if ((reinterpret_cast<std::uintptr_t>(scales.data) % static_cast<unsigned>(scales.elem_bytes)) != 0) return cudaErrorInvalidValue;
  if (zeros.data != nullptr && !elem_aligned(zeros.data)) return cudaErrorInvalidValue;
  j.scales = scales;
  j.zeros = zeros;
  return cudaSuccess;
}

template <emit E, int L, class F, class T, class U>
cudaError_t launch_rows_l(const job<F, T, U>& j, cudaStream_t stream) {
  rows_kernel<E, L><<<grid_for(j.nr * j.nc, 256 / L), 256, 0, stream>>>(j);
  return cudaGetLastError();
}

// Pick the kernel for a validated job.
template <emit E, class F, class T, class U>
cudaError_t run(job<F, T, U> j, cudaStream_t stream, std::uint32_t* tensor_scratch) {
  if constexpr (E == emit::packed) {
    switch (lanes_for(j.gc, 8)) {
      case 2: return launch_rows_l<E, 2>(j, stream);
      case 4: return launch_rows_l<E, 4>(j, stream);
      case 8: return launch_rows_l<E, 8>(j, stream);
      case 16: return launch_rows_l<E, 16>(j, stream);
      default: return launch_rows_l<E, 32>(j, stream);
    }
  } else {
    constexpr int V = vec<T>::size;
    if (j.nr * j.nc == 1 && tensor_scratch != nullptr) {
      if (cudaError_t e = cudaMemsetAsync(tensor_scratch, 0, 3 * sizeof(std::uint32_t), stream); e != cudaSuccess) return e;
      const std::int64_t chunks = j.in.rows * ((j.in.cols + V - 1) / V);
      tensor_stats_kernel<T><<<grid_for(chunks, block_threads * 4), block_threads, 0, stream>>>(j.in, tensor_scratch);
      if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
      j.tensor_stats = tensor_scratch;
      tensor_quantize_kernel<E><<<grid_for(chunks, block_threads * 4), block_threads, 0, stream>>>(j);
      return cudaGetLastError();
    }
    if (j.gr == 1 && j.gc <= subwarp_max_group<T>()) {
      switch (lanes_for(j.gc, V)) {
        case 2: return launch_rows_l<E, 2>(j, stream);
        case 4: return launch_rows_l<E, 4>(j, stream);
        case 8: return launch_rows_l<E, 8>(j, stream);
        case 16: return launch_rows_l<E, 16>(j, stream);
        default: return launch_rows_l<E, 32>(j, stream);
      }
    }
    block_kernel<E><<<grid_for(j.nr * j.nc, 1), block_threads, 0, stream>>>(j);
    return cudaGetLastError();
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------
// Launchers

// Codes (one byte per element) + scales (+ zero points) on the device; equal to qnum::quantize.
// tensor_scratch: optional 3 x uint32 device buffer used when the tensor is one group (per_tensor):
// two kernels (stats, quantize) instead of one block for the whole tensor.
template <class F, class T>
cudaError_t launch_quantize(const scheme<F>& s, matrix_view<const T> in, group_shape groups,
                            matrix_view<std::uint8_t> codes, scale_view scales, matrix_view<std::int32_t> zeros = {},
                            rounding rd = {}, float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                            std::uint32_t* tensor_scratch = nullptr) {
  detail::job<F, T, float> j;
  if (cudaError_t e = detail::check_in(s, in, groups, j); e != cudaSuccess) return e;
  if (qnum::detail::check_view(codes) != status::ok || codes.rows != in.rows || codes.cols != in.cols)
    return cudaErrorInvalidValue;
  if (in.rows == 0 || in.cols == 0) return cudaSuccess;
  if (cudaError_t e = detail::check_scales(j, scales, zeros); e != cudaSuccess) return e;
  j.codes = codes;
  j.rd = rd;
  j.outer = outer_scale;
  return detail::run<detail::emit::codes>(j, stream, tensor_scratch);
}

// out = dequantize(quantize(in)) on the device (fp32 or bf16/fp16 bits); equal to qnum::fake_quantize.
template <class F, class T, class U>
cudaError_t launch_fake_quantize(const scheme<F>& s, matrix_view<const T> in, group_shape groups, matrix_view<U> out,
                                 rounding rd = {}, float outer_scale = 0.0f, cudaStream_t stream = nullptr,
                                 std::uint32_t* tensor_scratch = nullptr) {
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, std::uint16_t>, "outputs: float or 16-bit bits");
  detail::job<F, T, U> j;
  if (cudaError_t e = detail::check_in(s, in, groups, j); e != cudaSuccess) return e;
  if (qnum::detail::check_view(out) != status::ok || out.rows != in.rows || out.cols != in.cols)
    return cudaErrorInvalidValue;
  if (in.rows == 0 || in.cols == 0) return cudaSuccess;
  if (!detail::elem_aligned(out.data) || (sizeof(U) == 2 && out.type == tensor_type::fp32)) return cudaErrorInvalidValue;
  j.out = out;
  j.rd = rd;
  j.outer = outer_scale;
  return detail::run<detail::emit::fake>(j, stream, tensor_scratch);
}

// out = dequantize_value(s, params_from_stored(scale, zero), code); equal to qnum::dequantize.
template <class F, class U>
cudaError_t launch_dequantize(const scheme<F>& s, matrix_view<const std::uint8_t> codes, group_shape groups,
                              scale_view scales, matrix_view<const std::int32_t> zeros, matrix_view<U> out,
                              float outer_scale = 0.0f, cudaStream_t stream = nullptr) {
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, std::uint16_t>, "outputs: float or 16-bit bits");
  if (qnum::detail::check_view(codes) != status::ok || qnum::detail::check_view(out) != status::ok) return cudaErrorInvalidValue;
  if (codes.rows != out.rows || codes.cols != out.cols) return cudaErrorInvalidValue;
  qnum::detail::grid g;
  if (qnum::detail::make_grid(out.rows, out.cols, groups, g) != status::ok) return cudaErrorInvalidValue;
  if (out.rows == 0 || out.cols == 0) return cudaSuccess;
  if (!detail::elem_aligned(out.data) || (sizeof(U) == 2 && out.type == tensor_type::fp32)) return cudaErrorInvalidValue;
  if (qnum::detail::check_scales(scales, g, scale_bytes(s.store)) != status::ok) return cudaErrorInvalidValue;
  if ((reinterpret_cast<std::uintptr_t>(scales.data) % static_cast<unsigned>(scales.elem_bytes)) != 0) return cudaErrorInvalidValue;
  if (s.kind == scheme_kind::asymmetric) {
    if (zeros.data == nullptr || zeros.rows != g.nr || zeros.cols != g.nc || zeros.row_stride < zeros.cols ||
        !detail::elem_aligned(zeros.data))
      return cudaErrorInvalidValue;
  }
  const std::int64_t chunks = out.rows * ((out.cols + 7) / 8);
  detail::dequantize_kernel<<<detail::grid_for(chunks, detail::block_threads), detail::block_threads, 0, stream>>>(
      s, codes, g.gr, g.gc, scales, zeros, out, outer_scale);
  return cudaGetLastError();
}

// Per-tensor statistics: stats[0] = bits of amax, stats[1] = bits of |min(x, 0)|, stats[2] = bits of
// max(x, 0) over the finite elements (3 x uint32 device buffer; zeroed here first).
template <class T>
cudaError_t launch_tensor_stats(matrix_view<const T> in, std::uint32_t* stats, cudaStream_t stream = nullptr) {
  if (stats == nullptr || !detail::elem_aligned(stats)) return cudaErrorInvalidValue;
  if (qnum::detail::check_view(in) != status::ok) return cudaErrorInvalidValue;
  if (cudaError_t e = cudaMemsetAsync(stats, 0, 3 * sizeof(std::uint32_t), stream); e != cudaSuccess) return e;
  if (in.rows == 0 || in.cols == 0) return cudaSuccess;
  if (!detail::elem_aligned(in.data)) return cudaErrorInvalidValue;
  const std::int64_t chunks = in.rows * ((in.cols + detail::vec<T>::size - 1) / detail::vec<T>::size);
  detail::tensor_stats_kernel<T><<<detail::grid_for(chunks, detail::block_threads * 4), detail::block_threads, 0, stream>>>(in, stats);
  return cudaGetLastError();
}

// Fused W4A16 (compressed-tensors pack-quantized): w [N, K] -> weight_packed [N, ceil(K/8)] int32 words
// (row stride packed_stride words, >= ceil(K/8); -1 = dense) with nibble q + 8, weight_scale [N, ceil(K/G)]
// in s.store's type, signed zero points [N, ceil(K/G)] int32 (asymmetric). G must be a multiple of 8.
template <class T>
cudaError_t launch_w4a16_pack(const scheme<qnum::int4>& s, matrix_view<const T> w, std::int64_t group,
                              std::uint32_t* weight_packed, scale_view scales, matrix_view<std::int32_t> zeros = {},
                              cudaStream_t stream = nullptr, std::int64_t packed_stride = -1, rounding rd = {}) {
  if (group <= 0 || group % 8 != 0) return cudaErrorInvalidValue;
  detail::job<qnum::int4, T, float> j;
  if (cudaError_t e = detail::check_in(s, w, group_size(group), j); e != cudaSuccess) return e;
  if (w.rows == 0 || w.cols == 0) return cudaSuccess;
  const std::int64_t words = (w.cols + 7) / 8;
  if (packed_stride < 0) packed_stride = words;
  if (weight_packed == nullptr || !detail::elem_aligned(weight_packed) || packed_stride < words) return cudaErrorInvalidValue;
  if (cudaError_t e = detail::check_scales(j, scales, zeros); e != cudaSuccess) return e;
  j.packed = weight_packed;
  j.packed_stride = packed_stride;
  j.rd = rd;
  return detail::run<detail::emit::packed>(j, stream, nullptr);
}

}  // namespace cuda
QNUM_END_NAMESPACE
