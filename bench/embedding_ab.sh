#!/usr/bin/env bash
# How the tables move, three ways side by side (bench/embedding_ab.sh [BUILD] [ROUNDS]): ctr_async's
# wide & deep model, 1 server + 2 workers,
#   prefetch     its two tables one row group (one operation per run for both), the next batch's
#                rows read during each step (--prefetch on)
#   no_prefetch  the row group, each batch's rows read when its step starts (--prefetch off)
#   apart        the tables stored apart, no prefetch (--separate_tables --prefetch off: 0.4's way)
# (ctr_async's default, --prefetch auto, is prefetch across hosts and no_prefetch on one.)
# run one after the other ROUNDS times (default 3) at each point: 2^20, 2^22 and 2^24 rows on one
# host (800 global steps), and 2^22 across the simulated hosts (400; server on host 1, a worker on
# each of hosts 2 and 3). Prints every run's samples/s, the worker's operations per step and bytes
# moved per step, then per point the medians and each way's ratio to apart. About 6 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
BIN=$(readlink -f "$BUILD/bin/ctr_async")
[[ -x $BIN ]] || { echo "embedding_ab: $BIN is missing (make build)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d /tmp/asyncps-embedding-ab-XXXXXX)
common=(--test_examples 2000 --log_every 100000)
across=0
if scripts/netns-up.sh --probe >/dev/null 2>&1; then
  across=1
  export ASYNCPS_NETNS_HOSTS=3 ASYNCPS_NETNS_HOSTFILE=$OUT/hosts
  for k in 2 3 4; do echo "10.213.7.$k slots=3"; done >"$OUT/hosts"
fi
one() { mpirun --oversubscribe --bind-to none -np 3 "$BIN" "$@"; }
cross() { scripts/netns-mpirun.sh -np 3 --host 10.213.7.2:1,10.213.7.3:1,10.213.7.4:1 "$BIN" "$@"; }
points=("one 1048576 800" "one 4194304 800" "one 16777216 800")
[[ $across == 1 ]] && points+=("across 4194304 400") || echo "embedding_ab: no network namespaces: the across-hosts point is skipped"
for p in "${points[@]}"; do
  read -r where rows steps <<<"$p"
  for ((i = 1; i <= ROUNDS; i++)); do
    for way in prefetch no_prefetch apart; do
      flag=(--prefetch on)
      [[ $way == no_prefetch ]] && flag=(--prefetch off)
      [[ $way == apart ]] && flag=(--separate_tables --prefetch off)
      log=$OUT/${where}_${rows}_${way}_$i.log
      if [[ $where == one ]]; then one --rows "$rows" --training_steps "$steps" "${common[@]}" "${flag[@]}" >"$log" 2>&1
      else cross --rows "$rows" --training_steps "$steps" "${common[@]}" "${flag[@]}" >"$log" 2>&1; fi || {
        echo "embedding_ab: $where $rows $way failed:"; tail -5 "$log"; exit 1; }
      sps=$(sed -nE 's/^Done: .*: ([0-9]+) samples\/s$/\1/p' "$log")
      read -r steps_w ops < <(sed -nE 's/^worker 0: ([0-9]+) local steps in .*, ([0-9]+) operations$/\1 \2/p' "$log")
      moved=$(sed -nE 's/^bytes per step: ([0-9]+) moved.*/\1/p' "$log")
      printf '%-6s 2^%-2d %-11s run %d: %7d samples/s, %6d operations/step, %6.2f MB moved/step\n' "$where" \
        "$(awk -v r="$rows" 'BEGIN{print int(log(r)/log(2)+0.5)}')" "$way" "$i" "$sps" $((ops / steps_w)) \
        "$(awk -v b="$moved" 'BEGIN{print b/1e6}')"
      echo "$where $rows $way $sps" >>"$OUT/results"
    done
  done
done
echo
echo "median samples/s: prefetch, no_prefetch, apart; ratios to apart"
/usr/bin/python3 - "$OUT/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    where, r, way, sps = line.split()
    rows.setdefault((where, int(r)), {}).setdefault(way, []).append(int(sps))
for (where, r), d in rows.items():
    m = {w: statistics.median(v) for w, v in d.items()}
    a = m["apart"]
    print(f"{where:6s} 2^{r.bit_length() - 1:<2d}  {m['prefetch']:8.0f}  {m['no_prefetch']:8.0f}  {a:8.0f}"
          f"   {m['prefetch'] / a:5.2f}x  {m['no_prefetch'] / a:5.2f}x")
PY
rm -rf "$OUT"
