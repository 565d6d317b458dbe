#!/usr/bin/env bash
# Check every way of consuming qnum with a tiny project (tests/packaging/):
#   install_layout     meson install to a temporary prefix: headers, qnum.pc, qnumConfig*.cmake in place, no qnum-convert
#   meson_pkgconfig    Meson, dependency('qnum') from the installed copy through pkg-config
#   meson_subproject   Meson, dependency('qnum') through a wrap file (subprojects/qnum.wrap, tarball in
#                      subprojects/packagecache: no network), i.e. qnum as a subproject
#   cmake_find_package CMake, find_package(qnum) + qnum::qnum from the installed copy
#   plain_include      no build system: include/qnum copied into a project, g++ -I
# Each is one test case; results go to $QNUM_PACKAGING_DIR/testlog.json (meson's testlog format) and
# the summary line. The four consumers run at the same time, after install_layout. Exits non-zero if any
# case fails.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v cmake >/dev/null 2>&1 || bash tools/install-deps.sh cmake || exit 1
work=${QNUM_PACKAGING_DIR:-build-packaging}
mkdir -p "$work"
work=$(cd "$work" && pwd)
rm -rf "$work/prefix" "$work/cases" "$work/qnum-build" "$work/testlog.json"
mkdir -p "$work/cases"
log="$work/testlog.json"
: > "$log"
status=0

record() {  # name result output-file
  python3 -c 'import json, sys; print(json.dumps({"name": sys.argv[1], "result": sys.argv[2], "stdout": open(sys.argv[3], errors="replace").read()[-8000:]}))' \
    "$1" "$2" "$3" >> "$log"
  echo "  packaging: $1 $2"
  if [ "$2" != OK ]; then
    status=1
    tail -n 40 "$3"
  fi
}

run_case() {  # name function: runs it, leaves OK or FAIL and the seconds it took in cases/<name>.result
  local out="$work/cases/$1.log" t0=$(date +%s) r=FAIL
  # Not inside `if`: bash ignores set -e in a condition, and every step of a case must count.
  ( set -e; "$2" ) > "$out" 2>&1
  [ $? = 0 ] && r=OK
  echo "$r $(($(date +%s) - t0))" > "$work/cases/$1.result"
}

record_case() {  # name
  local r s
  read -r r s < "$work/cases/$1.result" || r=FAIL
  record "$1" "$r" "$work/cases/$1.log"
  echo "  packaging: $1 took ${s:-?} s"
}

version=$(sed -n "s/^ *version : '\([^']*\)'.*/\1/p" meson.build | head -n 1)
prefix="$work/prefix"

case_install_layout() {
  meson setup "$work/qnum-build" --prefix "$prefix" -Dtests=disabled -Dbenchmarks=disabled -Dcuda=disabled
  # What `meson install` installs, without building the examples and the rest it would build first.
  local installed
  installed=$(meson introspect "$work/qnum-build" --targets |
    python3 -c 'import json, os, sys; print(" ".join(os.path.relpath(f, sys.argv[1]) for t in json.load(sys.stdin) if t["installed"] for f in t["filename"]))' "$work/qnum-build")
  # Nothing to build for the headers-only default (no targets: ninja would build everything).
  # shellcheck disable=SC2086
  [ -z "$installed" ] || ninja -C "$work/qnum-build" $installed
  meson install -C "$work/qnum-build" --no-rebuild
  diff -r include/qnum "$prefix/include/qnum"
  find "$prefix" -name qnum.pc | grep -q .
  test -f "$prefix/share/cmake/qnum/qnumConfig.cmake"
  test -f "$prefix/share/cmake/qnum/qnumConfigVersion.cmake"
  # The library only: qnum-convert (apps/qnum-convert) is installed only with -Dinstall_convert=true.
  test ! -e "$prefix/bin/qnum-convert"
  echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"
}

case_meson_pkgconfig() {
  local d="$work/cases/meson_pkgconfig"
  mkdir -p "$d" && cp tests/packaging/meson_pkgconfig/meson.build tests/packaging/consumer.cpp "$d/"
  local pcdir
  pcdir=$(dirname "$(find "$prefix" -name qnum.pc | head -n 1)")
  PKG_CONFIG_PATH="$pcdir" meson setup "$d/build" "$d"
  ninja -C "$d/build"
  "$d/build/consumer"
}

case_meson_subproject() {
  local d="$work/cases/meson_subproject"
  mkdir -p "$d/subprojects/packagecache" && cp tests/packaging/meson_subproject/meson.build tests/packaging/consumer.cpp "$d/"
  # The release tarball qnum-<version>.tar.gz, made from this working tree (tracked and new files).
  local stage="$work/cases/stage"
  rm -rf "$stage" && mkdir -p "$stage/qnum-$version"
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$stage/qnum-$version"
  tar -C "$stage" -czf "$d/subprojects/packagecache/qnum-$version.tar.gz" "qnum-$version"
  local sha
  sha=$(sha256sum "$d/subprojects/packagecache/qnum-$version.tar.gz" | cut -d' ' -f1)
  sed -e "s/@VERSION@/$version/g" -e "s/@SHA256@/$sha/" tests/packaging/meson_subproject/qnum.wrap.in > "$d/subprojects/qnum.wrap"
  # No installed copy may be visible: the wrap must provide it.
  PKG_CONFIG_PATH= meson setup "$d/build" "$d" --wrap-mode=nodownload
  ninja -C "$d/build"
  "$d/build/consumer"
}

case_cmake_find_package() {
  local d="$work/cases/cmake_find_package"
  mkdir -p "$d" && cp tests/packaging/cmake_find_package/CMakeLists.txt tests/packaging/consumer.cpp "$d/"
  cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$prefix"
  cmake --build "$d/build"
  "$d/build/consumer"
}

case_plain_include() {
  local d="$work/cases/plain_include"
  mkdir -p "$d/third_party" && cp -r include/qnum "$d/third_party/" && cp tests/packaging/consumer.cpp "$d/"
  ${CXX:-g++} -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$d/third_party" "$d/consumer.cpp" -o "$d/consumer"
  "$d/consumer"
}

# The installed tree first; then the four consumers at once (each is mostly a serial configure step).
run_case install_layout case_install_layout
record_case install_layout
run_case meson_pkgconfig case_meson_pkgconfig &
run_case meson_subproject case_meson_subproject &
run_case cmake_find_package case_cmake_find_package &
run_case plain_include case_plain_include &
wait
for c in meson_pkgconfig meson_subproject cmake_find_package plain_include; do record_case "$c"; done
exit $status
