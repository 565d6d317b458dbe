#!/usr/bin/env python3
"""Manual check that every qnum-convert output format loads in Hugging Face transformers on the CPU.

This is a manual check, not part of the test suite: no test runs it, and the tests need no Python. It needs
torch, transformers, compressed-tensors, accelerate (transformers asks for it for fp8-block) and a built
qnum-convert:

    python apps/qnum-convert/check_load.py build/apps/qnum-convert/qnum-convert /tmp/qnum-check-load

It makes two small random-initialised LlamaForCausalLM models (hidden 256, intermediate 512, 2 layers,
4 heads / 2 KV heads, vocabulary 1000, bf16, saved in four shards with an index; one with its own lm_head,
one with tie_word_embeddings) and converts each to every format, also with --work-dtype bf16 where the tool
offers it. Each output is loaded twice with AutoModelForCausalLM.from_pretrained(out_dir,
output_loading_info=True):

- as a user loads it (no arguments): compressed-tensors formats stay compressed and compressed-tensors
  decompresses them on the first forward (FP8 channel/tensor also quantize activations per token there);
  fp8-block (DeepSeek layout, quant_method fp8) goes through transformers' FineGrainedFP8 quantizer, which
  dequantizes to bf16 at load on a machine without an FP8 GPU;
- dequantized: CompressedTensorsConfig(dequantize=True) (fp8-block: the same load as above).

Each load must report no missing, unexpected or mismatched keys and no errors; the unquantized tensors
(embeddings, norms, lm_head) must equal the original's (nothing re-initialised); the tied model's lm_head must
still be its embeddings; the quantized layers must be quantized (compressed-tensors: a module with a
quantization_scheme; fp8: a bf16 weight within 5..60 dB of the original). A forward pass on fixed token ids
must give finite logits; the table shows ||l_q - l|| / ||l|| against the unquantized model. From the
dequantized load, the weights transformers holds for model.layers.0.self_attn.q_proj and
model.layers.0.mlp.down_proj are compared with the original's: SQNR in dB (the untied model's in the table),
which must lie within 5..60 dB.

Known upstream failure: transformers 5.23 with compressed-tensors 0.20 cannot load any asymmetric W4A16
(pack-quantized with weight_zero_point) checkpoint compressed: compressed-tensors' PackedQuantizationCompressor
builds the module on the meta device with weight_zero_point unpacked, [out, groups], while its own compress()
writes it packed along dim 0, [out / 8, groups] (as vLLM reads it). The script builds compressed-tensors' own
checkpoint for the same model and scheme as a control: if the control fails the same way, the output's failure
is reported as upstream and does not fail the run (the dequantized load must still pass).

Prints one table (and the failures); exits 1 if any output fails a check that compressed-tensors' own
checkpoint passes.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import shutil
import subprocess
import sys
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM  # noqa: E402

# (label, qnum-convert arguments, also with --work-dtype bf16)
FORMATS = [
    ("w4a16 sym g128", ["--format", "w4a16", "--group", "128"], True),
    ("w4a16 sym g32", ["--format", "w4a16", "--group", "32"], True),
    ("w4a16 asym g128", ["--format", "w4a16", "--group", "128", "--asym"], True),
    ("w4a16 asym g32", ["--format", "w4a16", "--group", "32", "--asym"], True),
    ("fp8-channel", ["--format", "fp8-channel"], True),
    ("fp8-tensor", ["--format", "fp8-tensor"], True),
    ("fp8-block", ["--format", "fp8-block"], False),
    ("nvfp4", ["--format", "nvfp4"], True),
    ("nvfp4 --fuse none", ["--format", "nvfp4", "--fuse", "none"], False),
    ("mxfp4", ["--format", "mxfp4"], True),
]

SQNR_LAYERS = ["model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj"]
TOKENS = [[1, 17, 242, 999, 3, 512, 77, 640, 5, 128, 901, 33, 2, 450, 808, 61]]


def make_model(path: str, tied: bool) -> None:
    torch.manual_seed(1234 if tied else 4321)
    cfg = LlamaConfig(
        vocab_size=1000,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=tied,
        dtype="bfloat16",
    )
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    # Projections of different magnitudes (as trained models have), so per-tensor and shared scales matter.
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            layer.self_attn.k_proj.weight.mul_(3.0)
            layer.mlp.up_proj.weight.mul_(0.25 * (i + 1))
            layer.mlp.down_proj.weight[0, :].mul_(8.0)  # an outlier row
    model.save_pretrained(path, max_shard_size="1MB")
    shards = [f for f in os.listdir(path) if f.endswith(".safetensors")]
    if len(shards) < 2 or not os.path.exists(os.path.join(path, "model.safetensors.index.json")):
        raise RuntimeError(f"{path}: expected >= 2 shards with an index, got {shards}")


def ct_reference_asym(src: str, out: str, group: int) -> None:
    """compressed-tensors' own W4A16 asymmetric checkpoint of `src` (min-max qparams, its compressor)."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig, QuantizationScheme,
                                                 QuantizationStatus, apply_quantization_config)
    from compressed_tensors.quantization.utils.helpers import calculate_qparams
    from safetensors.torch import save_file

    model = AutoModelForCausalLM.from_pretrained(src)
    args = QuantizationArgs(num_bits=4, type="int", symmetric=False, strategy="group", group_size=group)
    scheme = QuantizationScheme(targets=["Linear"], weights=args)
    apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"]))
    with torch.no_grad():
        for _, mod in model.named_modules():
            if hasattr(mod, "quantization_scheme"):
                w = mod.weight.float().reshape(mod.weight.shape[0], -1, group)
                s, z = calculate_qparams(w.amin(-1), w.amax(-1), args)
                mod.weight_scale.copy_(s.to(mod.weight_scale.dtype))
                mod.weight_zero_point.copy_(z.to(mod.weight_zero_point.dtype))
                mod.quantization_status = QuantizationStatus.FROZEN
    comp = ModelCompressor.from_pretrained_model(model, "pack-quantized")
    comp.compress_model(model)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    sd = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight" or not
          model.config.tie_word_embeddings}
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(os.path.join(src, "config.json"), os.path.join(out, "config.json"))
    comp.update_config(out)


