#!/usr/bin/env bash
# usage: run_test.sh TIMEOUT [--min_accuracy A | --min_auc A] [--check_timeline FILE RANKS SERVERS]
#                    [--check_scaling FILE] [--expect TEXT] -- NETNS_MPIRUN_ARGS...
# One multi-host ctest test: skips (exit 77, the reason printed) when this machine cannot create
# network namespaces; otherwise runs scripts/netns-mpirun.sh NETNS_MPIRUN_ARGS (set-up, mpirun on
# the head, teardown) under `timeout -k 5 TIMEOUT`. With --min_accuracy the job's output is judged
# by tests/app/check_training.sh (loss falls, final test accuracy >= A); with --min_auc, a ctr_async
# job's by tests/ctr/check_ctr.sh (loss falls, AUC >= A). With --check_timeline the
# job's --timeline file is checked afterwards (tests/app/check_timeline.py); with --check_scaling,
# the point bench_scaling appended to FILE (tests/multihost/check_scaling_point.py). With --expect,
# the job's output must hold TEXT (a fixed string).
set -u
here=$(dirname "$(readlink -f "$0")")
root=$(cd "$here/../.." && pwd)
limit=$1; shift
min_acc=""
if [ "${1:-}" = "--min_accuracy" ]; then min_acc=$2; shift 2; fi
min_auc=""
if [ "${1:-}" = "--min_auc" ]; then min_auc=$2; shift 2; fi
timeline=()
if [ "${1:-}" = "--check_timeline" ]; then timeline=("$2" "$3" "$4"); shift 4; rm -f "${timeline[0]}"; fi
scaling=""
if [ "${1:-}" = "--check_scaling" ]; then scaling=$2; shift 2; rm -f "$scaling"; fi
expect=""
if [ "${1:-}" = "--expect" ]; then expect=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
if ! reason=$("$root/scripts/netns-up.sh" --probe 2>&1); then
  echo "SKIP: multi-host test not run: ${reason#netns harness unavailable: }"
  exit 77
fi
if [ -n "$min_acc" ]; then
  timeout -k 5 "$limit" "$root/tests/app/check_training.sh" "$min_acc" -- "$root/scripts/netns-mpirun.sh" "$@"
elif [ -n "$min_auc" ]; then
  timeout -k 5 "$limit" "$root/tests/ctr/check_ctr.sh" "$min_auc" -- "$root/scripts/netns-mpirun.sh" "$@"
elif [ -n "$expect" ]; then
  out=$(mktemp)
  timeout -k 5 "$limit" "$root/scripts/netns-mpirun.sh" "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  if [ "$rc" -eq 0 ] && ! grep -qF -- "$expect" "$out"; then
    echo "FAIL: the job ended 0 but its output lacks: $expect"
    rc=1
  fi
  rm -f "$out"
  (exit "$rc")
else
  timeout -k 5 "$limit" "$root/scripts/netns-mpirun.sh" "$@"
fi
rc=$?
[ "$rc" -eq 124 ] && echo "FAIL: timed out after $limit s"
[ "$rc" -eq 77 ] && rc=1   # a skip is decided above, never by the job
if [ "$rc" -eq 0 ] && [ ${#timeline[@]} -eq 3 ]; then
  python3 "$root/tests/app/check_timeline.py" "${timeline[@]}" || rc=1
fi
if [ "$rc" -eq 0 ] && [ -n "$scaling" ]; then
  python3 "$here/check_scaling_point.py" "$scaling" || rc=1
fi
exit "$rc"
