// qnum/train/dynamic_scale.cuh: fused CUDA kernels for INT8 gradients with EMA-clipped dynamic scales
// and residual error feedback, and the INT8-state Adam step (device twins of dynamic_scale.hpp and
// int8_adam.hpp: same element functions, same bits).
//
//   gpu::launch_quantize_gradient_int8(g, groups, codes, residual, states, scratch, cfg, stream)
//   gpu::launch_dequantize_gradient_int8(codes, groups, states, out, stream)
//   gpu::launch_int8_adam_step(p, g, state, config, t, stream)
// Same matrix_view arguments (of device memory), the same checks (one function each, shared with the host:
// detail::check_quantize_gradient, detail::check_dequantize_gradient, int8_adam_check) and the same statuses.
//
// launch_quantize_gradient_int8 enqueues five kernels on `stream`; only two of them touch the tensor:
//   begin    (per group)   decide whether a pre-scan is needed (first step, scale_timing::current,
//                          or nonfinite_policy::skip_step), clear the scratch
//   scan     (per element) amax of g + r and the non-finite flag; returns at once when not needed,
//                          so with delayed timing and zero_elements every step after the first reads
//                          the tensor once
//   prepare  (per group)   the step's scale s_t, inv = 127 / s_t, dq = s_t / 127 (or: skip the step)
//   quantize (per element) the fused pass: g' = g + r, codes, new residual, amax_t for the next step
//   finish   (per group)   store s_t, amax_t and the counters in the states (the same as the host)
// After the launch, dynamic_scale_scratch_header (at the start of the scratch) holds the step's
// status; copy it back and pass it to dynamic_scale_status() when the caller wants it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "qnum/detail/fast_div.hpp"
#include "qnum/gpu/codec_hw.cuh"
#include "qnum/gpu/status.cuh"
#include "qnum/train/dynamic_scale.hpp"
#include "qnum/train/int8_adam.hpp"
#include "qnum/view.hpp"

QNUM_BEGIN_NAMESPACE
namespace gpu {

struct dynamic_scale_scratch_header {
  unsigned need_scan;
  unsigned scan_nonfinite;
  unsigned pass_nonfinite;
  unsigned skip;
};
struct dynamic_scale_group_scratch {
  float scale, inv, dq;
  unsigned scan_amax_bits;  // bit patterns of non-negative floats: unsigned max == float max
  unsigned amax_bits;
};

// Bytes of device scratch for n_groups groups (allocate once, reuse every step).
inline std::size_t dynamic_scale_scratch_bytes(std::size_t n_groups) {
  return sizeof(dynamic_scale_scratch_header) + n_groups * sizeof(dynamic_scale_group_scratch);
}

// The status of the last step from a copied-back header (same values as the host entry point).
inline status dynamic_scale_status(const dynamic_scale_scratch_header& h) {
  if (h.skip) return status::skipped_nonfinite;
  return h.pass_nonfinite ? status::ok_zeroed_nonfinite : status::ok;
}

namespace detail {

// f(std::true_type{}) for a tensor of one group, f(std::false_type{}) for several: the launchers fix the kernels'
// group-count case here (one group: no group lookup or group-change test a chunk).
template <class F>
inline void with_group_count(std::size_t n_groups, F&& f) {
  if (n_groups == 1) f(std::true_type{});
  else f(std::false_type{});
}

inline __device__ dynamic_scale_group_scratch* groups_of(dynamic_scale_scratch_header* h) {
  return reinterpret_cast<dynamic_scale_group_scratch*>(h + 1);
}

inline __device__ bool first_step(const dynamic_scale_state* states) {
  return states[0].steps == 0 || !(states[0].scale > 0.0f);
}

// Per-thread running max keyed by group, flushed with one atomicMax when the group changes.
struct group_max {
  std::size_t group = ~std::size_t{0};
  unsigned bits = 0;
  // Make g the running group (flushing the previous one's max); true when it changed.
  __device__ bool enter(std::size_t g, dynamic_scale_group_scratch* gs, bool scan) {
    if (g == group) return false;
    flush(gs, scan);
    group = g;
    bits = 0;
    return true;
  }
  __device__ void add_bits(unsigned b) { bits = b > bits ? b : bits; }  // b: bits of a non-negative float
  __device__ void add(std::size_t g, float a, dynamic_scale_group_scratch* gs, bool scan) {
    enter(g, gs, scan);
    add_bits(__float_as_uint(a));
  }
  __device__ void flush(dynamic_scale_group_scratch* gs, bool scan) {
    if (group != ~std::size_t{0} && bits != 0) atomicMax(scan ? &gs[group].scan_amax_bits : &gs[group].amax_bits, bits);
  }
};

// Flush every thread's group_max through its warp and block: where a warp's threads end on one group (the
// per-tensor case), one shuffle reduction; runs of warps on one group, one atomicMax per block. Every thread
// of the block calls it (it synchronises the block).
__device__ inline unsigned* amax_slot(dynamic_scale_group_scratch* gs, std::size_t g, bool scan) {
  return scan ? &gs[g].scan_amax_bits : &gs[g].amax_bits;
}
__device__ inline void flush_block(group_max& acc, dynamic_scale_group_scratch* gs, bool scan) {
  constexpr std::size_t none = ~std::size_t{0};
  __shared__ std::size_t warp_group[32];
  __shared__ unsigned warp_bits[32];
  const unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  const std::size_t g0 = __shfl_sync(0xFFFFFFFFu, acc.group, 0);
  const bool uniform = __all_sync(0xFFFFFFFFu, acc.group == g0);
  unsigned b = acc.bits;
  if (uniform) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned x = __shfl_xor_sync(0xFFFFFFFFu, b, o);
      b = x > b ? x : b;
    }
  } else {
    acc.flush(gs, scan);
  }
  if (lane == 0u) {
    warp_group[w] = uniform ? g0 : none;
    warp_bits[w] = uniform ? b : 0u;
  }
  __syncthreads();
  if (threadIdx.x == 0u) {
    std::size_t cur = none;
    unsigned bits = 0u;
    for (unsigned i = 0; i < blockDim.x / 32u; ++i) {
      if (warp_group[i] != cur) {
        if (cur != none && bits != 0u) atomicMax(amax_slot(gs, cur, scan), bits);
        cur = warp_group[i];
        bits = 0u;
      }
      bits = warp_bits[i] > bits ? warp_bits[i] : bits;
    }
    if (cur != none && bits != 0u) atomicMax(amax_slot(gs, cur, scan), bits);
  }
}

