#!/usr/bin/env bash
# usage: row_groups_match.sh CTR_ASYNC WORKDIR MPIRUN... -- SIZING_FLAGS...
# Proves, with ctr_async under mpirun (every run under a timeout), that storing the wide and deep
# tables as one row group (the default) changes how their rows move, not what training does:
#  1. 1 server + 1 worker (deterministic) trains to the very same AUC and log-loss line with the
#     tables in one row group, with --separate_tables, and with --prefetch on (each batch's rows
#     read during the step before: with one worker, whose own pushes are added to them, exactly the
#     rows a read at the step's start gives);
#  2. on a sparse table (the sizing flags' --rows: few wanted rows close enough to merge) the row
#     group moves them in fewer operations (the worker's "N operations"): at most 0.8x. (On a
#     small table a wide table's short rows merge into long runs on their own, and the group can
#     take more operations than apart, moving fewer bytes.)
set -u
job=$1; work=$2; shift 2
mpirun=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
sizing=("$@")
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run LABEL ARGS...
  local label=$1; shift
  timeout -k 5 120 "${mpirun[@]}" -np 2 "$job" "${sizing[@]}" "$@" >"$work/$label.out" 2>&1; rc=$?
  echo "=== $label (exit $rc)"; grep -vE '^After [0-9]+ training steps' "$work/$label.out" | head -8
  [ $rc -eq 0 ] || fail "$label exited $rc"
}
run grouped
run separate --separate_tables
run prefetched --prefetch on
auc_g=$(grep '^AUC ' "$work/grouped.out"); auc_s=$(grep '^AUC ' "$work/separate.out"); auc_p=$(grep '^AUC ' "$work/prefetched.out")
[ -n "$auc_g" ] || fail "no AUC line with the row group"
[ "$auc_g" = "$auc_s" ] || fail "the AUC lines differ: '$auc_g' (row group) against '$auc_s' (apart)"
[ "$auc_g" = "$auc_p" ] || fail "the AUC lines differ: '$auc_g' (row group) against '$auc_p' (prefetched)"
ops() { sed -nE 's/^worker 0: .*, ([0-9]+) operations$/\1/p' "$work/$1.out"; }
og=$(ops grouped); os=$(ops separate)
[ -n "$og" ] && [ -n "$os" ] || fail "no operations count in a worker line"
echo "operations: $og in a row group, $os apart"
[ $((og * 10)) -le $((os * 8)) ] || fail "the row group took $og operations, not well below the $os of the tables apart"
echo "PASS: the same AUC line ($auc_g), $og operations against $os"
