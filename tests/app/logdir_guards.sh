#!/usr/bin/env bash
# usage: logdir_guards.sh MNIST_ASYNC DATA_DIR WORKDIR
# The checkpoint directory as a trusted place:
#  1. a run that does not restore (--no_restore, --restart_from an older one) moves the earlier
#     run's files it would overwrite aside, byte for byte, instead of overwriting them;
#  2. a second job on a directory in use is refused at once, naming the holder, and leaves no
#     file of its own there (no second event file); the first job goes on; once the holder is gone (killed) the next job takes the directory and resumes;
#  3. a FIFO or a symbolic link in place of a shard makes that checkpoint unusable at once (never
#     a wait, never a read outside the directory): the older one is restored, or --restart_from
#     fails; a FIFO named like the newest index is skipped;
#  4. an empty path is refused, never read as the flag left out (--export_dir '' exported nothing);
#  5. two runs that move files aside in the same second never share a folder: with every
#     earlier-run-<time> of the next minute already holding a file of the same name, the files
#     go to earlier-run-<time>-2 and what the others held is untouched (a restart loop lost
#     checkpoints so).
set -u
job=$1; data=$2; work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none})
log=$work/log
run() {  # run NAME ARGS...: must exit 0
  local name=$1; shift
  timeout -k 2 120 "${mpirun[@]}" "$@" >"$work/$name.out" 2>&1 || { tail -20 "$work/$name.out"; fail "$name failed"; }
}
quick_fail() {  # quick_fail NAME REGEX ARGS...: must exit non-zero within 20 s, output matching REGEX
  local name=$1 regex=$2; shift 2
  local start=$(date +%s%N)
  timeout -k 2 20 "${mpirun[@]}" "$@" >"$work/$name.out" 2>&1
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$name: [exit $rc after $ms ms] $(grep -m1 '^asyncps:' "$work/$name.out")"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || { tail -5 "$work/$name.out"; fail "$name: expected a quick error"; }
  grep -Eq "$regex" "$work/$name.out" || fail "$name: no line matching '$regex'"
}
common=(--data_dir "$data" --train_limit 10000 --save_secs 0)

# 1. an earlier run's files are moved aside, never overwritten
run first -np 3 "$job" "${common[@]}" --logdir "$log" --ps 2 --training_steps 100
first=$(cd "$log" && md5sum ckpt-* | sort)
run fresh -np 3 "$job" "${common[@]}" --logdir "$log" --ps 2 --training_steps 100 --no_restore
grep -Eq "asyncps: 3 checkpoint file\(s\) of an earlier run past step 0, which this run would overwrite, and 1 TensorBoard event file\(s\) written before this job, moved to $log/earlier-run-" \
  "$work/fresh.out" || { cat "$work/fresh.out"; fail "--no_restore: the earlier run's files were not moved aside"; }
archive=$(ls -d "$log"/earlier-run-* | head -1)
[ "$first" = "$(cd "$archive" && md5sum ckpt-* | sort)" ] || fail "the moved files differ from the earlier run's"
[ -f "$log/ckpt-100.index" ] || fail "--no_restore: the new run saved nothing"
echo "no_restore: the earlier run's 3 files moved to $(basename "$archive"), unchanged"
second=$(cd "$log" && md5sum ckpt-* | sort)
run more -np 3 "$job" "${common[@]}" --logdir "$log" --ps 2 --training_steps 150   # resumes: 100 -> 150
sleep 1  # (archive names have one-second resolution)
run rollback -np 3 "$job" "${common[@]}" --logdir "$log" --ps 2 --training_steps 150 --restart_from "$archive/ckpt-100.index"
grep -q "moved to" "$work/rollback.out" || fail "--restart_from: the newer checkpoint was not moved aside"
archive2=$(grep -o "moved to .*" "$work/rollback.out" | sed 's/moved to //; s/ \[rank [^]]*\]$//')  # (the line ends with the rank that says it)
[ -f "$archive2/ckpt-150.index" ] || fail "--restart_from: ckpt-150 of the run rolled back is not in $archive2"
[ -f "$log/ckpt-100.index" ] || fail "--restart_from moved a checkpoint at its own start step"
echo "restart_from: the newer ckpt-150 moved to $(basename "$archive2"); ckpt-100 kept"