// Four consecutive elements: g as one 16-byte load, the residual as one 16- (fp32) or 8-byte (bf16) load.
// vec_ok: every chunk of 4 lies in one group (group size % 4 == 0) and the pointers are aligned for it.
struct four {
  float v[4];
};
__device__ inline four load4(const float* p) {
  const float4 x = *reinterpret_cast<const float4*>(p);
  return {{x.x, x.y, x.z, x.w}};
}
// bf16 residuals: one 8-byte access, each element through load_residual / store_residual (the host's rules).
__device__ inline four load4(const std::uint16_t* p) {
  const uint2 x = *reinterpret_cast<const uint2*>(p);
  const std::uint16_t h[4] = {static_cast<std::uint16_t>(x.x), static_cast<std::uint16_t>(x.x >> 16),
                              static_cast<std::uint16_t>(x.y), static_cast<std::uint16_t>(x.y >> 16)};
  return {{load_residual(h, 0), load_residual(h, 1), load_residual(h, 2), load_residual(h, 3)}};
}
__device__ inline void store4(float* p, const four& f) { *reinterpret_cast<float4*>(p) = make_float4(f.v[0], f.v[1], f.v[2], f.v[3]); }
// bf16 residuals: store_residual is encode<bf16>(v, rne, satfinite). Below 0x1.feffp127 in magnitude (the
// rounding boundary to bf16 infinity) that is what bf16x2_bits_rn (codec_hw.cuh) gives, one instruction a
// pair; a chunk with a larger, infinite or NaN value takes store_residual.
__device__ inline void store4(std::uint16_t* p, const four& f) {
  constexpr float edge = 0x1.feffp127f;
  if (fabsf(f.v[0]) < edge && fabsf(f.v[1]) < edge && fabsf(f.v[2]) < edge && fabsf(f.v[3]) < edge) {
    *reinterpret_cast<uint2*>(p) = make_uint2(bf16x2_bits_rn(f.v[0], f.v[1]), bf16x2_bits_rn(f.v[2], f.v[3]));
    return;
  }
  std::uint16_t h[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) store_residual(h, static_cast<std::size_t>(e), f.v[e]);
  *reinterpret_cast<uint2*>(p) = make_uint2(h[0] | (static_cast<unsigned>(h[1]) << 16), h[2] | (static_cast<unsigned>(h[3]) << 16));
}
template <class Residual>
inline bool vec4_ok(const float* g, const std::int8_t* codes, const Residual* r, std::size_t gs) {
  const auto a = [](const void* p, std::uintptr_t b) { return (reinterpret_cast<std::uintptr_t>(p) % b) == 0; };
  return gs % 4 == 0 && a(g, 16) && (codes == nullptr || a(codes, 4)) && (r == nullptr || a(r, 4 * sizeof(Residual)));
}