def cached_reference(refs: dict, src: str, out: str, group: int) -> str:
    if out not in refs:
        ct_reference_asym(src, out, group)
        refs[out] = True
    return out


def sqnr_db(ref: torch.Tensor, q: torch.Tensor) -> float:
    err = (q.float() - ref.float()).pow(2).sum().item()
    return math.inf if err == 0 else 10.0 * math.log10(ref.float().pow(2).sum().item() / err)


def rel_err(ref: torch.Tensor, q: torch.Tensor) -> float:
    return ((q.float() - ref.float()).norm() / ref.float().norm()).item()


def quant_method(d: str) -> str:
    with open(os.path.join(d, "config.json")) as f:
        return json.load(f)["quantization_config"]["quant_method"]


def load(d: str, dequantize: bool, ignore_mismatched_sizes: bool = False):
    kw = {}
    if dequantize and quant_method(d) == "compressed-tensors":
        from transformers import CompressedTensorsConfig

        kw["quantization_config"] = CompressedTensorsConfig(dequantize=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoModelForCausalLM.from_pretrained(d, output_loading_info=True,
                                                    ignore_mismatched_sizes=ignore_mismatched_sizes, **kw)


def info_problems(info: dict) -> list[str]:
    out = []
    for k in ("missing_keys", "unexpected_keys", "error_msgs"):
        if info.get(k):
            v = sorted(map(str, info[k]))
            out.append(f"{k} ({len(v)}): {v[:3]}{' ...' if len(v) > 3 else ''}")
    mm = info.get("mismatched_keys")
    if mm:
        names = sorted({n.rsplit(".", 1)[-1] for n, *_ in mm})
        n0, a, b = sorted(mm)[0]
        out.append(f"mismatched sizes ({len(mm)} tensors, {', '.join(names)}): {n0} checkpoint {list(a)} "
                   f"vs model {list(b)}")
    return out


def try_load(d: str, dequantize: bool):
    """(model, problems); model None when loading raised."""
    try:
        model, info = load(d, dequantize)
        return model, info_problems(info)
    except Exception as e:  # noqa: BLE001
        msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
        if "ignore_mismatched_sizes" in str(e):
            # transformers logs the shapes as a warning report; get them from the loading info instead
            try:
                _, info = load(d, dequantize, ignore_mismatched_sizes=True)
                msg += " [" + "; ".join(info_problems(info)) + "]"
            except Exception:  # noqa: BLE001
                pass
        return None, [msg]


def check_model(model, ref_sd, tied, method, dequantized) -> list[str]:
    probs = []
    sd = model.state_dict()
    for name, t in ref_sd.items():
        if ("embed" in name or "norm" in name or name.startswith("lm_head")) and name in sd:
            if not torch.equal(sd[name].to(t.dtype), t):
                probs.append(f"{name} differs from the original (re-initialised?)")
    if tied and not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight):
        probs.append("lm_head is not tied to embed_tokens")
    for m in SQNR_LAYERS:
        mod = model.get_submodule(m)
        if method == "compressed-tensors" and not dequantized and not hasattr(mod, "quantization_scheme"):
            probs.append(f"{m} is not a compressed-tensors quantized module")
        if method == "fp8":
            # dequantized at load (no FP8 GPU), the quantizer then removed: the weight must be the FP8 data's
            w = mod.weight
            if w.dtype != torch.bfloat16 or not 5.0 < sqnr_db(ref_sd[m + ".weight"], w) < 60.0:
                probs.append(f"{m}.weight is not the dequantized FP8 weight ({w.dtype})")
    return probs


