#!/usr/bin/env bash
# Print the QNUM_HOST_SIMD_TARGETS mask (include/qnum/host/simd.hpp) that keeps only this machine's
# best host SIMD target: 4 AVX-512 (F/BW/DQ/VL), 2 AVX2, 1 SSE2 (elsewhere the mask is ignored: 1).
# tools/test.sh (the sanitizer build) and tools/fuzz.sh compile only that target: their programs run
# only on this machine, where every other target's lanes would be compiled and never run.
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { [[ " $flags " == *" $1 "* ]]; }
if has avx512f && has avx512bw && has avx512dq && has avx512vl; then
  echo 4
elif has avx2; then
  echo 2
else
  echo 1
fi
