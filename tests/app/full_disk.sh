#!/usr/bin/env bash
# usage: full_disk.sh MNIST_ASYNC DATA_DIR WORKDIR
# A full disk (a 2 MiB tmpfs, filled while the job runs):
#  1. failed periodic saves are warnings: training goes on, the next save after space returns
#     succeeds, the final save counts, the job exits 0 and its checkpoint evaluates;
#  2. a final save that cannot be written ends the job non-zero on every rank with one clear
#     line (the chief prints no "After ..." or "Done" result), and the checkpoints saved before are
#     byte for byte intact and restorable.
# Needs root (mount); runs as part of `make test` here and in CI, which run as root.
set -u
job=$1; data=$2; work=$3
# the jobs only have to outlive the filled disk: under the sanitizers (10x slower) fewer steps
s1=3000 s2=5000; [ "${ASYNCPS_TEST_SANITIZED:-0}" != 0 ] && s1=600 s2=900
fail() { echo "FAIL: $*"; exit 1; }
mnt=$work/mnt
umount "$mnt" 2>/dev/null; rm -rf "$work" && mkdir -p "$mnt"
mount -t tmpfs -o size=2m tmpfs "$mnt" || fail "cannot mount a tmpfs at $mnt (the test needs root)"
trap 'umount "$mnt" 2>/dev/null' EXIT
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none})
log=$mnt/log
fill() { dd if=/dev/zero of="$mnt/filler" bs=16k >/dev/null 2>&1; }  # until ENOSPC
wait_for() {  # wait_for FILE REGEX SECONDS
  for _ in $(seq 1 $(( $3 * 10 ))); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# 1. periodic saves fail while the disk is full, then succeed; the job ends well
timeout -k 2 120 "${mpirun[@]}" -np 3 "$job" --data_dir "$data" --logdir "$log" --ps 2 --train_limit 10000 \
  --training_steps $s1 --save_secs 0.3 --keep_checkpoints 2 >"$work/periodic.out" 2>&1 &
pid=$!
wait_for "$work/periodic.out" "training steps" 30 || { kill $pid; fail "training never started"; }
fill
wait_for "$work/periodic.out" "asyncps: warning: the checkpoint of global step [0-9]+ was not saved \(.*No space left on device" 20 \
  || { kill $pid; cat "$work/periodic.out"; fail "no warning for a save on a full disk"; }
sleep 1  # (more failed saves)
rm -f "$mnt/filler"
wait $pid; rc=$?
grep -m1 "asyncps: warning" "$work/periodic.out"
[ $rc -eq 0 ] || { tail -20 "$work/periodic.out"; fail "the job did not survive failed periodic saves (exit $rc)"; }
grep -q "asyncps: saved $log/ckpt-$s1.index (global step $s1)" "$work/periodic.out" || fail "no final save"
timeout 60 "$job" --eval_only --data_dir "$data" --logdir "$log" >"$work/eval.out" 2>&1 || { cat "$work/eval.out"; fail "the final checkpoint does not evaluate"; }
echo "periodic: $(grep -c 'asyncps: warning' "$work/periodic.out") save(s) failed as warnings; the job went on, final ckpt-$s1 saved and evaluates"

# 2. the final save fails: non-zero, one line, older checkpoints intact
before=$(cd "$log" && md5sum ckpt-* | sort)
timeout -k 2 120 "${mpirun[@]}" -np 3 "$job" --data_dir "$data" --logdir "$log" --ps 2 --train_limit 10000 \
  --training_steps $s2 --save_secs 0 >"$work/final.out" 2>&1 &
pid=$!
wait_for "$work/final.out" "training steps" 30 || { kill $pid; fail "the second job never started training"; }
fill
wait $pid; rc=$?
rm -f "$mnt/filler"
echo "final: [exit $rc] $(grep -m1 '^asyncps: the final' "$work/final.out")"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "a failed final save must end the job non-zero (exit $rc)"
grep -Eq "asyncps: the final checkpoint of global step $s2 could not be saved \(.*No space left on device.*\); the checkpoints saved before are intact" \
  "$work/final.out" || { tail -20 "$work/final.out"; fail "no clear line for the failed final save"; }
! grep -Eq "^(After [0-9]+ global steps|Done:)" "$work/final.out" || fail "the chief reported the run done though its final save failed"
[ "$before" = "$(cd "$log" && md5sum ckpt-* | sort)" ] || fail "the checkpoints saved before changed"
timeout 60 "$job" --eval_only --data_dir "$data" --logdir "$log" >"$work/eval2.out" 2>&1 || fail "the older checkpoint no longer evaluates"
grep -q "ckpt-$s1" "$work/eval2.out" || { cat "$work/eval2.out"; fail "eval did not use ckpt-$s1"; }
echo PASS
