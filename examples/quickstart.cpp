// examples/quickstart.cpp: quantize, pack and dequantize one tensor with three public schemes, and check
// that fake_quantize(x) == dequantize(quantize(x)) bit for bit.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "qnum/qnum.hpp"

constexpr std::int64_t rows = 4, cols = 256;

template <class F>
bool run(const char* name, const qnum::scheme<F>& s, qnum::group_shape g, const std::vector<float>& x) {
  const qnum::extent e = qnum::scale_shape(rows, cols, g);  // the scale buffer: [groups down, groups across]
  const std::int64_t nr = e.rows, nc = e.cols;
  std::vector<std::uint8_t> codes(rows * cols), scales(nr * nc * qnum::dtype_bytes(s.store));
  const qnum::scale_view sv{scales.data(), nr, nc, nc, qnum::dtype_bytes(s.store)};
  std::vector<float> deq(rows * cols), fq(rows * cols);
  bool ok = qnum::quantize(s, qnum::view(x.data(), rows, cols), g, qnum::view(codes.data(), rows, cols), sv) == qnum::status::ok;
  ok &= qnum::dequantize(s, qnum::view(codes.data(), rows, cols), g, sv, qnum::view(deq.data(), rows, cols)) == qnum::status::ok;
  ok &= qnum::fake_quantize(s, qnum::view(x.data(), rows, cols), g, qnum::view(fq.data(), rows, cols)) == qnum::status::ok;
  ok &= std::memcmp(deq.data(), fq.data(), deq.size() * sizeof(float)) == 0;  // bit for bit
  std::size_t packed_bytes = codes.size();  // FP8: one byte per code, nothing to pack
  if constexpr (F::bits == 4 && F::is_integer) {  // compressed-tensors weight_packed: 8 offset-binary nibbles per int32
    std::vector<std::int8_t> q(codes.size()), back(codes.size());
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::int8_t>(qnum::code_to_int<F>(codes[i]));
    const qnum::extent e = qnum::pack_int32_shape(rows, cols, 4, qnum::packed_dim::cols);
    std::vector<std::uint32_t> words(e.rows * e.cols);
    ok &= qnum::ct::pack_weight(qnum::view(codes.data(), rows, cols), 4, qnum::view(words.data(), e.rows, e.cols)) == qnum::status::ok;
    ok &= qnum::ct::unpack_weight(qnum::view(words.data(), e.rows, e.cols), 4, qnum::view(back.data(), rows, cols)) == qnum::status::ok &&
          q == back;
    packed_bytes = words.size() * 4;
  } else if constexpr (F::bits == 4) {  // MXFP4: two E2M1 codes per byte, element 2i in the low nibble
    std::vector<std::uint8_t> bytes(codes.size() / 2), back(codes.size());
    ok &= qnum::pack_nibbles(qnum::view(codes.data(), rows, cols), qnum::nibble_order::low_first, qnum::view(bytes.data(), rows, cols / 2)) ==
          qnum::status::ok;
    ok &= qnum::unpack_nibbles(qnum::view(bytes.data(), rows, cols / 2), qnum::nibble_order::low_first, qnum::view(back.data(), rows, cols)) ==
              qnum::status::ok &&
          back == codes;
    packed_bytes = bytes.size();
  }
  double err = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) err = std::fmax(err, std::fabs(double(deq[i]) - x[i]));
  std::printf("%-28s %3zu groups  %5zu code bytes + %4zu scale bytes  max|err| %.4f  fake_quant == dequant(quant): %s\n",
              name, static_cast<std::size_t>(nr * nc), packed_bytes, scales.size(), err, ok ? "yes" : "NO");
  return ok;
}

int main() {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (auto& v : x) v = normal(rng);
  bool ok = run("slime INT4 g32 + ct packing", qnum::presets::slime_int4_qat, qnum::group_size(32), x);
  ok &= run("DeepGEMM FP8 E4M3 1x128", qnum::presets::deepgemm_fp8, qnum::presets::deepseek_act, x);
  ok &= run("MXFP4 (E2M1, E8M0 1x32)", qnum::presets::mxfp4, qnum::presets::mx_block, x);
  return ok ? 0 : 1;
}
