// examples/qat_loop.cpp: the closed INT4 QAT loop of slime / Kimi-K2 (seed 000, sections 1 and 2.2) on a
// small MLP: train with INT4 fake quantization of the weights (slime preset, groups 1x32) and the identity
// STE, export real INT4 (compressed-tensors weight_packed + fp32 weight_scale), run W4A16 inference (unpack,
// dequantize, matmul), and print the train/inference mismatch for the four cases of the seed's ablation.
//
// The model is y = W2 relu(W1 x), x in R^64, hidden 64, out 8, regressing a random teacher MLP. Master
// weights are fp32. Activations are fp32 in both the training forward and inference (inputs are
// bf16-representable), so the only train/inference difference is what the weights become.
// Exit code 0 iff QAT + INT4 inference reproduces the training forward bit for bit.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "qnum/qnum.hpp"

namespace {

constexpr int in_dim = 64, hid = 64, out_dim = 8, group = 32, batch = 32, steps = 1500, test_n = 512;
constexpr auto scheme = qnum::presets::slime_int4_qat;  // s = max(amax/7, 1e-5), q = clamp(round(x/s), -7, 7)
using mat = std::vector<float>;

struct mlp {
  mat w1 = mat(hid * in_dim), w2 = mat(out_dim * hid);
};

// Forward in a fixed order, every product and sum rounded separately (no FMA), so two calls with the
// same weights give the same bits whatever the compiler does. h (optional) receives the pre-activations.
void forward(const mlp& m, const float* x, float* y, float* pre = nullptr) {
  using qnum::add_rn;
  using qnum::mul_rn;
  float h[hid];
  for (int j = 0; j < hid; ++j) {
    float a = 0.0f;
    for (int k = 0; k < in_dim; ++k) a = add_rn(a, mul_rn(m.w1[j * in_dim + k], x[k]));
    if (pre) pre[j] = a;
    h[j] = a > 0.0f ? a : 0.0f;
  }
  for (int o = 0; o < out_dim; ++o) {
    float a = 0.0f;
    for (int j = 0; j < hid; ++j) a = add_rn(a, mul_rn(m.w2[o * hid + j], h[j]));
    y[o] = a;
  }
}

// Fake-quantized copy of a weight matrix [rows, cols]: INT4, groups 1x32 along the input dimension.
mat fake_quant(const mat& w, int rows, int cols) {
  mat out(w.size());
  qnum::fake_quantize(scheme, qnum::view(w.data(), rows, cols), qnum::group_size(group), qnum::view(out.data(), rows, cols));
  return out;
}
mlp fake_quant(const mlp& m) { return {fake_quant(m.w1, hid, in_dim), fake_quant(m.w2, out_dim, hid)}; }

// A checkpoint tensor as an inference engine loads it (compressed-tensors pack-quantized, symmetric).
struct int4_tensor {
  int rows = 0, cols = 0;
  std::vector<std::uint32_t> weight_packed;  // [rows, cols/8], offset-binary nibbles
  std::vector<float> weight_scale;           // [rows, cols/32]
};
int4_tensor export_int4(const mat& w, int rows, int cols) {
  int4_tensor t{rows, cols, std::vector<std::uint32_t>(rows * cols / 8), std::vector<float>(rows * cols / group)};
  std::vector<std::uint8_t> codes(w.size());
  qnum::quantize(scheme, qnum::view(w.data(), rows, cols), qnum::group_size(group), qnum::view(codes.data(), rows, cols),
                 qnum::scales_of(t.weight_scale.data(), rows, cols / group));
  qnum::ct::pack_weight(qnum::view(codes.data(), rows, cols), 4, qnum::view(t.weight_packed.data(), rows, cols / 8));
  return t;
}
// What a W4A16 kernel does with it: unpack 8 codes per word and apply the group scale (w = q * s).
mat load_int4(const int4_tensor& t) {
  mat w(t.rows * t.cols);
  for (int r = 0; r < t.rows; ++r)
    for (int j = 0; j < t.cols / 8; ++j) {
      float v[8];
      qnum::dequantize_int4_word(t.weight_packed[r * t.cols / 8 + j], t.weight_scale[r * t.cols / group + j * 8 / group], 8, v);
      for (int i = 0; i < 8; ++i) w[r * t.cols + j * 8 + i] = v[i];
    }
  return w;
}
mlp int4_inference_weights(const mlp& m) {
  return {load_int4(export_int4(m.w1, hid, in_dim)), load_int4(export_int4(m.w2, out_dim, hid))};
}
mlp bf16_inference_weights(const mlp& m) {
  mlp r = m;
  for (auto* w : {&r.w1, &r.w2})
    for (auto& v : *w) v = qnum::from_bf16(qnum::to_bf16(v));
  return r;
}

float bf16_round(float v) { return qnum::from_bf16(qnum::to_bf16(v)); }

// Train with SGD on MSE. qat: the forward uses fake_quant(W), the backward passes the gradient of the
// fake-quantized weight straight to the master weight (qnum::ste_identity, slime's STE).
mlp train(const mlp& teacher, const mlp& init, bool qat, std::uint32_t seed) {
  mlp m = init;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float lr = 0.1f;
  for (int step = 0; step < steps; ++step) {
    const mlp eff = qat ? fake_quant(m) : m;
    mat g1(m.w1.size(), 0.0f), g2(m.w2.size(), 0.0f);
    for (int b = 0; b < batch; ++b) {
      float x[in_dim], t[out_dim], y[out_dim], pre[hid];
      for (auto& v : x) v = bf16_round(normal(rng));
      forward(teacher, x, t);
      forward(eff, x, y, pre);
      float dh[hid] = {};
      for (int o = 0; o < out_dim; ++o) {
        const float dy = 2.0f * (y[o] - t[o]) / (batch * out_dim);
        for (int j = 0; j < hid; ++j) {
          g2[o * hid + j] += dy * (pre[j] > 0.0f ? pre[j] : 0.0f);
          dh[j] += eff.w2[o * hid + j] * dy;
        }
      }
      for (int j = 0; j < hid; ++j)
        if (pre[j] > 0.0f)
          for (int k = 0; k < in_dim; ++k) g1[j * in_dim + k] += dh[j] * x[k];
    }
    for (std::size_t i = 0; i < m.w1.size(); ++i) m.w1[i] -= lr * qnum::ste_identity(g1[i]);
    for (std::size_t i = 0; i < m.w2.size(); ++i) m.w2[i] -= lr * qnum::ste_identity(g2[i]);
  }
  return m;
}

struct result {
  double mismatch;   // mean |y_train - y_inference|
  double loss;       // inference MSE against the teacher
  bool bit_exact;    // every output identical bit for bit
};
result compare(const mlp& train_fwd, const mlp& infer, const mlp& teacher, const std::vector<float>& xs) {
  result r{0.0, 0.0, true};
  for (int i = 0; i < test_n; ++i) {
    float a[out_dim], b[out_dim], t[out_dim];
    forward(train_fwd, &xs[i * in_dim], a);
    forward(infer, &xs[i * in_dim], b);
    forward(teacher, &xs[i * in_dim], t);
    r.bit_exact &= std::memcmp(a, b, sizeof a) == 0;
    for (int o = 0; o < out_dim; ++o) {
      r.mismatch += std::fabs(double(a[o]) - b[o]);
      r.loss += (double(b[o]) - t[o]) * (double(b[o]) - t[o]);
    }
  }
  r.mismatch /= test_n * out_dim;
  r.loss /= test_n * out_dim;
  return r;
}

}  // namespace

