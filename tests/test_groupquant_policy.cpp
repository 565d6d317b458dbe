// tests/test_groupquant_policy.cpp: bad-input policy, status codes, padded tails, stochastic rounding, and
// fake_quant == dequantize(quantize) for every preset over random and adversarial inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "qnum/layout/gguf.hpp"
#include "qnum/layout/pack.hpp"
#include "qnum/presets.hpp"
#include "qnum/quantize.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/static_scheme.hpp"
#include "qnum/ste.hpp"
#include "test_util.hpp"

namespace {

std::vector<float> adversarial(std::int64_t n, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t r = qnum::random_bits(seed, static_cast<std::uint64_t>(i));
    float x = (static_cast<float>(r & 0xFFFF) - 32768.0f) / 4096.0f;
    switch ((r >> 16) % 16) {
      case 0: x = 0.0f; break;
      case 1: x = qtest::from_bits(r & 0x807FFFFFu); break;          // subnormal
      case 2: x = x * 1e37f; break;                                   // huge
      case 3: x = qtest::from_bits(0x7F7FFFFFu | (r & 0x80000000u)); break;  // +-FLT_MAX
      default: break;
    }
    v[static_cast<std::size_t>(i)] = x;
  }
  return v;
}

template <class F>
void check_fake_equals_dq(const qnum::scheme<F>& s, qnum::group_shape gs, const char* name) {
  const std::int64_t R = 5, C = 77;  // 77: tails for every 1xG group
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    auto x = adversarial(R * C, seed);
    qnum::detail::grid g;
    qnum::detail::make_grid(R, C, gs, g);
    std::vector<std::uint8_t> codes(x.size());
    std::vector<std::uint32_t> sc(static_cast<std::size_t>(g.nr * g.nc));
    std::vector<std::int32_t> zp(sc.size());
    qnum::scale_view sv{sc.data(), g.nr, g.nc, g.nc, qnum::dtype_bytes(s.store)};
    REQUIRE(qnum::quantize(s, qnum::view<const float>(x.data(), R, C), gs, qnum::view(codes.data(), R, C), sv,
                           qnum::view(zp.data(), g.nr, g.nc)) == qnum::status::ok);
    std::vector<float> dq(x.size()), fq(x.size());
    REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), R, C), gs, sv,
                             qnum::view<const std::int32_t>(zp.data(), g.nr, g.nc), qnum::view(dq.data(), R, C)) == qnum::status::ok);
    REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(x.data(), R, C), gs, qnum::view(fq.data(), R, C)) == qnum::status::ok);
    int bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (s.codes_from_stored && qtest::bits(fq[i]) != qtest::bits(dq[i]) && bad++ < 3) MESSAGE(name << " fq!=dq at " << i);
      if (std::isnan(fq[i]) && bad++ < 3) MESSAGE(name << " finite input gave NaN at " << i);
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("fake_quant == dequantize(quantize) and finite never NaN, every preset, adversarial inputs, tails") {
  using namespace qnum::presets;
  check_fake_equals_dq(slime_int4_qat, qnum::group<32>{}, "slime");
  check_fake_equals_dq(slime_int4_checkpoint, qnum::group_size(32), "slime_ckpt");
  check_fake_equals_dq(ct_w4a16_sym, ct_group128, "ct_sym");
  check_fake_equals_dq(ct_w4a16_sym_bf16, ct_group32, "ct_sym_bf16");
  check_fake_equals_dq(ct_w4a16_asym, ct_group32, "ct_asym");
  check_fake_equals_dq(torchao_int4_sym, qnum::group<32>{}, "ao_int4");
  check_fake_equals_dq(torchao_uint8_asym, qnum::per_row(), "ao_uint8");
  check_fake_equals_dq(deepgemm_fp8, deepseek_act, "dg");
  check_fake_equals_dq(deepgemm_fp8_ue8m0, qnum::block(2, 32), "dg_ue8m0");
  check_fake_equals_dq(te_fp8_current, qnum::per_tensor(), "te");
  check_fake_equals_dq(te_fp8_current_e5m2, qnum::per_tensor(), "te_e5m2");
  check_fake_equals_dq(mxfp8, mx_block, "mxfp8");
  check_fake_equals_dq(mxfp4, mx_block, "mxfp4");
  check_fake_equals_dq(mxfp8_rceil, mx_block, "mxfp8_rceil");
  check_fake_equals_dq(nvfp4, nvfp4_block, "nvfp4");
}

