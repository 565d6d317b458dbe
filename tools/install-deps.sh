#!/usr/bin/env bash
# Install what qnum's build, tests and benchmarks need on a Debian machine, skipping what is there.
# The CUDA toolkit is optional: it is detected (nvcc on PATH or /usr/local/cuda), never installed.
set -euo pipefail

need=()
command -v meson >/dev/null 2>&1 || need+=(meson)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v python3 >/dev/null 2>&1 || need+=(python3)
for pkg in doctest-dev libbenchmark-dev nlohmann-json3-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
for pkg in "$@"; do  # extra packages a caller asks for (e.g. clang for the fuzzers)
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done

if [ ${#need[@]} -gt 0 ]; then
  echo "qnum: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "qnum: CUDA toolkit found: device tests and benchmarks will be built"
else
  echo "qnum: no CUDA toolkit: host-only build"
fi
