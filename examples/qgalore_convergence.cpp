// examples/qgalore_convergence.cpp: train a small MLP regressor with fp32 gradients and states, INT8
// gradients (EMA-clipped dynamic scales) without and with residual error feedback, and INT8 Adam
// states; print memory, final loss and NaN-free steps; then a long run with injected gradient spikes.
//
// usage: qnum-qgalore-convergence [steps=3000] [spike_steps=5000]
// exit 0 iff the error-feedback variant ends within 2% of the fp32 loss and the spike run never
// produced a NaN or Inf (in loss, gradients fed to the optimizer, parameters or scales).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "qnum/qnum.hpp"

namespace {

constexpr int in_dim = 16, hid = 32, batch = 32, eval_n = 2048;

// Parameters of a 16-32-1 tanh MLP, laid out as tensors W1 [hid][in], b1 [hid], W2 [hid], b2 [1].
// Tensor k is rows[k] x cols[k] elements at offset off[k] of the flat parameter vector.
struct layout {
  std::size_t off[4], len[4], n;
  std::int64_t rows[4], cols[4];
  layout() {
    const std::int64_t r[4] = {hid, 1, 1, 1}, c[4] = {in_dim, hid, hid, 1};
    n = 0;
    for (int k = 0; k < 4; ++k) {
      off[k] = n;
      rows[k] = r[k];
      cols[k] = c[k];
      len[k] = static_cast<std::size_t>(r[k] * c[k]);
      n += len[k];
    }
  }
};
const layout L;

// Loss (mean squared error) of params on (x, y); if grad is non-null, accumulate d loss / d params.
double mse(const std::vector<float>& p, const float* x, const float* y, int rows, std::vector<float>* grad) {
  const float* W1 = p.data() + L.off[0];
  const float* b1 = p.data() + L.off[1];
  const float* W2 = p.data() + L.off[2];
  const float b2 = p[L.off[3]];
  if (grad) grad->assign(L.n, 0.0f);
  double loss = 0.0;
  float h[hid];
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + std::size_t(r) * in_dim;
    float out = b2;
    for (int j = 0; j < hid; ++j) {
      float a = b1[j];
      for (int i = 0; i < in_dim; ++i) a += W1[j * in_dim + i] * xr[i];
      h[j] = std::tanh(a);
      out += W2[j] * h[j];
    }
    const float e = out - y[r];
    loss += double(e) * e;
    if (grad) {
      const float d = 2.0f * e / float(rows);
      float* g = grad->data();
      g[L.off[3]] += d;
      for (int j = 0; j < hid; ++j) {
        g[L.off[2] + j] += d * h[j];
        const float dz = d * W2[j] * (1.0f - h[j] * h[j]);
        g[L.off[1] + j] += dz;
        for (int i = 0; i < in_dim; ++i) g[L.off[0] + j * in_dim + i] += dz * xr[i];
      }
    }
  }
  return loss / rows;
}

struct data_set {
  std::vector<float> x, y;
};
data_set make_data(std::mt19937& rng, int rows, const std::vector<float>& teacher) {
  std::normal_distribution<float> nd;
  data_set d;
  d.x.resize(std::size_t(rows) * in_dim);
  d.y.resize(rows);
  for (auto& v : d.x) v = nd(rng);
  for (int r = 0; r < rows; ++r) {
    // the teacher's output is sqrt of its loss against y = 0, with the sign found by a probe
    const float* xr = d.x.data() + std::size_t(r) * in_dim;
    const float zero = 0.0f, one = 1.0f;
    const double l0 = mse(teacher, xr, &zero, 1, nullptr), l1 = mse(teacher, xr, &one, 1, nullptr);
    const double out = (l0 + 1.0 - l1) / 2.0;  // (o^2 + 1 - (o - 1)^2) / 2 = o
    d.y[r] = float(out) + 0.1f * nd(rng);
  }
  return d;
}

enum class mode { fp32, int8_grad, int8_grad_feedback, int8_grad_feedback_bf16, int8_all };

struct result {
  double final_loss;
  long clean_steps;
  bool any_nonfinite;
  long skipped;
  std::size_t grad_bytes, state_bytes;
};

