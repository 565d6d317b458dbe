// bench/throughput_device.cu: qnum-bench-device, CUDA-event timing of the device launchers (qnum/gpu/quantize.cuh,
// qnum/train/dynamic_scale.cuh) against a device-to-device copy measured in the same run.
//
//   qnum-bench-device [--quick] [--reps N] [--calls N] [--filter TEXT] [--csv FILE] [--md FILE]
//
// 1. Verification: before any timing, every operation runs once on a 256 x 4096 input and its outputs are
//    compared bit for bit with the host qnum function (quantize, dequantize, fake_quantize, quantize +
//    ct::pack_weight, quantize_gradient_int8 over three steps, dequantize_gradient_int8). Any difference is
//    printed and the program exits 1 without timing anything.
// 2. Large shapes (8192x8192 and 32768x4096; --quick: 4096x4096), cold L2: before every run a kernel reads
//    a buffer of twice the L2 size (which also writes back the previous run's dirty lines), then CUDA events
//    around the launcher call; median and min of --reps runs (default 50). GB/s counts every byte the
//    operation reads and writes, once (the two-pass per-tensor path counts its input twice). The baseline
//    is the better of cudaMemcpyAsync D2D and a 16-byte-vector copy kernel moving the same traffic (half
//    read, half written), timed the same way in the same run: "% copy". "% peak" is against
//    2 x memory clock x bus width from the device attributes.
// 3. Small shapes (1, 16, 64, 256 rows x 4096; --quick: 1 and 256), warm L2, microseconds per call:
//    eager = --calls (default 100) back-to-back launches from an idle stream, events around them, / calls;
//    graph = the same calls captured into one CUDA graph, replayed (host queued ahead), / calls.
// Targets: large shapes >= 90 % of the measured copy, small shapes <= 3 us per call under a
// graph. They are benchmarks, not tests: a miss is reported, the exit status stays 0.
// Exit status: 0 after the run; 1 on a CUDA error or a verification mismatch; 2 on a bad argument;
// 77 when there is no usable CUDA device (meson's SKIP).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "qnum/train/dynamic_scale.cuh"
#include "qnum/gpu/quantize.cuh"
#include "qnum/train/dynamic_scale.hpp"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/static_scheme.hpp"

namespace {

// ---------------------------------------------------------------------------------------------------
// Errors

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "qnum-bench-device: %s:%d: %s failed: %s (%s)\n", file, line, what, cudaGetErrorName(e),
               cudaGetErrorString(e));
  std::exit(1);
}
#define QB_CHECK(expr) check_cuda((expr), #expr, __FILE__, __LINE__)

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "qnum-bench-device: %s\n", msg.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------------------------------------------
// Helper kernels

// Bench data: approximately N(0, 1) (Irwin-Hall sum of four 16-bit uniforms), every 4099th element x32
// (outliers); fp32 and its bf16 rounding. Deterministic (Philox); the host reference downloads it.
__global__ void fill_kernel(float* f32, std::uint16_t* b16, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t a = qnum::random_bits(seed, static_cast<std::uint64_t>(i));
    const std::uint32_t b = qnum::random_bits(seed + 1u, static_cast<std::uint64_t>(i));
    const float s = static_cast<float>((a & 0xFFFFu) + (a >> 16) + (b & 0xFFFFu) + (b >> 16));  // exact (< 2^18)
    float x = __fmul_rn(__fadd_rn(__fmul_rn(s, 1.0f / 65536.0f), -2.0f), 1.7320508f);
    if (i % 4099 == 17) x = __fmul_rn(x, 32.0f);
    f32[i] = x;
    b16[i] = qnum::to_bf16(x);
  }
}

// Reads n16 16-byte words through L2 (evicting what the previous run left there); the sink write only
// keeps the loads alive.
__global__ void flush_kernel(const ::uint4* p, std::size_t n16, unsigned* sink) {
  unsigned acc = 0u;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n16;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const ::uint4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) atomicAdd(sink, 1u);
}

// Copy baseline: 16-byte vectors, four loads in flight per thread, grid-stride.
__global__ void __launch_bounds__(256) copy_kernel(const ::uint4* __restrict__ src, ::uint4* __restrict__ dst,
                                                   std::size_t n16) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    const ::uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
}

// Holds the stream for `ns` nanoseconds so that the host can queue the timed work behind it.
__global__ void delay_kernel(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// ---------------------------------------------------------------------------------------------------
// Device state: one set of buffers, sized for the largest shape; smaller shapes use prefixes.

struct device_state {
  cudaStream_t stream = nullptr;
  cudaDeviceProp prop{};
  int device = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0;
  double peak_gbps = 0.0;
  std::int64_t cap = 0;  // elements
  float* in_f32 = nullptr;
  std::uint16_t* in_b16 = nullptr;
  std::uint8_t* codes = nullptr;
  std::uint8_t* scales = nullptr;  // bytes; up to cap / 16 scales of 4 bytes
  std::int32_t* zeros = nullptr;   // up to cap / 16
  std::uint32_t* packed = nullptr; // cap / 8 words
  float* out_f32 = nullptr;
  std::uint16_t* out_b16 = nullptr;
  std::uint32_t* scratch3 = nullptr;  // per-tensor statistics (two-pass path)
  std::int8_t* gcodes = nullptr;
  float* res_f32 = nullptr;
  std::uint16_t* res_b16 = nullptr;
  qnum::dynamic_scale_state* states = nullptr;  // one (per-tensor gradient scale)
  void* ds_scratch = nullptr;
  unsigned char* copy_src = nullptr;
  unsigned char* copy_dst = nullptr;
  std::size_t copy_bytes = 0;
  unsigned char* flush = nullptr;
  std::size_t flush_bytes = 0;
  unsigned* sink = nullptr;
  std::vector<cudaEvent_t> ev;
  std::vector<void*> allocations;
};
device_state D;

template <class T>
T* dalloc(std::size_t count) {
  void* p = nullptr;
  QB_CHECK(cudaMalloc(&p, count * sizeof(T) + 16));
  D.allocations.push_back(p);
  return static_cast<T*>(p);
}

void sync() { QB_CHECK(cudaStreamSynchronize(D.stream)); }

template <class T>
std::vector<T> download(const T* p, std::size_t n) {
  std::vector<T> h(n);
  if (n > 0) QB_CHECK(cudaMemcpyAsync(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost, D.stream));
  sync();
  return h;
}

void poison(void* p, int byte, std::size_t bytes) { QB_CHECK(cudaMemsetAsync(p, byte, bytes, D.stream)); }

void ensure_events(std::size_t n) {
  while (D.ev.size() < n) {
    cudaEvent_t e;
    QB_CHECK(cudaEventCreate(&e));
    D.ev.push_back(e);
  }
}

void flush_l2() {
  const std::size_t n16 = D.flush_bytes / 16;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n16 + 255) / 256, std::size_t(D.prop.multiProcessorCount) * 8));
  flush_kernel<<<blocks, 256, 0, D.stream>>>(reinterpret_cast<const ::uint4*>(D.flush), n16, D.sink);
  QB_CHECK(cudaGetLastError());
}

