// tests/test_format.cpp: the format descriptors against docs/formats.md and against first principles.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "qnum/codec.hpp"
#include "qnum/format.hpp"
#include "test_util.hpp"

namespace {

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string cell;
  std::getline(ss, cell, '|');  // before the first bar
  while (std::getline(ss, cell, '|')) {
    const auto b = cell.find_first_not_of(" `");
    const auto e = cell.find_last_not_of(" `");
    cells.push_back(b == std::string::npos ? std::string() : cell.substr(b, e - b + 1));
  }
  if (!cells.empty() && cells.back().empty()) cells.pop_back();
  return cells;
}

std::map<std::string, std::vector<std::string>> doc_table() {
  std::map<std::string, std::vector<std::string>> rows;
  std::stringstream ss(qtest::read_text(QNUM_DOCS_DIR "/formats.md"));
  std::string line;
  while (std::getline(ss, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    auto cells = split_row(line);
    if (cells.size() == 12) rows[cells[0]] = cells;
  }
  return rows;
}

std::string code_str(std::uint32_t c, bool present) {
  if (!present) return "-";
  std::stringstream ss;
  ss << "0x" << std::hex << c;
  return ss.str();
}

template <class F>
void check_against_doc(const std::map<std::string, std::vector<std::string>>& rows) {
  CAPTURE(F::name);
  auto it = rows.find(F::name);
  REQUIRE(it != rows.end());
  const auto& c = it->second;
  CHECK(std::stoi(c[1]) == F::bits);
  CHECK(c[2] == (F::is_signed ? "yes" : "no"));
  CHECK(std::stoi(c[3]) == F::exponent_bits);
  CHECK(std::stoi(c[4]) == F::mantissa_bits);
  CHECK(std::stoi(c[5]) == F::bias);
  CHECK(static_cast<float>(std::strtod(c[6].c_str(), nullptr)) == F::max_value);
  CHECK(static_cast<float>(std::strtod(c[7].c_str(), nullptr)) == F::min_normal);
  CHECK(static_cast<float>(std::strtod(c[8].c_str(), nullptr)) == F::min_subnormal);
  CHECK(c[9] == code_str(F::max_code, true));
  CHECK(c[10] == code_str(F::nan_code, F::has_nan));
  CHECK(c[11] == code_str(F::inf_code, F::has_inf));
}

}  // namespace

TEST_CASE("docs/formats.md agrees with every descriptor") {
  const auto rows = doc_table();
  CHECK(rows.size() == 11);
  check_against_doc<qnum::qint4>(rows);
  check_against_doc<qnum::quint4>(rows);
  check_against_doc<qnum::qint8>(rows);
  check_against_doc<qnum::quint8>(rows);
  check_against_doc<qnum::fp8_e4m3>(rows);
  check_against_doc<qnum::fp8_e5m2>(rows);
  check_against_doc<qnum::fp4_e2m1>(rows);
  check_against_doc<qnum::ue4m3>(rows);
  check_against_doc<qnum::e8m0>(rows);
  check_against_doc<qnum::bf16>(rows);
  check_against_doc<qnum::fp16>(rows);
}

TEST_CASE_TEMPLATE("descriptor constants are what their codes decode to", F, qnum::fp8_e4m3, qnum::fp8_e5m2,
                   qnum::fp4_e2m1, qnum::ue4m3, qnum::e8m0, qnum::bf16, qnum::fp16) {
  CAPTURE(F::name);
  CHECK(qnum::decode<F>(F::max_code) == F::max_value);
  // The code after max_code is not finite (or does not exist).
  const std::uint32_t next = F::max_code + 1;
  if (next < (1u << (F::bits - (F::is_signed ? 1 : 0)))) {
    CHECK_FALSE(std::isfinite(qnum::decode<F>(next)));
  }
  if constexpr (F::special != qnum::special_encoding::exponent_only) {
    CHECK(qnum::decode<F>(1) == F::min_subnormal);
    CHECK(qnum::decode<F>(1u << F::mantissa_bits) == F::min_normal);
    CHECK(qnum::decode<F>(0) == 0.0f);
  } else {
    CHECK(qnum::decode<F>(0) == F::min_value);
  }
  if constexpr (F::has_nan) CHECK(std::isnan(qnum::decode<F>(F::nan_code)));
  if constexpr (F::has_inf) CHECK(qnum::decode<F>(F::inf_code) == INFINITY);
  if constexpr (F::is_signed) CHECK(F::min_value == -F::max_value);
}

