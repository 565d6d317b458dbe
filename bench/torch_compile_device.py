#!/usr/bin/env python3
"""bench/torch_compile_device.py: the torch.compile (Inductor / Triton) column for qnum-bench-device.

What a PyTorch user gets from torch.compile for the operations that qnum-bench-device
(bench/throughput_device.cu) times, measured the same way, so that both can be run in one GPU session
and compared row by row.

    python3 bench/torch_compile_device.py [--quick] [--headline] [--reps N] [--calls N] [--filter TEXT]
                                          [--csv FILE] [--md FILE] [--join QNUM_CSV]
    python3 bench/torch_compile_device.py --check [--device cuda|cpu]
    python3 bench/torch_compile_device.py --load TORCH_CSV --join QNUM_CSV      (no torch, no GPU)

Operations, dtype labels, shapes, byte counts and the timing protocol are those of qnum-bench-device:

* Same registry (names and dtype labels): group quantize INT8/INT4/FP8, per-row, per-tensor (two pass),
  W4A16 quantize+pack, dequantize, fake quantize, the INT8 gradient with error feedback and its
  dequantization. Each is one Python function of torch operations (fp32 arithmetic, bf16 inputs
  upcast), compiled with torch.compile(fullgraph=True, dynamic=False), once per operation and shape.
* Large shapes (8192x8192 and 32768x4096; --quick: 4096x4096), cold L2: before every run a read of a
  buffer of twice the L2 size (at least 32 MiB), CUDA events around one call, every run queued behind a
  sleep kernel long enough to cover the host's enqueue time; median and min of --reps runs (default 50;
  --quick: 10). GB/s counts every byte read and written once (the per-tensor path counts its input
  twice). Baseline: torch copy_ (a cudaMemcpyAsync D2D) of the same traffic, half read and half
  written, timed the same way in the same run: "% copy". "% peak": 2 x memory clock x bus width.
* Small shapes (1, 16, 64, 256 rows x 4096; --quick: 1 and 256), warm L2, microseconds per call:
  eager = --calls (default 100) back-to-back calls of the compiled function from an idle stream (the
  Python and launch overhead included) / calls; graph = the same calls captured in one CUDA graph
  (torch.cuda.CUDAGraph), replays queued ahead, / calls.
* qnum's targets are applied to these rows too: large shapes >= 90 % of the copy, small
  shapes <= 3 us per call under a graph. A miss does not change the exit status.

The formulas are those of qnum's presets (include/qnum/presets.hpp, scale.hpp compute_params,
quantize.hpp, dynamic_scale.hpp; docs/schemes.md, docs/qgalore.md), written as a PyTorch user would:

  quantize int8 sym gG         s = amax/127 (all-zero group: 1), q = clamp(rne(x/s), -127, 127)
  quantize int4 sym gG         slime QAT: s = max(amax/7, 1e-5), q = clamp(rne(x/s), -7, 7)
  quantize int4 asym g128      compressed-tensors: s = (max'-min')/15 (0 -> eps), z = rne(clamp(-8 -
                               min'/s)), q = rne(clamp(x/s + z, -8, 7)); int32 zero points
  quantize fp8 e4m3 1x128 /    DeepGEMM: s = max(amax/448, fl(1e-4/448)), e4m3 = satfinite(x * fl(1/s))
    128x128
  quantize int8 per-row        torchao: s = max(amax/127.5, FLT_MIN), q = clamp(rne(x * fl(1/s)), -128, 127)
  quantize fp8 per-tensor      TransformerEngine current scaling: m = 448/amax (0 -> 1), e4m3 =
                               satfinite(x*m), stored 1/m
  w4a16 quantize+pack g128     compressed-tensors sym (s = amax/7.5, 0 -> eps, q = rne(clamp(x/s,
                               -8, 7))) or asym; words of 8 nibbles q+8, element k at bits 4(k%8)
  dequantize                   (q - z) * s in fp32, rounded once to the output type
  fake quantize int4 gG        slime: q * s, rounded once to the input type
  grad int8 + error feedback   qnum dynamic_scale (per tensor, delayed scale, alpha 0.99, clip 2,
                               floor 1e-6, non-finite elements zeroed): x = g + r, inv = 127/s,
                               dq = s/127, q = rne(clamp(x*inv, -127, 127)), r = x - q*dq; the
                               timed steps are the one-pass delayed steps (the warm-up is step 0)
  dequantize grad int8         q * (s/127) -> bf16

Codes are stored as qnum stores them: one byte per element (int8 two's complement, int4 in the low
nibble, e4m3 bytes), fp32 scales, int32 zero points, int32 packed words.

Where torch differs from qnum by design (the benchmark data is finite, so timings are unaffected):
qnum's statistics ignore NaN and +-Inf; torch's amax/amin propagate NaN (written as a user would,
amax over abs). A NaN input gives torch NaN codes (integer casts of NaN are undefined), qnum the zero
point. Fake quantize of a small negative x gives -0.0 here (rounding in float, as slime does) where
qnum gives +0.0. One torch trap is avoided on purpose: `python_scalar / tensor` is reciprocal(tensor) *
scalar in torch (two roundings), so 448/amax (TE) and 127/s (gradient) divide a full_like tensor.
torch.compile's own numerics on CUDA: division by a constant becomes a
multiplication by its reciprocal (so amax/127 is computed as amax * fl(1/127)), fp32 tensor division
is div.full.f32 (<= 2 ulp) unless --eager-numerics, and Triton may contract a*b+c into an FMA; --check
reports how many outputs that changes.

--check: (1) on the CPU, eagerly: the formulas against tests/data/groupquant.bin and
tests/data/layouts_golden.txt (slime, compressed-tensors, torchao, DeepGEMM references, which qnum's
tests match bit for bit), against an independent scalar float32 model of qnum's rules (pure Python)
on random and edge-case inputs, and against a few values worked out by hand; (2) on --device (default
cuda; cpu uses Inductor's C++ backend) the torch.compile output of every benchmarked operation against
the eager output of the same function, on 256 x 4096 (--check-shape), three steps for the gradient.
Bit-for-bit equality is reported as such; otherwise the output passes with a note when codes differ by
at most one (one e4m3 step) in at most 0.1 % of the elements, scales by at most 2^-20 relative, and
values (dequantized, fake quantized, residuals) by a rounding, or by more in at most 0.1 % of the
elements (a flipped code); anything else fails. Without a CUDA device (1) still runs; (2) is skipped
unless --device cpu.

Exit status: 0 after the run (or a passing --check); 1 on a failed check or an error; 2 on a bad
argument; 77 when torch (or triton) is missing or there is no usable CUDA device (meson's SKIP), except
for --check without a GPU, which runs its CPU part, and --load/--join, which need neither.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import os
import struct
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

EXIT_SKIP = 77
PROG = "torch_compile_device"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV_COLUMNS = ["operation", "dtype", "rows", "cols", "mode", "median_us", "min_us", "bytes", "gbps", "copy_gbps",
               "pct_copy", "pct_peak", "target", "meets", "impl"]
IMPL = "torch.compile"

torch = None  # imported by need_torch(), so that --help and --load/--join work without it


def msg(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr)


def need_torch() -> bool:
    """Import torch into the module global; False (with a message) when it is missing or too old."""
    global torch
    try:
        import torch as t  # noqa: PLC0415
    except ImportError as e:
        print(f"{PROG}: SKIP: torch is not installed ({e})")
        return False
    if not hasattr(t, "float8_e4m3fn"):
        print(f"{PROG}: SKIP: torch {t.__version__} has no float8_e4m3fn (2.1 or later needed)")
        return False
    torch = t
    return True


# ---------------------------------------------------------------------------------------------------
# float32 constants as qnum's C++ spells them

def f32(v: float) -> float:
    """v rounded to the nearest float32 (ties to even), as a Python float; overflow gives +-inf."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


FLT_MAX = f32(3.4028234663852886e38)
FLT_MIN = 2.0 ** -126                 # torchao's eps (finfo(float32).smallest_normal)
FP32_EPS = 2.0 ** -23                 # compressed-tensors' eps (finfo(float32).eps)
BF16_MAX = 3.3895313892515355e38      # largest finite bf16
E4M3_MAX = 448.0
SLIME_EPS = f32(1e-5)
DEEPGEMM_EPS = f32(f32(1e-4) / 448.0)  # 1e-4f / 448.0f (one fp32 division: exact via double)
GRAD_ALPHA = f32(0.99)                 # dynamic_scale_config defaults
GRAD_BETA = f32(1.0 - GRAD_ALPHA)      # fl(1 - alpha), as dynamic_scale_update computes it
GRAD_CLIP = 2.0
GRAD_FLOOR = f32(1e-6)


# ---------------------------------------------------------------------------------------------------
# Schemes: the fields of qnum::scheme that the benchmarked presets set (include/qnum/presets.hpp)