// The group of chunk c (elements 4c .. 4c + 3, one group: vec4_ok) of a tensor of n elements in groups of gs: 0 for
// one group, else 4c / gs, as a 32-bit fast_div by gs / 4 where c < 2^31 (n < 2^33), a 64-bit division otherwise.
struct chunk_groups {
  std::size_t gs = 1;
  qnum::detail::fast_div quarter;  // gs / 4 (small)
  bool one = true, small = false;
  chunk_groups() = default;
  chunk_groups(std::size_t n, std::size_t group) : gs(group), one(group == n) {
    small = !one && n / 4 < (std::size_t{1} << 31) && group / 4 >= 1 && group / 4 < (std::size_t{1} << 31);
    if (small) quarter = qnum::detail::fast_div(static_cast<std::uint32_t>(group / 4));
  }
  __device__ std::size_t of(std::size_t c) const {
    return one ? 0 : small ? quarter.div(static_cast<std::uint32_t>(c)) : 4 * c / gs;
  }
};
// Chunks a thread handles per step of the vector loops (chunk u of thread t at step base + u * ds_threads + t, so
// a warp's accesses are contiguous): their loads are issued together.
constexpr unsigned ds_unroll = 4;
// Threads per block of the element kernels (every launcher here launches them so): a compile-time stride between
// a step's chunks, whose addresses are then one pointer and immediate offsets.
constexpr unsigned ds_threads = 256;
// One step's loads of the vector loops: chunk u (at base + u * ds_threads) of g into x[u] and of r into rr[u] (zeros
// without a residual); Whole: every chunk of the step lies below `chunks`, else those past it are not loaded.
template <bool Whole, class Residual>
__device__ __forceinline__ void load_step(const float* g, const Residual* r, std::size_t base, std::size_t chunks,
                                          four (&x)[ds_unroll], four (&rr)[ds_unroll]) {
#pragma unroll
  for (unsigned u = 0; u < ds_unroll; ++u) {
    const std::size_t c = base + std::size_t{u} * ds_threads;
    rr[u] = four{{0.0f, 0.0f, 0.0f, 0.0f}};
    if (Whole || c < chunks) {
      x[u] = load4(g + 4 * c);
      if (r != nullptr) rr[u] = load4(r + 4 * c);
    }
  }
}

// fn(base, whole) for each step of this thread in the vector loops over `chunks` chunks (chunk u of the step at
// base + u * ds_threads, u < ds_unroll); whole is std::true_type where every chunk of the step lies below `chunks`
// (no test a chunk), else std::false_type.
template <class Fn>
__device__ __forceinline__ void for_each_step(std::size_t chunks, Fn&& fn) {
  constexpr std::size_t span = std::size_t{ds_threads} * (ds_unroll - 1);
  for (std::size_t base = blockIdx.x * std::size_t{ds_threads} * ds_unroll + threadIdx.x; base < chunks;
       base += std::size_t{gridDim.x} * ds_threads * ds_unroll) {
    if (base + span < chunks) fn(base, std::true_type{});
    else fn(base, std::false_type{});
  }
}

// fn(c, x, rr) for each chunk c of this thread's steps over `chunks` chunks, in order: x its four g, rr its four
// residuals (zeros without a residual; fn may overwrite them), the step's loads issued first (load_step).
template <class Residual, class Fn>
__device__ __forceinline__ void for_each_loaded_chunk(const float* g, const Residual* r, std::size_t chunks, Fn&& fn) {
  for_each_step(chunks, [&](std::size_t base, auto whole) {
    constexpr bool Whole = decltype(whole)::value;
    four x[ds_unroll], rr[ds_unroll];
    load_step<Whole>(g, r, base, chunks, x, rr);
#pragma unroll
    for (unsigned u = 0; u < ds_unroll; ++u) {
      const std::size_t c = base + std::size_t{u} * ds_threads;
      if (!Whole && c >= chunks) break;
      fn(c, x[u], rr[u]);
    }
  });
}

// (a template so that the header can define it in every translation unit)
template <int Unused = 0>
__global__ void ds_begin_kernel(const dynamic_scale_state* states, std::size_t n_groups,
                                dynamic_scale_scratch_header* h, dynamic_scale_config cfg) {
  const std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (k == 0) {
    h->need_scan = (first_step(states) || cfg.timing == scale_timing::current ||
                    cfg.on_nonfinite == nonfinite_policy::skip_step)
                       ? 1u
                       : 0u;
    h->scan_nonfinite = 0;
    h->pass_nonfinite = 0;
    h->skip = 0;
  }
  if (k < n_groups) {
    groups_of(h)[k].scan_amax_bits = 0;
    groups_of(h)[k].amax_bits = 0;
  }
}

