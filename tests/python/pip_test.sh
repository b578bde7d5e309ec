#!/usr/bin/env bash
# usage: pip_test.sh SOURCE_DIR WORK_DIR PYTHON MPIRUN
# Proves what docs/PYTHON.md leads with, offline: `pip install --no-build-isolation .` into a
# virtual environment of the user's (--system-site-packages) builds the module through the
# project's CMake; it imports from anywhere (cd /), `python -m asyncps` describes it, and it runs a
# job under mpirun. Then `pip wheel` gives a wheel that installs into a second environment,
# imports there and trains (mnist_torch.py, 1 server + 1 worker). (CMake's scratch is
# WORK_DIR/pip-build, kept between runs: a rerun is incremental, a fresh checkout builds it all.)
set -euo pipefail
src=$1 work=$2 py=$3 mpirun=$4
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work" && rm -rf "$work/venv" "$work/venv2" "$work/dist"
rm -rf "$work"/pip-build/lib* "$work"/pip-build/bdist*  # (setuptools' copies: only CMake's tree is kept)
export ASYNCPS_PIP_BUILD_DIR=$work/pip-build PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
"$py" -m venv --system-site-packages "$work/venv"
(cd "$src" && "$work/venv/bin/pip" install -q --no-build-isolation .) || fail "pip install . failed"
cd /  # nothing of the source or build tree on the path
"$work/venv/bin/python" -m asyncps >"$work/about.txt" || fail "python -m asyncps exited $?"
[ "$(tr -cd '\000' <"$work/about.txt" | wc -c)" -eq 0 ] || fail "python -m asyncps printed a NUL byte"
out=$(cat "$work/about.txt")
echo "$out"
version=$(sed -n 's/^project(asyncps VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
for want in "^asyncps $version\$" "module: +$work/venv/lib/python3[.0-9]*/site-packages/asyncps\$" \
            "MPI compiled: (Open MPI|MPICH) [0-9]" "MPI running: .*[0-9]" "thread level: MPI_THREAD_(FUNNELED|MULTIPLE)" \
            "cpu kernels: +(baseline|avx2|avx512)\$"; do
  grep -Eq "$want" <<<"$out" || fail "python -m asyncps: no line matching '$want'"
done
err=$(ASYNCPS_CPU_KERNELS=sse9 "$work/venv/bin/python" -m asyncps 2>&1) && fail "an unknown ASYNCPS_CPU_KERNELS was accepted"
grep -q "^asyncps: .*ASYNCPS_CPU_KERNELS" <<<"$err" || fail "no asyncps: line for an unknown level: $err"
ASYNCPS_TEST_ARENA=4096 ASYNCPS_TEST_PUSHES=200 timeout -k 5 60 \
  ${ASYNCPS_TEST_MPIRUN:-$mpirun --oversubscribe --bind-to none} -np 3 "$work/venv/bin/python" "$here/test_exactness.py"
(cd "$src" && "$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/dist" .) || fail "pip wheel . failed"
wheel=$(ls "$work"/dist/asyncps-"$version"-*.whl) || fail "no asyncps-$version wheel in $work/dist"
echo "wheel: $(basename "$wheel")"
"$py" -m venv --system-site-packages "$work/venv2"
"$work/venv2/bin/pip" install -q "$wheel"
"$work/venv2/bin/python" -c "import asyncps, sys; f = asyncps._asyncps.__file__; print('imported', f); sys.exit(0 if f.startswith('$work/venv2/') else 1)" ||
  fail "the wheel's module is not the one imported"
# and it trains: the tutorial's CNN through the wheel's module, 1 server + 1 worker
OMP_NUM_THREADS=1 timeout -k 5 120 "$src/tests/app/check_training.sh" 0.60 -- \
  ${ASYNCPS_TEST_MPIRUN:-$mpirun --oversubscribe --bind-to none} -np 2 "$work/venv2/bin/python" \
  "$src/apps/python/mnist_torch.py" --steps 300 --log_every 20 --data_dir "$src/data/mnist" || fail "no training through the wheel"
echo PASS