@dataclass(frozen=True)
class Scheme:
    name: str
    kind: str                  # sym_restricted, sym_full, asym, float_amax, te_current
    qmin: int = 0              # code range (sym_restricted: -qmax); sym_full/asym: the format's range
    qmax: int = 0
    fmax: float = 0.0          # float element formats: largest finite value
    eps_rule: str = "none"     # none (all-zero group -> scale 1), floor (max(s, eps)), zero_to (0 -> eps)
    eps: float = 0.0
    x_multiply: bool = False   # codes from x * fl(1/s) instead of x / s
    zero_first: bool = False   # asym: rne(clamp(x/s + z)) (compressed-tensors)
    bits: int = 8              # integer formats: 8 or 4 (4: stored in the low nibble)

    @property
    def is_float(self) -> bool:
        return self.kind in ("float_amax", "te_current")

    def denominator(self) -> float:
        if self.kind == "sym_restricted":
            return float(self.qmax)
        if self.kind == "sym_full":
            return (self.qmax - self.qmin) * 0.5
        if self.kind == "asym":
            return float(self.qmax - self.qmin)
        return self.fmax


INT8_SYM = Scheme("symmetric_restricted<qint8>", "sym_restricted", -127, 127)
SLIME_INT4 = Scheme("slime_int4_qat", "sym_restricted", -7, 7, eps_rule="floor", eps=SLIME_EPS, bits=4)
CT_W4A16_SYM = Scheme("ct_w4a16_sym", "sym_full", -8, 7, eps_rule="zero_to", eps=FP32_EPS, bits=4)
CT_W4A16_ASYM = Scheme("ct_w4a16_asym", "asym", -8, 7, eps_rule="zero_to", eps=FP32_EPS, zero_first=True, bits=4)
TORCHAO_INT8 = Scheme("torchao_int8_sym", "sym_full", -128, 127, eps_rule="floor", eps=FLT_MIN, x_multiply=True)
DEEPGEMM_FP8 = Scheme("deepgemm_fp8", "float_amax", fmax=E4M3_MAX, eps_rule="floor", eps=DEEPGEMM_EPS,
                      x_multiply=True)
TE_FP8 = Scheme("te_fp8_current", "te_current", fmax=E4M3_MAX, x_multiply=True)


# ---------------------------------------------------------------------------------------------------
# The formulas (pure torch; what gets compiled). Groups are gr x gc (0 = the whole extent); a group
# the tensor does not fill is padded with zeros, which changes no statistic (every range includes 0).

def _rdiv(num: float, t):
    """num / t as one fp32 division. torch evaluates `python_scalar / tensor` as reciprocal(t) * num (two
    roundings: fl(448/3) != fl(fl(1/3) * 448)), which is not the formula; a tensor numerator is."""
    return torch.full_like(t, num) / t


