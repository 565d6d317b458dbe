#!/usr/bin/env bash
# tools/bench-host.sh: build qnum-bench-host with ggml's own CPU quantizers beside qnum's (same program, same run),
# run it on one pinned thread and record the results with the machine's state in
# bench/results/host-<UTC time>/: run.txt (the program's output: Google Benchmark's medians, then the ratio table
# with every element rate against the same run's fp32 copy and ggml's SIMD Q8_0), env.txt (git revision, CPU, its
# flags, compiler, ggml source, the host SIMD target the library chose).
#
# ggml comes from QNUM_GGML_SRC (a ggml source tree: the ggml repository, or llama.cpp's ggml/ folder); without
# it, from the llama-cpp-python source distribution on PyPI (pinned below; its vendor/llama.cpp/ggml), fetched with
# pip into the build directory. ggml is built with its CMake defaults for this machine (GGML_NATIVE=ON: the
# instruction sets of this CPU, as a ggml user building from source gets them), static, no OpenMP.
# Before any timing the program checks that qnum's GGUF writers give ggml's _ref bytes on every benchmark input
# (exit 1 if not).
#
# Arguments go to qnum-bench-host (for example --benchmark_filter=REGEX, --large). Environment: QNUM_BENCH_REPS
# (repetitions, default 11, interleaved at random), QNUM_BENCH_CPU (the CPU to pin to, default the last one),
# QNUM_BENCH_BUILD_DIR (default build-bench-host), QNUM_BENCH_OUT (default the directory above), QNUM_HOST_SIMD
# (the library's own variable: sse2, avx2 or avx512 forces a target). Needs cmake, ninja, meson, Google Benchmark
# (`tools/install-deps.sh cmake` installs what is missing) and, without QNUM_GGML_SRC, pip.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${QNUM_BENCH_BUILD_DIR:-build-bench-host}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pypi_pin=llama-cpp-python==0.3.36

src=${QNUM_GGML_SRC:-}
if [ -z "$src" ]; then
  if [ ! -f "$dir/ggml-sdist/ggml/CMakeLists.txt" ]; then
    rm -rf "$dir/ggml-sdist" && mkdir -p "$dir/ggml-sdist/dl"
    python3 -m pip download --quiet --no-deps --no-binary :all: "$pypi_pin" -d "$dir/ggml-sdist/dl"
    tar -xzf "$dir"/ggml-sdist/dl/*.tar.gz -C "$dir/ggml-sdist/dl" --wildcards '*/vendor/llama.cpp/ggml/*'
    mv "$dir"/ggml-sdist/dl/*/vendor/llama.cpp/ggml "$dir/ggml-sdist/ggml"
    rm -rf "$dir/ggml-sdist/dl"
  fi
  # The distribution leaves out the pkg-config template that ggml's CMakeLists configures; nothing here uses it.
  [ -f "$dir/ggml-sdist/ggml/ggml.pc.in" ] || : > "$dir/ggml-sdist/ggml/ggml.pc.in"
  src=$dir/ggml-sdist/ggml
  src_desc="$pypi_pin (PyPI source distribution, vendor/llama.cpp/ggml)"
else
  src=$(cd "$src" && pwd)
  src_desc="$src$(git -C "$src" rev-parse --short HEAD 2>/dev/null | sed 's/^/ at /' || true)"
fi
[ -f "$src/include/ggml.h" ] || { echo "bench-host: no ggml source tree at $src" >&2; exit 1; }

prefix=$dir/ggml-prefix
if [ ! -f "$prefix/lib/libggml-cpu.a" ] || [ "$(cat "$prefix/source" 2>/dev/null)" != "$src_desc" ]; then
  cmake -S "$src" -B "$dir/ggml-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DGGML_OPENMP=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
  ninja -C "$dir/ggml-build" ggml-base ggml-cpu >/dev/null
  rm -rf "$prefix" && mkdir -p "$prefix/lib"
  cp -r "$src/include" "$prefix/include"
  find "$dir/ggml-build" \( -name libggml-base.a -o -name libggml-cpu.a \) -exec cp {} "$prefix/lib/" \;
  echo "$src_desc" > "$prefix/source"
fi

opts=(-Dbuildtype=release -Dtests=disabled -Dbenchmarks=enabled -Dcuda=disabled -Dexhaustive=false
      -Dggml_prefix="$prefix")
if [ -f "$dir/build.ninja" ]; then
  meson setup --reconfigure "$dir" "${opts[@]}" >/dev/null
else
  meson setup "$dir" "${opts[@]}" >/dev/null
fi
ninja -C "$dir" bench/qnum-bench-host >/dev/null

out=${QNUM_BENCH_OUT:-bench/results/host-$(date -u +%Y%m%dT%H%MZ)}
mkdir -p "$out"
cpu=${QNUM_BENCH_CPU:-$(($(nproc) - 1))}
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
  echo "ggml: $src_desc, GGML_NATIVE=ON"
  echo "args: $*; repetitions ${QNUM_BENCH_REPS:-11}, random interleaving, pinned to CPU $cpu"
  echo "QNUM_HOST_SIMD: ${QNUM_HOST_SIMD:-(unset: the best target of this CPU)}"
  echo "host: $(uname -srm); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) online"
  lscpu 2>/dev/null | grep -E '^(Vendor ID|CPU family|Model|L1d|L2|L3)' || true
  echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | tr ' ' '\n' | grep -E '^(avx|fma|f16c|amx)' | tr '\n' ' ')"
  c++ --version | head -n1
} > "$out/env.txt"

taskset -c "$cpu" "$dir/bench/qnum-bench-host" --benchmark_repetitions="${QNUM_BENCH_REPS:-11}" \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true "$@" 2>&1 | tee "$out/run.txt"
echo "bench-host: results in $out"
