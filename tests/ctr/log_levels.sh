#!/usr/bin/env bash
# usage: log_levels.sh CTR_ASYNC WORKDIR MPIRUN...
# Proves, with ctr_async under mpirun (every run under a timeout), the library's log levels and
# the rank in its lines:
#  1. at the default level (info) a restore says "asyncps: restored ..." with
#     " [rank 0 of 2 on HOST]" at its end, and no debug line is printed;
#  2. ASYNCPS_LOG_LEVEL=warning drops that line (the restore still happens);
#  3. ASYNCPS_LOG_LEVEL=debug prints each rank's debug lines (the Session's choices on every
#     rank, the worker's completion, the server's shard written), each naming its rank.
set -u
job=$1; work=$2; shift 2
mpirun=("$@")
log=$work/log; rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run LABEL LEVEL ARGS... : output in $work/LABEL.out
  local label=$1 level=$2; shift 2
  ASYNCPS_LOG_LEVEL=$level timeout -k 5 60 "${mpirun[@]}" -np 2 "$job" --model lr --rows 4096 \
    --batch_size 16 --test_examples 200 --log_every 10 --logdir "$log" --save_secs 0 "$@" >"$work/$label.out" 2>&1
  rc=$?
  echo "=== $label (ASYNCPS_LOG_LEVEL=$level, exit $rc)"; grep '^asyncps:' "$work/$label.out" | head -8
  [ $rc -eq 0 ] || fail "$label exited $rc"
}
run first info --training_steps 20
run info info --training_steps 40
grep -qE "^asyncps: restored $log/ckpt-20.index .* \[rank 0 of 2 on [^]]+\]$" "$work/info.out" ||
  fail "at info: no 'asyncps: restored ... [rank 0 of 2 on HOST]' line"
grep -q "^asyncps: Session: " "$work/info.out" && fail "at info: a debug line was printed"
run warning warning --training_steps 60
grep -q "^Done: 60 global steps (20 in this run)" "$work/warning.out" || fail "at warning: the run did not restore"
grep -q "^asyncps: restored" "$work/warning.out" && fail "at warning: the info line 'restored' was printed"
run debug debug --training_steps 80
for r in 0 1; do
  grep -qE "^asyncps: Session: (server|worker) 0 of 1 server\(s\) and 1 worker\(s\).* \[rank $r of 2 on [^]]+\]$" "$work/debug.out" ||
    fail "at debug: no Session line of rank $r"
done
grep -qE "^asyncps: worker 0: operations complete by (flush|request).* \[rank 1 of 2 on " "$work/debug.out" ||
  fail "at debug: no worker completion line"
grep -qE "^asyncps: server 0 wrote its shard of global step 80 \(final\).* \[rank 0 of 2 on " "$work/debug.out" ||
  fail "at debug: no shard line"
echo "PASS"