TEST_CASE("all-zero group: defined scale, zero codes, exact zero output, for every scheme kind") {
  const qnum::group_stats z;
  auto s1 = qnum::symmetric_restricted<qnum::qint4>();
  auto p1 = qnum::compute_params(s1, z);
  CHECK(p1.scale == 1.0f);
  CHECK(qnum::quantize_value(s1, p1, 0.0f) == 0);
  CHECK(qnum::fake_quant_value(s1, p1, 0.0f) == 0.0f);
  auto p2 = qnum::compute_params(qnum::presets::slime_int4_qat, z);
  CHECK(p2.scale == 1e-5f);
  auto s3 = qnum::presets::torchao_uint4_asym;
  auto p3 = qnum::compute_params(s3, z);
  CHECK(p3.zero == 0);
  CHECK(qnum::fake_quant_value(s3, p3, 0.0f) == 0.0f);
  auto p4 = qnum::compute_params(qnum::presets::mxfp8, z);
  CHECK(p4.scale_code == 0u);
  CHECK(qnum::fake_quant_value(qnum::presets::mxfp8, p4, 0.0f) == 0.0f);
  auto p5 = qnum::compute_params(qnum::presets::te_fp8_current, z);
  CHECK(p5.inv == 1.0f);
}

TEST_CASE("NaN / Inf policy: statistics ignore non-finite elements; NaN -> zero point, Inf saturates") {
  const float xs[] = {0.5f, -0.25f, NAN, INFINITY, -INFINITY, 0.125f};
  qnum::group_stats st;
  for (float x : xs) qnum::accumulate(st, x);
  CHECK(st.amax == 0.5f);
  CHECK(st.min == -0.25f);
  CHECK(st.max == 0.5f);
  const auto s = qnum::presets::slime_int4_qat;
  const auto p = qnum::compute_params(s, st);
  CHECK(qnum::quantize_int_value(s, p, NAN) == 0);
  CHECK(qnum::quantize_int_value(s, p, INFINITY) == 7);
  CHECK(qnum::quantize_int_value(s, p, -INFINITY) == -7);
  const auto a = qnum::presets::torchao_uint4_asym;
  const auto pa = qnum::compute_params(a, st);
  CHECK(qnum::fake_quant_value(a, pa, NAN) == 0.0f);
  CHECK(qnum::ste_clip_mask(a, pa, NAN) == false);
  const auto f = qnum::presets::deepgemm_fp8;
  const auto pf = qnum::compute_params(f, st);
  CHECK(qnum::quantize_value(f, pf, INFINITY) == 0x7E);
  CHECK(qnum::quantize_value(f, pf, NAN) == 0x7F);
}

