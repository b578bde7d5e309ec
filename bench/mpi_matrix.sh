#!/usr/bin/env bash
# The transport matrix (`make bench-mpi`; alone: bench/mpi_matrix.sh [OMPI_BUILD] [MPICH_BUILD]).
# In one run, runs alternated: Open MPI and MPICH, each on one host and across the simulated
# hosts (scripts/netns-mpirun.sh: network namespaces, TCP over veth), for
#   mnist_async 1 server + 1 worker, 1 + 2, 2 + 2 (samples/s; STEPS steps, batch 128), and
#   bench_push_pull 36 KB (the CNN's arena) and 16 MiB (push and pull, µs and MB/s),
# next to the network's own limit between the same namespaces (bench/tcp_probe: round trip and
# bulk bandwidth). bench/mpi_matrix_summary.py prints the table (medians of REPEATS) and plots
# mpi_matrix.png.
# Environment: REPEATS (3), STEPS (1500), RESULTS (OMPI_BUILD/bench-results), DATA_DIR (data/mnist).
set -uo pipefail
cd "$(dirname "$0")/.."
OMPI=${1:-build}
MPICH=${2:-build-mpich}
RESULTS=${RESULTS:-$OMPI/bench-results}
DATA_DIR=$(readlink -f "${DATA_DIR:-data/mnist}")
REPEATS=${REPEATS:-3}
STEPS=${STEPS:-1500}
OUT=$RESULTS/mpi_matrix
mkdir -p "$OUT" && rm -f "$OUT"/*.txt "$OUT"/*.csv
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in "$OMPI/bin/mnist_async" "$OMPI/bin/bench_push_pull" "$OMPI/bin/tcp_probe" "$MPICH/bin/mnist_async" "$MPICH/bin/bench_push_pull"; do
  [[ -x $b ]] || { echo "mpi_matrix: $b is missing (make build; make test-mpich builds $MPICH)" >&2; exit 1; }
done
scripts/netns-up.sh --probe >/dev/null 2>&1 || { echo "mpi_matrix: skipped: no network namespaces here"; exit 0; }
T0=$(date +%s)
log() { printf '  %-44s %s\n' "$1" "$2"; }

# one_host MPI NP ARGS...: the MPI's own launcher on this host
one_host() {
  local mpi=$1 np=$2; shift 2
  if [[ $mpi == openmpi ]]; then timeout 600 mpirun --oversubscribe --bind-to none -np "$np" "$@"
  else timeout 600 mpiexec.mpich -np "$np" "$@"; fi
}
# across MPI NP PLACEMENT ARGS...: the netns harness with that MPI's launcher
across() {
  local mpi=$1 np=$2 place=$3; shift 3
  local launcher=mpirun
  [[ $mpi == mpich ]] && launcher=mpiexec.mpich
  # shellcheck disable=SC2086
  ASYNCPS_MPIRUN=$launcher timeout 600 scripts/netns-mpirun.sh -np "$np" $place "$@"
}
bin_of() { [[ $1 == openmpi ]] && echo "$(readlink -f "$OMPI/bin")" || echo "$(readlink -f "$MPICH/bin")"; }

echo "=== mpi_matrix: the network (tcp_probe between asyncps-h1 and asyncps-h2)"
for r in $(seq 1 "$REPEATS"); do
  timeout 120 scripts/netns-mpirun.sh -np 2 --map-by node bench/tcp_probe_pair.sh "$(readlink -f "$OMPI/bin/tcp_probe")" \
    10.213.7.2 256 2>/dev/null | grep '^rtt_us' > "$OUT/tcp_r$r.txt"
  log "tcp probe run $r" "$(cat "$OUT/tcp_r$r.txt")"
done

echo "=== mpi_matrix: mnist_async, $STEPS steps (t=$(( $(date +%s) - T0 ))s)"
for r in $(seq 1 "$REPEATS"); do
  for cfg in "s1w1 2 --map-by_node" "s1w2 3 --host_10.213.7.2:1,10.213.7.3:2" "s2w2 4 --map-by_node --ps 2"; do
    read -r name np place extra <<<"$cfg"
    place=${place//_/ }
    for mpi in openmpi mpich; do
      for where in one across; do
        ld=$(mktemp -d /tmp/asyncps-mx.XXXXXX)
        args=(--data_dir "$DATA_DIR" --save_secs 0 --no_restore --training_steps "$STEPS" --logdir "$ld" $extra)
        f=$OUT/mnist_${mpi}_${where}_${name}_r$r.txt
        if [[ $where == one ]]; then one_host "$mpi" "$np" "$(bin_of $mpi)/mnist_async" "${args[@]}" >"$f" 2>&1
        else across "$mpi" "$np" "$place" "$(bin_of $mpi)/mnist_async" "${args[@]}" >"$f" 2>&1; fi
        log "$mpi $where $name run $r" "$(grep -h '^Done:' "$f" | grep -o '[0-9]* samples/s')"
        rm -rf "$ld"
      done
    done
  done
done

echo "=== mpi_matrix: bench_push_pull 36 KB and 16 MiB (t=$(( $(date +%s) - T0 ))s)"
for r in $(seq 1 "$REPEATS"); do
  for mpi in openmpi mpich; do
    for where in one across; do
      csv=$(readlink -f "$OUT")/rma_${mpi}_${where}_r$r.csv
      for bytes in 36392 16777216; do
        f=$OUT/rma_${mpi}_${where}_${bytes}_r$r.txt
        if [[ $where == one ]]; then one_host "$mpi" 2 "$(bin_of $mpi)/bench_push_pull" --min_bytes $bytes --max_bytes $bytes --csv "$csv.$bytes" >"$f" 2>&1
        else across "$mpi" 2 "--map-by node" "$(bin_of $mpi)/bench_push_pull" --min_bytes $bytes --max_bytes $bytes --csv "$csv.$bytes" >"$f" 2>&1; fi
      done
      log "$mpi $where run $r" "$(tail -n +2 "$csv.16777216" 2>/dev/null | cut -d, -f1-4)"
    done
  done
done
echo "=== mpi_matrix: summary (t=$(( $(date +%s) - T0 ))s)"
/usr/bin/python3 bench/mpi_matrix_summary.py "$OUT"
