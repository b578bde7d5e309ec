#!/usr/bin/env bash
# usage: bench/straggler.sh [BUILD_DIR] [WORKERS=3] [DELAY_MS=5] [STEPS=1000]
# The straggler experiment: W workers, the last one slowed by DELAY_MS every step; async, sync
# and ssp (s = 1, 4, 16) each train the same number of global steps. Prints a table (samples/s,
# wall time, test accuracy, staleness, time the chief waited) and writes
# BUILD_DIR/bench-results/straggler.csv and docs/straggler.png (if matplotlib is there).
set -eu
build=${1:-build}; workers=${2:-3}; delay=${3:-5}; steps=${4:-1000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$build/bench-results; mkdir -p "$out"
csv=$out/straggler.csv
echo "mode,staleness,workers,delay_ms,steps,wall_s,samples_per_s,test_accuracy,test_accuracy_ema,tau_mean,tau_p99,tau_max,chief_wait_s" >"$csv"
printf '# straggler: %d workers, the last slowed by %s ms/step, %d global steps, batch 128\n' "$workers" "$delay" "$steps"
printf '%-10s %10s %12s %10s %10s %10s %8s %8s %12s\n' mode wall_s samples/s test_acc ema_acc tau_mean tau_p99 tau_max chief_wait_s
for spec in async sync ssp:1 ssp:4 ssp:16; do
  mode=${spec%%:*}; s=0; [ "$mode" = ssp ] && s=${spec#*:}
  log=$(mktemp -d)
  res=$(timeout 600 mpirun --oversubscribe --bind-to none -np $((workers + 1)) "$build/bin/mnist_async" \
        --data_dir data/mnist --logdir "$log" --no_restore --save_secs 0 --training_steps "$steps" \
        --mode "$mode" --staleness "$s" --straggler_ms "$delay" --verbose 2>&1)
  rm -rf "$log"
  done_line=$(echo "$res" | grep '^Done:')
  tau_line=$(echo "$res" | grep '^Staleness')
  wall=$(echo "$done_line" | sed -n 's/.* in \([0-9.]*\) s: .*/\1/p')
  sps=$(echo "$done_line" | sed -n 's/.*s: \([0-9]*\) samples\/s.*/\1/p')
  acc=$(echo "$done_line" | sed -n 's/.*test accuracy \([0-9.]*\) (EMA \([0-9.]*\)).*/\1/p')
  ema=$(echo "$done_line" | sed -n 's/.*test accuracy \([0-9.]*\) (EMA \([0-9.]*\)).*/\2/p')
  tmean=$(echo "$tau_line" | sed -n 's/.*mean \([0-9.]*\),.*/\1/p')
  tp99=$(echo "$tau_line" | sed -n 's/.*p99 \([0-9]*\),.*/\1/p')
  tmax=$(echo "$tau_line" | sed -n 's/.*max \([0-9]*\);.*/\1/p')
  cw=$(echo "$tau_line" | sed -n 's/.*waited \([0-9.]*\) s.*/\1/p')
  label=$mode; [ "$mode" = ssp ] && label="ssp s=$s"
  printf '%-10s %10s %12s %10s %10s %10s %8s %8s %12s\n' "$label" "$wall" "$sps" "$acc" "$ema" "$tmean" "$tp99" "$tmax" "$cw"
  echo "$mode,$s,$workers,$delay,$steps,$wall,$sps,$acc,$ema,$tmean,$tp99,$tmax,$cw" >>"$csv"
done
echo "# written: $csv"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 - "$csv" docs/straggler.png <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
labels = [r["mode"] + ("" if r["mode"] != "ssp" else f" s={r['staleness']}") for r in rows]
sps = [float(r["samples_per_s"] or 0) for r in rows]
acc = [float(r["test_accuracy"] or 0) for r in rows]
fig, ax = plt.subplots(figsize=(7, 3.6))
ax.bar(labels, sps, color="#4a7ab5")
ax.set_ylabel("samples/s")
ax2 = ax.twinx()
ax2.plot(labels, acc, "o-", color="#c0504d")
ax2.set_ylabel("test accuracy")
ax2.set_ylim(min(acc) - 0.02, max(acc) + 0.02)
r = rows[0]
ax.set_title(f"{r['workers']} workers, one slowed by {r['delay_ms']} ms/step, {r['steps']} global steps")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("# plot:", sys.argv[2])
PY
fi