def forward(model, ref_logits, probs, what):
    with torch.no_grad():
        logits = model(torch.tensor(TOKENS)).logits
    if not torch.isfinite(logits).all():
        probs.append(f"non-finite logits ({what})")
    return rel_err(ref_logits, logits)


def check_one(exe, args, work, src, out, ref_sd, ref_logits, tied, reference):
    r = {"default": None, "dequant": None, "rel": None, "rel_dq": None, "sqnr": None, "problems": [],
         "upstream": []}
    cmd = [exe, *args, "--threads", "1", "--device", "cpu", "--no-progress", "--overwrite", src, out]
    if work == "bf16":
        cmd[1:1] = ["--work-dtype", "bf16"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        r["problems"].append(f"qnum-convert exited {p.returncode}: {p.stderr.strip()[-300:]}")
        return r
    method = quant_method(out)

    # as a user loads it
    model, probs = try_load(out, dequantize=False)
    r["default"] = model is not None and not probs
    if model is not None:
        probs += check_model(model, ref_sd, tied, method, dequantized=method == "fp8")
        r["rel"] = forward(model, ref_logits, probs, "default load")
        r["default"] = not probs
        del model
    if probs and reference is not None:
        # the same failure with compressed-tensors' own checkpoint: upstream
        ref_model, ref_probs = try_load(reference(), dequantize=False)
        if ref_model is None and ref_probs == probs[:1]:
            r["upstream"] = [f"default load: {probs[0]} (compressed-tensors' own checkpoint: the same error)"]
            probs = []
    r["problems"] += ["default load: " + p for p in probs]

    # dequantized: the weights transformers holds
    model, probs = try_load(out, dequantize=True)
    if model is not None:
        probs += check_model(model, ref_sd, tied, method, dequantized=True)
        r["rel_dq"] = forward(model, ref_logits, probs, "dequantized")
        sq = []
        for m in SQNR_LAYERS:
            w = model.get_submodule(m).weight
            if w.dtype not in (torch.bfloat16, torch.float16, torch.float32) or w.shape != ref_sd[m + ".weight"].shape:
                probs.append(f"{m}.weight after dequantization: {w.dtype} {list(w.shape)}")
            else:
                sq.append(sqnr_db(ref_sd[m + ".weight"], w))
        r["sqnr"] = sq
        if sq and not all(5.0 < s < 60.0 for s in sq):
            probs.append(f"weight SQNR {sq} dB outside 5..60 (not quantized, or decoded wrongly)")
        r["dequant"] = not probs
        del model
    else:
        r["dequant"] = False
    r["problems"] += ["dequantized load: " + p for p in probs]
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("qnum_convert", help="path of the qnum-convert binary")
    ap.add_argument("workdir", help="scratch directory (models and outputs are written here)")
    ap.add_argument("--only", default="", help="only the formats whose label contains this")
    a = ap.parse_args()
    exe = os.path.abspath(a.qnum_convert)
    os.makedirs(a.workdir, exist_ok=True)
    transformers.logging.set_verbosity_error()

    versions = [subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip(),
                f"transformers {transformers.__version__}", f"torch {torch.__version__}"]
    for mod, name in (("compressed_tensors", "compressed-tensors"), ("accelerate", "accelerate")):
        try:
            versions.append(f"{name} {__import__(mod).__version__}")
        except ImportError:
            versions.append(f"{name} missing")
    print(", ".join(versions) + "; CPU", flush=True)

    results = {}  # (label, work) -> {tied: row}
    for tied in (False, True):
        kind = "tied" if tied else "untied"
        src = os.path.join(a.workdir, "llama-" + kind)
        shutil.rmtree(src, ignore_errors=True)
        make_model(src, tied)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = AutoModelForCausalLM.from_pretrained(src)
        ref_sd = {k: v.clone() for k, v in ref.state_dict().items()}
        with torch.no_grad():
            ref_logits = ref(torch.tensor(TOKENS)).logits.float()
        del ref
        refs = {}
        for label, args, bf16 in FORMATS:
            if a.only and a.only not in label:
                continue
            reference = None
            if "--asym" in args:
                group = int(args[args.index("--group") + 1])
                ref_dir = os.path.join(a.workdir, "out", f"ct-reference-asym-g{group}-{kind}")
                reference = functools.partial(cached_reference, refs, src, ref_dir, group)

            for work in ("fp32", "bf16") if bf16 else ("fp32",):
                tag = f"{label}-{work}-{kind}".replace(" --", "-").replace(" ", "-")
                out = os.path.join(a.workdir, "out", tag)
                r = check_one(exe, args, work, src, out, ref_sd, ref_logits, tied, reference)
                results.setdefault((label, work), {})[kind] = r
                status = "ok" if r["default"] and r["dequant"] else "FAIL" if r["problems"] else "upstream"
                print(f"  {kind:6} {label} ({work}): {status}", flush=True)

    def yn(r, k):
        return "yes" if r[k] else "no"

    def num(x, fmt=".3f"):
        return "-" if x is None else format(x, fmt)

    print()
    print("| format | --work-dtype | loads (default / dequantize=True) | logits rel. error, default load "
          "(untied / tied) | logits rel. error, dequantized (untied / tied) | weight SQNR dB, q_proj / down_proj |")
    print("|---|---|---|---|---|---|")
    failures, upstream = [], []
    for (label, work), by in results.items():
        u, t = by.get("untied"), by.get("tied")
        rows = [x for x in (u, t) if x]
        loads = " / ".join(("yes" if all(x[k] for x in rows) else "no") for k in ("default", "dequant"))
        sq = " / ".join(f"{s:.1f}" for s in (u or t)["sqnr"] or []) or "-"
        print(f"| {label} | {work} | {loads} | {num(u and u['rel'])} / {num(t and t['rel'])} "
              f"| {num(u and u['rel_dq'])} / {num(t and t['rel_dq'])} | {sq} |")
        for kind, x in by.items():
            failures += [f"{label} ({work}, {kind}): {p}" for p in x["problems"]]
            upstream += [f"{label} ({work}, {kind}): {p}" for p in x["upstream"]]
    if upstream:
        print("\nupstream (compressed-tensors' own checkpoint fails the same way):")
        print("\n".join("- " + x for x in upstream))
    if failures:
        print("\nFAILURES:")
        print("\n".join("- " + x for x in failures))
    n = sum(len(by) for by in results.values())
    print(f"\n{n} outputs: {len(failures)} failures, {len(upstream)} upstream failures of the default load")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
