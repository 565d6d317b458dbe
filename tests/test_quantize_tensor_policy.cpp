// tests/test_quantize_tensor_policy.cpp: the defined bad-input policy of quantize_tensor.hpp's host entry points
// (quantize, dequantize, fake_quantize, decode_scale): status codes for null pointers, shapes, strides, group
// sizes, scale buffers and dtypes; padded tails and strided views; stochastic rounding deterministic per
// (seed, index); degenerate and outer scales in every storage; canonical NaN outputs (layout/pack.hpp's and
// GGUF's dequantizers too); and fake_quantize == dequantize(quantize), never NaN for a finite input, for every
// preset over random and adversarial inputs. Expected values are worked out by hand or are the library's own
// other path (no golden file; the goldens are in test_quantize_tensor.cpp). The per-group parameters' policy is
// in test_scale.cpp, the per-element one in test_quantize.cpp.
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

TEST_CASE("stochastic rounding: deterministic per (seed, index)") {
  const auto s = qnum::symmetric_restricted<qnum::qint8>();
  std::vector<float> x(64, 0.3f), a(64), b(64);
  x[0] = 7.0f;
  REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(x.data(), 1, 64), qnum::per_row(), qnum::view(a.data(), 1, 64), qnum::stochastic_seed(3)) == qnum::status::ok);
  REQUIRE(qnum::fake_quantize(s, qnum::view<const float>(x.data(), 1, 64), qnum::per_row(), qnum::view(b.data(), 1, 64), qnum::stochastic_seed(3)) == qnum::status::ok);
  CHECK(a == b);
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
  // Outer scale with a huge stored scale and an Inf element: codes defined (UBSan-clean). sanitize_outer and
  // the finite code scale: test_scale.cpp; a NaN x / s giving the zero point: test_quantize.cpp.
  const auto asym = qnum::asymmetric<qnum::qint4>();
  fq_dq_agree(asym, {3.0e38f, std::numeric_limits<float>::infinity()}, 1.0f);
}

TEST_CASE("eps after storage: fake_quant == dequantize(quantize) with the rule after bf16 and ue4m3 storage") {
  // The schemes of test_scale.cpp's "eps after storage" (the parameters themselves are checked there).
  using qnum::dtype;
  const auto late = qnum::symmetric_full<qnum::qint4>().stored_as(dtype::bf16).eps_zero_to(0.0078125f).eps_after_storage();
  const auto fl = qnum::float_amax<qnum::fp4_e2m1>().stored_as(dtype::ue4m3).eps_floor(0.015625f).eps_after_storage();
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
