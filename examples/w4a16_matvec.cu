// examples/w4a16_matvec.cu: a W4A16 matrix-vector product inside a user's CUDA kernel. The kernel reads
// compressed-tensors weight_packed words (8 offset-binary INT4 codes per int32), dequantizes them with
// qnum's QNUM_HD dequantize_int4_word and the group's fp32 scale, and multiplies by bf16 activations.
// A host reference (qnum::quantize + qnum::dequantize, then the same fp32 dot product in the same order)
// must agree bit for bit. Exits 77 (meson's SKIP) where no GPU is present.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "qnum/qnum.hpp"

constexpr int n_out = 256, k_in = 512, group = 32;  // W [n_out, k_in], slime INT4 groups 1x32
constexpr int words_per_row = k_in / 8, groups_per_row = k_in / group;
static_assert(k_in % group == 0 && group % 8 == 0, "a packed word never straddles two groups");

// y[n] = sum_k dequant(W[n, k]) * x[k], one thread per output row, k ascending, every product and sum
// rounded to fp32 separately (qnum::mul_rn/add_rn: no FMA), so the host can reproduce it exactly.
__global__ void w4a16_matvec(const std::uint32_t* weight_packed, const float* weight_scale,
                             const std::uint16_t* x_bf16, float* y) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= n_out) return;
  float acc = 0.0f;
  for (int j = 0; j < words_per_row; ++j) {
    float w[8];
    // Codes are offset-binary (q + 8): zero = 8 recovers q; w[i] = float(q) * scale (one fp32 multiply).
    qnum::dequantize_int4_word(weight_packed[n * words_per_row + j], weight_scale[n * groups_per_row + j * 8 / group], 8, w);
    for (int i = 0; i < 8; ++i)
      acc = qnum::add_rn(acc, qnum::mul_rn(w[i], qnum::from_bf16(x_bf16[j * 8 + i])));
  }
  y[n] = acc;
}

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    const cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                               \
      std::printf("%s failed: %s\n", #call, cudaGetErrorString(e_));                       \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping (exit 77)\n");
    return 77;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(n_out * k_in);
  for (auto& v : w) v = normal(rng);
  std::vector<std::uint16_t> x(k_in);
  for (auto& v : x) v = qnum::to_bf16(normal(rng) * 20.0f);

  // Host: slime INT4 fake-quant preset (s = max(amax/7, 1e-5), q in [-7, 7]), fp32 scales, then pack.
  constexpr auto scheme = qnum::presets::slime_int4_qat;
  std::vector<std::uint8_t> codes(n_out * k_in);
  std::vector<float> scales(n_out * groups_per_row);
  const qnum::scale_view sv = qnum::scales_of(scales.data(), n_out, groups_per_row);
  if (qnum::quantize(scheme, qnum::view<const float>(w.data(), n_out, k_in), qnum::group_size(group),
                     qnum::view(codes.data(), n_out, k_in), sv) != qnum::status::ok) return 1;
  std::vector<std::uint32_t> packed(n_out * words_per_row);
  if (qnum::ct::pack_weight(qnum::view(codes.data(), n_out, k_in), 4, qnum::view(packed.data(), n_out, words_per_row)) != qnum::status::ok)
    return 1;

  // Host reference: qnum::dequantize, then the kernel's dot product order.
  std::vector<float> wdq(n_out * k_in), ref(n_out);
  if (qnum::dequantize(scheme, qnum::view<const std::uint8_t>(codes.data(), n_out, k_in), qnum::group_size(group), sv,
                       {}, qnum::view(wdq.data(), n_out, k_in)) != qnum::status::ok) return 1;
  for (int n = 0; n < n_out; ++n) {
    float acc = 0.0f;
    for (int k = 0; k < k_in; ++k)
      acc = qnum::add_rn(acc, qnum::mul_rn(wdq[n * k_in + k], qnum::from_bf16(x[k])));
    ref[n] = acc;
  }

  std::uint32_t* d_packed = nullptr;
  float *d_scales = nullptr, *d_y = nullptr;
  std::uint16_t* d_x = nullptr;
  CHECK_CUDA(cudaMalloc(&d_packed, packed.size() * sizeof(std::uint32_t)));
  CHECK_CUDA(cudaMalloc(&d_scales, scales.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_x, x.size() * sizeof(std::uint16_t)));
  CHECK_CUDA(cudaMalloc(&d_y, n_out * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_packed, packed.data(), packed.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_scales, scales.data(), scales.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), x.size() * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
  w4a16_matvec<<<(n_out + 127) / 128, 128>>>(d_packed, d_scales, d_x, d_y);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> y(n_out);
  CHECK_CUDA(cudaMemcpy(y.data(), d_y, n_out * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(d_packed);
  cudaFree(d_scales);
  cudaFree(d_x);
  cudaFree(d_y);

  int bad = 0;
  for (int n = 0; n < n_out; ++n) {
    std::uint32_t a, b;
    std::memcpy(&a, &y[n], 4);
    std::memcpy(&b, &ref[n], 4);
    if (a != b && bad++ < 5) std::printf("row %d: device %.9g host %.9g\n", n, y[n], ref[n]);
  }
  std::printf("W4A16 matvec [%d x %d] INT4 g%d, compressed-tensors weight_packed: %d of %d outputs differ from the host "
              "reference (y[0] = %.6f)\n", n_out, k_in, group, bad, n_out, y[0]);
  return bad == 0 ? 0 : 1;
}
