#!/usr/bin/env bash
# The README's main job: install what is missing, build, and run the numerics comparison
# (qnum-numerics: every scheme x granularity x distribution; CSV and markdown go to the build dir).
# The quantization tour is still built and tested as an example (examples/qnum-tour).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
bash tools/install-deps.sh
builddir=${QNUM_BUILD_DIR:-build}
[ -f "$builddir/build.ninja" ] || meson setup "$builddir" >/dev/null
ninja -C "$builddir" bench/qnum-numerics >/dev/null
"$builddir/bench/qnum-numerics" --csv "$builddir/qnum-numerics.csv" --md "$builddir/qnum-numerics.md" "$@"