# 2. one job per directory
log2=$work/locked
timeout -k 2 120 "${mpirun[@]}" -np 2 "$job" "${common[@]}" --logdir "$log2" --training_steps 100000000 \
  >"$work/holder.out" 2>&1 &
holder=$!
for _ in $(seq 1 100); do grep -q "training steps" "$work/holder.out" 2>/dev/null && break; sleep 0.1; done
files_before=$(ls "$log2")
quick_fail second_job "asyncps: --logdir $log2 is in use by another job \(pid [0-9]+ on .* since .*\)" \
  -np 2 "$job" "${common[@]}" --logdir "$log2" --training_steps 10
[ "$files_before" = "$(ls "$log2")" ] || fail "the refused job left files in the holder's directory: $(ls "$log2")"
kill -0 $holder 2>/dev/null || fail "the first job did not survive the second one's refusal"
kill -9 $(pgrep -f "$job --data_dir $data --train_limit 10000 --save_secs 0 --logdir $log2") 2>/dev/null
wait $holder 2>/dev/null
run after_holder -np 2 "$job" "${common[@]}" --logdir "$log2" --training_steps 50
echo "lock: a second job refused while the first ran; taken over after the first was killed"

# 3. hostile files in place of checkpoint files
before=$(cd "$log" && md5sum ckpt-1* | sort)
cp -a "$log" "$work/fifo"
rm "$work/fifo/ckpt-150.shard-1-of-2.final" && mkfifo "$work/fifo/ckpt-150.shard-1-of-2.final"
run fifo_shard -np 3 "$job" "${common[@]}" --logdir "$work/fifo" --ps 2 --training_steps 200  # the older one instead
grep -q "ckpt-150.shard-1-of-2.final: not a regular file" "$work/fifo_shard.out" || fail "the FIFO shard was not named"
grep -q "restored .*ckpt-100.index" "$work/fifo_shard.out" || fail "the FIFO shard: the older checkpoint was not restored"
echo "fifo_shard: named, the older ckpt-100 restored instead"
cp -a "$log" "$work/link"
mv "$work/link/ckpt-150.shard-1-of-2.final" "$work/outside.shard"
ln -s "$work/outside.shard" "$work/link/ckpt-150.shard-1-of-2.final"
quick_fail symlink_shard "asyncps: .*ckpt-150.shard-1-of-2.final: cannot open it: a symbolic link \(not followed\)" \
  -np 3 "$job" "${common[@]}" --logdir "$work/link" --ps 2 --training_steps 200 --restart_from "$work/link/ckpt-150.index"
cp -a "$log" "$work/fifo_index" && mkfifo "$work/fifo_index/ckpt-999.index"
run fifo_index -np 3 "$job" "${common[@]}" --logdir "$work/fifo_index" --ps 2 --training_steps 200
grep -q "skipping damaged checkpoint: .*ckpt-999.index: not a regular file" "$work/fifo_index.out" || fail "the FIFO index was not skipped"
grep -q "restored .*ckpt-150.index" "$work/fifo_index.out" || fail "the FIFO index: the valid checkpoint was not restored"
[ "$before" = "$(cd "$log" && md5sum ckpt-1* | sort)" ] || fail "the original checkpoint files changed"
same=$work/same_second
run same_first -np 2 "$job" "${common[@]}" --logdir "$same" --training_steps 100
for s in $(seq 0 59); do
  taken="$same/earlier-run-$(date -u -d "+$s sec" +%Y%m%dT%H%M%SZ)"
  mkdir -p "$taken" && echo "another run's" >"$taken/ckpt-100.index"
done
run same_second -np 2 "$job" "${common[@]}" --logdir "$same" --training_steps 50 --no_restore
[ "$(cat "$same"/earlier-run-*Z/ckpt-100.index | sort -u)" = "another run's" ] ||
  fail "5: a folder of another run's files was written into"
ls "$same"/earlier-run-*Z-2/ckpt-100.index >/dev/null 2>&1 || fail "5: the earlier run's index is not in an earlier-run-<time>-2 folder"
for flag in --export_dir --timeline --restart_from; do
  quick_fail "empty${flag#-}" "^asyncps: $flag must not be empty" -np 2 "$job" "${common[@]}" --logdir "$work/empty" "$flag" ""
done
echo PASS