void delay_us(double us) {
  us = std::min(us, 100000.0);  // the flushes between runs keep the queue ahead after that
  delay_kernel<<<1, 1, 0, D.stream>>>(static_cast<unsigned long long>(us * 1000.0));
  QB_CHECK(cudaGetLastError());
}

// ---------------------------------------------------------------------------------------------------
// Timing

struct sample {
  double median_us = 0.0, min_us = 0.0;
};

sample summarize(std::vector<double> v) {
  if (v.empty()) fail("no samples");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  sample s;
  s.median_us = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  s.min_us = v.front();
  return s;
}

using launch_fn = std::function<cudaError_t()>;

// Cold L2: flush, events around one call; reps samples, all queued behind a delay kernel.
sample time_cold(const launch_fn& fn, int reps) {
  QB_CHECK(fn());  // warm-up (and the first step of a stateful operation)
  sync();
  ensure_events(2 * static_cast<std::size_t>(reps));
  delay_us(1000.0 + 50.0 * reps);
  for (int r = 0; r < reps; ++r) {
    flush_l2();
    QB_CHECK(cudaEventRecord(D.ev[2 * r], D.stream));
    QB_CHECK(fn());
    QB_CHECK(cudaEventRecord(D.ev[2 * r + 1], D.stream));
  }
  sync();
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    float ms = 0.0f;
    QB_CHECK(cudaEventElapsedTime(&ms, D.ev[2 * r], D.ev[2 * r + 1]));
    us.push_back(1000.0 * ms);
  }
  return summarize(us);
}

// Eager: from an idle stream, `calls` back-to-back launches; per-call time (host launch cost included
// whenever the host is slower than the GPU).
sample time_eager(const launch_fn& fn, int reps, int calls) {
  QB_CHECK(fn());
  sync();
  ensure_events(2);
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    sync();
    QB_CHECK(cudaEventRecord(D.ev[0], D.stream));
    for (int k = 0; k < calls; ++k) QB_CHECK(fn());
    QB_CHECK(cudaEventRecord(D.ev[1], D.stream));
    sync();
    float ms = 0.0f;
    QB_CHECK(cudaEventElapsedTime(&ms, D.ev[0], D.ev[1]));
    us.push_back(1000.0 * ms / calls);
  }
  return summarize(us);
}

// Graph: `calls` calls captured into one graph; each replay timed with events (replays queued behind a
// delay kernel, so the host launch cost is hidden); per-call time.
sample time_graph(const launch_fn& fn, int reps, int calls) {
  QB_CHECK(fn());
  sync();
  cudaGraph_t graph = nullptr;
  QB_CHECK(cudaStreamBeginCapture(D.stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t err = cudaSuccess;
  for (int k = 0; k < calls && err == cudaSuccess; ++k) err = fn();
  const cudaError_t end = cudaStreamEndCapture(D.stream, &graph);
  QB_CHECK(err);
  QB_CHECK(end);
  cudaGraphExec_t exec = nullptr;
  QB_CHECK(cudaGraphInstantiate(&exec, graph, 0ULL));
  QB_CHECK(cudaGraphUpload(exec, D.stream));
  QB_CHECK(cudaGraphLaunch(exec, D.stream));  // warm-up
  sync();
  ensure_events(2 * static_cast<std::size_t>(reps));
  delay_us(1000.0 + 50.0 * reps);
  for (int r = 0; r < reps; ++r) {
    QB_CHECK(cudaEventRecord(D.ev[2 * r], D.stream));
    QB_CHECK(cudaGraphLaunch(exec, D.stream));
    QB_CHECK(cudaEventRecord(D.ev[2 * r + 1], D.stream));
  }
  sync();
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    float ms = 0.0f;
    QB_CHECK(cudaEventElapsedTime(&ms, D.ev[2 * r], D.ev[2 * r + 1]));
    us.push_back(1000.0 * ms / calls);
  }
  QB_CHECK(cudaGraphExecDestroy(exec));
  QB_CHECK(cudaGraphDestroy(graph));
  return summarize(us);
}

// ---------------------------------------------------------------------------------------------------
// Operations (one launcher instantiation per operation and input type)

struct shape {
  std::int64_t rows = 0, cols = 0;
  std::int64_t n() const { return rows * cols; }
  std::size_t un() const { return static_cast<std::size_t>(rows * cols); }
};

template <class T> const T* input();
template <> const float* input<float>() { return D.in_f32; }
template <> const std::uint16_t* input<std::uint16_t>() { return D.in_b16; }
template <class T> T* output();
template <> float* output<float>() { return D.out_f32; }
template <> std::uint16_t* output<std::uint16_t>() { return D.out_b16; }
template <class T> T* residual();
template <> float* residual<float>() { return D.res_f32; }
template <> std::uint16_t* residual<std::uint16_t>() { return D.res_b16; }
template <class T> constexpr const char* type_name() { return sizeof(T) == 4 ? "fp32" : "bf16"; }

// Default view types: 4-byte elements fp32, 2-byte elements bf16.
template <class T> qnum::matrix_view<const T> in_view(shape s) { return qnum::view(input<T>(), s.rows, s.cols); }
template <class T> qnum::matrix_view<T> out_view(shape s) { return qnum::view(output<T>(), s.rows, s.cols); }

qnum::detail::grid grid_of(shape s, qnum::group_shape g) {
  qnum::detail::grid r;
  if (qnum::detail::make_grid(s.rows, s.cols, g, r) != qnum::status::ok) fail("bad group shape");
  return r;
}
std::size_t groups_of(const qnum::detail::grid& g) { return static_cast<std::size_t>(g.nr * g.nc); }

template <class F>
qnum::scale_view scale_view_of(const qnum::scheme<F>& s, const qnum::detail::grid& g, void* p) {
  return qnum::scale_view{p, g.nr, g.nc, g.nc, qnum::dtype_bytes(s.store)};
}
template <class F>
bool asym(const qnum::scheme<F>& s) { return s.kind == qnum::scheme_kind::asymmetric; }

// "" when equal; else the first differing element and the number of differences.
template <class T>
std::string diff(const char* what, const std::vector<T>& dev, const std::vector<T>& host) {
  if (dev.size() != host.size()) return std::string(what) + ": size mismatch";
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < dev.size(); ++i)
    if (std::memcmp(&dev[i], &host[i], sizeof(T)) != 0) {
      if (bad == 0) first = i;
      ++bad;
    }
  if (bad == 0) return "";
  unsigned long long d = 0, h = 0;
  std::memcpy(&d, &dev[first], sizeof(T) < 8 ? sizeof(T) : 8);
  std::memcpy(&h, &host[first], sizeof(T) < 8 ? sizeof(T) : 8);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu of %zu elements differ; first at %zu: device 0x%llx, host 0x%llx", what, bad,
                dev.size(), first, d, h);
  return buf;
}

