#!/usr/bin/env python3
"""Benchmark qnum-convert on a generated bf16 checkpoint of a few GB (stdlib only).

    python3 apps/qnum-convert/bench_convert.py [--exe build/apps/qnum-convert/qnum-convert] [--gb 3] [--shards 4]
                                               [--formats w4a16,fp8-block] [--threads 1,2] [--devices cpu,gpu] [--keep DIR]

Writes a Llama-like checkpoint (bf16 attention 4096x4096 and MLP 11008x4096 weights, norms, an embedding and an
lm_head, in --shards files with model.safetensors.index.json) to a temporary directory, converts it with each
format, device (--device of qnum-convert; default cpu) and thread count, and prints per run: seconds, GB/s of input, peak RSS of the converter (/usr/bin/time %M)
and peak RSS minus the largest input tensor's bytes. For comparison it measures, in the same process, a memcpy
of a 512 MiB buffer (GB/s copied) and a page-cache read of the checkpoint's bytes (GB/s read). Everything it
writes is deleted at the end (unless --keep).
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HIDDEN, INTER = 4096, 11008


def bf16_pattern(nbytes, seed=1):
    """nbytes of bf16 N(0, 0.02) values (truncated fp32), a few outliers."""
    rnd = random.Random(seed)
    n = nbytes // 2
    vals = [rnd.gauss(0.0, 0.02) for _ in range(n)]
    for i in range(0, n, 4099):
        vals[i] *= 50.0
    raw = struct.pack("<%df" % n, *vals)
    out = bytearray(n * 2)
    out[0::2] = raw[2::4]
    out[1::2] = raw[3::4]
    return bytes(out)


def plan_tensors(total_bytes):
    """Tensor (name, shape) list of a Llama-like model of about total_bytes of bf16."""
    layer = 4 * HIDDEN * HIDDEN + 3 * INTER * HIDDEN + 2 * HIDDEN
    fixed = 2 * 32000 * HIDDEN + HIDDEN
    layers = max(1, (total_bytes // 2 - fixed) // layer)
    ts = [("model.embed_tokens.weight", (32000, HIDDEN))]
    for i in range(layers):
        p = "model.layers.%d." % i
        ts += [(p + "input_layernorm.weight", (HIDDEN,))]
        ts += [(p + "self_attn.%s_proj.weight" % x, (HIDDEN, HIDDEN)) for x in "qkvo"]
        ts += [(p + "post_attention_layernorm.weight", (HIDDEN,))]
        ts += [(p + "mlp.gate_proj.weight", (INTER, HIDDEN)), (p + "mlp.up_proj.weight", (INTER, HIDDEN)),
               (p + "mlp.down_proj.weight", (HIDDEN, INTER))]
    ts += [("model.norm.weight", (HIDDEN,)), ("lm_head.weight", (32000, HIDDEN))]
    return ts


def nbytes(shape):
    n = 2
    for d in shape:
        n *= d
    return n


def write_checkpoint(d, total_bytes, shards):
    ts = plan_tensors(total_bytes)
    total = sum(nbytes(s) for _, s in ts)
    pattern = bf16_pattern(1 << 22)
    per_shard = (total + shards - 1) // shards
    groups, cur, size = [], [], 0
    for t in ts:
        cur.append(t)
        size += nbytes(t[1])
        if size >= per_shard and len(groups) < shards - 1:
            groups.append(cur)
            cur, size = [], 0
    if cur:
        groups.append(cur)
    wm = {}
    for si, g in enumerate(groups):
        fn = "model-%05d-of-%05d.safetensors" % (si + 1, len(groups))
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, shape in g:
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + nbytes(shape)]}
            off += nbytes(shape)
            wm[name] = fn
        hs = json.dumps(header).encode()
        hs += b" " * (-len(hs) % 8)
        with open(os.path.join(d, fn), "wb") as f:
            f.write(struct.pack("<Q", len(hs)) + hs)
            k = 0
            for name, shape in g:
                left = nbytes(shape)
                while left:
                    c = min(left, len(pattern) - k % len(pattern))
                    f.write(pattern[k % len(pattern): k % len(pattern) + c])
                    k += c + 2 * 977  # shift the pattern between writes
                    left -= c
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": HIDDEN, "torch_dtype": "bfloat16"}, f)
    return total, max(nbytes(s) for _, s in ts), len(groups)


def memcpy_gbs(mib=512, reps=5):
    src = bytearray(os.urandom(1 << 20)) * mib
    dst = bytearray(len(src))
    best = 1e9
    for _ in range(reps):
        t = time.perf_counter()
        dst[:] = src
        best = min(best, time.perf_counter() - t)
    return len(src) / best / 1e9


def read_gbs(d):
    files = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".safetensors")]
    buf = bytearray(64 << 20)
    mv = memoryview(buf)
    total = 0
    t = time.perf_counter()
    for fn in files:
        with open(fn, "rb", buffering=0) as f:
            while True:
                n = f.readinto(mv)
                if not n:
                    break
                total += n
    return total / (time.perf_counter() - t) / 1e9


def run(exe, fmt, device, threads, src, out, rss_file):
    """Seconds and peak RSS (bytes) of one conversion. The RSS comes from /usr/bin/time (a small parent): a child
    spawned from this Python process would report this process's RSS as its own (Linux keeps the pre-exec hiwater)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [exe, "--no-progress", "--format", fmt, "--device", device, "--threads", str(threads), src, out]
    timer = ["/usr/bin/time", "-f", "%M", "-o", rss_file] if os.path.exists("/usr/bin/time") else []
    t = time.perf_counter()
    p = subprocess.run(timer + cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    secs = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit("qnum-convert failed: %s\n%s" % (" ".join(cmd), p.stderr.decode()[-2000:]))
    if not timer:
        return secs, float("nan")
    with open(rss_file) as f:
        return secs, int(f.read().split()[-1]) * 1024  # KiB


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", default=os.path.join(here, "..", "..", "build", "apps", "qnum-convert", "qnum-convert"))
    ap.add_argument("--gb", type=float, default=3.0, help="checkpoint size in GB (default 3)")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--formats", default="w4a16,fp8-block")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--devices", default="cpu", help="cpu, gpu or cpu,gpu (gpu: the GPU path; its self-check of "
                    "the first tensor of each shape runs on the CPU threads and is part of the time)")
    ap.add_argument("--keep", default=None, help="use/keep this directory instead of a temporary one")
    a = ap.parse_args()
    root = a.keep or tempfile.mkdtemp(prefix="qnum_bench_convert_")
    src = os.path.join(root, "in")
    try:
        os.makedirs(src, exist_ok=True)
        t = time.perf_counter()
        total, largest, nshards = write_checkpoint(src, int(a.gb * 1e9), a.shards)
        print("checkpoint: %.2f GB bf16 in %d shards, largest tensor %.1f MB (written in %.0f s)"
              % (total / 1e9, nshards, largest / 1e6, time.perf_counter() - t))
        print("machine: %s, %d CPUs online" % (os.uname().machine, os.cpu_count()))
        mc = memcpy_gbs()
        rd = max(read_gbs(src), read_gbs(src))
        print("memcpy 512 MiB: %.2f GB/s copied; page-cache read of the checkpoint: %.2f GB/s" % (mc, rd))
        print("load average before the runs: %.2f %.2f %.2f" % os.getloadavg())
        print("%-10s %6s %7s %8s %9s %10s %12s %16s" % ("format", "device", "threads", "seconds", "in GB/s",
                                                          "vs memcpy", "peak RSS MB", "RSS - largest MB"))
        for fmt in a.formats.split(","):
            for dev in a.devices.split(","):
                for th in [int(x) for x in a.threads.split(",")]:
                    secs, rss = run(a.exe, fmt, dev, th, src, os.path.join(root, "out"), os.path.join(root, "rss.txt"))
                    gbs = total / secs / 1e9
                    print("%-10s %6s %7d %8.2f %9.3f %9.1f%% %12.0f %16.0f" % (fmt, dev, th, secs, gbs, 100 * gbs / mc,
                                                                             rss / 1e6, (rss - largest) / 1e6))
                    sys.stdout.flush()
        print("load average after the runs: %.2f %.2f %.2f" % os.getloadavg())
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
