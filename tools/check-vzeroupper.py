#!/usr/bin/env python3
"""Find calls from qnum's AVX2 / AVX-512 host lanes into code compiled without AVX while the upper halves of
the vector registers may hold data.

    tools/check-vzeroupper.py PROGRAM [PROGRAM ...]

On Intel cores every SSE instruction that runs while the upper halves of ymm/zmm0-15 are dirty pays a merge
with them: a generic (SSE) helper called from the AVX-512 lanes without a vzeroupper first ran a 512x512 int8
g32 quantize at 0.4x its speed (docs/performance.md). The lanes route such calls through generic_call
(host/simd_lanes.inc); this check reads a built program's disassembly (objdump) and lists every call (or tail
jump) that still leaves a function of the namespaces detail::simd::avx2 / detail::simd::avx512 for one outside
them while the state may be dirty.

The state is followed through each function's jumps (may-be-dirty: any path that wrote a ymm/zmm register
since the last vzeroupper) and across calls between the lanes' own functions (a lane function called with
dirty state starts dirty). glibc's memcpy, memmove and memset, which use VEX code on AVX machines, are allowed.
Exit status: 0 none found, 1 found (each printed), 77 objdump missing or no lane function in the program.
"""
import re
import shutil
import subprocess
import sys

ALLOWED_PLT = ("memcpy", "memmove", "memset", "__memcpy_chk", "__memset_chk")
HEADER = re.compile(r"^([0-9a-f]+) <(.*)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\s*(\S.*)$")
TARGET = re.compile(r"^([0-9a-f]+) <(.*)>$")
WRITES_WIDE = re.compile(r"%[yz]mm\d+(\{[^}]*\})*$")
UNCONDITIONAL = ("jmp", "ret", "ud2", "hlt")


def strip_nested(name):
    """A demangled name without its template arguments and parameter lists: the scope a function lives in."""
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def is_lane(name):
    scope = strip_nested(name)
    return "::simd::avx2::" in scope or "::simd::avx512::" in scope


def strip_comment(text):
    """An instruction without objdump's comment ("# 2a1c0 <symbol>" after whitespace; a lambda's name has "#1}")."""
    k = text.find("# ")
    while k > 0 and not text[k - 1].isspace():
        k = text.find("# ", k + 1)
    return (text[:k] if k > 0 else text).strip()


def read(program):
    """The lane functions of the program (by address), with their instructions; the others are only call targets,
    known by the names in the operands."""
    # stdout alone through a pipe: one read of the whole listing (with stderr too, communicate() polls both in small
    # pieces, a fifth of this script's time)
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", program], check=True,
                          stdout=subprocess.PIPE, text=True).stdout
    funcs, cur = {}, None
    for line in dump.splitlines():
        if not line.startswith(" "):  # a function's header (or a blank / section line)
            m = HEADER.match(line)
            if m:
                cur = None
                if is_lane(m.group(2)):
                    cur = {"addr": int(m.group(1), 16), "name": m.group(2), "insns": []}
                    funcs[cur["addr"]] = cur
            continue
        if cur is None:
            continue
        m = INSN.match(line)
        if m:
            cur["insns"].append((int(m.group(1), 16), strip_comment(m.group(2))))
    return funcs


def branch_target(operands):
    m = TARGET.match(operands.strip())
    return (int(m.group(1), 16), m.group(2)) if m else (None, operands.strip())


def split(text):
    parts = text.split(None, 1)
    return (parts[0] if parts else ""), (parts[1] if len(parts) > 1 else "")


def analyse(func, entry_dirty):
    """Yields (address, mnemonic, target address, target name, dirty) for each call / jump out of the function."""
    insns = [(addr,) + split(text) for addr, text in func["insns"]]
    n = len(insns)
    index = {a: i for i, (a, _, _) in enumerate(insns)}
    # Per instruction: whether it cleans or dirties the upper state, its successors inside the function, and whether
    # it is an indirect jump (a switch's table: any instruction may come next).
    effect, succs, indirect = [None] * n, [()] * n, [False] * n
    for i, (_, op, rest) in enumerate(insns):
        if op in ("vzeroupper", "vzeroall"):
            effect[i] = False
        elif WRITES_WIDE.search(rest) and not op.startswith("call"):
            effect[i] = True
        succ = []
        if op.startswith("j"):
            t, _ = branch_target(rest)
            if t is not None and t in index:
                succ.append(index[t])
            elif t is None and op.startswith("jmp"):
                indirect[i] = True
        if not (op in UNCONDITIONAL or op.startswith("jmp") or op.startswith("ret")) and i + 1 < n:
            succ.append(i + 1)
        succs[i] = tuple(succ)
    # May-be-dirty state on entry to each reached instruction, by a worklist (the state only grows: False -> True).
    seen, state_in = [False] * n, [False] * n
    work = []

    def reach(j, dirty):
        if not seen[j] or (dirty and not state_in[j]):
            seen[j], state_in[j] = True, state_in[j] or dirty
            work.append(j)

    if n:
        reach(0, entry_dirty)
    anywhere = None  # the state an indirect jump was reached with (None: none reached yet)
    while work:
        i = work.pop()
        dirty = state_in[i] if effect[i] is None else effect[i]
        for j in succs[i]:
            reach(j, dirty)
        if indirect[i] and (anywhere is None or (dirty and not anywhere)):
            anywhere = dirty
            for j in range(n):
                reach(j, anywhere)
    for i, (addr, op, rest) in enumerate(insns):
        if not seen[i] or not (op.startswith("call") or op.startswith("jmp")):
            continue
        t, name = branch_target(rest)
        if op.startswith("jmp") and (t is None or t in index):
            continue  # a jump inside the function (direct, or through a switch's table)
        yield addr, op, t, name, state_in[i]


def check(program):
    funcs = read(program)
    lanes = set(funcs)
    if not lanes:
        return None
    memo = {}

    def exits(a, entry_dirty):  # analyse() of lane function a, once for each entry state
        if (a, entry_dirty) not in memo:
            memo[(a, entry_dirty)] = list(analyse(funcs[a], entry_dirty))
        return memo[(a, entry_dirty)]

    dirty_entry = set()
    while True:
        grew = False
        for a in lanes:
            for _, _, t, _, dirty in exits(a, a in dirty_entry):
                if dirty and t in lanes and t not in dirty_entry:
                    dirty_entry.add(t)
                    grew = True
        if not grew:
            break
    found = []
    for a in sorted(lanes):
        for addr, op, t, name, dirty in exits(a, a in dirty_entry):
            if not dirty or t in lanes:
                continue
            if name.endswith("@plt>") or "@plt" in name:
                if any(name.startswith(p + "@") or ("<" + p + "@") in name for p in ALLOWED_PLT):
                    continue
            found.append((funcs[a]["name"], addr, op, name))
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    if shutil.which("objdump") is None:
        print("check-vzeroupper: objdump not found (binutils)")
        return 77
    total, checked = 0, 0
    for program in argv[1:]:
        found = check(program)
        if found is None:
            print(f"{program}: no AVX2 / AVX-512 lane function")
            continue
        checked += 1
        for fname, addr, op, callee in found:
            print(f"{program}: {addr:#x} in {fname[:160]}: {op} {callee[:160]} with dirty upper state")
        print(f"{program}: {len(found)} call(s) into non-AVX code with dirty upper state")
        total += len(found)
    if checked == 0:
        return 77
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