// --- group quantize to codes (+ scales, + zero points) ------------------------------------------------
template <class H, class T>
cudaError_t dev_quantize(const H& h, qnum::group_shape g, shape sh, bool two_pass) {
  const auto s = h.get();
  const auto gr = grid_of(sh, g);
  const qnum::matrix_view<std::int32_t> zv = asym(s) ? qnum::view(D.zeros, gr.nr, gr.nc) : qnum::matrix_view<std::int32_t>{};
  return qnum::gpu::cuda_error(qnum::gpu::launch_quantize(h, in_view<T>(sh), g, qnum::view(D.codes, sh.rows, sh.cols), scale_view_of(s, gr, D.scales),
                                     zv, qnum::nearest_even(), 0.0f, D.stream, two_pass ? D.scratch3 : nullptr));
}

template <class H, class T>
std::string check_quantize(const H& h, qnum::group_shape g, shape sh, bool two_pass) {
  const auto s = h.get();
  const auto gr = grid_of(sh, g);
  const std::size_t ng = groups_of(gr), sb = static_cast<std::size_t>(qnum::dtype_bytes(s.store));
  poison(D.codes, 0xAB, sh.un());
  poison(D.scales, 0xCD, ng * sb);
  poison(D.zeros, 0xEE, ng * 4);
  QB_CHECK((dev_quantize<H, T>(h, g, sh, two_pass)));
  const auto dcodes = download(D.codes, sh.un());
  const auto dscales = download(D.scales, ng * sb);
  const auto dzeros = download(D.zeros, ng);
  const auto hin = download(input<T>(), sh.un());
  std::vector<std::uint8_t> hcodes(sh.un()), hscales(ng * sb);
  std::vector<std::int32_t> hzeros(ng);
  const auto st = qnum::quantize(s, qnum::view(hin.data(), sh.rows, sh.cols), g, qnum::view(hcodes.data(), sh.rows, sh.cols),
                                 scale_view_of(s, gr, hscales.data()),
                                 asym(s) ? qnum::view(hzeros.data(), gr.nr, gr.nc) : qnum::matrix_view<std::int32_t>{});
  if (st != qnum::status::ok) return std::string("host quantize: ") + qnum::to_string(st);
  std::string d = diff("codes", dcodes, hcodes);
  if (d.empty()) d = diff("scales", dscales, hscales);
  if (d.empty() && asym(s)) d = diff("zero points", dzeros, hzeros);
  return d;
}

// --- fused W4A16 quantize + pack ------------------------------------------------------------------------
template <class H, class T>
cudaError_t dev_pack(const H& h, std::int64_t G, shape sh) {
  const auto s = h.get();
  const auto gr = grid_of(sh, qnum::group_size(G));
  const qnum::matrix_view<std::int32_t> zv = asym(s) ? qnum::view(D.zeros, gr.nr, gr.nc) : qnum::matrix_view<std::int32_t>{};
  return qnum::gpu::cuda_error(qnum::gpu::launch_w4a16_pack(h, in_view<T>(sh), G, qnum::view(D.packed, sh.rows, qnum::packed_words(sh.cols, 4)),
                                                            scale_view_of(s, gr, D.scales), zv, D.stream));
}

template <class H, class T>
std::string check_pack(const H& h, std::int64_t G, shape sh) {
  const auto s = h.get();
  const auto gr = grid_of(sh, qnum::group_size(G));
  const std::size_t ng = groups_of(gr), sb = static_cast<std::size_t>(qnum::dtype_bytes(s.store));
  const std::size_t words = static_cast<std::size_t>(sh.rows * ((sh.cols + 7) / 8));
  poison(D.packed, 0xAB, words * 4);
  poison(D.scales, 0xCD, ng * sb);
  poison(D.zeros, 0xEE, ng * 4);
  QB_CHECK((dev_pack<H, T>(h, G, sh)));
  const auto dpacked = download(D.packed, words);
  const auto dscales = download(D.scales, ng * sb);
  const auto dzeros = download(D.zeros, ng);
  const auto hin = download(input<T>(), sh.un());
  std::vector<std::uint8_t> hcodes(sh.un()), hscales(ng * sb);
  std::vector<std::int32_t> hzeros(ng);
  const auto st = qnum::quantize(s, qnum::view(hin.data(), sh.rows, sh.cols), qnum::group_size(G),
                                 qnum::view(hcodes.data(), sh.rows, sh.cols), scale_view_of(s, gr, hscales.data()),
                                 asym(s) ? qnum::view(hzeros.data(), gr.nr, gr.nc) : qnum::matrix_view<std::int32_t>{});
  if (st != qnum::status::ok) return std::string("host quantize: ") + qnum::to_string(st);
  std::vector<std::uint32_t> hpacked(words);  // int4 codes (two's complement in the low nibble) packed as they are
  if (qnum::ct::pack_weight(qnum::view(hcodes.data(), sh.rows, sh.cols), 4, qnum::view(hpacked.data(), sh.rows, qnum::packed_words(sh.cols, 4))) !=
      qnum::status::ok)
    return "host ct::pack_weight failed";
  std::string d = diff("weight_packed", dpacked, hpacked);
  if (d.empty()) d = diff("weight_scale", dscales, hscales);
  if (d.empty() && asym(s)) d = diff("zero points", dzeros, hzeros);
  return d;
}

// --- dequantize (codes made by the bf16 quantize of the same scheme) ------------------------------------
template <class H, class U>
cudaError_t dev_dequantize(const H& h, qnum::group_shape g, shape sh) {
  const auto s = h.get();
  const auto gr = grid_of(sh, g);
  const qnum::matrix_view<const std::int32_t> zv =
      asym(s) ? qnum::view(static_cast<const std::int32_t*>(D.zeros), gr.nr, gr.nc) : qnum::matrix_view<const std::int32_t>{};
  return qnum::gpu::cuda_error(qnum::gpu::launch_dequantize(h, qnum::view(static_cast<const std::uint8_t*>(D.codes), sh.rows, sh.cols), g,
                                       scale_view_of(s, gr, D.scales), zv, out_view<U>(sh), 0.0f, D.stream));
}

