#!/usr/bin/env python3
"""usage: check_portable_lib.py LIBRARY...

The installed libasyncps must run on any x86-64-v2 CPU: no instruction beyond x86-64-v2 (no
AVX/AVX2/AVX-512 or other VEX/EVEX encodings, no ymm/zmm/mask registers, no BMI1/BMI2, FMA,
LZCNT, MOVBE) outside the run-time dispatched clones (functions GCC's target_clones names
<name>.avx2, <name>.avx512f; the loader's resolver picks one for the CPU). Disassembles each
library with objdump and fails naming the first offending function and instruction. Also
requires that the clones exist (else the dispatch this test relies on was lost), unless
ASYNCPS_NO_CLONES=1 says the build has none (a sanitizer build: vector_ops.cpp leaves them out
under ASan).
"""
import os
import re
import subprocess
import sys

BEYOND_V2 = re.compile(
    r"%[yz]mm\d+|%k[0-7]\b|^\s*(v[a-z0-9]+|andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|"
    r"lzcnt|tzcnt|movbe)\b")
CLONE = re.compile(r"\.(avx2|avx512f|arch_x86_64_v[34])(\.\d+)?$")


def check(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "att", path], check=True,
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
    print(f"{path}: {insns} instructions, {len(clones)} dispatched clone(s): " + ", ".join(sorted(clones)))
    if bad:
        for f, i in bad[:10]:
            print(f"  beyond x86-64-v2 in {f}: {i}")
        print(f"FAIL: {len(bad)} instruction(s) beyond x86-64-v2 outside dispatched clones in {path}")
        return False
    if not clones and os.environ.get("ASYNCPS_NO_CLONES") != "1":
        print(f"FAIL: no dispatched clones in {path} (scale_into_finite/all_finite should have avx2 and avx512f ones)")
        return False
    return True


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ok = all([check(p) for p in sys.argv[1:]])
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)
