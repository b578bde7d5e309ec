#!/usr/bin/env bash
# usage: example_bad_flags.sh PYTHON APPS_PYTHON_DIR -- mpirun ...
# The Python examples refuse every value they cannot use as the C++ programs do: each case ends
# within 30 s, non-zero, with an 'asyncps:' line saying what is wrong and no traceback (argparse's
# own errors, a Session refusing --ps, a logdir it cannot write, values that would train nothing
# or fail later).
set -u
py=$1 apps=$2; shift 3
mpirun=("$@")
out=$(mktemp); trap 'rm -f "$out"' EXIT
fails=0
case_() {  # case_ SCRIPT REGEX ARGS...
  local script=$1 regex=$2; shift 2
  timeout -k 2 30 "${mpirun[@]}" -np 2 "$py" "$apps/$script" "$@" >"$out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL: $script $*: exit $rc (expected a quick non-zero exit)"; fails=$((fails + 1)); return
  fi
  if ! grep -Eq "^asyncps: $regex" "$out" || grep -q "Traceback" "$out"; then
    echo "FAIL: $script $*: no line '^asyncps: $regex', or a traceback:"; sed 's/^/    /' "$out" | head -8
    fails=$((fails + 1)); return
  fi
  echo "ok: $script $* -> $(grep -m1 '^asyncps:' "$out")"
}
small=(--rows 4096 --test_examples 1000)
case_ ctr_torch.py "--steps must be in \[1, 2\^50\], got 0" "${small[@]}" --steps 0
case_ ctr_torch.py "--batch must be in \[1, 65536\], got -1" "${small[@]}" --batch -1
case_ ctr_torch.py "--table_lr must be positive and finite, got nan" "${small[@]}" --table_lr nan
case_ ctr_torch.py "--test_examples must be in \[1, 1e8\], got 0" "${small[@]}" --test_examples 0
case_ ctr_torch.py "--ps 2 leaves no worker among 2 ranks" "${small[@]}" --ps 2
case_ ctr_torch.py "--logdir must not be empty" "${small[@]}" --logdir ""
case_ ctr_torch.py "--logdir /proc/nope" "${small[@]}" --logdir /proc/nope
case_ ctr_torch.py "unrecognized arguments: --bogus" "${small[@]}" --bogus
case_ mnist_torch.py "--logdir must not be empty" --logdir ""
case_ mnist_torch.py "--steps must be in \[1, 2\^50\], got 0" --steps 0
case_ mnist_torch.py "argument --batch: invalid int value: 'x'" --batch x
[ $fails -eq 0 ] || { echo "FAIL: $fails case(s)"; exit 1; }
echo "PASS: every case one 'asyncps:' line, no traceback, non-zero"