bool finite_all(const std::vector<float>& v) {
  for (float f : v)
    if (!std::isfinite(f)) return false;
  return true;
}

result train(mode md, long steps, bool spikes, const data_set& train_set, const data_set& eval_set,
             const std::vector<float>& init) {
  std::vector<float> p = init, g(L.n), gq(L.n), m(L.n, 0.0f), v(L.n, 0.0f);
  const bool quant = md != mode::fp32;
  const bool feedback = md == mode::int8_grad_feedback || md == mode::int8_grad_feedback_bf16 || md == mode::int8_all;
  const bool bf16_res = md == mode::int8_grad_feedback_bf16;
  std::vector<std::int8_t> codes(L.n);
  std::vector<float> res32(L.n, 0.0f);
  std::vector<std::uint16_t> res16(L.n, 0);
  qnum::dynamic_scale_state st[4];
  qnum::dynamic_scale_config dcfg;  // defaults: alpha 0.99, clip 2, floor 1e-6, delayed, skip_step
  qnum::int8_adam_config acfg;
  acfg.lr = 3e-3f;
  acfg.round = qnum::stochastic_seed(17);  // keeps the slow v EMA moving (see int8_adam.hpp)
  std::vector<std::int8_t> m8(L.n, 0);
  std::vector<std::uint8_t> v8(L.n, 0);
  std::vector<float> ma(qnum::int8_adam_blocks(L.n, acfg.block_size), 0.0f), va(ma.size(), 0.0f);
  result res{};
  res.grad_bytes = quant ? L.n + 4 * sizeof(qnum::dynamic_scale_state) + (feedback ? (bf16_res ? 2 : 4) * L.n : 0)
                         : 4 * L.n;
  res.state_bytes = md == mode::int8_all ? 2 * L.n + 8 * ma.size() : 8 * L.n;
  std::mt19937 pick(99);
  const int rows = int(train_set.y.size());
  std::uint64_t t_opt = 0;
  for (long step = 0; step < steps; ++step) {
    const int r0 = int(pick() % unsigned(rows - batch));
    const double loss = mse(p, train_set.x.data() + std::size_t(r0) * in_dim, train_set.y.data() + r0, batch, &g);
    if (spikes) {
      if (step % 97 == 13) g[step % L.n] *= 1e4f;            // a huge outlier
      if (step % 211 == 5) for (auto& e : g) e *= 300.0f;    // a whole-batch spike
      if (step % 1009 == 500) g[3] = NAN;                    // a poisoned batch
    }
    // linear learning-rate decay to 10% for a stable final loss
    acfg.lr = 3e-3f * float(1.0 - 0.9 * double(step) / double(steps));
    bool skip = false;
    if (quant) {
      for (int k = 0; k < 4; ++k) {
        // tensor k as a [rows, cols] view, one scale per tensor (its state: a 1 x 1 view)
        const std::size_t o = L.off[k];
        const std::int64_t R = L.rows[k], C = L.cols[k];
        const auto gk = qnum::view(g.data() + o, R, C);
        const auto ck = qnum::view(codes.data() + o, R, C);
        const auto sk = qnum::view(&st[k], 1, 1);
        qnum::status s;
        if (!feedback) {
          s = qnum::quantize_gradient_int8(gk, qnum::per_tensor(), ck, qnum::matrix_view<float>{}, sk, dcfg);
        } else if (bf16_res) {
          s = qnum::quantize_gradient_int8(gk, qnum::per_tensor(), ck, qnum::view(res16.data() + o, R, C), sk, dcfg);
        } else {
          s = qnum::quantize_gradient_int8(gk, qnum::per_tensor(), ck, qnum::view(res32.data() + o, R, C), sk, dcfg);
        }
        if (s == qnum::status::skipped_nonfinite) skip = true;
        qnum::dequantize_gradient_int8(ck, qnum::per_tensor(), sk, qnum::view(gq.data() + o, R, C));
      }
      if (skip) {
        ++res.skipped;
        // a skipped tensor keeps its state; skip the optimizer step for the whole model (as AMP does)
        continue;
      }
    } else {
      gq = g;
      if (!finite_all(gq)) {  // the fp32 baseline gets the same policy
        ++res.skipped;
        continue;
      }
    }
    if (!finite_all(gq)) res.any_nonfinite = true;
    ++t_opt;
    if (md == mode::int8_all) {
      // the optimizer runs over the flat parameter vector (a 1 x n view)
      const std::int64_t n = static_cast<std::int64_t>(L.n);
      qnum::int8_adam_step(qnum::view(p.data(), n), qnum::view(gq.data(), n), {m8.data(), v8.data(), ma.data(), va.data()},
                           acfg, t_opt);
    } else {
      const std::int64_t n = static_cast<std::int64_t>(L.n);
      qnum::fp32_adam_step(qnum::view(p.data(), n), qnum::view(gq.data(), n), qnum::view(m.data(), n),
                           qnum::view(v.data(), n), acfg, t_opt);
    }
    const bool ok = std::isfinite(loss) && finite_all(p) && std::isfinite(st[0].scale) && std::isfinite(st[1].scale) &&
                    std::isfinite(st[2].scale) && std::isfinite(st[3].scale);
    if (ok && !res.any_nonfinite) ++res.clean_steps; else res.any_nonfinite = true;
  }
  res.final_loss = mse(p, eval_set.x.data(), eval_set.y.data(), int(eval_set.y.size()), nullptr);
  if (!std::isfinite(res.final_loss)) res.any_nonfinite = true;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  const long steps = argc > 1 ? std::atol(argv[1]) : 3000;
  const long spike_steps = argc > 2 ? std::atol(argv[2]) : 5000;
  if (steps < 100 || spike_steps < 0) {
    std::fprintf(stderr, "usage: %s [steps>=100] [spike_steps>=0]\n", argv[0]);
    return 2;
  }
  std::mt19937 rng(2024);
  std::normal_distribution<float> nd;
  std::vector<float> teacher(L.n), init(L.n);
  for (auto& w : teacher) w = nd(rng) * 0.5f;
  for (auto& w : init) w = nd(rng) * 0.1f;
  const data_set train_set = make_data(rng, 8192, teacher);
  const data_set eval_set = make_data(rng, eval_n, teacher);

  struct row {
    const char* name;
    mode md;
  };
  const row rows[] = {{"fp32 grads + fp32 Adam", mode::fp32},
                      {"int8 grads (EMA-clip), no feedback", mode::int8_grad},
                      {"int8 grads + fp32 residual feedback", mode::int8_grad_feedback},
                      {"int8 grads + bf16 residual feedback", mode::int8_grad_feedback_bf16},
                      {"int8 grads + feedback + int8 Adam", mode::int8_all}};
  std::printf("2-layer MLP (%zu params), %ld steps, batch %d, eval MSE on %d rows (noise floor 0.01)\n", L.n, steps,
              batch, eval_n);
  std::printf("%-38s %10s %10s %12s %12s\n", "variant", "grad B", "state B", "final loss", "clean steps");
  double fp32_loss = 0, fb_loss = 0;
  bool bad = false;
  for (const row& r : rows) {
    const result res = train(r.md, steps, false, train_set, eval_set, init);
    std::printf("%-38s %10zu %10zu %12.6f %7ld/%ld\n", r.name, res.grad_bytes, res.state_bytes, res.final_loss,
                res.clean_steps, steps);
    if (r.md == mode::fp32) fp32_loss = res.final_loss;
    if (r.md == mode::int8_grad_feedback) fb_loss = res.final_loss;
    bad = bad || res.any_nonfinite;
  }
  const double rel = (fb_loss - fp32_loss) / fp32_loss;
  std::printf("feedback vs fp32: %+.3f%% (limit +2%%)\n", 100.0 * rel);
  bool ok = rel <= 0.02 && !bad;
  if (spike_steps > 0) {
    std::printf("\nspike run: %ld steps, outlier x1e4 every 97, batch x300 every 211, NaN every 1009\n", spike_steps);
    for (const row& r : rows) {
      const result res = train(r.md, spike_steps, true, train_set, eval_set, init);
      std::printf("%-38s final loss %10.6f  clean %ld, skipped %ld, NaN/Inf seen: %s\n", r.name, res.final_loss,
                  res.clean_steps, res.skipped, res.any_nonfinite ? "YES" : "no");
      ok = ok && !res.any_nonfinite;
    }
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
