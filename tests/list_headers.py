#!/usr/bin/env python3
"""Print qnum's public headers (relative to include/), one per line: .hpp or .cuh as argv[2] asks."""
import os
import sys

root, ext = sys.argv[1], sys.argv[2]
for dirpath, _, files in sorted(os.walk(os.path.join(root, "qnum"))):
    for f in sorted(files):
        if f.endswith(ext):
            print(os.path.relpath(os.path.join(dirpath, f), root))
