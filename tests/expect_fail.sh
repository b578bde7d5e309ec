#!/usr/bin/env bash
# usage: expect_fail.sh SECONDS REGEX [REGEX...] -- command args...
# Passes when the command exits non-zero within SECONDS and its combined output matches every
# extended REGEX (the one-line error a user must see). Prints what it saw either way.
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
if [ "$rc" -eq 0 ]; then echo "FAIL: exited 0, expected an error"; exit 1; fi
for regex in "${regexes[@]}"; do
  if ! grep -Eq -- "$regex" "$out"; then echo "FAIL: output does not match: $regex"; exit 1; fi
done
echo "PASS: failed as expected"
