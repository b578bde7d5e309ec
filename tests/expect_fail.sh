#!/usr/bin/env bash
# usage: expect_fail.sh [--succeed] SECONDS REGEX [REGEX...] -- command args...
# Passes when the command exits non-zero (with --succeed: exits 0) within SECONDS and its combined
# output matches every extended REGEX (the one-line error a user must see, or the result a run
# must print). ctest's PASS_REGULAR_EXPRESSION is not used for the latter: it ignores the exit
# code, so a run that printed the text and then crashed would pass. Prints what it saw either way.
set -u
want=fail
if [ "${1:-}" = "--succeed" ]; then want=ok; shift; fi
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
if [ "$want" = fail ] && [ "$rc" -eq 0 ]; then echo "FAIL: exited 0, expected an error"; exit 1; fi
if [ "$want" = ok ] && [ "$rc" -ne 0 ]; then echo "FAIL: exited $rc, expected 0"; exit 1; fi
for regex in "${regexes[@]}"; do
  if ! grep -Eq -- "$regex" "$out"; then echo "FAIL: output does not match: $regex"; exit 1; fi
done
[ "$want" = fail ] && echo "PASS: failed as expected" || echo "PASS: exited 0 with the expected output"
