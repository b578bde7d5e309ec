#!/usr/bin/env bash
# usage: torch_example_rerun.sh WORKDIR DATA_DIR -- mpirun ... -np 2 python mnist_torch.py
# mnist_torch.py's TensorBoard scalars across a rerun in the same --logdir: the first run trains
# and plots samples_per_sec with its test accuracy; the second, resumed at --steps already, says
# there is nothing to train, writes a file of its own, and plots the accuracies without a rate
# (no step taken: no rate, as mnist_async and ctr_async).
set -u
work=$1 data=$2; shift 3
rm -rf "$work" && mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
for run in 1 2; do
  timeout -k 5 120 "$@" --steps 40 --log_every 20 --data_dir "$data" --logdir "$work/log" >"$work/run$run.out" 2>&1 ||
    { cat "$work/run$run.out"; echo "FAIL: run $run"; exit 1; }
done
grep -q "^nothing to train: the global step had already reached --steps 40" "$work/run2.out" ||
  { cat "$work/run2.out"; echo "FAIL: the rerun does not say there is nothing to train"; exit 1; }
/usr/bin/python3 - "$here/../app" "$work/log" <<'PY' || exit 1
import glob, os, sys
sys.path.insert(0, sys.argv[1])
import check_events  # (the readers that are not ours: python3-crc32c and protoc --decode_raw)
files = sorted(glob.glob(os.path.join(sys.argv[2], "events.out.tfevents.*")), key=os.path.getmtime)
if len(files) != 2:
    sys.exit(f"FAIL: {len(files)} event files, expected one per run: {files}")
for f, want_rate in zip(files, (True, False)):
    last = [v for step, _, v in map(check_events.decode, check_events.records(f)) if "test_accuracy" in v]
    if len(last) != 1 or not (0 < last[0]["test_accuracy"] <= 1):
        sys.exit(f"FAIL: {f}: want one test_accuracy in (0, 1], got {last}")
    if ("samples_per_sec" in last[0]) != want_rate or (want_rate and not last[0]["samples_per_sec"] > 0):
        sys.exit(f"FAIL: {f}: samples_per_sec {'missing' if want_rate else 'plotted for a run that took no step'}: {last[0]}")
print("PASS: the training run plotted its rate, the rerun that took no step its accuracies only")
PY
