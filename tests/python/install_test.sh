#!/usr/bin/env bash
# usage: install_test.sh BUILD_DIR PREFIX PYTHON MPIRUN
# Proves: `cmake --install` puts the Python module where PYTHON finds it with the prefix on
# PYTHONPATH, and that copy (not the build tree's) imports and runs a job under mpirun.
set -euo pipefail
build=$1 prefix=$2 py=$3 mpirun=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" --component python >/dev/null
site=$(find "$prefix" -name __init__.py -path '*/asyncps/*' -printf '%h\n' | head -1)
[ -n "$site" ] || { echo "FAIL: no asyncps package under $prefix"; exit 1; }
site=$(dirname "$site")
echo "installed: $(ls "$site/asyncps" | tr '\n' ' ')"
cd /  # nothing of the source or build tree on the path
PYTHONPATH=$site "$py" -c "import asyncps, sys; f = asyncps._asyncps.__file__; print('imported', f); sys.exit(0 if f.startswith('$site/') else 1)"
PYTHONPATH=$site ASYNCPS_TEST_ARENA=4096 ASYNCPS_TEST_PUSHES=200 timeout -k 5 60 \
  ${ASYNCPS_TEST_MPIRUN:-$mpirun --oversubscribe --bind-to none} -np 3 "$py" "$here/test_exactness.py"
echo PASS
