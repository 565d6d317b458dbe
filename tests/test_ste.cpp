// tests/test_ste.cpp: straight-through-estimator gradients (ste.hpp: ste_clip_mask, ste_clipped, learnable_grad)
// bit for bit against torchao's fake-quant backward and torch's fake_quantize_per_channel_affine and
// _fake_quantize_learnable_per_channel_affine (forward through quantize.hpp's fake_quant_value too; golden
// vectors: tests/data/groupquant.bin, tools/gen_golden.py --only groupquant), and the mask's NaN policy.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qnum/presets.hpp"
#include "qnum/quantize.hpp"
#include "qnum/scale.hpp"
#include "qnum/ste.hpp"
#include "test_util.hpp"

namespace {

using gcase = qtest::gq_case;

// test_quantize_tensor.cpp REQUIREs that the file is there and is QGV1; here a missing or bad file
// fails in find() (no cases), so its checks are not counted twice.
const std::vector<gcase>& cases() {
  static const std::vector<gcase> c = qtest::parse_groupquant(qtest::read_file("groupquant.bin"));
  return c;
}

// By value: a const std::string& parameter bound to a temporary makes GCC 13 warn (-Wdangling-reference)
// at every `const gcase& c = find("...")`.
const gcase& find(std::string_view name) { return qtest::find_case(cases(), name); }

}  // namespace

TEST_CASE("NaN / Inf policy: the clip mask is false for a NaN element") {
  const qnum::group_stats st = qtest::nan_inf_group_stats();
  const auto a = qnum::presets::torchao_uint4_asym;
  const auto pa = qnum::compute_params(a, st);
  CHECK(qnum::ste_clip_mask(a, pa, NAN) == false);
}

TEST_CASE("golden: torchao fake-quant backward = clipped STE mask") {
  auto run = [](const char* name, auto s) {
    const gcase& c = find(name);
    int bad = 0;
    const std::int64_t ng = c.cols / c.gc;
    for (std::uint32_t r = 0; r < c.rows; ++r)
      for (std::uint32_t j = 0; j < c.cols; ++j) {
        const std::size_t i = r * c.cols + j, gi = r * static_cast<std::size_t>(ng) + j / c.gc;
        qnum::group_params p;
        p.scale = p.code_scale = qtest::from_bits(c.a.at("scale")[gi]);
        p.inv = 1.0f / p.code_scale;
        p.zero = c.a.count("zero") ? static_cast<std::int32_t>(c.a.at("zero")[gi]) : 0;
        const float x = qtest::from_bits(c.a.at("x")[i]);
        const float dy = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(c.rows * c.cols - 1);
        const float want_mask = qtest::from_bits(c.a.at("dx")[i]) != 0.0f || dy == 0.0f;
        const bool m = qnum::ste_clip_mask(s, p, x);
        // Known difference (docs/schemes.md): torchao's autograd gives 0 where round(x/s) + z is exactly qmin
        // or qmax (exclusive bounds); torch's fake_quantize (and qnum) pass the gradient there.
        const auto t = qnum::detail::unclamped_int(s, p, x);
        if (t == s.code_min() || t == s.code_max()) continue;
        if (m != (want_mask != 0.0f) && bad++ < 5) MESSAGE(name << " mask at " << i << " x " << x << " s " << p.scale << " z " << p.zero << " dx " << qtest::from_bits(c.a.at("dx")[i]));
      }
    return bad;
  };
  CHECK(run("torchao_int4_sym_g32", qnum::presets::torchao_int4_sym) == 0);
  CHECK(run("torchao_uint4_asym_g32", qnum::presets::torchao_uint4_asym) == 0);
}

template <class F>
static int check_torch_channel(const gcase& c, bool learnable) {
  // torch per-channel fake quant on CPU: qval = zp + nearbyint(x * (1/s)), clamp, (q - zp) * s (the CUDA kernel
  // adds zp before rounding instead: zero_before_round()).
  const auto s = qnum::symmetric_full<F>().x_multiply();
  int bad = 0;
  for (std::uint32_t r = 0; r < c.rows; ++r) {
    qnum::group_params p;
    p.scale = p.code_scale = qtest::from_bits(c.a.at("scale")[r]);
    p.inv = 1.0f / p.scale;
    p.zero = static_cast<std::int32_t>(c.a.at("zero")[r]);
    for (std::uint32_t j = 0; j < c.cols; ++j) {
      const std::size_t i = r * c.cols + j;
      const float x = qtest::from_bits(c.a.at("x")[i]);
      const float dy = qtest::from_bits(c.a.at("dy")[i]);
      const std::uint32_t fqb = qtest::bits(qnum::fake_quant_value(s, p, x));
      if (fqb != c.a.at("dq")[i] && !(fqb == 0u && c.a.at("dq")[i] == 0x80000000u) && bad++ < 5)
        MESSAGE(c.name << " dq " << i << " x " << x << " got " << qtest::from_bits(fqb) << " want " << qtest::from_bits(c.a.at("dq")[i]));
      if (qtest::bits(qnum::ste_clipped(s, p, x, dy)) != c.a.at("dx")[i] && bad++ < 5)
        MESSAGE(c.name << " dx " << i << " x " << x << " s " << p.scale << " z " << p.zero << " got " << qnum::ste_clipped(s, p, x, dy) << " want " << qtest::from_bits(c.a.at("dx")[i]));
      if (learnable) {
        const qnum::learnable_grads g = qnum::learnable_grad(s, p, x, dy, 1.0f);
        // dscale: NOT bit-exact: within a few ulp of torch (its CPU kernel order is not reproduced; documented).
        const std::int64_t du = static_cast<std::int64_t>(qtest::bits(g.dscale)) - static_cast<std::int64_t>(c.a.at("dscale")[r]);
        // Exact ties (x/s + z = k + 0.5 up to rounding) are skipped: torch's backward resolves them as if
        // x*(1/s)+z were fused (FMA); qnum rounds the product first. Documented in docs/schemes.md.
        const float fr = x * p.inv - std::floor(x * p.inv);
        const bool near_tie = std::fabs(fr - 0.5f) < 1e-4f;
        if (!near_tie && (du > 8 || du < -8) && bad++ < 5)
          MESSAGE(c.name << " dscale " << r << " got " << g.dscale << " want " << qtest::from_bits(c.a.at("dscale")[r]));
        if (qtest::bits(g.dzero) != c.a.at("dzero")[r] && bad++ < 5)
          MESSAGE(c.name << " dzero " << r << " got " << g.dzero << " want " << qtest::from_bits(c.a.at("dzero")[r]));
      }
    }
  }
  return bad;
}

TEST_CASE("golden: torch fake_quantize_per_channel_affine forward/backward and learnable gradients") {
  CHECK(check_torch_channel<qnum::qint4>(find("torch_fq_channel_int4"), false) == 0);
  CHECK(check_torch_channel<qnum::qint8>(find("torch_fq_channel_int8"), false) == 0);
  CHECK(check_torch_channel<qnum::qint4>(find("torch_learnable_channel_int4"), true) == 0);
  CHECK(check_torch_channel<qnum::qint8>(find("torch_learnable_channel_int8"), true) == 0);
  CHECK(check_torch_channel<qnum::qint4>(find("torch_learnable_channel_int4_clip"), true) == 0);
}

