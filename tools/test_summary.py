#!/usr/bin/env python3
"""Summarise one or more meson testlog.json files (one JSON object per line, as meson writes them;
tools/test-packaging.sh writes the same shape): test cases counted from doctest's own lines where a
test prints them, one case per test otherwise. Prints a table, then one line
`N passed, N failed, N skipped` covering every file as the last line; exits 1 if anything failed,
a file is missing, or nothing ran."""
import json
import os
import re
import sys

DOCTEST = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")

passed = failed = skipped = 0
rows = []
paths = sys.argv[1:]
missing = 0
lines = []
for path in paths:
    label = os.path.dirname(path.replace("/meson-logs/", "/")) or "."
    try:
        with open(path) as f:
            lines += [(label, l) for l in f if l.strip()]
    except OSError as e:
        print("  %s: %s" % (path, e))
        missing += 1
for label, line in lines:
    t = json.loads(line)
    result = t.get("result", "")
    out = t.get("stdout", "") or ""
    m = DOCTEST.findall(out)
    if m and result in ("OK", "FAIL"):
        p = sum(int(x[1]) for x in m)
        fl = sum(int(x[2]) for x in m)
        s = sum(int(x[3]) for x in m)
        # A run given doctest filters (one program split across processes: test_host_simd and _int) counts the
        # cases it leaves out as skipped; another process runs them.
        if any(a.startswith(("--test-case", "-tc=", "-tce=")) for a in t.get("command", []) or []):
            s = 0
        if result == "FAIL" and fl == 0:
            fl = 1  # crashed or exited non-zero after its summary
    elif result == "OK":
        p, fl, s = 1, 0, 0
    elif result == "SKIP":
        p, fl, s = 0, 0, 1
    else:
        p, fl, s = 0, 1, 0
    passed += p
    failed += fl
    skipped += s
    rows.append((label + ": " + t.get("name", "?"), result, p, fl, s))

for name, result, p, fl, s in rows:
    print("  %-56s %-8s %4d passed %3d failed %3d skipped" % (name, result, p, fl, s))
failed += missing
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed or passed == 0 else 0)
