#!/usr/bin/env python3
"""The compiler matrix: front-end checks of qnum's C++ with more compilers and standards than the main build.

Usage: compiler_matrix.py BUILD_DIR OUT_DIR ENTRY... (ENTRY: COMPILER:STD[:CHECKS], e.g. clang++-19:c++20 or
g++-12:c++20:headers,examples; CHECKS, a comma-separated subset of the three checks below, all by default)

BUILD_DIR is a configured meson build dir (the main build: the same configure step, nothing else to set
up); its compile_commands.json gives every host C++ translation unit with its flags. For each entry, the
checks are compiled with -fsyntax-only (parsing, semantic analysis and every template instantiation: where
Clang and GCC emit the warnings a C++ standard or a compiler version changes) by that compiler in that
standard, with the build's own warning flags (-Wall -Wextra -Wpedantic, and -Werror when the build has
-Dwerror=true). No object is generated and nothing links or runs: the main build does that. Three checks per
entry, each one test case:
  headers    every public header alone (the build's header_checks sources, with their -Wconversion -Wshadow)
  tests      the host unit tests: tests/, the fuzz corpus replays (fuzz/), qnum-convert and its test
             (apps/qnum-convert/)
  examples   the host examples (examples/)
All translation units are compiled by one ninja run in OUT_DIR (-j: QNUM_MATRIX_JOBS, default 2). Results
go to OUT_DIR/testlog.json (meson's testlog shape: tools/test_summary.py counts them); exits 1 if any check
fails or a compiler is missing (a missing compiler fails its checks)."""
import json
import os
import shlex
import shutil
import subprocess
import sys

build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
groups = ["headers", "tests", "examples"]
entries = []  # (compiler, std, checks)
for e in sys.argv[3:]:
    parts = e.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and not set(parts[2].split(",")) <= set(groups)):
        sys.exit("compiler_matrix.py: bad entry %r (COMPILER:STD[:CHECKS], CHECKS from %s)" % (e, ",".join(groups)))
    entries.append((parts[0], parts[1], parts[2].split(",") if len(parts) == 3 else groups))
src_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
os.makedirs(out, exist_ok=True)

with open(os.path.join(build, "compile_commands.json")) as f:
    commands = json.load(f)


def group_of(path):
    rel = os.path.relpath(path, src_root)
    if os.path.basename(path).startswith("hc_") and os.path.relpath(path, build).startswith("tests" + os.sep):
        return "headers"
    if rel.startswith("examples" + os.sep):
        return "examples"
    if rel.startswith(("tests" + os.sep, "fuzz" + os.sep, os.path.join("apps", "qnum-convert") + os.sep)):
        return "tests"
    return None


# Flags that concern the object file, not the checks.
DROP_WITH_ARG = {"-o", "-MQ", "-MF", "-MT"}
# GCC-only switches that meson's get_supported_arguments adds for GCC (apps/qnum-convert): Clang rejects them.
GCC_ONLY = {"-Wno-maybe-uninitialized"}
DROP = {"-c", "-MD", "-MMD", "-pipe", "-fdiagnostics-color=always", "-Winvalid-pch"}

units = {}  # (group, absolute source) -> flags, one set per source (see below)
for c in commands:
    args = shlex.split(c["command"]) if "command" in c else list(c["arguments"])
    src = os.path.normpath(os.path.join(c["directory"], c["file"]))
    group = group_of(src)
    if group is None or not src.endswith(".cpp") or os.path.basename(src) == "doctest_main.cpp":
        continue
    flags, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in DROP_WITH_ARG:
            skip = True
        elif a in DROP or a.startswith(("-std=", "-O")) or a == c["file"] or os.path.normpath(
                os.path.join(c["directory"], a)) == src:
            pass
        elif a.startswith("-I") and len(a) > 2:
            inc = os.path.normpath(os.path.join(c["directory"], a[2:]))
            if inc in ("/usr/include", "/usr/local/include"):
                continue  # searched anyway; as -I it only reorders the system directories
            # The project's own directories keep -I; others (the CUDA toolkit's headers, the tests' exact
            # reference) are third-party code whose warnings are not qnum's: -isystem.
            mine = any(os.path.commonpath([inc, r]) == r for r in (src_root, build))
            flags += ["-I" + inc] if mine else ["-isystem", inc]
        else:
            flags.append(a)
    # A source built twice with different flags (test_host_simd.cpp, again with -mavx2 -mfma) is checked
    # once, with the shortest set of flags (the plain build's): the library picks no code path from -m flags.
    if len(flags) < len(units.get((group, src), flags + [""])):
        units[(group, src)] = flags

ninja = ["ninja_required_version = 1.5", "rule cc", "  command = $cmd > $log 2>&1 && touch $out || { cat $log; exit 1; }",
         "  description = $desc", ""]
checks = []  # (name, compiler, [stamps], [logs])
for compiler, std, entry_groups in entries:
    tag = "%s_%s" % (compiler.replace("+", "x"), std.replace("+", "x"))
    found = shutil.which(compiler)
    for g in entry_groups:
        stamps, logs = [], []
        for n, ((group, src), flags) in enumerate(sorted(units.items())):
            if group != g:
                continue
            stem = "%s/%s/%d_%s" % (tag, g, n, os.path.basename(src))
            stamps.append(stem + ".ok")
            logs.append(stem + ".log")
            if not found:
                continue
            own = [f for f in flags if not ("clang" in compiler and f in GCC_ONLY)]
            cmd = " ".join(shlex.quote(a) for a in [found, "-std=" + std, "-fsyntax-only"] + own + [src])
            ninja += ["build %s.ok: cc %s" % (stem, src.replace(":", "$:").replace(" ", "$ ")),
                      "  cmd = %s" % cmd,
                      "  log = %s.log" % stem, "  desc = %s %s %s" % (compiler, std, os.path.relpath(src, src_root))]
        checks.append(("%s %s: %s (%d files)" % (compiler, std, g, len(stamps)), found, stamps, logs))

# A fresh start: no stamp or log of an earlier run counts.
for d in {s.split("/", 1)[0] for _, _, stamps, _ in checks for s in stamps}:
    shutil.rmtree(os.path.join(out, d), ignore_errors=True)
for d in {os.path.dirname(s) for _, _, stamps, _ in checks for s in stamps}:
    os.makedirs(os.path.join(out, d), exist_ok=True)
with open(os.path.join(out, "build.ninja"), "w") as f:
    f.write("\n".join(ninja) + "\n")
jobs = os.environ.get("QNUM_MATRIX_JOBS", "2")
subprocess.call(["ninja", "-C", out, "-k", "0", "-j", jobs], stdout=sys.stdout, stderr=sys.stderr)

status = 0
with open(os.path.join(out, "testlog.json"), "w") as f:
    for name, found, stamps, logs in checks:
        bad = [l for s, l in zip(stamps, logs) if not os.path.exists(os.path.join(out, s))]
        if not found:
            result, text = "FAIL", "compiler not found\n"
        elif not stamps:
            result, text = "FAIL", "no translation units found in %s/compile_commands.json\n" % build
        else:
            result = "FAIL" if bad else "OK"
            text = "".join(open(os.path.join(out, l), errors="replace").read() for l in bad if os.path.exists(
                os.path.join(out, l)))[-8000:]
        status |= result != "OK"
        print("  matrix: %-50s %s" % (name, result))
        f.write(json.dumps({"name": "matrix " + name, "result": result, "stdout": text}) + "\n")
sys.exit(status)
