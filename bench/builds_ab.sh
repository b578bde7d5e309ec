#!/usr/bin/env bash
# Two builds of the library side by side (bench/builds_ab.sh OLD_BUILD NEW_BUILD [ROUNDS]): the
# figures a change to the transport, the step or the progress must leave where they were, run
# alternately (old, new, then new, old, ...) ROUNDS times (default 3), then per figure the medians
# of each build, its range and new/old, and the median of the alternated pairs' ratios:
#   bench_push_pull at 36 KB (the CNN's arena): push and begin+end, one host and across hosts
#   mnist_async, 3000 steps: 1 server + 1 worker and 1 + 2, one host and across hosts
# Across hosts is scripts/netns-mpirun.sh (osc pt2pt over veth; skipped where namespaces cannot be
# made). Make the old build from a worktree: git worktree add /tmp/old <commit> && cmake -S /tmp/old
# -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/build --target
# bench_push_pull mnist_async. About 2.5 minutes a round on 2 cores; run it on a quiet machine.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_BUILD NEW_BUILD [ROUNDS]" >&2; exit 2; }
OLD=$(readlink -f "$1/bin") NEW=$(readlink -f "$2/bin") ROUNDS=${3:-3}
for b in "$OLD" "$NEW"; do
  for exe in bench_push_pull mnist_async; do
    [[ -x $b/$exe ]] || { echo "builds_ab: $b/$exe is missing" >&2; exit 1; }
  done
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DATA=$(readlink -f data/mnist)
ACROSS=1
scripts/netns-up.sh --probe >/dev/null 2>&1 || { ACROSS=0; echo "builds_ab: across hosts skipped (no network namespaces)"; }
OUT=$(mktemp -d /tmp/asyncps-builds-ab-XXXXXX)
launch() {  # where np place... -- command...
  local where=$1 np=$2; shift 2
  local place=()
  while [[ $1 != -- ]]; do place+=("$1"); shift; done
  shift
  if [[ $where == one ]]; then timeout 300 mpirun --oversubscribe -np "$np" "$@"
  else timeout 300 scripts/netns-mpirun.sh -np "$np" "${place[@]}" "$@"; fi
}
pushpull() {  # build label where
  launch "$3" 2 --map-by node -- "$1/bench_push_pull" --min_bytes 36392 --max_bytes 36392 2>&1 |
    awk -v l="$2" -v w="$3" '/^36392/ && !seen { print w, "push_us", l, $2; print w, "begin+end_us", l, $6; seen = 1 }'
}
mnist() {  # build label where np place...
  local bin=$1 label=$2 where=$3 np=$4; shift 4
  local dir; dir=$(mktemp -d "$OUT/log.XXXXXX")
  local rate
  rate=$(launch "$where" "$np" "$@" -- "$bin/mnist_async" --data_dir "$DATA" --save_secs 0 --no_restore \
           --training_steps 3000 --logdir "$dir" 2>&1 | grep -h '^Done:' | grep -o '[0-9]* samples/s' | cut -d' ' -f1)
  echo "$where mnist_1+$((np - 1))_samples/s $label ${rate:-failed}"
  rm -rf "$dir"
}
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then order="old new"; else order="new old"; fi
  for label in $order; do
    bin=$OLD; [[ $label == new ]] && bin=$NEW
    for where in one across; do
      [[ $where == across && $ACROSS == 0 ]] && continue
      pushpull "$bin" "$label" "$where"
      mnist "$bin" "$label" "$where" 2 --map-by node
      mnist "$bin" "$label" "$where" 3 --host 10.213.7.2:1,10.213.7.3:2
    done
  done | tee -a "$OUT/runs.txt"
done
/usr/bin/python3 - "$OUT/runs.txt" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    where, figure, label, value = line.split()
    if value != "failed":
        runs.setdefault((where, figure), {}).setdefault(label, []).append(float(value))
print(f"\n{'where':7} {'figure':22} {'old median (range)':26} {'new median (range)':26} new/old  pairs")
for (where, figure), v in runs.items():
    o, n = v.get("old", []), v.get("new", [])
    if not o or not n:
        continue
    pairs = st.median(b / a for a, b in zip(o, n))
    show = lambda x: f"{st.median(x):.6g} ({min(x):.6g}-{max(x):.6g})"
    print(f"{where:7} {figure:22} {show(o):26} {show(n):26} {st.median(n) / st.median(o):.3f}    {pairs:.3f}")
PY
rm -rf "$OUT"
