#!/usr/bin/env bash
# usage: eval_lines.sh CTR_ASYNC MPIRUN...
# --eval_every's lines tell the truth:
#  1. with one worker (deterministic), the line at the last step scores the very model the final
#     line scores (the dense weights after that step, not before it);
#  2. their "s training" leaves every evaluation out, its own too: it rises from line to line and
#     the last is at most the Done line's time, which leaves them out as well (a held-out set large
#     enough that an evaluation outlasts the training it reports);
#  3. --allreduce trains exactly --training_steps global steps, also when the ranks do not divide them;
#  4. a held-out set of one class has no AUC (no pair to rank): n/a, never a 0.5 that reads as chance.
set -u
job=$1; shift
mpirun=("$@")
fail() { echo "FAIL: $*"; exit 1; }
out=$(timeout -k 5 60 "${mpirun[@]}" -np 2 "$job" --rows 4096 --test_examples 300 --training_steps 20 --eval_every 20 2>&1) ||
  { echo "$out"; fail "the eval run failed"; }
echo "$out" | grep -E "^eval|^AUC"
at20=$(echo "$out" | sed -n 's/^eval: 20 global steps.*AUC \([0-9.]*\), log-loss \([0-9.]*\)$/\1 \2/p')
final=$(echo "$out" | sed -n 's/^AUC \([0-9.]*\) .*log-loss \([0-9.]*\) .*/\1 \2/p')
[ -n "$at20" ] && [ "$at20" = "$final" ] || fail "the eval line at step 20 ($at20) is not the final model's ($final)"
out=$(timeout -k 5 120 "${mpirun[@]}" -np 2 "$job" --rows 4096 --test_examples 100000 --training_steps 30 --eval_every 10 2>&1) ||
  { echo "$out"; fail "the timed eval run failed"; }
echo "$out" | grep -E "^eval|^Done"
# the last line is at the last step: the Done line's time is its own, plus the few milliseconds to
# leave the loop; with the evaluations counted it was more by all the earlier ones (seconds each,
# more than the training between the first line and the last)
echo "$out" | awk '/^eval:/ { t = $7 + 0; if (t < last) bad = 1; if (first == "") first = t; last = t }
                   /^Done:/ { done = $(NF - 3) + 0 }
                   END { exit (bad || last == 0 || last > done + 0.006 || done - last > last - first + 0.01) }' ||
  fail "the eval lines' training seconds fall, or count the evaluations"
for np in 2 3; do
  out=$(timeout -k 5 60 "${mpirun[@]}" -np $np "$job" --rows 4096 --test_examples 300 --allreduce --training_steps 20 2>&1) ||
    { echo "$out"; fail "the --allreduce run failed"; }
  echo "$out" | grep -q "^Done: 20 global steps by $np worker" || { echo "$out"; fail "--allreduce -np $np did not train 20 global steps"; }
done
out=$(timeout -k 5 60 "${mpirun[@]}" -np 2 "$job" --rows 4096 --test_examples 1 --training_steps 10 --eval_every 10 2>&1) ||
  { echo "$out"; fail "the one-example run failed"; }
echo "$out" | grep -E "^eval|^AUC"
echo "$out" | grep -q "^eval: 10 global steps, .* AUC n/a (one class only), log-loss [0-9.]*$" &&
  echo "$out" | grep -q "^AUC n/a (one class only) (the planted model's: n/a (one class only)), log-loss .* on 1 held-out examples$" ||
  fail "a one-example held-out set's AUC is not n/a"
echo PASS
