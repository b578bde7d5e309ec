#!/usr/bin/env bash
# usage: stall_restart.sh MNIST_ASYNC DATA_DIR WORKDIR [MPIRUN_ARGS...]
# Liveness: one rank is stopped (SIGSTOP: alive to the kernel and to mpirun, silent to MPI) in
# the middle of training, in each mode and on each role. The job must end non-zero within a few
# seconds of the stall timeout, with a line naming the silent rank; when only a worker stopped,
# a checkpoint saved at the stall must let a restart resume and finish.
set -u
job=$1; data=$2; work=$3; shift 3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} "$@")
timeout_s=3
# stall NAME NP STOP_RANK REGEX ARGS...: starts the job, stops STOP_RANK once training runs
stall() {
  local name=$1 np=$2 victim=$3 regex=$4; shift 4
  local log=$work/$name out=$work/$name.out
  timeout -k 2 60 "${mpirun[@]}" -np "$np" "$job" --data_dir "$data" --logdir "$log" --training_steps 100000000 \
    --train_limit 10000 --stall_timeout $timeout_s --save_secs 1000 "$@" >"$out" 2>&1 &
  local job_pid=$!
  local pid=""
  for _ in $(seq 1 100); do  # the victim's pid, once training has begun
    if grep -q "training steps" "$out" 2>/dev/null; then
      for p in $(pgrep -f "$job --data_dir $data --logdir $log"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxE "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$victim" && pid=$p
      done
      [ -n "$pid" ] && break
    fi
    sleep 0.1
  done
  [ -n "$pid" ] || { kill $job_pid; cat "$out"; fail "$name: training never started"; }
  kill -STOP "$pid"
  local start=$(date +%s%N)
  wait $job_pid
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  kill -CONT "$pid" 2>/dev/null
  echo "$name: [exit $rc, $ms ms after SIGSTOP of rank $victim] $(grep -m1 '^asyncps:' "$out")"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || { tail -5 "$out"; fail "$name: expected a non-zero end, not a hang"; }
  [ $ms -lt $(( (timeout_s * 2 + 8) * 1000 )) ] || fail "$name: took $ms ms to notice"
  grep -Eq "$regex" "$out" || { tail -5 "$out"; fail "$name: no line matching '$regex'"; }
}
# a stopped worker: server 0 names it, saves, ends the job; a restart resumes from that save
stall async 3 2 "asyncps: worker 1 \(rank 2 on .*\) has made no progress for .*; saved .*ckpt-[0-9]+\.index: a restart resumes from it"
saved=$(grep -o 'saved [^ ]*ckpt-[0-9]*\.index' "$work/async.out" | head -1 | sed 's/^saved //')
step=$(echo "$saved" | sed 's/.*ckpt-\([0-9]*\)\.index/\1/')
[ -f "$saved" ] || fail "the stall checkpoint $saved is not there"
timeout -k 2 60 "${mpirun[@]}" -np 3 "$job" --data_dir "$data" --logdir "$work/async" --training_steps $((step + 200)) \
  --train_limit 10000 >"$work/restart.out" 2>&1 || { cat "$work/restart.out"; fail "the restart failed"; }
grep -q "restored .*ckpt-$step.index (global step $step" "$work/restart.out" || { cat "$work/restart.out"; fail "the restart did not resume from step $step"; }
grep -q "Done: " "$work/restart.out" || fail "the restart did not finish"
echo "restart: resumed from global step $step and finished"
# sync and SSP: the other workers wait for the stopped one; it is still the one named
stall sync 3 1 "asyncps: worker 0 \(rank 1 on .*\) has made no progress" --mode sync
stall ssp 4 3 "asyncps: worker 2 \(rank 3 on .*\) has made no progress" --mode ssp --staleness 2
# a stopped server other than 0: named by server 0, no save (its shard cannot be read)
stall server1 4 1 "asyncps: server 1 \(rank 1 on .*\) has made no progress .*no checkpoint saved now" --ps 2
# a stopped server 0: the workers notice (its heartbeat stops; shared memory lets them go on)
# (where a worker's flush waits on the server, MPICH on one node, or between hosts: the flush's
# watch names it)
stall server0 3 0 "asyncps: server 0 \(rank 0 on .*\) has made no progress|asyncps: .* has waited .* for|asyncps: rank [0-9]+ on .*: worker [0-9]+ waiting in MPI_Win_flush for server 0 \(rank 0 on .*\) has made no progress"
echo PASS
