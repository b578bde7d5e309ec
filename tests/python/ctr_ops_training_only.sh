#!/usr/bin/env bash
# usage: ctr_ops_training_only.sh -- mpirun ... -np 2 python ctr_torch.py ...
# ctr_torch.py's operations_per_step (its --json line and its --logdir scalar: the same figure)
# counts the training's table operations only, as ctr_async's does: one worker trains the same
# steps with a test set of 1,000 and of 20,000 examples, and the figure is the same (the
# evaluation's pulls, 20 times more in the second, had been counted in it). A third run's held-out
# set of one example has no AUC (one class, no pair to rank): "n/a" and JSON null, as ctr_async.
set -u
shift
run() {  # run TEST_EXAMPLES: the chief's operations_per_step
  local n=$1 out
  out=$(timeout -k 5 120 "${cmd[@]}" --json --test_examples "$n" 2>&1) || { echo "$out"; echo "FAIL: the run with $n test examples"; exit 1; }
  sed -n 's/^{.*"operations_per_step": \([0-9.e+-]*\),.*/\1/p' <<<"$out"
}
cmd=("$@")
a=$(run 1000) b=$(run 20000)
[ -n "$a" ] && [ -n "$b" ] || { echo "FAIL: no operations_per_step in the JSON lines ('$a', '$b')"; exit 1; }
echo "operations_per_step: $a with 1,000 test examples, $b with 20,000"
[ "$a" = "$b" ] || { echo "FAIL: the test set's size changed operations_per_step"; exit 1; }
out=$(timeout -k 5 120 "${cmd[@]}" --json --test_examples 1 2>&1) || { echo "$out"; echo "FAIL: the run with 1 test example"; exit 1; }
grep -q "^AUC n/a (one class only) (the planted model's: n/a (one class only))$" <<<"$out" &&
  grep -q '^{.*"auc": null, "planted_auc": null,' <<<"$out" || { echo "$out"; echo "FAIL: one class's AUC is not n/a"; exit 1; }
echo PASS
