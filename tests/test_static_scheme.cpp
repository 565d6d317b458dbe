// tests/test_static_scheme.cpp: qnum/static_scheme.hpp: fixed_scheme carries every field of its preset,
// holders are recognised, and detail::fast_div (the kernels' multiply-high division) divides exactly.
#include <doctest/doctest.h>

#include <cstdint>

#include "qnum/detail/fast_div.hpp"
#include "qnum/presets.hpp"
#include "qnum/random.hpp"
#include "qnum/static_scheme.hpp"
#include "test_util.hpp"

namespace {
// Field by field through structured bindings: this compiles only while scheme<F> has exactly these eleven
// fields, so a field added to scheme fails here until fixed_scheme (which copies each one) carries it too.
template <class H>
bool same_scheme(const H&, const qnum::scheme<typename H::format>& b) {
  constexpr auto a = H::get();  // a constant expression: every field known to the compiler
  const auto& [k1, sb1, er1, e1, p1, st1, c1, x1, w1, zf1, zs1, es1] = a;
  const auto& [k2, sb2, er2, e2, p2, st2, c2, x2, w2, zf2, zs2, es2] = b;
  return k1 == k2 && sb1 == sb2 && er1 == er2 && qtest::bits(e1) == qtest::bits(e2) && p1 == p2 && st1 == st2 && c1 == c2 &&
         x1 == x2 && w1 == w2 && zf1 == zf2 && zs1 == zs2 && es1 == es2;
}
}  // namespace

TEST_CASE("fixed_scheme carries every field of its preset; fast_div divides exactly") {
  namespace p = qnum::presets;
  using qnum::fixed_scheme;
  CHECK(same_scheme(fixed_scheme<p::slime_int4_qat>{}, p::slime_int4_qat));
  CHECK(same_scheme(fixed_scheme<p::slime_int4_checkpoint>{}, p::slime_int4_checkpoint));
  CHECK(same_scheme(fixed_scheme<p::ct_w4a16_sym_bf16>{}, p::ct_w4a16_sym_bf16));
  CHECK(same_scheme(fixed_scheme<p::ct_w4a16_asym>{}, p::ct_w4a16_asym));
  CHECK(same_scheme(fixed_scheme<p::torchao_uint8_asym>{}, p::torchao_uint8_asym));
  CHECK(same_scheme(fixed_scheme<p::deepgemm_fp8_ue8m0>{}, p::deepgemm_fp8_ue8m0));
  CHECK(same_scheme(fixed_scheme<p::te_fp8_current>{}, p::te_fp8_current));
  CHECK(same_scheme(fixed_scheme<p::mxfp4>{}, p::mxfp4));
  CHECK(same_scheme(fixed_scheme<p::nvfp4>{}, p::nvfp4));
  CHECK(same_scheme(fixed_scheme<p::int8_sym>{}, p::int8_sym));
  CHECK(same_scheme(fixed_scheme<p::torchao_int8_sym>{}, p::torchao_int8_sym));
  CHECK(!same_scheme(fixed_scheme<p::int8_sym>{}, p::int8_sym.x_multiply()));  // the comparison sees a field
  CHECK(!same_scheme(fixed_scheme<p::int8_sym>{}, p::int8_sym.eps_after_storage()));
  static_assert(qnum::is_scheme_holder_v<fixed_scheme<p::nvfp4>> && qnum::is_scheme_holder_v<qnum::runtime_scheme<qnum::qint8>> &&
                    !qnum::is_scheme_holder_v<qnum::scheme<qnum::qint8>>,
                "holders");
  CHECK(same_scheme(fixed_scheme<p::nvfp4>{}, qnum::as_holder(p::nvfp4).get()));

  // fast_div: edge divisors and dividends, plus pseudo-random pairs, against the hardware division.
  std::uint64_t bad = 0;
  for (std::uint32_t k = 0; k < 4000; ++k) {
    std::uint32_t d = k < 64 ? k + 1 : (qnum::random_bits(41, k) & 0x7FFFFFFFu) % (k < 2000 ? 5000u : 0x7FFFFFFFu) + 1u;
    if (k == 64) d = 0x7FFFFFFFu;
    if (k == 65) d = 1u << 30;
    const qnum::detail::fast_div f(d);
    const std::uint32_t edge[] = {0u, 1u, d - 1u, d, d + 1u, 2u * d - 1u, 0x7FFFFFFFu, 0x7FFFFFFEu};
    for (std::uint32_t n : edge)
      if (n < 0x80000000u && f.div(n) != n / d) ++bad;
    for (std::uint32_t i = 0; i < 500; ++i) {
      const std::uint32_t n = qnum::random_bits(42, std::uint64_t{k} * 500u + i) & 0x7FFFFFFFu;
      if (f.div(n) != n / d) ++bad;
    }
  }
  CHECK(bad == 0);
}
