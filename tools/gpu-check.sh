#!/usr/bin/env bash
# tools/gpu-check.sh: what a session with a GPU owes the project, as few device calls as possible.
#
#   tools/gpu-check.sh pack              on this (CPU) machine, before the first device call: copies the
#                                        header-only test dependencies (doctest, nlohmann/json) and the git
#                                        revision into .devdeps/ (git-ignored); name .devdeps in the call's carry.
#   tools/gpu-check.sh prebuild BUILDDIR on this machine, after pack: builds the device programs for sm_$QNUM_GPU_ARCH (default
#                                        90) in the meson build dir BUILDDIR (made if missing) and copies them into
#                                        .devdeps/bin; the stages below then run those and build nothing (the device
#                                        tests take longer to compile than one device call may run).
#   tools/gpu-check.sh STAGE...          on the GPU machine (default: every stage, in this order):
#     build     meson build-gpu for the local GPU's architecture: device tests, qnum-convert (GPU path), test_convert
#     test      the device tests and test_convert_gpu (the GPU path of qnum-convert vs the committed goldens)
#     sanitize  compute-sanitizer memcheck / initcheck on every device test and on qnum-convert --device gpu
#               for every format; racecheck / synccheck on the tests whose kernels share memory or sync
#     bench     tools/bench-device.sh (qnum-bench-device, medians vs a same-run D2D copy); with QNUM_BENCH_TORCH=1
#               also bench/torch_compile_device.py (the torch.compile column, joined to qnum's CSV; a skip (77, no
#               torch) or a failure is noted in bench.txt and never fails the stage; QNUM_BENCH_TORCH_ARGS: its
#               extra arguments, e.g. --headline; QNUM_BENCH_TORCH_TIMEOUT: seconds, default 1800)
#     convert   apps/qnum-convert/bench_convert.py --devices cpu,gpu on a generated 3 GB checkpoint
#
# A device command runs at most 10 minutes and a machine is given back 30 s after a call, with its build:
# `build test sanitize` fit one call; `bench convert` another (each stage builds what it needs).
# Results: $QNUM_GPU_CHECK_OUT, else $OUT (the device tool's return folder), else bench/results/gpu-check-<time>:
# env.txt, one <stage>.txt per stage and summary.txt (one line per stage: ok / FAILED). Exit 1 if any failed.
# Environment: QNUM_GPU_ARCH (default: nvidia-smi's compute capability, else 90), QNUM_SANITIZE_TIMEOUT
# (seconds per compute-sanitizer run, default 120).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ "${1:-}" = pack ]; then
  rm -rf .devdeps && mkdir -p .devdeps/include
  for h in doctest nlohmann; do
    [ -d "/usr/include/$h" ] || { echo "gpu-check pack: /usr/include/$h missing (tools/install-deps.sh)" >&2; exit 1; }
    cp -r "/usr/include/$h" .devdeps/include/
  done
  { git rev-parse HEAD; git diff --quiet HEAD || echo "(with uncommitted changes)"; } > .devdeps/REVISION 2>/dev/null
  du -sh .devdeps
  exit 0
fi

# Programs the stages run, relative to a build dir.
device_tests=(test_codec_device test_divide_device test_dynamic_scale_device test_pack_device test_quantize_device test_reduce_device)
programs=(apps/qnum-convert/qnum-convert apps/qnum-convert/tests/test_convert bench/qnum-bench-device examples/qnum-w4a16-matvec)
for t in "${device_tests[@]}"; do programs+=("tests/gpu/$t"); done