template <class H, class U>
std::string check_dequantize(const H& h, qnum::group_shape g, shape sh) {
  const auto s = h.get();
  const auto gr = grid_of(sh, g);
  const std::size_t ng = groups_of(gr), sb = static_cast<std::size_t>(qnum::dtype_bytes(s.store));
  poison(output<U>(), 0xAB, sh.un() * sizeof(U));
  QB_CHECK((dev_dequantize<H, U>(h, g, sh)));
  const auto dout = download(output<U>(), sh.un());
  auto codes = download(D.codes, sh.un());
  auto scales = download(D.scales, ng * sb);
  const auto zeros = download(D.zeros, ng);
  std::vector<U> hout(sh.un());
  const auto st = qnum::dequantize(s, qnum::view(static_cast<const std::uint8_t*>(codes.data()), sh.rows, sh.cols), g,
                                   scale_view_of(s, gr, scales.data()),
                                   asym(s) ? qnum::view(zeros.data(), gr.nr, gr.nc) : qnum::matrix_view<const std::int32_t>{},
                                   qnum::view(hout.data(), sh.rows, sh.cols));
  if (st != qnum::status::ok) return std::string("host dequantize: ") + qnum::to_string(st);
  return diff("output", dout, hout);
}

// --- fake quantize (output in the input's type) -------------------------------------------------------
template <class H, class T>
cudaError_t dev_fake(const H& h, qnum::group_shape g, shape sh) {
  return qnum::gpu::cuda_error(qnum::gpu::launch_fake_quantize(h, in_view<T>(sh), g, out_view<T>(sh), qnum::nearest_even(), 0.0f, D.stream, nullptr));
}

template <class H, class T>
std::string check_fake(const H& h, qnum::group_shape g, shape sh) {
  const auto s = h.get();
  poison(output<T>(), 0xAB, sh.un() * sizeof(T));
  QB_CHECK((dev_fake<H, T>(h, g, sh)));
  const auto dout = download(output<T>(), sh.un());
  const auto hin = download(input<T>(), sh.un());
  std::vector<T> hout(sh.un());
  const auto st = qnum::fake_quantize(s, qnum::view(hin.data(), sh.rows, sh.cols), g, qnum::view(hout.data(), sh.rows, sh.cols));
  if (st != qnum::status::ok) return std::string("host fake_quantize: ") + qnum::to_string(st);
  return diff("output", dout, hout);
}

// --- INT8 gradient quantizer with error feedback (fp32 gradient, one scale for the tensor) -------------
// Delayed scaling, non-finite elements zeroed: after the first step one pass reads g and the residual
// and writes codes and the residual (as bench/throughput_host.cpp).
qnum::dynamic_scale_config grad_cfg() {
  qnum::dynamic_scale_config c;
  c.on_nonfinite = qnum::nonfinite_policy::zero_elements;
  return c;
}

void reset_grad(shape sh) {
  poison(D.states, 0, sizeof(qnum::dynamic_scale_state));
  poison(D.res_f32, 0, sh.un() * sizeof(float));
  poison(D.res_b16, 0, sh.un() * sizeof(std::uint16_t));
}

template <class R>
cudaError_t dev_grad(shape sh) {
  return qnum::gpu::cuda_error(qnum::gpu::launch_quantize_gradient_int8(
      qnum::view(static_cast<const float*>(D.in_f32), sh.rows, sh.cols), qnum::per_tensor(), qnum::view(D.gcodes, sh.rows, sh.cols),
      qnum::view(residual<R>(), sh.rows, sh.cols), qnum::view(D.states, 1, 1), D.ds_scratch, grad_cfg(), D.stream));
}

template <class R>
std::string check_grad(shape sh) {
  reset_grad(sh);
  const auto g = download(static_cast<const float*>(D.in_f32), sh.un());
  qnum::dynamic_scale_state hst{};
  std::vector<std::int8_t> hcodes(sh.un());
  std::vector<R> hres(sh.un(), R{0});
  for (int step = 0; step < 3; ++step) {
    QB_CHECK(dev_grad<R>(sh));
    qnum::gpu::dynamic_scale_scratch_header hdr{};
    QB_CHECK(cudaMemcpyAsync(&hdr, D.ds_scratch, sizeof hdr, cudaMemcpyDeviceToHost, D.stream));
    const auto dcodes = download(D.gcodes, sh.un());
    const auto dres = download(static_cast<const R*>(residual<R>()), sh.un());
    const auto dst = download(static_cast<const qnum::dynamic_scale_state*>(D.states), 1);
    const qnum::status hs = qnum::quantize_gradient_int8(qnum::view(g.data(), sh.rows, sh.cols), qnum::per_tensor(),
                                                         qnum::view(hcodes.data(), sh.rows, sh.cols),
                                                         qnum::view(hres.data(), sh.rows, sh.cols), qnum::view(&hst, 1, 1), grad_cfg());
    const std::string at = " (step " + std::to_string(step) + ")";
    if (qnum::gpu::dynamic_scale_status(hdr) != hs) return "status differs" + at;
    std::string d = diff("codes", dcodes, hcodes);
    if (d.empty()) d = diff("residual", dres, hres);
    if (d.empty() && std::memcmp(&dst[0], &hst, sizeof hst) != 0) d = "state (scale/amax/counters) differs";
    if (!d.empty()) return d + at;
  }
  return "";
}

cudaError_t dev_grad_dequant(shape sh) {
  return qnum::gpu::cuda_error(qnum::gpu::launch_dequantize_gradient_int8(
      qnum::view(static_cast<const std::int8_t*>(D.gcodes), sh.rows, sh.cols), qnum::per_tensor(),
      qnum::view(static_cast<const qnum::dynamic_scale_state*>(D.states), 1, 1), qnum::view(D.out_b16, sh.rows, sh.cols), D.stream));
}

std::string check_grad_dequant(shape sh) {
  poison(D.out_b16, 0xAB, sh.un() * 2);
  QB_CHECK(dev_grad_dequant(sh));
  const auto dout = download(D.out_b16, sh.un());
  const auto codes = download(D.gcodes, sh.un());
  const auto st = download(static_cast<const qnum::dynamic_scale_state*>(D.states), 1);
  std::vector<std::uint16_t> hout(sh.un());
  if (qnum::dequantize_gradient_int8(qnum::view(codes.data(), sh.rows, sh.cols), qnum::per_tensor(), qnum::view(st.data(), 1, 1),
                                     qnum::view(hout.data(), sh.rows, sh.cols)) != qnum::status::ok)
    return "host dequantize_gradient_int8 failed";
  return diff("output", dout, hout);
}

