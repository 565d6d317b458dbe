#!/usr/bin/env python3
"""sass-report.py: static cost of qnum's device kernels, read from their SASS (no GPU needed).

    tools/sass-report.py [--input FILE] [--source FILE.cu] [--arch sm_90] [--filter TEXT]...
                         [--md | --csv] [--objdump-dir DIR] [--elem-bytes N] [--ptxas-log FILE]
                         [--loops] [--full-names]

Without --input it compiles --source (default bench/throughput_device.cu, which instantiates every
launcher of qnum/gpu/quantize.cuh and qnum/train/dynamic_scale.cuh) for one architecture:
    nvcc -std=c++17 -O3 -arch=sm_90 -cubin -I include -Xptxas -v SOURCE
(about 3 minutes on 2 cores). With --input it reads a cubin, an object file or an executable (its
cubins for --arch are extracted with cuobjdump -xelf). For every kernel it reports:

  regs, stack, smem      cuobjdump -res-usage (REG, STACK, SHARED)
  spill st/ld            bytes of spill stores/loads from ptxas -v (compile mode, or --ptxas-log);
                         "?" when only a binary was given
  loop                   address range of the main loop (rule below), nesting depth (0 = outermost)
  loop instr             SASS instructions in that address range: every code path of the body,
                         including the variants a runtime switch selects (scheme kind, rounding mode,
                         scale format, bf16/fp16 input) and cold paths (NaN handling, slow division)
  elem/trip              input elements one trip of the loop consumes (below)
  instr/elem             loop instr / elem/trip: a code-size figure, not executed work
  path/elem              instructions on the cheapest path through one trip (below) / elem/trip: the
                         estimate to compare with a profiler's executed instructions per element
  MUFU, cvt, div64,      in the loop range: MUFU (special function unit: rcp, ex2, lg2, ...);
  BSSY/BSYNC, LDL/STL    F2I/I2F/F2F conversions (I2FP/F2IP/F2FP are ALU forms, not counted);
                         CALLs of the 64-bit integer division/remainder routines
                         (__internal_*_cuda_sm20_{div,rem}_{u,s}64); BSSY+BSYNC (divergent-branch
                         bookkeeping); local-memory LDL+STL (spills or local arrays)
  shfl step              instructions of one step of each run-time-length shuffle loop on the path (below)
  "-"                    no loop with a global load was found (e.g. a kernel that only stores)

SASS source: nvdisasm on the cubin when it is found (it names the CALL targets and lists the targets
of indirect BRX branches, which the switches compile to), else cuobjdump -sass (numeric targets; the
targets of a BRX are unknown, so paths through it are cut: path/elem may then be missing).

The loop rule. A loop is a backward branch (a BRA whose target address is <= its own) whose target
dominates it in the control-flow graph (natural loop; this drops the out-of-line BRA.DIV fallbacks
that jump back into the body, and the `BRA self` trap after EXIT); its extent is the address range
[target, branch]. Loops sharing a header are merged. The kernels are grid-stride loops over chunks or
groups, sometimes with inner loops (rows_kernel: a statistics pass and an emit pass over the chunks of
one group; block_kernel: the same over a group held by a block). The reported loop is:
  1. the loops containing a global load (LDG, or a generic LD) are the load loops;
  2. if one innermost load loop exists, it is reported; if several do (the two passes of
     rows_kernel/block_kernel), the innermost loop enclosing all of them is reported: the per-group
     loop, one trip of which runs each pass once (that is the case for every 1xG group with G <= lanes
     x vector: the bench's g32/g128 shapes); with no enclosing loop (copy_kernel's 4x-unrolled main
     loop and its remainder loop; a vector loop and a scalar one; a fast statistics pass and its exact
     recomputation) the load loop whose cheapest trip (below) costs the fewest instructions per element is
     reported, the fast configuration as for the path (ties: the one that loads the most bytes).
Cheapest path ("path"): the shortest path, in instructions, from the loop header to its back branch
over forward edges inside the range, passing once through every inner loop that contains a global load
(header to back branch, taking its exit), where a CALL adds the cheapest path of the called routine
to its RET. Predicated-off instructions count (they are issued). Branch edges into the handling of
Inf/NaN inputs are not taken (the branch's predicate comes from FSETP.NAN/.NUM, or from an ISETP/FSETP
against 0x7f800000, 0x7f80, 0x7c00, 0x7ff00000 or +INF, or an FSETP of a magnitude |x| against FLT_MAX,
detail::is_nonfinite: left free, the shortest path would be "every input is NaN", which skips the arithmetic); if no path remains without them they are allowed. Every
other branch is free to go the cheaper way, so this is the fast configuration of a runtime-dispatched
kernel (multiply by a reciprocal rather than divide, round-to-nearest rather than stochastic, 16-byte
vector loads rather than the scalar tail path, the 32-bit fast path of a 64-bit division): a lower
bound for one trip, not the path a given scheme takes (rows_kernel int8 with a true division adds ~15
instructions per element: MUFU.RCP, FCHK, 5 FFMA and the branches around the slow-path call).
Shuffle loops: a loop inside the trip without a global load that shuffles (SHFL) and whose trip count is a run-time
value (rows_kernel's sub-group reduction: log2(L) steps for L lanes, none for one lane) is passed once when that
keeps the route (it costs at most 3x the loop's body more: its guard and setup); "shfl step" gives the body, which
a group of L lanes runs log2(L) - 1 more times.
Elements per trip: the bytes of the global loads on that path (LDG.E.128 = 16, .64 = 8, plain = 4,
.U16/.S16 = 2, .U8/.S8 = 1); when the path holds 8- or 16-byte vector loads only those count (the input
is read in vectors, the scales and zero points of a group are scalar loads); where the trip holds
inner load loops (passes over the same elements: statistics, then emit) only the largest pass counts;
divided by the bytes each element loads: the input element size, from a table of known kernels (the
template argument that is the input type; dequantize reads 1-byte codes) or else from the first
`const T*` parameter; --elem-bytes overrides it. The gradient quantizer's loops are counted by the table:
ds_scan, ds_quantize and dequant_kernel 16 elements a trip (4 chunks of 4). When the path holds no load, the
loads in the whole range are used and the figure is marked "~".
Inner loops run once per trip here: where they run k times (block_kernel with long rows, G larger
than lanes x vector) the per-group part outside them is spread over k times fewer elements than
counted. Loop-free kernels (int8_adam_kernel: one block per state block, unrolled) get "-".

Exit status: 0 when at least one kernel was reported; 1 when compiling or a CUDA tool failed or no
kernel was found/matched; 2 on bad arguments; 77 when a needed CUDA tool (nvcc in compile mode,
cuobjdump) is not installed (meson's SKIP). cuobjdump and nvdisasm come with the CUDA toolkit; where
a pip-assembled toolkit lacks them: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (found
under site-packages/nvidia/cu*/bin). Demangling uses cu++filt, else c++filt (binutils), else none.
Python 3 standard library only.
"""

