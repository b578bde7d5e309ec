#!/usr/bin/env python3
"""Plots what bench/run-bench.sh measured (matplotlib, Agg backend).

  rma_bandwidth.png  bandwidth vs size: push / pull (MPI_Get_accumulate, MPI_Get) through the
                     library, raw lock/unlock accumulate, aggregate push of 2 and 3 workers,
                     with local memcpy and axpy (one core) as limit lines
  throughput.png     samples/s vs workers: mnist_async vs PyTorch (CPU, 1 thread per process)

Usage: bench/plot-bench.py [RESULTS_DIR=build/bench-results] [OUT_DIR=docs]
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

R = sys.argv[1] if len(sys.argv) > 1 else "build/bench-results"
OUT = sys.argv[2] if len(sys.argv) > 2 else "docs"
os.makedirs(OUT, exist_ok=True)


def rma(w):
    p = os.path.join(R, f"rma_w{w}.csv")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def bw(rows, col):  # MB/s = bytes/us
    return [r["bytes"] / r[col] if r[col] > 0 else float("nan") for r in rows]


r1 = rma(1)
if r1:
    x = [r["bytes"] for r in r1]
    fig, ax = plt.subplots(figsize=(8, 5.2))
    ax.plot(x, bw(r1, "push_us"), "o-", label="push (library: Raccumulate + flush)")
    ax.plot(x, bw(r1, "pull_gacc_us"), "s-", label="pull, MPI_Get_accumulate(NO_OP) (library)")
    ax.plot(x, bw(r1, "pull_get_us"), "^-", label="pull, MPI_Get (library)")
    ax.plot(x, bw(r1, "lk_acc_us"), "x:", label="raw MPI_Accumulate, lock/unlock per op")
    ax.plot(x, bw(r1, "lk_get_us"), "+:", label="raw MPI_Get, lock/unlock per op")
    for w, style in ((2, "--"), (3, "-.")):
        rw = rma(w)
        if rw:
            ax.plot([r["bytes"] for r in rw], [r["push_agg_mbps"] for r in rw], style,
                    label=f"push, {w} workers at once (aggregate)")
    ax.plot(x, bw(r1, "memcpy_us"), "k-", lw=2.5, alpha=0.35, label="local memcpy (one core)")
    ax.plot(x, bw(r1, "axpy_us"), "k--", lw=2.5, alpha=0.35, label="local axpy y += a*x (one core)")
    ax.axvline(9098 * 4, color="grey", lw=0.8)
    ax.text(9098 * 4 * 1.1, 2, "MNIST arena\n36,392 B", fontsize=8, color="grey")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth per worker (MB/s)")
    ax.set_title("libasyncps one-sided ops on one node (Open MPI osc, 1 server + 1 worker)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "rma_bandwidth.png"), dpi=110)
    print("wrote", os.path.join(OUT, "rma_bandwidth.png"))

sp = os.path.join(R, "summary.json")
if os.path.exists(sp):
    S = json.load(open(sp))

    def v(name):
        d = S.get(name) or {}
        return d.get("samples_per_sec")

    fig, ax = plt.subplots(figsize=(7, 4.6))
    ours = [(w, v(f"mnist_w{w}")) for w in (1, 2, 3) if v(f"mnist_w{w}")]
    if ours:
        ax.plot([w for w, _ in ours], [s for _, s in ours], "o-", lw=2, label="mnist_async (libasyncps), async")
        for w, s in ours:
            ax.annotate(f"{s:,.0f}", (w, s), textcoords="offset points", xytext=(6, 4), fontsize=8)
    if v("mnist_w1_overlap"):
        ax.plot([1], [v("mnist_w1_overlap")], "D", label="mnist_async 1 worker --overlap")
    tb = [(1, v("torch_best")), (2, v("torch_hogwild2"))]
    tb = [(w, s) for w, s in tb if s]
    if tb:
        ax.plot([w for w, _ in tb], [s for _, s in tb], "s--", label="PyTorch channels_last+OpenBLAS (Hogwild at 2)")
        for w, s in tb:
            ax.annotate(f"{s:,.0f}", (w, s), textcoords="offset points", xytext=(6, -12), fontsize=8)
    if v("torch_installed"):
        ax.plot([1], [v("torch_installed")], "v", label="PyTorch as installed")
    if ours:
        ax.plot([1, 2], [ours[0][1], 2 * ours[0][1]], ":", color="grey", label="linear from 1 worker")
    ax.axvline(2.5, color="grey", lw=0.8)
    ax.text(2.55, ax.get_ylim()[1] * 0.05, "more workers\nthan cores", fontsize=8, color="grey")
    ax.set_xticks([1, 2, 3])
    ax.set_xlabel("workers (processes, 1 thread each; + 1 server rank for mnist_async)")
    ax.set_ylabel("training samples/s (1000 steps, batch 128)")
    ax.set_title("MNIST CNN training throughput on the 2-vCPU machine")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "throughput.png"), dpi=110)
    print("wrote", os.path.join(OUT, "throughput.png"))