TEST_CASE("status codes: null pointers, shapes, strides, group sizes, scale buffers, empty tensors") {
  const auto s = qnum::presets::torchao_int4_sym;
  std::vector<float> x(64, 1.0f);
  std::vector<std::uint8_t> q(64);
  std::vector<float> sc(2);
  auto in = qnum::view<const float>(x.data(), 2, 32);
  auto cv = qnum::view(q.data(), 2, 32);
  CHECK(qnum::quantize(s, in, qnum::group<32>{}, cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::ok);
  CHECK(qnum::quantize(s, qnum::view<const float>(nullptr, 2, 32), qnum::group<32>{}, cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::null_pointer);
  CHECK(qnum::quantize(s, qnum::view<const float>(x.data(), -1, 32), qnum::group<32>{}, cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::bad_shape);
  CHECK(qnum::quantize(s, qnum::view<const float>(x.data(), 2, 32, 16), qnum::group<32>{}, cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::bad_stride);
  CHECK(qnum::quantize(s, in, qnum::group_size(-4), cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::bad_group);
  CHECK(qnum::quantize(s, in, qnum::group<16>{}, cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::bad_scale_buffer);
  std::vector<std::uint16_t> sc16(2);
  CHECK(qnum::quantize(s, in, qnum::group<32>{}, cv, qnum::scales_of(sc16.data(), 2, 1)) == qnum::status::bad_scale_buffer);
  CHECK(qnum::quantize(s, qnum::view<const float>(nullptr, 0, 32), qnum::group<32>{}, qnum::view<std::uint8_t>(nullptr, 0, 32),
                       qnum::scale_view{}) == qnum::status::ok);
  CHECK(qnum::quantize(qnum::presets::torchao_uint4_asym, in, qnum::group<32>{}, cv, qnum::scales_of(sc.data(), 2, 1)) == qnum::status::null_pointer);
  std::vector<float> out(64);
  CHECK(qnum::fake_quantize(s, in, qnum::group<32>{}, qnum::view(out.data(), 2, 31)) == qnum::status::bad_shape);
  // A view's dtype must match its elements: float is fp32, 16-bit elements are bf16 or fp16.
  std::vector<std::uint16_t> x16(64, 0x3F80);
  const auto sv = qnum::scales_of(sc.data(), 2, 1);
  CHECK(qnum::quantize(s, qnum::view<const float>(x.data(), 2, 32, 32, qnum::dtype::bf16), qnum::group<32>{}, cv, sv) ==
        qnum::status::bad_type);
  for (qnum::dtype t : {qnum::dtype::fp32, qnum::dtype::e8m0, qnum::dtype::ue4m3})
    CHECK(qnum::quantize(s, qnum::view<const std::uint16_t>(x16.data(), 2, 32, 32, t), qnum::group<32>{}, cv, sv) ==
          qnum::status::bad_type);
  CHECK(qnum::fake_quantize(s, in, qnum::group<32>{}, qnum::view(x16.data(), 2, 32, 32, qnum::dtype::fp32)) ==
        qnum::status::bad_type);
  // view<bf16> / view<fp16> name the 16-bit dtype by its format type.
  CHECK(qnum::view<qnum::fp16>(x16.data(), 2, 32).type == qnum::dtype::fp16);
  CHECK(qnum::view<qnum::bf16>(static_cast<const std::uint16_t*>(x16.data()), 2, 32, 40).row_stride == 40);
  CHECK(qnum::quantize(s, qnum::view<qnum::bf16>(x16.data(), 2, 32), qnum::group<32>{}, cv, sv) == qnum::status::ok);
  CHECK(sc[0] == 1.0f / 7.5f);
}

TEST_CASE("padded last group: tail elements are quantized with the tail's own scale (as zero padding)") {
  const auto s = qnum::presets::slime_int4_qat;
  std::vector<float> x(40);
  for (int i = 0; i < 40; ++i) x[static_cast<std::size_t>(i)] = i < 32 ? 1.0f : 0.07f * static_cast<float>(i - 31);
  std::vector<std::uint8_t> q(40);
  std::vector<float> sc(2);
  REQUIRE(qnum::quantize(s, qnum::view<const float>(x.data(), 1, 40), qnum::group<32>{}, qnum::view(q.data(), 1, 40),
                         qnum::scales_of(sc.data(), 1, 2)) == qnum::status::ok);
  CHECK(sc[1] == 0.56f / 7.0f);
  CHECK(qnum::code_to_int<qnum::qint4>(q[39]) == 7);
  // Strided view: the same tensor inside a wider buffer gives the same codes.
  std::vector<float> wide(2 * 50, 9.0f);
  for (int i = 0; i < 40; ++i) wide[static_cast<std::size_t>(50 + i)] = x[static_cast<std::size_t>(i)];
  std::vector<std::uint8_t> q2(40);
  REQUIRE(qnum::quantize(s, qnum::view<const float>(wide.data() + 50, 1, 40, 50), qnum::group<32>{}, qnum::view(q2.data(), 1, 40),
                         qnum::scales_of(sc.data(), 1, 2)) == qnum::status::ok);
  CHECK(q == q2);
}

TEST_CASE("stochastic rounding: deterministic per (seed, index), unbiased on average") {
  const auto s = qnum::symmetric_restricted<qnum::qint8>();
  qnum::group_params p;
  p.scale = p.code_scale = 1.0f;
  p.inv = 1.0f;
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) sum += qnum::quantize_int_value(s, p, 0.3f, qnum::stochastic(qnum::random_bits(7, static_cast<std::uint64_t>(i))));
  CHECK(std::fabs(sum / n - 0.3) < 0.02);
  std::vector<float> x(64, 0.3f), a(64), b(64);
  x[0] = 7.0f;
  REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(x.data(), 1, 64), qnum::per_row(), qnum::view(a.data(), 1, 64), qnum::stochastic_seed(3)) == qnum::status::ok);
  REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(x.data(), 1, 64), qnum::per_row(), qnum::view(b.data(), 1, 64), qnum::stochastic_seed(3)) == qnum::status::ok);
  CHECK(a == b);
}

TEST_CASE("exhaustive int4 ties: x/s = k + 0.5 rounds to even for every k in [-8, 7]") {
  const auto s = qnum::presets::torchao_int4_sym;
  qnum::group_stats st;
  st.amax = 0.9375f;  // s = 0.125 exactly
  const auto p = qnum::compute_params(s, st);
  REQUIRE(p.scale == 0.125f);
  for (int k = -9; k <= 8; ++k) {
    const float x = (static_cast<float>(k) + 0.5f) * 0.125f;
    int want = (k % 2 == 0) ? k : k + 1;
    want = want < -8 ? -8 : (want > 7 ? 7 : want);
    CHECK(qnum::quantize_int_value(s, p, x) == want);
  }
}

namespace {
template <class F>
void fq_dq_agree(const qnum::scheme<F>& s, const std::vector<float>& x, float outer, std::uint32_t* scale_code = nullptr) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<float> fq(x.size()), dq(x.size());
  std::vector<std::uint8_t> codes(x.size());
  std::uint32_t sc[1] = {};
  std::int32_t z[1] = {};
  const qnum::scale_view sv{sc, 1, 1, 1, qnum::dtype_bytes(s.store)};
  REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(x.data(), 1, n), qnum::per_tensor(), qnum::view(fq.data(), 1, n), qnum::nearest_even(), outer) == qnum::status::ok);
  REQUIRE(qnum::quantize(s, qnum::view<const float>(x.data(), 1, n), qnum::per_tensor(), qnum::view(codes.data(), 1, n), sv, qnum::view(z, 1, 1), qnum::nearest_even(), outer) == qnum::status::ok);
  REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(codes.data(), 1, n), qnum::per_tensor(), sv, qnum::view<const std::int32_t>(z, 1, 1), qnum::view(dq.data(), 1, n), outer) == qnum::status::ok);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(qtest::bits(fq[i]) == qtest::bits(dq[i]));
    if (std::isfinite(x[i])) CHECK(!std::isnan(fq[i]));
  }
  if (scale_code != nullptr) *scale_code = sc[0];
}
}  // namespace

