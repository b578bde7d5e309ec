#!/usr/bin/env bash
# usage: check_ctr.sh MIN_AUC -- mpirun ... ctr_async ...
# Runs a ctr_async job and passes when it exits 0, the chief logged its training (at least six
# log-loss lines: single batches are too noisy to require a fall), and its final line
# "AUC a (the planted model's: p)" has a >= MIN_AUC and a <= p + 0.005 (a model cannot beat the
# one that generated the labels by more than the test set's noise). Prints the job's output.
set -u
min_auc=$1; shift 2
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: the job exited with $rc"; exit 1; }
losses=$(sed -n 's/^After [0-9]* training steps.*log-loss on training batch is \([0-9.e+-]*\)\..*/\1/p' "$out")
n=$(echo "$losses" | grep -c .)
[ "$n" -ge 6 ] || { echo "FAIL: only $n loss lines in the log"; exit 1; }
first=$(echo "$losses" | head -3 | awk '{s+=$1} END {print s/NR}')
last=$(echo "$losses" | tail -3 | awk '{s+=$1} END {print s/NR}')
line=$(grep '^AUC ' "$out")
[ -n "$line" ] || { echo "FAIL: no AUC line"; exit 1; }
auc=$(echo "$line" | sed -n 's/^AUC \([0-9.]*\) (the planted model.s: \([0-9.]*\)).*/\1/p')
planted=$(echo "$line" | sed -n 's/^AUC \([0-9.]*\) (the planted model.s: \([0-9.]*\)).*/\2/p')
[ -n "$auc" ] && [ -n "$planted" ] || { echo "FAIL: cannot read the AUC line: $line"; exit 1; }
echo "loss: first $first -> last $last; AUC $auc (need >= $min_auc; planted $planted)"
awk -v a="$auc" -v m="$min_auc" 'BEGIN {exit !(a >= m)}' || { echo "FAIL: AUC below $min_auc"; exit 1; }
awk -v a="$auc" -v p="$planted" 'BEGIN {exit !(a <= p + 0.005)}' || { echo "FAIL: AUC above the planted model's"; exit 1; }
echo "PASS"
