#!/usr/bin/env bash
# usage: check_training.sh MIN_TEST_ACCURACY -- mpirun ... mnist_async ...
# Runs a short training job and passes when the chief's logged loss falls (mean of the last
# three log lines below the mean of the first three) and the final test accuracy is at least
# MIN_TEST_ACCURACY. Prints the job's output either way.
set -u
min_acc=$1; shift 2
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: the job exited with $rc"; exit 1; }
losses=$(sed -n 's/^After [0-9]* training steps.*loss on training batch is \([0-9.e+-]*\)\..*/\1/p' "$out")
n=$(echo "$losses" | grep -c .)
[ "$n" -ge 6 ] || { echo "FAIL: only $n loss lines in the log"; exit 1; }
first=$(echo "$losses" | head -3 | awk '{s+=$1} END {print s/NR}')
last=$(echo "$losses" | tail -3 | awk '{s+=$1} END {print s/NR}')
acc=$(sed -n 's/^Done: .*; test accuracy \([0-9.]*\) .*/\1/p' "$out")
[ -n "$acc" ] || { echo "FAIL: no Done line with the test accuracy"; exit 1; }
echo "loss: first $first -> last $last; test accuracy $acc (need >= $min_acc)"
awk -v f="$first" -v l="$last" 'BEGIN {exit !(l < f)}' || { echo "FAIL: loss did not fall"; exit 1; }
awk -v a="$acc" -v m="$min_acc" 'BEGIN {exit !(a >= m)}' || { echo "FAIL: accuracy below $min_acc"; exit 1; }
echo "PASS"
