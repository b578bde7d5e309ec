#!/usr/bin/env bash
# The whole benchmark (what `make bench` runs), in well under 15 minutes on 2 cores:
#   1. RMA tables: bench_push_pull with 1, 2 and 3 concurrent workers (mpirun -np 2/3/4)
#   2. bench_cpu_step alone, then two copies at once (do two workers share a physical core?)
#   3. mnist_async, 1000 steps, 1/2/3 workers (--verbose), and 1 worker with --overlap
#   4. PyTorch: as installed (1 thread); channels_last + private OpenBLAS (1 thread);
#      Hogwild with 2 processes (channels_last + OpenBLAS, 1 thread each)
#   5. bench/summarize.py: build/bench-results/summary.{json,csv,txt}, the target table
#   6. bench/plot-bench.py: rma_bandwidth.png and throughput.png into the results directory
#   7. bench/multihost.sh: mnist_async across the simulated hosts next to one host (1+1, 1+2,
#      2+2, with and without --overlap), server CPU, push/pull across hosts, TCP's own limit;
#      its table, multihost.csv and multihost.png go to <results>/multihost (SKIP_MULTIHOST=1)
# Usage: bench/run-bench.sh [BUILD_DIR=build]
# Environment: REPEATS (mnist_async and torch runs per configuration, median kept; default 3),
#   RESULTS (default <BUILD_DIR>/bench-results), DATA_DIR (default data/mnist),
#   LOAD_MAX (wait until the 1-minute load is below it before starting; default 1.0),
#   LOAD_WAIT_START_S (at most this long; default 300), LOAD_WAIT_S (before each measurement wait
#   at most this long for other runnable tasks to go; default 30): see quiet() and load.csv,
#   SKIP_TORCH=1, SKIP_RMA=1, SKIP_MULTIHOST=1 (for quick runs).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${1:-build}
BIN="$BUILD/bin"
RESULTS=${RESULTS:-$BUILD/bench-results}
DATA_DIR=${DATA_DIR:-data/mnist}
REPEATS=${REPEATS:-3}
LOAD_MAX=${LOAD_MAX:-1.0}
LOAD_WAIT_S=${LOAD_WAIT_S:-30}
LOAD_WAIT_START_S=${LOAD_WAIT_START_S:-300}
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HOSTFILE=hostfiles/localhost
MPIRUN=(mpirun --oversubscribe --hostfile "$HOSTFILE")

for b in mnist_async bench_push_pull bench_cpu_step; do
  [[ -x "$BIN/$b" ]] || { echo "run-bench: $BIN/$b is missing (make build, or cmake --build $BUILD --target $b)" >&2; exit 1; }
