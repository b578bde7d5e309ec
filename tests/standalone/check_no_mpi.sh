#!/usr/bin/env bash
# usage: check_no_mpi.sh BUILD_DIR
# asyncps_nn (lib/nn) and asyncps_mnist (lib/mnist) build and test without MPI and without
# libasyncps. Fails when
#   - a source or header of lib/nn or lib/mnist includes <mpi.h> (or an Open MPI header) or an
#     asyncps/ header, except lib/nn/mnist_cnn_layout.h, the header-only join to libasyncps;
#   - tests/standalone (a CMake project with no MPI and no include/asyncps/: lib/nn, lib/mnist,
#     tests/nn, tests/mnist) does not configure, build (-j2) or pass its tests (test_nn,
#     test_mnist; not the real-data one);
#   - the two libraries or the two test programs have an MPI symbol (MPI_, PMPI_, ompi_, opal_)
#     or need a symbol of libasyncps, or a test program loads libmpi.
# BUILD_DIR is kept between runs (a rerun rebuilds what changed). Environment: CMAKE (cmake),
# CTEST (ctest), CXX (c++), JOBS (2). About 90 s on 2 idle cores: a minute
# to build, 30 s of test_nn; a rerun builds only what changed.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$1
CMAKE=${CMAKE:-cmake}
CTEST=${CTEST:-ctest}
CXX=${CXX:-c++}
JOBS=${JOBS:-2}
step() { echo; echo "=== $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "includes of lib/nn and lib/mnist: no <mpi.h>, no asyncps/ header (but the layout join)"
include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*/)?(mpi\.h|mpi-ext\.h|mpi_portable_platform\.h|ompi/|opal/|openmpi/|asyncps/)'
if hits=$(cd "$root" && grep -rnE "$include_re" lib/nn lib/mnist | grep -v '^lib/nn/mnist_cnn_layout\.h:'); then
  echo "$hits"
  fail "the includes above tie asyncps_nn or asyncps_mnist to MPI or libasyncps"
fi
echo "none"

step "configure tests/standalone in $build"
"$CMAKE" -S "$here" -B "$build" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=Release \
  >/dev/null \
  || fail "tests/standalone does not configure without MPI (output above)"

step "build asyncps_nn, asyncps_mnist, test_nn, test_mnist (-j$JOBS)"
"$CMAKE" --build "$build" -j"$JOBS" || fail "lib/nn, lib/mnist or their tests do not build without MPI"

step "run their tests"
"$CTEST" --test-dir "$build" --output-on-failure --no-tests=error -E '^mnist_real_data$' \
  || fail "the nn or mnist unit tests fail in the build without MPI"

step "no MPI symbol, no libasyncps symbol, no libmpi"
files=("$build/lib/libasyncps_nn.a" "$build/lib/libasyncps_mnist.a" "$build/bin/test_nn" "$build/bin/test_mnist")
for f in "${files[@]}"; do
  [ -f "$f" ] || fail "$f was not built"
  n=$(nm -C "$f" 2>/dev/null | grep -cE '\b(P?MPI_|ompi_|opal_)' || true)
  # (what they need from asyncps:: other than their own namespaces would come from libasyncps)
  m=$(nm -C --undefined-only "$f" 2>/dev/null | grep -E 'asyncps::' | grep -cvE 'asyncps::(nn|mnist)::' || true)
  echo "$(basename "$f"): $n MPI symbols, $m undefined libasyncps symbols"
  [ "$n" -eq 0 ] || { nm -C "$f" | grep -E '\b(P?MPI_|ompi_|opal_)' | head; fail "$f has MPI symbols"; }
  [ "$m" -eq 0 ] || { nm -C --undefined-only "$f" | grep -E 'asyncps::' | grep -vE 'asyncps::(nn|mnist)::' | head
                      fail "$f needs libasyncps"; }
done
for f in "$build/bin/test_nn" "$build/bin/test_mnist"; do
  if ldd "$f" | grep -E 'libmpi|libopen-(rte|pal)|libasyncps'; then fail "$(basename "$f") loads MPI or libasyncps"; fi
done
echo "PASS: asyncps_nn and asyncps_mnist build and pass their tests without MPI or libasyncps"
