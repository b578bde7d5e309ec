#!/usr/bin/env bash
# usage: nonfinite_skipped.sh MNIST_ASYNC DATA_DIR WORKDIR
# Proves, with the real job (1 server + 2 workers, every run under a timeout): with a learning
# rate of 1e30 the gradients go non-finite at once; by default they are skipped and counted (the
# total printed is every worker's: nearly all of the 50 steps, not the chief's share; the chief's
# own count reaches metrics.jsonl while nothing lands, and the job's total is in its last line),
# the job still ends on schedule with exit 0 and saves its final checkpoint, and nothing non-finite
# ever reached the arena: the final parameters (and their EMA) the chief exports are all finite,
# and so are the parameters and EMA in the saved checkpoint (read back with --eval_only).
set -u
job=$1; data=$2; work=$3
here=$(cd "$(dirname "$0")" && pwd)
expect_output=("$here/../expect_fail.sh" --succeed)
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
floats=9098  # the MNIST model's parameters
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

echo "=== the job"
"${expect_output[@]}" 60 "^[1-9][0-9]* non-finite gradient[(]s[)] were not pushed" "^Done: 50 global steps" \
    "asyncps: saved .*/ckpt-50[.]index" "^exported the parameters to $work/final" \
  -- ${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} -np 3 "$job" --data_dir "$data" --learning_rate 1e30 \
     --training_steps 50 --logdir "$work/log" --no_restore --save_secs 0 --save_summaries_secs 0 \
     --export_dir "$work/final" >"$work/job.out" 2>&1 || { cat "$work/job.out"; fail "the job"; }
total=$(sed -n 's/^\([0-9]*\) non-finite gradient(s) were not pushed (by all 2 worker(s))$/\1/p' "$work/job.out")
[ -n "$total" ] && [ "$total" -ge 40 ] || fail "the job's non-finite total is '$total', not every worker's (of 50 steps)"
$PY - "$work/log/metrics.jsonl" "$total" <<'PY' || fail "metrics.jsonl"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
periodic = [l["nonfinite_skipped"] for l in lines if "nonfinite_skipped" in l]
final = [l["job_nonfinite_skipped"] for l in lines if "job_nonfinite_skipped" in l]
assert periodic and max(periodic) > 0, f"the chief's count never reached metrics.jsonl: {periodic[-3:]}"
assert final == [float(sys.argv[2])], f"the job's total in metrics.jsonl: {final}, printed {sys.argv[2]}"
steps = [l["global_step"] for l in lines if "nonfinite_skipped" in l]  # one line per chief step: each its own
assert all(b > a for a, b in zip(steps, steps[1:])), f"a global step logged twice or backwards: {steps[:12]}"
print(f"metrics.jsonl: the chief's count up to {max(periodic):.0f}, the job's {final[0]:.0f}")
PY
echo "=== one worker: each skipped step is logged at the step it took (it was logged at the last applied one)"
timeout -k 5 60 ${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} -np 2 "$job" --data_dir "$data" \
  --learning_rate 1e30 --training_steps 20 --logdir "$work/one" --no_restore --save_secs 0 --save_summaries_secs 0 \
  >"$work/one.out" 2>&1 || { cat "$work/one.out"; fail "the one-worker job"; }
$PY - "$work/one/metrics.jsonl" <<'PY' || fail "the one-worker job's metrics.jsonl"
import json, sys
steps = [d["global_step"] for d in map(json.loads, open(sys.argv[1])) if "nonfinite_skipped" in d]
assert steps == [float(s) for s in range(1, 21)], f"the chief's steps as logged: {steps}"
PY
echo "=== the final arena, as the chief pulled it"
$PY "$here/check_npy_finite.py" $floats "$work/final" "$work/final/ema" || fail "non-finite values in the final arena"

echo "=== the saved checkpoint"
"${expect_output[@]}" 60 "ckpt-50[.]index [(]global step 50[)]: validation accuracy" "^exported to $work/ckpt" \
  -- "$job" --eval_only --checkpoint "$work/log/ckpt-50.index" --data_dir "$data" --export_dir "$work/ckpt" \
  || fail "reading back the checkpoint"
$PY "$here/check_npy_finite.py" $floats "$work/ckpt" "$work/ckpt/ema" || fail "non-finite values in the checkpoint"
echo PASS
