#!/usr/bin/env bash
# usage: checkpoint_resume.sh CTR_ASYNC WORKDIR STEPS MPIRUN... -- SIZING_FLAGS...
# Proves, with ctr_async under mpirun (every run under a timeout), that a job's embedding tables
# are in its checkpoints and come back:
#  1. a job of 1 server and 2 workers ends with its final checkpoint in --logdir;
#  2. a run of 2 servers with the same --training_steps restores it (the rows re-sharded by row
#     range), takes no step and evaluates to the very same AUC and log-loss line (a restore that
#     left the tables at their first values would score far lower);
#  3. a run to twice the steps resumes from it ("N global steps (M in this run)"), trains on and
#     --export_dir writes the tables as .npy that numpy reads with their shapes;
#  4. a restarted run with no step left still saves (its tables) and --export_dir writes them;
#  5. --export_dir without --logdir is refused on every rank.
set -u
job=$1; work=$2; steps=$3; shift 3
mpirun=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift  # the job's sizing flags follow
sizing=("$@")
rows=65536
log=$work/log; rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run LABEL NP ARGS... : output in $work/LABEL.out, exit code in $rc
  local label=$1 np=$2; shift 2
  timeout -k 5 120 "${mpirun[@]}" -np "$np" "$job" --rows $rows "${sizing[@]}" "$@" >"$work/$label.out" 2>&1; rc=$?
  echo "=== $label (exit $rc)"; grep -vE '^After [0-9]+ training steps' "$work/$label.out" | head -12
}

run first 3 --logdir "$log" --save_secs 0 --training_steps $steps
[ $rc -eq 0 ] || fail "first run exited $rc"
[ -f "$log/ckpt-$steps.index" ] || fail "no ckpt-$steps.index after the first run"
auc1=$(grep '^AUC ' "$work/first.out")

run same_limit 4 --ps 2 --logdir "$log" --save_secs 0 --training_steps $steps
[ $rc -eq 0 ] || fail "the restoring run exited $rc"
grep -q "restored $log/ckpt-$steps.index (global step $steps, written by 1 server(s))" "$work/same_limit.out" ||
  fail "the 2-server run did not restore ckpt-$steps"
grep -q "^Done: $steps global steps (0 in this run)" "$work/same_limit.out" || fail "the restoring run took steps"
auc2=$(grep '^AUC ' "$work/same_limit.out")
[ -n "$auc1" ] && [ "$auc1" = "$auc2" ] || fail "restored on 2 servers: '$auc2', the saved job's: '$auc1'"

run more 4 --ps 2 --logdir "$log" --save_secs 0 --training_steps $((2 * steps)) --export_dir "$work/export"
[ $rc -eq 0 ] || fail "the resumed run exited $rc"
grep -q "^Done: $((2 * steps)) global steps ($steps in this run)" "$work/more.out" || fail "did not resume to $((2 * steps))"
[ -f "$log/ckpt-$((2 * steps)).shard-1-of-2.final" ] || fail "the resumed run's final save is not on 2 servers"
/usr/bin/python3 - "$work/export" $rows <<'PY' || fail "the export does not hold the tables"
import sys, numpy as np
d, rows = sys.argv[1], int(sys.argv[2])
deep, acc, wide = np.load(f"{d}/deep.npy"), np.load(f"{d}/deep.accumulator.npy"), np.load(f"{d}/wide.npy")
assert deep.shape == (rows, 16) and acc.shape == (rows,) and wide.shape == (rows, 1), (deep.shape, acc.shape, wide.shape)
assert np.isfinite(deep).all() and (acc > 1e-4).sum() > 100, "accumulators grew on the rows trained"
print(f"export: deep {deep.shape}, {(acc > 1e-4).sum()} rows trained, wide {wide.shape}")
PY

# a restarted run with no step left still exports (its rows are saved at the end: tables move
# without the dense step)
run no_step_left 3 --logdir "$log" --save_secs 0 --training_steps $((2 * steps)) --export_dir "$work/export3"
[ $rc -eq 0 ] || fail "the run with no step left exited $rc"
grep -q "^Done: $((2 * steps)) global steps (0 in this run)" "$work/no_step_left.out" || fail "the run with no step left took steps"
[ -f "$work/export3/deep.npy" ] || fail "--export_dir wrote nothing when no step was left"

run export_alone 2 --export_dir "$work/export2"
[ $rc -ne 0 ] || fail "--export_dir without --logdir was accepted"
grep -q "asyncps: --export_dir writes the final checkpoint: it needs --logdir" "$work/export_alone.out" ||
  fail "--export_dir without --logdir: no clear line"
echo "PASS"
