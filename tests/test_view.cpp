// tests/test_view.cpp: qnum/view.hpp, the one tensor type: construction, element access, the read-only
// conversion (same element type only) and the extent checks every entry point applies.
#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "qnum/view.hpp"

using qnum::matrix_view;
using qnum::status;

// A mutable view converts to the read-only view of its own element type, never to another type's.
static_assert(std::is_convertible<matrix_view<float>, matrix_view<const float>>::value, "");
static_assert(!std::is_convertible<matrix_view<const float>, matrix_view<float>>::value, "");
static_assert(!std::is_convertible<matrix_view<std::uint8_t>, matrix_view<const std::int8_t>>::value, "");
static_assert(!std::is_convertible<matrix_view<std::int32_t>, matrix_view<const float>>::value, "");

TEST_CASE("view(): default stride and dtype, 1 x n views, 16-bit formats") {
  std::vector<float> f(12);
  const auto a = qnum::view(f.data(), 3, 4);
  CHECK(a.rows == 3);
  CHECK(a.cols == 4);
  CHECK(a.row_stride == 4);
  CHECK(a.type == qnum::dtype::fp32);
  CHECK(a.contiguous());
  CHECK(a.size() == 12);
  const auto b = qnum::view(f.data(), 2, 4, 6);
  CHECK(b.row_stride == 6);
  CHECK_FALSE(b.contiguous());
  CHECK(qnum::view(f.data(), 1, 4, 6).contiguous());  // one row: the stride never matters
  const auto c = qnum::view(f.data(), 12);
  CHECK(c.rows == 1);
  CHECK(c.cols == 12);
  CHECK(c.row_stride == 12);
  std::vector<std::uint16_t> h(8);
  CHECK(qnum::view(h.data(), 2, 4).type == qnum::dtype::bf16);
  CHECK(qnum::view(h.data(), 8).type == qnum::dtype::bf16);
  CHECK(qnum::view<qnum::fp16>(h.data(), 2, 4).type == qnum::dtype::fp16);
  CHECK(qnum::view<qnum::bf16>(h.data(), 2, 4, 5).row_stride == 5);
}

TEST_CASE("element access follows the row stride; the read-only view sees the same elements") {
  std::vector<int> x(15);
  for (int i = 0; i < 15; ++i) x[i] = i;
  const auto v = qnum::view(x.data(), 3, 4, 5);
  CHECK(v(0, 0) == 0);
  CHECK(v(1, 0) == 5);
  CHECK(v(2, 3) == 13);
  v(1, 2) = 100;
  CHECK(x[7] == 100);
  const matrix_view<const int> r = v;
  CHECK(r.data == x.data());
  CHECK(r.row_stride == 5);
  CHECK(r(1, 2) == 100);
  CHECK(qnum::detail::as_const(v)(2, 3) == 13);
}

TEST_CASE("extent checks: shape, pointer, stride, in this order; empty views need no data") {
  float d[16] = {};
  using qnum::detail::check_extents;
  CHECK(check_extents(qnum::view(d, 4, 4)) == status::ok);
  CHECK(check_extents(qnum::view(d, -1, 4)) == status::bad_shape);
  CHECK(check_extents(qnum::view(d, 4, -1)) == status::bad_shape);
  CHECK(check_extents(qnum::view(static_cast<float*>(nullptr), 0, 4)) == status::ok);
  CHECK(check_extents(qnum::view(static_cast<float*>(nullptr), 4, 0)) == status::ok);
  CHECK(check_extents(qnum::view(static_cast<float*>(nullptr), 2, 4)) == status::null_pointer);
  CHECK(check_extents(qnum::view(static_cast<float*>(nullptr), 2, 4, 3)) == status::null_pointer);
  CHECK(check_extents(qnum::view(d, 2, 4, 3)) == status::bad_stride);
  CHECK(check_extents(qnum::view(d, 1, 4, 3)) == status::ok);  // one row: no stride to check
  // A view whose shape another argument fixes.
  CHECK(check_extents(qnum::view(d, 4, 4), 4, 4) == status::ok);
  CHECK(check_extents(qnum::view(d, 4, 4), 4, 3) == status::bad_shape);
  CHECK(check_extents(qnum::view(d, 4, 4), 3, 4) == status::bad_shape);
  CHECK(check_extents(qnum::view(static_cast<float*>(nullptr), 0, 0), 0, 0) == status::ok);
  CHECK(check_extents(qnum::view(static_cast<float*>(nullptr), 2, 2), 2, 2) == status::null_pointer);
}