def _grouped(x, gr: int, gc: int):
    """x [rows, cols] as fp32 [nr, gr, nc, gc]."""
    rows, cols = x.shape
    gr = rows if gr == 0 or gr >= rows else gr
    gc = cols if gc == 0 or gc >= cols else gc
    nr, nc = -(-rows // gr), -(-cols // gc)
    xf = x.float()
    if nr * gr != rows or nc * gc != cols:
        xf = torch.nn.functional.pad(xf, (0, nc * gc - cols, 0, nr * gr - rows))
    return xf.view(nr, gr, nc, gc)


def _ungrouped(t, rows: int, cols: int):
    """[nr, gr, nc, gc] back to [rows, cols] (padding dropped)."""
    nr, gr, nc, gc = t.shape
    t = t.reshape(nr * gr, nc * gc)
    if nr * gr != rows or nc * gc != cols:
        t = t[:rows, :cols].contiguous()
    return t


def _params(s: Scheme, xg):
    """Per-group (scale, encode multiplier or None, zero point or None), each [nr, 1, nc, 1] fp32:
    qnum compute_params for the schemes above (fp32 scales)."""
    if s.kind == "te_current":
        amax = xg.abs().amax(dim=(1, 3), keepdim=True)
        m = torch.where(amax > 0, _rdiv(s.fmax, amax), 1.0).clamp(max=FLT_MAX)  # amax 0 -> 1; Inf -> FLT_MAX
        return 1.0 / m, m, None
    if s.kind == "asym":
        lo = xg.amin(dim=(1, 3), keepdim=True).clamp(max=0.0)
        hi = xg.amax(dim=(1, 3), keepdim=True).clamp(min=0.0)
        sc = (hi - lo) / s.denominator()
    else:
        sc = xg.abs().amax(dim=(1, 3), keepdim=True) / s.denominator()
    if s.eps_rule == "floor":
        sc = sc.clamp(min=s.eps)
    elif s.eps_rule == "zero_to":
        sc = torch.where(sc == 0, s.eps, sc)
    else:
        sc = torch.where(sc == 0, 1.0, sc)  # all-zero group: scale 1, codes 0
    if s.kind == "asym":
        sc = sc.clamp(max=FLT_MAX)  # max' - min' can overflow
        z = torch.round(float(s.qmin) - (lo / sc).clamp(min=-1e9)).clamp(s.qmin, s.qmax)
        return sc, None, z
    return sc, (1.0 / sc if s.x_multiply else None), None


def _int_codes(s: Scheme, xg, sc, inv, z):
    """Integer codes as fp32 values (clamp then round: the same as round then clamp for integer bounds)."""
    v = xg * inv if s.x_multiply else xg / sc
    if z is None:
        return torch.round(v.clamp(s.qmin, s.qmax))
    if not s.zero_first:
        raise ValueError("only zero-before-round asymmetric schemes are benchmarked")
    return torch.round((v + z).clamp(s.qmin, s.qmax))


def _fp8_codes(s: Scheme, xg, inv):
    """e4m3 codes: RNE, saturated to +-448 (qnum's satfinite; torch's cast alone would give NaN above 464)."""
    return (xg * inv).clamp(-s.fmax, s.fmax).to(torch.float8_e4m3fn)


def _store_int(s: Scheme, q):
    """fp32 integer values -> qnum's code bytes: int8, or the int4 two's complement in the low nibble."""
    if s.bits == 8:
        return q.to(torch.int8)
    return (q.to(torch.int32) & 0xF).to(torch.uint8)


def quantize_groups(x, s: Scheme, gr: int, gc: int):
    """(codes [rows, cols] bytes, scales [nr, nc] fp32[, zero points [nr, nc] int32])."""
    rows, cols = x.shape
    xg = _grouped(x, gr, gc)
    sc, inv, z = _params(s, xg)
    q = _fp8_codes(s, xg, inv) if s.is_float else _store_int(s, _int_codes(s, xg, sc, inv, z))
    codes = _ungrouped(q, rows, cols)
    scales = sc.reshape(sc.shape[0], sc.shape[2])
    if z is None:
        return codes, scales
    return codes, scales, z.to(torch.int32).reshape(z.shape[0], z.shape[2])


def code_values(s: Scheme, codes):
    """Code bytes -> fp32 values (int4: sign-extend the low nibble)."""
    if s.is_float or s.bits == 8:
        return codes.float()
    c = codes.to(torch.int32)
    return ((c ^ 8) - 8).float()


def dequantize_groups(codes, scales, s: Scheme, gr: int, gc: int, out_dtype, zeros=None):
    """(q - z) * s in fp32, rounded once to out_dtype."""
    rows, cols = codes.shape
    vg = _grouped(code_values(s, codes), gr, gc)
    nr, nc = vg.shape[0], vg.shape[2]
    if zeros is not None:
        vg = vg - zeros.float().view(nr, 1, nc, 1)
    out = vg * scales.view(nr, 1, nc, 1)
    return _ungrouped(out, rows, cols).to(out_dtype)


def fake_quantize_groups(x, s: Scheme, gr: int, gc: int):
    """dequantize(quantize(x)) for the symmetric integer schemes, in x's dtype."""
    rows, cols = x.shape
    xg = _grouped(x, gr, gc)
    sc, inv, z = _params(s, xg)
    return _ungrouped(_int_codes(s, xg, sc, inv, z) * sc, rows, cols).to(x.dtype)


def pack_int4_words(q):
    """compressed-tensors pack_to_int32 along the rows: int values [rows, cols] (cols % 8 == 0) in [-8, 7]
    -> int32 [rows, cols/8], element k at bits 4*(k % 8) of word k // 8, stored as q + 8."""
    n = (q + 8).view(q.shape[0], q.shape[1] // 8, 8)
    w = n[..., 0]
    for k in range(1, 8):
        w = w | (n[..., k] << (4 * k))  # int32 shifts wrap, as in compressed-tensors
    return w


def w4a16_quantize_pack(x, s: Scheme, group: int):
    """(weight_packed int32 [rows, cols/8], weight_scale fp32 [rows, groups][, zero points int32])."""
    rows, cols = x.shape
    xg = _grouped(x, 1, group)
    sc, inv, z = _params(s, xg)
    q = _ungrouped(_int_codes(s, xg, sc, inv, z), rows, cols).to(torch.int32)
    words = pack_int4_words(q)
    scales = sc.reshape(sc.shape[0], sc.shape[2])
    if z is None:
        return words, scales
    return words, scales, z.to(torch.int32).reshape(z.shape[0], z.shape[2])


def grad_scale_update(prev, amax):
    """qnum dynamic_scale_update (0-dim fp32 tensors)."""
    have_prev = (prev > 0) & torch.isfinite(prev)
    nw = torch.where(amax > GRAD_FLOOR, amax, GRAD_FLOOR)
    sm = GRAD_ALPHA * prev + GRAD_BETA * nw
    sm = torch.maximum(sm, prev / GRAD_CLIP)
    sm = torch.minimum(sm, prev * GRAD_CLIP)
    sm = sm.clamp(max=FLT_MAX).clamp(min=GRAD_FLOOR)
    s = torch.where(have_prev, sm, nw)
    return torch.where(torch.isfinite(amax), s, torch.where(have_prev, prev, GRAD_FLOOR))


def grad_int8_step(g, residual, state, first: bool):
    """One qnum quantize_gradient_int8 step on the whole tensor (per_tensor()): delayed scaling, non-finite
    elements zeroed. residual (fp32 or bf16) and state (fp32 [scale, amax]) are updated in place; returns
    the int8 codes. first: step 0 (scale from this step's amax, an extra pass)."""
    r_old = residual.float()
    x = g + r_old
    finite = torch.isfinite(x)
    ax = torch.where(finite, x.abs(), 0.0)
    amax = ax.amax()
    s = torch.where(amax > GRAD_FLOOR, amax, GRAD_FLOOR) if first else grad_scale_update(state[0], state[1])
    inv = _rdiv(127.0, s).clamp(max=FLT_MAX)
    dq = s / 127.0
    q = torch.where(finite, torch.round((x * inv).clamp(-127.0, 127.0)), 0.0)
    r_new = torch.where(finite, x - q * dq, r_old)
    if residual.dtype == torch.bfloat16:
        r_new = r_new.clamp(-BF16_MAX, BF16_MAX)  # stored RNE, saturated to the largest finite bf16
    residual.copy_(r_new)
    state.copy_(torch.stack([s, amax]))
    return q.to(torch.int8)


def grad_int8_dequantize(codes, state):
    """qnum dequantize_gradient_int8 to bf16: q * fl(s/127) (0 when there is no scale yet)."""
    s = state[0]
    return (codes.float() * torch.where(s > 0, s / 127.0, 0.0)).to(torch.bfloat16)


# ---------------------------------------------------------------------------------------------------
# The registry: qnum-bench-device's make_ops(), same names, dtype labels and byte counts

def _groups(rows: int, cols: int, gr: int, gc: int) -> int:
    gr = rows if gr == 0 else gr
    gc = cols if gc == 0 else gc
    return -(-rows // gr) * -(-cols // gc)


@dataclass
class BenchOp:
    name: str
    dtype: str
    fn: Callable                              # the function compiled and timed
    make_args: Callable                       # (inputs, rows, cols) -> argument list (prepare)
    nbytes: Callable[[int, int], float]       # every byte read and written, once
    kinds: Tuple[str, ...]                    # output kinds, for --check
    stateful: bool = False                    # gradient step: fn(*args, first)


class Inputs:
    """The benchmark data for one shape: approximately N(0, 1), every 4099th element x32 (the
    distribution of qnum-bench-device's fill kernel, not its bits), fp32 and its bf16 rounding."""

    def __init__(self, rows: int, cols: int, device, seed: int = 20261121):
        gen = torch.Generator(device=device).manual_seed(seed)
        self.f32 = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32)
        self.f32.view(-1)[17::4099] *= 32.0
        self.bf16 = self.f32.to(torch.bfloat16)

    def get(self, label: str):
        return self.bf16 if label == "bf16" else self.f32


def make_ops() -> List[BenchOp]:
    ops: List[BenchOp] = []
    esize = {"bf16": 2, "fp32": 4}
    odtype = {"->bf16": "bfloat16", "->fp32": "float32"}

    def add_quantize(name, label, s, gr, gc, two_pass=False):
        T = esize[label]
        param_bytes = 4 + (4 if s.kind == "asym" else 0)  # fp32 scale (+ int32 zero point) per group
        kinds = ("fp8" if s.is_float else ("int4" if s.bits == 4 else "int"), "scale") + (
            ("int",) if s.kind == "asym" else ())
        ops.append(BenchOp(
            name, label, lambda x: quantize_groups(x, s, gr, gc),
            lambda inp, r, c: [inp.get(label)],
            lambda r, c: r * c * (T * (2 if two_pass else 1) + 1) + _groups(r, c, gr, gc) * param_bytes,
            kinds))

    def add_pack(name, s, group):
        ops.append(BenchOp(
            name, "bf16", lambda x: w4a16_quantize_pack(x, s, group),
            lambda inp, r, c: [inp.bf16],
            lambda r, c: r * c * 2 + r * -(-c // 8) * 4 + _groups(r, c, 1, group) * (8 if s.kind == "asym" else 4),
            ("packed", "scale") + (("int",) if s.kind == "asym" else ())))

    def add_dequantize(name, label, s, gr, gc):
        U = esize[label[2:]]

        def args(inp, r, c):
            codes, scales = quantize_groups(inp.bf16, s, gr, gc)[:2]  # the bf16 quantize, eagerly
            return [codes, scales]
        ops.append(BenchOp(
            name, label,
            lambda codes, scales: dequantize_groups(codes, scales, s, gr, gc, getattr(torch, odtype[label])),
            args, lambda r, c: r * c * (1 + U) + _groups(r, c, gr, gc) * 4, (label[2:],)))

    def add_fake(name, label, s, gr, gc):
        T = esize[label]
        ops.append(BenchOp(name, label, lambda x: fake_quantize_groups(x, s, gr, gc),
                           lambda inp, r, c: [inp.get(label)], lambda r, c: r * c * 2 * T, (label,)))

    def add_grad(label):
        R = esize[label]

        def args(inp, r, c):
            res = torch.zeros(r, c, dtype=torch.float32 if label == "fp32" else torch.bfloat16, device=inp.f32.device)
            return [inp.f32, res, torch.zeros(2, dtype=torch.float32, device=inp.f32.device)]
        ops.append(BenchOp("grad int8 + error feedback (per tensor)", "res " + label, grad_int8_step, args,
                           lambda r, c: r * c * (4 + 1 + 2 * R), ("int",), stateful=True))

    def add_grad_dequant():
        def args(inp, r, c):
            res = torch.zeros(r, c, dtype=torch.float32, device=inp.f32.device)
            state = torch.zeros(2, dtype=torch.float32, device=inp.f32.device)
            codes = grad_int8_step(inp.f32, res, state, True)
            return [codes, state]
        ops.append(BenchOp("dequantize grad int8 (per tensor)", "->bf16", grad_int8_dequantize, args,
                           lambda r, c: r * c * 3, ("bf16",)))

    # (name, scheme, block rows, block cols, two-pass, input labels): qnum-bench-device's order.
    both, bf16_only = ("bf16", "fp32"), ("bf16",)
    for name, scheme, br, bc, two_pass, labels in (
            ("quantize int8 sym g128", INT8_SYM, 1, 128, False, both),
            ("quantize int8 sym g32", INT8_SYM, 1, 32, False, both),
            ("quantize int4 sym g128", SLIME_INT4, 1, 128, False, both),
            ("quantize int4 sym g32", SLIME_INT4, 1, 32, False, both),
            ("quantize int4 asym g128 (+zeros)", CT_W4A16_ASYM, 1, 128, False, bf16_only),
            ("quantize fp8 e4m3 1x128", DEEPGEMM_FP8, 1, 128, False, both),
            ("quantize fp8 e4m3 128x128", DEEPGEMM_FP8, 128, 128, False, both),
            ("quantize int8 per-row", TORCHAO_INT8, 1, 0, False, both),
            ("quantize fp8 e4m3 per-tensor (2 pass)", TE_FP8, 0, 0, True, both)):
        for label in labels:
            add_quantize(name, label, scheme, br, bc, two_pass=two_pass)
    add_pack("w4a16 quantize+pack sym g128", CT_W4A16_SYM, 128)
    add_pack("w4a16 quantize+pack asym g128", CT_W4A16_ASYM, 128)
    add_dequantize("dequantize int8 sym g128", "->bf16", INT8_SYM, 1, 128)
    add_dequantize("dequantize int8 sym g128", "->fp32", INT8_SYM, 1, 128)
    add_dequantize("dequantize int4 sym g128", "->bf16", SLIME_INT4, 1, 128)
    add_dequantize("dequantize fp8 e4m3 1x128", "->bf16", DEEPGEMM_FP8, 1, 128)
    for label in ("bf16", "fp32"):
        add_fake("fake quantize int4 g128", label, SLIME_INT4, 1, 128)
    for label in ("bf16", "fp32"):
        add_fake("fake quantize int4 g32", label, SLIME_INT4, 1, 32)
    add_grad("fp32")
    add_grad("bf16")
    add_grad_dequant()
    return ops


def compile_fn(fn, mode: Optional[str]):
    return torch.compile(fn, fullgraph=True, dynamic=False, mode=mode)


class Caller:
    """A zero-argument call of fn on prepared arguments; a gradient step passes first=True once."""

    def __init__(self, op: BenchOp, fn, args):
        self.op, self.fn, self.args, self.first = op, fn, args, True

    def __call__(self):
        if self.op.stateful:
            out = self.fn(*self.args, self.first)
            self.first = False
            return out
        return self.fn(*self.args)


# ---------------------------------------------------------------------------------------------------
# --check, part 1: the formulas against references, eagerly on the CPU

def read_groupquant(path: str) -> Dict[str, dict]:
    """tests/data/groupquant.bin (tools/gen_golden.py groupquant): name -> shape, groups, arrays (int32)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"QGV1":
        raise ValueError(path + ": not a QGV1 file")
    pos = 4

    def u32():
        nonlocal pos
        v = struct.unpack_from("<I", b, pos)[0]
        pos += 4
        return v

    def text():
        nonlocal pos
        n = u32()
        s = b[pos:pos + n].decode()
        pos += n
        return s
    cases = {}
    for _ in range(u32()):
        name = text()
        rows, cols, gr, gc, in_type, na = (u32() for _ in range(6))
        arrays = {}
        for _ in range(na):
            tag = text()
            n = u32()
            arrays[tag] = torch.frombuffer(bytearray(b[pos:pos + 4 * n]), dtype=torch.int32).clone()
            pos += 4 * n
        cases[name] = dict(rows=rows, cols=cols, gr=gr, gc=gc, in_type=in_type, a=arrays)
    return cases


def read_ct_layouts(path: str) -> List[Tuple[str, List[List[int]]]]:
    """tests/data/layouts_golden.txt records of compressed-tensors packing: (kind, groups of integers)."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith(("ctpack |", "ctcompress |")):
                parts = [p.strip() for p in line.split("|")]
                out.append((parts[0], [[int(v) for v in p.split()] if p else [] for p in parts[1:]]))
    return out


class Report:
    """Counts failures; prints one line per comparison."""

    def __init__(self):
        self.failed = 0
        self.passed = 0
        self.noted = 0

    def line(self, ok: bool, what: str, detail: str = "", note: bool = False):
        state = "ok  " if ok and not note else ("note" if ok else "FAIL")
        print(f"  {state} {what}{': ' + detail if detail else ''}")
        if not ok:
            self.failed += 1
        elif note:
            self.noted += 1
        else:
            self.passed += 1


def _bits(t):
    """fp32 tensor -> int32 bit patterns (-0.0 kept)."""
    return t.float().contiguous().view(torch.int32)


def exact(rep: Report, what: str, got, want_bits, signed_zero_ok: bool = False):
    """got (a float or int tensor) against golden int32 words: float bits, or integer values."""
    g = _bits(got) if got.is_floating_point() else got.to(torch.int32)
    g, w = g.reshape(-1), want_bits.reshape(-1)
    if g.numel() != w.numel():
        rep.line(False, what, f"{g.numel()} elements, golden {w.numel()}")
        return
    bad = g != w
    if signed_zero_ok:  # +0.0 against -0.0: the sign of a zero that depends on where the zero point is added
        zero = (g == 0) | (g == torch.iinfo(torch.int32).min)
        bad &= ~(zero & ((w == 0) | (w == torch.iinfo(torch.int32).min)))
    n = int(bad.sum())
    if n:
        i = int(bad.nonzero()[0])
        rep.line(False, what, f"{n} of {g.numel()} differ; first [{i}]: got 0x{int(g[i]) & 0xFFFFFFFF:08x}, "
                              f"want 0x{int(w[i]) & 0xFFFFFFFF:08x}")
    else:
        rep.line(True, what, f"{g.numel()} equal")


def check_goldens(rep: Report) -> None:
    path = os.path.join(REPO, "tests", "data", "groupquant.bin")
    if not os.path.exists(path):
        rep.line(False, "tests/data/groupquant.bin", "missing")
        return
    cases = read_groupquant(path)
    table = [  # case, scheme, output dtype of dequantize/fake quantize
        ("slime_qat_g32", SLIME_INT4), ("slime_qat_g128", SLIME_INT4),
        ("ct_sym_g32", CT_W4A16_SYM), ("ct_sym_g128", CT_W4A16_SYM),
        ("ct_asym_g32", CT_W4A16_ASYM), ("ct_asym_g128", CT_W4A16_ASYM),
        ("torchao_int8_sym_g64", TORCHAO_INT8),
        ("deepgemm_token", DEEPGEMM_FP8), ("deepgemm_block", DEEPGEMM_FP8),
    ]
    for name, s in table:
        c = cases.get(name)
        if c is None:
            rep.line(False, name, "missing from groupquant.bin")
            continue
        a = c["a"]
        x = a["x"].view(torch.float32).reshape(c["rows"], c["cols"])
        if c["in_type"] == 1:
            x = x.to(torch.bfloat16)  # exact: the golden holds bf16 values
        gr, gc = max(c["gr"], 1), c["gc"]
        out = quantize_groups(x, s, gr, gc)
        codes, scales = out[0], out[1]
        label = f"golden {name} ({s.name}, {c['rows']}x{c['cols']}, {'bf16' if c['in_type'] else 'fp32'} in)"
        exact(rep, label + " scale", scales, a["scale"])
        if "zero" in a and len(out) > 2:
            exact(rep, label + " zero point", out[2], a["zero"])
        q = codes.view(torch.uint8).to(torch.int32) if s.is_float else code_values(s, codes).to(torch.int32)
        exact(rep, label + " codes", q, a["q"])
        out_dtype = x.dtype if name.startswith("slime") else torch.float32
        if "dq" in a:
            dq = dequantize_groups(codes, scales, s, gr, gc, out_dtype, out[2] if len(out) > 2 else None)
            exact(rep, label + " dequantize", dq, a["dq"], signed_zero_ok=True)
        if name.startswith("slime"):
            exact(rep, label + " fake quantize", fake_quantize_groups(x, s, gr, gc), a["dq"])
        if "fq" in a:
            exact(rep, label + " fake quantize", fake_quantize_groups(x, s, gr, gc), a["fq"], signed_zero_ok=True)

    path = os.path.join(REPO, "tests", "data", "layouts_golden.txt")
    if not os.path.exists(path):
        rep.line(False, "tests/data/layouts_golden.txt", "missing")
        return
    n_pack = 0
    for kind, groups in read_ct_layouts(path):
        if kind == "ctpack":
            bits, dim, rows, cols = groups[0][:4]
            if bits != 4 or dim != 1 or cols % 8:
                continue
            q, words = groups[1], groups[2]
        else:
            rows, cols = groups[0][0], groups[0][1]
            q, words = groups[1], groups[3]
        got = pack_int4_words(torch.tensor(q, dtype=torch.int32).view(rows, cols))
        want = torch.tensor(words, dtype=torch.int64).to(torch.int32)  # uint32 words as int32 bits
        exact(rep, f"golden {kind} {rows}x{cols} (compressed-tensors pack_to_int32) words", got, want)
        n_pack += 1
    if n_pack == 0:
        rep.line(False, "compressed-tensors int4 packing records", "none found in layouts_golden.txt")


# Independent scalar model of qnum's rules (one float32 rounding per operation; Python floats hold fp32
# values exactly, and one double operation rounded to fp32 is the fp32 operation).

def _e4m3(v: float) -> float:
    """RNE onto the e4m3fn grid, |v| <= 448 (callers clamp first); the sign of zero kept."""
    a = abs(v)
    if a == 0.0:
        return v
    e = max(math.frexp(a)[1] - 1, -6)  # floor(log2 a), subnormals below 2^-6
    q = 2.0 ** (e - 3)
    return math.copysign(min(round(a / q) * q, 448.0), v)


def ref_quantize(s: Scheme, x: List[List[float]], gr: int, gc: int):
    """Codes (int values, or e4m3 values), scales and zero points of a [rows][cols] list, qnum's way."""
    rows, cols = len(x), len(x[0])
    gr = rows if gr == 0 else gr
    gc = cols if gc == 0 else gc
    nr, nc = -(-rows // gr), -(-cols // gc)
    codes = [[0] * cols for _ in range(rows)]
    scales = [[0.0] * nc for _ in range(nr)]
    zeros = [[0] * nc for _ in range(nr)]
    for bi in range(nr):
        for bj in range(nc):
            cells = [(r, c) for r in range(bi * gr, min(rows, bi * gr + gr))
                     for c in range(bj * gc, min(cols, bj * gc + gc))]
            vals = [x[r][c] for r, c in cells]
            amax = max(abs(v) for v in vals)
            lo, hi = min(min(vals), 0.0), max(max(vals), 0.0)
            z = 0
            if s.kind == "te_current":
                m = f32(s.fmax / amax) if amax > 0 else 1.0
                m = min(m, FLT_MAX)
                sc, inv = f32(1.0 / m), m
            else:
                num = f32(hi - lo) if s.kind == "asym" else amax
                sc = f32(num / s.denominator())
                if s.eps_rule == "floor":
                    sc = max(sc, s.eps)
                elif s.eps_rule == "zero_to" and sc == 0.0:
                    sc = s.eps
                sc = min(sc, FLT_MAX)
                if sc == 0.0:
                    sc = 1.0
                inv = f32(1.0 / sc)
                if s.kind == "asym":
                    v = max(f32(lo / sc), -1e9)
                    z = min(max(round(f32(s.qmin - v)), s.qmin), s.qmax)
            scales[bi][bj], zeros[bi][bj] = sc, z
            for r, c in cells:
                v = f32(x[r][c] * inv) if s.x_multiply else f32(x[r][c] / sc)
                if s.is_float:
                    codes[r][c] = _e4m3(min(max(v, -s.fmax), s.fmax))
                elif s.zero_first:
                    codes[r][c] = round(min(max(f32(v + z), s.qmin), s.qmax))
                else:
                    codes[r][c] = round(min(max(v, s.qmin - z), s.qmax - z)) + z
    return codes, scales, zeros


def ref_grad_step(g: List[float], r: List[float], state: List[float], first: bool, bf16_residual: bool):
    """qnum quantize_gradient_int8 (per tensor, delayed, zero_elements) on lists; updates r and state."""
    xs = [f32(gi + ri) for gi, ri in zip(g, r)]
    amax = max((abs(v) for v in xs if math.isfinite(v)), default=0.0)
    if first:
        s = amax if amax > GRAD_FLOOR else GRAD_FLOOR
    else:
        prev, pam = state
        have = prev > 0 and math.isfinite(prev)
        nw = pam if pam > GRAD_FLOOR else GRAD_FLOOR
        if not math.isfinite(pam):
            s = prev if have else GRAD_FLOOR
        elif not have:
            s = nw
        else:
            s = f32(f32(GRAD_ALPHA * prev) + f32(GRAD_BETA * nw))
            s = max(s, f32(prev / GRAD_CLIP))
            s = min(s, f32(prev * GRAD_CLIP))
            s = max(min(s, FLT_MAX), GRAD_FLOOR)
    inv = min(f32(127.0 / s), FLT_MAX)
    dq = f32(s / 127.0)
    codes = []
    for i, v in enumerate(xs):
        if not math.isfinite(v):
            codes.append(0)
            continue
        q = round(min(max(f32(v * inv), -127.0), 127.0))
        codes.append(q)
        nr = f32(v - f32(q * dq))
        if bf16_residual:  # RNE to bf16 (finite here)
            nr = float(torch.tensor(nr, dtype=torch.float32).to(torch.bfloat16).float())
        r[i] = nr
    state[0], state[1] = s, amax
    return codes


def _same_value(a: float, b: float) -> bool:
    return f32_bits(a) == f32_bits(b)


def check_scalar_model(rep: Report) -> None:
    """torch formulas == the scalar model on random bf16/fp32 data with zero groups, ties and outliers."""
    gen = torch.Generator().manual_seed(7)
    rows, cols = 6, 256
    base = torch.randn(rows, cols, generator=gen) * 0.7
    base[1, :64] = 0.0                                   # all-zero groups
    base[2, :] = (torch.randint(-30, 31, (cols,), generator=gen).float() + 0.5) * 0.0625  # ties
    base[3, ::37] *= 40.0                                # outliers
    base[4, :] *= 1e-20                                  # tiny
    base[5, :] *= 1e20                                   # huge
    for label, x in (("bf16", base.to(torch.bfloat16)), ("fp32", base)):
        xl = x.float().tolist()
        for s, gr, gc in ((INT8_SYM, 1, 128), (INT8_SYM, 1, 32), (SLIME_INT4, 1, 32), (CT_W4A16_SYM, 1, 128),
                          (CT_W4A16_ASYM, 1, 128), (DEEPGEMM_FP8, 1, 128), (DEEPGEMM_FP8, 128, 128),
                          (TORCHAO_INT8, 1, 0), (TE_FP8, 0, 0)):
            out = quantize_groups(x, s, gr, gc)
            codes, scales = out[0], out[1]
            rc, rs, rz = ref_quantize(s, xl, gr, gc)
            what = f"scalar model {s.name} {gr}x{gc or 'row'} {label}"
            got_s = scales.reshape(-1).tolist()
            want_s = [v for row in rs for v in row]
            bad_s = sum(not _same_value(a, b) for a, b in zip(got_s, want_s))
            cv = code_values(s, codes).reshape(-1).tolist()
            want_c = [v for row in rc for v in row]
            bad_c = sum(not _same_value(float(a), float(b)) for a, b in zip(cv, want_c))
            bad_z = 0
            if len(out) > 2:
                bad_z = sum(int(a) != b for a, b in zip(out[2].reshape(-1).tolist(), [v for row in rz for v in row]))
            rep.line(bad_s == 0 and bad_c == 0 and bad_z == 0, what,
                     f"{len(want_s)} scales, {len(want_c)} codes" if bad_s + bad_c + bad_z == 0 else
                     f"{bad_s} scales, {bad_c} codes, {bad_z} zero points differ")
    # Gradient: four steps with a spike, a NaN element and an Inf element (zeroed, residual kept).
    n = 1024
    g0 = (torch.randn(n, generator=gen) * 0.01).tolist()
    for bf in (False, True):
        r_t = torch.zeros(1, n, dtype=torch.bfloat16 if bf else torch.float32)
        st_t = torch.zeros(2)
        r_l, st_l = [0.0] * n, [0.0, 0.0]
        bad = 0
        for step in range(4):
            g = [f32(v * (1.0 + step)) for v in g0]  # fp32 inputs, as the tensor holds them
            if step == 2:
                g[5] = 3.0           # spike
                g[9] = math.nan
                g[10] = math.inf
            gt = torch.tensor(g, dtype=torch.float32).view(1, n)
            q = grad_int8_step(gt, r_t, st_t, step == 0).reshape(-1).tolist()
            qr = ref_grad_step(g, r_l, st_l, step == 0, bf)
            bad += sum(a != b for a, b in zip(q, qr))
            bad += sum(not _same_value(a, b) for a, b in zip(r_t.float().reshape(-1).tolist(), r_l))
            bad += sum(not _same_value(a, b) for a, b in zip(st_t.tolist(), st_l))
        rep.line(bad == 0, f"scalar model grad int8 + error feedback, 4 steps, res {'bf16' if bf else 'fp32'}",
                 "codes, residual and state equal" if bad == 0 else f"{bad} values differ")


def check_by_hand(rep: Report) -> None:
    """Values worked out by hand from qnum's rules (docs/schemes.md, docs/qgalore.md)."""
    def same(what, got, want):
        got = [float(v) for v in got]
        ok = len(got) == len(want) and all(_same_value(a, float(b)) for a, b in zip(got, want))
        rep.line(ok, "by hand: " + what, "" if ok else f"got {got}, want {want}")

    # INT8 sym, group 4: amax 15.875 -> s = 15.875/127 = 0.125; -1.0625/s = -8.5 -> -8 (tie to even),
    # 0.1875/s = 1.5 -> 2, 0.3125/s = 2.5 -> 2; the all-zero group: s = 1, codes 0.
    x = torch.tensor([[15.875, -1.0625, 0.1875, 0.3125, 0.0, 0.0, 0.0, 0.0]])
    codes, scales = quantize_groups(x, INT8_SYM, 1, 4)
    same("int8 sym codes", codes.reshape(-1).tolist(), [127, -8, 2, 2, 0, 0, 0, 0])
    same("int8 sym scales", scales.reshape(-1).tolist(), [0.125, 1.0])
    same("int8 sym dequantize", dequantize_groups(codes, scales, INT8_SYM, 1, 4, torch.float32).reshape(-1).tolist(),
         [15.875, -1.0, 0.25, 0.25, 0.0, 0.0, 0.0, 0.0])
    # slime INT4 fake quant: amax 1.75 -> s = 0.25; -0.375/s = -1.5 -> -2, 0.625/s = 2.5 -> 2;
    # zero group: s = max(0, 1e-5) = 1e-5f.
    x = torch.tensor([[1.75, -0.375, 0.625, 0.0, 0.0, 0.0, 0.0, 0.0]])
    same("slime int4 fake quantize", fake_quantize_groups(x, SLIME_INT4, 1, 4).reshape(-1).tolist(),
         [1.75, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    same("slime int4 scales", quantize_groups(x, SLIME_INT4, 1, 4)[1].reshape(-1).tolist(), [0.25, SLIME_EPS])
    same("slime int4 codes as stored (-2 -> 0x0E)", quantize_groups(x, SLIME_INT4, 1, 4)[0].reshape(-1).tolist(),
         [7, 14, 2, 0, 0, 0, 0, 0])
    # TE per tensor: amax 3 -> m = fl(448/3) = 149.33334; 3m rounds to 448 (saturated), 1*m -> e4m3 144
    # (grid step 16 in [128, 256)), -0.5m = -74.67 -> -72 (step 8 in [64, 128)); scale_inv = fl(1/m).
    # All-zero tensor: m = 1, scale_inv 1.
    x = torch.tensor([[3.0, 1.0, -0.5, 0.0]])
    codes, sinv = quantize_groups(x, TE_FP8, 0, 0)
    m = f32(448.0 / 3.0)
    same("TE fp8 codes", codes.float().reshape(-1).tolist(), [448.0, 144.0, -72.0, 0.0])
    same("TE fp8 scale_inv", sinv.reshape(-1).tolist(), [f32(1.0 / m)])
    same("TE fp8 all-zero scale_inv", quantize_groups(torch.zeros(1, 4), TE_FP8, 0, 0)[1].reshape(-1).tolist(), [1.0])
    # DeepGEMM: amax 448 -> s = 1: 100 is a tie between 96 and 104 on the e4m3 grid -> 96 (even mantissa);
    # an all-zero group gets s = fl(1e-4/448).
    x = torch.tensor([[448.0, 100.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    codes, scales = quantize_groups(x, DEEPGEMM_FP8, 1, 4)
    same("DeepGEMM fp8 codes", codes.float().reshape(-1).tolist(), [448.0, 96.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    same("DeepGEMM fp8 scales", scales.reshape(-1).tolist(), [1.0, DEEPGEMM_EPS])
    # compressed-tensors W4A16 sym, one group of 8 with amax 7.5 -> s = 1: codes 7, -8 (-7.5 ties to -8),
    # 2, 0, 0 (-0.5 -> -0), 1, -1, 3; nibbles q+8 = F 0 A 8 8 9 7 B from bit 0 -> word 0xB7988A0F.
    x = torch.tensor([[7.5, -7.5, 2.5, 0.5, -0.5, 1.0, -1.0, 3.49]])
    words, scales = w4a16_quantize_pack(x, CT_W4A16_SYM, 8)
    same("W4A16 sym packed word", [words.view(torch.int32).item() & 0xFFFFFFFF], [0xB7988A0F])
    same("W4A16 sym scale", scales.reshape(-1).tolist(), [1.0])
    # INT8 gradient, step 0: amax 2 -> s = 2, inv = 127/2 = 63.5: 1*63.5 -> 64 (tie to even),
    # -0.5*63.5 = -31.75 -> -32, 0.25*63.5 = 15.875 -> 16, 2*63.5 = 127; state = (2, 2).
    g = torch.tensor([[1.0, -0.5, 0.25, 2.0]])
    r, st = torch.zeros(1, 4), torch.zeros(2)
    same("grad int8 step 0 codes", grad_int8_step(g, r, st, True).reshape(-1).tolist(), [64, -32, 16, 127])
    same("grad int8 step 0 state", st.tolist(), [2.0, 2.0])
    dq = f32(2.0 / 127.0)
    same("grad int8 step 0 residual", r.reshape(-1).tolist(),
         [f32(1.0 - f32(64 * dq)), f32(-0.5 - f32(-32 * dq)), f32(0.25 - f32(16 * dq)), f32(2.0 - f32(127 * dq))])
    # Step 1 (delayed): s = fl(fl(0.99f * 2) + fl(fl(1 - 0.99f) * 2)) from the previous scale and amax.
    s1 = f32(f32(GRAD_ALPHA * 2.0) + f32(GRAD_BETA * 2.0))
    grad_int8_step(g, r, st, False)
    same("grad int8 step 1 scale", [st[0].item()], [s1])


# ---------------------------------------------------------------------------------------------------
# --check, part 2: torch.compile against eager, on the benchmark data

def compare(kind: str, got, ref) -> Tuple[bool, bool, str]:
    """(ok, exact, detail). Integer codes may differ by one, fp8 codes by one grid step, scales by a few
    ulp (reciprocal of a constant, approximate division), values by one rounding or one code step;
    at most 0.1 % of the elements may differ by more than a rounding."""
    n = ref.numel()
    if kind == "packed":  # compare the nibbles
        sh = torch.arange(0, 32, 4, device=got.device, dtype=torch.int32)
        got = ((got.unsqueeze(-1) >> sh) & 0xF).to(torch.int32) - 8
        ref = ((ref.unsqueeze(-1) >> sh) & 0xF).to(torch.int32) - 8
        kind, n = "int", ref.numel()
    if kind in ("int", "int4"):
        if kind == "int4":
            got, ref = ((got.to(torch.int32) ^ 8) - 8), ((ref.to(torch.int32) ^ 8) - 8)
        d = (got.to(torch.int32) - ref.to(torch.int32)).abs()
        ndiff, worst = int((d != 0).sum()), int(d.max()) if n else 0
        return ndiff <= 1e-3 * n and worst <= 1, ndiff == 0, f"{ndiff} of {n} codes differ (max {worst})"
    if kind == "fp8":
        def ordinal(t):  # e4m3 bytes -> a monotone integer (sign-magnitude to two's complement)
            b = t.view(torch.uint8).to(torch.int32)
            return torch.where(b >= 128, -(b - 128), b)
        d = (ordinal(got) - ordinal(ref)).abs()
        ndiff, worst = int((d != 0).sum()), int(d.max()) if n else 0
        return ndiff <= 1e-3 * n and worst <= 1, ndiff == 0, f"{ndiff} of {n} e4m3 codes differ (max {worst} steps)"
    g, r = got.float(), ref.float()
    same = _bits(g) == _bits(r)
    ndiff = int((~same).sum())
    if kind == "scale":
        rel = ((g - r).abs() / r.abs().clamp(min=FLT_MIN)).max().item() if n else 0.0
        return rel <= 2.0 ** -20, ndiff == 0, f"{ndiff} of {n} scales differ (max rel {rel:.2e})"
    # values (bf16/fp32): a rounding of the element, or a cancellation-level difference against the
    # tensor's magnitude (FMA), passes; larger ones are code flips (<= 0.1 %)
    u = 2.0 ** -7 if kind == "bf16" else 2.0 ** -20
    big = r.abs().max().item() if n else 0.0
    close = (g - r).abs() <= torch.clamp(r.abs() * u, min=big * 2.0 ** -12)
    nfar = int((~close).sum())
    return nfar <= 1e-3 * n, ndiff == 0, f"{ndiff} of {n} values differ, {nfar} by more than a rounding"


def check_compiled(rep: Report, device: str, shape: Tuple[int, int], mode: Optional[str], flt: str) -> None:
    rows, cols = shape
    inp = Inputs(rows, cols, device)
    for op in make_ops():
        if flt and flt not in op.name:
            continue
        torch._dynamo.reset()
        what = f"compiled vs eager {op.name} [{op.dtype}] {rows}x{cols}"
        try:
            fn = compile_fn(op.fn, mode)
            args = op.make_args(inp, rows, cols)
            if op.stateful:
                runs = []
                for f in (op.fn, fn):
                    a = [t.clone() for t in args]
                    outs = []
                    for step in range(3):
                        outs += [f(*a, step == 0), a[1].clone(), a[2].clone()]
                    runs.append(outs)
                kinds = ("int", "res", "scale") * 3
            else:
                runs = [op.fn(*args), fn(*args)]
                runs = [list(o) if isinstance(o, (tuple, list)) else [o] for o in runs]
                kinds = op.kinds
            details, ok_all, exact_all = [], True, True
            for k, ref, got in zip(kinds, runs[0], runs[1]):
                if k == "res":
                    k = "bf16" if ref.dtype == torch.bfloat16 else "fp32"
                ok, ex, d = compare(k, got, ref)
                ok_all &= ok
                exact_all &= ex
                if not ex:
                    details.append(d)
            rep.line(ok_all, what, "bit for bit" if exact_all else "; ".join(details), note=not exact_all)
        except Exception as e:  # noqa: BLE001 (a compile failure is a check failure, reported per op)
            rep.line(False, what, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def run_check(args) -> int:
    rep = Report()
    print("1. formulas, eagerly on the CPU: goldens (tests/data), scalar model, values by hand")
    with torch.no_grad():
        check_goldens(rep)
        check_scalar_model(rep)
        check_by_hand(rep)
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("2. torch.compile vs eager: skipped (no usable CUDA device; --device cpu runs it on the CPU)")
    else:
        if device == "cuda" and not have_triton():
            print("2. torch.compile vs eager: skipped (triton is not installed)")
        else:
            apply_numerics(args.eager_numerics)
            print(f"2. torch.compile vs eager on {device} ({args.check_shape[0]}x{args.check_shape[1]}, "
                  f"mode {args.mode or 'default'}{', eager numerics' if args.eager_numerics else ''})")
            with torch.no_grad():
                check_compiled(rep, device, tuple(args.check_shape), args.mode, args.filter)
    print(f"check: {rep.passed + rep.noted} passed ({rep.noted} not bit for bit, within the stated "
          f"tolerance), {rep.failed} failed")
    return 1 if rep.failed else 0


# ---------------------------------------------------------------------------------------------------
# Timing (CUDA events, as qnum-bench-device)

@dataclass
class Sample:
    median_us: float
    min_us: float


def summarize(v: Sequence[float]) -> Sample:
    v = sorted(v)
    m = len(v) // 2
    return Sample(v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m]), v[0])


class Timer:
    def __init__(self, device, reps: int, calls: int):
        self.device, self.reps, self.calls = device, reps, calls
        props = torch.cuda.get_device_properties(device)
        l2 = int(getattr(props, "L2_cache_size", 0)) or (50 << 20)
        self.flush_bytes = max(2 * l2, 32 << 20) // 16 * 16
        self.flush_buf = torch.full((self.flush_bytes // 4,), 0x5A5A5A5A, dtype=torch.int32, device=device)
        self.have_sleep = hasattr(torch.cuda, "_sleep")
        self.cycles_per_us = self._calibrate_sleep() if self.have_sleep else 0.0

    def _calibrate_sleep(self) -> float:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        a.record()
        torch.cuda._sleep(2_000_000)
        b.record()
        torch.cuda.synchronize()
        return 2_000_000 / max(a.elapsed_time(b) * 1000.0, 1.0)

    def flush(self) -> None:
        """Read 2x L2 (evicts the data and writes back the previous run's dirty lines)."""
        torch.amax(self.flush_buf)

    def delay(self, us: float) -> None:
        """Hold the stream so that the host queues the timed work behind it."""
        if self.have_sleep:
            torch.cuda._sleep(int(min(us, 5e6) * self.cycles_per_us))

    def _host_us(self, fn, flush: bool) -> float:
        """Host time to enqueue one timed run (the delay must cover reps of them)."""
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        worst = 0.0
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if flush:
                self.flush()
            e0.record()
            fn()
            e1.record()
            worst = max(worst, (time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        return worst

    def cold(self, fn) -> Sample:
        fn()  # warm-up (and step 0 of the gradient)
        torch.cuda.synchronize()
        host = self._host_us(fn, True)
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(self.reps)]
        self.delay(1000.0 + 2.0 * self.reps * host)
        for a, b in ev:
            self.flush()
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return summarize([1000.0 * a.elapsed_time(b) for a, b in ev])

    def eager(self, fn) -> Sample:
        fn()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        us = []
        for _ in range(self.reps):
            torch.cuda.synchronize()
            a.record()
            for _ in range(self.calls):
                fn()
            b.record()
            torch.cuda.synchronize()
            us.append(1000.0 * a.elapsed_time(b) / self.calls)
        return summarize(us)

    def graph(self, fn) -> Sample:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph asks
            fn()
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(self.calls):
                fn()
        g.replay()  # warm-up
        torch.cuda.synchronize()
        host = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            g.replay()
            host = max(host, (time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(self.reps)]
        self.delay(1000.0 + 2.0 * self.reps * (host + 20.0))
        for a, b in ev:
            a.record()
            g.replay()
            b.record()
        torch.cuda.synchronize()
        us = [1000.0 * a.elapsed_time(b) / self.calls for a, b in ev]
        del g
        return summarize(us)


# ---------------------------------------------------------------------------------------------------
# Results and output files (qnum-bench-device's columns, plus impl)

@dataclass
class Result:
    op: str
    dtype: str
    mode: str
    rows: int = 0
    cols: int = 0
    nbytes: float = 0.0
    median_us: float = 0.0
    min_us: float = 0.0
    gbps: float = 0.0
    copy_gbps: float = 0.0
    pct_copy: float = 0.0
    pct_peak: float = 0.0
    target: str = ""
    meets: int = -1  # 1 meets, 0 misses, -1 no target


def print_header() -> None:
    print("\n%-40s %-9s %-11s %-6s %10s %10s %9s %9s %8s %7s  %-10s %s" % (
        "operation", "dtype", "shape", "mode", "median_us", "min_us", "MB", "GB/s", "% copy", "% peak", "target", ""))


def print_row(r: Result) -> None:
    shp = f"{r.rows}x{r.cols}" if r.rows > 0 else "-"
    gb = f"{r.gbps:.1f}" if r.gbps > 0 else "-"
    pc = f"{r.pct_copy:.1f}%" if r.pct_copy > 0 else "-"
    pk = f"{r.pct_peak:.1f}%" if r.pct_peak > 0 else "-"
    meets = "meets" if r.meets == 1 else ("MISSES" if r.meets == 0 else "")
    print("%-40s %-9s %-11s %-6s %10.2f %10.2f %9.1f %9s %8s %7s  %-10s %s" % (
        r.op, r.dtype, shp, r.mode, r.median_us, r.min_us, r.nbytes / 1e6, gb, pc, pk, r.target, meets), flush=True)


class CsvSink:
    """qnum-bench-device's CSV columns plus impl; one row written (and flushed) per result, so that a run cut
    short (a device call's time limit) keeps what it measured."""

    def __init__(self, path: Optional[str]):
        self.f = open(path, "w", newline="") if path else None  # noqa: SIM115 (closed in close())
        self.w = csv.writer(self.f, lineterminator="\n") if self.f else None
        if self.w:
            self.w.writerow(CSV_COLUMNS)

    def add(self, r: Result) -> None:
        if self.w:
            self.w.writerow([r.op, r.dtype, r.rows, r.cols, r.mode, f"{r.median_us:.3f}", f"{r.min_us:.3f}",
                             f"{r.nbytes:.0f}", f"{r.gbps:.2f}", f"{r.copy_gbps:.2f}", f"{r.pct_copy:.2f}",
                             f"{r.pct_peak:.2f}", r.target, {1: "yes", 0: "no"}.get(r.meets, ""), IMPL])
            self.f.flush()

    def close(self) -> None:
        if self.f:
            self.f.close()


def write_md(path: str, header: str, settings: str, results: List[Result], summary: str) -> None:
    with open(path, "w") as f:
        f.write(f"{header}\n\n{settings}\n\n")
        f.write("| operation | dtype | shape | mode | median us | min us | MB | GB/s | % of copy | % of peak "
                "| target | |\n")
        f.write("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n")
        for r in results:
            shp = f"{r.rows}x{r.cols}" if r.rows > 0 else "-"
            f.write(f"| {r.op} | {r.dtype} | {shp} | {r.mode} | {r.median_us:.2f} | {r.min_us:.2f} | "
                    f"{r.nbytes / 1e6:.1f} | "
                    f"{f'{r.gbps:.1f}' if r.gbps > 0 else '-'} | {f'{r.pct_copy:.1f}%' if r.pct_copy > 0 else '-'} | "
                    f"{f'{r.pct_peak:.1f}%' if r.pct_peak > 0 else '-'} | {r.target or '-'} | "
                    f"{'meets' if r.meets == 1 else ('**misses**' if r.meets == 0 else '')} |\n")
        f.write(f"\n{summary}\n")


def join(qnum_csv: str, torch_rows: List[dict]) -> int:
    """Side by side: qnum-bench-device's CSV and this script's rows, matched on operation, dtype, shape, mode."""
    try:
        with open(qnum_csv, newline="") as f:
            qrows = list(csv.DictReader(f))
    except OSError as e:
        msg(f"cannot read {qnum_csv}: {e}")
        return 1
    key = lambda r: (r["operation"], r["dtype"], str(r["rows"]), str(r["cols"]), r["mode"])  # noqa: E731
    tmap = {key(r): r for r in torch_rows if not r["operation"].startswith("copy:")}
    print(f"\nqnum-bench-device ({qnum_csv}) vs {IMPL}: ratio = torch.compile time / qnum time "
          "(= qnum GB/s / torch.compile GB/s; > 1: qnum faster)\n")
    print("| operation | dtype | shape | mode | qnum us | torch.compile us | qnum % copy | torch.compile % copy "
          "| qnum/torch.compile |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    matched = 0
    for q in qrows:
        if q["operation"].startswith("copy:"):
            continue
        t = tmap.get(key(q))
        if t is None:
            continue
        qt, tt = float(q["median_us"]), float(t["median_us"])
        pq = f"{float(q['pct_copy']):.1f}%" if float(q["pct_copy"] or 0) > 0 else "-"
        pt = f"{float(t['pct_copy']):.1f}%" if float(t["pct_copy"] or 0) > 0 else "-"
        ratio = f"{tt / qt:.2f}" if qt > 0 else "-"
        print(f"| {q['operation']} | {q['dtype']} | {q['rows']}x{q['cols']} | {q['mode']} | {qt:.2f} | {tt:.2f} "
              f"| {pq} | {pt} | {ratio} |")
        matched += 1
    print(f"\n{matched} rows matched ({len(qrows)} in {qnum_csv}, {len(tmap)} {IMPL} rows)")
    return 0 if matched else 1


def result_dicts(results: List[Result]) -> List[dict]:
    return [dict(operation=r.op, dtype=r.dtype, rows=r.rows, cols=r.cols, mode=r.mode, median_us=r.median_us,
                 pct_copy=r.pct_copy) for r in results]


# ---------------------------------------------------------------------------------------------------

def have_triton() -> bool:
    return importlib.util.find_spec("triton") is not None


def apply_numerics(eager: bool) -> List[str]:
    """--eager-numerics: Inductor's switches towards eager results (IEEE fp32 division, bf16 casts kept)."""
    done = []
    if not eager:
        return done
    cfg = torch._inductor.config
    if hasattr(cfg, "eager_numerics") and hasattr(cfg.eager_numerics, "division_rounding"):
        cfg.eager_numerics.division_rounding = True
        done.append("eager_numerics.division_rounding")
    elif hasattr(cfg, "emulate_divison_rounding"):
        cfg.emulate_divison_rounding = True
        done.append("emulate_divison_rounding")
    if hasattr(cfg, "emulate_precision_casts"):
        cfg.emulate_precision_casts = True
        done.append("emulate_precision_casts")
    return done


def bench_device():
    """The device the benchmark runs on (a function, so that a test can run the control flow elsewhere)."""
    return torch.device("cuda", torch.cuda.current_device())


def run_bench(args) -> int:
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print(f"{PROG}: SKIP: no usable CUDA device (torch {torch.__version__}, built with CUDA {torch.version.cuda})")
        return EXIT_SKIP
    if not have_triton():
        print(f"{PROG}: SKIP: triton is not installed: torch.compile cannot generate GPU kernels")
        return EXIT_SKIP
    import triton  # noqa: PLC0415
    dev = bench_device()
    props = torch.cuda.get_device_properties(dev)
    mem_khz, bus = int(getattr(props, "memory_clock_rate", 0)), int(getattr(props, "memory_bus_width", 0))
    peak = 2.0 * mem_khz * 1e3 * (bus / 8.0) / 1e9 if mem_khz and bus else 0.0
    numerics = apply_numerics(args.eager_numerics)
    reps = args.reps or (10 if args.quick else 50)
    large = [(4096, 4096)] if args.quick else [(8192, 8192), (32768, 4096)]
    small = [(1, 4096), (256, 4096)] if args.quick else [(1, 4096), (16, 4096), (64, 4096), (256, 4096)]
    if args.headline:
        large, small = large[:1], []
    ops = [o for o in make_ops() if not args.filter or args.filter in o.name]
    if not ops:
        msg(f"no operation matches --filter {args.filter}")
        return 2
    timer = Timer(dev, reps, args.calls)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    device_line = (f"{props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
                   f"L2 {int(getattr(props, 'L2_cache_size', 0)) >> 20} MiB, {props.total_memory / (1 << 30):.1f} GiB, "
                   f"memory clock {mem_khz // 1000} MHz x {bus}-bit bus: peak {peak:.0f} GB/s)")
    versions = (f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}; "
                f"torch.compile(fullgraph=True, dynamic=False, mode={args.mode or 'default'})"
                + (f"; inductor: {', '.join(numerics)}" if numerics else ""))
    header = f"Date: {stamp}. Device: {device_line}. {versions}."
    print(f"{PROG} ({IMPL})  {stamp}\ndevice: {device_line}\n{versions}")
    queued = "" if timer.have_sleep else " (no torch.cuda._sleep: runs not queued ahead)"
    settings = (f"Large shapes: cold L2 (a {timer.flush_bytes >> 20} MiB read before every run), CUDA events around "
                f"one call, median and min of {reps} runs{queued}; "
                "GB/s counts every byte read and written once (the per-tensor two-pass path reads its input twice); "
                "% of copy = against torch copy_ (D2D) of the same traffic in the same run. Small shapes: warm L2, "
                f"microseconds per call over {args.calls} calls: eager (back-to-back calls of the compiled function "
                "from an idle stream, Python overhead included) and graph (the calls captured in one CUDA graph, "
                f"replays queued ahead), median and min of {reps} batches. qnum targets: large shapes >= "
                "90% of the copy; small shapes <= 3 us per call under a graph.")
    print(settings)

    results: List[Result] = []
    sink = CsvSink(args.csv)
    failures: List[str] = []

    def emit(r: Result) -> None:
        results.append(r)
        sink.add(r)
        print_row(r)

    spent = [0.0]  # seconds compiling
    started = time.perf_counter()
    copy_cache: Dict[int, float] = {}
    copy_src = copy_dst = None

    def copy_gbps(traffic: float) -> float:
        nonlocal copy_src, copy_dst
        moved = (int(traffic / 2.0) + 15) // 16 * 16
        if moved in copy_cache:
            return copy_cache[moved]
        if copy_src is None or copy_src.numel() < moved:
            copy_src = copy_dst = None
            torch.cuda.empty_cache()
            copy_src = torch.full((moved,), 0x3C, dtype=torch.uint8, device=dev)
            copy_dst = torch.empty_like(copy_src)
        src, dst = copy_src[:moved], copy_dst[:moved]
        s = timer.cold(lambda: dst.copy_(src))
        r = Result("copy: torch copy_ D2D", "bytes", "cold", nbytes=2.0 * moved, median_us=s.median_us, min_us=s.min_us)
        r.gbps = r.copy_gbps = r.nbytes / s.median_us / 1e3
        r.pct_copy = 100.0
        r.pct_peak = 100.0 * r.gbps / peak if peak else 0.0
        emit(r)
        copy_cache[moved] = r.gbps
        return r.gbps

    def measure(sh, modes) -> Tuple[int, int]:
        rows, cols = sh
        n_ok = n = 0
        inp = Inputs(rows, cols, dev)
        for op in ops:
            torch._dynamo.reset()
            fn = compile_fn(op.fn, args.mode)
            t0 = time.perf_counter()
            try:
                with torch.no_grad():  # compile (and autotune) outside the timed protocol, on throwaway arguments
                    warm = Caller(op, fn, op.make_args(inp, rows, cols))
                    warm()
                    if op.stateful:
                        warm()  # the delayed step is a second graph
                    torch.cuda.synchronize()
                    del warm
            except Exception as e:  # noqa: BLE001 (reported, the other operations still run)
                failures.append(f"{op.name} [{op.dtype}] {rows}x{cols}: {type(e).__name__}: {e}".splitlines()[0])
                msg("FAILED " + failures[-1])
                continue
            spent[0] += time.perf_counter() - t0
            print(f"{PROG}: compiled {op.name} [{op.dtype}] {rows}x{cols}: {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
            for mode in modes:
                try:
                    with torch.no_grad():
                        call = Caller(op, fn, op.make_args(inp, rows, cols))
                        s = {"cold": timer.cold, "eager": timer.eager, "graph": timer.graph}[mode](call)
                except Exception as e:  # noqa: BLE001 (e.g. a graph capture that fails: reported, the rest runs)
                    where = f"{op.name} [{op.dtype}] {rows}x{cols} {mode}"
                    failures.append(f"{where}: {type(e).__name__}: {e}".splitlines()[0])
                    msg("FAILED " + failures[-1])
                    continue
                r = Result(op.name, op.dtype, mode, rows, cols, float(op.nbytes(rows, cols)), s.median_us, s.min_us)
                r.gbps = r.nbytes / s.median_us / 1e3
                if mode == "cold":
                    r.copy_gbps = copy_gbps(r.nbytes)
                    r.pct_copy = 100.0 * r.gbps / r.copy_gbps
                    r.pct_peak = 100.0 * r.gbps / peak if peak else 0.0
                    r.target, r.meets = ">=90% copy", int(r.pct_copy >= 90.0)
                elif mode == "graph":
                    r.target, r.meets = "<=3 us", int(s.median_us <= 3.0)
                if r.meets >= 0:
                    n += 1
                    n_ok += r.meets
                emit(r)
                del call
        del inp
        torch.cuda.empty_cache()
        return n_ok, n

    print_header()
    large_ok = large_n = small_ok = small_n = 0
    for sh in large:
        ok, n = measure(sh, ("cold",))
        large_ok, large_n = large_ok + ok, large_n + n
    print_header()
    for sh in small:
        ok, n = measure(sh, ("eager", "graph"))
        small_ok, small_n = small_ok + ok, small_n + n
    summary = (f"Targets: {large_ok} of {large_n} large-shape rows at >= 90% of the same-run copy; {small_ok} of "
               f"{small_n} small-shape rows at <= 3 us per call under a CUDA graph.")
    print(f"\n{summary}")
    print(f"{PROG}: {time.perf_counter() - started:.0f} s in all, {spent[0]:.0f} s of it compiling (first calls)")
    sink.close()
    if args.md:
        write_md(args.md, header, settings, results, summary)
    if args.join:
        join(args.join, result_dicts(results))
    for f in failures:
        msg("failed: " + f)
    return 1 if failures else 0


def parse_shape(text: str) -> Tuple[int, int]:
    try:
        r, c = (int(v) for v in text.lower().split("x"))
        if r < 1 or c < 8 or c % 8:
            raise ValueError
        return r, c
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS with COLS a multiple of 8, got {text!r}") from None


def positive(text: str) -> int:
    v = int(text)
    if not 1 <= v <= 100000:
        raise argparse.ArgumentTypeError(f"expected 1..100000, got {text}")
    return v


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="torch_compile_device.py",
        description=__doc__.split("\n", 1)[1],
        epilog="examples:\n"
               "  python3 bench/torch_compile_device.py --quick\n"
               "  python3 bench/torch_compile_device.py --csv torch.csv --join bench/results/device-.../results.csv\n"
               "  python3 bench/torch_compile_device.py --check            (CPU formulas; compiled vs eager on a GPU)\n"
               "  python3 bench/torch_compile_device.py --load torch.csv --join qnum.csv   (table only, no torch)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="4096x4096 and 1/256 x 4096 only, 10 repetitions (smoke run)")
    p.add_argument("--headline", action="store_true", help="the first large shape only (8192x8192; --quick: "
                   "4096x4096), no small shapes: one compile per operation instead of six")
    p.add_argument("--reps", type=positive, default=0, help="timed runs per measurement (default 50; median and min)")
    p.add_argument("--calls", type=positive, default=100, help="calls per eager batch / per CUDA graph (default 100)")
    p.add_argument("--filter", default="", metavar="TEXT", help="only operations whose name contains TEXT")
    p.add_argument("--csv", metavar="FILE", help="write the rows as CSV (qnum-bench-device's columns + impl)")
    p.add_argument("--md", metavar="FILE", help="write the rows as a markdown table")
    p.add_argument("--join", metavar="QNUM_CSV",
                   help="print a side-by-side table with qnum-bench-device's --csv output")
    p.add_argument("--load", metavar="TORCH_CSV", help="with --join: take this script's rows from an earlier --csv "
                   "instead of measuring (needs neither torch nor a GPU)")
    p.add_argument("--mode", default=None, help="torch.compile mode (default: torch's default; e.g. "
                   "max-autotune-no-cudagraphs)")
    p.add_argument("--eager-numerics", action="store_true", help="set Inductor's eager-numerics switches (IEEE fp32 "
                   "division, bf16 casts kept) before compiling")
    p.add_argument("--check", action="store_true", help="check the formulas (CPU, eager) and torch.compile against "
                   "eager (--device) instead of timing")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="--check: where to compare torch.compile "
                   "with eager (cpu: Inductor's C++ backend, needs a C++ compiler)")
    p.add_argument("--check-shape", type=parse_shape, default=(256, 4096), metavar="RxC",
                   help="--check: shape of the compiled-vs-eager comparison (default 256x4096)")
    args = p.parse_args(argv)

    if args.load:
        if not args.join:
            p.error("--load needs --join")
        with open(args.load, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("impl", IMPL) == IMPL]
        return join(args.join, rows)
    if not need_torch():
        return EXIT_SKIP
    if args.check:
        return run_check(args)
    return run_bench(args)


if __name__ == "__main__":
    sys.exit(main())
