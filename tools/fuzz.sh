#!/usr/bin/env bash
# Fuzz every target in fuzz/meson.build with libFuzzer (clang, ASan + UBSan) for QNUM_FUZZ_SECONDS
# seconds each (default 60), QNUM_FUZZ_JOBS at a time (default 2). Any finding (property violation, sanitizer report, crash,
# timeout) fails its test; the input is kept under <build>/fuzz/run_<target>/artifacts/.
# Build dir: QNUM_FUZZ_BUILD_DIR (default build-fuzz). Extra args go to meson test (e.g. a test name).
# Each target's libFuzzer stats and per-property counts land in <build>/fuzz/run_<target>/stats.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh clang libclang-rt-14-dev
dir=${QNUM_FUZZ_BUILD_DIR:-build-fuzz}
# The fuzz targets run the host SIMD lanes of the machine's best target only (the one chosen at run time):
# the others are not compiled in (QNUM_HOST_SIMD_TARGETS, tools/simd-best.sh), which shortens the build.
# -O1, libFuzzer's documented level, except the targets named in QNUM_FUZZ_UNOPTIMIZED (comma-separated, default
# none; -Dfuzz_unoptimized), compiled at -O0. tools/test.sh's smoke run names groupquant: measured 2026-11-28 (clang
# 14, 2 cores), its two check units compiled in about 22 s each at -O0 against 160-195 s at -O1, and the target ran
# about 600 inputs a second against 1120-1180 (the corpus replay is the same; the search gets half the inputs). The
# other targets compile beside them at -O1, and at -O0 ran 2.9 to 6.6 times fewer inputs.
opts=(-Dfuzz=enabled -Dtests=disabled -Dbenchmarks=disabled -Dcuda=disabled -Dexhaustive=false -Dwerror=true
      -Doptimization=1 -Dfuzz_unoptimized=${QNUM_FUZZ_UNOPTIMIZED:-}
      -Dcpp_args=-DQNUM_HOST_SIMD_TARGETS=$(bash tools/simd-best.sh))
if [ -f "$dir/build.ninja" ]; then
  meson setup --reconfigure "$dir" "${opts[@]}" >/dev/null
else
  CXX=${QNUM_FUZZ_CXX:-clang++} CC=${QNUM_FUZZ_CC:-clang} meson setup "$dir" "${opts[@]}" >/dev/null
fi
# Only the fuzz targets (not the examples or tools this configuration also defines).
# shellcheck disable=SC2046
ninja -C "$dir" $(python3 tools/test_targets.py "$dir" fuzz)
rm -rf "$dir"/fuzz/run_*/artifacts
meson test -C "$dir" --suite fuzz --no-rebuild --print-errorlogs --num-processes "${QNUM_FUZZ_JOBS:-2}" "$@"
