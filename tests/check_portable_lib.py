#!/usr/bin/env python3
"""usage: check_portable_lib.py LIBRARY...

The installed libasyncps (and the CNN kernels' library, asyncps_nn) must run on any x86-64-v2
CPU: no instruction beyond x86-64-v2 (no AVX/AVX2/AVX-512 or other VEX/EVEX encodings, no
ymm/zmm/mask registers, no BMI1/BMI2, FMA, LZCNT, MOVBE) outside the code compiled for a higher
CPU level and chosen at run time (lib/cpu: functions in a namespace ...::avx2:: or ...::avx512::;
also GCC target_clones' <name>.avx2 / <name>.avx512f). Disassembles each library with objdump
and fails naming the first offending function and instruction. Also requires that such
level-specific code exists (else the dispatch this test relies on was lost).
"""
import os
import re
import subprocess
import sys

BEYOND_V2 = re.compile(
    r"%[yz]mm\d+|%k[0-7]\b|^\s*(v[a-z0-9]+|andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|"
    r"lzcnt|tzcnt|movbe)\b")
CLONE = re.compile(r"\.(avx2|avx512f|arch_x86_64_v[34])(\.\d+)?$|::(avx2|avx512)::")


def check(path):
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", "-M", "att", path], check=True,
                         capture_output=True, text=True).stdout
    func, clones, insns, bad = None, set(), 0, []
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            func = m.group(1)
            if CLONE.search(func):
                clones.add(func)
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(.*)$", line)
        if not m or func is None:
            continue
        insns += 1
        insn = m.group(1)
        if BEYOND_V2.search(insn) and not CLONE.search(func):
            bad.append((func, insn.strip()))
    levels = sorted({m.group(0).strip(":.") for f in clones for m in [CLONE.search(f)]})
    print(f"{path}: {insns} instructions, {len(clones)} function(s) of the levels " + ", ".join(levels))
    if bad:
        for f, i in bad[:10]:
            print(f"  beyond x86-64-v2 in {f}: {i}")
        print(f"FAIL: {len(bad)} instruction(s) beyond x86-64-v2 outside dispatched clones in {path}")
        return False
    if not clones:
        print(f"FAIL: no code for a higher CPU level in {path} (the avx2 and avx512 levels of lib/cpu are missing)")
        return False
    return True


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ok = all([check(p) for p in sys.argv[1:]])
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)
