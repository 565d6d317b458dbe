// apps/qnum-convert/src/convert_gpu.cu: qnum-convert's GPU path (see convert_gpu.hpp). One tensor at a time: copy the
// source to the device, run the format's kernels, copy every output back. Same bytes as the CPU path:
//   w4a16       launch_w4a16_pack (ct_w4a16_sym_bf16 / ct_w4a16_asym): weight_packed, weight_scale, zero points
//   fp8-block   launch_quantize(deepgemm_fp8, deepseek_weight)
//   fp8-channel launch_quantize(ct_fp8, per_row())
//   fp8-tensor  launch_quantize(ct_fp8, per_tensor()) with the two-kernel per-tensor path
//   nvfp4/mxfp4 launch_tensor_stats (NVFP4 global scale, computed on the host as on the CPU path), then
//               ct_fp4_kernel: one thread per group, presets::ct_fp4_params and ct_fp4_zero_sign around quantize_value.
#include <cuda_runtime.h>

#include <cstring>

#include "convert_gpu.hpp"
#include "qnum/gpu/quantize.cuh"
#include "qnum/layout/fp8_block.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/presets.hpp"

namespace qconv {
namespace {

// One device allocation, freed on scope exit.
struct device_buffer {
  void* p = nullptr;
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() {
    if (p != nullptr) cudaFree(p);
  }
  template <class T>
  T* as() const { return static_cast<T*>(p); }
};

bool ok(cudaError_t e, const char* what, std::string& err) {
  if (e == cudaSuccess) return true;
  err = std::string("GPU: ") + what + ": " + cudaGetErrorString(e);
  return false;
}
// A launcher's status: its CUDA error's text when it carries one, else the status's name.
bool ok(qnum::status s, const char* what, std::string& err) {
  if (s == qnum::status::ok) return true;
  err = std::string("GPU: ") + what + ": " +
        (qnum::is_cuda_error(s) ? cudaGetErrorString(qnum::gpu::cuda_error(s)) : qnum::to_string(s));
  return false;
}

// compressed-tensors NVFP4 / MXFP4: one thread per group of g <= 32 elements (k % g == 0, so group i starts at
// i * g). The CPU path's loop in qnum_convert.cpp: row_stats == accumulate over the group, quantize_row ==
// quantize_value per element, then the same ct_fp4_zero_sign and store. The scheme comes by value: presets are host constexpr.
template <class T>
__global__ void ct_fp4_kernel(qnum::scheme<qnum::fp4_e2m1> s, const T* w, qnum::dtype tt, std::int64_t total_groups,
                              int g, bool nv, bool bf16_work, float global, std::uint8_t* packed, std::uint8_t* scales) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total_groups;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const T* x = w + i * g;
    qnum::group_stats st;
    for (int e = 0; e < g; ++e) qnum::accumulate(st, qnum::detail::load_elem(x + e, tt));
    const qnum::group_params gp = qnum::presets::ct_fp4_params(nv, st.amax, global, bf16_work);
    std::uint8_t c[32];
    for (int e = 0; e < g; ++e)
      c[e] = static_cast<std::uint8_t>(qnum::quantize_value(s, gp, qnum::detail::load_elem(x + e, tt), qnum::rne));
    qnum::presets::ct_fp4_zero_sign(gp, x, g, c, tt);
    scales[i] = static_cast<std::uint8_t>(gp.scale_code);
    for (int e = 0; e < g; e += 2) packed[(i * g + e) / 2] = qnum::pack_nibble_pair(c[e], c[e + 1], qnum::nibble_order::low_first);
  }
}

