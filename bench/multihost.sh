#!/usr/bin/env bash
# The cross-host benchmark (part of `make bench`; alone: bench/multihost.sh [BUILD_DIR]).
# Runs mnist_async across the simulated hosts (scripts/netns-mpirun.sh: network namespaces, TCP
# over veth, osc pt2pt) next to the same job on one host (plain mpirun: shared memory, osc rdma),
# in the same run, medians of REPEATS (3), for 1 server + 1 worker, 1 + 2, 2 + 2, each with and
# without --overlap; the server's CPU share serving one worker and idle; bench_push_pull across
# hosts; and the network's own limit between the same namespaces (bench/tcp_probe: TCP round
# trip and bulk bandwidth). bench/multihost_summary.py prints every target's figure beside its
# limit and plots multihost.png.
# Environment: REPEATS (3), STEPS (3000), RESULTS (BUILD/bench-results), DATA_DIR (data/mnist).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bin
RESULTS=${RESULTS:-$BUILD/bench-results}
DATA_DIR=$(readlink -f "${DATA_DIR:-data/mnist}")
REPEATS=${REPEATS:-3}
STEPS=${STEPS:-3000}
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NETNS=scripts/netns-mpirun.sh
mkdir -p "$RESULTS/multihost"
OUT=$RESULTS/multihost
rm -f "$OUT"/*.txt "$OUT"/*.csv
for b in mnist_async bench_push_pull tcp_probe; do
  [[ -x $BIN/$b ]] || { echo "multihost: $BIN/$b is missing (make build)" >&2; exit 1; }
done
if ! scripts/netns-up.sh --probe >/dev/null 2>&1; then
  echo "multihost: skipped: this machine cannot create network namespaces ($(scripts/netns-up.sh --probe 2>&1 | tail -1))"
  exit 0
fi
T0=$(date +%s)
log() { printf '  %-40s %s\n' "$1" "$2"; }

# ---- the network's limit: TCP between asyncps-h1 and asyncps-h2
for r in $(seq 1 "$REPEATS"); do
  timeout 120 $NETNS -np 2 --map-by node bench/tcp_probe_pair.sh "$(readlink -f "$BIN/tcp_probe")" 10.213.7.2 256 \
    2>/dev/null | grep '^rtt_us' > "$OUT/tcp_r$r.txt"
  log "tcp probe run $r" "$(cat "$OUT/tcp_r$r.txt")"
done

# ---- mnist_async, one host vs across hosts
# name np placement(across) extra...
job() {
  local name=$1 np=$2 place=$3; shift 3
  local args=(--data_dir "$DATA_DIR" --save_secs 0 --no_restore --training_steps "$STEPS" --verbose "$@")
  for r in $(seq 1 "$REPEATS"); do
    local ld; ld=$(mktemp -d /tmp/asyncps-mh.XXXXXX)
    timeout 300 mpirun --oversubscribe --hostfile hostfiles/localhost -np "$np" "$BIN/mnist_async" "${args[@]}" \
      --logdir "$ld/one" > "$OUT/${name}_one_r$r.txt" 2>&1
    log "$name one host run $r" "$(grep -h '^Done:' "$OUT/${name}_one_r$r.txt" | grep -o '[0-9]* samples/s')"
    # shellcheck disable=SC2086
    timeout 300 $NETNS -np "$np" $place "$(readlink -f "$BIN/mnist_async")" "${args[@]}" \
      --logdir "$ld/across" > "$OUT/${name}_across_r$r.txt" 2>&1
    log "$name across hosts run $r" "$(grep -h '^Done:' "$OUT/${name}_across_r$r.txt" | grep -o '[0-9]* samples/s') $(grep -ho 'server 0: .*of a core)' "$OUT/${name}_across_r$r.txt" | grep -o '([0-9.]*%')"
    rm -rf "$ld"
  done
}
echo "=== multihost: mnist_async, $STEPS steps, one host vs across hosts (t=$(( $(date +%s) - T0 ))s)"
job s1w1 2 "--map-by node"
job s1w1_overlap 2 "--map-by node" --overlap
job s1w2 3 "--host 10.213.7.2:1,10.213.7.3:2"
job s1w2_overlap 3 "--host 10.213.7.2:1,10.213.7.3:2" --overlap
job s2w2 4 "--map-by node" --ps 2
job s2w2_overlap 4 "--map-by node" --ps 2 --overlap

# ---- the server idle across hosts: one worker that sleeps 1 s per step for 6 steps
echo "=== multihost: idle server (t=$(( $(date +%s) - T0 ))s)"
ld=$(mktemp -d /tmp/asyncps-mh.XXXXXX)
timeout 120 $NETNS -np 2 --map-by node "$(readlink -f "$BIN/mnist_async")" --data_dir "$DATA_DIR" --save_secs 0 \
  --no_restore --training_steps 6 --straggler_ms 1000 --verbose --logdir "$ld" > "$OUT/idle.txt" 2>&1
log "idle server" "$(grep -ho 'server 0: .*of a core)' "$OUT/idle.txt")"
rm -rf "$ld"

# ---- push/pull across hosts (and the raw MPI_Accumulate beside it)
echo "=== multihost: bench_push_pull across hosts (t=$(( $(date +%s) - T0 ))s)"
timeout 600 $NETNS -np 2 --map-by node "$(readlink -f "$BIN/bench_push_pull")" --min_bytes 36392 \
  --max_bytes 16777216 --csv "$(readlink -f "$OUT")/rma_across.csv" > "$OUT/rma_across.txt" 2>&1
grep -v '^netns' "$OUT/rma_across.txt" | sed -n '1,20p'

echo "=== multihost: summary (t=$(( $(date +%s) - T0 ))s)"
$PY bench/multihost_summary.py "$OUT"
