#!/usr/bin/env bash
# tools/bench-device.sh: build qnum-bench-device for this machine's GPU, run it, and record the results
# with the machine's state in bench/results/device-<UTC time>-<gpu>/:
#   run.txt (the program's output), results.csv, results.md (the table for docs/performance.md),
#   env.txt (git revision, nvcc, driver, nvidia-smi clocks/power/throttle state before and after, CPU).
# Extra arguments go to qnum-bench-device (--quick, --reps N, --calls N, --filter TEXT).
# Environment: QNUM_GPU_ARCH (default: the compute capability nvidia-smi reports, else 90),
# QNUM_BENCH_BUILD_DIR (default build-bench-device), QNUM_BENCH_OUT (default the directory above),
# QNUM_BENCH_EXE (a qnum-bench-device built elsewhere for this GPU: run it, build nothing).
# Clocks are not locked here (that needs root and changes the machine): env.txt records them instead.
# Exit status: the program's (0 ran, 1 CUDA error or a verification mismatch, 77 no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/gpu-env.sh  # PATH, have_smi, arch
exe=${QNUM_BENCH_EXE:-}
if [ -z "$exe" ] && ! command -v nvcc >/dev/null; then
  echo "bench-device: nvcc not found (install the CUDA toolkit)" >&2
  exit 1
fi

if [ -z "$exe" ]; then
  dir=${QNUM_BENCH_BUILD_DIR:-build-bench-device}
  opts=(-Dcuda=enabled -Dgpu_arch="$arch" -Dbenchmarks=auto -Dtests=disabled -Dexhaustive=false -Dbuildtype=release)
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "${opts[@]}" >/dev/null
  else
    meson setup "$dir" "${opts[@]}" >/dev/null
  fi
  ninja -C "$dir" bench/qnum-bench-device
  exe=$dir/bench/qnum-bench-device
fi

gpu=unknown-gpu
if [ $have_smi = 1 ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' || true)
  gpu=${gpu:-unknown-gpu}
fi
out=${QNUM_BENCH_OUT:-bench/results/device-$(date -u +%Y%m%dT%H%MZ)-$gpu}
mkdir -p "$out"

smi_state() {
  if [ $have_smi = 1 ]; then
    nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,power.limit,temperature.gpu,persistence_mode,ecc.mode.current --format=csv 2>&1 || true
    nvidia-smi -q -d PERFORMANCE,CLOCK 2>&1 || true  # throttle (clock event) reasons, application clocks
  else
    echo "nvidia-smi not found"
  fi
}
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
  [ -n "${QNUM_BENCH_EXE:-}" ] && echo "program: $exe (built elsewhere)"
  echo "gpu_arch: $arch"
  echo "args: $*"
  nvcc --version | tail -n 2
  echo "host: $(uname -srm); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "--- nvidia-smi before the run"
  smi_state
} > "$out/env.txt"

set +e
"$exe" --csv "$out/results.csv" --md "$out/results.md" "$@" 2>&1 | tee "$out/run.txt"
rc=${PIPESTATUS[0]}
set -e

{
  echo "--- nvidia-smi after the run"
  smi_state
  echo "exit status: $rc"
} >> "$out/env.txt"

case $rc in
  0) echo "bench-device: results in $out (results.md is the table for docs/performance.md)" ;;
  77) echo "bench-device: no usable GPU here: nothing measured ($out/run.txt)" ;;
  *) echo "bench-device: qnum-bench-device failed (exit $rc): see $out/run.txt" >&2 ;;
esac
exit "$rc"
