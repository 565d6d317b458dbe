#!/usr/bin/env bash
# The README's test command: install what is missing, then
#   1. build and run every test suite (the normal build, with the 2^32 exhaustive sweep);
#   2. build and run the host suites again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build dir "<build>-asan", no exhaustive sweep, no CUDA, halt on the first UB report);
#   3. fuzz every libFuzzer target for QNUM_FUZZ_SECONDS (default 60) each (tools/fuzz.sh, clang);
#   4. check every packaging path with a tiny consumer project (tools/test-packaging.sh).
# Prints one line "N passed, N failed, N skipped" (test cases, doctest's counts summed, one case per
# fuzz target and per packaging path) and exits non-zero on any failure.
# Every build is configured with -Dwerror=true: warnings are errors in the project's own test runs, never
# in a user's plain `meson setup` build.
# QNUM_SKIP_STAGES="asan fuzz packaging" (any subset) leaves stages out, for quick local runs.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"

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

timed "install-deps" bash tools/install-deps.sh || exit 1

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

# 1. The normal build and every suite.
if timed "main: configure" setup "$builddir" && timed "main: build" ninja -C "$builddir"; then
  timed "main: test" meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || status=1
  logs+=("$builddir/meson-logs/testlog.json")
else
  stage_failed "build ($builddir)" "$builddir/meson-logs/build-failed.json"
fi

# 2. The host suites under ASan + UBSan. No suppressions: any report fails the test that made it.
if [[ $skip != *" asan "* ]]; then
  asandir="$builddir-asan"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  if timed "asan: configure" setup "$asandir" -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args=-fno-sanitize-recover=all \
        -Dexhaustive=false -Dcuda=disabled -Dbenchmarks=disabled && timed "asan: build" ninja -C "$asandir"; then
    timed "asan: test" meson test -C "$asandir" --print-errorlogs --num-processes 2 || status=1
    logs+=("$asandir/meson-logs/testlog.json")
  else
    stage_failed "build ($asandir, ASan+UBSan)" "$asandir/meson-logs/build-failed.json"
  fi
fi

# 3. Fuzzing (clang + libFuzzer; tools/fuzz.sh installs them).
if [[ $skip != *" fuzz "* ]]; then
  fuzzdir="$builddir-fuzz"
  QNUM_FUZZ_BUILD_DIR="$fuzzdir" timed "fuzz: configure, build, run" bash tools/fuzz.sh || status=1
  if [ -f "$fuzzdir/meson-logs/testlog.json" ]; then
    logs+=("$fuzzdir/meson-logs/testlog.json")
  else
    stage_failed "fuzz build ($fuzzdir)" "$fuzzdir/meson-logs/build-failed.json"
  fi
fi

# 4. Packaging: install to a temporary prefix, then build the four consumer projects.
if [[ $skip != *" packaging "* ]]; then
  pkglog="$builddir-packaging/testlog.json"
  QNUM_PACKAGING_DIR="$builddir-packaging" timed "packaging" bash tools/test-packaging.sh || status=1
  if [ -f "$pkglog" ]; then
    logs+=("$pkglog")
  else
    stage_failed "packaging" "$pkglog"
  fi
fi

timings+=("$(printf '%-44s %5d s' total $(($(date +%s) - t_all)))")
echo "qnum: wall time per stage:"
printf '  %s\n' "${timings[@]}"
python3 tools/test_summary.py "${logs[@]}" || status=1
exit $status
