#!/usr/bin/python3
"""The tables of docs/EMBEDDINGS.md "Benchmark" from the logs bench/embedding.sh wrote, and its plot.

    /usr/bin/python3 bench/embedding_report.py build/bench-results/embedding --target 0.82 --plot embedding.png

Logs are named <impl>_<where>_<rows>_b<batch>.log (impl: asyncps, allreduce, torch; where: one,
across) and target_<impl>.log; the lines read are ctr_async's (apps/ctr_async/batches.h), which
bench/torch_ctr.py prints too.
"""
import argparse
import glob
import os
import re
import sys

DONE = re.compile(r"^Done: (\d+) global steps by (\d+) worker\(s\) in ([\d.]+) s: (\d+) samples/s")
AUC = re.compile(r"^AUC ([\d.]+) \(the planted model's: ([\d.]+)\)")
BYTES = re.compile(r"^bytes per step: (\d+) moved by this worker's tables, (\d+) on the wire")
ROWS = re.compile(r"^worker 0: (\d+) local steps in ([\d.]+) s; rows: (\d+) pulled, (\d+) pushed")
EVAL = re.compile(r"^eval: (\d+) global steps, (\d+) samples, ([\d.]+) s training, AUC ([\d.]+)")
NAME = re.compile(r"^(asyncps|allreduce|torch)_(one|across)_(\d+)_b(\d+)$")
IMPLS = ("asyncps", "allreduce", "torch")


def parse(path):
    r = {"evals": []}
    with open(path) as f:
        for line in f:
            if m := DONE.match(line):
                r.update(steps=int(m[1]), workers=int(m[2]), seconds=float(m[3]), sps=float(m[4]))
            elif m := AUC.match(line):
                r.update(auc=float(m[1]), planted=float(m[2]))
            elif m := BYTES.match(line):
                r.update(moved=float(m[1]), wire=float(m[2]))
            elif m := ROWS.match(line):
                r.update(local_steps=int(m[1]), rows_pulled=int(m[3]))
            elif m := EVAL.match(line):
                r["evals"].append((int(m[2]), float(m[3]), float(m[4])))
    return r


def log2(rows):
    return f"2^{rows.bit_length() - 1}" if rows & (rows - 1) == 0 else str(rows)


