#!/usr/bin/python3
"""Convergence benchmark: accuracy at equal samples against the number of workers and the mode.

Runs mnist_async (1 server + W workers on this host, --oversubscribe) for W in --workers and every
mode in --modes, --seeds times each, all at the same number of samples (--epochs of the 55,000
training images, batch 128): async, ssp and the compensated variants take S = samples/128 global
steps; sync takes S/W rounds of W batches. The chief snapshots the model every --eval_samples
samples (mnist_async --eval_every, off the critical path) so each run gives accuracy against
samples and wall time and the first time test accuracy reached --target. PyTorch Hogwild
(bench/torch_mnist.py --hogwild 2, the same model, init, schedule and samples) runs in the same
loop, seed by seed, so its times are measured side by side.

Per row (mean +- sd over seeds): final test accuracy, plain and EMA; staleness mean / p99 / max;
wall time; time and samples to the target. Also a DC-ASGD lambda sweep at the largest W.

Writes into --out (default build/bench-convergence): runs.jsonl (one line per run, appended, so an
interrupted run resumes where it stopped), table.md, summary.json, and the plots accuracy_w8.png
(test accuracy against samples, one curve per mode at the largest W) and accuracy_vs_w.png (final
accuracy against W per mode). --docs also copies the table and plots into docs/ (CONVERGENCE.md
between its table markers).

Usage: bench/convergence.py [--build build] [--out DIR] [--seeds 3] [--workers 1,2,4,8]
                            [--modes all] [--epochs 3] [--quick] [--report-only] [--docs]
Takes about 21 minutes on the 2-core development machine (--quick: under 1).
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 128
TRAIN_IMAGES = 55000

# mode name -> (mnist_async flags, is_sync, description). "sync_lrW" is sync with the
# learning rate scaled by W (the linear scaling rule), because a sync round applies the MEAN of
# W gradients: at equal samples it otherwise takes W times fewer steps of the same size.
MODES = {
    "async": (["--mode", "async"], False, "async (Hogwild)"),
    # every row's EMA column is the trend-corrected average (the default); this row shows TF1's own
    "async_tf1_ema": (["--mode", "async", "--moving_average_correction", "none"], False,
                      "async, TF1's EMA (--moving_average_correction none)"),
    "sync": (["--mode", "sync"], True, "sync, lr 0.01"),
    "sync_lrW": (["--mode", "sync"], True, "sync, lr 0.01 x W"),
    "ssp2": (["--mode", "ssp", "--staleness", "2"], False, "ssp s=2"),
    "ssp8": (["--mode", "ssp", "--staleness", "8"], False, "ssp s=8"),
    "staleness_lr": (["--mode", "async", "--staleness_lr", "--staleness_lr_power", "1"], False,
                     "async, lr/staleness (Zhang et al.)"),
    "staleness_lr_sqrt": (["--mode", "async", "--staleness_lr", "--staleness_lr_power", "0.5"], False,
                          "async, lr/sqrt(staleness) (the default power)"),
    "staleness_lr_rel": (["--mode", "async", "--staleness_lr", "--staleness_lr_relative"],
                         False, "async, lr x sqrt(W/(1+staleness)) (relative)"),
    "dc": (["--mode", "async", "--dc_lambda", "0.04"], False, "async, DC-ASGD lambda 0.04"),
    "momentum": (["--mode", "async", "--optimizer", "momentum", "--momentum", "0.9",
                  "--learning_rate", "0.001"], False, "async, momentum 0.9, lr 0.001 (weight prediction)"),
    "momentum_lr5": (["--mode", "async", "--optimizer", "momentum", "--momentum", "0.9",
                      "--learning_rate", "0.005"], False, "async, momentum 0.9, lr 0.005 (weight prediction)"),
    "momentum_lr5_staleness": (["--mode", "async", "--optimizer", "momentum", "--momentum", "0.9",
                                "--momentum_correction", "staleness", "--learning_rate", "0.005"], False,
                               "async, momentum 0.9, lr 0.005, mu^(1+staleness)"),
    "momentum_lr5_none": (["--mode", "async", "--optimizer", "momentum", "--momentum", "0.9",
                           "--momentum_correction", "none", "--learning_rate", "0.005"], False,
                          "async, momentum 0.9, lr 0.005, uncorrected"),
    "adam": (["--mode", "async", "--optimizer", "adam", "--learning_rate", "0.001"], False, "async, Adam, lr 0.001"),
    "adam_wp": (["--mode", "async", "--optimizer", "adam", "--learning_rate", "0.001", "--weight_prediction"], False,
                "async, Adam, lr 0.001, weight prediction"),
    # a straggler (the last worker sleeps 10 ms a step): staleness no longer uniform
    "straggler": (["--mode", "async", "--straggler_ms", "10"], False, "async, straggler 10 ms"),
    "straggler_sqrt": (["--mode", "async", "--straggler_ms", "10", "--staleness_lr"], False,
                       "async, straggler 10 ms, lr/sqrt(staleness)"),
    "straggler_rel": (["--mode", "async", "--straggler_ms", "10", "--staleness_lr", "--staleness_lr_relative"],
                      False, "async, straggler 10 ms, lr x sqrt(W/(1+staleness))"),
    "adagrad": (["--mode", "async", "--optimizer", "adagrad", "--learning_rate", "0.02"], False,
                "async, Adagrad, lr 0.02"),
}
DC_SWEEP = [0.04, 1.0, 16.0, 128.0]


def log(msg):
    print(msg, flush=True)


def wait_quiet(load_max, limit_s):
    """Waits (at most limit_s) until the 1-minute load average is below load_max."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        load = os.getloadavg()[0]
        if load < load_max:
            return load
        time.sleep(5)
    return os.getloadavg()[0]