// --- the registry ------------------------------------------------------------------------------------
struct op {
  std::string name, dtype;
  std::function<void(shape)> prepare;          // before verification and timing (may be empty)
  std::function<cudaError_t(shape)> run;       // the timed call
  std::function<double(shape)> bytes;          // every byte read and written
  std::function<std::string(shape)> verify;    // "" when equal to the host API bit for bit
};

template <class F>
double param_bytes(const qnum::scheme<F>& s, const qnum::detail::grid& gr) {
  return static_cast<double>(groups_of(gr)) * (qnum::dtype_bytes(s.store) + (asym(s) ? 4 : 0));
}

template <class H, class T>
void add_quantize(std::vector<op>& ops, const std::string& name, const H& h, qnum::group_shape g,
                  bool two_pass = false) {
  const auto s = h.get();
  op o;
  o.name = name;
  o.dtype = type_name<T>();
  o.run = [=](shape sh) { return dev_quantize<H, T>(h, g, sh, two_pass); };
  o.bytes = [=](shape sh) {
    return static_cast<double>(sh.n()) * (sizeof(T) * (two_pass ? 2 : 1) + 1) + param_bytes(s, grid_of(sh, g));
  };
  o.verify = [=](shape sh) { return check_quantize<H, T>(h, g, sh, two_pass); };
  ops.push_back(o);
}

template <class H, class T>
void add_pack(std::vector<op>& ops, const std::string& name, const H& h, std::int64_t G) {
  const auto s = h.get();
  op o;
  o.name = name;
  o.dtype = type_name<T>();
  o.run = [=](shape sh) { return dev_pack<H, T>(h, G, sh); };
  o.bytes = [=](shape sh) {
    return static_cast<double>(sh.n()) * sizeof(T) + static_cast<double>(sh.rows * ((sh.cols + 7) / 8)) * 4 +
           param_bytes(s, grid_of(sh, qnum::group_size(G)));
  };
  o.verify = [=](shape sh) { return check_pack<H, T>(h, G, sh); };
  ops.push_back(o);
}

template <class H, class U>
void add_dequantize(std::vector<op>& ops, const std::string& name, const H& h, qnum::group_shape g) {
  const auto s = h.get();
  op o;
  o.name = name;
  o.dtype = std::string("->") + type_name<U>();
  o.prepare = [=](shape sh) {
    QB_CHECK((dev_quantize<H, std::uint16_t>(h, g, sh, false)));
    sync();
  };
  o.run = [=](shape sh) { return dev_dequantize<H, U>(h, g, sh); };
  o.bytes = [=](shape sh) { return static_cast<double>(sh.n()) * (1 + sizeof(U)) + param_bytes(s, grid_of(sh, g)); };
  o.verify = [=](shape sh) { return check_dequantize<H, U>(h, g, sh); };
  ops.push_back(o);
}

template <class H, class T>
void add_fake(std::vector<op>& ops, const std::string& name, const H& h, qnum::group_shape g) {
  op o;
  o.name = name;
  o.dtype = type_name<T>();
  o.run = [=](shape sh) { return dev_fake<H, T>(h, g, sh); };
  o.bytes = [=](shape sh) { return static_cast<double>(sh.n()) * 2 * sizeof(T); };
  o.verify = [=](shape sh) { return check_fake<H, T>(h, g, sh); };
  ops.push_back(o);
}

template <class R>
void add_grad(std::vector<op>& ops) {
  op o;
  o.name = "grad int8 + error feedback (per tensor)";
  o.dtype = std::string("res ") + type_name<R>();
  o.prepare = [](shape sh) {
    reset_grad(sh);
    sync();
  };
  o.run = [](shape sh) { return dev_grad<R>(sh); };
  o.bytes = [](shape sh) { return static_cast<double>(sh.n()) * (4 + 1 + 2 * sizeof(R)); };
  o.verify = [](shape sh) { return check_grad<R>(sh); };
  ops.push_back(o);
}

void add_grad_dequant(std::vector<op>& ops) {
  op o;
  o.name = "dequantize grad int8 (per tensor)";
  o.dtype = "->bf16";
  o.prepare = [](shape sh) {
    reset_grad(sh);
    QB_CHECK(dev_grad<float>(sh));
    sync();
  };
  o.run = [](shape sh) { return dev_grad_dequant(sh); };
  o.bytes = [](shape sh) { return static_cast<double>(sh.n()) * 3; };
  o.verify = [](shape sh) { return check_grad_dequant(sh); };
  ops.push_back(o);
}

std::vector<op> make_ops() {
  namespace p = qnum::presets;
  using bf16 = std::uint16_t;
  using qnum::fixed_scheme;
  const fixed_scheme<p::int8_sym> int8s;
  const fixed_scheme<p::slime_int4_qat> slime;
  const fixed_scheme<p::ct_w4a16_asym> ct_asym;
  const fixed_scheme<p::ct_w4a16_sym> ct_sym;
  const fixed_scheme<p::deepgemm_fp8> dg;
  const fixed_scheme<p::torchao_int8_sym> ao8;
  const fixed_scheme<p::te_fp8_current> te;
  const auto g128 = qnum::group_size(128), g32 = qnum::group_size(32);
  std::vector<op> ops;
  add_quantize<decltype(int8s), bf16>(ops, "quantize int8 sym g128", int8s, g128);
  add_quantize<decltype(int8s), float>(ops, "quantize int8 sym g128", int8s, g128);
  add_quantize<decltype(int8s), bf16>(ops, "quantize int8 sym g32", int8s, g32);
  add_quantize<decltype(int8s), float>(ops, "quantize int8 sym g32", int8s, g32);
  add_quantize<decltype(slime), bf16>(ops, "quantize int4 sym g128", slime, g128);
  add_quantize<decltype(slime), float>(ops, "quantize int4 sym g128", slime, g128);
  add_quantize<decltype(slime), bf16>(ops, "quantize int4 sym g32", slime, g32);
  add_quantize<decltype(slime), float>(ops, "quantize int4 sym g32", slime, g32);
  add_quantize<decltype(ct_asym), bf16>(ops, "quantize int4 asym g128 (+zeros)", ct_asym, g128);
  add_quantize<decltype(dg), bf16>(ops, "quantize fp8 e4m3 1x128", dg, p::deepseek_act);
  add_quantize<decltype(dg), float>(ops, "quantize fp8 e4m3 1x128", dg, p::deepseek_act);
  add_quantize<decltype(dg), bf16>(ops, "quantize fp8 e4m3 128x128", dg, p::deepseek_weight);
  add_quantize<decltype(dg), float>(ops, "quantize fp8 e4m3 128x128", dg, p::deepseek_weight);
  add_quantize<decltype(ao8), bf16>(ops, "quantize int8 per-row", ao8, qnum::per_row());
  add_quantize<decltype(ao8), float>(ops, "quantize int8 per-row", ao8, qnum::per_row());
  add_quantize<decltype(te), bf16>(ops, "quantize fp8 e4m3 per-tensor (2 pass)", te, qnum::per_tensor(), true);
  add_quantize<decltype(te), float>(ops, "quantize fp8 e4m3 per-tensor (2 pass)", te, qnum::per_tensor(), true);
  add_pack<decltype(ct_sym), bf16>(ops, "w4a16 quantize+pack sym g128", ct_sym, 128);
  add_pack<decltype(ct_asym), bf16>(ops, "w4a16 quantize+pack asym g128", ct_asym, 128);
  add_dequantize<decltype(int8s), bf16>(ops, "dequantize int8 sym g128", int8s, g128);
  add_dequantize<decltype(int8s), float>(ops, "dequantize int8 sym g128", int8s, g128);
  add_dequantize<decltype(slime), bf16>(ops, "dequantize int4 sym g128", slime, g128);
  add_dequantize<decltype(dg), bf16>(ops, "dequantize fp8 e4m3 1x128", dg, p::deepseek_act);
  add_fake<decltype(slime), bf16>(ops, "fake quantize int4 g128", slime, g128);
  add_fake<decltype(slime), float>(ops, "fake quantize int4 g128", slime, g128);
  add_fake<decltype(slime), bf16>(ops, "fake quantize int4 g32", slime, g32);
  add_fake<decltype(slime), float>(ops, "fake quantize int4 g32", slime, g32);
  add_grad<float>(ops);
  add_grad<bf16>(ops);
  add_grad_dequant(ops);
  return ops;
}

