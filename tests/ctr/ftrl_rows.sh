#!/usr/bin/env bash
# usage: ftrl_rows.sh CTR_ASYNC WORKDIR MPIRUN... -- SIZING_FLAGS...
# Proves, with ctr_async --optimizer ftrl under mpirun (every run under a timeout), that FTRL-
# Proximal rows train end to end and keep what the rule says:
#  1. 1 server + 1 worker (the only writer) trains with --ftrl_l1, saves and --export_dir writes
#     each table with its z and n (<table>.ftrl_z.npy, <table>.ftrl_n.npy, rows x dim);
#  2. in the export every weight of a trained coordinate is FTRL's closed form of its z and n,
#     those with |z| <= l1 exactly 0 (L1 made weights 0; there are such), and untouched rows
#     kept z = n = 0;
#  3. 2 servers restore it (z and n re-sharded with the rows) to the very same AUC line;
#  4. --ftrl_l1 without --optimizer ftrl and --optimizer ftrl with --allreduce are refused.
set -u
job=$1; work=$2; shift 2
mpirun=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
sizing=("$@")
rows=65536 steps=150 alpha=1 beta=0.1 l1=0.001 l2=0.01
ftrl=(--optimizer ftrl --embedding_lr $alpha --ftrl_beta $beta --ftrl_l1 $l1 --ftrl_l2 $l2)
log=$work/log; rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run LABEL NP ARGS... : output in $work/LABEL.out, exit code in $rc
  local label=$1 np=$2; shift 2
  timeout -k 5 120 "${mpirun[@]}" -np "$np" "$job" --rows $rows "${sizing[@]}" "$@" >"$work/$label.out" 2>&1; rc=$?
  echo "=== $label (exit $rc)"; grep -vE '^After [0-9]+ training steps' "$work/$label.out" | head -8
}

run first 2 "${ftrl[@]}" --logdir "$log" --save_secs 0 --training_steps $steps --export_dir "$work/export"
[ $rc -eq 0 ] || fail "the FTRL run exited $rc"
auc1=$(grep '^AUC ' "$work/first.out")
/usr/bin/python3 - "$work/export" $rows $alpha $beta $l1 $l2 <<'PY' || fail "the export does not hold FTRL's rows"
import sys, numpy as np
d, rows = sys.argv[1], int(sys.argv[2])
alpha, beta, l1, l2 = map(float, sys.argv[3:7])
for t, dim in (("deep", 16), ("wide", 1)):
    w, z, n = (np.load(f"{d}/{t}{s}.npy") for s in ("", ".ftrl_z", ".ftrl_n"))
    assert w.shape == z.shape == n.shape == (rows, dim), (t, w.shape, z.shape, n.shape)
    trained = n > 0
    assert trained.any(1).sum() > 100, f"{t}: only {trained.any(1).sum()} rows trained"
    assert (z[~trained] == 0).all(), f"{t}: z moved where no gradient came"
    closed = np.where(np.abs(z) <= l1, 0.0, -(z - np.sign(z) * l1) / ((beta + np.sqrt(n)) / alpha + l2))
    err = np.abs(w[trained] - closed[trained]).max()
    assert err < 1e-4, f"{t}: a weight is {err} from FTRL's closed form of its z and n"
    zeros = (w[trained] == 0).sum()
    assert zeros > 0 and (w[trained] != 0).sum() > 0, f"{t}: {zeros} of {trained.sum()} trained weights are 0"
    print(f"{t}: {trained.any(1).sum()} rows trained, {zeros} of {trained.sum()} trained weights exactly 0 (l1), "
          f"closed form within {err:.1e}")
PY

run restored 4 "${ftrl[@]}" --ps 2 --logdir "$log" --save_secs 0 --training_steps $steps
[ $rc -eq 0 ] || fail "the restoring run exited $rc"
grep -q "^Done: $steps global steps (0 in this run)" "$work/restored.out" || fail "the restoring run took steps"
auc2=$(grep '^AUC ' "$work/restored.out")
[ -n "$auc1" ] && [ "$auc1" = "$auc2" ] || fail "restored on 2 servers: '$auc2', the saved job's: '$auc1'"

run l1_with_adagrad 2 --ftrl_l1 0.5
[ $rc -ne 0 ] && grep -q "asyncps: --ftrl_l1 has no effect without --optimizer ftrl" "$work/l1_with_adagrad.out" ||
  fail "--ftrl_l1 with adagrad rows was not refused with one line"
run ftrl_allreduce 2 --optimizer ftrl --allreduce
[ $rc -ne 0 ] && grep -q "asyncps: --allreduce updates sgd or adagrad rows itself: --optimizer ftrl needs the servers" "$work/ftrl_allreduce.out" ||
  fail "--optimizer ftrl --allreduce was not refused with one line"
echo "PASS"
