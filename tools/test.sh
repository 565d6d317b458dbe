#!/usr/bin/env bash
# The README's test command (and CI's, through .ci/run): install what is missing, then
#   1. build everything and run every test suite (the normal build, with the 2^32 exhaustive sweep);
#   2. the compiler matrix (tools/compiler_matrix.py, from stage 1's configure): every public header, the
#      host unit tests and the examples through g++ 12 in C++20, clang 14 in C++17 and clang 19 in C++20,
#      -fsyntax-only with -Werror (stage 1 is g++ 12 in C++17: it builds and runs everything);
#   3. build and run the host suites again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build dir "<build>-asan", -Og, one SIMD target: the machine's best, SSE2 in test_host_simd on AVX-512; no exhaustive sweep, no CUDA,
#      halt on the first UB report);
#   4. fuzz every libFuzzer target for QNUM_FUZZ_SECONDS (default 24 here) each (tools/fuzz.sh, clang),
#      after replaying its committed corpus (stages 1 and 3 replay the corpora only when stage 4 is skipped);
#   5. check every packaging path with a tiny consumer project (tools/test-packaging.sh), alongside 4;
#   6. on x86-64: build the host suites for aarch64 (tools/cross/aarch64-linux-gnu.ini: g++ 12's cross compiler,
#      -Og, the NEON lanes) and run them under qemu's user-mode emulator (build dir "<build>-aarch64").
# Every build is configured with -Dwerror=true: warnings are errors in the project's own test runs, never
# in a user's plain `meson setup` build. CUDA code is compiled for one architecture: QNUM_GPU_ARCH, else
# the local GPU's, else 90 (tools/gpu-env.sh); a user's build keeps the gpu_arch default (80, 90). Without a
# GPU, device code is compiled at -O0 (-Ddevice_opt=0): it must compile warning-free, it never runs.
# Prints the wall time of every stage, then one line "N passed, N failed, N skipped" (test cases,
# doctest's counts summed, one case per fuzz target, per packaging path and per matrix check); exits
# non-zero on any failure.
# QNUM_SKIP_STAGES="matrix asan fuzz packaging aarch64" (any subset) leaves stages out, for quick local runs.
# QNUM_MATRIX="COMPILER:STD[:CHECKS] ..." replaces the matrix's entries (tools/compiler_matrix.py).
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/gpu-env.sh  # the CUDA toolkit on PATH; arch
# Without a GPU the device code only has to compile (and be warning-free): skip the device optimiser there
# (QNUM_CUDA_DEVICE_OPT overrides; a machine with a GPU runs the device tests at the default, 3).
device_opt=${QNUM_CUDA_DEVICE_OPT:-$([ $have_smi = 1 ] && echo 3 || echo 0)}

builddir=${QNUM_BUILD_DIR:-build}
skip=" ${QNUM_SKIP_STAGES:-} "
status=0
logs=()
t_all=$(date +%s)
timings=()

# Run a command and record its wall time (printed now and again in a table before the summary).
timed() {  # label command...
  local label=$1 t0 rc
  shift
  t0=$(date +%s)
  "$@"
  rc=$?
  timings+=("$(printf '%-44s %5d s' "$label" $(($(date +%s) - t0)))")
  echo "qnum: time: ${timings[-1]}"
  return $rc
}

