#!/usr/bin/env python3
"""Summarises bench/mpi_matrix.sh: medians of every run, one table, and mpi_matrix.png.

usage: mpi_matrix_summary.py RESULTS_DIR   (the directory mpi_matrix.sh wrote)
"""
import csv
import glob
import os
import re
import statistics
import sys


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    out = sys.argv[1]
    rtt, bulk = [], []
    for f in glob.glob(os.path.join(out, "tcp_r*.txt")):
        m = re.search(r"rtt_us ([0-9.]+) bulk_mbps ([0-9.]+)", open(f).read())
        if m:
            rtt.append(float(m.group(1)))
            bulk.append(float(m.group(2)))
    print(f"network (tcp_probe, asyncps-h1 <-> asyncps-h2): round trip {median(rtt):.1f} us, "
          f"bulk {median(bulk):.0f} MB/s ({len(rtt)} runs)")

    mnist = {}
    for f in glob.glob(os.path.join(out, "mnist_*_r*.txt")):
        mpi, where, name = re.match(r"mnist_(\w+?)_(one|across)_(\w+)_r\d+\.txt", os.path.basename(f)).groups()
        m = re.search(r"^Done: .* ([0-9]+) samples/s", open(f).read(), re.M)
        if m:
            mnist.setdefault((mpi, where, name), []).append(float(m.group(1)))
    rma = {}
    for f in glob.glob(os.path.join(out, "rma_*_r*.csv.*")):
        mpi, where = re.match(r"rma_(\w+?)_(one|across)_r\d+\.csv\.\d+", os.path.basename(f)).groups()
        for row in csv.DictReader(open(f)):
            key = (mpi, where, int(row["bytes"]))
            rma.setdefault(key, {"push": [], "pull": [], "push_mbps": [], "pull_mbps": []})
            rma[key]["push"].append(float(row["push_us"]))
            rma[key]["pull"].append(float(row["pull_gacc_us"]))
            rma[key]["push_mbps"].append(float(row["push_agg_mbps"]))
            rma[key]["pull_mbps"].append(float(row["pull_gacc_agg_mbps"]))

    mpis = ["openmpi", "mpich"]
    print("\nmnist_async samples/s (median; across/one at equal placement)")
    print(f"{'job':<8}" + "".join(f"{m + ' one':>14}{m + ' across':>16}{'ratio':>7}" for m in mpis))
    for name in ["s1w1", "s1w2", "s2w2"]:
        line = f"{name:<8}"
        for m in mpis:
            one, acr = median(mnist.get((m, "one", name), [])), median(mnist.get((m, "across", name), []))
            line += f"{one:>14.0f}{acr:>16.0f}{acr / one if one else float('nan'):>7.2f}"
        print(line)
    print("\nbench_push_pull, 1 server + 1 worker (median): push / pull (get_accumulate)")
    print(f"{'size':<10}{'MPI':<9}{'where':<8}{'push us':>11}{'pull us':>11}{'push MB/s':>11}{'pull MB/s':>11}{'push/bulk':>10}")
    for size in [36392, 16777216]:
        for m in mpis:
            for where in ["one", "across"]:
                r = rma.get((m, where, size))
                if not r:
                    continue
                frac = median(r["push_mbps"]) / median(bulk) if where == "across" and bulk else float("nan")
                print(f"{size:<10}{m:<9}{where:<8}{median(r['push']):>11.1f}{median(r['pull']):>11.1f}"
                      f"{median(r['push_mbps']):>11.0f}{median(r['pull_mbps']):>11.0f}{frac:>10.2f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(no matplotlib: no plot; scripts/install-deps.sh --bench installs it)")
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    names = ["s1w1", "s1w2", "s2w2"]
    width = 0.2
    for i, (m, where) in enumerate([(m, w) for m in mpis for w in ["one", "across"]]):
        ax[0].bar([j + i * width for j in range(3)], [median(mnist.get((m, where, n), [])) for n in names], width,
                  label=f"{m} {where}")
    ax[0].set_xticks([j + 1.5 * width for j in range(3)], ["1 server + 1 worker", "1 + 2", "2 + 2"])
    ax[0].set_ylabel("samples/s")
    ax[0].set_title("mnist_async")
    ax[0].legend(fontsize=8)
    for i, (m, where) in enumerate([(m, w) for m in mpis for w in ["one", "across"]]):
        r = rma.get((m, where, 16777216))
        if r:
            ax[1].bar([i - 0.2, i + 0.2], [median(r["push_mbps"]), median(r["pull_mbps"])], 0.4,
                      color=["C0", "C1"], label=None)
    if bulk:
        ax[1].axhline(median(bulk), color="k", ls="--", label=f"TCP bulk {median(bulk):.0f} MB/s")
        ax[1].legend(fontsize=8)
    ax[1].set_xticks(range(4), [f"{m}\n{w}" for m in mpis for w in ["one", "across"]])
    ax[1].set_ylabel("MB/s (push left, pull right)")
    ax[1].set_title("16 MiB push / pull")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "mpi_matrix.png"), dpi=110)
    print(f"\nplot: {os.path.join(out, 'mpi_matrix.png')}")


if __name__ == "__main__":
    main()
