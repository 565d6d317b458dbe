#!/usr/bin/env bash
# The README's main job: install what is missing, build, and run the quantization tour.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
bash tools/install-deps.sh
builddir=${QNUM_BUILD_DIR:-build}
[ -f "$builddir/build.ninja" ] || meson setup "$builddir" >/dev/null
ninja -C "$builddir" examples/qnum-tour >/dev/null
"$builddir/examples/qnum-tour"
