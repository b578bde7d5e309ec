#!/usr/bin/env python3
"""Summarises bench/multihost.sh: every target's figure beside its limit, multihost.csv, and
multihost.png (samples/s one host vs across hosts per job; needs matplotlib, skipped without it).

Usage: bench/multihost_summary.py RESULTS_DIR/multihost
"""
import csv
import glob
import os
import re
import statistics
import sys

D = sys.argv[1] if len(sys.argv) > 1 else "build/bench-results/multihost"


def grab(path, pattern, group=1):
    try:
        text = open(path).read()
    except OSError:
        return None
    m = re.search(pattern, text)
    return float(m.group(group)) if m else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def runs(name, where, pattern):
    return [grab(p, pattern) for p in sorted(glob.glob(os.path.join(D, f"{name}_{where}_r*.txt")))]


SPS = r"Done: .* in [0-9.]+ s: ([0-9]+) samples/s"
CPU = r"server 0: .*\(([0-9.]+)% of a core\)"
TAU = r"Staleness over .*: mean ([0-9.]+)"
# worker 0's own accounting: steps, wall, compute -> the time per step that is not compute
W0 = r"worker 0: ([0-9]+) local steps in ([0-9.]+) s: compute ([0-9.]+) s"


def step_split(name, where):
    """Medians over runs of (compute us per step, other us per step) of worker 0."""
    comp, other = [], []
    for p in sorted(glob.glob(os.path.join(D, f"{name}_{where}_r*.txt"))):
        m = re.search(W0, open(p).read())
        if m:
            n, wall, c = int(m.group(1)), float(m.group(2)), float(m.group(3))
            comp.append(1e6 * c / n)
            other.append(1e6 * (wall - c) / n)
    return median(comp), median(other)

tcp = [open(p).read().split() for p in sorted(glob.glob(os.path.join(D, "tcp_r*.txt")))]
tcp = [t for t in tcp if len(t) >= 4]
rtt = median([float(t[1]) for t in tcp])
bulk = median([float(t[3]) for t in tcp])

jobs = [("s1w1", "1 server + 1 worker", 0.9), ("s1w1_overlap", "1 + 1, --overlap", 0.9),
        ("s1w2", "1 server + 2 workers", 0.8), ("s1w2_overlap", "1 + 2, --overlap", 0.8),
        ("s2w2", "2 servers + 2 workers", 0.8), ("s2w2_overlap", "2 + 2, --overlap", 0.8)]
rows = []
print(f"# mnist_async across hosts (netns, TCP, osc pt2pt) vs one host (shared memory, osc rdma); medians")
print("# (other/step: worker 0's wall time per step that is not compute, i.e. communication and")
print("#  waiting, one host -> across hosts, us; 'at equal compute': the ratio those give with the")
print("#  one-host compute time per step, free of the compute-speed noise between runs)")
print(f"{'job':24s} {'one host':>10s} {'across':>10s} {'ratio':>6s} {'target':>7s} {'server CPU':>11s} {'tau':>5s}"
      f" {'other/step us':>15s} {'at equal compute':>17s}")
for key, label, target in jobs:
    one = median(runs(key, "one", SPS))
    across = median(runs(key, "across", SPS))
    cpu = median(runs(key, "across", CPU))
    tau = median(runs(key, "across", TAU))
    if one is None and across is None:
        continue
    ratio = across / one if one and across else None
    ok = "ok" if ratio is not None and ratio >= target else "MISSED"
    fmt = lambda v, f: (f % v) if v is not None else "-"
    c1, o1 = step_split(key, "one")
    _, o2 = step_split(key, "across")
    eq = (c1 + o1) / (c1 + o2) if None not in (c1, o1, o2) else None
    print(f"{label:24s} {fmt(one, '%10.0f')} {fmt(across, '%10.0f')} {fmt(ratio, '%6.2f')} "
          f"{'>=' + str(target):>5s} {ok:6s} {fmt(cpu, '%9.1f%%')} {fmt(tau, '%5.2f')}"
          f" {fmt(o1, '%6.0f')} -> {fmt(o2, '%5.0f')} {fmt(eq, '%17.2f')}")
    rows.append({"job": key, "one_host_sps": one, "across_sps": across, "ratio": ratio, "target": target,
                 "server_cpu_pct": cpu, "staleness_mean": tau, "compute_us_per_step": c1,
                 "other_us_per_step_one": o1, "other_us_per_step_across": o2, "ratio_at_equal_compute": eq})

idle = grab(os.path.join(D, "idle.txt"), CPU)
serve1 = median(runs("s1w1", "across", CPU))
print()
print("# server CPU across hosts (target: <= 15% of a core serving one worker, <= 1% idle)")
if serve1 is not None:
    print(f"serving one worker: {serve1:.1f}% of a core  {'ok' if serve1 <= 15 else 'MISSED'}")
if idle is not None:
    print(f"idle (worker sleeps 1 s per step): {idle:.2f}% of a core  {'ok' if idle <= 1 else 'MISSED'}")

rma = {}
p = os.path.join(D, "rma_across.csv")
if os.path.exists(p):
    for r in csv.DictReader(open(p)):
        rma[int(r["bytes"])] = {k: float(v) for k, v in r.items()}
print()
print("# push/pull across hosts vs the network (tcp_probe between the same namespaces)")
if rtt is not None:
    print(f"TCP round trip {rtt:.1f} us, TCP bulk {bulk:.0f} MB/s (medians of {len(tcp)})")
a = rma.get(36392)
if a and rtt:
    step = a["step_us"]
    print(f"push+pull of the 36,392-byte arena: {step:.1f} us = {step / rtt:.1f}x the round trip "
          f"(target <= 5x: {'ok' if step <= 5 * rtt else 'MISSED'}); begin_step+end_step {a['bestep_us']:.1f} us "
          f"= {a['bestep_us'] / rtt:.1f}x")
for size in sorted(rma):
    if size >= 1 << 20:
        r = rma[size]
        push_mbps = size / r["push_us"] if r["push_us"] else 0
        raw_mbps = size / r["lk_acc_us"] if r["lk_acc_us"] else 0
        line = f"push {size >> 20:>2d} MiB: {push_mbps:6.0f} MB/s, raw lock/MPI_Accumulate/unlock {raw_mbps:6.0f} MB/s"
        if bulk:
            line += f", {100 * push_mbps / bulk:5.1f}% of TCP bulk"
            if size == 16 << 20:
                line += f" (target >= 80%: {'ok' if push_mbps >= 0.8 * bulk else 'MISSED'})"
        print(line)

with open(os.path.join(D, "multihost.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["job"])
    w.writeheader()
    w.writerows(rows)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("multihost_summary: matplotlib missing: no plot")
    sys.exit(0)
if rows:
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["one_host_sps"] or 0 for r in rows], 0.4, label="one host (shm, osc rdma)")
    ax.bar([x + 0.2 for x in xs], [r["across_sps"] or 0 for r in rows], 0.4, label="across hosts (TCP, osc pt2pt)")
    for x, r in zip(xs, rows):
        if r["ratio"]:
            ax.text(x + 0.2, (r["across_sps"] or 0) * 1.01, f"{r['ratio']:.2f}", ha="center", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([dict((k, l) for k, l, _ in jobs)[r["job"]] for r in rows], rotation=20, fontsize=8)
    ax.set_ylabel("samples/s")
    ax.set_title("mnist_async: across simulated hosts vs one host (2 shared cores)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(D, "multihost.png"), dpi=110)
    print(f"plot: {os.path.join(D, 'multihost.png')}")
