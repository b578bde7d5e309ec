#!/usr/bin/env bash
# usage: nonfinite_skipped.sh MNIST_ASYNC DATA_DIR WORKDIR
# Proves, with the real job (1 server + 1 worker, every run under a timeout): with a learning
# rate of 1e30 the gradients go non-finite at once; by default they are skipped and counted, the
# job still ends on schedule with exit 0 and saves its final checkpoint, and nothing non-finite
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
  -- ${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} -np 2 "$job" --data_dir "$data" --learning_rate 1e30 \
     --training_steps 50 --logdir "$work/log" --no_restore --save_secs 0 --export_dir "$work/final" \
  || fail "the job"
echo "=== the final arena, as the chief pulled it"
$PY "$here/check_npy_finite.py" $floats "$work/final" "$work/final/ema" || fail "non-finite values in the final arena"

echo "=== the saved checkpoint"
"${expect_output[@]}" 60 "ckpt-50[.]index [(]global step 50[)]: validation accuracy" "^exported to $work/ckpt" \
  -- "$job" --eval_only --checkpoint "$work/log/ckpt-50.index" --data_dir "$data" --export_dir "$work/ckpt" \
  || fail "reading back the checkpoint"
$PY "$here/check_npy_finite.py" $floats "$work/ckpt" "$work/ckpt/ema" || fail "non-finite values in the checkpoint"
echo PASS