TEST_CASE("degenerate scales: storage underflow, outer scales sanitised, TE and MX in any storage") {
  std::uint32_t code = 0;
  // A scale below half bf16's smallest subnormal: stored as code 1 (2^-133), not 0; asymmetric too.
  fq_dq_agree(qnum::symmetric_full<qnum::qint8>().stored_as(qnum::dtype::bf16), {1e-40f, 0.0f, 5e-41f}, 0.0f, &code);
  CHECK(code == 1u);
  fq_dq_agree(qnum::asymmetric<qnum::qint8>().stored_as(qnum::dtype::bf16), {1e-40f, 0.0f, -5e-41f}, 0.0f, &code);
  CHECK(code == 1u);
  fq_dq_agree(qnum::symmetric_full<qnum::qint4>().stored_as(qnum::dtype::fp16), {1e-30f, -3e-31f}, 0.0f, &code);
  CHECK(code == 1u);
  // TE current scaling stored as bf16, and with an outer scale: the stored value is what codes use.
  fq_dq_agree(qnum::te_current<qnum::fp8_e4m3>().stored_as(qnum::dtype::bf16), {1.0f, 448.0f, -3.0f}, 0.0f, &code);
  CHECK(code == qnum::to_bf16(1.0f));  // 1/m = amax/448 = 1
  fq_dq_agree(qnum::te_current<qnum::fp8_e4m3>(), {1.0f, 448.0f}, 0.5f);
  // MX power of two stored as fp32: the value 2^e, not the E8M0 code.
  fq_dq_agree(qnum::float_amax<qnum::fp8_e4m3>().with_pow2(qnum::pow2_rule::mx_floor).stored_as(qnum::dtype::fp32), {1.0f, 448.0f}, 0.0f, &code);
  CHECK(code == qtest::bits(1.0f));  // floor(log2 448) - 8 = 0
  fq_dq_agree(qnum::float_amax<qnum::fp8_e4m3>().with_pow2(qnum::pow2_rule::mx_floor), {1.0f, 448.0f}, 0.5f);
  fq_dq_agree(qnum::float_amax<qnum::fp4_e2m1>().with_pow2(qnum::pow2_rule::mx_rceil), {1.0f, 448.0f}, 0.5f);
  // Outer scales: subnormal == FLT_MIN, +Inf == FLT_MAX, negative / NaN == none.
  const auto nv = qnum::float_amax<qnum::fp4_e2m1>().stored_as(qnum::dtype::ue4m3);
  std::uint32_t a = 0, b = 0;
  fq_dq_agree(nv, {3e-36f, -1.5e-36f}, 1e-40f, &a);
  fq_dq_agree(nv, {3e-36f, -1.5e-36f}, 1.17549435e-38f, &b);
  CHECK(a == b);
  CHECK(qnum::detail::sanitize_outer(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::max());
  CHECK(qnum::detail::sanitize_outer(-1.0f) == 0.0f);
  CHECK(qnum::detail::sanitize_outer(std::nanf("")) == 0.0f);
  // Outer scale with a huge stored scale and an Inf element: code scale finite, codes defined (UBSan-clean).
  qnum::group_stats st;
  qnum::accumulate(st, 3.0e38f);
  const auto asym = qnum::asymmetric<qnum::qint4>();
  const qnum::group_params p = qnum::compute_params(asym, st, 1.0f);
  CHECK(std::isfinite(p.code_scale));
  fq_dq_agree(asym, {3.0e38f, std::numeric_limits<float>::infinity()}, 1.0f);
  // A NaN x / s (0 * Inf from hand-made parameters) gives the zero point, like a NaN x.
  qnum::group_params q;
  q.inv = std::numeric_limits<float>::infinity();
  q.zero = 3;
  CHECK(qnum::quantize_int_value(asym.x_multiply(), q, 0.0f) == 3);
}

TEST_CASE("eps after storage: the rule sees the stored scale (compressed-tensors' order)") {
  using qnum::dtype;
  const auto early = qnum::symmetric_full<qnum::qint4>().stored_as(dtype::bf16).eps_zero_to(0.0078125f);
  const auto late = early.eps_after_storage();
  qnum::group_stats tiny;  // amax / 7.5 = 0.4 * 2^-133: a non-zero fp32 scale that rounds to 0 in bf16
  qnum::accumulate(tiny, qtest::from_bits(0x00030000u));
  const qnum::group_params e = qnum::compute_params(early, tiny), l = qnum::compute_params(late, tiny);
  CHECK(e.scale_code == 1u);  // before: the fp32 scale is not 0, so no eps; bf16 rounds it to 0 -> smallest subnormal
  CHECK(l.scale_code == 0x3C00u);  // after: 0 in bf16 -> eps
  CHECK(l.scale == 0.0078125f);
  CHECK(l.code_scale == 0.0078125f);
  // A tiny scale that survives the rounding is kept by both orders.
  qnum::group_stats small;
  qnum::accumulate(small, qtest::from_bits(0x00100000u));
  CHECK(qnum::compute_params(late, small).scale_code == 2u);
  CHECK(qnum::compute_params(early, small).scale_code == 2u);
  // All-zero group: eps, not the eps-less 1.0; codes from the fp32 scale use the eps too.
  CHECK(qnum::compute_params(late, qnum::group_stats{}).scale_code == 0x3C00u);
  CHECK(qnum::compute_params(late.codes_from_fp32_scale(), qnum::group_stats{}).code_scale == 0.0078125f);
  // floor after storage: a stored scale below eps is raised to eps rounded into the storage (ue4m3: 2^-6 exact).
  const auto fl = qnum::float_amax<qnum::fp4_e2m1>().stored_as(dtype::ue4m3).eps_floor(0.015625f).eps_after_storage();
  qnum::group_stats mid;
  qnum::accumulate(mid, 0.05f);  // 0.05 / 6 = 0.00833 -> ue4m3 0.0078125 < eps
  const qnum::group_params f = qnum::compute_params(fl, mid);
  CHECK(f.scale == 0.015625f);
  CHECK(f.scale_code == qnum::encode<qnum::ue4m3>(0.015625f, qnum::rne, qnum::satfinite));
  // With fp32 storage the two orders agree (compressed-tensors' fp32 presets keep the early form).
  for (float a : {0.0f, 1e-45f, 1e-30f, 3.0f}) {
    qnum::group_stats st;
    qnum::accumulate(st, a);
    CHECK(qnum::compute_params(qnum::presets::ct_w4a16_sym, st).scale_code ==
          qnum::compute_params(qnum::presets::ct_w4a16_sym.eps_after_storage(), st).scale_code);
  }
  check_fake_equals_dq(late, qnum::group_size(32), "ct bf16 eps after storage");
  check_fake_equals_dq(fl, qnum::group_size(16), "ue4m3 floor after storage");
}

TEST_CASE("NaN outputs: every NaN a dequantizer writes is the canonical quiet NaN, whatever its source") {
  namespace p = qnum::presets;
  using qtest::from_bits;
  using qnum::detail::float_to_bits;
  constexpr std::uint32_t canon = 0x7FC00000u;
  // FP8 NaN codes of both signs (E4M3 0x7F/0xFF, E5M2 0x7D..0x7F/0xFD..0xFF with payloads) through the
  // per-element function and both host paths (SIMD lanes: fp32/bf16 out; generic loop: fp16 out).
  const std::uint8_t e4[] = {0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0xFF};
  const std::uint8_t e5[] = {0x7D, 0xFD, 0x7E, 0xFE, 0x7F, 0xFF, 0x7D, 0xFD, 0x7E, 0xFE};
  const float sc = 0.5f;
  const qnum::scale_view sv{const_cast<float*>(&sc), 1, 1, 1, 4};
  auto check_row = [&](const auto& s, const std::uint8_t* codes) {
    const qnum::group_params gp = qnum::detail::params_from_stored(s, float_to_bits(sc), 0, 0.0f);
    for (int i = 0; i < 10; ++i) CHECK(float_to_bits(qnum::dequantize_value(s, gp, codes[i])) == canon);
    float f[10];
    std::uint16_t h[10], b[10];
    const auto cv = qnum::view(codes, 1, 10);
    REQUIRE(qnum::dequantize(s, cv, qnum::per_row(), sv, {}, qnum::view(f, 1, 10)) == qnum::status::ok);
    REQUIRE(qnum::dequantize(s, cv, qnum::per_row(), sv, {}, qnum::view(b, 1, 10, -1, qnum::dtype::bf16)) == qnum::status::ok);
    REQUIRE(qnum::dequantize(s, cv, qnum::per_row(), sv, {}, qnum::view(h, 1, 10, -1, qnum::dtype::fp16)) == qnum::status::ok);
    for (int i = 0; i < 10; ++i) {
      CHECK(float_to_bits(f[i]) == canon);
      CHECK(b[i] == 0x7FC0);
      CHECK(h[i] == 0x7E00);
    }
  };
  check_row(qnum::float_amax<qnum::fp8_e4m3>(), e4);
  check_row(qnum::float_amax<qnum::fp8_e5m2>(), e5);

  // Fake quantization of NaN inputs of both signs and with payloads (FP8 keeps NaN; E2M1 and integers do not).
  float x[12];
  for (int i = 0; i < 12; ++i) x[i] = from_bits((i % 2 ? 0xFF800001u : 0x7FC00000u) + static_cast<std::uint32_t>(i) * 0x1000u);
  float y[12];
  REQUIRE(qnum::fake_quantize(p::deepgemm_fp8, qnum::view(static_cast<const float*>(x), 1, 12), p::deepseek_act, qnum::view(y, 1, 12)) ==
          qnum::status::ok);
  for (float v : y) CHECK(float_to_bits(v) == canon);
  REQUIRE(qnum::fake_quantize(p::te_fp8_current_e5m2, qnum::view(static_cast<const float*>(x), 1, 12), qnum::per_tensor(),
                              qnum::view(y, 1, 12)) == qnum::status::ok);
  for (float v : y) CHECK(float_to_bits(v) == canon);

  // A NaN stored scale (any payload, either sign) for an integer scheme: SIMD lanes, generic loop, primitive.
  for (const std::uint32_t nb : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FA5A5A5u}) {
    const float ns = from_bits(nb);
    const qnum::scale_view nsv{const_cast<float*>(&ns), 1, 1, 1, 4};
    const std::uint8_t codes[9] = {1, 2, 3, 0, 0xF9, 7, 5, 6, 0xF1};
    float o[9];
    REQUIRE(qnum::dequantize(p::slime_int4_qat, qnum::view(codes, 1, 9), qnum::per_row(), nsv, {}, qnum::view(o, 1, 9)) ==
            qnum::status::ok);
    for (float v : o) CHECK(float_to_bits(v) == canon);
    float w[8];
    qnum::dequantize_int4_word(0x12345678u, ns, 8, w);
    for (float v : w) CHECK(float_to_bits(v) == canon);
  }
  // GGUF blocks whose fp16 scale is a NaN of the other sign, with a payload.
  std::uint8_t blk[36] = {};
  blk[0] = 0x01;
  blk[1] = 0xFE;  // fp16 0xFE01
  for (int i = 2; i < 36; ++i) blk[i] = static_cast<std::uint8_t>(i * 7);
  float gy[32];
  qnum::gguf::dequantize_block_q8_0(blk, gy);
  for (float v : gy) CHECK(float_to_bits(v) == canon);
  qnum::gguf::dequantize_block_q4_0(blk, gy);
  for (float v : gy) CHECK(float_to_bits(v) == canon);
}

