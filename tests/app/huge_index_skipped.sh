#!/usr/bin/env bash
# huge_index_skipped.sh MPIRUN_AND_JOB...: a 64 GiB file (sparse: it costs nothing) named like the
# newest checkpoint index beside a real checkpoint used to end the restart with
# "asyncps: std::bad_alloc" (rank 0 allocated the file's size to read it). The restart must skip
# it with one warning naming it and its size, resume from the real checkpoint, and exit 0; the
# stray file is kept as it was (moved aside into earlier-run-*, as the files of every newer
# checkpoint a restore passes over are).
set -u
logdir=$(mktemp -d /tmp/asyncps-huge-index.XXXXXX)
trap 'rm -rf "$logdir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$@" --logdir "$logdir" --training_steps 50 --train_limit 2000 --save_secs 0 > "$logdir/first.txt" 2>&1 ||
  { cat "$logdir/first.txt"; fail "the first run exited $?"; }
[ -e "$logdir/ckpt-50.index" ] || { cat "$logdir/first.txt"; fail "no ckpt-50.index"; }
huge="$logdir/ckpt-99999999.index"
truncate -s 64G "$huge" || fail "cannot make a sparse 64 GiB file in $logdir"
"$@" --logdir "$logdir" --training_steps 100 --train_limit 2000 --save_secs 0 > "$logdir/second.txt" 2>&1
rc=$?
cat "$logdir/second.txt"
[ "$rc" -eq 0 ] || fail "the restart exited $rc"
warnings=$(grep -c "^asyncps: warning:" "$logdir/second.txt")
[ "$warnings" -eq 1 ] || fail "$warnings warning lines, expected 1"
grep -q "^asyncps: warning: skipping damaged checkpoint: $huge: 68719476736 bytes, more than a checkpoint index can be ([0-9]*); trying an older one \[rank 0 of 3 on [^]]*\]$" \
  "$logdir/second.txt" || fail "no warning naming $huge and its size"
grep -q "restored $logdir/ckpt-50.index (global step 50" "$logdir/second.txt" || fail "did not resume from ckpt-50"
[ -e "$logdir/ckpt-100.index" ] || fail "no ckpt-100.index"
kept=$(ls "$logdir"/earlier-run-*/ckpt-99999999.index 2>/dev/null | head -1)
[ -n "$kept" ] && [ "$(stat -c %s "$kept")" = 68719476736 ] || fail "the stray file was not kept as it was"
echo "ok: the 64 GiB index skipped with one warning; resumed from ckpt-50, saved ckpt-100"