// OneGroup: the tensor is one group (per tensor, or per row of a one-row tensor): every chunk's group is 0, entered
// once, with no group test a chunk (the launcher picks).
template <class Residual, bool OneGroup>
__global__ void ds_scan_kernel(const float* g, const Residual* r, std::size_t n, std::size_t gs, bool vec, chunk_groups cg,
                               dynamic_scale_scratch_header* h) {
  if (!h->need_scan) return;  // launch-uniform
  dynamic_scale_group_scratch* grp = groups_of(h);
  group_max acc;
  if (OneGroup) acc.enter(0, grp, true);
  bool bad = false;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  if (vec) {  // chunks of 4 elements of one group, ds_unroll a thread and step; one group-max update a chunk
    const std::size_t chunks = n / 4;
    for_each_loaded_chunk(g, r, chunks, [&](std::size_t c, const four& x, const four& rr) {
      unsigned chunk_amax = 0u;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float y = grad_input(x.v[e], rr.v[e]);
        const bool nonfinite = qnum::detail::is_nonfinite(y);
        bad = bad || nonfinite;
        const unsigned a = nonfinite ? 0u : __float_as_uint(qnum::detail::abs_bits(y));  // unsigned max == float max
        chunk_amax = a > chunk_amax ? a : chunk_amax;
      }
      if (OneGroup) acc.add_bits(chunk_amax);
      else acc.add(cg.of(c), __uint_as_float(chunk_amax), grp, true);
    });
  } else {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += stride) {
      const float x = grad_input(g[i], r != nullptr ? load_residual(r, i) : 0.0f);
      if (qnum::detail::is_nonfinite(x)) {
        bad = true;
        continue;
      }
      acc.add(i / gs, qnum::detail::abs_bits(x), grp, true);
    }
  }
  flush_block(acc, grp, true);
  if (bad) atomicOr(&h->scan_nonfinite, 1u);
}

// (a template so that the header can define it in every translation unit)
template <int Unused = 0>
__global__ void ds_prepare_kernel(const dynamic_scale_state* states, std::size_t n_groups,
                                  dynamic_scale_scratch_header* h, dynamic_scale_config cfg) {
  const std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (k >= n_groups) return;
  if (h->need_scan && h->scan_nonfinite && cfg.on_nonfinite == nonfinite_policy::skip_step) {
    if (k == 0) h->skip = 1;
    return;
  }
  const bool first = first_step(states);
  dynamic_scale_group_scratch& gs = groups_of(h)[k];
  float s;
  if (first || cfg.timing == scale_timing::current) {
    const float amax_now = __uint_as_float(gs.scan_amax_bits);
    s = dynamic_scale_update(first ? 0.0f : states[k].scale, amax_now, cfg);
  } else {
    s = dynamic_scale_update(states[k].scale, states[k].amax, cfg);
  }
  const int8_multipliers m = int8_multipliers_for(s);
  gs.scale = s;
  gs.inv = m.inv;
  gs.dq = m.dq;
}

// Stochastic: cfg.round.mode == rounding_mode::stochastic, fixed at launch (nearest-even kernels hold no
// random-number code).
template <class Residual, bool Stochastic>
__device__ __forceinline__ int8_element grad_element(float g, float r_old, int8_multipliers m, const dynamic_scale_config& cfg,
                                                     std::uint64_t offset, std::size_t i) {
  if constexpr (Stochastic) {
    return quantize_grad_element(g, r_old, m, stochastic(dynamic_scale_random(cfg, offset, i)));
  } else {
    return quantize_grad_element(g, r_old, m, rne);
  }
}

