// fuzz/groupquant_4bit.cpp: fuzz_groupquant's checks for the 4-bit formats: int4, uint4, fp4 e2m1
// (groupquant_run.hpp).
#include "groupquant_run.hpp"

void qnum_fuzz::groupquant::run_4bit(const header& h, qnum_fuzz::input& in, int fmt) {
  switch (fmt) {
    case 0: run_format<qnum::qint4>(h, in); break;
    case 1: run_format<qnum::quint4>(h, in); break;
    default: run_format<qnum::fp4_e2m1>(h, in); break;
  }
}
