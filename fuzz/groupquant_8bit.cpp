// fuzz/groupquant_8bit.cpp: fuzz_groupquant's checks for the 8-bit formats: int8, uint8, fp8 e4m3 and e5m2
// (groupquant_run.hpp).
#include "groupquant_run.hpp"

void qnum_fuzz::groupquant::run_8bit(const header& h, qnum_fuzz::input& in, int fmt) {
  switch (fmt) {
    case 2: run_format<qnum::qint8>(h, in); break;
    case 3: run_format<qnum::quint8>(h, in); break;
    case 4: run_format<qnum::fp8_e4m3>(h, in); break;
    default: run_format<qnum::fp8_e5m2>(h, in); break;
  }
}
