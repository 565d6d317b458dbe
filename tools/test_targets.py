#!/usr/bin/env python3
"""Print the ninja targets (paths relative to the build dir) that a meson build dir's tests run,
one per line: what `meson test [--suite SUITE]...` would build before running them. tools/test.sh and
tools/fuzz.sh build only these where a stage has nothing else to show.
Usage: test_targets.py BUILD_DIR [--names] [-x TEST]... [SUITE...] (no suite: every test)
  -x TEST   leave that test out (its targets are still built if another test needs them)
  --names   print the tests' names (for `meson test NAME...`) instead of their targets"""
import json
import os
import sys

build = sys.argv[1]
args, names, skip = sys.argv[2:], False, set()
while args and args[0] in ("--names", "-x"):
    if args[0] == "--names":
        names, args = True, args[1:]
    else:
        skip.add(args[1])
        args = args[2:]
info = os.path.join(build, "meson-info")
with open(os.path.join(info, "intro-targets.json")) as f:
    files = {t["id"]: t["filename"] for t in json.load(f)}
with open(os.path.join(info, "intro-tests.json")) as f:
    tests = json.load(f)
suites = set(args)
if suites:  # meson names a suite "project:suite" in the introspection data
    tests = [t for t in tests if any(s.split(":", 1)[-1] in suites for s in t["suite"])]
tests = [t for t in tests if t["name"] not in skip]
if names:
    print("\n".join(t["name"] for t in tests))
    sys.exit(0)
need = {os.path.relpath(path, build) for t in tests for dep in t["depends"] for path in files.get(dep, [])}
print("\n".join(sorted(need)))
