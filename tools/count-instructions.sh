#!/usr/bin/env bash
# tools/count-instructions.sh [REGEX]: instructions per element of qnum-bench-host's 512x512 benchmarks, counted by
# valgrind's callgrind as the difference between 11 calls and 1 call (QNUM_BENCH_ITERATIONS), divided by 10 calls of
# 512 * 512 elements: the set-up of each benchmark cancels out. Valgrind has no AVX-512, so the library runs its
# AVX2 lanes (QNUM_HOST_SIMD=avx2; QNUM_COUNT_SIMD overrides: sse2, none); ggml's quantizers are not in this build
# (its -march=native code is AVX-512 here). REGEX selects benchmarks by name (default: every operation but the scalar_
# and ref_ baselines). Builds build-count (release, benchmarks only); needs valgrind (tools/install-deps.sh
# valgrind) and Google Benchmark. Prints "name instructions-per-element", one benchmark a line.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${QNUM_COUNT_BUILD_DIR:-build-count}
filter=${1:-^(quantize_|fake_quant_|dequantize_|gguf_|grad_)}
command -v valgrind >/dev/null || { echo "count-instructions: valgrind is missing (tools/install-deps.sh valgrind)" >&2; exit 1; }
opts=(-Dbuildtype=release -Dtests=disabled -Dbenchmarks=enabled -Dcuda=disabled -Dexhaustive=false)
if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" "${opts[@]}" >/dev/null
else meson setup "$dir" "${opts[@]}" >/dev/null; fi
ninja -C "$dir" bench/qnum-bench-host >/dev/null
prog=$dir/bench/qnum-bench-host
export QNUM_HOST_SIMD=${QNUM_COUNT_SIMD:-avx2}
count() {  # name calls -> instructions of the whole run
  local out
  out=$(QNUM_BENCH_ITERATIONS=$2 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$prog" \
    --benchmark_filter="^$1/iterations:$2\$" 2>&1)
  case $out in *"Failed to match"*) return ;; esac  # (fixed iterations name the benchmark .../iterations:N)
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<< "$out"
}
echo "# $(git rev-parse --short HEAD 2>/dev/null || echo unknown), QNUM_HOST_SIMD=$QNUM_HOST_SIMD, $(c++ --version | head -n1)"
"$prog" --benchmark_list_tests --benchmark_filter="$filter" | grep '/512$' | grep -Ev '^(scalar_|ref_)' | while read -r name; do
  a=$(count "$name" 1)
  b=$(count "$name" 11)
  [ -n "$a" ] && [ -n "$b" ] || { echo "count-instructions: no count for $name" >&2; exit 1; }
  python3 -c "import sys; print('%-40s %6.2f' % (sys.argv[1], (int(sys.argv[3]) - int(sys.argv[2])) / (10 * 512 * 512)))" "$name" "$a" "$b"
done
