// fuzz/fuzz_groupquant.hpp: what the translation units of fuzz_groupquant share: the input's header and
// the two halves of the dispatch (4-bit formats in groupquant_4bit.cpp, 8-bit formats in groupquant_8bit.cpp;
// the property checks in groupquant_run.hpp).
#pragma once

#include <cstdint>

#include "fuzz_util.hpp"

namespace qnum_fuzz::groupquant {

struct header {
  std::uint8_t fmt, kind, flags, pow2, store, work, eps_sel, in_type, out_type, rnd, group_sel, g1, g2;
  std::uint8_t rows, cols, pad, scale_pad, outer_sel, corrupt;
  std::uint64_t seed;
  float eps_raw, outer_raw;
};

inline header parse(qnum_fuzz::input& in) {
  header h;
  h.fmt = in.take<std::uint8_t>();
  h.kind = in.take<std::uint8_t>();
  h.flags = in.take<std::uint8_t>();
  h.pow2 = in.take<std::uint8_t>();
  h.store = in.take<std::uint8_t>();
  h.work = in.take<std::uint8_t>();
  h.eps_sel = in.take<std::uint8_t>();
  h.in_type = in.take<std::uint8_t>();
  h.out_type = in.take<std::uint8_t>();
  h.rnd = in.take<std::uint8_t>();
  h.group_sel = in.take<std::uint8_t>();
  h.g1 = in.take<std::uint8_t>();
  h.g2 = in.take<std::uint8_t>();
  h.rows = in.take<std::uint8_t>();
  h.cols = in.take<std::uint8_t>();
  h.pad = in.take<std::uint8_t>();
  h.scale_pad = in.take<std::uint8_t>();
  h.outer_sel = in.take<std::uint8_t>();
  h.corrupt = in.take<std::uint8_t>();
  h.seed = in.take<std::uint64_t>();
  h.eps_raw = in.take<float>();
  h.outer_raw = in.take<float>();
  return h;
}

// Runs the checks for element format fmt (h.fmt % 7): 0 int4, 1 uint4, 2 int8, 3 uint8, 4 e4m3, 5 e5m2, 6 e2m1;
// run_4bit takes 0, 1 and 6, run_8bit 2 to 5.
void run_4bit(const header& h, qnum_fuzz::input& in, int fmt);
void run_8bit(const header& h, qnum_fuzz::input& in, int fmt);

}  // namespace qnum_fuzz::groupquant
