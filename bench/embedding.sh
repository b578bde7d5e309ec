#!/usr/bin/env bash
# The embedding tables' benchmark (`make bench-embedding`; alone: bench/embedding.sh [BUILD]):
# ctr_async's wide-and-deep model (26 ids + 13 dense features per example, two tables of R rows:
# dim 16 and dim 1, row-wise Adagrad) trained three ways, side by side in one run:
#   asyncps    ctr_async: 1 server + 2 workers, the tables on the server (row-sparse pull/push)
#   allreduce  ctr_async --allreduce: 2 workers, each with the whole model, the whole gradient
#              (tables included) MPI_Allreduce-summed every step: what data-parallel training does
#   torch      bench/torch_ctr.py: nn.EmbeddingBag(sparse=True), Hogwild, 2 processes (one host
#              only), on the same data (ctr_async --dump_data)
# Points:
#   throughput  R = 2^20, 2^22, 2^24, one host and across the simulated hosts (asyncps: server on
#               host 1, one worker on each of hosts 2 and 3; allreduce: hosts 2 and 3): samples/s
#               and bytes per worker step (moved by the tables; on the wire across hosts)
#   touched     asyncps at R = 2^22 on one host, batch 64, 256 and 1024: cost per step against
#               the rows a step touches
#   target      R = 2^22 on one host, each way evaluated along the run (held-out AUC, training
#               time without the evaluations): the time to AUC TARGET (0.82)
# then bench/embedding_report.py prints the tables and plots embedding.png (docs/EMBEDDINGS.md).
# Environment: RESULTS (BUILD/bench-results), TARGET (0.82). About 10 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RESULTS=${RESULTS:-$BUILD/bench-results}
OUT=$RESULTS/embedding
BIN=$(readlink -f "$BUILD/bin/ctr_async")
PY=/usr/bin/python3
[[ -x $BIN ]] || { echo "embedding: $BIN is missing (make build)" >&2; exit 1; }
mkdir -p "$OUT" && rm -f "$OUT"/*.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
one=(mpirun --oversubscribe --bind-to none)
common=(--test_examples 5000 --log_every 1000)
T0=$(date +%s)
run() {  # NAME CMD...: the command's output into OUT/NAME.log, its last lines shown
  local name=$1; shift
  echo "== $name: $*"
  "$@" >"$OUT/$name.log" 2>&1 || { echo "embedding: $name failed:"; tail -5 "$OUT/$name.log"; return 1; }
  grep -E '^(Done|AUC|bytes per step)' "$OUT/$name.log" | sed 's/^/   /'
}
dump() {  # ROWS EXAMPLES: the data for torch_ctr.py
  local dir=$OUT/data_$1
  [[ -f $dir/meta.json ]] && grep -q "\"examples_per_worker\": $2," "$dir/meta.json" && return 0
  rm -rf "$dir" && "$BIN" --dump_data "$dir" --rows "$1" --dump_examples "$2" --test_examples 5000 >/dev/null
}
declare -A AR_STEPS=([1048576]=60 [4194304]=20 [16777216]=8)
declare -A AR_STEPS_ACROSS=([1048576]=20 [4194304]=8 [16777216]=4)
for R in 1048576 4194304 16777216; do
  run "asyncps_one_${R}_b256" "${one[@]}" -np 3 "$BIN" --rows "$R" --training_steps 800 "${common[@]}"
  run "allreduce_one_${R}_b256" "${one[@]}" -np 2 "$BIN" --allreduce --rows "$R" --training_steps "${AR_STEPS[$R]}" "${common[@]}"
  dump "$R" 131072 && run "torch_one_${R}_b256" $PY bench/torch_ctr.py --data "$OUT/data_$R" --steps 800 --test_examples 5000
  rm -rf "$OUT/data_$R"
done
for B in 64 1024; do
  run "asyncps_one_4194304_b$B" "${one[@]}" -np 3 "$BIN" --rows 4194304 --batch_size "$B" --training_steps $((800 * 256 / B)) "${common[@]}"
done
# time to the target AUC, R = 2^22, one host: evaluations along the run
run "target_asyncps" "${one[@]}" -np 3 "$BIN" --rows 4194304 --training_steps 2400 --eval_every 50 "${common[@]}"
run "target_allreduce" "${one[@]}" -np 2 "$BIN" --allreduce --rows 4194304 --training_steps 1000 --eval_every 25 "${common[@]}"
dump 4194304 327680 && run "target_torch" $PY bench/torch_ctr.py --data "$OUT/data_4194304" --steps 2400 --eval_every 50 --test_examples 5000
rm -rf "$OUT/data_4194304"
# across the simulated hosts
if scripts/netns-up.sh --probe >/dev/null 2>&1; then
  export ASYNCPS_NETNS_HOSTS=3 ASYNCPS_NETNS_HOSTFILE=$OUT/hosts
  for k in 2 3 4; do echo "10.213.7.$k slots=3"; done >"$OUT/hosts"
  for R in 1048576 4194304 16777216; do
    run "asyncps_across_${R}_b256" scripts/netns-mpirun.sh -np 3 --host 10.213.7.2:1,10.213.7.3:1,10.213.7.4:1 \
      "$BIN" --rows "$R" --training_steps 400 "${common[@]}"
    run "allreduce_across_${R}_b256" scripts/netns-mpirun.sh -np 2 --host 10.213.7.3:1,10.213.7.4:1 \
      "$BIN" --allreduce --rows "$R" --training_steps "${AR_STEPS_ACROSS[$R]}" "${common[@]}"
  done
else
  echo "embedding: no network namespaces here: the across-hosts points are skipped"
fi
echo "embedding: $(( $(date +%s) - T0 )) s"
$PY bench/embedding_report.py "$OUT" --target "${TARGET:-0.82}" --plot "$OUT/embedding.png"
