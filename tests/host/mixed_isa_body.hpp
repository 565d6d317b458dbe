// tests/host/mixed_isa_body.hpp: the work both translation units of test_mixed_isa do, one compiled with the
// project's flags and one with -mavx2 -mfma -ffp-contract=fast. Every qnum inline function they use is
// emitted in both objects, each with its own flags; the linker keeps one copy of each. Whatever it keeps,
// both callers must get the bits of the per-element definition.
#pragma once

#include <cstdint>
#include <vector>

#include "qnum/layout/gguf.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/random.hpp"
#include "qnum/static_scheme.hpp"

namespace mixed_isa {

inline std::vector<float> input(std::int64_t rows, std::int64_t cols) {
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t r = qnum::random_bits(3, i);
    x[i] = static_cast<float>(static_cast<std::int32_t>(r)) / 2147483648.0f * static_cast<float>(1u << (r % 7));
    if (r % 97 == 1) x[i] = -9.0f;  // the group's extreme, negative
  }
  return x;
}

// Codes, scales and outputs of several entry points, as bytes.
inline std::vector<std::uint8_t> work() {
  const std::int64_t rows = 19, cols = 256;
  const std::vector<float> x = input(rows, cols);
  const auto in = qnum::view<const float>(x.data(), rows, cols);
  std::vector<std::uint8_t> out;
  auto append = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  std::vector<std::uint8_t> codes(x.size());
  std::vector<float> scales(static_cast<std::size_t>(rows * cols / 32)), fq(x.size());
  qnum::quantize(qnum::presets::int8_sym, in, qnum::group_size(32), qnum::view(codes.data(), rows, cols),
                 qnum::scales_of(scales.data(), rows, cols / 32));
  append(codes.data(), codes.size());
  append(scales.data(), scales.size() * 4);
  qnum::fake_quantize(qnum::fixed_scheme<qnum::presets::slime_int4_qat>{}, in, qnum::group_size(32),
                      qnum::view(fq.data(), rows, cols));
  append(fq.data(), fq.size() * 4);
  float amax = 0.0f;
  qnum::tensor_amax(in, amax);
  append(&amax, 4);
  std::vector<std::uint8_t> q4(static_cast<std::size_t>(qnum::gguf::row_bytes(qnum::gguf::type::q4_0, rows * cols)));
  qnum::gguf::quantize(qnum::gguf::type::q4_0, qnum::view(x.data(), rows * cols), qnum::view(q4.data(), static_cast<std::int64_t>(q4.size())));
  append(q4.data(), q4.size());
  return out;
}

}  // namespace mixed_isa