// Stochastic: as grad_element's; OneGroup: as ds_scan_kernel's.
template <class Residual, bool Stochastic, bool OneGroup>
__global__ void ds_quantize_kernel(const float* g, std::int8_t* codes, Residual* r, std::size_t n, std::size_t gs, bool vec,
                                   chunk_groups cg, const dynamic_scale_state* states, dynamic_scale_scratch_header* h,
                                   dynamic_scale_config cfg) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t start = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  // h->skip is written by the prepare kernel, which completed before this one started.
  if (h->skip) {  // launch-uniform
    for (std::size_t i = start; i < n; i += stride) codes[i] = 0;
    return;
  }
  dynamic_scale_group_scratch* grp = groups_of(h);
  const std::uint64_t offset = states[0].rng_offset;
  group_max acc;
  bool bad = false;
  if (vec) {  // chunks of 4 elements of one group, ds_unroll a thread and step: one load of g, of r, one store of
              // codes and of r a chunk; the group's multipliers read when the group changes
    const std::size_t chunks = n / 4;
    int8_multipliers m{0.0f, 0.0f};
    if (OneGroup) {
      acc.enter(0, grp, false);
      m = int8_multipliers{grp[0].inv, grp[0].dq};
    }
    for_each_loaded_chunk(g, r, chunks, [&](std::size_t c, const four& x, four& rr) {
      const std::size_t i = 4 * c;
      if (!OneGroup) {
        const std::size_t k = cg.of(c);
        if (acc.enter(k, grp, false)) m = int8_multipliers{grp[k].inv, grp[k].dq};  // the chunk lies in group k
      }
      unsigned word = 0u;
      [[maybe_unused]] std::uint32_t bits[4] = {0u, 0u, 0u, 0u};  // stochastic: dynamic_scale_random(cfg, offset, i + e)
      if constexpr (Stochastic) dynamic_scale_random4(cfg, offset, i, bits);
      // g' = g + r_old, and the largest |g'| bits of the chunk: at least 0x7F800000 exactly when a g' is Inf or NaN
      float xg[4];
      unsigned top = 0u;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        xg[e] = grad_input(x.v[e], rr.v[e]);
        top = max(top, __float_as_uint(qnum::detail::abs_bits(xg[e])));
      }
      if (!qnum::detail::is_nonfinite_magnitude(top)) {  // every g' finite (the rule): quantize_grad_finite, one group-max update
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int8_element el;
          if constexpr (Stochastic) el = quantize_grad_finite(xg[e], m, stochastic(bits[e]));
          else el = quantize_grad_finite(xg[e], m, rne);
          word |= (static_cast<unsigned>(el.code) & 0xFFu) << (8 * e);
          rr.v[e] = el.residual;
        }
        acc.add_bits(top);  // |g'| bits: non-negative floats, unsigned max == float max
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int8_element el;
          if constexpr (Stochastic) el = quantize_grad_element(x.v[e], rr.v[e], m, stochastic(bits[e]));
          else el = quantize_grad_element(x.v[e], rr.v[e], m, rne);
          word |= (static_cast<unsigned>(el.code) & 0xFFu) << (8 * e);
          rr.v[e] = el.residual;
          bad = bad || !el.finite;
          acc.add_bits(__float_as_uint(el.abs_in));
        }
      }
      *reinterpret_cast<unsigned*>(codes + i) = word;
      if (r != nullptr) store4(r + i, rr);
    });
  } else {
    for (std::size_t i = start; i < n; i += stride) {
      const std::size_t k = i / gs;
      const int8_multipliers m{grp[k].inv, grp[k].dq};
      const float r_old = r != nullptr ? load_residual(r, i) : 0.0f;
      const int8_element el = grad_element<Residual, Stochastic>(g[i], r_old, m, cfg, offset, i);
      codes[i] = static_cast<std::int8_t>(el.code);
      if (r != nullptr) store_residual(r, i, el.residual);
      if (!el.finite) bad = true;
      acc.add(k, el.abs_in, grp, false);
    }
  }
  flush_block(acc, grp, false);
  if (bad) atomicOr(&h->pass_nonfinite, 1u);
}

// (a template so that the header can define it in every translation unit)
template <int Unused = 0>
__global__ void ds_finish_kernel(dynamic_scale_state* states, std::size_t n_groups, std::size_t n,
                                 const dynamic_scale_scratch_header* h) {
  const std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (k >= n_groups) return;
  dynamic_scale_state& st = states[k];
  if (h->skip) {
    st.skipped += 1;
  } else {
    const dynamic_scale_group_scratch& gs = groups_of(const_cast<dynamic_scale_scratch_header*>(h))[k];
    st.scale = gs.scale;
    st.amax = __uint_as_float(gs.amax_bits);
    st.steps += 1;
  }
  st.rng_offset += n;
}

inline unsigned grid_for(std::size_t n, unsigned threads, unsigned cap = 4096) {
  const std::size_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b == 0 ? 1 : (b > cap ? cap : b));
}

}  // namespace detail