if [ "${1:-}" = prebuild ]; then
  pb=${2:?usage: tools/gpu-check.sh prebuild BUILDDIR}
  [ -d .devdeps/include ] || { echo "gpu-check prebuild: run 'tools/gpu-check.sh pack' first" >&2; exit 1; }
  export PATH=/usr/local/cuda/bin:$PATH
  if [ ! -f "$pb/build.ninja" ]; then
    meson setup "$pb" -Dcuda=enabled -Dgpu_arch="${QNUM_GPU_ARCH:-90}" -Dtests=enabled -Dexhaustive=false \
      -Dbenchmarks=auto -Dwerror=true -Dbuildtype=release || exit 1
  fi
  # nvcc's dependency files do not always name the headers: touch the sources so every program is current.
  touch tests/gpu/*.cu tests/train/*.cu tests/layout/*.cu tests/host/*.cu bench/*.cu examples/*.cu apps/qnum-convert/src/*.cu
  ninja -C "$pb" "${programs[@]}" || exit 1
  rm -rf .devdeps/bin
  for p in "${programs[@]}"; do
    mkdir -p ".devdeps/bin/$(dirname "$p")" && cp "$pb/$p" ".devdeps/bin/$p" || exit 1
  done
  du -sh .devdeps
  exit 0
fi

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build test sanitize bench convert)
. tools/gpu-env.sh  # PATH, have_smi, arch
out=${QNUM_GPU_CHECK_OUT:-${OUT:-bench/results/gpu-check-$(date -u +%Y%m%dT%H%MZ)}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bdir=build-gpu
prebuilt=0
if [ -d .devdeps/bin ]; then  # programs from `prebuild`
  bdir=.devdeps/bin
  prebuilt=1
fi
sanitize_timeout=${QNUM_SANITIZE_TIMEOUT:-120}
failed=0

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "revision: $(git rev-parse HEAD 2>/dev/null || cat .devdeps/REVISION 2>/dev/null || echo unknown)"
  echo "stages: ${stages[*]}; gpu_arch: $arch"
  nvcc --version 2>&1 | tail -n 2
  command -v compute-sanitizer >/dev/null && compute-sanitizer --version 2>&1 | tail -n 1
  meson --version 2>&1 | sed 's/^/meson /'
  echo "host: $(uname -srm); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  [ $have_smi = 1 ] && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1
} >> "$out/env.txt"

note() {  # stage status
  echo "$1: $2" | tee -a "$out/summary.txt"
  [ "$2" = ok ] || failed=1
}

ensure_build() {
  if [ $prebuilt = 1 ]; then
    echo "prebuilt programs from $(head -n 2 .devdeps/REVISION 2>/dev/null | tr '\n' ' ')"
    return 0
  fi
  local inc=()
  if [ -d .devdeps/include ]; then
    inc=(-Dcpp_args=-I$root/.devdeps/include -Dcuda_args=-I$root/.devdeps/include)
  fi
  if [ ! -f $bdir/build.ninja ]; then
    meson setup $bdir -Dcuda=enabled -Dgpu_arch="$arch" -Dtests=enabled -Dexhaustive=false -Dbenchmarks=disabled -Dwerror=true \
      -Dbuildtype=release "${inc[@]}" || return 1
  fi
  local targets=(apps/qnum-convert/qnum-convert apps/qnum-convert/tests/test_convert)
  for t in "${device_tests[@]}"; do targets+=("tests/gpu/$t"); done
  ninja -C $bdir "${targets[@]}"
}

for stage in "${stages[@]}"; do
  log="$out/$stage.txt"
  echo "== $stage ($(date -u +%H:%M:%S))" >&2
  case $stage in
    build)
      if ensure_build > "$log" 2>&1; then note build ok; else note build FAILED; fi
      ;;
    test)
      ensure_build > /dev/null 2>&1
      if [ $prebuilt = 1 ]; then  # no meson here: run each program; 77 (no GPU) counts as a failure
        bad=0
        : > "$log"
        for t in "${device_tests[@]}"; do
          echo "---- $t" >> "$log"
          $bdir/tests/gpu/$t >> "$log" 2>&1 || { echo "---- FAILED (exit $?): $t" >> "$log"; bad=1; }
        done
        echo "---- test_convert --gpu" >> "$log"
        QNUM_TEST_DATA_DIR=$root/apps/qnum-convert/tests/data QNUM_CONVERT_EXE=$root/$bdir/apps/qnum-convert/qnum-convert \
          $bdir/apps/qnum-convert/tests/test_convert --gpu >> "$log" 2>&1 || { echo "---- FAILED (exit $?): test_convert" >> "$log"; bad=1; }
        echo "---- qnum-w4a16-matvec" >> "$log"
        $bdir/examples/qnum-w4a16-matvec >> "$log" 2>&1 || { echo "---- FAILED (exit $?): qnum-w4a16-matvec" >> "$log"; bad=1; }
        if [ $bad = 0 ]; then note test ok; else note test "FAILED (see test.txt)"; fi
      elif meson test -C $bdir --no-rebuild --print-errorlogs "${device_tests[@]}" test_convert_gpu > "$log" 2>&1 &&
         ! grep -q "^Skipped: *[1-9]" "$log"; then
        note test ok
      else
        note test "FAILED (or skipped: see test.txt)"
      fi
      ;;
    sanitize)
      ensure_build > /dev/null 2>&1
      if ! command -v compute-sanitizer >/dev/null; then
        echo "compute-sanitizer not found" > "$log"
        note sanitize "FAILED (no compute-sanitizer)"
        continue
      fi
      : > "$log"
      bad=0
      runs=()
      for t in "${device_tests[@]}"; do
        [ "$t" = test_divide_device ] && continue  # arithmetic over 2^32 inputs in registers: no memory to check, hours instrumented
        runs+=("memcheck $bdir/tests/gpu/$t" "initcheck $bdir/tests/gpu/$t")
      done
      for t in test_quantize_device test_dynamic_scale_device; do
        runs+=("racecheck $bdir/tests/gpu/$t" "synccheck $bdir/tests/gpu/$t")
      done
      ckpt=apps/qnum-convert/tests/data/ckpt
      for f in w4a16 fp8-block fp8-channel fp8-tensor nvfp4 mxfp4; do
        runs+=("memcheck $bdir/apps/qnum-convert/qnum-convert --no-progress --device gpu --format $f $ckpt $bdir/sanitize-out-$f")
      done
      runs+=("memcheck $bdir/apps/qnum-convert/qnum-convert --no-progress --device gpu --format w4a16 --group 32 --asym $ckpt $bdir/sanitize-out-asym")
      for r in "${runs[@]}"; do
        read -r tool cmd <<< "$r"
        rm -rf $bdir/sanitize-out-*
        echo "---- $tool: $cmd" >> "$log"
        timeout "$sanitize_timeout" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 $cmd >> "$log" 2>&1
        rc=$?
        echo "---- exit $rc ($tool: $cmd)" >> "$log"
        [ $rc = 0 ] || bad=1
      done
      grep "^---- exit" "$log" >&2
      if [ $bad = 0 ]; then note sanitize ok; else note sanitize "FAILED (see sanitize.txt)"; fi
      ;;
    bench)
      bench_exe=()
      [ $prebuilt = 1 ] && bench_exe=(QNUM_BENCH_EXE=$root/$bdir/bench/qnum-bench-device)
      if env "${bench_exe[@]}" QNUM_GPU_ARCH="$arch" QNUM_BENCH_OUT="$out/bench-device" tools/bench-device.sh > "$log" 2>&1; then
        cat "$out/bench-device/results.md" >> "$log" 2>/dev/null
        note bench ok
      else
        note bench FAILED
      fi
      if [ "${QNUM_BENCH_TORCH:-0}" = 1 ]; then  # opt-in: minutes of torch.compile; not part of the stage's status
        timeout "${QNUM_BENCH_TORCH_TIMEOUT:-1800}" python3 bench/torch_compile_device.py ${QNUM_BENCH_TORCH_ARGS:-} \
          --csv "$out/bench-device/torch.csv" --join "$out/bench-device/results.csv" >> "$log" 2>&1
        echo "torch_compile_device.py: exit $? (77: skipped)" >> "$log"
        cat "$out/bench-device/torch.csv" >> "$log" 2>/dev/null
      fi
      # $OUT returns at most 8 files: keep the folder's run.txt + env.txt inside bench.txt instead.
      cat "$out/bench-device/env.txt" >> "$log" 2>/dev/null
      rm -rf "$out/bench-device"
      ;;
    convert)
      ensure_build > /dev/null 2>&1
      if python3 apps/qnum-convert/bench_convert.py --exe $bdir/apps/qnum-convert/qnum-convert --gb 3 --shards 4 \
           --formats w4a16,fp8-block,fp8-channel,fp8-tensor,nvfp4,mxfp4 --threads "$(nproc)" --devices cpu,gpu > "$log" 2>&1; then
        note convert ok
      else
        note convert FAILED
      fi
      ;;
    *)
      echo "gpu-check: unknown stage '$stage'" >&2
      exit 2
      ;;
  esac
done
cat "$out/summary.txt"
exit $failed
