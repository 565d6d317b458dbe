// tests/test_status.cpp: qnum/status.hpp, the one result type: every value has its own name, and CUDA errors
// (status_cuda_base + e) are told apart from the enumerators.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "qnum/status.hpp"

TEST_CASE("every status value has a distinct name; only the CUDA range is a CUDA error") {
  using qnum::status;
  const status all[] = {status::ok,          status::ok_zeroed_nonfinite, status::skipped_nonfinite,
                        status::null_pointer, status::misaligned,         status::bad_shape,
                        status::bad_stride,  status::bad_group,           status::bad_scale_buffer,
                        status::bad_bits,    status::bad_type,            status::bad_config,
                        status::code_out_of_range, status::non_finite,    status::scale_overflow};
  std::set<std::string> names;
  for (status s : all) {
    const std::string n = qnum::to_string(s);
    CAPTURE(n);
    CHECK(n != "unknown");
    CHECK(n != "cuda_error");
    CHECK(names.insert(n).second);
    CHECK_FALSE(qnum::is_cuda_error(s));
  }
  CHECK(names.size() == 15);
  CHECK(std::string(qnum::to_string(status::bad_group)) == "bad_group");
  CHECK(static_cast<int>(status::ok) == 0);
  // A CUDA error e travels as status_cuda_base + e (cudaError_t values are small positive integers).
  for (int e : {1, 2, 35, 100, 999}) {
    const auto s = static_cast<status>(qnum::status_cuda_base + e);
    CHECK(qnum::is_cuda_error(s));
    CHECK(std::string(qnum::to_string(s)) == "cuda_error");
  }
  CHECK(std::string(qnum::to_string(static_cast<status>(qnum::status_cuda_base - 1))) == "unknown");
  CHECK_FALSE(qnum::is_cuda_error(static_cast<status>(qnum::status_cuda_base - 1)));
}