// Device version of quantize_gradient_int8 (same arguments and results, views of device memory):
//   g, codes [rows, cols], residual [rows, cols] fp32 or bf16 bits or an empty view, states
//   scale_shape(rows, cols, groups) (device copies of dynamic_scale_state, zero-initialised), scratch of
//   dynamic_scale_scratch_bytes(number of groups) bytes.
// Returns the host function's status for bad arguments (detail::check_quantize_gradient, the same checks;
// a null scratch is null_pointer; nothing enqueued), else the launch's CUDA error as a status
// (gpu/status.cuh); the outcome of the step (ok, ok_zeroed_nonfinite, skipped_nonfinite) is in the scratch
// header once the stream reaches it: dynamic_scale_status(header).
template <class Residual = float>
status launch_quantize_gradient_int8(matrix_view<const float> g, group_shape groups, matrix_view<std::int8_t> codes,
                                     matrix_view<Residual> residual, matrix_view<dynamic_scale_state> states,
                                     void* scratch, const dynamic_scale_config& cfg, cudaStream_t stream = 0) {
  const qnum::detail::gradient_args a =
      qnum::detail::check_quantize_gradient(g, groups, codes, residual, states, cfg, scratch == nullptr);
  if (a.st != status::ok || a.n == 0) return a.st;
  const std::size_t n = a.n, gs = a.gs, n_groups = a.n_groups;
  Residual* r = residual.data;  // null: no error feedback
  auto* h = static_cast<dynamic_scale_scratch_header*>(scratch);
  constexpr unsigned threads = detail::ds_threads;
  const bool vec = detail::vec4_ok(g.data, codes.data, r, gs);
  const unsigned gb = detail::grid_for(n_groups, threads, 1u << 20);
  const unsigned eb = detail::grid_for(vec ? (n / 4 + detail::ds_unroll - 1) / detail::ds_unroll : n, threads);
  const detail::chunk_groups cg(n, gs);
  detail::ds_begin_kernel<><<<gb, threads, 0, stream>>>(states.data, n_groups, h, cfg);
  // the element kernels with the group count's case fixed: one group (no group test a chunk) or several
  const auto element_kernels = [&](auto one_group) {
    constexpr bool One = decltype(one_group)::value;
    detail::ds_scan_kernel<Residual, One><<<eb, threads, 0, stream>>>(g.data, r, n, gs, vec, cg, h);
    detail::ds_prepare_kernel<><<<gb, threads, 0, stream>>>(states.data, n_groups, h, cfg);
    if (cfg.round.mode == rounding_mode::stochastic) {
      detail::ds_quantize_kernel<Residual, true, One><<<eb, threads, 0, stream>>>(g.data, codes.data, r, n, gs, vec, cg, states.data, h, cfg);
    } else {
      detail::ds_quantize_kernel<Residual, false, One><<<eb, threads, 0, stream>>>(g.data, codes.data, r, n, gs, vec, cg, states.data, h, cfg);
    }
  };
  detail::with_group_count(n_groups, element_kernels);
  detail::ds_finish_kernel<><<<gb, threads, 0, stream>>>(states.data, n_groups, n, h);
  return from_cuda(cudaGetLastError());
}

namespace detail {

// The outputs of a chunk of four codes (the bytes of w, element 0 lowest) with the group's dq, at element i of out:
// dequant_store_bits's bits. Finite: dq is finite (the rule), so q * dq is never NaN: fp32 takes the products as they
// are and the 16-bit formats convert them in pairs (cvt.rn.bf16x2 / f16x2: RNE, overflow to Inf, the same bits for
// non-NaN values). Otherwise (a scale of +Inf in the state) dequant_store_bits, whose NaN (0 * Inf) is canonical.
template <dtype T, bool Finite>
__device__ __forceinline__ void dequant_store4(void* out, std::size_t i, unsigned w, float dq) {
  float v[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v[e] = int8_dequant(static_cast<std::int8_t>(w >> (8 * e)), dq);
  std::uint32_t b[4];
  if (!Finite) {
#pragma unroll
    for (int e = 0; e < 4; ++e) b[e] = dequant_store_bits(v[e], T);
  }
  if (T == dtype::fp32) {
    *reinterpret_cast<::uint4*>(static_cast<std::uint32_t*>(out) + i) =
        Finite ? make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]))
               : make_uint4(b[0], b[1], b[2], b[3]);
  } else if (!Finite) {
    *reinterpret_cast<uint2*>(static_cast<std::uint16_t*>(out) + i) = make_uint2(b[0] | (b[1] << 16), b[2] | (b[3] << 16));
  } else {
    *reinterpret_cast<uint2*>(static_cast<std::uint16_t*>(out) + i) =
        T == dtype::bf16 ? make_uint2(bf16x2_bits_rn(v[0], v[1]), bf16x2_bits_rn(v[2], v[3]))
                         : make_uint2(fp16x2_bits_rn(v[0], v[1]), fp16x2_bits_rn(v[2], v[3]));
  }
}

