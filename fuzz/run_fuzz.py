#!/usr/bin/env python3
"""Run one libFuzzer target for a bounded time: run_fuzz.py EXE SEED_CORPUS WORK_DIR.

Seconds come from QNUM_FUZZ_SECONDS (default 60). New inputs go to WORK_DIR/corpus (the committed
seed corpus is read, never written); a finding is saved under WORK_DIR/artifacts and fails the run.
Prints libFuzzer's final stats and qnum's per-property counts, and writes both to WORK_DIR/stats.txt."""
import os
import subprocess
import sys

exe, seeds, work = sys.argv[1:4]
seconds = int(os.environ.get("QNUM_FUZZ_SECONDS", "60"))
corpus = os.path.join(work, "corpus")
artifacts = os.path.join(work, "artifacts")
os.makedirs(corpus, exist_ok=True)
os.makedirs(artifacts, exist_ok=True)
cmd = [exe, "-max_total_time=%d" % seconds, "-print_final_stats=1", "-timeout=10", "-rss_limit_mb=2048",
       "-artifact_prefix=" + artifacts + "/", corpus, seeds]
print(" ".join(cmd), flush=True)
try:
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=seconds + 300)
    out, rc = p.stdout, p.returncode
except subprocess.TimeoutExpired as e:
    out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), 124
stats = [l for l in out.splitlines() if l.startswith("stat::") or l.startswith("qnum-fuzz property")]
findings = os.listdir(artifacts)
with open(os.path.join(work, "stats.txt"), "w") as f:
    f.write("\n".join(stats + ["exit: %d" % rc, "findings: %d" % len(findings)]) + "\n")
if rc != 0 or findings:
    print(out[-20000:])
else:
    print("\n".join(l for l in out.splitlines()[-40:] if not l.startswith("#")))
print("exit %d, %d findings (%s)" % (rc, len(findings), " ".join(sorted(findings)) or "none"))
sys.exit(1 if rc != 0 or findings else 0)
