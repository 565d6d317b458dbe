// examples/tour.cpp: quantize one tensor to every element format with a per-tensor absmax scale and
// print what happened (error, saturation, zero flushes, and that decode(encode(x)) is what you get).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "qnum/qnum.hpp"

template <class F>
void report(const std::vector<float>& x) {
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  // Symmetric per-tensor scale: amax maps to the format's largest value.
  const float scale = amax / F::max_value, inv = 1.0f / scale;
  double err2 = 0.0, sig2 = 0.0, max_err = 0.0;
  std::size_t zeros = 0, at_max = 0;
  for (float v : x) {
    const auto code = qnum::encode<F>(v * inv);
    const float q = qnum::decode<F>(code);
    const float y = q * scale;
    err2 += double(y - v) * (y - v);
    sig2 += double(v) * v;
    max_err = std::fmax(max_err, std::fabs(y - v));
    zeros += (q == 0.0f && v != 0.0f);
    at_max += (std::fabs(q) == F::max_value);
  }
  std::printf("%-9s %2d bits  scale %-11.4g SQNR %6.2f dB  max|err| %-10.4g flushed to 0: %5zu  at +-max: %zu\n",
              F::name, F::bits, scale, 10.0 * std::log10(sig2 / err2), max_err, zeros, at_max);
}

int main() {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(1 << 16);
  for (auto& v : x) v = normal(rng);
  std::printf("qnum %d.%d.%d: per-tensor absmax quantization of %zu N(0,1) values\n", QNUM_VERSION_MAJOR,
              QNUM_VERSION_MINOR, QNUM_VERSION_PATCH, x.size());
  report<qnum::qint8>(x);
  report<qnum::qint4>(x);
  report<qnum::fp8_e4m3>(x);
  report<qnum::fp8_e5m2>(x);
  report<qnum::fp4_e2m1>(x);
  // Stochastic rounding: the same (value, random bits) gives the same code on host and device.
  const float v = 0.3f;
  int ups = 0;
  for (std::uint64_t i = 0; i < 10000; ++i)
    ups += qnum::encode<qnum::fp4_e2m1>(v, qnum::stochastic(qnum::random_bits(1, i))) == 0x1;
  std::printf("stochastic E2M1 of 0.3: rounds up to 0.5 in %.2f%% of 10000 draws (expected 60%%)\n", ups / 100.0);
  return 0;
}