// Chunks of 4 codes (one 4-byte load, one 16- or 8-byte store) when vec (group size % 4 == 0, aligned pointers),
// 4 chunks per thread and step, chunk u of thread t at (step base + u * ds_threads + t): every warp access is
// contiguous; a step whose chunks all lie inside the tensor takes them without a test each. The group's dq (and
// whether it is finite) is rebuilt only when the group changes; OneGroup (a tensor of one group, per tensor: the
// launcher picks) reads it once, and its chunks take no group test. T: the output format, fixed by the launcher.
template <dtype T, bool OneGroup>
__global__ void dequant_kernel(const std::int8_t* codes, std::size_t n, std::size_t gs, bool vec, chunk_groups cg,
                               const dynamic_scale_state* states, void* out) {
  std::size_t cur = OneGroup ? 0 : ~std::size_t{0};
  float dq = OneGroup ? int8_state_dq(states[0]) : 0.0f;
  bool finite = dq <= qnum::detail::flt_max;
  const auto dq_of = [&](std::size_t k) {
    if (!OneGroup && k != cur) {
      cur = k;
      dq = int8_state_dq(states[k]);
      finite = dq <= qnum::detail::flt_max;
    }
    return dq;
  };
  if (vec) {
    constexpr unsigned U = ds_unroll;
    const std::size_t chunks = n / 4;
    for_each_step(chunks, [&](std::size_t base, auto whole) {
      unsigned w[U];
#pragma unroll
      for (unsigned u = 0; u < U; ++u) {
        const std::size_t c = base + std::size_t{u} * ds_threads;
        w[u] = decltype(whole)::value || c < chunks ? *reinterpret_cast<const unsigned*>(codes + 4 * c) : 0u;
      }
      // the chunks' dq first: one test of the step for a non-finite one
      float d[U];
      bool all_finite = true;
#pragma unroll
      for (unsigned u = 0; u < U; ++u) {
        const std::size_t c = base + std::size_t{u} * ds_threads;
        d[u] = OneGroup ? dq : decltype(whole)::value || c < chunks ? dq_of(cg.of(c)) : 0.0f;
        all_finite = all_finite && finite;
      }
      const auto store = [&](auto fin) {
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
          const std::size_t c = base + std::size_t{u} * ds_threads;
          if (!decltype(whole)::value && c >= chunks) break;
          dequant_store4<T, decltype(fin)::value>(out, 4 * c, w[u], d[u]);
        }
      };
      if (all_finite) store(std::true_type{});
      else store(std::false_type{});
    });
    return;
  }
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t b = dequant_store_bits(int8_dequant(codes[i], OneGroup ? dq : dq_of(i / gs)), T);
    if (T == dtype::fp32) {
      static_cast<std::uint32_t*>(out)[i] = b;
    } else {
      static_cast<std::uint16_t*>(out)[i] = static_cast<std::uint16_t>(b);
    }
  }
}

// One CUDA block per state block: update in registers, block max, re-quantize: one pass.
constexpr unsigned adam_threads = 256;
constexpr unsigned adam_per_thread = 4096 / adam_threads;

template <bool Stochastic>
__global__ void int8_adam_kernel(float* p, const float* g, std::size_t n, int8_adam_state st, std::size_t bs,
                                 int8_adam_scalars s, std::uint64_t seed, std::uint64_t t) {
  __shared__ float red_m[adam_threads], red_w[adam_threads];
  const std::size_t b = blockIdx.x;
  const std::size_t lo = b * bs;
  const std::size_t hi = lo + bs < n ? lo + bs : n;
  const float am_old = st.m_absmax[b], aw_old = st.v_absmax[b];
  float mr[adam_per_thread], wr[adam_per_thread];
  float am = 0.0f, aw = 0.0f;
#pragma unroll
  for (unsigned k = 0; k < adam_per_thread; ++k) {
    const std::size_t i = lo + threadIdx.x + std::size_t{k} * adam_threads;
    mr[k] = 0.0f;
    wr[k] = 0.0f;
    if (i < hi) {
      float m = int8_adam_m(st.m_codes[i], am_old);
      float w = int8_adam_w(st.v_codes[i], aw_old);
      float pi = p[i];
      int8_adam_element(pi, m, w, g[i], s);
      p[i] = pi;
      mr[k] = m;
      wr[k] = w;
      const float a = qnum::detail::abs_bits(m);
      am = a > am ? a : am;
      aw = w > aw ? w : aw;
    }
  }
  red_m[threadIdx.x] = am;
  red_w[threadIdx.x] = aw;
  __syncthreads();
  for (unsigned off = adam_threads / 2; off > 0; off >>= 1) {
    if (threadIdx.x < off) {
      red_m[threadIdx.x] = red_m[threadIdx.x + off] > red_m[threadIdx.x] ? red_m[threadIdx.x + off] : red_m[threadIdx.x];
      red_w[threadIdx.x] = red_w[threadIdx.x + off] > red_w[threadIdx.x] ? red_w[threadIdx.x + off] : red_w[threadIdx.x];
    }
    __syncthreads();
  }
  am = red_m[0];
  aw = red_w[0];
  if (threadIdx.x == 0) {
    st.m_absmax[b] = am;
    st.v_absmax[b] = aw;
  }
#pragma unroll
  for (unsigned k = 0; k < adam_per_thread; ++k) {
    const std::size_t i = lo + threadIdx.x + std::size_t{k} * adam_threads;
    if (i < hi) {
      if constexpr (Stochastic) {
        st.m_codes[i] = int8_adam_m_code(mr[k], am, stochastic(int8_adam_random(seed, t, n, i, 0)));
        st.v_codes[i] = int8_adam_v_code(wr[k], aw, stochastic(int8_adam_random(seed, t, n, i, 1)));
      } else {
        (void)seed;
        (void)t;
        st.m_codes[i] = int8_adam_m_code(mr[k], am, rne);
        st.v_codes[i] = int8_adam_v_code(wr[k], aw, rne);
      }
    }
  }
}

}  // namespace detail

