// bench/throughput_host.cpp: qnum-bench-host, Google Benchmark throughput of the host tensor operations
// against a same-run plain copy and a naive scalar loop doing the same work.
//
//   qnum-bench-host [--large] [Google Benchmark flags]
//
// Sizes: 512 (512x512, cache-resident) and 4096 (4096x4096, DRAM); --large adds 8192x8192.
// Built with -Dggml_prefix (tools/bench-host.sh), it also runs ggml's own CPU quantizers (ggml_*), after
// checking that the GGUF writers' bytes equal ggml's _ref quantizers' on the same inputs (exit 1 if not), and
// prints every element rate against ggml's SIMD Q8_0 of the same run.
// Every benchmark reports items/s (elements) and bytes/s counting every byte read and written once
// (input, output, scales, zero points, residuals). copy/<n> copies the fp32 matrix (read + write).
// scalar_<op>/<n> is a straightforward loop (fabs/divide/nearbyint) computing the same result shape.
// The ratio table printed at the end is bench_util.hpp's ratio_reporter. Default --benchmark_min_time
// is 0.05 s per benchmark to keep the run short; pass your own to override.
#include "bench_util.hpp"

#include <qnum/train/dynamic_scale.hpp>
#include <qnum/layout/compressed_tensors.hpp>
#include <qnum/layout/gguf.hpp>
#include <qnum/presets.hpp>
#include <qnum/quantize_tensor.hpp>
#include <qnum/static_scheme.hpp>

#if defined(QNUM_BENCH_GGML)
#include <ggml-cpu.h>
#include <ggml.h>
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t G = 128;  // group size of every grouped operation here

// Inputs shared by all benchmarks of a size (built once). Every buffer of these benchmarks, input, output, codes
// and scales, is a qbench::aligned_vector, as a tensor allocator gives them: the large ones all sit at the same
// offset in their pages. From DRAM the rates depend on those offsets: a std::vector of this size sits 16 bytes
// past a page boundary, and with such inputs beside 64-byte aligned outputs fp32 fake quantization ran 0.7-0.75x
// (the loads of the codes loop alias the previous vectors' stores modulo 4 KiB) and quantization 1.04-1.10x
// (docs/performance.md, "buffer placement").
struct inputs {
  std::int64_t n = 0;
  qbench::aligned_vector<float> f32;
  qbench::aligned_vector<std::uint16_t> b16;
};
inputs& data(std::int64_t n) {
  static inputs cache[3];
  inputs& c = n == 512 ? cache[0] : n == 4096 ? cache[1] : cache[2];
  if (c.n != n) {
    c.n = n;
    const std::vector<float> v = qbench::normal_data(static_cast<std::size_t>(n * n), 7);
    c.f32.assign(v.begin(), v.end());
    c.b16.resize(c.f32.size());
    for (std::size_t i = 0; i < c.f32.size(); ++i) c.b16[i] = qnum::to_bf16(c.f32[i]);
  }
  return c;
}

template <class T> const T* input_of(inputs& in);
template <> const float* input_of<float>(inputs& in) { return in.f32.data(); }
template <> const std::uint16_t* input_of<std::uint16_t>(inputs& in) { return in.b16.data(); }
template <class T> constexpr const char* tname() { return std::is_same_v<T, float> ? "fp32" : "bf16"; }

// Naive helpers for the scalar baselines.
inline float ld(const float* p, std::int64_t i) { return p[i]; }
inline float ld(const std::uint16_t* p, std::int64_t i) {
  const std::uint32_t b = std::uint32_t(p[i]) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline void st(float* p, std::int64_t i, float v) { p[i] = v; }
inline void st(std::uint16_t* p, std::int64_t i, float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  p[i] = static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);  // RNE, finite inputs
}

const auto int8_sym = qnum::presets::int8_sym;

// ---- copy ----------------------------------------------------------------------------------------
void bm_copy(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<float> out(in.f32.size());
  for (auto _ : s) {
    std::memcpy(out.data(), in.f32.data(), in.f32.size() * 4);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 8);
}

// ---- group quantize to codes (INT8 sym, fp32 scales): groups of GS, the scheme as a value known at run
// time (runtime_int8) or fixed at compile time (fixed_int8) -------------------------------------------------
qnum::scheme<qnum::qint8> runtime_int8_value = qnum::presets::int8_sym;  // not const: the compiler cannot fold it
struct runtime_int8 {
  qnum::runtime_scheme<qnum::qint8> operator()() const { return qnum::as_holder(runtime_int8_value); }
};
struct fixed_int8 {
  qnum::fixed_scheme<qnum::presets::int8_sym> operator()() const { return {}; }
};
template <class T, class Scheme, std::int64_t GS>
void bm_quantize(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<std::uint8_t> codes(static_cast<std::size_t>(n * n));
  qbench::aligned_vector<float> scales(static_cast<std::size_t>(n * n / GS));
  for (auto _ : s) {
    const auto st = qnum::quantize(Scheme{}(), qnum::view<const T>(input_of<T>(in), n, n), qnum::group_size(GS),
                                   qnum::view(codes.data(), n, n), qnum::scales_of(scales.data(), n, n / GS));
    if (st != qnum::status::ok) s.SkipWithError("quantize failed");
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * static_cast<std::int64_t>(sizeof(T) + 1) + n * n / GS * 4);
}

