#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test suite, print one line
# "N passed, N failed" (test cases, doctest's counts summed) and exit non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"

bash tools/install-deps.sh
builddir=${QNUM_BUILD_DIR:-build}
if [ -f "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" >/dev/null
else
  meson setup "$builddir" >/dev/null
fi
ninja -C "$builddir"
set +e
meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@"
status=$?
set -e
python3 tools/test_summary.py "$builddir/meson-logs/testlog.json" || status=1
exit $status
