#!/usr/bin/env bash
# usage: features_take_effect.sh MNIST_ASYNC DATA_DIR WORKDIR [MPIRUN_ARGS...]
# The training features mnist_async advertises each change what it trains, and nothing else:
# 1 server + 1 worker with --overlap (the worker's staleness is exactly 1 every step, so a run is
# deterministic and a prediction has a horizon), 30 steps, the final parameters and the chief's
# EMA exported (--export_dir) and compared byte for byte:
#   the same run twice                          identical (what differs below is the feature)
#   --optimizer momentum (correction none)      other parameters than sgd
#   --momentum_correction predict (the default) other parameters than none
#   --weight_prediction (sgd)                   other parameters than sgd without it
#   --moving_average_correction none            the same parameters, another EMA than trend's
set -u
job=$1; data=$2; work=$3; shift 3
rm -rf "$work" && mkdir -p "$work"
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} "$@")
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME ARGS...: trains, exports into $work/NAME
  local name=$1; shift
  timeout -k 2 60 "${mpirun[@]}" -np 2 "$job" --data_dir "$data" --logdir "$work/log_$name" --training_steps 30 \
    --train_limit 2000 --overlap --save_secs 0 --export_dir "$work/$name" "$@" >"$work/$name.out" 2>&1 \
    || { tail -5 "$work/$name.out"; fail "$name: the run failed"; }
  [ -f "$work/$name/conv1_w.npy" ] || [ -n "$(ls "$work/$name"/*.npy 2>/dev/null)" ] || fail "$name: nothing exported"
}
params_same() { for f in "$work/$1"/*.npy; do cmp -s "$f" "$work/$2/$(basename "$f")" || return 1; done; }
ema_same() { for f in "$work/$1"/ema/*.npy; do cmp -s "$f" "$work/$2/ema/$(basename "$f")" || return 1; done; }
run sgd
run sgd_again
run momentum --optimizer momentum --momentum 0.9 --momentum_correction none
run predict --optimizer momentum --momentum 0.9 --momentum_correction predict
run weight_prediction --weight_prediction
run ema_none --moving_average_correction none
params_same sgd sgd_again && ema_same sgd sgd_again || fail "two identical runs differ: the comparisons below would prove nothing"
echo "the same run twice: identical"
! params_same sgd momentum || fail "--optimizer momentum trains the same parameters as sgd"
echo "--optimizer momentum: other parameters than sgd"
! params_same momentum predict || fail "--momentum_correction predict trains the same parameters as none"
echo "--momentum_correction predict: other parameters than none"
! params_same sgd weight_prediction || fail "--weight_prediction trains the same parameters as without it"
echo "--weight_prediction: other parameters than without it"
params_same sgd ema_none || fail "--moving_average_correction changed the trained parameters"
! ema_same sgd ema_none || fail "--moving_average_correction none exports the same EMA as trend"
echo "--moving_average_correction none: the same parameters, another EMA"
echo PASS