// ---------------------------------------------------------------------------------------------------
// Copy baseline (same traffic: traffic / 2 bytes read and written), cached by size.

struct copy_result {
  std::size_t moved = 0;  // bytes read (= bytes written)
  sample memcpy_s, kernel_s;
  double gbps = 0.0;  // the better of the two, from medians, counting read + write
};
std::map<std::size_t, copy_result> copy_cache;

std::size_t copy_size_for(double traffic) {
  const std::size_t half = static_cast<std::size_t>(traffic / 2.0);
  return (half + 15) / 16 * 16;
}

struct result {
  std::string op, dtype, mode;
  std::int64_t rows = 0, cols = 0;
  double bytes = 0.0, median_us = 0.0, min_us = 0.0, gbps = 0.0, copy_gbps = 0.0, pct_copy = 0.0, pct_peak = 0.0;
  std::string target;
  int meets = -1;  // 1 meets, 0 misses, -1 no target
};
std::vector<result> results;

void print_row(const result& r) {
  char shp[32] = "-";
  if (r.rows > 0) std::snprintf(shp, sizeof shp, "%lldx%lld", static_cast<long long>(r.rows), static_cast<long long>(r.cols));
  char gb[16] = "-", pc[16] = "-", pk[16] = "-";
  if (r.gbps > 0) std::snprintf(gb, sizeof gb, "%.1f", r.gbps);
  if (r.pct_copy > 0) std::snprintf(pc, sizeof pc, "%.1f%%", r.pct_copy);
  if (r.pct_peak > 0) std::snprintf(pk, sizeof pk, "%.1f%%", r.pct_peak);
  std::printf("%-40s %-9s %-11s %-6s %10.2f %10.2f %9.1f %9s %8s %7s  %-10s %s\n", r.op.c_str(), r.dtype.c_str(), shp,
              r.mode.c_str(), r.median_us, r.min_us, r.bytes / 1e6, gb, pc, pk, r.target.c_str(),
              r.meets == 1 ? "meets" : r.meets == 0 ? "MISSES" : "");
  std::fflush(stdout);
}

void print_header() {
  std::printf("\n%-40s %-9s %-11s %-6s %10s %10s %9s %9s %8s %7s  %-10s %s\n", "operation", "dtype", "shape", "mode",
              "median_us", "min_us", "MB", "GB/s", "% copy", "% peak", "target", "");
}

const copy_result& copy_for(double traffic, int reps) {
  const std::size_t moved = copy_size_for(traffic);
  auto it = copy_cache.find(moved);
  if (it != copy_cache.end()) return it->second;
  if (moved > D.copy_bytes) fail("copy buffer too small (internal error)");
  copy_result c;
  c.moved = moved;
  c.memcpy_s = time_cold([&] { return cudaMemcpyAsync(D.copy_dst, D.copy_src, moved, cudaMemcpyDeviceToDevice, D.stream); }, reps);
  const std::size_t n16 = moved / 16;
  const unsigned blocks = static_cast<unsigned>(
      std::max<std::size_t>(1, std::min<std::size_t>((n16 + 255) / 256, std::size_t(D.prop.multiProcessorCount) * 32)));
  c.kernel_s = time_cold([&] {
    copy_kernel<<<blocks, 256, 0, D.stream>>>(reinterpret_cast<const ::uint4*>(D.copy_src), reinterpret_cast<::uint4*>(D.copy_dst), n16);
    return cudaGetLastError();
  }, reps);
  const double traffic_b = 2.0 * static_cast<double>(moved);
  c.gbps = std::max(traffic_b / c.memcpy_s.median_us, traffic_b / c.kernel_s.median_us) / 1e3;
  for (int k = 0; k < 2; ++k) {
    result r;
    r.op = k == 0 ? "copy: cudaMemcpyAsync D2D" : "copy: uint4 kernel";
    r.dtype = "bytes";
    r.mode = "cold";
    r.bytes = traffic_b;
    const sample& s = k == 0 ? c.memcpy_s : c.kernel_s;
    r.median_us = s.median_us;
    r.min_us = s.min_us;
    r.gbps = traffic_b / s.median_us / 1e3;
    r.copy_gbps = c.gbps;
    r.pct_copy = 100.0 * r.gbps / c.gbps;
    r.pct_peak = D.peak_gbps > 0 ? 100.0 * r.gbps / D.peak_gbps : 0.0;
    results.push_back(r);
    print_row(r);
  }
  return copy_cache.emplace(moved, c).first->second;
}

// ---------------------------------------------------------------------------------------------------
// Output files

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string device_line() {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s (sm_%d%d, %d SMs, L2 %d MiB, %.1f GiB, SM clock %d MHz, memory clock %d MHz x %d-bit bus: "
                "peak %.0f GB/s)",
                D.prop.name, D.prop.major, D.prop.minor, D.prop.multiProcessorCount, D.prop.l2CacheSize >> 20,
                static_cast<double>(D.prop.totalGlobalMem) / (1u << 30), D.sm_clock_khz / 1000, D.mem_clock_khz / 1000,
                D.prop.memoryBusWidth, D.peak_gbps);
  return buf;
}

