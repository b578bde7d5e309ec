#!/usr/bin/env bash
# usage: logdir_events.sh CTR_ASYNC WORK [mpirun ...]
# ctr_async --logdir as README and PYTHON.md describe it, read by readers that are not ours
# (tests/app/check_events.py):
#  1. the chief's log lines count the job's global steps as mnist_async does (one worker: "After
#     10 training steps (10 global steps)"), and its event file holds loss at those steps and, at
#     the end, the printed AUC and the tags samples_per_sec and operations_per_step;
#  2. a job refused at the start (another model's checkpoints in the logdir) leaves the
#     directory's listing unchanged: no event file of its own;
#  3. an empty path is refused, never read as the flag left out (--logdir '' saved nothing).
set -u
exe=$1 work=$2; shift 2
mpirun=("$@")
[ ${#mpirun[@]} -gt 0 ] || mpirun=(mpirun --oversubscribe --bind-to none)
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
log=$work/log
small=(--rows 4096 --test_examples 1000 --batch_size 32)
timeout -k 2 60 "${mpirun[@]}" -np 2 "$exe" "${small[@]}" --training_steps 20 --log_every 10 --logdir "$log" \
  --save_secs 0 >"$work/first.out" 2>&1 || { cat "$work/first.out"; fail "the first job exited non-zero"; }
cat "$work/first.out"
grep -q "^After 10 training steps (10 global steps)" "$work/first.out" || fail "1: the log line does not count 10 global steps"
grep -q "^After 20 training steps (20 global steps)" "$work/first.out" || fail "1: the log line does not count 20 global steps"
auc=$(sed -n 's/^AUC \([0-9.]*\) .*/\1/p' "$work/first.out")
[ -n "$auc" ] || fail "1: no AUC line"
checked=$(/usr/bin/python3 "$here/../app/check_events.py" "$log" 1 "auc=$auc") || { echo "$checked"; fail "1: the event file"; }
echo "$checked"
for tag in loss auc log_loss samples_per_sec operations_per_step; do
  grep -Eq "tags: (.*, )?$tag(,|\$)" <<<"$checked" || fail "1: no $tag scalar in the events"
done
# the loss points are at the global steps the log lines print
steps=$(/usr/bin/python3 - "$log" <<'PY'
import glob, struct, subprocess, sys
for path in glob.glob(sys.argv[1] + "/events.out.tfevents.*"):
    blob, at = open(path, "rb").read(), 0
    while at < len(blob):
        (n,) = struct.unpack("<Q", blob[at:at + 8])
        raw = subprocess.run(["protoc", "--decode_raw"], input=blob[at + 12:at + 12 + n], capture_output=True).stdout.decode()
        if '"loss"' in raw:
            print(next(l.split(":")[1].strip() for l in raw.splitlines() if l.startswith("2:")))
        at += 12 + n + 4
PY
)
[ "$(echo $steps)" = "10 20" ] || fail "1: the loss points are at steps '$(echo $steps)', not '10 20'"
before=$(ls -A "$log" | sort)
timeout -k 2 30 "${mpirun[@]}" -np 2 "$exe" --rows 8192 --test_examples 1000 --training_steps 20 --logdir "$log" \
  >"$work/other.out" 2>&1 && fail "2: a job of another model in the same logdir was accepted"
grep -q "^asyncps: .*another model" "$work/other.out" || { cat "$work/other.out"; fail "2: no line naming another model"; }
after=$(ls -A "$log" | sort)
[ "$before" = "$after" ] || fail "2: the refused job left files: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
for flag in --logdir --timeline --export_dir --dump_data; do
  timeout -k 2 30 "${mpirun[@]}" -np 2 "$exe" "${small[@]}" --training_steps 5 "$flag" "" >"$work/empty.out" 2>&1 &&
    fail "3: $flag '' was accepted"
  grep -q "^asyncps: $flag must not be empty" "$work/empty.out" || { cat "$work/empty.out"; fail "3: $flag '': no clear line"; }
done
echo "PASS: global steps counted as mnist_async does, events with AUC $auc and samples_per_sec, a refused job leaves nothing, empty paths refused"