template <class T>
bool quantize_typed(const gpu_tensor& t, qnum::dtype tt, std::vector<std::vector<std::uint8_t>>& bufs,
                    std::vector<std::int32_t>& zeros, std::string& err) {
  namespace p = qnum::presets;
  const std::int64_t n = t.n, k = t.k;
  if (n == 0 || k == 0) {  // the caller keeps empty tensors on the CPU path (nothing to compute)
    err = "GPU: empty tensor";
    return false;
  }
  device_buffer src;
  const std::size_t src_bytes = static_cast<std::size_t>(n * k) * sizeof(T);
  if (!ok(cudaMalloc(&src.p, src_bytes), "cudaMalloc (source tensor)", err)) return false;
  if (!ok(cudaMemcpy(src.p, t.data, src_bytes, cudaMemcpyHostToDevice), "copy to device", err)) return false;
  const auto in = qnum::view(src.as<const T>(), n, k, k, tt);
  // Every format's first two outputs in plan order (codes or packed words, scales) come from kernels; the rest
  // (NVFP4's global scale, W4A16's zero points and weight_shape) are written on the host.
  const std::size_t device_outs = 2;
  std::vector<device_buffer> out(device_outs);
  for (std::size_t i = 0; i < device_outs; ++i)
    if (!ok(cudaMalloc(&out[i].p, bufs[i].size()), "cudaMalloc (output)", err)) return false;
  device_buffer aux;  // W4A16 asym zero points, or the 3 x uint32 tensor statistics
  qnum::status e = qnum::status::ok;
  switch (t.format) {
    case out_format::w4a16: {
      const std::int64_t groups = k / t.group;
      const qnum::scheme<qnum::qint4> s = t.asym ? (t.bf16_work ? p::ct_w4a16_asym_bf16_work : p::ct_w4a16_asym)
                                                : (t.bf16_work ? p::ct_w4a16_sym_bf16_work : p::ct_w4a16_sym_bf16);
      qnum::matrix_view<std::int32_t> zv;
      if (t.asym) {
        zeros.assign(static_cast<std::size_t>(n * groups), 0);
        if (!ok(cudaMalloc(&aux.p, zeros.size() * sizeof(std::int32_t)), "cudaMalloc (zero points)", err)) return false;
        zv = qnum::view(aux.as<std::int32_t>(), n, groups);
      }
      e = qnum::gpu::launch_w4a16_pack(s, in, t.group, qnum::view(out[0].as<std::uint32_t>(), n, qnum::packed_words(k, 4)),
                                        qnum::scale_view{out[1].p, n, groups, groups, qnum::dtype_bytes(s.store)}, zv);
      break;
    }
    case out_format::fp8_channel:
      if (t.bf16_work)
        e = qnum::gpu::launch_quantize(p::ct_fp8_bf16_work, in, qnum::per_row(), qnum::view(out[0].as<std::uint8_t>(), n, k),
                                        qnum::scales_of(out[1].as<std::uint16_t>(), n, 1));
      else
        e = qnum::gpu::launch_quantize(p::ct_fp8, in, qnum::per_row(), qnum::view(out[0].as<std::uint8_t>(), n, k),
                                        qnum::scales_of(out[1].as<float>(), n, 1));
      break;
    case out_format::fp8_tensor:
      if (!ok(cudaMalloc(&aux.p, 3 * sizeof(std::uint32_t)), "cudaMalloc (statistics)", err)) return false;
      if (t.bf16_work)
        e = qnum::gpu::launch_quantize(p::ct_fp8_bf16_work, in, qnum::per_tensor(), qnum::view(out[0].as<std::uint8_t>(), n, k),
                                        qnum::scales_of(out[1].as<std::uint16_t>(), 1, 1), {}, qnum::nearest_even(), 0.0f, nullptr,
                                        aux.as<std::uint32_t>());
      else
        e = qnum::gpu::launch_quantize(p::ct_fp8, in, qnum::per_tensor(), qnum::view(out[0].as<std::uint8_t>(), n, k),
                                        qnum::scales_of(out[1].as<float>(), 1, 1), {}, qnum::nearest_even(), 0.0f, nullptr,
                                        aux.as<std::uint32_t>());
      break;
    case out_format::fp8_block: {
      qnum::fp8_block::shape s;
      if (qnum::fp8_block::layout(n, k, &s) != qnum::status::ok) {
        err = "GPU: bad fp8 block shape";
        return false;
      }
      e = qnum::gpu::launch_quantize(p::deepgemm_fp8, in, p::deepseek_weight, qnum::view(out[0].as<std::uint8_t>(), n, k),
                                      qnum::scales_of(out[1].as<float>(), s.scale_rows, s.scale_cols));
      break;
    }
    case out_format::nvfp4:
    case out_format::mxfp4: {
      const bool nv = t.format == out_format::nvfp4;
      const int g = p::ct_fp4_group_size(nv);
      float global = t.global;  // a fused group's, computed on the host from the group's amax
      if (nv && !t.has_global) {
        if (!ok(cudaMalloc(&aux.p, 3 * sizeof(std::uint32_t)), "cudaMalloc (statistics)", err)) return false;
        if (!ok(qnum::gpu::launch_tensor_stats(in, aux.as<std::uint32_t>()), "tensor statistics", err)) return false;
        std::uint32_t stats[3];
        if (!ok(cudaMemcpy(stats, aux.p, sizeof stats, cudaMemcpyDeviceToHost), "copy statistics", err)) return false;
        global = p::ct_nvfp4_global_scale(qnum::detail::bits_to_float(stats[0]), t.bf16_work);
      }
      if (nv) std::memcpy(bufs[2].data(), &global, 4);
      const std::int64_t total = n * (k / g);
      ct_fp4_kernel<T><<<qnum::gpu::detail::grid_for(total, 256), 256>>>(p::ct_fp4, src.as<const T>(), tt, total, g, nv, t.bf16_work, global,
                                                                           out[0].as<std::uint8_t>(), out[1].as<std::uint8_t>());
      e = qnum::gpu::from_cuda(cudaGetLastError());
      break;
    }
  }
  if (!ok(e, "kernel launch", err) || !ok(cudaDeviceSynchronize(), "kernel", err)) return false;
  for (std::size_t i = 0; i < device_outs; ++i)
    if (!ok(cudaMemcpy(bufs[i].data(), out[i].p, bufs[i].size(), cudaMemcpyDeviceToHost), "copy to host", err)) return false;
  if (t.format == out_format::w4a16 && t.asym &&
      !ok(cudaMemcpy(zeros.data(), aux.p, zeros.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost), "copy zero points", err))
    return false;
  return true;
}

}  // namespace

int gpu_devices(std::string& why, std::string& name) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count <= 0) {
    why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) name = prop.name;
  return count;
}

bool gpu_quantize(const gpu_tensor& t, std::vector<std::vector<std::uint8_t>>& bufs, std::vector<std::int32_t>& zeros,
                  std::string& err) {
  if (t.dtype == "F32") return quantize_typed<float>(t, qnum::dtype::fp32, bufs, zeros, err);
  if (t.dtype == "BF16") return quantize_typed<std::uint16_t>(t, qnum::dtype::bf16, bufs, zeros, err);
  if (t.dtype == "F16") return quantize_typed<std::uint16_t>(t, qnum::dtype::fp16, bufs, zeros, err);
  err = "GPU: unsupported dtype " + t.dtype;
  return false;
}

}  // namespace qconv