int main() {
  std::mt19937 rng(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  mlp teacher, init;
  for (auto& v : teacher.w1) v = normal(rng) * 0.125f;
  for (auto& v : teacher.w2) v = normal(rng) * 0.125f;
  for (auto& v : init.w1) v = normal(rng) * 0.05f;
  for (auto& v : init.w2) v = normal(rng) * 0.05f;
  std::vector<float> xs(test_n * in_dim);
  for (auto& v : xs) v = bf16_round(normal(rng));

  const mlp qat = train(teacher, init, true, 1), plain = train(teacher, init, false, 1);
  const mlp qat_train_fwd = fake_quant(qat);  // what the QAT trainer's forward computes with
  const result cases[4] = {
      compare(qat_train_fwd, int4_inference_weights(qat), teacher, xs),
      compare(qat_train_fwd, bf16_inference_weights(qat), teacher, xs),
      compare(plain, int4_inference_weights(plain), teacher, xs),
      compare(plain, bf16_inference_weights(plain), teacher, xs),
  };
  const char* names[4] = {"QAT INT4 train + INT4 (W4A16) inference", "QAT INT4 train + BF16 inference",
                          "no QAT (fp32 train) + INT4 inference (PTQ)", "no QAT (fp32 train) + BF16 inference"};
  const char* why[4] = {
      "same quant(W) on both sides: fake_quant == dequant(unpack(pack(quant)))",
      "the weights adapted to INT4 noise; removing it at inference is itself a perturbation",
      "the model never saw quantization noise; real INT4 injects it only at inference",
      "baseline: only the bf16 rounding of the fp32 master weights differs"};
  std::printf("2-layer MLP %d-%d-%d, %d SGD steps, INT4 slime preset g%d, identity STE; %d test inputs\n", in_dim, hid,
              out_dim, steps, group, test_n);
  std::printf("%-44s %14s %12s %10s\n", "case", "mismatch", "inf. MSE", "bit-exact");
  for (int i = 0; i < 4; ++i)
    std::printf("%-44s %14.6e %12.6f %10s   %s\n", names[i], cases[i].mismatch, cases[i].loss,
                cases[i].bit_exact ? "yes" : "no", why[i]);
  const bool ok = cases[0].bit_exact && cases[0].mismatch == 0.0 && !cases[1].bit_exact && !cases[2].bit_exact &&
                  cases[1].mismatch > cases[3].mismatch && cases[2].mismatch > cases[3].mismatch;
  std::printf("%s\n", ok ? "QAT + INT4: zero train/inference mismatch; both asymmetric cases mismatch more than the BF16 baseline"
                         : "FAILED: expected zero mismatch only for QAT + INT4");
  return ok ? 0 : 1;
}
