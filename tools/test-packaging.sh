#!/usr/bin/env bash
# Check every way of consuming qnum with a tiny project (tests/packaging/):
#   install_layout     meson install to a temporary prefix: headers, qnum.pc, qnumConfig*.cmake in place
#   meson_pkgconfig    Meson, dependency('qnum') from the installed copy through pkg-config
#   meson_subproject   Meson, dependency('qnum') through a wrap file (subprojects/qnum.wrap, tarball in
#                      subprojects/packagecache: no network), i.e. qnum as a subproject
#   cmake_find_package CMake, find_package(qnum) + qnum::qnum from the installed copy
#   plain_include      no build system: include/qnum copied into a project, g++ -I
# Each is one test case; results go to $QNUM_PACKAGING_DIR/testlog.json (meson's testlog format) and
# the summary line. Exits non-zero if any case fails.
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

run_case() {  # name function
  local out="$work/cases/$1.log"
  if ( set -e; "$2" ) > "$out" 2>&1; then record "$1" OK "$out"; else record "$1" FAIL "$out"; fi
}

version=$(sed -n "s/^ *version : '\([^']*\)'.*/\1/p" meson.build | head -n 1)
prefix="$work/prefix"

case_install_layout() {
  meson setup "$work/qnum-build" --prefix "$prefix" -Dtests=disabled -Dbenchmarks=disabled -Dcuda=disabled
  meson install -C "$work/qnum-build"
  diff -r include/qnum "$prefix/include/qnum"
  find "$prefix" -name qnum.pc | grep -q .
  test -f "$prefix/share/cmake/qnum/qnumConfig.cmake"
  test -f "$prefix/share/cmake/qnum/qnumConfigVersion.cmake"
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

run_case install_layout case_install_layout
run_case meson_pkgconfig case_meson_pkgconfig
run_case meson_subproject case_meson_subproject
run_case cmake_find_package case_cmake_find_package
run_case plain_include case_plain_include
exit $status
