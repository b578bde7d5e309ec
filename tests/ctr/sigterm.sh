#!/usr/bin/env bash
# usage: sigterm.sh CTR_ASYNC WORKDIR [MPIRUN_ARGS...]
# SIGTERM to every rank of a training ctr_async (as scancel or a pre-emption sends it) ends the
# job as mnist_async's does: every rank exits 143 (each rank's own code, recorded by a wrapper
# that lets the signal reach the program), server 0 prints one "stopped by SIGTERM" line naming
# the checkpoint it saved, and no result line claims steps that were never taken.
set -u
exe=$1; work=$2; shift 2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null | tail -20; exit 1; }
codes=$work/codes out=$work/out
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} "$@")
wrap='trap : TERM; "$@"; rc=$?; echo "rank ${OMPI_COMM_WORLD_RANK:-$PMI_RANK} exit $rc" >>"'"$codes"'"; exit $rc'
timeout -k 2 60 "${mpirun[@]}" -np 3 sh -c "$wrap" sh "$exe" --training_steps 100000000 --log_every 20 \
  --logdir "$work/log" --save_secs 1000 >"$out" 2>&1 &
job=$!
pids=""
for _ in $(seq 1 200); do  # the three ranks, once training has begun
  if grep -q "global step" "$out" 2>/dev/null; then
    pids=$(pgrep -f "^$exe --training_steps 100000000 .*--logdir $work/log" | tr '\n' ' ')
    [ "$(echo $pids | wc -w)" -eq 3 ] && break
  fi
  sleep 0.1
done
[ "$(echo $pids | wc -w)" -eq 3 ] || { kill $job; fail "training never started on 3 ranks (pids: $pids)"; }
kill -TERM $pids
start=$(date +%s%N)
wait $job
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "mpirun exited $rc, $ms ms after SIGTERM to every rank"; cat "$codes"
[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "the job did not end after SIGTERM (hang)"
[ "$(grep -c 'exit 143$' "$codes")" -eq 3 ] || fail "not every rank exited 143"
[ "$(grep -c '^asyncps: stopped by SIGTERM at global step' "$out")" -eq 1 ] || fail "not exactly one 'stopped by SIGTERM' line"
grep -q "saved .*ckpt-[0-9]*[.]index: a restart resumes from it" "$out" || fail "the line names no checkpoint"
! grep -q "^Done: 100000000 global steps" "$out" || fail "a result line claims the --training_steps that were never taken"
echo "PASS: $(grep '^asyncps: stopped by SIGTERM' "$out")"
