#!/usr/bin/env bash
# usage: every_rank_fails.sh SECONDS REGEX -- LAUNCHER... -- PROGRAM ARGS...
# Bad input on every rank, checked rank by rank (not only through the launcher's combined exit
# code): each rank prints exactly one line starting "asyncps:" that matches REGEX (its own
# output, kept apart by a wrapper), no rank exits 0 (a rank MPI_Abort ends is killed before its
# wrapper can write its code: that is not 0 either), and the job ends within SECONDS.
set -u
limit=$1 regex=$2; shift 2
[ "$1" = "--" ] || { echo "usage: $0 SECONDS REGEX -- LAUNCHER... -- PROGRAM ARGS..."; exit 2; }
shift
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
wrap='r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}; "$@" >"'"$dir"'/out.$r" 2>&1; echo $? >"'"$dir"'/code.$r"'
np=0
for ((i = 0; i < ${#launcher[@]}; ++i)); do [ "${launcher[$i]}" = "-np" ] && np=${launcher[$((i + 1))]}; done
[ "$np" -gt 0 ] || { echo "FAIL: no -np N among the launcher's arguments"; exit 2; }
timeout -k 2 "$limit" "${launcher[@]}" sh -c "$wrap" sh "$@" >"$dir/launcher.out" 2>&1
rc=$?
fail=0
[ $rc -ne 124 ] && [ $rc -ne 137 ] || { echo "FAIL: still running after ${limit}s"; fail=1; }
for ((r = 0; r < np; ++r)); do
  out=$dir/out.$r
  code=$( [ -f "$dir/code.$r" ] && cat "$dir/code.$r" || echo "killed")
  lines=$(grep -c '^asyncps:' "$out" 2>/dev/null || true)
  echo "rank $r: exit $code, $lines 'asyncps:' line(s): $(grep -m1 '^asyncps:' "$out" 2>/dev/null)"
  [ "$code" != 0 ] || { echo "FAIL: rank $r exited 0"; fail=1; }
  [ "$lines" = 1 ] || { echo "FAIL: rank $r printed $lines 'asyncps:' lines, not one"; cat "$out" 2>/dev/null | head -5; fail=1; }
  grep -m1 '^asyncps:' "$out" 2>/dev/null | grep -Eq -- "$regex" || { echo "FAIL: rank $r's line does not match: $regex"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS: every rank of $np ended non-zero with its one line" || exit 1