// ---- group quantize under the presets whose groups take per-group parameters (float formats, asymmetric
// schemes): FP8 E4M3 1x128 activations and 128x128 weights (DeepGEMM, fp32 scales), MXFP8 1x32 (E8M0 scales),
// compressed-tensors W4A16 asymmetric g128 (fp32 scales, int32 zero points), NVFP4 1x16 (UE4M3 scales under a
// per-tensor scale) -------------------------------------------------------------------------------------------
// TwoLevel: NVFP4's per-tensor scale, amax / (448 * 6) of the input, computed before the timed loop.
template <const auto& Scheme, const qnum::group_shape& Groups, bool TwoLevel = false>
struct preset_case {
  static constexpr auto scheme = Scheme;
  static constexpr qnum::group_shape groups = Groups;
  static constexpr bool two_level = TwoLevel;
};
using deepgemm_1x128 = preset_case<qnum::presets::deepgemm_fp8, qnum::presets::deepseek_act>;
using deepgemm_128x128 = preset_case<qnum::presets::deepgemm_fp8, qnum::presets::deepseek_weight>;
using mxfp8_1x32 = preset_case<qnum::presets::mxfp8, qnum::presets::mx_block>;
using mxfp8_rceil_1x32 = preset_case<qnum::presets::mxfp8_rceil, qnum::presets::mx_block>;
using ct_asym_g128 = preset_case<qnum::presets::ct_w4a16_asym, qnum::presets::ct_group128>;
using nvfp4_1x16 = preset_case<qnum::presets::nvfp4, qnum::presets::nvfp4_block, true>;
template <class T, class P>
float outer_of(const T* x, std::int64_t n) {
  if constexpr (!P::two_level) {
    return 0.0f;
  } else {
    float amax = 0.0f;
    if (qnum::tensor_amax(qnum::view<const T>(x, n, n), amax) != qnum::status::ok) return 0.0f;
    return qnum::presets::nvfp4_tensor_scale(amax);
  }
}
template <class P>
constexpr std::int64_t scale_bytes() { return qnum::dtype_bytes(P::scheme.store); }
// The codes, scales (and zero points) of an n x n tensor under preset P, and the bytes they take.
template <class P>
struct preset_buffers {
  static constexpr bool asym = P::scheme.kind == qnum::scheme_kind::asymmetric;
  std::int64_t n, sr, sc;
  qbench::aligned_vector<std::uint8_t> codes, scales;
  qbench::aligned_vector<std::int32_t> zeros;
  explicit preset_buffers(std::int64_t n_) : n(n_) {
    const qnum::extent se = qnum::scale_shape(n, n, P::groups);
    sr = se.rows;
    sc = se.cols;
    codes.resize(static_cast<std::size_t>(n * n));
    scales.resize(static_cast<std::size_t>(sr * sc * 4));
    zeros.resize(asym ? static_cast<std::size_t>(sr * sc) : 0);
  }
  qnum::scale_view sv() { return {scales.data(), sr, sc, sc, static_cast<int>(scale_bytes<P>())}; }
  qnum::matrix_view<std::int32_t> zv() { return asym ? qnum::view(zeros.data(), sr, sc) : qnum::matrix_view<std::int32_t>{}; }
  std::int64_t side_bytes() const { return sr * sc * (scale_bytes<P>() + (asym ? 4 : 0)); }
};
// Fixed: the preset as a compile-time value (fixed_scheme), as a caller who names it at compile time passes it.
template <class T, class P, bool Fixed = false>
void bm_quantize_preset(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  preset_buffers<P> b(n);
  const float outer = outer_of<T, P>(input_of<T>(in), n);
  const auto scheme = [] {
    if constexpr (Fixed) return qnum::fixed_scheme<P::scheme>{};
    else return P::scheme;
  }();
  for (auto _ : s) {
    const auto st = qnum::quantize(scheme, qnum::view<const T>(input_of<T>(in), n, n), P::groups,
                                   qnum::view(b.codes.data(), n, n), b.sv(), b.zv(), {}, outer);
    if (st != qnum::status::ok) s.SkipWithError("quantize failed");
    benchmark::DoNotOptimize(b.codes.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * static_cast<std::int64_t>(sizeof(T) + 1) + b.side_bytes());
}
template <class T, class P>
void bm_fake_quant_preset(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<T> out(static_cast<std::size_t>(n * n));
  const float outer = outer_of<T, P>(input_of<T>(in), n);
  for (auto _ : s) {
    const auto st = qnum::fake_quantize(P::scheme, qnum::view<const T>(input_of<T>(in), n, n), P::groups, qnum::view(out.data(), n, n),
                                        {}, outer);
    if (st != qnum::status::ok) s.SkipWithError("fake_quantize failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 2 * static_cast<std::int64_t>(sizeof(T)));
}

// Dequantize under a preset (loading an FP8 or NVFP4 checkpoint into T): codes and scales quantized from the
// input once, before the timed loop.
template <class T, class P>
void bm_dequantize_preset(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  preset_buffers<P> b(n);
  const float outer = outer_of<float, P>(in.f32.data(), n);
  if (qnum::quantize(P::scheme, qnum::view<const float>(in.f32.data(), n, n), P::groups, qnum::view(b.codes.data(), n, n),
                     b.sv(), b.zv(), {}, outer) != qnum::status::ok) {
    s.SkipWithError("quantize failed");
    return;
  }
  qbench::aligned_vector<T> out(static_cast<std::size_t>(n * n));
  for (auto _ : s) {
    const auto st = qnum::dequantize(P::scheme, qnum::view<const std::uint8_t>(b.codes.data(), n, n), P::groups, b.sv(),
                                     qnum::matrix_view<const std::int32_t>(b.zv()), qnum::view(out.data(), n, n), outer);
    if (st != qnum::status::ok) s.SkipWithError("dequantize failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * static_cast<std::int64_t>(sizeof(T) + 1) + b.side_bytes());
}

// ---- GGUF Q8_0 / Q4_0 / Q4_1 writers, one gguf::quantize call per row (the way converters call them);
// ref_gguf_* is the per-block definition (ggml's _ref formulas). -----------------------------------------
template <qnum::gguf::type T>
void bm_gguf(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const std::int64_t rb = qnum::gguf::row_bytes(T, n);
  qbench::aligned_vector<std::uint8_t> out(static_cast<std::size_t>(n * rb));
  for (auto _ : s) {
    for (std::int64_t r = 0; r < n; ++r) {
      const auto st = qnum::gguf::quantize(T, qnum::view(in.f32.data() + r * n, n), qnum::view(out.data() + r * rb, rb));
      if (st != qnum::status::ok) s.SkipWithError("gguf::quantize failed");
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 4 + n * rb);
}
template <qnum::gguf::type T>
void bm_ref_gguf(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const int bb = qnum::gguf::block_bytes(T);
  qbench::aligned_vector<std::uint8_t> out(static_cast<std::size_t>(n * n / 32 * bb));
  for (auto _ : s) {
    for (std::int64_t b = 0; b < n * n / 32; ++b) {
      const float* x = in.f32.data() + b * 32;
      std::uint8_t* o = out.data() + b * bb;
      qnum::gguf::quantize_block(T, x, o);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 4 + n * n / 32 * bb);
}

#if defined(QNUM_BENCH_GGML)
// ---- ggml's own CPU quantizers (a ggml build linked by -Dggml_prefix): its CPU backend's from_float for
// Q8_0 (quantize_row_q8_0, SIMD) and the _ref quantizers the GGUF writers match byte for byte; one call per
// row, as bm_gguf calls qnum. ------------------------------------------------------------------------------
// qnum's gguf::type values are GGMLQuantizationType's.
static_assert(static_cast<int>(qnum::gguf::type::q8_0) == GGML_TYPE_Q8_0 && static_cast<int>(qnum::gguf::type::q4_0) == GGML_TYPE_Q4_0 &&
              static_cast<int>(qnum::gguf::type::q4_1) == GGML_TYPE_Q4_1, "gguf::type is GGMLQuantizationType");
ggml_type ggml_type_of(qnum::gguf::type t) { return static_cast<ggml_type>(static_cast<int>(t)); }
ggml_from_float_t ggml_quantizer(qnum::gguf::type t, bool simd) {
  return simd ? ggml_get_type_traits_cpu(ggml_type_of(t))->from_float : ggml_get_type_traits(ggml_type_of(t))->from_float_ref;
}
template <qnum::gguf::type T, bool Simd>
void bm_ggml(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const std::int64_t rb = qnum::gguf::row_bytes(T, n);
  qbench::aligned_vector<std::uint8_t> out(static_cast<std::size_t>(n * rb));
  const ggml_from_float_t fn = ggml_quantizer(T, Simd);
  for (auto _ : s) {
    for (std::int64_t r = 0; r < n; ++r) fn(in.f32.data() + r * n, out.data() + r * rb, n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 4 + n * rb);
}
// Before any timing: the GGUF writers' bytes equal ggml's _ref output on every benchmark input, and the number of
// Q8_0 blocks where ggml's SIMD quantizer differs from its own _ref (ties, its 127/amax multiplier) is printed.
bool ggml_bytes_agree(const std::vector<std::int64_t>& sizes) {
  bool ok = true;
  for (const std::int64_t n : sizes) {
    inputs& in = data(n);
    for (const auto t : {qnum::gguf::type::q8_0, qnum::gguf::type::q4_0, qnum::gguf::type::q4_1}) {
      const std::int64_t rb = qnum::gguf::row_bytes(t, n);
      const std::size_t bytes = static_cast<std::size_t>(n * rb);
      qbench::aligned_vector<std::uint8_t> mine(bytes), ref(bytes), simd(bytes);
      if (qnum::gguf::quantize(t, qnum::view<const float>(in.f32.data(), n, n), qnum::view(mine.data(), n, rb)) != qnum::status::ok)
        ok = false;
      for (std::int64_t r = 0; r < n; ++r) {
        ggml_quantizer(t, false)(in.f32.data() + r * n, ref.data() + r * rb, n);
        ggml_quantizer(t, true)(in.f32.data() + r * n, simd.data() + r * rb, n);
      }
      const int bb = qnum::gguf::block_bytes(t);
      std::int64_t differ = 0, simd_differ = 0;
      for (std::size_t b = 0; b < bytes; b += static_cast<std::size_t>(bb)) {
        differ += std::memcmp(mine.data() + b, ref.data() + b, static_cast<std::size_t>(bb)) != 0;
        simd_differ += std::memcmp(simd.data() + b, ref.data() + b, static_cast<std::size_t>(bb)) != 0;
      }
      std::printf("ggml %s %lldx%lld: qnum vs _ref %lld of %lld blocks differ; ggml's from_float vs _ref %lld\n",
                  ggml_type_name(ggml_type_of(t)), static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(differ),
                  static_cast<long long>(n * n / 32), static_cast<long long>(simd_differ));
      ok = ok && differ == 0;
    }
  }
  return ok;
}
#endif

template <class T>
void bm_scalar_quantize(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const T* x = input_of<T>(in);
  qbench::aligned_vector<std::int8_t> codes(static_cast<std::size_t>(n * n));
  qbench::aligned_vector<float> scales(static_cast<std::size_t>(n * n / G));
  for (auto _ : s) {
    for (std::int64_t g = 0; g < n * n / G; ++g) {
      float amax = 0.0f;
      for (std::int64_t i = g * G; i < g * G + G; ++i) amax = std::max(amax, std::fabs(ld(x, i)));
      const float sc = amax > 0 ? amax / 127.0f : 1.0f;
      scales[static_cast<std::size_t>(g)] = sc;
      for (std::int64_t i = g * G; i < g * G + G; ++i)
        codes[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(std::min(127.0f, std::max(-127.0f, std::nearbyint(ld(x, i) / sc))));
    }
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * (sizeof(T) + 1) + n * n / G * 4);
}

// ---- quantize + pack: compressed-tensors W4A16 sym g128 (weight_packed int32 + fp32 weight_scale) ---
template <class T>
void bm_quantize_pack(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<std::uint8_t> codes(static_cast<std::size_t>(n * n));
  qbench::aligned_vector<float> scales(static_cast<std::size_t>(n * n / G));
  const qnum::extent pe = qnum::pack_int32_shape(n, n, 4, qnum::packed_dim::cols);
  qbench::aligned_vector<std::uint32_t> packed(static_cast<std::size_t>(pe.rows * pe.cols));
  for (auto _ : s) {
    auto st = qnum::quantize(qnum::presets::ct_w4a16_sym, qnum::view<const T>(input_of<T>(in), n, n), qnum::presets::ct_group128,
                             qnum::view(codes.data(), n, n), qnum::scales_of(scales.data(), n, n / G));
    const auto ps = qnum::ct::pack_weight(qnum::view(codes.data(), n, n), 4, qnum::view(packed.data(), pe.rows, pe.cols));
    if (st != qnum::status::ok || ps != qnum::status::ok) s.SkipWithError("quantize+pack failed");
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * sizeof(T) + n * n / 2 + n * n / G * 4);
}
// The same words and scales by ct::quantize_pack_weight: no [n, n] codes between the two steps.
template <class T>
void bm_quantize_pack_fused(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<float> scales(static_cast<std::size_t>(n * n / G));
  const qnum::extent pe = qnum::pack_int32_shape(n, n, 4, qnum::packed_dim::cols);
  qbench::aligned_vector<std::uint32_t> packed(static_cast<std::size_t>(pe.rows * pe.cols));
  for (auto _ : s) {
    const auto st = qnum::ct::quantize_pack_weight(qnum::presets::ct_w4a16_sym, qnum::view<const T>(input_of<T>(in), n, n),
                                                   G, qnum::view(packed.data(), pe.rows, pe.cols), qnum::scales_of(scales.data(), n, n / G));
    if (st != qnum::status::ok) s.SkipWithError("quantize_pack_weight failed");
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * sizeof(T) + n * n / 2 + n * n / G * 4);
}
template <class T>
void bm_scalar_quantize_pack(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const T* x = input_of<T>(in);
  qbench::aligned_vector<float> scales(static_cast<std::size_t>(n * n / G));
  qbench::aligned_vector<std::uint32_t> packed(static_cast<std::size_t>(n * n / 8));
  for (auto _ : s) {
    for (std::int64_t g = 0; g < n * n / G; ++g) {
      float amax = 0.0f;
      for (std::int64_t i = g * G; i < g * G + G; ++i) amax = std::max(amax, std::fabs(ld(x, i)));
      const float sc = amax > 0 ? amax / 7.5f : 1.1920928955078125e-07f;
      scales[static_cast<std::size_t>(g)] = sc;
      for (std::int64_t w = g * G / 8; w < (g + 1) * G / 8; ++w) {
        std::uint32_t word = 0;
        for (int k = 0; k < 8; ++k) {
          const float q = std::nearbyint(std::min(7.0f, std::max(-8.0f, ld(x, w * 8 + k) / sc)));
          word |= static_cast<std::uint32_t>(static_cast<int>(q) + 8) << (4 * k);
        }
        packed[static_cast<std::size_t>(w)] = word;
      }
    }
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * sizeof(T) + n * n / 2 + n * n / G * 4);
}

// ---- compressed-tensors FP4 weights (NVFP4A16 / MXFP4A16): codes packed, one scale byte a group ------------
// ct::quantize_pack_fp4, against the same rules group by group (ct::quantize_fp4_group: the per-element definition,
// as qnum-convert quantized these formats before the one-call form).
template <class T, bool Nv>
void bm_ct_fp4(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const auto kind = Nv ? qnum::ct::fp4_kind::nvfp4 : qnum::ct::fp4_kind::mxfp4;
  const std::int64_t g = qnum::ct::fp4_group_size(kind);
  qbench::aligned_vector<std::uint8_t> packed(static_cast<std::size_t>(n * n / 2)), scales(static_cast<std::size_t>(n * n / g));
  const float global = qnum::presets::ct_nvfp4_global_scale(8.0f);
  for (auto _ : s) {
    const auto st = qnum::ct::quantize_pack_fp4(kind, qnum::view<const T>(input_of<T>(in), n, n), global,
                                                qnum::view(packed.data(), n, n / 2), qnum::view(scales.data(), n, n / g));
    if (st != qnum::status::ok) s.SkipWithError("quantize_pack_fp4 failed");
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * sizeof(T) + n * n / 2 + n * n / g);
}
template <class T, bool Nv>
void bm_scalar_ct_fp4(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const auto kind = Nv ? qnum::ct::fp4_kind::nvfp4 : qnum::ct::fp4_kind::mxfp4;
  const std::int64_t g = qnum::ct::fp4_group_size(kind);
  const T* x = input_of<T>(in);
  const qnum::dtype t = sizeof(T) == 2 ? qnum::dtype::bf16 : qnum::dtype::fp32;
  qbench::aligned_vector<std::uint8_t> packed(static_cast<std::size_t>(n * n / 2)), scales(static_cast<std::size_t>(n * n / g));
  const float global = qnum::presets::ct_nvfp4_global_scale(8.0f);
  std::uint8_t c[32];
  for (auto _ : s) {
    for (std::int64_t j = 0; j < n * n / g; ++j) {
      qnum::ct::quantize_fp4_group(kind, x + j * g, t, global, false, c, scales.data() + j);
      for (std::int64_t e = 0; e < g; e += 2)
        packed[static_cast<std::size_t>((j * g + e) / 2)] = qnum::pack_nibble_pair(c[e], c[e + 1], qnum::nibble_order::low_first);
    }
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * sizeof(T) + n * n / 2 + n * n / g);
}

// ---- dequantize INT8 g128 codes to fp32 / bf16 --------------------------------------------------------
struct int8_codes {
  std::int64_t n = 0;
  qbench::aligned_vector<std::uint8_t> codes;
  qbench::aligned_vector<float> scales;
};
int8_codes& codes_for(std::int64_t n) {
  static int8_codes c[3];
  int8_codes& k = n == 512 ? c[0] : n == 4096 ? c[1] : c[2];
  if (k.n != n) {
    k.n = n;
    k.codes.resize(static_cast<std::size_t>(n * n));
    k.scales.resize(static_cast<std::size_t>(n * n / G));
    qnum::quantize(int8_sym, qnum::view<const float>(data(n).f32.data(), n, n), qnum::group_size(G), qnum::view(k.codes.data(), n, n),
                   qnum::scales_of(k.scales.data(), n, n / G));
  }
  return k;
}
template <class T>
void bm_dequantize(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  int8_codes& k = codes_for(n);
  qbench::aligned_vector<T> out(static_cast<std::size_t>(n * n));
  for (auto _ : s) {
    const auto st = qnum::dequantize(int8_sym, qnum::view<const std::uint8_t>(k.codes.data(), n, n), qnum::group_size(G),
                                     qnum::scales_of(k.scales.data(), n, n / G), {}, qnum::view(out.data(), n, n));
    if (st != qnum::status::ok) s.SkipWithError("dequantize failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * (1 + sizeof(T)) + n * n / G * 4);
}
template <class T>
void bm_scalar_dequantize(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  int8_codes& k = codes_for(n);
  qbench::aligned_vector<T> out(static_cast<std::size_t>(n * n));
  for (auto _ : s) {
    for (std::int64_t i = 0; i < n * n; ++i)
      st(out.data(), i, static_cast<float>(static_cast<std::int8_t>(k.codes[static_cast<std::size_t>(i)])) * k.scales[static_cast<std::size_t>(i / G)]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * (1 + sizeof(T)) + n * n / G * 4);
}

// ---- fake quantize INT8 (g128 unless named), output in the input's dtype --------------------------------
template <class T, int GS = G>
void bm_fake_quant(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<T> out(static_cast<std::size_t>(n * n));
  for (auto _ : s) {
    const auto st = qnum::fake_quantize(int8_sym, qnum::view<const T>(input_of<T>(in), n, n), qnum::group_size(GS),
                                        qnum::view(out.data(), n, n));
    if (st != qnum::status::ok) s.SkipWithError("fake_quantize failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 2 * sizeof(T));
}
// The QAT case: slime's INT4 fake quantization (symmetric [-7, 7], fp32 scale), bf16 weights in and out, g32.
void bm_fake_quant_slime_bf16(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<std::uint16_t> out(static_cast<std::size_t>(n * n));
  for (auto _ : s) {
    const auto st = qnum::fake_quantize(qnum::presets::slime_int4_qat, qnum::view<qnum::bf16>(in.b16.data(), n, n),
                                        qnum::group_size(32), qnum::view<qnum::bf16>(out.data(), n, n));
    if (st != qnum::status::ok) s.SkipWithError("fake_quantize failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 2 * sizeof(std::uint16_t));
}
template <class T>
void bm_scalar_fake_quant(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const T* x = input_of<T>(in);
  qbench::aligned_vector<T> out(static_cast<std::size_t>(n * n));
  for (auto _ : s) {
    for (std::int64_t g = 0; g < n * n / G; ++g) {
      float amax = 0.0f;
      for (std::int64_t i = g * G; i < g * G + G; ++i) amax = std::max(amax, std::fabs(ld(x, i)));
      const float sc = amax > 0 ? amax / 127.0f : 1.0f;
      for (std::int64_t i = g * G; i < g * G + G; ++i)
        st(out.data(), i, std::min(127.0f, std::max(-127.0f, std::nearbyint(ld(x, i) / sc))) * sc);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * 2 * sizeof(T));
}

// ---- Q-GaLore INT8 gradient quantizer with error feedback (fp32 grad; fp32 or bf16 residual) ---------
// Delayed scaling, non-finite elements zeroed (no pre-pass): one pass reads g and r, writes codes and r. One scale
// for the tensor, or (PerRow) one a row: n groups of n elements, each far below the caches at n = 4096. SkipStep:
// the default policy (skip_step), whose pre-pass reads g and r once more to find any Inf or NaN before writing.
// Current: current timing (this step's amax; under skip_step a tensor of one group takes it from the pre-pass).
template <class R, bool PerRow = false, bool SkipStep = false, bool Current = false>
void bm_grad_int8(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  qbench::aligned_vector<std::int8_t> codes(static_cast<std::size_t>(n * n));
  qbench::aligned_vector<R> residual(static_cast<std::size_t>(n * n));
  const std::int64_t ns = PerRow ? n : 1;
  std::vector<qnum::dynamic_scale_state> states(static_cast<std::size_t>(ns));
  const auto groups = PerRow ? qnum::per_row() : qnum::per_tensor();
  qnum::dynamic_scale_config cfg{};
  cfg.on_nonfinite = SkipStep ? qnum::nonfinite_policy::skip_step : qnum::nonfinite_policy::zero_elements;
  if (Current) cfg.timing = qnum::scale_timing::current;
  qnum::quantize_gradient_int8(qnum::view(in.f32.data(), n, n), groups, qnum::view(codes.data(), n, n),
                               qnum::view(residual.data(), n, n), qnum::view(states.data(), ns, 1), cfg);
  for (auto _ : s) {
    const auto st = qnum::quantize_gradient_int8(qnum::view(in.f32.data(), n, n), groups, qnum::view(codes.data(), n, n),
                                                 qnum::view(residual.data(), n, n), qnum::view(states.data(), ns, 1), cfg);
    if (st != qnum::status::ok) s.SkipWithError("quantize_gradient_int8 failed");
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * (4 + 1 + 2 * sizeof(R)));
}
template <class R>
void bm_scalar_grad_int8(benchmark::State& s) {
  const std::int64_t n = s.range(0);
  inputs& in = data(n);
  const float* g = in.f32.data();
  qbench::aligned_vector<std::int8_t> codes(static_cast<std::size_t>(n * n));
  qbench::aligned_vector<R> residual(static_cast<std::size_t>(n * n));
  float scale = 4.0f, amax_prev = 4.0f;
  for (auto _ : s) {
    scale = 0.99f * scale + 0.01f * amax_prev;
    const float inv = 127.0f / scale, dq = scale / 127.0f;
    float amax = 0.0f;
    for (std::int64_t i = 0; i < n * n; ++i) {
      const float x = g[i] + ld(residual.data(), i);
      const float q = std::nearbyint(std::min(127.0f, std::max(-127.0f, x * inv)));
      codes[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(q);
      st(residual.data(), i, x - q * dq);
      amax = std::max(amax, std::fabs(x));
    }
    amax_prev = amax;
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  qbench::set_counters(s, n * n, n * n * (4 + 1 + 2 * sizeof(R)));
}

template <class Fn>
void reg(const std::string& name, Fn fn, const std::vector<std::int64_t>& sizes) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), fn);
  for (auto n : sizes) b->Arg(n);
  b->Unit(benchmark::kMillisecond);  // CPU time: the shared VM steals wall time (docs/performance.md)
  // A fixed number of calls (tools/count-instructions.sh: instructions counted for two numbers of calls)
  if (const char* it = std::getenv("QNUM_BENCH_ITERATIONS")) b->Iterations(std::atoll(it));
}

template <class T>
void reg_typed(const std::vector<std::int64_t>& sizes) {
  const std::string t = tname<T>();
  reg("quantize_int8_g128_" + t, bm_quantize<T, runtime_int8, G>, sizes);
  reg("scalar_quantize_int8_g128_" + t, bm_scalar_quantize<T>, sizes);
  reg("quantize_pack_w4a16_" + t, bm_quantize_pack<T>, sizes);
  reg("quantize_pack_w4a16_fused_" + t, bm_quantize_pack_fused<T>, sizes);
  reg("scalar_quantize_pack_w4a16_" + t, bm_scalar_quantize_pack<T>, sizes);
  reg("ct_nvfp4_pack_" + t, bm_ct_fp4<T, true>, sizes);
  reg("scalar_ct_nvfp4_pack_" + t, bm_scalar_ct_fp4<T, true>, sizes);
  reg("ct_mxfp4_pack_" + t, bm_ct_fp4<T, false>, sizes);
  reg("scalar_ct_mxfp4_pack_" + t, bm_scalar_ct_fp4<T, false>, sizes);
  reg("dequantize_int8_g128_to_" + t, bm_dequantize<T>, sizes);
  reg("scalar_dequantize_int8_g128_to_" + t, bm_scalar_dequantize<T>, sizes);
  reg("fake_quant_int8_g128_" + t, bm_fake_quant<T>, sizes);
  reg("scalar_fake_quant_int8_g128_" + t, bm_scalar_fake_quant<T>, sizes);
  reg(std::string("grad_int8_feedback_res_") + t, bm_grad_int8<T>, sizes);
  reg(std::string("grad_int8_feedback_per_row_res_") + t, bm_grad_int8<T, true>, sizes);
  reg(std::string("grad_int8_feedback_skip_step_res_") + t, bm_grad_int8<T, false, true>, sizes);
  reg(std::string("grad_int8_feedback_current_skip_step_res_") + t, bm_grad_int8<T, false, true, true>, sizes);
  reg(std::string("scalar_grad_int8_feedback_res_") + t, bm_scalar_grad_int8<T>, sizes);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> sizes = {512, 4096};
  std::vector<char*> args;
  bool have_min_time = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--large") == 0) { sizes.push_back(8192); continue; }
    if (std::strncmp(argv[i], "--benchmark_min_time", 20) == 0) have_min_time = true;
    args.push_back(argv[i]);
  }
  static char min_time[] = "--benchmark_min_time=0.05";
  if (!have_min_time) args.insert(args.begin() + 1, min_time);
  benchmark::AddCustomContext("qnum_host_simd", qnum::simd_target_name(qnum::host_simd_target()));
#if QNUM_HOST_SIMD
  // The lanes' CPU-dependent choices (host/simd.hpp): same bits either way, different times.
  benchmark::AddCustomContext("qnum_bf16_convert", qnum::detail::simd::bf16_convert() ? "on" : "off");
  benchmark::AddCustomContext("qnum_fma_division", qnum::detail::simd::fma_division_name(qnum::detail::simd::fma_division_mode()));
#endif
  reg("copy", bm_copy, sizes);
  reg("quantize_int8_g32_runtime_fp32", bm_quantize<float, runtime_int8, 32>, sizes);
  reg("quantize_int8_g32_fixed_fp32", bm_quantize<float, fixed_int8, 32>, sizes);
  reg("quantize_int8_g128_fixed_fp32", bm_quantize<float, fixed_int8, 128>, sizes);
  reg("fake_quant_int8_g32_fp32", bm_fake_quant<float, 32>, sizes);
  reg("fake_quant_slime_int4_g32_bf16", bm_fake_quant_slime_bf16, sizes);
  reg("quantize_fp8_1x128_fp32", bm_quantize_preset<float, deepgemm_1x128>, sizes);
  reg("quantize_fp8_1x128_bf16", bm_quantize_preset<std::uint16_t, deepgemm_1x128>, sizes);
  reg("quantize_fp8_128x128_fp32", bm_quantize_preset<float, deepgemm_128x128>, sizes);
  reg("quantize_mxfp8_fp32", bm_quantize_preset<float, mxfp8_1x32>, sizes);
  reg("quantize_mxfp8_rceil_fp32", bm_quantize_preset<float, mxfp8_rceil_1x32>, sizes);
  reg("quantize_w4a16_asym_g128_fp32", bm_quantize_preset<float, ct_asym_g128>, sizes);
  reg("quantize_nvfp4_fp32", bm_quantize_preset<float, nvfp4_1x16>, sizes);
  reg("quantize_nvfp4_fixed_fp32", bm_quantize_preset<float, nvfp4_1x16, true>, sizes);
  reg("dequantize_fp8_128x128_to_bf16", bm_dequantize_preset<std::uint16_t, deepgemm_128x128>, sizes);
  reg("dequantize_fp8_1x128_to_fp32", bm_dequantize_preset<float, deepgemm_1x128>, sizes);
  reg("dequantize_nvfp4_to_bf16", bm_dequantize_preset<std::uint16_t, nvfp4_1x16>, sizes);
  reg("dequantize_mxfp8_to_bf16", bm_dequantize_preset<std::uint16_t, mxfp8_1x32>, sizes);
  reg("fake_quant_fp8_1x128_fp32", bm_fake_quant_preset<float, deepgemm_1x128>, sizes);
  reg("fake_quant_fp8_1x128_bf16", bm_fake_quant_preset<std::uint16_t, deepgemm_1x128>, sizes);
  reg("fake_quant_w4a16_asym_g128_fp32", bm_fake_quant_preset<float, ct_asym_g128>, sizes);
  reg("fake_quant_nvfp4_fp32", bm_fake_quant_preset<float, nvfp4_1x16>, sizes);
  reg("gguf_q8_0_fp32", bm_gguf<qnum::gguf::type::q8_0>, sizes);
  reg("ref_gguf_q8_0_fp32", bm_ref_gguf<qnum::gguf::type::q8_0>, sizes);
  reg("gguf_q4_0_fp32", bm_gguf<qnum::gguf::type::q4_0>, sizes);
  reg("ref_gguf_q4_0_fp32", bm_ref_gguf<qnum::gguf::type::q4_0>, sizes);
  reg("gguf_q4_1_fp32", bm_gguf<qnum::gguf::type::q4_1>, sizes);
  reg("ref_gguf_q4_1_fp32", bm_ref_gguf<qnum::gguf::type::q4_1>, sizes);
#if defined(QNUM_BENCH_GGML)
  ggml_cpu_init();
  if (!ggml_bytes_agree(sizes)) {
    std::fprintf(stderr, "qnum-bench-host: the GGUF writers' bytes differ from ggml's _ref quantizers\n");
    return 1;
  }
  reg("ggml_q8_0_fp32", bm_ggml<qnum::gguf::type::q8_0, true>, sizes);
  reg("ggml_ref_q8_0_fp32", bm_ggml<qnum::gguf::type::q8_0, false>, sizes);
  reg("ggml_ref_q4_0_fp32", bm_ggml<qnum::gguf::type::q4_0, false>, sizes);
  reg("ggml_ref_q4_1_fp32", bm_ggml<qnum::gguf::type::q4_1, false>, sizes);
#endif
  reg_typed<float>(sizes);
  reg_typed<std::uint16_t>(sizes);
  int ac = static_cast<int>(args.size());
  return qbench::run_with_ratios(ac, args.data());
}