namespace {
float hostile(std::uint64_t i) {
  const std::uint32_t b = qnum::random_bits(9, i);
  switch (b % 13) {
    case 0: return qtest::from_bits(0x7FC00000u | (b & 0x80000000u));
    case 1: return qtest::from_bits(0x7F800000u | (b & 0x80000000u));
    case 2: return 0.0f;
    case 3: return qtest::from_bits(b & 0x807FFFFFu);  // subnormal
    case 4: return qtest::from_bits(b);                // any bits
    default: return qtest::from_bits((b & 0x8FFFFFFFu) | 0x38000000u);
  }
}
template <class F>
long device_rne_mismatches(const qnum::scheme<F>& s) {
  long bad = 0;
  for (std::uint64_t i = 0; i < 200000; ++i) {
    qnum::group_stats st;
    for (std::uint64_t e = 0; e < 4; ++e) qnum::accumulate(st, hostile(i * 8 + e));
    const qnum::group_params p = qnum::compute_params(s, st, i % 5 == 0 ? 0.001f : 0.0f);
    float x = hostile(i * 8 + 5);
    if (i % 7 == 0) x *= 1e30f;
    if (qnum::quantize_int_value(s, p, x, qnum::rne) != qnum::detail::quantize_int_rne_by_cvt(s, p, x)) ++bad;
  }
  return bad;
}
}  // namespace

