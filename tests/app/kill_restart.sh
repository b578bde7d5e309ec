#!/usr/bin/env bash
# usage: kill_restart.sh MNIST_ASYNC DATA_DIR WORKDIR [KILLS=3]
# Proves that kill -9 of the whole job at random moments never costs a valid checkpoint: starts
# a job checkpointing every 0.2 s, kills every rank with SIGKILL at a random moment, and
# restarts; each restart must resume from the newest checkpoint that was committed (its index
# exists) before the kill, never from a damaged one, and the last run must finish with accuracy
# in the normal band.
set -u
job=$1; data=$2; work=$3; kills=${4:-3}
log=$work/log; rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
args=(--data_dir "$data" --logdir "$log" --save_secs 0.2 --training_steps 4000 --log_every 100)
newest() { ls "$log"/ckpt-*.index 2>/dev/null | sed 's/.*ckpt-\([0-9]*\)\.index/\1/' | sort -n | tail -1; }
RANDOM=$$
prev=0
for k in $(seq 1 "$kills"); do
  setsid ${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} -np 3 "$job" "${args[@]}" >"$work/run$k.out" 2>&1 &
  pid=$!
  # wait (up to 60 s) until this run has committed a checkpoint of its own, then a random moment
  for _ in $(seq 600); do
    n=$(newest); [ "${n:-0}" -gt "$prev" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  delay_ms=$(( 50 + RANDOM % 1500 ))      # a different moment every time
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  kill -9 -- "-$pid" 2>/dev/null           # the whole process group: mpirun and every rank
  wait "$pid" 2>/dev/null
  pkill -9 -f "$log" 2>/dev/null; sleep 0.3
  n=$(newest)
  echo "kill $k ${delay_ms} ms after a new checkpoint: newest committed checkpoint: step ${n:-none}"
  grep -h "restored" "$work/run$k.out" | head -2
  if [ "$k" -gt 1 ] && [ "$prev" -gt 0 ]; then
    grep -q "restored $log/ckpt-$prev.index" "$work/run$k.out" || fail "run $k did not resume from ckpt-$prev"
  fi
  [ -n "$n" ] || continue
  prev=$n
done
[ "$prev" -gt 0 ] || fail "no checkpoint was ever committed"
timeout -k 5 300 ${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} -np 3 "$job" "${args[@]}" >"$work/final.out" 2>&1
rc=$?
grep -vE '^After [0-9]+ training' "$work/final.out" | head
[ $rc -eq 0 ] || fail "the final run exited $rc"
grep -q "restored $log/ckpt-$prev.index" "$work/final.out" || fail "the final run did not resume from ckpt-$prev"
if grep -q "cannot be used\|skipping damaged" "$work"/*.out; then fail "a damaged checkpoint was met"; fi
acc=$(sed -n 's/^Done: .*; test accuracy \([0-9.]*\) .*/\1/p' "$work/final.out")
# the band, measured 2026-12-01 (8 runs of this script, 4000 steps, 2 cores under load 4-6): final
# test accuracy min 0.9553, mean 0.9570, sd 0.0012; 0.93 is below min - 3 sd (0.952); untrained ~0.1
awk -v a="$acc" 'BEGIN {exit !(a >= 0.93)}' || fail "final accuracy $acc below 0.93"
echo "final test accuracy $acc"
echo PASS
