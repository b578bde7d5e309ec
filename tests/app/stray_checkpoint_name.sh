#!/usr/bin/env bash
# stray_checkpoint_name.sh MPIRUN_AND_JOB...: a logdir holding an empty file named like a
# checkpoint whose step does not fit an int64 (ckpt-123456789012345678901.index) used to make
# rank 0's listing throw while the others waited in the restore's broadcast: a silent hang. The
# job must now ignore the file, train, and save its own checkpoint; the stray file is untouched.
set -u
logdir=$(mktemp -d /tmp/asyncps-stray.XXXXXX)
trap 'rm -rf "$logdir"' EXIT
: > "$logdir/ckpt-123456789012345678901.index"
"$@" --logdir "$logdir" --training_steps 50 --train_limit 2000 --save_secs 0 > "$logdir/out.txt" 2>&1
rc=$?
cat "$logdir/out.txt"
[ "$rc" -eq 0 ] || { echo "FAIL: the job exited $rc"; exit 1; }
[ -e "$logdir/ckpt-50.index" ] || { echo "FAIL: no ckpt-50.index"; exit 1; }
[ -e "$logdir/ckpt-123456789012345678901.index" ] && [ ! -s "$logdir/ckpt-123456789012345678901.index" ] ||
  { echo "FAIL: the stray file was changed"; exit 1; }
echo "ok: stray name ignored, ckpt-50 saved"