TEST_CASE("the device's nearest-even integer path (round, then clamp the integer) == the definition") {
  namespace p = qnum::presets;
  using qnum::dtype;
  CHECK(qnum::detail::f2i_rn_sat(qtest::from_bits(0x7FC00000u)) == 0);
  CHECK(qnum::detail::f2i_rn_sat(3e9f) == 2147483647);
  CHECK(qnum::detail::f2i_rn_sat(-3e9f) == -2147483647 - 1);
  CHECK(qnum::detail::f2i_rn_sat(2.5f) == 2);
  CHECK(qnum::detail::f2i_rn_sat(-3.5f) == -4);
  CHECK(device_rne_mismatches(p::slime_int4_qat) == 0);
  CHECK(device_rne_mismatches(p::slime_int4_checkpoint) == 0);
  CHECK(device_rne_mismatches(p::ct_w4a16_sym_bf16) == 0);
  CHECK(device_rne_mismatches(p::ct_w4a16_asym) == 0);
  CHECK(device_rne_mismatches(p::torchao_int8_sym) == 0);
  CHECK(device_rne_mismatches(p::torchao_uint4_asym) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::quint8>().in_work(dtype::bf16).zero_before_round()) == 0);
  CHECK(device_rne_mismatches(qnum::asymmetric<qnum::qint4>().in_work(dtype::fp16)) == 0);
  CHECK(device_rne_mismatches(qnum::symmetric_restricted<qnum::qint8>().x_multiply().in_work(dtype::bf16)) == 0);
}

