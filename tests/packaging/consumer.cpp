// tests/packaging/consumer.cpp: the program every packaging consumer builds: includes qnum the way a
// user would and checks a few exact results (exit 0 and "qnum consumer ok" on success).
#include <cstdio>

#include <qnum/qnum.hpp>

int main() {
  const unsigned e4m3 = qnum::encode<qnum::fp8_e4m3>(464.0f);    // rounds to 448 (0x7E)
  const float back = qnum::decode<qnum::fp8_e4m3>(0x7E);
  const unsigned i4 = qnum::encode<qnum::qint4>(-2.5f);           // RNE -> -2 -> 0xE
  const unsigned e8 = qnum::encode<qnum::e8m0>(3.0f, qnum::raz);  // ceil(log2 3) = 2 -> 129
  const bool ok = e4m3 == 0x7Eu && back == 448.0f && i4 == 0xEu && e8 == 129u;
  std::printf("qnum consumer %s (qnum %s)\n", ok ? "ok" : "FAILED", qnum::fp8_e4m3::name);
  return ok ? 0 : 1;
}