def mb(x):
    return "" if x is None else f"{x / 1e6:,.2f} MB" if x >= 1e5 else f"{x / 1e3:,.1f} kB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--target", type=float, default=0.82)
    ap.add_argument("--plot", default="")
    args = ap.parse_args()
    runs = {}
    for path in sorted(glob.glob(os.path.join(args.dir, "*.log"))):
        name = os.path.basename(path)[:-4]
        if (m := NAME.match(name)) or name.startswith("target_"):
            r = parse(path)
            if "sps" not in r:
                print(f"embedding_report: {name}: no Done line (the run failed?)", file=sys.stderr)
                continue
            runs[name] = r
    rows_list = sorted({int(NAME.match(n)[3]) for n in runs if NAME.match(n)})

    def get(impl, where, rows, batch=256):
        return runs.get(f"{impl}_{where}_{rows}_b{batch}")

    print("### Samples/s (2 workers; asyncps also 1 server), and bytes per worker step\n")
    print("| table rows | where | asyncps | all-reduce | PyTorch Hogwild | asyncps ÷ all-reduce | asyncps ÷ PyTorch "
          "| asyncps bytes moved / step | all-reduce bytes / step | on the wire / step: asyncps, all-reduce |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for where in ("one", "across"):
        for rows in rows_list:
            a, ar, t = get("asyncps", where, rows), get("allreduce", where, rows), get("torch", where, rows)
            if not (a or ar or t):
                continue
            cell = lambda r: f"{r['sps']:,.0f}" if r else "–"
            ratio = lambda x, y: f"{x['sps'] / y['sps']:.1f}×" if x and y else "–"
            wire = "–"
            if where == "across" and a and ar:
                wire = f"{mb(a.get('wire'))}, {mb(ar.get('wire'))}"
            print(f"| {log2(rows)} | {'one host' if where == 'one' else 'across hosts'} | {cell(a)} | {cell(ar)} | "
                  f"{cell(t)} | {ratio(a, ar)} | {ratio(a, t)} | {mb(a.get('moved')) if a else '–'} | "
                  f"{mb(ar.get('moved')) if ar else '–'} | {wire} |")
    print()
    print("### asyncps: the cost of a worker step with table size and with rows touched (one host)\n")
    print("| table rows | batch | samples/s | ms per worker step | distinct rows pulled per step | held-out AUC |")
    print("|---|---|---|---|---|---|")
    mine = [(NAME.match(n), r) for n, r in runs.items() if NAME.match(n)]
    for m, r in sorted(mine, key=lambda mr: (int(mr[0][3]), int(mr[0][4]))):
        if m[1] != "asyncps" or m[2] != "one":
            continue
        rows, batch = int(m[3]), int(m[4])
        step_ms = 1e3 * r["workers"] * batch / r["sps"]
        touched = r["rows_pulled"] / r["local_steps"] / 2 if r.get("local_steps") else float("nan")  # two tables
        print(f"| {log2(rows)} | {batch} | {r['sps']:,.0f} | {step_ms:.2f} | {touched:,.0f} | {r.get('auc', 0):.4f} |")
    a20, a24 = get("asyncps", "one", 1 << 20), get("asyncps", "one", 1 << 24)
    if a20 and a24:
        print(f"\nStep cost at 2^24 rows ÷ at 2^20 (one host): {a20['sps'] / a24['sps']:.2f}")
    ax20, ax24 = get("asyncps", "across", 1 << 20), get("asyncps", "across", 1 << 24)
    if ax20 and ax24:
        print(f"Step cost at 2^24 rows ÷ at 2^20 (across hosts): {ax20['sps'] / ax24['sps']:.2f}")
    print()
    print(f"### Time to held-out AUC {args.target} (2^22 rows, one host; training time, evaluations left out)\n")
    print("| way | reached at | samples then | training s | final AUC (samples) | samples/s over the run |")
    print("|---|---|---|---|---|---|")
    reached = {}
    for impl in IMPLS:
        r = runs.get(f"target_{impl}")
        if not r:
            continue
        hit = next(((s, t, a) for s, t, a in r["evals"] if a >= args.target), None)
        reached[impl] = hit
        last = r["evals"][-1] if r["evals"] else None
        label = {"asyncps": "asyncps (1 server + 2 workers)", "allreduce": "all-reduce (2 workers)",
                 "torch": "PyTorch sparse Hogwild (2 processes)"}[impl]
        final = f"{r.get('auc', 0):.4f} ({r['steps'] * 256:,})"
        if hit:
            print(f"| {label} | AUC {hit[2]:.4f} | {hit[0]:,} | {hit[1]:.2f} | {final} | {r['sps']:,.0f} |")
        else:
            print(f"| {label} | not reached (best {max(a for _, _, a in r['evals']) if last else 0:.4f}) | – | "
                  f"> {last[1] if last else 0:.2f} | {final} | {r['sps']:,.0f} |")
    if reached.get("asyncps"):
        for other in ("torch", "allreduce"):
            if reached.get(other):
                print(f"\n{other} ÷ asyncps, time to {args.target}: {reached[other][1] / reached['asyncps'][1]:.2f}")
    if args.plot:
        plot(runs, rows_list, args.target, args.plot)


def plot(runs, rows_list, target, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"asyncps": ("C0", "asyncps"), "allreduce": ("C3", "all-reduce"), "torch": ("C2", "PyTorch Hogwild")}
    for impl, (color, label) in styles.items():
        for where, ls in (("one", "-"), ("across", "--")):
            pts = [(r, runs[f"{impl}_{where}_{r}_b256"]["sps"]) for r in rows_list if f"{impl}_{where}_{r}_b256" in runs]
            if pts:
                ax1.plot([p[0] for p in pts], [p[1] for p in pts], ls, marker="o", color=color,
                         label=f"{label}, {'one host' if where == 'one' else 'across hosts'}")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("rows per table (dim 16 + dim 1)")
    ax1.set_ylabel("samples/s (2 workers)")
    ax1.set_title("Throughput against table size")
    ax1.legend(fontsize=7)
    ax1.grid(True, which="both", alpha=0.3)
    for impl, (color, label) in styles.items():
        r = runs.get(f"target_{impl}")
        if r and r["evals"]:
            ax2.plot([e[1] for e in r["evals"]], [e[2] for e in r["evals"]], marker=".", color=color, label=label)
    ax2.axhline(target, color="gray", ls=":", label=f"target {target}")
    ax2.set_xscale("log")
    ax2.set_xlabel("training seconds (evaluations left out)")
    ax2.set_ylabel("held-out AUC")
    ax2.set_title("AUC against time, 2^22 rows, one host")
    ax2.legend(fontsize=7)
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
