#!/usr/bin/env bash
# usage: tensorboard_events.sh MNIST_ASYNC DATA_DIR WORKDIR [MPIRUN_ARGS...]
# mnist_async's TensorBoard scalars, read by readers that are not ours (check_events.py): a run
# of 1 server + 1 worker writes one event file next to metrics.jsonl, holding every logged figure
# at its global step; a second run in the same logdir (resumed) adds a second file, and a third
# with nothing left to train a third, without samples_per_sec (no step: no rate); a fourth that
# starts over (--no_restore) moves the three into earlier-run-*/ with the checkpoints.
set -u
job=$1; data=$2; work=$3; shift 3
rm -rf "$work" && mkdir -p "$work"
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} "$@")
here=$(cd "$(dirname "$0")" && pwd)
for steps in 200 300 300; do  # (the third: nothing left to train)
  timeout -k 2 90 "${mpirun[@]}" -np 2 "$job" --data_dir "$data" --logdir "$work/log" --training_steps $steps \
    --train_limit 5000 --log_every 20 --save_summaries_secs 0 --eval_every 100 >>"$work/run_$steps.out" 2>&1 \
    || { tail -5 "$work/run_$steps.out"; echo "FAIL: the run to $steps steps failed"; exit 1; }
done
/usr/bin/python3 "$here/check_events.py" "$work/log" 3 || exit 1
# the run that took no step plots no rate: its last line has the accuracies, no samples_per_sec
last=$(grep '"test_accuracy"' "$work/log/metrics.jsonl" | tail -1)
grep -q '"global_step": 300,' <<<"$last" && ! grep -q samples_per_sec <<<"$last" ||
  { echo "FAIL: the run that took no step logged: $last"; exit 1; }
three=$(cd "$work/log" && md5sum events.out.tfevents.* | sort)
# a run that starts over (--no_restore) sets the two earlier runs' event files aside with their
# checkpoints: TensorBoard shows them as a run of their own, not mixed with this one's
timeout -k 2 90 "${mpirun[@]}" -np 2 "$job" --data_dir "$data" --logdir "$work/log" --training_steps 100 \
  --train_limit 5000 --log_every 20 --save_summaries_secs 0 --no_restore >"$work/fresh.out" 2>&1 \
  || { tail -5 "$work/fresh.out"; echo "FAIL: the run with --no_restore failed"; exit 1; }
grep -q "which this run would overwrite, and 3 TensorBoard event file(s) written before this job, moved to .*/earlier-run-" \
  "$work/fresh.out" || { cat "$work/fresh.out"; echo "FAIL: no line saying the 3 event files were moved"; exit 1; }
here_now=$(ls "$work"/log/events.out.tfevents.* | wc -l)
moved=$(ls "$work"/log/earlier-run-*/events.out.tfevents.* | wc -l)
[ "$here_now" -eq 1 ] && [ "$moved" -eq 3 ] || { echo "FAIL: $here_now event file(s) left in the logdir, $moved moved aside (want 1 and 3)"; exit 1; }
[ "$three" = "$(cd "$work"/log/earlier-run-* && md5sum events.out.tfevents.* | sort)" ] ||
  { echo "FAIL: the event files moved aside differ from the three runs'"; exit 1; }
echo "PASS: --no_restore moved the 3 earlier event files aside, intact"
