#!/usr/bin/env python3
"""Summarise a meson testlog.json: test cases counted from doctest's own lines where a test prints
them, one case per test otherwise. Prints a table, then `N passed, N failed, N skipped` as the
last line; exits 1 if anything failed or nothing ran."""
import json
import re
import sys

DOCTEST = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")

passed = failed = skipped = 0
rows = []
with open(sys.argv[1]) as f:
    for line in f:
        t = json.loads(line)
        result = t.get("result", "")
        out = t.get("stdout", "") or ""
        m = DOCTEST.findall(out)
        if m and result in ("OK", "FAIL"):
            p = sum(int(x[1]) for x in m)
            fl = sum(int(x[2]) for x in m)
            s = sum(int(x[3]) for x in m)
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
        rows.append((t.get("name", "?"), result, p, fl, s))

for name, result, p, fl, s in rows:
    print("  %-40s %-8s %4d passed %3d failed %3d skipped" % (name, result, p, fl, s))
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed or passed == 0 else 0)
