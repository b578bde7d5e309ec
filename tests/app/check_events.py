#!/usr/bin/env python3
"""usage: check_events.py LOGDIR RUNS [TAG=VALUE ...]

Reads mnist_async's TensorBoard event files with readers that are not the project's: the TFRecord
framing and both masked CRC-32Cs with python3-crc32c, each Event with `protoc --decode_raw`
(protobuf-compiler). Fails unless LOGDIR holds RUNS files named events.out.tfevents.*, each
starting with the file_version record "brain.Event:2", every record's CRCs right, and every line
of LOGDIR/metrics.jsonl (what the chief logged) found as an Event at that global step holding the
same tags with the same values (to float32 precision). Where LOGDIR has no metrics.jsonl (the
Python examples), each TAG=VALUE must be held by some event, equal to VALUE's printed digits
(e.g. auc=0.8123 from the job's "AUC 0.8123" line: within half a unit of its last digit)."""
import glob
import json
import math
import os
import re
import struct
import subprocess
import sys

import crc32c


def masked(data):
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    blob = open(path, "rb").read()
    at = 0
    while at < len(blob):
        if at + 12 > len(blob):
            sys.exit(f"FAIL: {path}: a truncated record header at byte {at}")
        header = blob[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", blob[at + 8:at + 12])
        if len_crc != masked(header):
            sys.exit(f"FAIL: {path}: the length's CRC at byte {at} is wrong")
        data = blob[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[at + 12 + length:at + 16 + length])
        if data_crc != masked(data):
            sys.exit(f"FAIL: {path}: the data's CRC at byte {at} is wrong")
        yield data
        at += 16 + length


def decode(data):
    """protoc --decode_raw's text of one Event: (step, file_version, {tag: value})."""
    text = subprocess.run(["protoc", "--decode_raw"], input=data, capture_output=True, check=True).stdout.decode()
    step, version, values = 0, None, {}
    depth, tag = 0, None
    for line in text.splitlines():
        s = line.strip()
        if s.endswith("{"):
            depth += 1
            continue
        if s == "}":
            depth -= 1
            continue
        key, _, val = s.partition(": ")
        if depth == 0 and key == "2":
            step = int(val)
        elif depth == 0 and key == "3":
            version = json.loads(val)
        elif depth == 2 and key == "1":
            tag = json.loads(val)
        elif depth == 2 and key == "2":  # simple_value: a fixed32, as protoc shows it
            bits = int(val, 16) if val.startswith("0x") else int(val) & 0xFFFFFFFF
            values[tag] = struct.unpack("<f", struct.pack("<I", bits))[0]
    return step, version, values


def main():
    logdir, runs = sys.argv[1], int(sys.argv[2])
    files = sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))
    if len(files) != runs:
        sys.exit(f"FAIL: {len(files)} event files in {logdir}, expected {runs} (one per run): {files}")
    events = {}
    for f in files:
        if not re.match(r"events\.out\.tfevents\.\d{10}\.[^.]+", os.path.basename(f)):
            sys.exit(f"FAIL: {f}: not named as TensorBoard expects")
        recs = [decode(r) for r in records(f)]
        if not recs or recs[0][1] != "brain.Event:2":
            sys.exit(f"FAIL: {f}: the first record is not the file_version brain.Event:2 ({recs[:1]})")
        for step, _, values in recs[1:]:
            events.setdefault(step, []).append(values)
    metrics = os.path.join(logdir, "metrics.jsonl")
    lines = [json.loads(l) for l in open(metrics)] if os.path.exists(metrics) else []
    if not lines and len(sys.argv) <= 3:
        sys.exit(f"FAIL: nothing to check the events against: no {metrics} and no TAG=VALUE")
    checked = 0
    for want in sys.argv[3:]:
        tag, _, text = want.partition("=")
        digits = len(text.partition(".")[2])
        tol = 0.5 * 10.0 ** -digits + 1e-6 * abs(float(text))
        if not any(abs(e.get(tag, math.inf) - float(text)) <= tol for evs in events.values() for e in evs):
            sys.exit(f"FAIL: no event holds {tag} = {text} (+- {tol:.2g})")
        checked += 1

    def same(have, want):  # (metrics.jsonl has 9 significant digits of the double, the event its
        # float32: equal to float32 precision; JSON's null is a NaN)
        want = float("nan") if want is None else want
        return have is not None and (math.isclose(have, want, rel_tol=2e-7, abs_tol=1e-30) or
                                     (math.isnan(have) and math.isnan(want)))

    for line in lines:
        step = line.get("global_step", line.get("eval_global_step"))
        if step is None:
            continue
        fields = {t: v for t, v in line.items() if t not in ("global_step", "eval_global_step", "local_step")}
        found = [e for e in events.get(int(step), []) if all(same(e.get(t), v) for t, v in fields.items())]
        if not found:
            sys.exit(f"FAIL: no event at global step {int(step)} holds {fields} "
                     f"(events there: {events.get(int(step))})")
        checked += len(fields)
    tags = sorted({t for evs in events.values() for e in evs for t in e})
    print(f"PASS: {len(files)} event file(s), {sum(1 for _ in events)} steps, {checked} values equal to "
          f"metrics.jsonl's; tags: {', '.join(tags)}")


if __name__ == "__main__":
    main()
