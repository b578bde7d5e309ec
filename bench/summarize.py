#!/usr/bin/env python3
"""Reads what bench/run-bench.sh wrote into RESULTS and prints the target table.

Writes RESULTS/summary.json (every parsed number), RESULTS/summary.csv (one row per target)
and RESULTS/summary.txt (the table printed on stdout). Usage: summarize.py RESULTS_DIR
"""
import glob
import json
import os
import re
import statistics
import sys

R = sys.argv[1] if len(sys.argv) > 1 else "build/bench-results"


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def median_run(runs, key="samples_per_sec"):
    """The run whose key is the median (lower median for an even count); None if no runs."""
    runs = [r for r in runs if r.get(key)]
    if not runs:
        return None
    runs = sorted(runs, key=lambda r: r[key])
    pick = dict(runs[(len(runs) - 1) // 2])
    pick["all_" + key] = [r[key] for r in runs]
    return pick


def parse_mnist(path):
    t = read(path)
    out = {"file": os.path.basename(path)}
    m = re.search(r"^Done: (\d+) global steps by (\d+) worker\(s\) in ([\d.]+) s: (\d+) samples/s; "
                  r"test accuracy ([\d.]+) \(EMA ([\d.]+)\)", t, re.M)
    if not m:
        return out
    out.update(global_steps=int(m[1]), workers=int(m[2]), wall_s=float(m[3]), samples_per_sec=float(m[4]),
               test_accuracy=float(m[5]), test_accuracy_ema=float(m[6]))
    m = re.search(r"validation accuracy ([\d.]+) \(EMA ([\d.]+)\)", t)
    if m:
        out.update(validation_accuracy=float(m[1]), validation_accuracy_ema=float(m[2]))
    out["workers_split"] = [
        dict(worker=int(w[0]), local_steps=int(w[1]), wall_s=float(w[2]), compute_s=float(w[3]), pull_s=float(w[4]),
             push_s=float(w[5]), wait_s=float(w[6]), peak_rss_mb=float(w[7]))
        for w in re.findall(r"^worker (\d+): (\d+) local steps in ([\d.]+) s: compute ([\d.]+) s, pull ([\d.]+) s, "
                            r"push ([\d.]+) s, waiting for others ([\d.]+) s; peak RSS ([\d.]+) MB", t, re.M)]
    m = re.search(r"^server \d+: ([\d.]+) s of CPU over ([\d.]+) s serving \(([\d.]+)% of a core\), (\d+) polls(?:, \d+ wake-ups)?; "
                  r"peak RSS ([\d.]+) MB", t, re.M)
    if m:
        out.update(server_cpu_s=float(m[1]), server_serving_s=float(m[2]), server_cpu_pct=float(m[3]),
                   server_polls=int(m[4]), server_peak_rss_mb=float(m[5]))
    return out


def parse_cpu_step(path):
    m = re.search(r"loss_and_grad\s+batch\s+(\d+):\s+([\d.]+) samples/s\s+([\d.]+) ms/step", read(path))
    return {"samples_per_sec": float(m[2]), "ms_per_step": float(m[3])} if m else {}


def parse_torch(name):
    runs = []
    for p in sorted(glob.glob(os.path.join(R, f"{name}_r*.jsonl"))):
        for line in read(p).splitlines():
            if line.startswith("{"):
                runs.append(json.loads(line))
    return median_run(runs)


def rma(w):
    t = read(os.path.join(R, f"rma_w{w}.json"))
    return {r["bytes"]: r for r in json.loads(t)["rows"]} if t else {}


S = {"results_dir": R}
for name in ["mnist_w1", "mnist_w1_overlap", "mnist_w2", "mnist_w3"]:
    S[name] = median_run([parse_mnist(p) for p in sorted(glob.glob(os.path.join(R, f"{name}_r*.txt")))])
for name in ["torch_installed", "torch_best", "torch_hogwild2"]:
    S[name] = parse_torch(name)
S["cpu_step_alone"] = parse_cpu_step(os.path.join(R, "cpu_step_alone.txt"))
S["cpu_step_pair"] = [parse_cpu_step(os.path.join(R, f"cpu_step_pair_{x}.txt")) for x in "ab"]
S["rma"] = {w: rma(w) for w in (1, 2, 3)}
S["load"] = read(os.path.join(R, "load.csv")).splitlines()[1:]


def sps(name):
    return (S.get(name) or {}).get("samples_per_sec")


def ratio(a, b):
    return a / b if a and b else None


rows = []  # (target, what, measured, goal, pass, command)


def add(target, what, value, goal, ok, cmd, fmt="{:.2f}x"):
    rows.append({"target": target, "what": what, "value": value,
                 "shown": (fmt.format(value) if value is not None else "n/a"), "goal": goal,
                 "pass": (None if value is None else bool(ok(value))), "command": cmd})


MPI = "mpirun --oversubscribe --hostfile hostfiles/localhost"
MN = ("build/bin/mnist_async --data_dir data/mnist --verbose --save_secs 0 --no_restore --logdir /tmp/x "
      "--training_steps 1000 --batch_size 128")
TB = ("LD_LIBRARY_PATH=$(bench/setup-openblas.sh) OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_mnist.py "
      "--threads 1 --channels_last")
TI = "/usr/bin/python3 bench/torch_mnist.py --threads 1"

add("a", "1 mnist_async worker / PyTorch best 1-thread (channels_last+OpenBLAS), samples/s",
    ratio(sps("mnist_w1"), sps("torch_best")), ">= 1.5x", lambda v: v >= 1.5, f"{MPI} -np 2 {MN}  vs  {TB}")
add("a", "1 mnist_async worker / PyTorch as installed 1-thread, samples/s",
    ratio(sps("mnist_w1"), sps("torch_installed")), "(info)", lambda v: True, f"{MPI} -np 2 {MN}  vs  {TI}")
add("a", "PyTorch best / PyTorch as installed (OpenBLAS+channels_last effect)",
    ratio(sps("torch_best"), sps("torch_installed")), "(info: ~2x)", lambda v: True, f"{TB}  vs  {TI}")
add("b", "2 workers / 1 worker, samples/s", ratio(sps("mnist_w2"), sps("mnist_w1")), ">= 1.8x",
    lambda v: v >= 1.8, f"{MPI} -np 3 {MN}  vs  -np 2")
add("b", "3 workers / 1 worker, samples/s (3 workers + server on 2 cores)", ratio(sps("mnist_w3"), sps("mnist_w1")),
    "(info)", lambda v: True, f"{MPI} -np 4 {MN}  vs  -np 2")
add("b", "PyTorch Hogwild 2 processes / PyTorch best 1 process", ratio(sps("torch_hogwild2"), sps("torch_best")),
    "(info)", lambda v: True, f"{TB} --hogwild 2  vs  {TB}")
pair = [p.get("samples_per_sec") for p in S["cpu_step_pair"] if p]
alone = S["cpu_step_alone"].get("samples_per_sec")
add("b", "hardware: 2 copies of bench_cpu_step at once / 1 alone, total samples/s",
    ratio(sum(pair) if len(pair) == 2 else None, alone), "2.0x if 2 real cores", lambda v: True,
    "build/bin/bench_cpu_step 128 3 & build/bin/bench_cpu_step 128 3  vs  one alone")
cpu = (S.get("mnist_w1") or {}).get("server_cpu_pct")
add("b", "server CPU while serving 1 worker (% of a core)", cpu, "< 2%", lambda v: v < 2.0,
    f"{MPI} -np 2 {MN} (line 'server 0: ...')", fmt="{:.2f}%")
cpu2 = (S.get("mnist_w2") or {}).get("server_cpu_pct")
add("b", "server CPU while serving 2 workers (% of a core)", cpu2, "< 2%", lambda v: v < 2.0,
    f"{MPI} -np 3 {MN}", fmt="{:.2f}%")
r1 = S["rma"].get(1) or {}
arena = r1.get(9098 * 4)
add("c", "push+pull of the 9,098-float arena / local memcpy+axpy (1 worker)",
    ratio(arena["step"], arena["memcpy"] + arena["axpy"]) if arena else None, "<= 2x", lambda v: v <= 2.0,
    f"{MPI} -np 2 build/bin/bench_push_pull (row 36392, column step/lim)")
if arena:
    S["arena_us"] = {k: arena[k] for k in ("push", "pull_gacc", "pull_get", "step", "memcpy", "axpy", "fop",
                                           "lk_acc", "lk_gacc", "lk_fop")}
big = r1.get(16 << 20)
add("c", "16 MiB push bandwidth / local axpy bandwidth (1 worker)",
    ratio(big["axpy"], big["push"]) if big else None, ">= 50%", lambda v: v >= 0.5,
    f"{MPI} -np 2 build/bin/bench_push_pull (row 16777216, push vs axpy)", fmt="{:.0%}")
add("c", "16 MiB raw MPI_Accumulate (lock/unlock) bandwidth / local axpy bandwidth",
    ratio(big["axpy"], big["lk_acc"]) if big else None, "(info)", lambda v: True,
    f"{MPI} -np 2 build/bin/bench_push_pull (row 16777216, lk_acc vs axpy)", fmt="{:.0%}")
add("d", "1 worker --overlap / without, samples/s", ratio(sps("mnist_w1_overlap"), sps("mnist_w1")), "> 1x",
    lambda v: v > 1.0, f"{MPI} -np 2 {MN} --overlap  vs  without")

S["targets"] = rows
with open(os.path.join(R, "summary.json"), "w") as f:
    json.dump(S, f, indent=1, default=str)
with open(os.path.join(R, "summary.csv"), "w") as f:
    f.write("target,what,value,goal,pass,command\n")
    for r in rows:
        f.write('{},"{}",{},"{}",{},"{}"\n'.format(r["target"], r["what"], "" if r["value"] is None else
                                                   f'{r["value"]:.4f}', r["goal"], r["pass"], r["command"]))

L = []
L.append("Throughput, 1000 steps, batch 128 (median of the repeats; all values in brackets)")
L.append(f"{'config':<34}{'samples/s':>10}  {'test acc':>8} {'(EMA)':>7}  {'runs'}")
for name, label in [("mnist_w1", "mnist_async 1 worker"), ("mnist_w1_overlap", "mnist_async 1 worker --overlap"),
                    ("mnist_w2", "mnist_async 2 workers"), ("mnist_w3", "mnist_async 3 workers"),
                    ("torch_installed", "PyTorch as installed, 1 thread"),
                    ("torch_best", "PyTorch channels_last+OpenBLAS, 1 th"),
                    ("torch_hogwild2", "PyTorch Hogwild 2 procs (best cfg)")]:
    d = S.get(name)
    if not d:
        L.append(f"{label:<34}{'n/a':>10}")
        continue
    ema = d.get("test_accuracy_ema")
    L.append(f"{label:<34}{d['samples_per_sec']:>10.0f}  {d['test_accuracy']:>8.4f} "
             f"{(f'({ema:.4f})' if ema else ''):>8}  {[round(x) for x in d['all_samples_per_sec']]}")
for name in ["mnist_w1", "mnist_w1_overlap", "mnist_w2", "mnist_w3"]:
    d = S.get(name) or {}
    for w in d.get("workers_split", []):
        L.append(f"  {name} worker {w['worker']}: {w['local_steps']} steps in {w['wall_s']:.3f} s = compute "
                 f"{w['compute_s']:.3f} + pull {w['pull_s']:.3f} + push {w['push_s']:.3f} + wait {w['wait_s']:.3f} s; "
                 f"peak RSS {w['peak_rss_mb']:.0f} MB")
    if "server_cpu_pct" in d:
        L.append(f"  {name} server: {d['server_cpu_pct']:.2f}% of a core over {d['server_serving_s']:.2f} s, "
                 f"{d['server_polls']} polls, peak RSS {d['server_peak_rss_mb']:.0f} MB")
if alone:
    L.append(f"bench_cpu_step loss_and_grad batch 128: alone {alone:.0f} samples/s; two at once "
             f"{' + '.join(f'{p:.0f}' for p in pair)} samples/s")
L.append("")
L.append(f"{'':2}{'target / ratio':<82}{'measured':>10}  {'goal':<18}{'pass'}")
for r in rows:
    p = {True: "yes", False: "NO", None: "-"}[r["pass"]] if r["goal"].startswith(("<", ">")) else "-"
    L.append(f"({r['target']}) {r['what']:<81}{r['shown']:>10}  {r['goal']:<18}{p}")
L.append("")
L.append("commands:")
for r in rows:
    L.append(f"  ({r['target']}) {r['what']}: {r['command']}")
L.append("load (measurement,load1,other runnable tasks,waited s): " + "; ".join(S["load"]))
text = "\n".join(L)
print(text)
with open(os.path.join(R, "summary.txt"), "w") as f:
    f.write(text + "\n")