done
[[ -e "$DATA_DIR/train-images-idx3-ubyte" ]] || { echo "run-bench: no MNIST in $DATA_DIR (make data)" >&2; exit 1; }
mkdir -p "$RESULTS"
rm -f "$RESULTS"/*.txt "$RESULTS"/*.json "$RESULTS"/*.csv "$RESULTS"/*.jsonl
LOADLOG="$RESULTS/load.csv"
echo "measurement,load1_before,others_running,waited_s" > "$LOADLOG"
T0=$(date +%s)

# Noise control. Before the first measurement: wait (up to LOAD_WAIT_START_S) until the 1-minute
# load average is below LOAD_MAX. Before each measurement: the load average still holds our own
# previous measurement, so look at what runs now instead: wait (up to LOAD_WAIT_S) until no other
# task is runnable in 3 samples 0.5 s apart (/proc/loadavg's 4th field counts the reader itself).
# Every decision goes to load.csv.
others_running() {
  local n max=0 l1 l5 l15 rt
  for _ in 1 2 3; do
    read -r l1 l5 l15 rt _ < /proc/loadavg  # a builtin: only this shell is counted as running
    n=$(( ${rt%/*} - 1 ))
    (( n > max )) && max=$n
    sleep 0.5
  done
  echo $max
}
quiet() {
  local what=$1 waited=0 load busy
  while :; do
    busy=$(others_running)
    (( busy == 0 )) && break
    if (( waited >= LOAD_WAIT_S )); then echo "  ($busy other task(s) still running after ${waited}s: measuring anyway)"; break; fi
    sleep 4; waited=$((waited + 5))
  done
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "$what,$load,$busy,$waited" >> "$LOADLOG"
}
gate() {
  local waited=0 load
  while :; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    awk -v l="$load" -v m="$LOAD_MAX" 'BEGIN{exit !(l < m)}' && break
    if (( waited >= LOAD_WAIT_START_S )); then echo "run-bench: load $load still >= $LOAD_MAX after ${waited}s: measuring anyway"; break; fi
    (( waited == 0 )) && echo "run-bench: waiting for the 1-minute load ($load) to fall below $LOAD_MAX (at most ${LOAD_WAIT_START_S}s)"
    sleep 20; waited=$((waited + 20))
  done
  echo "start,$load,,$waited" >> "$LOADLOG"
}

section() { printf '\n=== %s (t=%ds)\n' "$*" $(( $(date +%s) - T0 )); }

gate
# ---------------------------------------------------------------- 1. RMA
if [[ -z ${SKIP_RMA:-} ]]; then
  for w in 1 2 3; do
    section "RMA: bench_push_pull, $w concurrent worker(s)"
    quiet "rma_w$w"
    timeout 300 "${MPIRUN[@]}" -np $((w + 1)) "$BIN/bench_push_pull" \
      --csv "$RESULTS/rma_w$w.csv" --json "$RESULTS/rma_w$w.json" 2>&1 | tee "$RESULTS/rma_w$w.txt"
  done
fi

# ---------------------------------------------------------------- 2. CPU step
section "bench_cpu_step: one copy alone, then two copies at once"
quiet cpu_step_alone
"$BIN/bench_cpu_step" 128 3 > "$RESULTS/cpu_step_alone.txt" 2>&1
cat "$RESULTS/cpu_step_alone.txt"
quiet cpu_step_pair
"$BIN/bench_cpu_step" 128 3 > "$RESULTS/cpu_step_pair_a.txt" 2>&1 &
pa=$!
"$BIN/bench_cpu_step" 128 3 > "$RESULTS/cpu_step_pair_b.txt" 2>&1
wait $pa
echo "-- two at once:"; cat "$RESULTS/cpu_step_pair_a.txt" "$RESULTS/cpu_step_pair_b.txt"

# ---------------------------------------------------------------- 3. mnist_async
run_mnist() {  # name workers extra-args...
  local name=$1 w=$2; shift 2
  for r in $(seq 1 "$REPEATS"); do
    quiet "${name}_r$r"
    local logdir
    logdir=$(mktemp -d /tmp/asyncps-bench.XXXXXX)
    timeout 300 "${MPIRUN[@]}" -np $((w + 1)) "$BIN/mnist_async" --data_dir "$DATA_DIR" --verbose \
      --save_secs 0 --no_restore --logdir "$logdir" --training_steps 1000 --batch_size 128 "$@" \
      > "$RESULTS/${name}_r$r.txt" 2>&1
    echo "  $name run $r: rc $? $(grep -h '^Done:' "$RESULTS/${name}_r$r.txt")"
    rm -rf "$logdir"
  done
}
section "mnist_async: 1000 steps, batch 128, 1/2/3 workers + 1 server, and 1 worker with --overlap"
run_mnist mnist_w1 1
run_mnist mnist_w1_overlap 1 --overlap
run_mnist mnist_w2 2
run_mnist mnist_w3 3

# ---------------------------------------------------------------- 4. PyTorch
if [[ -z ${SKIP_TORCH:-} ]] && $PY -c 'import torch' 2>/dev/null; then
  OPENBLAS_DIR=$(bench/setup-openblas.sh 2>"$RESULTS/setup-openblas.log") || OPENBLAS_DIR=""
  run_torch() {  # name env-prefix... -- args...
    local name=$1; shift
    for r in $(seq 1 "$REPEATS"); do
      quiet "${name}_r$r"
      timeout 300 "$@" --data_dir "$DATA_DIR" --steps 1000 --batch 128 --label "$name" \
        > "$RESULTS/${name}_r$r.jsonl" 2> "$RESULTS/${name}_r$r.err"
      echo "  $name run $r: rc $? $(grep -o '"samples_per_sec": [0-9.]*' "$RESULTS/${name}_r$r.jsonl")"
    done
  }
  section "PyTorch $($PY -c 'import torch; print(torch.__version__)') (CPU), 1000 steps, batch 128"
  run_torch torch_installed env OMP_NUM_THREADS=1 $PY bench/torch_mnist.py --threads 1
  if [[ -n $OPENBLAS_DIR ]]; then
    run_torch torch_best env LD_LIBRARY_PATH="$OPENBLAS_DIR" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
      $PY bench/torch_mnist.py --threads 1 --channels_last
    run_torch torch_hogwild2 env LD_LIBRARY_PATH="$OPENBLAS_DIR" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
      $PY bench/torch_mnist.py --threads 1 --channels_last --hogwild 2
  else
    echo "  (no private OpenBLAS: see $RESULTS/setup-openblas.log; best config = channels_last on the system BLAS)"
    run_torch torch_best env OMP_NUM_THREADS=1 $PY bench/torch_mnist.py --threads 1 --channels_last
    run_torch torch_hogwild2 env OMP_NUM_THREADS=1 $PY bench/torch_mnist.py --threads 1 --channels_last --hogwild 2
  fi
else
  echo "run-bench: PyTorch not found (or SKIP_TORCH): the PyTorch rows are left out"
fi

# ---------------------------------------------------------------- 7. across hosts
if [[ -z ${SKIP_MULTIHOST:-} ]]; then
  section "across hosts: bench/multihost.sh (network namespaces; skipped where they cannot be made)"
  quiet multihost
  RESULTS="$RESULTS" DATA_DIR="$DATA_DIR" REPEATS="$REPEATS" bench/multihost.sh "$BUILD" 2>&1 | tee "$RESULTS/multihost.txt"
fi

# ---------------------------------------------------------------- 5. summary, 6. plots
section "summary"
echo "wall,$(( $(date +%s) - T0 ))" > "$RESULTS/wall.csv"
$PY bench/summarize.py "$RESULTS"
$PY bench/plot-bench.py "$RESULTS" "$RESULTS" || echo "run-bench: plotting failed (matplotlib missing?)"
echo "run-bench: results in $RESULTS ($(( $(date +%s) - T0 )) s)"
