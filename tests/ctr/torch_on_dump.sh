#!/usr/bin/env bash
# usage: torch_on_dump.sh CTR_ASYNC TORCH_CTR_PY DIR
# ctr_async --dump_data writes the streams as .npy (rows as the tables hash them, dense features,
# labels, the planted logits); bench/torch_ctr.py trains the same model on them with PyTorch's
# sparse Hogwild (2 processes). Passes when the dump's files have the shapes meta.json says, the
# planted AUC in meta.json is the one ctr_async prints, and PyTorch's model reaches AUC >= 0.78
# (measured 0.82 at 400 steps; the planted model 0.89).
set -u
exe=$1 torch_ctr=$2 dir=$3
rm -rf "$dir"
out=$("$exe" --dump_data "$dir" --rows 262144 --dump_examples 65536 --test_examples 5000) || { echo "FAIL: dump: $out"; exit 1; }
echo "$out"
/usr/bin/python3 - "$dir" <<'PY' || exit 1
import json, sys
import numpy as np
d = sys.argv[1]
meta = json.load(open(f"{d}/meta.json"))
for w in range(meta["workers"]):
    r = np.load(f"{d}/train{w}_rows.npy")
    assert r.shape == (meta["examples_per_worker"], meta["fields"]) and r.dtype == np.int64, r.shape
    assert r.min() >= 0 and r.max() < meta["rows"], "rows within the table"
    assert np.load(f"{d}/train{w}_dense.npy").shape == (meta["examples_per_worker"], meta["dense"])
    lab = np.load(f"{d}/train{w}_labels.npy")
    assert set(np.unique(lab)) <= {0.0, 1.0} and 0.05 < lab.mean() < 0.6, lab.mean()
assert np.load(f"{d}/test_rows.npy").shape == (meta["test_examples"], meta["fields"])
assert not np.array_equal(np.load(f"{d}/train0_rows.npy")[:100], np.load(f"{d}/train1_rows.npy")[:100]), "streams differ"
print("dump: shapes, dtypes and ranges as meta.json says")
PY
planted=$(echo "$out" | sed -n 's/.*(planted AUC \([0-9.]*\)).*/\1/p')
log=$(/usr/bin/python3 "$torch_ctr" --data "$dir" --steps 400 --eval_every 100 --test_examples 5000 2>&1) || { echo "$log"; echo "FAIL: torch_ctr.py"; exit 1; }
echo "$log"
line=$(echo "$log" | grep '^AUC ')
auc=$(echo "$line" | sed -n 's/^AUC \([0-9.]*\) (the planted model.s: \([0-9.]*\)).*/\1/p')
p2=$(echo "$line" | sed -n 's/^AUC \([0-9.]*\) (the planted model.s: \([0-9.]*\)).*/\2/p')
[ -n "$auc" ] || { echo "FAIL: no AUC line"; exit 1; }
[ "$(echo "$log" | grep -c '^eval: ')" -ge 1 ] || { echo "FAIL: no evaluation along the run"; exit 1; }
awk -v a="$auc" 'BEGIN {exit !(a >= 0.78)}' || { echo "FAIL: AUC $auc below 0.78"; exit 1; }
awk -v a="$p2" -v b="$planted" 'BEGIN {exit !(a - b < 1e-4 && b - a < 1e-4)}' || { echo "FAIL: planted AUC $p2 != the dump's $planted"; exit 1; }
echo "PASS: torch on the dump: AUC $auc (planted $planted)"
