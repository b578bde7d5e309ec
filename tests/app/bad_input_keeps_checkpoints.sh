#!/usr/bin/env bash
# usage: bad_input_keeps_checkpoints.sh MNIST_ASYNC DATA_DIR WORKDIR
# Makes a logdir with a checkpoint, then starts the job wrongly against it in several ways; each
# must fail (non-zero, one "asyncps:" line, within 20 s) and the checkpoint files must be
# byte-for-byte what they were.
set -u
job=$1; data=$2; work=$3
log=$work/log; rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none})
timeout 120 "${mpirun[@]}" -np 2 "$job" --data_dir "$data" --logdir "$log" --training_steps 100 --train_limit 10000 \
  >"$work/setup.out" 2>&1 || { cat "$work/setup.out"; fail "could not make the checkpoint"; }
before=$(cd "$log" && md5sum ckpt-* | sort)
[ -n "$before" ] || fail "no checkpoint files"
check() {  # check NP REGEX ARGS...
  local np=$1 regex=$2; shift 2
  local start=$(date +%s%N)
  timeout -k 2 20 "${mpirun[@]}" -np "$np" "$job" --logdir "$log" "$@" >"$work/case.out" 2>&1
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "[$rc after $ms ms] $(grep -m1 '^asyncps:' "$work/case.out")"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "expected a quick error for: $*"
  grep -Eq "$regex" "$work/case.out" || fail "no message matching '$regex' for: $*"
  [ "$before" = "$(cd "$log" && md5sum ckpt-* | sort)" ] || fail "checkpoint files changed after: $*"
}
check 2 "asyncps: --batch_size must be positive" --data_dir "$data" --batch_size 0
check 2 "asyncps: --learning_rate must be a positive finite number" --data_dir "$data" --learning_rate nan
check 2 "asyncps: --mode must be" --data_dir "$data" --mode nope
check 1 "asyncps: needs at least 2 MPI ranks" --data_dir "$data"
check 2 "asyncps: --ps 2 leaves no worker" --data_dir "$data" --ps 2
check 2 "asyncps: .*MNIST data directory not found" --data_dir "$work/nowhere"
check 2 "asyncps: --restart_from: .*cannot open" --data_dir "$data" --restart_from "$work/none.index"
echo PASS
