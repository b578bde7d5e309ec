#!/usr/bin/env python3
"""check_npy_finite.py FLOATS DIR [DIR...]: passes when each DIR holds the model's tensors as
.npy files (little-endian float32, as export_npy writes them) with FLOATS elements in all, every
one of them finite (no NaN, no Inf). Standard library only."""
import array
import ast
import math
import pathlib
import sys


def read_npy(path):
    raw = path.read_bytes()
    if raw[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy file")
    major = raw[6]
    if major == 1:
        hlen, start = int.from_bytes(raw[8:10], "little"), 10
    else:
        hlen, start = int.from_bytes(raw[8:12], "little"), 12
    header = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
    if header["descr"] not in ("<f4", "=f4") or header["fortran_order"]:
        raise ValueError(f"unexpected header {header}")
    count = math.prod(header["shape"])
    data = raw[start + hlen:]
    if len(data) != 4 * count:
        raise ValueError(f"{len(data)} data bytes for shape {header['shape']}")
    values = array.array("f")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def main():
    expected, dirs = int(sys.argv[1]), [pathlib.Path(d) for d in sys.argv[2:]]
    ok = True
    for d in dirs:
        files = sorted(d.glob("*.npy"))
        total = bad = 0
        for f in files:
            try:
                values = read_npy(f)
            except (OSError, ValueError, KeyError, SyntaxError) as e:
                print(f"FAIL: {f}: {e}")
                ok = False
                continue
            n_bad = sum(1 for v in values if not math.isfinite(v))
            if n_bad:
                print(f"FAIL: {f}: {n_bad} of {len(values)} values are NaN or Inf")
            total += len(values)
            bad += n_bad
        print(f"{d}: {len(files)} tensors, {total} floats, {bad} non-finite")
        if total != expected:
            print(f"FAIL: {d}: {total} floats, expected {expected}")
            ok = False
        ok = ok and bad == 0
    print("PASS: every parameter is finite" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