std::string versions_line() {
  int drv = 0, rt = 0;
  QB_CHECK(cudaDriverGetVersion(&drv));
  QB_CHECK(cudaRuntimeGetVersion(&rt));
  char buf[128];
  std::snprintf(buf, sizeof buf, "driver API %d.%d, runtime %d.%d, built with nvcc %d.%d", drv / 1000, (drv % 1000) / 10,
                rt / 1000, (rt % 1000) / 10, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

void write_csv(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) fail("cannot write " + path);
  std::fprintf(f, "operation,dtype,rows,cols,mode,median_us,min_us,bytes,gbps,copy_gbps,pct_copy,pct_peak,target,meets\n");
  for (const auto& r : results)
    std::fprintf(f, "%s,%s,%lld,%lld,%s,%.3f,%.3f,%.0f,%.2f,%.2f,%.2f,%.2f,%s,%s\n", csv_field(r.op).c_str(),
                 csv_field(r.dtype).c_str(), static_cast<long long>(r.rows), static_cast<long long>(r.cols), r.mode.c_str(),
                 r.median_us, r.min_us, r.bytes, r.gbps, r.copy_gbps, r.pct_copy, r.pct_peak, csv_field(r.target).c_str(),
                 r.meets == 1 ? "yes" : r.meets == 0 ? "no" : "");
  if (std::fclose(f) != 0) fail("cannot write " + path);
}

void write_md(const std::string& path, const std::string& settings, const std::string& summary) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) fail("cannot write " + path);
  std::fprintf(f, "Date: %s. Device: %s. %s.\n\n%s\n\n", utc_now().c_str(), device_line().c_str(), versions_line().c_str(),
               settings.c_str());
  std::fprintf(f, "| operation | dtype | shape | mode | median us | min us | MB | GB/s | %% of copy | %% of peak | target | |\n");
  std::fprintf(f, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
  for (const auto& r : results) {
    std::string shp = "-";
    if (r.rows > 0) shp = std::to_string(r.rows) + "x" + std::to_string(r.cols);
    std::fprintf(f, "| %s | %s | %s | %s | %.2f | %.2f | %.1f | ", r.op.c_str(), r.dtype.c_str(), shp.c_str(), r.mode.c_str(),
                 r.median_us, r.min_us, r.bytes / 1e6);
    if (r.gbps > 0) std::fprintf(f, "%.1f | ", r.gbps); else std::fprintf(f, "- | ");
    if (r.pct_copy > 0) std::fprintf(f, "%.1f%% | ", r.pct_copy); else std::fprintf(f, "- | ");
    if (r.pct_peak > 0) std::fprintf(f, "%.1f%% | ", r.pct_peak); else std::fprintf(f, "- | ");
    std::fprintf(f, "%s | %s |\n", r.target.empty() ? "-" : r.target.c_str(), r.meets == 1 ? "meets" : r.meets == 0 ? "**misses**" : "");
  }
  std::fprintf(f, "\n%s\n", summary.c_str());
  if (std::fclose(f) != 0) fail("cannot write " + path);
}

// ---------------------------------------------------------------------------------------------------

void usage() {
  std::printf(
      "usage: qnum-bench-device [--quick] [--reps N] [--calls N] [--filter TEXT] [--csv FILE] [--md FILE]\n"
      "  --quick        4096x4096 and 1/256 x 4096 only, 10 repetitions (smoke run)\n"
      "  --reps N       timed runs per measurement (default 50; the median and min are reported)\n"
      "  --calls N      calls per eager batch / per CUDA graph for the small shapes (default 100)\n"
      "  --filter TEXT  only operations whose name contains TEXT (verification too)\n"
      "  --csv FILE, --md FILE   also write the results as CSV / a markdown table\n");
}

