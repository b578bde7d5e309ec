#!/usr/bin/env bash
# The scaling study (`make bench-scaling`; alone: bench/scaling.sh [BUILD]): bench_scaling points
# on 4 simulated hosts (scripts/netns-mpirun.sh, ASYNCPS_NETNS_HOSTS=4), the servers on host 1
# and the workers spread over hosts 2-4, so that every pull and push crosses the network:
#   sizes      W = 1, S = 1: arena 36 KB (the CNN's), 1 MiB, 16 MiB, 256 MiB; and on one host
#   workers    S = 1: W = 1, 2, 4, 8, 12 at 36 KB, 1 MiB, 16 MiB (up to 13 ranks)
#   servers    S = 2, 4: W = 1, 4, 12 at 36 KB and 16 MiB (up to 16 ranks), W = 1 at 36 KB on
#              one host; 256 MiB at S = 1, 4 and W = 2, 4
#   compute    36 KB, a 2 ms sleep per step where a model computes: W = 1, 2, 4, 8, 12
# then bench/scaling_model.py fits the cost model, prints measured beside modelled and the
# projection to 64-1,024 workers, and plots scaling.png (docs/SCALING.md).
# Environment: RESULTS (BUILD/bench-results), SECONDS_PER_POINT (3), ASYNCPS_MPIRUN (Open MPI's
# mpirun; an MPICH build with ASYNCPS_MPIRUN=mpiexec.mpich).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RESULTS=${RESULTS:-$BUILD/bench-results}
T=${SECONDS_PER_POINT:-3}
OUT=$RESULTS/scaling
BIN=$(readlink -f "$BUILD/bin/bench_scaling")
[[ -x $BIN ]] || { echo "scaling: $BIN is missing (make build)" >&2; exit 1; }
scripts/netns-up.sh --probe >/dev/null 2>&1 || { echo "scaling: skipped: no network namespaces here"; exit 0; }
mkdir -p "$OUT" && rm -f "$OUT/points.jsonl"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASYNCPS_NETNS_HOSTS=4 ASYNCPS_NETNS_HOSTFILE=$OUT/hosts
for k in 2 3 4 5; do echo "10.213.7.$k slots=5"; done >"$OUT/hosts"
T0=$(date +%s)
# one host: the launcher of the harness's MPI, with Open MPI's flags for more ranks than cores
read -r -a one_host <<<"${ASYNCPS_MPIRUN:-mpirun}"
[[ $("${one_host[0]}" --version 2>&1) == *[Hh][Yy][Dd][Rr][Aa]* ]] || one_host+=(--oversubscribe --bind-to none)  # (no `| grep -q` under pipefail)

# placement S W: S ranks on host 1, then the W workers dealt over hosts 2-4 (by slot)
placement() {
  local s=$1 w=$2 k list="10.213.7.2:$1"
  local per=(0 0 0)
  for ((k = 0; k < w; ++k)); do per[$((k % 3))]=$((per[k % 3] + 1)); done
  for k in 0 1 2; do [[ ${per[k]} -gt 0 ]] && list+=",10.213.7.$((k + 3)):${per[k]}"; done
  echo "$list"
}
# point LABEL S W BYTES COMPUTE_US [one]: one run, its line kept in the log (256 MiB: twice T)
point() {
  local label=$1 s=$2 w=$3 bytes=$4 compute=$5 where=${6:-across} line t=$T
  [[ $bytes -ge 268435456 ]] && t=$((2 * T))
  local args=(--bytes "$bytes" --ps "$s" --seconds "$t" --compute_us "$compute" --json "$OUT/points.jsonl" --label "$label")
  if [[ $where == one ]]; then
    line=$(timeout 300 "${one_host[@]}" -np $((s + w)) "$BIN" "${args[@]}" 2>&1 | grep '^bench_scaling')
  else
    line=$(timeout 300 scripts/netns-mpirun.sh -np $((s + w)) --host "$(placement "$s" "$w")" "$BIN" "${args[@]}" 2>&1 |
      grep '^bench_scaling')
  fi
  echo "  ${line:-bench_scaling $label S=$s W=$w B=$bytes: FAILED}"
}

echo "=== scaling: sizes, 1 server + 1 worker (t=$(( $(date +%s) - T0 ))s)"
for b in 36392 1048576 16777216 268435456; do
  point size 1 1 "$b" 0
  point size_one 1 1 "$b" 0 one
done
echo "=== scaling: workers, 1 server (t=$(( $(date +%s) - T0 ))s)"
for b in 36392 1048576 16777216; do
  for w in 2 4 8 12; do point workers 1 "$w" "$b" 0; done
done
echo "=== scaling: servers (t=$(( $(date +%s) - T0 ))s)"
for s in 2 4; do
  for b in 36392 16777216; do
    for w in 1 4 12; do point servers "$s" "$w" "$b" 0; done
  done
  point servers_one "$s" 1 36392 0 one  # the worker's own cost per server (shared memory)
done
for s in 1 4; do
  for w in 2 4; do point big "$s" "$w" 268435456 0; done
done
echo "=== scaling: 2 ms of compute per step, 36 KB (t=$(( $(date +%s) - T0 ))s)"
for w in 1 2 4 8 12; do point compute 1 "$w" 36392 2000; done
echo "=== scaling: $(wc -l <"$OUT/points.jsonl") points in $(( $(date +%s) - T0 )) s: $OUT/points.jsonl"
/usr/bin/python3 bench/scaling_model.py "$OUT/points.jsonl" --plot "$OUT/scaling.png"