TEST_CASE_TEMPLATE("integer descriptors", F, qnum::qint4, qnum::quint4, qnum::qint8, qnum::quint8) {
  CAPTURE(F::name);
  CHECK(F::qmax - F::qmin + 1 == (1 << F::bits));
  CHECK(F::max_value == static_cast<float>(F::qmax));
  CHECK(F::min_value == static_cast<float>(F::qmin));
  CHECK(qnum::code_to_int<F>(F::max_code) == F::qmax);
  CHECK(sizeof(qnum::code_t<F>) == 1);
  // Every integer of the range survives storage: the code of q (its low bits) gives q back, so a caller that
  // holds q (the device's fake quantization) may dequantize it without the code.
  constexpr std::uint32_t mask = (1u << F::bits) - 1u;
  int bad = 0;
  for (int q = F::qmin; q <= F::qmax; ++q) bad += qnum::code_to_int<F>(static_cast<std::uint32_t>(q) & mask) != q;
  CHECK(bad == 0);
}

TEST_CASE("qmin/qmax of float formats") {
  CHECK(qnum::fp8_e4m3::qmax == 448);
  CHECK(qnum::fp8_e4m3::qmin == -448);
  CHECK(qnum::fp8_e5m2::qmax == 57344);
  CHECK(qnum::fp4_e2m1::qmax == 6);
  CHECK(qnum::ue4m3::qmin == 0);
  CHECK(qnum::e8m0::qmin == -127);
  CHECK(qnum::e8m0::qmax == 127);
  CHECK(sizeof(qnum::code_t<qnum::bf16>) == 2);
}

TEST_CASE("dtype: the run-time names of the storage formats") {
  static_assert(qnum::dtype_of<float> == qnum::dtype::fp32 && qnum::dtype_of<qnum::bf16> == qnum::dtype::bf16 &&
                    qnum::dtype_of<qnum::fp16> == qnum::dtype::fp16 && qnum::dtype_of<qnum::e8m0> == qnum::dtype::e8m0 &&
                    qnum::dtype_of<qnum::ue4m3> == qnum::dtype::ue4m3,
                "dtype_of");
  // Bytes and names agree with the format descriptors.
  CHECK(qnum::dtype_bytes(qnum::dtype::fp32) == 4);
  CHECK(qnum::dtype_bytes(qnum::dtype::bf16) == (qnum::bf16::bits + 7) / 8);  // stored in whole bytes
  CHECK(qnum::dtype_bytes(qnum::dtype::fp16) == (qnum::fp16::bits + 7) / 8);  // stored in whole bytes
  CHECK(qnum::dtype_bytes(qnum::dtype::e8m0) == (qnum::e8m0::bits + 7) / 8);  // stored in whole bytes
  CHECK(qnum::dtype_bytes(qnum::dtype::ue4m3) == (qnum::ue4m3::bits + 7) / 8);  // stored in whole bytes
  CHECK(std::string(qnum::to_string(qnum::dtype::bf16)) == qnum::bf16::name);
  CHECK(std::string(qnum::to_string(qnum::dtype::fp16)) == qnum::fp16::name);
  CHECK(std::string(qnum::to_string(qnum::dtype::e8m0)) == qnum::e8m0::name);
  CHECK(std::string(qnum::to_string(qnum::dtype::ue4m3)) == qnum::ue4m3::name);
  CHECK(std::string(qnum::to_string(qnum::dtype::fp32)) == "fp32");
}
