#!/usr/bin/env bash
# usage: tensorboard_events.sh MNIST_ASYNC DATA_DIR WORKDIR [MPIRUN_ARGS...]
# mnist_async's TensorBoard scalars, read by readers that are not ours (check_events.py): a run
# of 1 server + 1 worker writes one event file next to metrics.jsonl, holding every logged figure
# at its global step; a second run in the same logdir (resumed) adds a second file.
set -u
job=$1; data=$2; work=$3; shift 3
rm -rf "$work" && mkdir -p "$work"
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} "$@")
here=$(cd "$(dirname "$0")" && pwd)
for steps in 200 300; do
  timeout -k 2 90 "${mpirun[@]}" -np 2 "$job" --data_dir "$data" --logdir "$work/log" --training_steps $steps \
    --train_limit 5000 --log_every 20 --save_summaries_secs 0 --eval_every 100 >"$work/run_$steps.out" 2>&1 \
    || { tail -5 "$work/run_$steps.out"; echo "FAIL: the run to $steps steps failed"; exit 1; }
done
/usr/bin/python3 "$here/check_events.py" "$work/log" 2