// Device version of dequantize_gradient_int8 (same arguments, checks and results; views of device memory:
// out is float with type fp32, or std::uint16_t bits with type bf16 or fp16).
template <class T>
status launch_dequantize_gradient_int8(matrix_view<const std::int8_t> codes, group_shape groups,
                                       matrix_view<const dynamic_scale_state> states, matrix_view<T> out,
                                       cudaStream_t stream = 0) {
  const qnum::detail::gradient_args a = qnum::detail::check_dequantize_gradient(codes, groups, states, out);
  if (a.st != status::ok || a.n == 0) return a.st;
  const std::size_t n = a.n, gs = a.gs;
  const dtype t = out.type;
  const auto aligned = [](const void* p, std::uintptr_t b) { return (reinterpret_cast<std::uintptr_t>(p) % b) == 0; };
  const bool vec = gs % 4 == 0 && aligned(codes.data, 4) && aligned(out.data, t == dtype::fp32 ? 16 : 8);
  const unsigned blocks = detail::grid_for(vec ? n / 16 : n, detail::ds_threads);
  const detail::chunk_groups cg(n, gs);
  // the kernel with the output format and the group count's case fixed: one group (no group test a chunk) or several
  const auto dequant = [&](auto one_group) {
    constexpr bool One = decltype(one_group)::value;
    if (t == dtype::fp32) detail::dequant_kernel<dtype::fp32, One><<<blocks, detail::ds_threads, 0, stream>>>(codes.data, n, gs, vec, cg, states.data, out.data);
    else if (t == dtype::bf16) detail::dequant_kernel<dtype::bf16, One><<<blocks, detail::ds_threads, 0, stream>>>(codes.data, n, gs, vec, cg, states.data, out.data);
    else detail::dequant_kernel<dtype::fp16, One><<<blocks, detail::ds_threads, 0, stream>>>(codes.data, n, gs, vec, cg, states.data, out.data);
  };
  detail::with_group_count(a.n_groups, dequant);
  return from_cuda(cudaGetLastError());
}

// Device version of int8_adam_step (one pass over p, g and the states; same checks, int8_adam_check, and
// same bits as the host; views of device memory).
inline status launch_int8_adam_step(matrix_view<float> p, matrix_view<const float> g, int8_adam_state st,
                                    const int8_adam_config& c, std::uint64_t t, cudaStream_t stream = 0) {
  if (status e = int8_adam_check(p, g, st, c, t); e != status::ok || g.size() == 0) return e;
  const std::size_t n = static_cast<std::size_t>(g.size());
  const int8_adam_scalars s = int8_adam_scalars_for(c, t);
  const std::size_t blocks = int8_adam_blocks(n, c.block_size);
  if (blocks > 0x7FFFFFFFu) return status::bad_shape;
  const dim3 grid(static_cast<unsigned>(blocks));
  if (c.round.mode == rounding_mode::stochastic) {
    detail::int8_adam_kernel<true><<<grid, detail::adam_threads, 0, stream>>>(p.data, g.data, n, st, c.block_size, s, c.round.seed, t);
  } else {
    detail::int8_adam_kernel<false><<<grid, detail::adam_threads, 0, stream>>>(p.data, g.data, n, st, c.block_size, s, c.round.seed, t);
  }
  return from_cuda(cudaGetLastError());
}

}  // namespace gpu
QNUM_END_NAMESPACE