def run_key(r):
    return (r["impl"], r["mode"], r["workers"], r["seed"], r.get("dc_lambda"))


def parse_metrics(path):
    evals, final, stale = [], None, None
    with open(path) as f:
        for line in f:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "eval_global_step" in d:
                evals.append(d)
            elif "staleness_mean" in d:
                stale = d
            elif "test_accuracy" in d:
                final = d
    return evals, final, stale


def run_mnist(args, mode, workers, seed, dc_lambda=None):
    flags, is_sync, _ = MODES.get(mode, MODES["async"])  # dc_sweep: async plus the lambda below
    flags = list(flags)
    total_steps = round(args.epochs * TRAIN_IMAGES / BATCH)
    eval_steps = max(1, round(args.eval_samples / BATCH))
    per_step = BATCH * (workers if is_sync else 1)
    steps = total_steps // workers if is_sync else total_steps
    eval_every = max(1, eval_steps // workers) if is_sync else eval_steps
    if mode == "sync_lrW":
        flags += ["--learning_rate", repr(0.01 * workers)]
    if dc_lambda is not None:
        flags = ["--mode", "async", "--dc_lambda", repr(dc_lambda)]
    tag = f"w{workers}-{mode}-s{seed}" + ("" if dc_lambda is None else f"-l{dc_lambda:g}")
    logdir = os.path.join(args.out, "runs", tag)
    shutil.rmtree(logdir, ignore_errors=True)
    cmd = ["mpirun", "--oversubscribe", "-np", str(workers + 1),
           os.path.join(args.build, "bin", "mnist_async"),
           "--training_steps", str(steps), "--eval_every", str(eval_every), "--eval_target", repr(args.target),
           "--seed", str(seed), "--logdir", logdir, "--no_restore", "--save_secs", "0",
           "--log_every", "1000000", "--data_dir", args.data_dir] + flags
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=args.run_timeout)
    elapsed = time.time() - t0
    with open(os.path.join(args.out, "runs", tag + ".log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout)
    row = {"impl": "asyncps", "mode": mode, "workers": workers, "seed": seed, "dc_lambda": dc_lambda,
           "rc": p.returncode, "global_steps": steps, "samples": steps * per_step, "job_seconds": round(elapsed, 2)}
    if p.returncode != 0:
        log(f"  {tag}: exit {p.returncode} (see {tag}.log)")
        return row
    evals, final, stale = parse_metrics(os.path.join(logdir, "metrics.jsonl"))
    row.update({
        "test_accuracy": final["test_accuracy"], "test_accuracy_ema": final["test_accuracy_ema"],
        "wall_seconds": final["wall_seconds"], "samples_per_sec": final["samples_per_sec"],
        "staleness_mean": stale["staleness_mean"] if stale else 0.0,
        "staleness_p99": stale["staleness_p99"] if stale else 0,
        "staleness_max": stale["staleness_max"] if stale else 0,
        "nonfinite": len(re.findall(r"non-finite gradient", p.stdout)) > 0,
        "evals": [{"samples": e["eval_global_step"] * per_step, "seconds": e["eval_seconds"],
                   "test_accuracy": e["eval_test_accuracy"], "test_accuracy_ema": e["eval_test_accuracy_ema"]}
                  for e in evals],
    })
    hit = next((e for e in row["evals"] if e["test_accuracy"] >= args.target), None)
    row["seconds_to_target"] = hit["seconds"] if hit else None
    row["samples_to_target"] = hit["samples"] if hit else None
    shutil.rmtree(logdir, ignore_errors=True)  # the checkpoint; the log and runs.jsonl keep the figures
    return row


def run_torch(args, seed, procs):
    total_steps = round(args.epochs * TRAIN_IMAGES / BATCH)
    eval_steps = max(1, round(args.eval_samples / BATCH))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if args.openblas_dir:
        env["LD_LIBRARY_PATH"] = args.openblas_dir
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_mnist.py"), "--threads", "1", "--channels_last",
           "--hogwild", str(procs), "--steps", str(total_steps), "--seed", str(seed), "--data_dir", args.data_dir,
           "--eval_every", str(eval_steps), "--eval_target", repr(args.target)]
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=args.run_timeout)
    row = {"impl": "pytorch", "mode": f"hogwild{procs}", "workers": procs, "seed": seed, "dc_lambda": None,
           "rc": p.returncode, "global_steps": total_steps, "samples": total_steps * BATCH,
           "job_seconds": round(time.time() - t0, 2)}
    if p.returncode != 0:
        log(f"  pytorch hogwild {procs} seed {seed}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
        return row
    d = json.loads(p.stdout.strip().splitlines()[-1])
    row.update({
        "test_accuracy": d["test_accuracy"], "test_accuracy_ema": None, "wall_seconds": d["wall_seconds"],
        "samples_per_sec": d["samples_per_sec"], "staleness_mean": None, "staleness_p99": None,
        "staleness_max": None, "blas_loaded": d.get("blas_loaded"),
        "evals": [{"samples": e["global_step"] * BATCH, "seconds": e["seconds"], "test_accuracy": e["test_accuracy"],
                   "test_accuracy_ema": None} for e in d["evals"]],
        "seconds_to_target": d["seconds_to_target"],
        "samples_to_target": None if d["global_step_to_target"] is None else d["global_step_to_target"] * BATCH,
    })
    return row


def plan(args):
    """Every run, seed-major so that slow phases of the machine spread over all rows."""
    runs = []
    for seed in range(1, args.seeds + 1):
        for w in args.workers:
            for mode in args.modes:
                runs.append(("asyncps", mode, w, seed, None))
        if not args.no_torch:
            runs.append(("pytorch", "hogwild2", 2, seed, None))
        if not args.no_dc_sweep:
            for lam in DC_SWEEP:
                runs.append(("asyncps", "dc_sweep", max(args.workers), seed, lam))
    return runs


# ---------------------------------------------------------------------------------- the report

def mean_sd(xs, fmt="{:.4f}", scale=1.0):
    xs = [x * scale for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return (fmt + " ± " + fmt).format(statistics.mean(xs), statistics.stdev(xs))


def group(rows):
    """(impl, mode, workers, dc_lambda) -> the runs of every seed, failed ones included."""
    g = {}
    for r in rows:
        g.setdefault((r["impl"], r["mode"], r["workers"], r.get("dc_lambda")), []).append(r)
    return g


def describe(impl, mode, lam):
    if impl == "pytorch":
        return "PyTorch Hogwild, 2 processes"
    if mode == "dc_sweep":
        return f"async, DC-ASGD lambda {lam:g}"
    return MODES[mode][2]


def target_hit(r, target):
    """(seconds, samples) at the first snapshot that reached the target, else at the end of training if
    the final model did (the snapshots stop short of the last step), else None."""
    if r.get("seconds_to_target") is not None:
        return r["seconds_to_target"], r["samples_to_target"]
    if r.get("test_accuracy") is not None and r["test_accuracy"] >= target:
        return r["wall_seconds"], r["samples"]
    return None


def row_stats(rs, target):
    ok = [r for r in rs if r.get("rc") == 0]
    hits = [h for h in (target_hit(r, target) for r in ok) if h is not None]
    return {
        "runs": len(rs), "failed": len(rs) - len(ok),
        "acc": [r["test_accuracy"] for r in ok],
        "ema": [r["test_accuracy_ema"] for r in ok if r.get("test_accuracy_ema") is not None],
        "stale_mean": [r["staleness_mean"] for r in ok if r.get("staleness_mean") is not None],
        "stale_p99": [r["staleness_p99"] for r in ok if r.get("staleness_p99") is not None],
        "stale_max": [r["staleness_max"] for r in ok if r.get("staleness_max") is not None],
        "wall": [r["wall_seconds"] for r in ok],
        "t_target": [h[0] for h in hits],
        "n_target": [h[1] for h in hits if h[1] is not None],
        "reached": len(hits),
    }


def table(rows, args):
    g = group(rows)
    order = list(MODES)
    lines = ["| W | mode | test accuracy | EMA | staleness mean / p99 / max | wall s | "
             f"s to {args.target:g} | samples to {args.target:g} (k) | reached |",
             "|---|---|---|---|---|---|---|---|---|"]
    stats = {}
    keys = sorted(g, key=lambda k: (k[2], 0 if k[0] == "asyncps" else 1,
                                    order.index(k[1]) if k[1] in order else 99, k[3] or 0))
    for k in keys:
        impl, mode, w, lam = k
        if mode == "dc_sweep":
            continue
        s = row_stats(g[k], args.target)
        stats["/".join(map(str, k))] = s
        stale = "-" if not s["stale_mean"] else (
            f"{statistics.mean(s['stale_mean']):.2f} / {statistics.mean(s['stale_p99']):.0f} / {max(s['stale_max']):.0f}")
        lines.append(f"| {w} | {describe(impl, mode, lam)} | {mean_sd(s['acc'])} | {mean_sd(s['ema'])} | {stale} | "
                     f"{mean_sd(s['wall'], '{:.2f}')} | {mean_sd(s['t_target'], '{:.2f}')} | "
                     f"{mean_sd(s['n_target'], '{:.0f}', 1e-3)} | {s['reached']}/{s['runs']} |")
    # the average against the model it averages, per row and W (mean over the seeds, pp)
    ws = sorted({k[2] for k in keys if k[0] == "asyncps" and k[1] != "dc_sweep"})
    ema_rows = []
    for mode in order:
        cells = []
        for w in ws:
            s = row_stats(g.get(("asyncps", mode, w, None), []), args.target)
            cells.append(f"{100 * (statistics.mean(s['ema']) - statistics.mean(s['acc'])):+.2f}"
                         if s["acc"] and s["ema"] else "-")
        if any(c != "-" for c in cells):
            ema_rows.append(f"| {MODES[mode][2]} | " + " | ".join(cells) + " |")
    if ema_rows:
        lines += ["", "EMA minus test accuracy (pp, mean of the seeds):", "",
                  "| mode | " + " | ".join(f"W = {w}" for w in ws) + " |", "|---|" + "---|" * len(ws)] + ema_rows
    sweep = [k for k in keys if k[1] == "dc_sweep"]
    if sweep:
        w = sweep[0][2]
        base = row_stats(g.get(("asyncps", "async", w, None), []), args.target)
        lines += ["", f"DC-ASGD lambda sweep at W = {w} (the same seeds; plain async first):", "",
                  "| lambda | test accuracy | EMA | s to target | reached |", "|---|---|---|---|---|",
                  f"| 0 (async) | {mean_sd(base['acc'])} | {mean_sd(base['ema'])} | {mean_sd(base['t_target'], '{:.2f}')} | "
                  f"{base['reached']}/{base['runs']} |"]
        for k in sorted(sweep, key=lambda k: k[3]):
            s = row_stats(g[k], args.target)
            stats["/".join(map(str, k))] = s
            lines.append(f"| {k[3]:g} | {mean_sd(s['acc'])} | {mean_sd(s['ema'])} | {mean_sd(s['t_target'], '{:.2f}')} | "
                         f"{s['reached']}/{s['runs']} |")
    return "\n".join(lines), stats


def gaps(rows, args):
    """Each mode's mean accuracy minus sync's and sync_lrW's at the largest W (pp); the time-to-target figures."""
    g = group(rows)
    w = max(args.workers)
    acc = {}
    for mode in MODES:
        s = row_stats(g.get(("asyncps", mode, w, None), []), args.target)
        if s["acc"]:
            acc[mode] = statistics.mean(s["acc"])
    out = {"workers": w}
    for ref in ("sync", "sync_lrW"):
        for mode in MODES:
            if mode != ref and ref in acc and mode in acc:
                out[f"{mode} - {ref} (pp)"] = round(100 * (acc[mode] - acc[ref]), 2)
    for label, k in (("async W=1", ("asyncps", "async", 1, None)), ("async W=2", ("asyncps", "async", 2, None)),
                     ("pytorch hogwild 2", ("pytorch", "hogwild2", 2, None))):
        s = row_stats(g.get(k, []), args.target)
        out[f"seconds to target, {label}"] = round(statistics.mean(s["t_target"]), 3) if s["t_target"] else None
        out[f"reached, {label}"] = f"{s['reached']}/{s['runs']}"
    return out


def plots(rows, args, out_dir):
    """Two figures, each a full-range panel and a zoom on the top: accuracy against samples at the
    largest W (mean over seeds per evaluation), and final accuracy against W."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("convergence: no matplotlib, no plots")
        return []
    g = group(rows)
    w = max(args.workers)
    colors = plt.get_cmap("tab10").colors
    style = {m: dict(color=colors[i % 10], ls=("-", "--", ":")[i // 10 % 3]) for i, m in enumerate(MODES)}
    written = []

    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for mode in MODES:
        ok = [r for r in g.get(("asyncps", mode, w, None), []) if r.get("rc") == 0 and r.get("evals")]
        if not ok:
            continue
        n = max(len(r["evals"]) for r in ok)  # (a run whose model went non-finite may stop early)
        xs = [next(r["evals"][i]["samples"] for r in ok if len(r["evals"]) > i) / 1e3 for i in range(n)]
        ys = [statistics.mean(r["evals"][i]["test_accuracy"] for r in ok if len(r["evals"]) > i) for i in range(n)]
        for ax in axes:
            ax.plot(xs, ys, label=MODES[mode][2], marker="." if MODES[mode][1] else None, **style[mode])
    torch_runs = [r for r in g.get(("pytorch", "hogwild2", 2, None), []) if r.get("rc") == 0 and r.get("evals")]
    if torch_runs:
        n = min(len(r["evals"]) for r in torch_runs)
        xs = [torch_runs[0]["evals"][i]["samples"] / 1e3 for i in range(n)]
        ys = [statistics.mean(r["evals"][i]["test_accuracy"] for r in torch_runs) for i in range(n)]
        for ax in axes:
            ax.plot(xs, ys, label="PyTorch Hogwild, 2 processes (W = 2)", color="black", ls=":")
    for ax, (lo, hi) in zip(axes, ((0.0, 1.0), (0.85, 0.97))):
        ax.axhline(args.target, color="grey", lw=0.5, ls="--")
        ax.set_ylim(lo, hi)
        ax.set_xlabel("training samples (thousands)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"test accuracy (mean of {args.seeds} seeds)")
    axes[0].set_title(f"1 server + {w} workers on 2 cores")
    axes[1].set_title(f"the same, zoomed (dashed line: {args.target:g})")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    p = os.path.join(out_dir, f"accuracy_w{w}.png")
    fig.savefig(p, dpi=100)
    plt.close(fig)
    written.append(p)

    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for mode in MODES:
        pts = []
        for ww in sorted(args.workers):
            s = row_stats(g.get(("asyncps", mode, ww, None), []), args.target)
            if s["acc"]:
                pts.append((ww, statistics.mean(s["acc"]), statistics.stdev(s["acc"]) if len(s["acc"]) > 1 else 0))
        if pts:
            for ax in axes:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], label=MODES[mode][2],
                            marker="o", capsize=3, **style[mode])
    for ax, (lo, hi) in zip(axes, ((0.0, 1.0), (0.88, 0.975))):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(args.workers))
        ax.set_xticklabels([str(x) for x in sorted(args.workers)])
        ax.set_ylim(lo, hi)
        ax.set_xlabel("workers W (1 server; all ranks on 2 cores)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"final test accuracy at {args.epochs:g} epochs (mean ± sd of {args.seeds} seeds)")
    axes[0].set_title("final accuracy against W, equal samples")
    axes[1].set_title("the same, zoomed")
    axes[0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    p = os.path.join(out_dir, "accuracy_vs_w.png")
    fig.savefig(p, dpi=100)
    plt.close(fig)
    written.append(p)
    return written


def report(args):
    path = os.path.join(args.out, "runs.jsonl")
    with open(path) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    wanted = {(i, m, w, s, l) for i, m, w, s, l in plan(args)}
    rows = [r for r in rows if run_key(r) in wanted]
    text, stats = table(rows, args)
    gap = gaps(rows, args)
    header = (f"{args.epochs:g} epochs = {round(args.epochs * TRAIN_IMAGES / BATCH) * BATCH:,} samples per run "
              f"(batch {BATCH}), test accuracy on the 10,000 test images, mean ± sd over seeds 1..{args.seeds}; "
              f"evaluated every {args.eval_samples:,} samples. Staleness: mean and p99 averaged over the seeds, max the "
              f"largest of any run; wall: the chief's training time; reached: runs that reached {args.target:g} (at a "
              f"snapshot, or at the end of training). EMA: the chief's moving average, trend-corrected (the default) "
              f"except in the TF1 EMA row.")
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(header + "\n\n" + text + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"gaps": gap, "rows": stats}, f, indent=1)
    print(header + "\n\n" + text + "\n")
    for k, v in gap.items():
        print(f"{k}: {v}")
    pngs = plots(rows, args, args.out)
    if args.docs:
        doc = os.path.join(ROOT, "docs", "CONVERGENCE.md")
        with open(doc) as f:
            d = f.read()
        begin, end = "<!-- convergence-table:begin -->", "<!-- convergence-table:end -->"
        if begin in d and end in d:
            d = d[:d.index(begin) + len(begin)] + "\n" + header + "\n\n" + text + "\n" + d[d.index(end):]
            with open(doc, "w") as f:
                f.write(d)
        else:
            log(f"convergence: {doc} has no table markers; table.md holds the table")
        for p in pngs:
            shutil.copy(p, os.path.join(ROOT, "docs", "convergence_" + os.path.basename(p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--data_dir", default=os.path.join(ROOT, "data", "mnist"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--modes", default="all", help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--eval_samples", type=int, default=6400)
    ap.add_argument("--target", type=float, default=0.91)
    ap.add_argument("--run_timeout", type=int, default=300)
    ap.add_argument("--load_max", type=float, default=1.0)
    ap.add_argument("--no_torch", action="store_true")
    ap.add_argument("--no_dc_sweep", action="store_true")
    ap.add_argument("--quick", action="store_true", help="1 seed, W = 1 and 2, async/sync/dc, 1 epoch: a smoke run")
    ap.add_argument("--report-only", dest="report_only", action="store_true")
    ap.add_argument("--docs", action="store_true", help="copy the table and plots into docs/")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.workers, args.modes, args.epochs = 1, "1,2", "async,sync,dc", 1.0
        args.no_dc_sweep = True
    args.workers = [int(x) for x in args.workers.split(",")]
    args.modes = list(MODES) if args.modes == "all" else args.modes.split(",")
    for m in args.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m}")
    args.out = args.out or os.path.join(args.build, "bench-convergence" + ("-quick" if args.quick else ""))
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if not args.report_only:
        exe = os.path.join(args.build, "bin", "mnist_async")
        if not os.access(exe, os.X_OK):
            sys.exit(f"convergence: {exe} is missing (make build)")
        args.openblas_dir = None
        if not args.no_torch:
            p = subprocess.run([os.path.join(ROOT, "bench", "setup-openblas.sh")], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
            args.openblas_dir = p.stdout.strip() if p.returncode == 0 else None
        done = set()
        path = os.path.join(args.out, "runs.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                done = {run_key(json.loads(l)) for l in f if l.strip()}
        todo = [r for r in plan(args) if r not in done]
        log(f"convergence: {len(todo)} runs to do ({len(done)} already in {path}); load {wait_quiet(args.load_max, 300):.2f}")
        t0 = time.time()
        for i, (impl, mode, w, seed, lam) in enumerate(todo, 1):
            row = run_torch(args, seed, w) if impl == "pytorch" else run_mnist(args, mode, w, seed, lam)
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")
            eta = (time.time() - t0) / i * (len(todo) - i)
            log(f"[{i}/{len(todo)}] {impl} {mode} W={w} seed {seed}{'' if lam is None else f' lambda {lam:g}'}: "
                f"accuracy {row.get('test_accuracy', '-')}, to target {row.get('seconds_to_target', '-')} s, "
                f"job {row['job_seconds']} s; about {eta / 60:.1f} min left")
    report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
