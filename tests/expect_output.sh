#!/usr/bin/env bash
# usage: expect_output.sh SECONDS REGEX [REGEX...] -- command args...
# Passes when the command exits 0 within SECONDS and its combined output matches every extended
# REGEX. (ctest's PASS_REGULAR_EXPRESSION ignores the exit code: a run that printed the text and
# then crashed would pass.) Prints what it saw either way. The counterpart of expect_fail.sh.
set -u
limit=$1; shift
regexes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do regexes+=("$1"); shift; done
shift
out=$(mktemp); trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
timeout -k 2 "$limit" "$@" >"$out" 2>&1
rc=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
echo "--- exit code $rc after ${elapsed} ms"
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL: still running after ${limit}s (hang)"; exit 1; fi
if [ "$rc" -ne 0 ]; then echo "FAIL: exited $rc, expected 0"; exit 1; fi
for regex in "${regexes[@]}"; do
  if ! grep -Eq -- "$regex" "$out"; then echo "FAIL: output does not match: $regex"; exit 1; fi
done
echo "PASS: exited 0 with the expected output"
