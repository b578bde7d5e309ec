#!/usr/bin/env bash
# usage: keeps_earlier_runs.sh CTR_ASYNC WORKDIR MPIRUN...
# A run never deletes the files of an earlier run's checkpoint it does not continue from; it
# moves them into <logdir>/earlier-run-*/ first, byte for byte:
#  1. --restart_from another directory's checkpoint at the very step the logdir has one of its own;
#  2. a logdir whose newest checkpoint is damaged (its index cut short): the run restores the one
#     before, and the newer one's intact shard is kept for whoever can mend its index.
set -u
job=$1 work=$2; shift 2
mpirun=("$@")
fail() { echo "FAIL: $*"; exit 1; }
run() { timeout -k 5 60 "${mpirun[@]}" -np 2 "$job" --rows 4096 --test_examples 300 "$@" >"$work/out" 2>&1 ||
          { cat "$work/out"; fail "ctr_async $* exited non-zero"; }; }
rm -rf "$work" && mkdir -p "$work"
a=$work/a b=$work/b
# 1. restart_from elsewhere, at the step of the logdir's own checkpoint
run --training_steps 30 --logdir "$a"
run --training_steps 30 --logdir "$b" --learning_rate 0.01 --embedding_lr 0.01
mine=$(cd "$a" && md5sum ckpt-30.*)
run --training_steps 30 --logdir "$a" --restart_from "$b/ckpt-30.index"
grep -q "restored $b/ckpt-30.index" "$work/out" || { cat "$work/out"; fail "did not restore $b/ckpt-30.index"; }
moved=$(ls -d "$a"/earlier-run-* 2>/dev/null | head -1)
[ -n "$moved" ] || fail "no earlier-run-* folder: the logdir's own ckpt-30 was not moved aside"
[ "$(cd "$moved" && md5sum ckpt-30.*)" = "$mine" ] || fail "the logdir's own ckpt-30 is not in $moved byte for byte"
echo "1. restart_from $b/ckpt-30.index: the logdir's own ckpt-30 moved to $(basename "$moved")"
# 2. a damaged newest checkpoint: restored past, kept
rm -rf "$a"
run --training_steps 20 --logdir "$a"
run --training_steps 40 --logdir "$a"
shard=$(cd "$a" && md5sum ckpt-40.shard*)
truncate -s 50 "$a/ckpt-40.index"
run --training_steps 40 --logdir "$a"
grep -q "skipping damaged checkpoint" "$work/out" && grep -q "restored $a/ckpt-20.index" "$work/out" ||
  { cat "$work/out"; fail "did not skip the damaged ckpt-40 for ckpt-20"; }
moved=$(ls -d "$a"/earlier-run-* 2>/dev/null | head -1)
[ -n "$moved" ] || fail "no earlier-run-* folder: the damaged checkpoint's files were not moved aside"
[ "$(cd "$moved" && md5sum ckpt-40.shard*)" = "$shard" ] || fail "the damaged checkpoint's intact shard is not in $moved byte for byte"
[ -f "$a/ckpt-40.index" ] || fail "the run saved no ckpt-40 of its own"
echo "2. damaged ckpt-40: restored ckpt-20, the intact shard kept in $(basename "$moved")"
echo PASS
