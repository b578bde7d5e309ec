#!/usr/bin/env bash
# usage: ctr_example.sh LOGDIR MIN_AUC -- mpirun ... ctr_torch.py ...
# The Python click-through example trains (tests/ctr/check_ctr.sh: loss lines, AUC >= MIN_AUC)
# and its chief's TensorBoard scalars (--logdir LOGDIR) hold the AUC and the test log-loss it
# printed, read by readers that are not ours (tests/app/check_events.py).
set -u
logdir=$1 min_auc=$2; shift 3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$logdir"
out=$("$here/../ctr/check_ctr.sh" "$min_auc" -- "$@" --logdir "$logdir") || { echo "$out"; exit 1; }
echo "$out"
auc=$(sed -n 's/^AUC \([0-9.]*\) .*/\1/p' <<<"$out")
loss=$(sed -n 's/^Done: .*test log-loss \([0-9.]*\)$/\1/p' <<<"$out")
[ -n "$auc" ] && [ -n "$loss" ] || { echo "FAIL: no AUC or test log-loss in the output"; exit 1; }
checked=$(/usr/bin/python3 "$here/../app/check_events.py" "$logdir" 1 "auc=$auc" "log_loss=$loss") || { echo "$checked"; exit 1; }
echo "$checked"
for tag in loss samples_per_sec operations_per_step; do  # (check_events.py's PASS line lists the tags)
  grep -Eq "tags: (.*, )?$tag(,|\$)" <<<"$checked" || { echo "FAIL: no $tag scalar in the events"; exit 1; }
done
echo "PASS: events hold auc $auc and log_loss $loss"