int parse_int(const char* s, const char* flag) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 1 || v > 100000) {
    std::fprintf(stderr, "qnum-bench-device: bad value for %s: %s\n", flag, s);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 0, calls = 100;
  std::string csv, md, filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--quick") quick = true;
    else if (a == "--reps" && has_value) reps = parse_int(argv[++i], "--reps");
    else if (a == "--calls" && has_value) calls = parse_int(argv[++i], "--calls");
    else if (a == "--filter" && has_value) filter = argv[++i];
    else if (a == "--csv" && has_value) csv = argv[++i];
    else if (a == "--md" && has_value) md = argv[++i];
    else if (a == "--help" || a == "-h") { usage(); return 0; }
    else {
      std::fprintf(stderr, "qnum-bench-device: unknown or incomplete argument: %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (reps == 0) reps = quick ? 10 : 50;

  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess || count == 0) {
    std::printf("qnum-bench-device: SKIP: no usable CUDA device (%s)\n", ce != cudaSuccess ? cudaGetErrorName(ce) : "0 devices");
    return 77;
  }

  // Device and buffers.
  QB_CHECK(cudaGetDevice(&D.device));
  QB_CHECK(cudaGetDeviceProperties(&D.prop, D.device));
  QB_CHECK(cudaDeviceGetAttribute(&D.sm_clock_khz, cudaDevAttrClockRate, D.device));
  QB_CHECK(cudaDeviceGetAttribute(&D.mem_clock_khz, cudaDevAttrMemoryClockRate, D.device));
  D.peak_gbps = 2.0 * D.mem_clock_khz * 1e3 * (D.prop.memoryBusWidth / 8.0) / 1e9;
  QB_CHECK(cudaStreamCreateWithFlags(&D.stream, cudaStreamNonBlocking));

  const std::vector<shape> large = quick ? std::vector<shape>{{4096, 4096}} : std::vector<shape>{{8192, 8192}, {32768, 4096}};
  const std::vector<shape> small = quick ? std::vector<shape>{{1, 4096}, {256, 4096}}
                                         : std::vector<shape>{{1, 4096}, {16, 4096}, {64, 4096}, {256, 4096}};
  const shape verify_shape{256, 4096};

  std::vector<op> ops;
  for (auto& o : make_ops())
    if (filter.empty() || o.name.find(filter) != std::string::npos) ops.push_back(o);
  if (ops.empty()) {
    std::fprintf(stderr, "qnum-bench-device: no operation matches --filter %s\n", filter.c_str());
    return 2;
  }

  D.cap = verify_shape.n();
  for (const auto& s : large) D.cap = std::max(D.cap, s.n());
  for (const auto& s : small) D.cap = std::max(D.cap, s.n());
  const std::size_t cap = static_cast<std::size_t>(D.cap);
  double max_traffic = 0.0;
  for (const auto& o : ops)
    for (const auto& s : large) max_traffic = std::max(max_traffic, o.bytes(s));
  D.copy_bytes = copy_size_for(max_traffic);
  D.flush_bytes = std::max<std::size_t>(2 * static_cast<std::size_t>(D.prop.l2CacheSize), std::size_t{32} << 20) / 16 * 16;

  D.in_f32 = dalloc<float>(cap);
  D.in_b16 = dalloc<std::uint16_t>(cap);
  D.codes = dalloc<std::uint8_t>(cap);
  D.scales = dalloc<std::uint8_t>(cap / 16 * 4 + 64);
  D.zeros = dalloc<std::int32_t>(cap / 16 + 16);
  D.packed = dalloc<std::uint32_t>(cap / 8 + 16);
  D.out_f32 = dalloc<float>(cap);
  D.out_b16 = dalloc<std::uint16_t>(cap);
  D.scratch3 = dalloc<std::uint32_t>(4);
  D.gcodes = dalloc<std::int8_t>(cap);
  D.res_f32 = dalloc<float>(cap);
  D.res_b16 = dalloc<std::uint16_t>(cap);
  D.states = dalloc<qnum::dynamic_scale_state>(1);
  D.ds_scratch = dalloc<unsigned char>(qnum::gpu::dynamic_scale_scratch_bytes(1));
  D.copy_src = dalloc<unsigned char>(D.copy_bytes);
  D.copy_dst = dalloc<unsigned char>(D.copy_bytes);
  D.flush = dalloc<unsigned char>(D.flush_bytes);
  D.sink = dalloc<unsigned>(1);
  poison(D.flush, 0x5A, D.flush_bytes);
  poison(D.sink, 0, sizeof(unsigned));
  poison(D.copy_src, 0x3C, D.copy_bytes);
  fill_kernel<<<1024, 256, 0, D.stream>>>(D.in_f32, D.in_b16, D.cap, 20261121u);
  QB_CHECK(cudaGetLastError());
  sync();

  std::printf("qnum-bench-device  %s\n", utc_now().c_str());
  std::printf("device: %s\n%s\n", device_line().c_str(), versions_line().c_str());
  char settings[1024];
  std::snprintf(settings, sizeof settings,
                "Large shapes: cold L2 (a %zu MiB read before every run), CUDA events around one call, median and min of "
                "%d runs; GB/s counts every byte read and written once (the per-tensor two-pass path reads its input "
                "twice); %% of copy = against the better of cudaMemcpyAsync D2D and a uint4 copy kernel moving the same "
                "traffic in the same run. Small shapes: warm L2, microseconds per call over %d calls: eager (back-to-back "
                "launches from an idle stream) and graph (the calls captured in one CUDA graph, replays queued ahead), "
                "median and min of %d batches. Targets: large shapes >= 90%% of the measured copy; small shapes "
                "<= 3 us per call under a graph. Benchmarks, not tests: a miss does not fail the run.",
                D.flush_bytes >> 20, reps, calls, reps);
  std::printf("%s\n", settings);

  // 1. Verification, bit for bit against the host API.
  int bad = 0;
  for (const auto& o : ops) {
    if (o.prepare) o.prepare(verify_shape);
    const std::string why = o.verify(verify_shape);
    if (!why.empty()) {
      std::fprintf(stderr, "VERIFY FAILED: %s [%s] on %lldx%lld: %s\n", o.name.c_str(), o.dtype.c_str(),
                   static_cast<long long>(verify_shape.rows), static_cast<long long>(verify_shape.cols), why.c_str());
      ++bad;
    }
  }
  if (bad > 0) {
    std::fprintf(stderr, "qnum-bench-device: %d operation(s) differ from the host API: not timing anything\n", bad);
    return 1;
  }
  std::printf("verified: %zu operations equal the host API bit for bit on %lldx%lld\n", ops.size(),
              static_cast<long long>(verify_shape.rows), static_cast<long long>(verify_shape.cols));

  // 2. Large shapes, cold L2, against the same-run copy.
  int large_n = 0, large_ok = 0, small_n = 0, small_ok = 0;
  print_header();
  for (const auto& sh : large) {
    for (const auto& o : ops) {
      if (o.prepare) o.prepare(sh);
      const sample s = time_cold([&] { return o.run(sh); }, reps);
      result r;
      r.op = o.name;
      r.dtype = o.dtype;
      r.mode = "cold";
      r.rows = sh.rows;
      r.cols = sh.cols;
      r.bytes = o.bytes(sh);
      r.median_us = s.median_us;
      r.min_us = s.min_us;
      r.gbps = r.bytes / s.median_us / 1e3;
      const copy_result& c = copy_for(r.bytes, reps);
      r.copy_gbps = c.gbps;
      r.pct_copy = 100.0 * r.gbps / c.gbps;
      r.pct_peak = D.peak_gbps > 0 ? 100.0 * r.gbps / D.peak_gbps : 0.0;
      r.target = ">=90% copy";
      r.meets = r.pct_copy >= 90.0 ? 1 : 0;
      ++large_n;
      large_ok += r.meets;
      results.push_back(r);
      print_row(r);
    }
  }

  // 3. Small shapes: per-call latency, eager and under a CUDA graph.
  print_header();
  for (const auto& sh : small) {
    for (const auto& o : ops) {
      for (int mode = 0; mode < 2; ++mode) {
        if (o.prepare) o.prepare(sh);
        const launch_fn fn = [&] { return o.run(sh); };
        const sample s = mode == 0 ? time_eager(fn, reps, calls) : time_graph(fn, reps, calls);
        result r;
        r.op = o.name;
        r.dtype = o.dtype;
        r.mode = mode == 0 ? "eager" : "graph";
        r.rows = sh.rows;
        r.cols = sh.cols;
        r.bytes = o.bytes(sh);
        r.median_us = s.median_us;
        r.min_us = s.min_us;
        r.gbps = r.bytes / s.median_us / 1e3;
        if (mode == 1) {
          r.target = "<=3 us";
          r.meets = s.median_us <= 3.0 ? 1 : 0;
          ++small_n;
          small_ok += r.meets;
        }
        results.push_back(r);
        print_row(r);
      }
    }
  }

  char summary[512];
  std::snprintf(summary, sizeof summary,
                "Targets: %d of %d large-shape rows at >= 90%% of the same-run copy; %d of %d small-shape rows at <= 3 us "
                "per call under a CUDA graph.",
                large_ok, large_n, small_ok, small_n);
  std::printf("\n%s\n", summary);
  if (!csv.empty()) write_csv(csv);
  if (!md.empty()) write_md(md, settings, summary);

  for (cudaEvent_t e : D.ev) QB_CHECK(cudaEventDestroy(e));
  for (void* p : D.allocations) QB_CHECK(cudaFree(p));
  QB_CHECK(cudaStreamDestroy(D.stream));
  return 0;
}
