#!/usr/bin/env python3
"""docs/SCALING.md quotes what bench/scaling_model.py says of the recorded points
(docs/scaling_points.jsonl): every fitted term, the model check's error summary and every
projection row. Re-runs the model on the points and fails on the first figure the page does not
carry as printed, so the page cannot drift from its data or from the model's code.

    check_scaling_doc.py ROOT"""
import subprocess
import sys

root = sys.argv[1]
out = subprocess.run([sys.executable, f"{root}/bench/scaling_model.py", f"{root}/docs/scaling_points.jsonl"],
                     capture_output=True, text=True, check=True).stdout
doc = open(f"{root}/docs/SCALING.md").read()
missing = []
section = None
for line in out.splitlines():
    if line.startswith("#"):
        section = line
        continue
    words = line.split()
    if not words:
        continue
    if section.startswith("# Fitted terms"):
        # "  alpha      worker's latency per step     52.4 us": the value (after the fixed-width
        # name and description) as printed
        # in the page's table row of that term: "| alpha | ... | 91.4 us |" (not anywhere)
        name, value = line[2:2 + 10].strip(), line[2 + 10 + 1 + 42 + 1:].strip()
        rows = [r for r in doc.splitlines() if r.startswith(f"| {name} |")]
        if not any(r.rstrip().endswith(f"| {value} |") for r in rows):
            missing.append(f"fitted term {name} = {value} (its row: {rows[0] if rows else 'none'})")
    elif section.startswith("# Measured beside") and line.strip().startswith("checked points"):
        if line.strip() not in doc:
            missing.append(line.strip())
    elif section.startswith("# Projection") and words[0] in ("measured", "rdma"):
        # "W=64: 22  W=128: 45 ..." -> the page's table cells "| 22 | 45 | ... |"
        # with its labels: "| measured | 16 MiB, 50 ms compute | 10 Gb/s | 24 | ... | 1,538 |"
        cells = line.split("W=64:")[1].split("(limit")[0].split()
        limit = int(line.split("limit W ~")[1].strip(" )"))
        head = line.split("W=64:")[0].split()
        kind, link = head[0], " ".join(head[-2:])
        case = " ".join(head[1:-2])
        row = (f"| {kind} | {case} | {link} | " + " | ".join(c for c in cells if not c.startswith("W=")) +
               f" | {limit:,} |")
        if row not in doc.splitlines():
            missing.append(f"projection row: {line.strip()}")
if missing:
    sys.exit("FAIL: docs/SCALING.md does not carry what bench/scaling_model.py prints for docs/scaling_points.jsonl:\n  "
             + "\n  ".join(missing))
print("docs/SCALING.md matches the model's output on docs/scaling_points.jsonl")
