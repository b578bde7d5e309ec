#!/usr/bin/env bash
# usage: stall_floor.sh MNIST_ASYNC DATA_DIR WORKDIR [MPIRUN_ARGS...]
# Liveness at the shortest stall timeouts: 0.5 s (the floor Options::stall_timeout accepts) and
# 1 s. A worker of 1 server + 2 workers is stopped in the middle of training; the job must end
# non-zero within 4 timeouts + 4 s of the stop (naming, the save at the stall, mpirun's
# teardown), with the line naming that worker and its timeout.
set -u
job=$1; data=$2; work=$3; shift 3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/stall_lib.sh"
for timeout_s in 0.5 1; do
  limit_ms=$(awk -v t="$timeout_s" 'BEGIN { print int((4 * t + 4) * 1000) }')
  stall "floor_$timeout_s" 3 2 \
    "asyncps: worker 1 \(rank 2 on .*\) has made no progress for .* \(stall timeout $timeout_s\.?0? s\)"
done
echo PASS
