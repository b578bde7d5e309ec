#!/usr/bin/env bash
# The Python binding's benchmark, everything side by side in one run:
#   1. per-step overhead: pull+push and begin_step+end_step on the MNIST arena (9,098 floats),
#      from Python (bench/python_step.py) and from C++ (bench_push_pull), 1 server + 1 worker,
#      alternated REPEATS times, medians
#   2. the PyTorch example (apps/python/mnist_torch.py, STEPS global steps) through asyncps:
#      1 and 2 workers on one host, and across the simulated hosts (server on h1, workers on h2),
#      next to PyTorch's own Hogwild (bench/torch_mnist.py --hogwild 2: the same model, batch,
#      schedule and steps, 1 thread per process), alternated REPEATS times, medians
# Usage: bench/python.sh [BUILD_DIR=build]   Environment: RESULTS (default <build>/bench-python),
#   REPEATS (3), STEPS (1000), SKIP_MULTIHOST=1. Prints the table; writes RESULTS/python.{md,json}.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${1:-build}
RESULTS=${RESULTS:-$BUILD/bench-python}
REPEATS=${REPEATS:-3}
STEPS=${STEPS:-1000}
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export PYTHONPATH=$ROOT/$BUILD/python
compgen -G "$BUILD/python/asyncps/_asyncps*.so" >/dev/null ||
  { echo "python.sh: no Python module in $BUILD/python (make build with python3-dev and pybind11-dev)" >&2; exit 1; }
mkdir -p "$RESULTS"
rm -f "$RESULTS"/*.jsonl
MPIRUN=(mpirun --oversubscribe --bind-to none --hostfile hostfiles/localhost)
EX=(apps/python/mnist_torch.py --steps "$STEPS" --json --log_every 100000)
H1=10.213.7.2 H2=10.213.7.3

record() {  # name, then the command; its last JSON line goes to RESULTS/name.jsonl
  local name=$1; shift
  local out
  out=$(timeout 600 "$@" 2>"$RESULTS/$name.err" | grep '^{' | tail -1)
  if [[ -n $out ]]; then echo "$out" >>"$RESULTS/$name.jsonl"; echo "  $name: $out" | cut -c1-200
  else echo "  $name: FAILED (see $RESULTS/$name.err)"; fi
}

echo "== per-step overhead (MNIST arena), $REPEATS rounds"
for r in $(seq "$REPEATS"); do
  record py_step "${MPIRUN[@]}" -np 2 $PY bench/python_step.py
  timeout 300 "${MPIRUN[@]}" -np 2 "$BUILD/bin/bench_push_pull" --min_bytes 36392 --max_bytes 36392 \
    --json "$RESULTS/cpp_step.json" >"$RESULTS/cpp_step.out" 2>&1 &&
    $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d))" "$RESULTS/cpp_step.json" >>"$RESULTS/cpp_step.jsonl"
done

echo "== the PyTorch example, $STEPS steps, $REPEATS rounds"
have_netns=1
[[ ${SKIP_MULTIHOST:-0} = 1 ]] && have_netns=0
[[ $have_netns = 1 ]] && { scripts/netns-up.sh --probe >/dev/null 2>&1 || have_netns=0; }
for r in $(seq "$REPEATS"); do
  record ex_1w "${MPIRUN[@]}" -np 2 $PY "${EX[@]}"
  record ex_2w "${MPIRUN[@]}" -np 3 $PY "${EX[@]}"
  record torch_hogwild2 $PY bench/torch_mnist.py --threads 1 --hogwild 2 --steps "$STEPS"
  record torch_1proc $PY bench/torch_mnist.py --threads 1 --steps "$STEPS"
  if [[ $have_netns = 1 ]]; then
    record ex_1w_hosts scripts/netns-mpirun.sh -np 2 --host $H1:1,$H2:1 -x PYTHONPATH -x OMP_NUM_THREADS $PY "$ROOT/${EX[0]}" "${EX[@]:1}"
    record ex_2w_hosts scripts/netns-mpirun.sh -np 3 --host $H1:1,$H2:2 -x PYTHONPATH -x OMP_NUM_THREADS $PY "$ROOT/${EX[0]}" "${EX[@]:1}"
  fi
done

$PY - "$RESULTS" <<'PYEOF'
import glob, json, os, statistics, sys
R = sys.argv[1]
def runs(name):
    p = os.path.join(R, name + ".jsonl")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
def med(name, key):
    xs = [r[key] for r in runs(name) if r.get(key) is not None]
    return statistics.median(xs) if xs else None
def cpp(op):
    xs = [row[op] for d in runs("cpp_step") for row in d.get("rows", []) if row.get("bytes") == 9098 * 4 and row.get(op)]
    return statistics.median(xs) if xs else None
lines = ["| measure | Python | C++ | Python - C++ |", "|---|---|---|---|"]
out = {}
for op, key in (("step", "step_us"), ("bestep", "bestep_us")):
    p, c = med("py_step", key), cpp(op)
    out[op] = {"python_us": p, "cpp_us": c}
    label = "pull + push" if op == "step" else "begin_step + end_step"
    fmt = lambda v: "-" if v is None else f"{v:.1f} µs"
    lines.append(f"| {label}, 9,098 floats | {fmt(p)} | {fmt(c)} | {fmt(None if p is None or c is None else p - c)} |")
lines += ["", "| training job (STEPS global steps, batch 128) | samples/s | test accuracy | runs |", "|---|---|---|---|"]
names = [("ex_1w", "asyncps (Python binding), 1 server + 1 worker, one host"),
         ("ex_2w", "asyncps (Python binding), 1 server + 2 workers, one host"),
         ("ex_1w_hosts", "asyncps (Python binding), 1 + 1 across hosts"),
         ("ex_2w_hosts", "asyncps (Python binding), 1 + 2 across hosts"),
         ("torch_hogwild2", "PyTorch Hogwild, 2 processes, one host"),
         ("torch_1proc", "PyTorch, 1 process")]
for name, label in names:
    s, a = med(name, "samples_per_sec"), med(name, "test_accuracy")
    out[name] = {"samples_per_sec": s, "test_accuracy": a, "runs": len(runs(name))}
    if s is not None:
        lines.append(f"| {label} | {s:,.0f} | {a:.4f} | {len(runs(name))} |")
h, e2 = med("torch_hogwild2", "samples_per_sec"), med("ex_2w", "samples_per_sec")
if h and e2:
    lines.append(f"\nasyncps 2 workers / PyTorch Hogwild 2 processes, one host: {e2 / h:.2f}x")
    out["ratio_2w_vs_hogwild"] = e2 / h
e2h = med("ex_2w_hosts", "samples_per_sec")
if h and e2h:
    lines.append(f"asyncps 2 workers across hosts / PyTorch Hogwild 2 processes on one host: {e2h / h:.2f}x")
text = "\n".join(lines)
print(text)
open(os.path.join(R, "python.md"), "w").write(text + "\n")
json.dump(out, open(os.path.join(R, "python.json"), "w"), indent=1)
PYEOF