namespace {

// Element for the fast-statistics test: NaN (any sign and payload), +-Inf, +-0, subnormals, +-FLT_MAX, and
// finite values over the whole exponent range.
float stats_value(std::uint32_t b) {
  const std::uint32_t sign = b & 0x80000000u;
  switch ((b >> 8) % 16) {
    case 0: return qnum::detail::bits_to_float(0x7F800001u | sign | (b & 0x3FFFFFu));  // NaN
    case 1: return qnum::detail::bits_to_float(0x7F800000u | sign);                     // +-Inf
    case 2:
    case 3: return qnum::detail::bits_to_float(sign);                                   // +-0
    case 4: return qnum::detail::bits_to_float(sign | (b & 0x7FFFFFu) | 1u);            // subnormal
    case 5: return qnum::detail::bits_to_float(sign | 0x7F7FFFFFu);                     // +-FLT_MAX
    default: break;
  }
  const std::uint32_t r = qnum::random_bits(7, b);
  return qnum::detail::bits_to_float(sign | (r % 0x7F000000u) | (r & 0x7FFFu));  // finite, any exponent below the top
}

bool same_params(const qnum::group_params& a, const qnum::group_params& b) {
  return qtest::bits(a.scale) == qtest::bits(b.scale) && qtest::bits(a.code_scale) == qtest::bits(b.code_scale) &&
         qtest::bits(a.inv) == qtest::bits(b.inv) && a.zero == b.zero && a.scale_code == b.scale_code;
}

// The device's fast statistics (fragment_stats: detail::fast_accumulate per fragment, fast_stats_finish, then
// fast_merge across the sub-group) against accumulate() over the same group: a non-finite result must come
// exactly when an element is infinite (the kernels then recompute with accumulate), and a finite one must give
// compute_params' parameters bit for bit, whatever sign the hardware gives a zero minimum, maximum or amax.
template <class F>
std::uint64_t fast_stats_mismatches(const qnum::scheme<F>& s, std::uint32_t seed) {
  const bool mm = s.kind == qnum::scheme_kind::asymmetric;
  std::uint64_t bad = 0;
  for (std::uint32_t t = 0; t < 20000; ++t) {
    const std::uint32_t shape = qnum::random_bits(seed, t);
    const int frags = 1 + static_cast<int>(shape % 4), per = 1 + static_cast<int>((shape >> 4) % 16);
    const std::uint32_t flavour = (shape >> 12) % 4;  // 0: hostile mix; 1: finite only; 2: zeros and NaN; 3: one sign
    qnum::group_stats exact, fast;
    bool has_inf = false;
    for (int f = 0; f < frags; ++f) {
      qnum::group_stats part;
      for (int i = 0; i < per; ++i) {
        std::uint32_t b = qnum::random_bits(seed + 1, std::uint64_t{t} * 64u + static_cast<std::uint64_t>(f * per + i));
        if (flavour == 1 && ((b >> 8) % 16) < 2) b += 2u << 8;
        if (flavour == 2) b = (b & ~0xFF00u) | ((b % 2 ? 0u : 2u) << 8);
        if (flavour == 3) b &= 0x7FFFFFFFu;
        const float x = stats_value(b);
        has_inf = has_inf || std::isinf(x);
        qnum::accumulate(exact, x);
        qnum::detail::fast_accumulate(part, x, mm);
      }
      qnum::detail::fast_stats_finish(part, mm);
      fast = f == 0 ? part : qnum::detail::fast_merge(fast, part, mm);
    }
    if (qnum::detail::fast_stats_need_exact(fast) != has_inf) {
      ++bad;
      continue;
    }
    if (has_inf) continue;
    const qnum::group_params want = qnum::compute_params(s, exact);
    for (int v = 0; v < 8; ++v) {  // each zero statistic with either sign
      qnum::group_stats st = fast;
      if ((v & 1) && st.min == 0.0f) st.min = -st.min;
      if ((v & 2) && st.max == 0.0f) st.max = -st.max;
      if ((v & 4) && st.amax == 0.0f) st.amax = -st.amax;
      if (!same_params(qnum::compute_params(s, st), want)) ++bad;
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("device fast statistics (fmin/fmax chains) give accumulate()'s group parameters, every preset") {
  namespace p = qnum::presets;
  CHECK(fast_stats_mismatches(p::slime_int4_qat, 1) == 0);
  CHECK(fast_stats_mismatches(p::slime_int4_checkpoint, 2) == 0);
  CHECK(fast_stats_mismatches(p::ct_w4a16_sym, 3) == 0);
  CHECK(fast_stats_mismatches(p::ct_w4a16_sym_bf16, 4) == 0);
  CHECK(fast_stats_mismatches(p::ct_w4a16_asym, 5) == 0);
  CHECK(fast_stats_mismatches(p::ct_fp8, 6) == 0);
  CHECK(fast_stats_mismatches(p::int8_sym, 7) == 0);
  CHECK(fast_stats_mismatches(p::torchao_int4_sym, 8) == 0);
  CHECK(fast_stats_mismatches(p::torchao_int8_sym, 9) == 0);
  CHECK(fast_stats_mismatches(p::torchao_uint4_asym, 10) == 0);
  CHECK(fast_stats_mismatches(p::torchao_uint8_asym, 11) == 0);
  CHECK(fast_stats_mismatches(p::deepgemm_fp8, 12) == 0);
  CHECK(fast_stats_mismatches(p::deepgemm_fp8_ue8m0, 13) == 0);
  CHECK(fast_stats_mismatches(p::te_fp8_current, 14) == 0);
  CHECK(fast_stats_mismatches(p::te_fp8_current_e5m2, 15) == 0);
  CHECK(fast_stats_mismatches(p::mxfp8_rceil, 16) == 0);
  CHECK(fast_stats_mismatches(p::mxfp4, 17) == 0);
  CHECK(fast_stats_mismatches(p::nvfp4, 18) == 0);
  CHECK(fast_stats_mismatches(p::ct_fp4, 19) == 0);
}

TEST_CASE("conveniences: mutable input views, dequantize without zero points, fake_quantize with an outer scale") {
  const std::int64_t R = 6, C = 70;
  auto x = adversarial(R * C, 99);
  for (auto& v : x)
    if (!std::isfinite(v) || std::fabs(v) > 1e30f) v = 1.5f;
  const auto s = qnum::presets::int8_sym;
  const qnum::extent e = qnum::scale_shape(R, C, qnum::group_size(32));
  CHECK(e.rows == R);
  CHECK(e.cols == 3);
  std::vector<std::uint8_t> c1(x.size()), c2(x.size());
  std::vector<float> s1(static_cast<std::size_t>(e.rows * e.cols)), s2(s1.size());
  // A view of mutable floats goes straight in; the same bits as the const view.
  REQUIRE(qnum::quantize(s, qnum::view(x.data(), R, C), qnum::group_size(32), qnum::view(c1.data(), R, C),
                         qnum::scales_of(s1.data(), e.rows, e.cols)) == qnum::status::ok);
  REQUIRE(qnum::quantize(s, qnum::view<const float>(x.data(), R, C), qnum::group_size(32), qnum::view(c2.data(), R, C),
                         qnum::scales_of(s2.data(), e.rows, e.cols)) == qnum::status::ok);
  CHECK(c1 == c2);
  CHECK(std::memcmp(s1.data(), s2.data(), s1.size() * 4) == 0);
  // dequantize without zero points == with an empty zero view; the codes view may be mutable too.
  std::vector<float> d1(x.size()), d2(x.size());
  REQUIRE(qnum::dequantize(s, qnum::view(c1.data(), R, C), qnum::group_size(32), qnum::scales_of(s1.data(), e.rows, e.cols),
                           qnum::view(d1.data(), R, C)) == qnum::status::ok);
  REQUIRE(qnum::dequantize(s, qnum::view<const std::uint8_t>(c1.data(), R, C), qnum::group_size(32),
                           qnum::scales_of(s1.data(), e.rows, e.cols), {}, qnum::view(d2.data(), R, C)) == qnum::status::ok);
  CHECK(std::memcmp(d1.data(), d2.data(), d1.size() * 4) == 0);
  // An asymmetric scheme without zero points is refused, not read from null.
  CHECK(qnum::dequantize(qnum::presets::torchao_uint8_asym, qnum::view(c1.data(), R, C), qnum::group_size(32),
                         qnum::scales_of(s1.data(), e.rows, e.cols), qnum::view(d1.data(), R, C)) == qnum::status::null_pointer);
  // fake_quantize with an outer scale, no rounding argument; and decode_scale gives dequantize's scale.
  const auto nv = qnum::presets::nvfp4;
  std::vector<float> f1(x.size()), f2(x.size());
  REQUIRE(qnum::fake_quantize(nv, qnum::view(x.data(), R, C), qnum::group_size(16), qnum::view(f1.data(), R, C), 0.25f) == qnum::status::ok);
  REQUIRE(qnum::fake_quantize(nv, qnum::view<const float>(x.data(), R, C), qnum::group_size(16), qnum::view(f2.data(), R, C),
                              qnum::nearest_even(), 0.25f) == qnum::status::ok);
  CHECK(std::memcmp(f1.data(), f2.data(), f1.size() * 4) == 0);
  for (std::uint32_t code : {0u, 1u, 0x38u, 0x7Eu}) {
    const qnum::group_params p = qnum::decode_scale(nv, code, 0, 0.25f);
    CHECK(qtest::bits(p.scale) == qtest::bits(qnum::mul_rn(qnum::decode<qnum::ue4m3>(code), 0.25f)));
  }
  // scale_shape: whole extents, tails, 2-D blocks, empty and invalid shapes.
  CHECK(qnum::scale_shape(5, 77, qnum::per_row()).rows == 5);
  CHECK(qnum::scale_shape(5, 77, qnum::per_row()).cols == 1);
  CHECK(qnum::scale_shape(5, 77, qnum::per_tensor()).rows == 1);
  CHECK(qnum::scale_shape(130, 260, qnum::block(128, 128)).rows == 2);
  CHECK(qnum::scale_shape(130, 260, qnum::block(128, 128)).cols == 3);
  CHECK(qnum::scale_shape(0, 64, qnum::group_size(32)).rows == 0);
  CHECK(qnum::scale_shape(4, 64, qnum::group_size(-1)).cols == 0);
}