# Everything the stages need, installed up front (stages 4 and 5 run at the same time: one apt at a time).
extra=()
[[ $skip == *" fuzz "* ]] || extra+=(clang libclang-rt-14-dev)
[[ $skip == *" packaging "* ]] || extra+=(cmake)
# (clang 19 in C++17 and clang 14 in C++20 are left out for CI time: clang 14 in C++17 and clang 19 in C++20 bracket
# both, and g++ 12 runs both standards; g++ 12 in C++20 and clang 14 in C++17 check the headers and examples, not the
# tests, which stage 1 compiles with g++ 12 in C++17 and clang 19 checks in C++20; clang 14 also compiles the fuzz
# targets in stage 4.)
matrix=${QNUM_MATRIX:-g++-12:c++20:headers,examples clang++-14:c++17:headers,examples clang++-19:c++20}
[[ $skip == *" matrix "* ]] || extra+=(g++-12 clang-14 clang-19)
# Stage 6 only where the build machine is not an Arm one already (there stage 1 runs the NEON lanes natively).
[ "$(uname -m)" = x86_64 ] || skip+="aarch64 "
[[ $skip == *" aarch64 "* ]] || extra+=(g++-12-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
timed "install-deps" bash tools/install-deps.sh "${extra[@]}" || exit 1

# A stage that could not even build counts as one failed test case.
stage_failed() {  # name logfile
  mkdir -p "$(dirname "$2")"
  printf '{"name": "%s", "result": "FAIL", "stdout": ""}\n' "$1" > "$2"
  logs+=("$2")
  status=1
}

setup() {  # dir [meson options...]
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null
  else
    meson setup "$dir" -Dwerror=true "$@" >/dev/null
  fi
}

# Build only what a build dir's tests run (the targets `meson test` would build first).
build_tests() {  # dir [-x test]...
  local targets
  targets=$(python3 tools/test_targets.py "$@") || return 1
  # shellcheck disable=SC2086
  ninja -C "$1" $targets
}

# Stages 3 and 6: configure dir with the options given, build only the tests it runs (less those skipped, by -x
# NAME), run them. A stage that cannot build counts as one failed test case.
tests_stage() {  # label dir "-x NAME ..." [meson options...]
  local label=$1 dir=$2 skips=$3
  shift 3
  # shellcheck disable=SC2086
  if timed "$label: configure" setup "$dir" "$@" && timed "$label: build" build_tests "$dir" $skips; then
    # shellcheck disable=SC2046,SC2086
    timed "$label: test" meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
      $(python3 tools/test_targets.py "$dir" --names $skips) || status=1
    logs+=("$dir/meson-logs/testlog.json")
  else
    stage_failed "build ($dir, $label)" "$dir/meson-logs/build-failed.json"
  fi
}

# The QNUM_HOST_SIMD_TARGETS mask of this machine's best host SIMD target (tools/simd-best.sh).
simd_mask=$(bash tools/simd-best.sh)
# test_host_simd's lanes (-Dtest_simd_lanes): on an x86-64 machine with AVX-512 the main build compiles the AVX-512
# lanes into it and the ASan build the SSE2 lanes (test_host_simd_avx2 has the AVX2 ones): each target compiled once
# a run, and the SSE2 lanes under the sanitizers (the other ASan tests run the AVX-512 ones). Elsewhere
# tests/meson.build's rule (an AVX2 machine: SSE2 in the main build, AVX2 in test_host_simd_avx2 and under ASan).
main_lanes=()
asan_lanes=()
if [ "$(uname -m)" = x86_64 ] && [ "$simd_mask" = 4 ]; then
  main_lanes=(-Dtest_simd_lanes=4)
  asan_lanes=(-Dtest_simd_lanes=1)
fi
# The fuzz corpus replays (unit tests of the normal and ASan builds) only where stage 4 does not run: libFuzzer runs
# every committed input through the same property checks under ASan + UBSan there before it fuzzes.
replay=true
[[ $skip == *" fuzz "* ]] || replay=false

# 1. The normal build: every target (header checks, tools, benchmarks, CUDA), then every suite. The test
# programs that run only this machine's best host SIMD target compile only its lanes (-Dtest_simd_targets);
# those that compare targets (test_host_simd, test_pack, ..., the exhaustive sweep) compile every one.
if timed "main: configure" setup "$builddir" -Dgpu_arch="$arch" -Ddevice_opt="$device_opt" -Dtest_simd_targets="$simd_mask" \
      "${main_lanes[@]}" -Dfuzz_replay=$replay &&
   timed "main: build" ninja -C "$builddir"; then
  timed "main: test" meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || status=1
  logs+=("$builddir/meson-logs/testlog.json")
else
  stage_failed "build ($builddir)" "$builddir/meson-logs/build-failed.json"
fi

# 2. The compiler matrix: stage 1's compile commands (its configure step) through each COMPILER:STD,
# -fsyntax-only (front-end warnings, every template instantiated; nothing linked or run: stage 1 does
# that). Three test cases per entry: headers, tests, examples.
if [[ $skip != *" matrix "* ]]; then
  for e in $matrix; do "${e%%:*}" --version | head -n 1; done
  rm -f "$builddir-matrix/testlog.json"
  timed "matrix: headers, tests, examples" python3 tools/compiler_matrix.py "$builddir" "$builddir-matrix" $matrix || status=1
  if [ -f "$builddir-matrix/testlog.json" ]; then
    logs+=("$builddir-matrix/testlog.json")
  else
    stage_failed "compiler matrix" "$builddir-matrix/build-failed.json"
  fi
fi

# 3. The host suites under ASan + UBSan. No suppressions: any report fails the test that made it.
# -Og: the sanitizers need no optimiser; measured on test_host_simd.cpp, an instrumented compile took
# 2.5 times as long at -O1 (and -O3 three times -O1), while -O0 made the run 3.5 times slower. Only the
# machine's best host SIMD target is compiled in (QNUM_HOST_SIMD_TARGETS, host/simd.hpp;
# tools/simd-best.sh): the other targets' lanes are the same code at another width, run (unsanitized) in
# stage 1, and each target compiled in costs compile time in every test that quantizes (test_host_simd takes the
# SSE2 lanes instead where the machine has AVX-512: asan_lanes above). Only the tests'
# targets are built (the header checks compile in stage 1), less test_host_simd_avx2: with one target it
# would repeat test_host_simd with the generic loops built with -mavx2 -mfma, a numerical check of stage 1
# (and, as in stage 1, the fuzz corpus replays only where stage 4 does not run).
if [[ $skip != *" asan "* ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  tests_stage asan "$builddir-asan" "-x test_host_simd_avx2" -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args="-fno-sanitize-recover=all -DQNUM_HOST_SIMD_TARGETS=$simd_mask" -Doptimization=g -Dexhaustive=false \
    -Dcuda=disabled -Dbenchmarks=disabled -Dfuzz_replay=$replay "${asan_lanes[@]}"
fi

# 5. Packaging (install to a temporary prefix, then build the four consumer projects) runs in the
# background during stage 4: it is mostly serial, and the fuzz build leaves a core idle while its longest
# file compiles. Its output is printed once stage 4 is done.
pkgdir="$builddir-packaging"
if [[ $skip != *" packaging "* ]]; then
  mkdir -p "$pkgdir"
  rm -f "$pkgdir/testlog.json" "$pkgdir/stage.rc"
  (
    t0=$(date +%s)
    QNUM_PACKAGING_DIR="$pkgdir" bash tools/test-packaging.sh > "$pkgdir/stage.log" 2>&1
    echo "$? $(($(date +%s) - t0))" > "$pkgdir/stage.rc"
  ) &
  pkgpid=$!
fi

# 4. Fuzzing (clang + libFuzzer; tools/fuzz.sh installs them): a smoke run, QNUM_FUZZ_SECONDS per target
# (24 unless set; tools/fuzz.sh alone: 60), all five at once (QNUM_FUZZ_JOBS: one round of wall time, each target
# about 10 s of a core); the targets in QNUM_FUZZ_UNOPTIMIZED (groupquant unless set) compiled at -O0: a quarter of
# the stage's build time, half the inputs a second (tools/fuzz.sh).
if [[ $skip != *" fuzz "* ]]; then
  fuzzdir="$builddir-fuzz"
  rm -f "$fuzzdir/meson-logs/testlog.json"
  QNUM_FUZZ_BUILD_DIR="$fuzzdir" QNUM_FUZZ_SECONDS=${QNUM_FUZZ_SECONDS:-24} QNUM_FUZZ_JOBS=${QNUM_FUZZ_JOBS:-5} \
    QNUM_FUZZ_UNOPTIMIZED=${QNUM_FUZZ_UNOPTIMIZED-groupquant} \
    timed "fuzz: configure, build, run" bash tools/fuzz.sh || status=1
  if [ -f "$fuzzdir/meson-logs/testlog.json" ]; then
    logs+=("$fuzzdir/meson-logs/testlog.json")
  else
    stage_failed "fuzz build ($fuzzdir)" "$fuzzdir/meson-logs/build-failed.json"
  fi
fi

if [[ $skip != *" packaging "* ]]; then
  wait "$pkgpid"
  cat "$pkgdir/stage.log"
  read -r pkgrc pkgsecs < "$pkgdir/stage.rc" || pkgrc=1
  timings+=("$(printf '%-44s %5s s' "packaging (alongside fuzz)" "${pkgsecs:-?}")")
  echo "qnum: time: ${timings[-1]}"
  [ "$pkgrc" = 0 ] || status=1
  if [ -f "$pkgdir/testlog.json" ]; then
    logs+=("$pkgdir/testlog.json")
  else
    stage_failed "packaging" "$pkgdir/testlog.json"
  fi
fi

# 6. The host suites built for aarch64 and run under qemu-aarch64 (the cross file's exe_wrapper): the NEON lanes
# against the per-element definitions (test_host_simd), the engines on them, and every scalar definition under
# aarch64's defaults (GCC contracts a * b + c into one FMA there unless told not to; the definitions must not
# change a bit). -Og and one target as in stage 3 (about 70 s to build here). Left out for CI time: the exhaustive
# sweep (2^32 inputs, hours under emulation; test_host_simd covers every exponent and rounding pattern of the
# lanes), the two examples that train for tens of emulated seconds, test_convert (qnum-convert end to end: a
# minute of compiling; its numerics are the engines the other tests run) and the fuzz corpus replays (35 s of
# compiling; stage 4 runs them on x86-64). `meson test -C <build>-aarch64` afterwards builds and runs the tests
# left out (reconfigure with -Dfuzz_replay=true for the replays).
# doctest and nlohmann_json are header-only: the cross compiler sees links to them, not the build machine's
# /usr/include.
if [[ $skip != *" aarch64 "* ]]; then
  a64dir="$builddir-aarch64"
  mkdir -p "$a64dir-include"
  a64inc=$(cd "$a64dir-include" && pwd)
  for h in doctest nlohmann; do ln -sfn "/usr/include/$h" "$a64inc/$h"; done
  tests_stage aarch64 "$a64dir" "-x example_qgalore_convergence -x example_qat_loop -x test_convert" \
    --cross-file tools/cross/aarch64-linux-gnu.ini -Dcpp_args="-isystem$a64inc" -Doptimization=g -Dexhaustive=false \
    -Dcuda=disabled -Dbenchmarks=disabled -Dfuzz_replay=false
fi

timings+=("$(printf '%-44s %5d s' total $(($(date +%s) - t_all)))")
echo "qnum: wall time per stage:"
printf '  %s\n' "${timings[@]}"
python3 tools/test_summary.py "${logs[@]}" || status=1
exit $status