import argparse
import csv
import glob
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ToolMissing(Exception):
    pass


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# Finding the CUDA tools


def tool_dirs(nvcc_hint=None):
    dirs = []
    if nvcc_hint:
        dirs.append(os.path.dirname(os.path.abspath(nvcc_hint)))
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "bin"))
    dirs.append("/usr/local/cuda/bin")
    try:  # pip wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm): site-packages/nvidia/cu*/bin
        spec = importlib.util.find_spec("nvidia")
        for base in (spec.submodule_search_locations or []) if spec else []:
            dirs += sorted(glob.glob(os.path.join(base, "cu*", "bin")), reverse=True)
            dirs += sorted(glob.glob(os.path.join(base, "cuda_*", "bin")), reverse=True)
    except (ImportError, ValueError):
        pass
    return dirs


def find_tool(name, env_var, nvcc_hint=None):
    if os.environ.get(env_var):
        return os.environ[env_var]
    p = shutil.which(name)
    if p:
        return p
    for d in tool_dirs(nvcc_hint):
        cand = os.path.join(d, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def run(cmd, cwd=None, what=None):
    try:
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise Failure("%s: %s" % (what or cmd[0], e))
    if r.returncode != 0:
        raise Failure("%s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, (r.stderr or r.stdout)[-4000:]))
    return r.stdout, r.stderr


# ---------------------------------------------------------------------------------------------------
# SASS model

class Instr:
    __slots__ = ("addr", "pred", "op", "ops", "targets", "callee", "callee_name")

    def __init__(self, addr, pred, op, ops):
        self.addr, self.pred, self.op, self.ops = addr, pred, op, ops
        self.targets = []   # branch targets (addresses); None = unknown (BRX without a target list)
        self.callee = None  # CALL target address
        self.callee_name = None

    @property
    def base(self):
        return self.op.split(".")[0]

    def never(self):
        return self.pred in ("@!PT", "@!UPT")

    def uncond(self):
        if self.pred is not None and self.pred not in ("@PT", "@UPT"):
            return False
        # BRA.DIV (taken when the warp is diverged) and `BRA P1, target` / `BRA.U !UP0, target` are
        # conditional without a guard predicate
        return not (".DIV" in self.op or re.match(r"!?U?P[0-6]\b", self.ops))

    def text(self):
        return "%s%s %s" % (self.pred + " " if self.pred else "", self.op, self.ops)


BRANCHES = {"BRA", "BRX", "JMP", "JMX"}
TERMINATORS = {"EXIT", "RET", "BPT", "KILL"}
LOADS = {"LDG", "LD"}

INSTR_RE = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*)$")


def parse_nvdisasm(text):
    """{mangled kernel name: [Instr]} from `nvdisasm -c` text (labels resolved to addresses)."""
    funcs = {}
    cur = None
    pending = []
    labels = {}
    refs = []  # (instr, kind, [labels])

    def finish():
        if cur is None:
            return
        for ins, kind, names in refs:
            addrs = [labels.get(n) for n in names]
            if kind == "call":
                ins.callee = addrs[0]
                ins.callee_name = names[0]
            elif None in addrs:
                ins.targets = None
            else:
                ins.targets = addrs

    for line in text.splitlines():
        m = re.match(r"^\.text\.(\S+):\s*$", line)
        if m:
            finish()
            cur = m.group(1)
            funcs[cur] = []
            pending, labels, refs = [], {}, []
            continue
        if cur is None:
            continue
        m = re.match(r"^([.$A-Za-z_][^\s:]*):\s*$", line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR_RE.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        pred = m.group(2).strip() if m.group(2) else None
        op, rest = m.group(3), m.group(4)
        bt = re.search(r'\(\*"BRANCH_TARGETS ([^"]*)"\*\)', rest)
        rest_clean = re.sub(r"\(\*.*?\*\)", "", rest).strip().rstrip(";").strip()
        ins = Instr(addr, pred, op, rest_clean)
        for n in pending:
            labels[n] = addr
        pending = []
        base = ins.base
        if base == "CALL":
            names = re.findall(r"`\(([^)]+)\)", rest_clean)
            if names:
                refs.append((ins, "call", names[:1]))
        elif base in BRANCHES:
            if bt:
                refs.append((ins, "br", [s.strip() for s in bt.group(1).split(",") if s.strip()]))
            else:
                names = re.findall(r"`\(([^)]+)\)", rest_clean)
                if names:
                    refs.append((ins, "br", names[-1:]))
                else:
                    ins.targets = None
        funcs[cur].append(ins)
    finish()
    return funcs


def sections(text, header):
    """(name, line) for every line of text after the first match of the regular expression header, whose
    group 1 names the section that the following lines belong to (the header lines themselves are skipped)."""
    cur = None
    for line in text.splitlines():
        m = re.search(header, line)
        if m:
            cur = m.group(1)
            yield cur, None
            continue
        if cur is not None:
            yield cur, line


def parse_cuobjdump(text):
    """{mangled kernel name: [Instr]} from `cuobjdump -sass` (numeric targets; BRX targets unknown)."""
    funcs = {}
    for cur, line in sections(text, r"^\s*Function\s*:\s*(\S+)\s*$"):
        if line is None:
            funcs[cur] = []
            continue
        line = re.sub(r"/\*\s*0x[0-9a-fA-F]+\s*\*/\s*$", "", line)
        m = INSTR_RE.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        pred = m.group(2).strip() if m.group(2) else None
        op, rest = m.group(3), m.group(4).strip().rstrip(";").strip()
        ins = Instr(addr, pred, op, rest)
        base = ins.base
        hexes = re.findall(r"(?<![-\w])0x([0-9a-fA-F]+)", rest)
        if base == "CALL":
            if hexes:
                ins.callee = int(hexes[-1], 16)
        elif base in BRANCHES:
            if base in ("BRX", "JMX") or not hexes:
                ins.targets = None
            else:
                ins.targets = [int(hexes[-1], 16)]
        funcs[cur].append(ins)
    return funcs


SPECIAL = {"0x7f800000", "0x7f80", "0x7c00", "0x7ff00000", "+INF", "-INF", "INF"}
FLT_MAX = {"3.40282346638528859812e+38", "0x7f7fffff"}


def special_test(ins, preg):
    """True: predicate preg set by ins is true for Inf/NaN values; False: true for ordinary values;
    None: ins is no such test."""
    mods = ins.op.split(".")[1:]
    ops = [o.strip() for o in ins.ops.split(",")]
    if not ops or ops[0] != preg:
        return None
    if ins.base == "FSETP" and "NAN" in mods:
        return True
    if ins.base == "FSETP" and "NUM" in mods:
        return False
    if ins.base in ("ISETP", "FSETP") and len(ops) >= 5 and ops[-1] == "PT" and \
            any(o.strip("|-") in SPECIAL for o in ops[2:4]):
        if set(mods) & {"EQ", "GT", "GE", "EQU", "GTU", "GEU"}:
            return True
        if set(mods) & {"NE", "LT", "LE", "NEU", "LTU", "LEU"}:
            return False
    # |x| > FLT_MAX (detail::is_nonfinite): a magnitude against the largest finite float
    if ins.base == "FSETP" and len(ops) >= 5 and ops[-1] == "PT" and ops[2].startswith(("|", "-|")) and \
            ops[3].strip("-") in FLT_MAX:
        if set(mods) & {"GT", "GE", "GTU", "GEU"}:
            return True
        if set(mods) & {"LT", "LE", "LTU", "LEU"}:
            return False
    return None


def load_bytes(ins):
    mods = ins.op.split(".")[1:]
    if "128" in mods:
        return 16
    if "64" in mods:
        return 8
    if "U16" in mods or "S16" in mods:
        return 2
    if "U8" in mods or "S8" in mods:
        return 1
    return 4


def is_load(ins):
    return ins.base in LOADS and not ins.never()


STORES = ("STG", "ST")


def mem_bytes(ins):
    """Bytes a global store writes (0 for anything else)."""
    if ins.never() or ins.base not in STORES:
        return 0
    return load_bytes(ins)


class Cost:
    """Path cost compared lexicographically: first more bytes stored to global memory (the path that does
    the whole trip's work: every chunk emitted, not a tail that emits nothing), then fewer instructions
    (vector accesses rather than the scalar tail path, the fast configuration). int(cost) is the
    instruction count."""
    __slots__ = ("mem", "n")

    def __init__(self, mem=0, n=0):
        self.mem, self.n = mem, n

    def __add__(self, o):
        return Cost(self.mem + o.mem, self.n + o.n)

    def __sub__(self, o):
        return Cost(self.mem - o.mem, self.n - o.n)

    def key(self):
        return (-self.mem, self.n)

    def __lt__(self, o):
        return self.key() < o.key()

    def __int__(self):
        return self.n

    def __float__(self):
        return float(self.n)

    def __truediv__(self, x):
        return self.n / x

    def __bool__(self):
        return True

    def __repr__(self):
        return str(self.n)

    def __format__(self, spec):
        return format(self.n, spec)


# ---------------------------------------------------------------------------------------------------
# Control-flow graph, dominators, loops, cheapest paths

class Block:
    __slots__ = ("idx", "start", "end", "instrs", "succ", "pred")

    def __init__(self, idx, instrs):
        self.idx = idx
        self.instrs = instrs
        self.start = instrs[0].addr
        self.end = instrs[-1].addr  # address of the last instruction
        self.succ = []
        self.pred = []


class Kernel:
    def __init__(self, mangled, instrs):
        self.mangled = mangled
        self.instrs = instrs
        self.by_addr = {i.addr: k for k, i in enumerate(instrs)}
        self.cut = False  # a branch with unknown targets was met
        self.build()

    def build(self):
        ins = self.instrs
        leaders = {ins[0].addr} if ins else set()
        for k, i in enumerate(ins):
            if i.never():
                continue
            b = i.base
            if b in BRANCHES:
                for t in i.targets or []:
                    leaders.add(t)
                if k + 1 < len(ins):
                    leaders.add(ins[k + 1].addr)
            elif b in TERMINATORS and k + 1 < len(ins):
                leaders.add(ins[k + 1].addr)
            elif b == "CALL" and i.callee is not None:
                leaders.add(i.callee)
        self.blocks = []
        cur = []
        for i in ins:
            if i.addr in leaders and cur:
                self.blocks.append(Block(len(self.blocks), cur))
                cur = []
            cur.append(i)
        if cur:
            self.blocks.append(Block(len(self.blocks), cur))
        self.block_at = {b.start: b for b in self.blocks}
        for n, blk in enumerate(self.blocks):
            last = blk.instrs[-1]
            nxt = self.blocks[n + 1] if n + 1 < len(self.blocks) else None
            b = last.base
            succ = []
            if last.never() or (b not in BRANCHES and b not in TERMINATORS):
                if nxt:
                    succ.append(nxt)
            elif b in BRANCHES:
                if last.targets is None:
                    self.cut = True
                else:
                    succ += [self.block_at[t] for t in last.targets if t in self.block_at]
                if not last.uncond() and nxt:
                    succ.append(nxt)
            else:  # terminator
                if not last.uncond() and nxt:
                    succ.append(nxt)
            seen = set()
            for s in succ:
                if s.idx not in seen:
                    seen.add(s.idx)
                    blk.succ.append(s)
                    s.pred.append(blk)
        self.mark_exceptional()

    def def_of(self, k, preg):
        """The instruction that last wrote predicate preg before instruction index k (64 back at most)."""
        for j in range(k - 1, max(-1, k - 65), -1):
            i = self.instrs[j]
            if i.base in BRANCHES or i.base in TERMINATORS:
                continue
            ops = [o.strip() for o in i.ops.split(",")[:2]]
            if preg in ops:
                return i
        return None

    def mark_exceptional(self):
        """Edges into the handling of NaN/Inf inputs: the branch tests a value against an Inf/NaN
        pattern (FSETP.NAN/.NUM, ISETP/FSETP against 0x7f800000, 0x7f80, 0x7c00, 0x7ff00000, +INF; |x|
        against FLT_MAX)."""
        self.avoid = set()
        for n, blk in enumerate(self.blocks):
            last = blk.instrs[-1]
            if last.base != "BRA" or last.pred is None or not last.targets or len(blk.succ) != 2:
                continue
            m = re.match(r"^@(!?)(U?P[0-6])$", last.pred)
            if not m:
                continue
            d = self.def_of(self.by_addr[last.addr], m.group(2))
            sp = special_test(d, m.group(2)) if d is not None else None
            if sp is None:
                continue
            taken_when_p = m.group(1) == ""
            taken = self.block_at.get(last.targets[0])
            fall = self.blocks[n + 1] if n + 1 < len(self.blocks) else None
            bad = taken if sp == taken_when_p else fall
            if bad is not None:
                self.avoid.add((blk.idx, bad.idx))

    def dominators(self, entry):
        # Cooper, Harvey, Kennedy: iterative, over reverse postorder of the blocks reachable from entry.
        order, seen, stack = [], {entry.idx}, [(entry, iter(entry.succ))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                order.append(node)
                stack.pop()
            elif nxt.idx not in seen:
                seen.add(nxt.idx)
                stack.append((nxt, iter(nxt.succ)))
        rpo = list(reversed(order))
        num = {b.idx: n for n, b in enumerate(rpo)}
        idom = {entry.idx: entry.idx}
        changed = True
        while changed:
            changed = False
            for b in rpo[1:]:
                new = None
                for p in b.pred:
                    if p.idx in idom:
                        if new is None:
                            new = p.idx
                        else:
                            a, c = p.idx, new
                            while a != c:
                                while num[a] > num[c]:
                                    a = idom[a]
                                while num[c] > num[a]:
                                    c = idom[c]
                            new = a
                if new is not None and idom.get(b.idx) != new:
                    idom[b.idx] = new
                    changed = True
        return idom, seen

    def loops(self):
        if not self.blocks:
            return []
        entry = self.blocks[0]
        idom, reach = self.dominators(entry)

        def dominates(a, b):
            while True:
                if a == b:
                    return True
                if b == idom[b]:
                    return False
                b = idom[b]

        heads = {}
        for blk in self.blocks:
            if blk.idx not in reach:
                continue
            for s in blk.succ:
                if s.start <= blk.end and dominates(s.idx, blk.idx):
                    lo = heads.setdefault(s.idx, {"header": s, "end": blk.end, "latches": []})
                    lo["end"] = max(lo["end"], blk.end)
                    lo["latches"].append(blk)
        loops = []
        for lo in heads.values():
            start, end = lo["header"].start, lo["end"]
            body = [i for i in self.instrs[self.by_addr[start]:self.by_addr[end] + 1]]
            loops.append({"start": start, "end": end, "header": lo["header"],
                          "latch": self.block_at_end(end), "instrs": body,
                          "loads": [i for i in body if is_load(i)]})
        for lo in loops:
            lo["depth"] = sum(1 for o in loops if o is not lo and o["start"] <= lo["start"] and lo["end"] <= o["end"])
        loops.sort(key=lambda lo: (lo["start"], -lo["end"]))
        return loops

    def block_at_end(self, end):
        for b in self.blocks:
            if b.start <= end <= b.end:
                return b
        return None

    # cheapest path -----------------------------------------------------------------------------

    def call_cost(self, addr, stack=()):
        if addr is None or addr not in self.block_at or addr in stack:
            return 0
        entry = self.block_at[addr]
        ends = [b for b in self.blocks if b.start >= addr and b.instrs[-1].base == "RET"]
        best = None
        for avoid in (True, False):
            for e in ends:
                d, _ = self.shortest(entry, e, addr, e.end, stack + (addr,), avoid)
                if d is not None and (best is None or int(d) < int(best)):
                    best = d
            if best is not None:
                break
        return int(best) if best is not None else 0

    def weight(self, blk, stack):
        w = Cost(sum(mem_bytes(i) for i in blk.instrs), len(blk.instrs))
        for i in blk.instrs:
            if i.base == "CALL" and not i.never():
                w = w + Cost(0, int(self.call_cost(i.callee, stack)))
        return w

    def shortest(self, src, dst, lo, hi, stack=(), avoid=True):
        """Fewest instructions from block src to block dst (both counted) over forward edges inside
        [lo, hi]; returns (cost, [blocks]) or (None, None)."""
        if dst.start < src.start:
            return None, None
        dist = {src.idx: self.weight(src, stack)}
        prev = {}
        for blk in self.blocks[src.idx:dst.idx + 1]:
            if blk.idx not in dist:
                continue
            if blk is dst:
                break
            for s in blk.succ:
                if s.start <= blk.start or s.start < lo or s.end > hi or s.idx > dst.idx:
                    continue
                if avoid and (blk.idx, s.idx) in self.avoid:
                    continue
                d = dist[blk.idx] + self.weight(s, stack)
                if s.idx not in dist or d < dist[s.idx]:
                    dist[s.idx] = d
                    prev[s.idx] = blk.idx
        if dst.idx not in dist:
            return None, None
        path, k = [], dst.idx
        while True:
            path.append(self.blocks[k])
            if k == src.idx:
                break
            k = prev[k]
        return dist[dst.idx], list(reversed(path))

    def cheapest_trip(self, loop, inner):
        """Cheapest path header -> back branch of loop through every loop in `inner` once: the inner loops
        a path can pass, then the Inf/NaN edges avoided where a path through those same loops remains."""
        chosen = []
        for il in sorted(inner, key=lambda x: x["start"]):
            trial = chosen + [il]
            if self._chain(loop, trial, False)[0] is not None:
                chosen = trial
        for avoid in (True, False):
            cost, path = self._chain(loop, chosen, avoid)
            if cost is not None:
                return cost, path, chosen, avoid
        return None, None, [], False

    def _chain(self, loop, inner, avoid):
        lo, hi = loop["start"], loop["end"]
        way = [loop["header"]]
        for il in inner:
            for b in (il["header"], il["latch"]):
                if b is not None and b.idx != way[-1].idx:
                    way.append(b)
        if loop["latch"] is None:
            return None, None
        if loop["latch"].idx != way[-1].idx:
            way.append(loop["latch"])
        total, path = Cost(), []
        for a, b in zip(way, way[1:]):
            if b.start < a.start:
                return None, None
            d, p = self.shortest(a, b, lo, hi, (), avoid)
            if d is None:
                return None, None
            if path:
                total += d - self.weight(a, ())
                path += p[1:]
            else:
                total, path = d, p
        if len(way) == 1:
            total, path = self.weight(way[0], ()), [way[0]]
        return total, path


# ---------------------------------------------------------------------------------------------------
# Names, element sizes

def demangle_all(names, filt):
    if not names:
        return {}
    if filt:
        try:
            r = subprocess.run([filt], input="\n".join(names) + "\n", stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            lines = r.stdout.splitlines()
            if r.returncode == 0 and len(lines) == len(names):
                return dict(zip(names, lines))
        except OSError:
            pass
    return {n: n for n in names}


def split_template(s):
    """'name<a, b<c, d>, e>(params)' -> (name, [a, 'b<c, d>', e], 'params')."""
    m = re.match(r"^(?:void\s+)?([^<(]*)", s)
    name = m.group(1).strip() if m else s
    args, params = [], ""
    i = len(m.group(0)) if m else 0
    if i < len(s) and s[i] == "<":
        depth, cur, i = 0, "", i
        for j in range(i, len(s)):
            c = s[j]
            if c == "<":
                depth += 1
                if depth == 1:
                    continue
            elif c == ">":
                depth -= 1
                if depth == 0:
                    args.append(cur.strip())
                    i = j + 1
                    break
            elif c == "," and depth == 1:
                args.append(cur.strip())
                cur = ""
                continue
            cur += c
    if i < len(s) and s[i] == "(":
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                depth -= 1
                if depth == 0:
                    params = s[i + 1:j]
                    break
    return name, args, params


TYPE_BYTES = {
    "float": 4, "int": 4, "unsigned int": 4, "double": 8, "long": 8, "unsigned long": 8,
    "long long": 8, "unsigned long long": 8, "short": 2, "unsigned short": 2, "__half": 2,
    "__nv_bfloat16": 2, "half": 2, "char": 1, "signed char": 1, "unsigned char": 1,
    "uint4": 16, "int4": 16, "float4": 16, "uint2": 8, "float2": 8,
    "bf16": 2, "fp16": 2,  # qnum's element-type tags (qnum::bf16, qnum::fp16): 16-bit elements in memory
}


def type_bytes(t):
    t = t.replace("const", "").replace("*", "").strip()
    t = t.split("::")[-1] if t not in TYPE_BYTES else t
    return TYPE_BYTES.get(t) or TYPE_BYTES.get(t.replace("std::", "")) or {"uint16_t": 2, "uint8_t": 1, "int8_t": 1,
                                                                               "uint32_t": 4, "int32_t": 4}.get(t)


# Known kernels: short name -> (kind, value from the template arguments). "bytes": bytes each element
# loads (the input element size); "per_trip": a fixed number of elements per trip (scalar grid-stride
# loops that also load per-element parameters, where a byte count would mislead).
# qnum/gpu/quantize.cuh: job<Sch, In, Out>; In is the input element type (float, qnum::bf16, qnum::fp16).
# qnum/train/dynamic_scale.cuh: the gradient quantizer's vector loops take ds_unroll = 4 chunks of 4 elements a
# trip (gradient, residual, and the group's multipliers); dequant_kernel's vector loop 4 chunks of 4 codes.
KNOWN = {
    "rows_kernel": ("bytes", lambda a: type_bytes(a[2])),             # <E, Sch, In, Out>
    "block_kernel": ("bytes", lambda a: type_bytes(a[2])),            # <E, Sch, In, Out>
    "tensor_quantize_kernel": ("bytes", lambda a: type_bytes(a[2])),  # <E, Sch, In, Out>
    "tensor_stats_kernel": ("bytes", lambda a: type_bytes(a[0])),     # <T>
    "dequantize_kernel": ("bytes", lambda a: 1),                      # 1-byte codes
    "dequantize_rows16_kernel": ("per_trip", lambda a: 16),           # one 16-code chunk a trip
    "ds_scan_kernel": ("per_trip", lambda a: 16),                     # the vector loop: 4 chunks of 4
    "ds_quantize_kernel": ("per_trip", lambda a: 16),
    "dequant_kernel": ("per_trip", lambda a: 16),
    "copy_kernel": ("bytes", lambda a: 16),                           # uint4
    "flush_kernel": ("bytes", lambda a: 16),
}

EMIT = {"0": "codes", "1": "fake", "2": "packed"}


def short_name(dem):
    s = dem
    s = re.sub(r"^void\s+", "", s)
    s = s.replace("(anonymous namespace)::", "")
    s = re.sub(r"\(qnum::v\d+::gpu::detail::emit\)(\d)", lambda m: EMIT.get(m.group(1), m.group(1)), s)
    s = re.sub(r"\bqnum::v\d+::(gpu::detail::|gpu::|detail::)?", "", s)
    name, args, params = split_template(s)
    if args:
        return "%s<%s>" % (name, ", ".join(args))
    return "%s(%s)" % (name, params)


def elem_bytes_for(dem):
    s = re.sub(r"^void\s+", "", dem).replace("(anonymous namespace)::", "")
    s = re.sub(r"\bqnum::v\d+::(gpu::detail::|gpu::|detail::)?", "", s)
    name, args, params = split_template(s)
    base = name.split("::")[-1]
    if base in KNOWN:
        try:
            b = KNOWN[base][1](args)
            if b:
                return b, KNOWN[base][0]
        except (IndexError, TypeError):
            pass
    for p in [x.strip() for x in params.split(",")]:
        if "const" in p and p.endswith("*"):
            b = type_bytes(p)
            if b:
                return b, "bytes"
    for a in args:
        b = type_bytes(a)
        if b:
            return b, "bytes"
    return None, None


# ---------------------------------------------------------------------------------------------------
# Per-kernel analysis

def div64_call(k, ins):
    if ins.base != "CALL":
        return False
    if ins.callee_name:
        return re.search(r"(div|rem)_[su]64", ins.callee_name) is not None
    # cuobjdump: no names; the 64-bit routines convert 64-bit integers (I2F.U64 / F2I.U64 ...)
    if ins.callee is None or ins.callee not in k.by_addr:
        return False
    for j in k.instrs[k.by_addr[ins.callee]:]:
        if ".U64" in j.op or ".S64" in j.op:
            return True
        if j.base == "RET":
            return False
    return False


def counts(k, instrs):
    c = {"MUFU": 0, "cvt": 0, "div64": 0, "BSSY/BSYNC": 0, "LDL/STL": 0, "CALL": 0}
    for i in instrs:
        if i.never():
            continue
        b = i.base
        if b == "MUFU":
            c["MUFU"] += 1
        elif b in ("F2I", "I2F", "F2F"):
            c["cvt"] += 1
        elif b in ("BSSY", "BSYNC"):
            c["BSSY/BSYNC"] += 1
        elif b in ("LDL", "STL"):
            c["LDL/STL"] += 1
        elif b == "CALL":
            c["CALL"] += 1
            if div64_call(k, i):
                c["div64"] += 1
    return c


def choose_loop(loops):
    load_loops = [lo for lo in loops if lo["loads"]]
    if not load_loops:
        return None, [], []

    def inside(a, b):  # a strictly inside b
        return a is not b and b["start"] <= a["start"] and a["end"] <= b["end"]

    innermost = [lo for lo in load_loops if not any(inside(o, lo) for o in load_loops)]
    if len(innermost) == 1:
        chosen = innermost[0]
    else:
        enclosing = [lo for lo in loops if all(inside(i, lo) for i in innermost)]
        if enclosing:
            chosen = min(enclosing, key=lambda lo: lo["end"] - lo["start"])
        else:
            # separate loops (a vector loop and a scalar one, a fast pass and its exact recomputation): analyse()
            # reports the one whose cheapest trip costs the fewest instructions per element
            alts = sorted(innermost, key=lambda lo: (sum(load_bytes(i) for i in lo["loads"]), lo["end"] - lo["start"]),
                          reverse=True)
            return alts[0], [], alts
    inner = [lo for lo in load_loops if inside(lo, chosen)]
    return chosen, inner, []


def trip_bytes(instrs):
    loads = [i for i in instrs if is_load(i)]
    vec = [i for i in loads if load_bytes(i) >= 8]
    use = vec if vec else loads
    return sum(load_bytes(i) for i in use)


def analyse(k, elem_bytes, kind="bytes"):
    loops = k.loops()
    loop, inner, alts = choose_loop(loops)
    if loop is None:
        return {"loop": None, "all_loops": loops, "total_instr": len(k.instrs)}
    best, best_key = None, None
    # per_trip kernels: the table's count holds for the loop that loads the most bytes only
    for lo, inn in ([(a, []) for a in alts] if alts and kind != "per_trip" else [(loop, inner)]):
        r = analyse_loop(k, loops, lo, inn, elem_bytes, kind)
        el, cost = r.get("elems"), r.get("path_cost")
        key = cost.n / el if el and cost is not None else float("inf")
        if best is None or key < best_key:  # ties: the earlier (more bytes loaded)
            best, best_key = r, key
    return best


def analyse_loop(k, loops, loop, inner, elem_bytes, kind):
    r = {"loop": None}
    r["all_loops"] = loops
    r["total_instr"] = len(k.instrs)
    r["loop"] = loop
    r["inner"] = inner
    r["loop_instr"] = len(loop["instrs"])
    r["counts"] = counts(k, loop["instrs"])
    cost, path, used, avoided = k.cheapest_trip(loop, inner)
    # Sub-group reductions whose trip count (log2 of the lanes a group spans) is a run-time value: the path
    # above may bypass them (a single lane runs no step), so each is passed once where that keeps to the same
    # route: where it costs at most 3x the loop's body (its guard, mask and setup; a route through other code,
    # such as the recomputation after an Inf, costs more).
    r["shfl_loops"] = []
    if cost is not None:
        shfl = [lo for lo in loops if lo is not loop and loop["start"] <= lo["start"] and lo["end"] <= loop["end"]
                and not lo["loads"] and any(i.base == "SHFL" for i in lo["instrs"])]
        for sl in sorted(shfl, key=lambda x: x["start"]):
            trial = sorted(used + [sl], key=lambda x: x["start"])
            c2, p2 = k._chain(loop, trial, avoided)
            if c2 is not None and c2.mem == cost.mem and 0 <= c2.n - cost.n <= 3 * len(sl["instrs"]):
                cost, path, used = c2, p2, trial
                r["shfl_loops"].append(sl)
    r["path_cost"], r["path"], r["path_inner"], r["avoided"] = cost, path, used, avoided
    approx = False
    b = 0
    if path:
        on = [i for blk in path for i in blk.instrs]
        r["path_counts"] = counts(k, on)
        # passes over the same elements (statistics, then emit) count once: the largest pass
        top = [il for il in used if not any(o is not il and o["start"] <= il["start"] and il["end"] <= o["end"]
                                             for o in used)]
        parts = [[i for i in on if il["start"] <= i.addr <= il["end"]] for il in top]
        parts.append([i for i in on if not any(il["start"] <= i.addr <= il["end"] for il in top)])
        b = max(trip_bytes(p) for p in parts)
    if b == 0:
        b = trip_bytes(loop["instrs"])
        approx = True
    r["trip_bytes"], r["approx"] = b, approx
    if kind == "per_trip":
        r["elems"], r["approx"] = elem_bytes, False
    elif elem_bytes and b:
        r["elems"] = b / elem_bytes
    return r


# ---------------------------------------------------------------------------------------------------
# Inputs

def is_cubin(path):
    with open(path, "rb") as f:
        h = f.read(20)
    return len(h) == 20 and h[:4] == b"\x7fELF" and int.from_bytes(h[18:20], "little") == 190  # EM_CUDA


def cubins_of(path, arch, cuobjdump, tmp):
    if is_cubin(path):
        return [path]
    out, _ = run([cuobjdump, "-lelf", path], what="cuobjdump -lelf")
    names = re.findall(r"ELF file\s+\d+:\s*(\S+)", out)
    if not names:
        raise Failure("%s holds no device code (cuobjdump -lelf lists no cubin)" % path)
    want = [n for n in names if re.search(r"\.%s\.cubin$" % re.escape(arch), n)]
    if not want:
        raise Failure("%s holds no %s cubin (it has: %s); use --arch" % (path, arch, ", ".join(names)))
    d = os.path.join(tmp, "xelf")
    os.makedirs(d, exist_ok=True)
    run([cuobjdump, "-xelf", ",".join(want), os.path.abspath(path)], cwd=d, what="cuobjdump -xelf")
    got = []
    for n in want:
        p = os.path.join(d, n)
        if not os.path.isfile(p):
            cand = glob.glob(os.path.join(d, "*" + n.split(".", 1)[-1]))
            p = cand[0] if cand else p
        got.append(p)
    return got


def parse_res_usage(text):
    res = {}
    for cur, line in sections(text, r"^\s*Function\s+(\S+?):\s*$"):
        if line is not None and cur not in res and "REG:" in line:
            d = dict(re.findall(r"([A-Z\[\]0-9]+):(\d+)", line))
            res[cur] = {"regs": int(d.get("REG", 0)), "stack": int(d.get("STACK", 0)),
                        "smem": int(d.get("SHARED", 0)), "local": int(d.get("LOCAL", 0))}
    return res


def parse_ptxas(text):
    sp = {}
    for cur, line in sections(text, r"Function properties for (\S+)"):
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line or "")
        if m and cur not in sp:
            sp[cur] = (int(m.group(1)), int(m.group(2)))
    return sp


# ---------------------------------------------------------------------------------------------------
# Output

COLS = ["kernel", "regs", "spill st/ld", "smem", "stack", "loop", "loop instr", "elem/trip", "instr/elem",
        "path/elem", "MUFU", "cvt", "div64", "BSSY/BSYNC", "LDL/STL", "shfl step"]

LEGEND = """\
Legend (tools/sass-report.py: static, from the SASS, no GPU; the rules are in its docstring).
regs, smem, stack: cuobjdump -res-usage. spill st/ld: bytes, ptxas -v ("?": binary input without
--ptxas-log). loop: address range [header, back branch] of the main loop, depth (the innermost loop
enclosing every loop that has a global load: for rows_kernel/block_kernel the per-group loop, whose
trip runs the statistics and the emit pass once). loop instr: every instruction in that range, i.e.
every runtime-selected variant (scheme kind, rounding, division or reciprocal, scale format, bf16 or
fp16) and cold path. elem/trip: bytes of the global loads on the cheapest path of one trip (only the
8/16-byte vector loads when there are any; the largest pass when a trip has several) / bytes an element
loads ("~": from the whole range). instr/elem = loop instr / elem/trip: code size per element.
path/elem: instructions on the cheapest path of one trip (inner load loops once, CALLs included,
Inf/NaN branches not taken) / elem/trip: the executed instructions of the fastest runtime
configuration, a lower bound to compare with a profiler's count. MUFU, cvt (F2I/I2F/F2F), div64
(calls of the 64-bit integer division routines), BSSY/BSYNC, LDL/STL: counted in the loop range.
shfl step: instructions of one step of the run-time-length shuffle loops (sub-group reductions over L
lanes) on that path; path/elem counts one step of each, a group of L lanes runs log2(L): add the rest.
"-": no loop with a global load."""


def fmt_num(x, nd=1):
    if x is None:
        return "-"
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    return ("%." + str(nd) + "f") % x


def row_of(k, info):
    r = info["r"]
    res = info["res"] or {}
    sp = info["spill"]
    row = {
        "kernel": info["name"],
        "regs": res.get("regs", "?"),
        "spill st/ld": ("%d/%d" % sp) if sp else "?",
        "smem": res.get("smem", "?"),
        "stack": res.get("stack", "?"),
    }
    lo = r.get("loop")
    if lo is None:
        for c in COLS[5:]:
            row[c] = "-"
        return row
    row["loop"] = "%x-%x d%d" % (lo["start"], lo["end"], lo["depth"])
    row["loop instr"] = r["loop_instr"]
    el = r.get("elems")
    mark = "~" if r.get("approx") else ""
    row["elem/trip"] = (mark + fmt_num(el)) if el else "-"
    row["instr/elem"] = (mark + fmt_num(r["loop_instr"] / el)) if el else "-"
    row["path/elem"] = (mark + fmt_num(r["path_cost"] / el)) if el and r.get("path_cost") else "-"
    for c in ("MUFU", "cvt", "div64", "BSSY/BSYNC", "LDL/STL"):
        row[c] = r["counts"][c]
    row["shfl step"] = "+".join(str(len(lp["instrs"])) for lp in r.get("shfl_loops") or []) or "-"
    return row


def print_table(rows, mode, out):
    if mode == "csv":
        w = csv.writer(out)
        w.writerow(COLS + ["elem bytes", "path instr", "mangled", "demangled"])
        for row, info in rows:
            r = info["r"]
            w.writerow([row[c] for c in COLS] + [info["elem_bytes"] or "", r.get("path_cost") or "",
                                                  info["mangled"], info["demangled"]])
        return
    cells = [[str(row[c]) for c in COLS] for row, _ in rows]
    if mode == "md":
        out.write("| " + " | ".join(COLS) + " |\n")
        out.write("|" + "|".join(["---"] + ["---:"] * (len(COLS) - 1)) + "|\n")
        for c in cells:  # kernel names in backticks: `<float>` would read as an HTML tag
            c = ["`%s`" % c[0]] + c[1:]
            out.write("| " + " | ".join(x.replace("|", "\\|") for x in c) + " |\n")
        return
    widths = [max(len(COLS[j]), *(len(c[j]) for c in cells)) for j in range(len(COLS))]
    out.write("  ".join(COLS[j].ljust(widths[j]) if j == 0 else COLS[j].rjust(widths[j]) for j in range(len(COLS))) + "\n")
    for c in cells:
        out.write("  ".join(c[j].ljust(widths[j]) if j == 0 else c[j].rjust(widths[j]) for j in range(len(COLS))) + "\n")


def safe(s, n=120):
    return re.sub(r"[^A-Za-z0-9_.,=+-]+", "_", s)[:n].strip("_")


def dump_kernel(path, k, info):
    r = info["r"]
    lo = r.get("loop")
    on_path = set()
    if r.get("path"):
        on_path = {i.addr for blk in r["path"] for i in blk.instrs}
    with open(path, "w") as f:
        f.write("// %s\n// %s\n" % (info["demangled"], k.mangled))
        if lo:
            f.write("// loop %#x-%#x (depth %d): %d instructions; cheapest trip %s instructions; elem/trip %s\n"
                    % (lo["start"], lo["end"], lo["depth"], r["loop_instr"], r.get("path_cost"),
                       fmt_num(r.get("elems"))))
            f.write("// column 1: L = in the reported loop, * = on the cheapest path of one trip\n")
        for lp in r.get("all_loops", []):
            f.write("// loop %#x-%#x depth %d, %d instructions, %d global loads\n"
                    % (lp["start"], lp["end"], lp["depth"], len(lp["instrs"]), len(lp["loads"])))
        for i in k.instrs:
            inl = lo is not None and lo["start"] <= i.addr <= lo["end"]
            mark = ("L" if inl else " ") + ("*" if i.addr in on_path else " ")
            extra = ""
            if i.base == "CALL":
                extra = "   // -> %s" % (i.callee_name or (hex(i.callee) if i.callee is not None else "?"))
            f.write("%s /*%05x*/ %s%s\n" % (mark, i.addr, i.text(), extra))


# ---------------------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description="Static SASS cost of the device kernels (see the docstring).")
    ap.add_argument("--input", help="cubin, object file or executable to read instead of compiling")
    ap.add_argument("--source", default=os.path.join(ROOT, "bench", "throughput_device.cu"),
                    help="CUDA source to compile (default: bench/throughput_device.cu)")
    ap.add_argument("--arch", default="sm_90", help="architecture (default sm_90)")
    ap.add_argument("--nvcc", help="nvcc to use (default: PATH, then /usr/local/cuda/bin)")
    ap.add_argument("--filter", action="append", default=[],
                    help="keep kernels whose demangled or mangled name contains TEXT (repeatable: any)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--md", action="store_true", help="markdown table")
    g.add_argument("--csv", action="store_true", help="CSV (legend on stderr)")
    ap.add_argument("--objdump-dir", help="keep the cubin, raw SASS, resource usage and one annotated file per kernel here")
    ap.add_argument("--elem-bytes", type=float, help="bytes loaded per element, for every kernel (overrides the table)")
    ap.add_argument("--ptxas-log", help="ptxas -v output to take spill figures from (with --input)")
    ap.add_argument("--loops", action="store_true", help="after the table, list every loop of every kernel")
    ap.add_argument("--full-names", action="store_true", help="demangled names in full")
    ap.add_argument("--no-nvdisasm", action="store_true", help="parse cuobjdump -sass even if nvdisasm is there")
    args = ap.parse_args(argv)

    arch = args.arch if args.arch.startswith("sm_") else "sm_" + args.arch.replace("compute_", "")
    cuobjdump = find_tool("cuobjdump", "CUOBJDUMP", args.nvcc)
    nvcc = args.nvcc or find_tool("nvcc", "NVCC")
    if cuobjdump is None:
        raise ToolMissing("cuobjdump not found (PATH, CUDA_HOME, /usr/local/cuda/bin, pip nvidia-cuda-cuobjdump)")
    nvdisasm = None if args.no_nvdisasm else find_tool("nvdisasm", "NVDISASM", nvcc)
    filt = find_tool("cu++filt", "CUXXFILT", nvcc) or shutil.which("c++filt")

    tmp = tempfile.mkdtemp(prefix="sass-report-")
    try:
        keep = args.objdump_dir
        if keep:
            os.makedirs(keep, exist_ok=True)
        spills = {}
        if args.input:
            if not os.path.isfile(args.input):
                raise Failure("no such file: %s" % args.input)
            cubins = cubins_of(args.input, arch, cuobjdump, tmp)
            if args.ptxas_log:
                with open(args.ptxas_log) as f:
                    spills = parse_ptxas(f.read())
        else:
            if nvcc is None:
                raise ToolMissing("nvcc not found (give --nvcc, or --input a built binary)")
            out_cubin = os.path.join(keep or tmp, os.path.splitext(os.path.basename(args.source))[0] + "." + arch + ".cubin")
            cmd = [nvcc, "-std=c++17", "-O3", "-arch=" + arch, "-cubin", "-I", os.path.join(ROOT, "include"),
                   "-Xptxas", "-v", args.source, "-o", out_cubin]
            sys.stderr.write("sass-report: %s\n" % " ".join(cmd))
            _, err = run(cmd, what="nvcc")
            if keep:
                with open(os.path.join(keep, "ptxas.log"), "w") as f:
                    f.write(err)
            spills = parse_ptxas(err)
            cubins = [out_cubin]

        kernels = {}
        res = {}
        for n, cub in enumerate(cubins):
            sfx = "" if len(cubins) == 1 else ".%d" % n
            ru, _ = run([cuobjdump, "-res-usage", cub], what="cuobjdump -res-usage")
            res.update(parse_res_usage(ru))
            raw = None
            if keep or not nvdisasm:
                raw, _ = run([cuobjdump, "-sass", cub], what="cuobjdump -sass")
            if keep:
                with open(os.path.join(keep, "sass%s.txt" % sfx), "w") as f:
                    f.write(raw)
                with open(os.path.join(keep, "res-usage%s.txt" % sfx), "w") as f:
                    f.write(ru)
            if nvdisasm:
                txt, _ = run([nvdisasm, "-c", cub], what="nvdisasm")
                if keep:
                    with open(os.path.join(keep, "nvdisasm%s.txt" % sfx), "w") as f:
                        f.write(txt)
                funcs = parse_nvdisasm(txt)
            else:
                funcs = parse_cuobjdump(raw)
            for name, instrs in funcs.items():
                if instrs:
                    kernels[name] = instrs

        dem = demangle_all(sorted(kernels), filt)
        selected = []
        for name in kernels:
            d = dem.get(name, name)
            if args.filter and not any(t.lower() in d.lower() or t.lower() in name.lower() for t in args.filter):
                continue
            selected.append(name)
        if not kernels:
            raise Failure("no kernel found in the SASS")
        if not selected:
            raise Failure("no kernel matches --filter %s (%d kernels)" % (" ".join(args.filter), len(kernels)))

        rows = []
        for name in selected:
            d = dem.get(name, name)
            k = Kernel(name, kernels[name])
            eb, kind = (args.elem_bytes, "bytes") if args.elem_bytes else elem_bytes_for(d)
            r = analyse(k, eb, kind)
            info = {"mangled": name, "demangled": d, "name": d if args.full_names else short_name(d),
                    "res": res.get(name), "spill": spills.get(name), "r": r, "elem_bytes": eb, "kernel": k}
            rows.append((row_of(k, info), info))
        rows.sort(key=lambda x: natural_key(x[0]["kernel"]))

        out = sys.stdout
        mode = "csv" if args.csv else "md" if args.md else "text"
        print_table(rows, mode, out)
        legend = LEGEND + "\nSASS from %s; %s." % ("nvdisasm" if nvdisasm else "cuobjdump -sass",
                                                  ", ".join(os.path.basename(c) for c in cubins))
        if any(info["kernel"].cut for _, info in rows):
            legend += " Some kernels have indirect branches with unknown targets (paths through them are cut)."
        if mode == "csv":
            sys.stderr.write(legend + "\n")
        else:
            out.write("\n" + legend + "\n")
        if args.loops:
            out.write("\nLoops (start-end, depth, instructions, global loads; * = reported):\n")
            for row, info in rows:
                out.write("%s\n" % info["name"])
                r = info["r"]
                for lp in r.get("all_loops", []):
                    out.write("  %s %x-%x d%d  %d instr  %d loads\n" % (
                        "*" if lp is r.get("loop") else " ", lp["start"], lp["end"], lp["depth"],
                        len(lp["instrs"]), len(lp["loads"])))
                if r.get("loop") is not None:
                    pc = r.get("path_counts") or {}
                    out.write("    cheapest trip: %s instructions, %s bytes loaded, inner loops taken: %s; on it: %s\n" % (
                        r.get("path_cost"), r.get("trip_bytes"),
                        ", ".join("%x-%x" % (i["start"], i["end"]) for i in r.get("path_inner") or []) or "none",
                        ", ".join("%s %d" % kv for kv in pc.items())))
        if keep:
            with open(os.path.join(keep, "index.txt"), "w") as idx:
                for n, (row, info) in enumerate(rows):
                    fn = "%03d_%s.sass" % (n, safe(info["name"]))
                    dump_kernel(os.path.join(keep, fn), info["kernel"], info)
                    idx.write("%s\t%s\n" % (fn, info["demangled"]))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ToolMissing as e:
        sys.stderr.write("sass-report: SKIP: %s\n" % e)
        sys.exit(SKIP)
    except Failure as e:
        sys.stderr.write("sass-report: %s\n" % e)
        sys.exit(1)
