#!/usr/bin/env bash
# usage: cross-aarch64.sh [--full] [BUILD_DIR=build-aarch64]   (make cross-aarch64; not in CI, which it would push past its time)
# The CPU kernels on aarch64 (Grace-Hopper, Graviton): with Debian's cross compiler
#   1. lib/nn and lib/mnist with their unit tests (tests/standalone: no MPI), built for aarch64
#      and run under qemu-aarch64-static: test_nn checks every kernel, forward and every gradient,
#      against its double-precision reference at the one level aarch64 has (baseline: NEON), and
#      the whole model trains; test_mnist. The finite-difference tests ([grad], 5 minutes under
#      qemu) only with --full, which runs the whole ctest of that build;
#   2. libasyncps compiled for aarch64: the static library, against this host's Open MPI headers
#      (there is no aarch64 MPI here to link or run it with: Debian's arm64 Open MPI cannot be
#      installed beside the amd64 one).
# About 4 minutes on 2 cores (9 with --full). Needs g++-aarch64-linux-gnu and qemu-user-static
# (scripts/install-deps.sh --cross).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
full=0
if [ "${1:-}" = "--full" ]; then full=1; shift; fi
build=${1:-$root/build-aarch64}
jobs=${JOBS:-2}
toolchain=$root/cmake/aarch64-linux-gnu.cmake
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  command -v "$tool" >/dev/null || { echo "asyncps: cross-aarch64.sh: $tool is missing (scripts/install-deps.sh --cross)"; exit 1; }
done
start=$(date +%s)

echo "=== 1. lib/nn, lib/mnist and their tests for aarch64, run under qemu ($build/standalone)"
cmake -S "$root/tests/standalone" -B "$build/standalone" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/standalone" -j"$jobs"
kind=$(file "$build/standalone/bin/test_nn")
grep -q "ARM aarch64" <<<"$kind" || { echo "FAIL: test_nn is not an aarch64 program: $kind"; exit 1; }
if [ $full -eq 1 ]; then
  ctest --test-dir "$build/standalone" --output-on-failure --no-tests=error -E '^mnist_real_data$'
else
  qemu=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)
  "${qemu[@]}" "$build/standalone/bin/test_nn" '~[grad]'
  "${qemu[@]}" "$build/standalone/bin/test_mnist" '~[real]'
fi

echo "=== 2. libasyncps for aarch64 ($build/lib)"
# (FindMPI takes this host's wrapper for the headers; its test program is compiled, not linked)
cmake -S "$root" -B "$build/lib" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY -DMPI_C_COMPILER="$(command -v mpicc)" -DASYNCPS_WITH_CUDA=OFF -DASYNCPS_BUILD_TESTS=OFF -DASYNCPS_BUILD_BENCH=OFF -DASYNCPS_BUILD_APPS=OFF \
  -DASYNCPS_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build/lib" -j"$jobs" --target asyncps asyncps_nn
for name in libasyncps.a libasyncps_nn.a; do
  lib=$(find "$build/lib" -name "$name" | head -1)
  [ -n "$lib" ] || { echo "FAIL: $name was not built"; exit 1; }
  heads=$(aarch64-linux-gnu-objdump -f "$lib")
  grep -q "architecture: aarch64" <<<"$heads" || { echo "FAIL: $lib is not aarch64 code"; exit 1; }
  echo "$lib: aarch64"
done
echo "PASS: the kernels pass their tests on aarch64 (qemu) and libasyncps builds for it ($(( $(date +%s) - start )) s)"
