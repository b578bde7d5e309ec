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
timeout_s=3
limit_ms=$(( (timeout_s * 2 + 8) * 1000 ))
. "$(dirname "$0")/stall_lib.sh"
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
