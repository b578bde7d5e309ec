#!/usr/bin/env bash
# usage: downstream_test.sh [BUILD_DIR]
# libasyncps as a library, the way a user gets it: installs it into a temporary prefix, builds
# tests/downstream (a separate CMake project: find_package(asyncps)) against that prefix, shared
# and static, and runs it under `mpirun -np 3`; builds apps/logreg_async on its own against the
# prefix (it must need nothing but the package); compiles the program again with nothing but
# `pkg-config --cflags --libs asyncps` (and --static); checks what was installed (public headers
# only, both libraries, CMake and pkg-config files). Cleans up after itself.
#
# BUILD_DIR: a configured libasyncps build tree to install from: its target asyncps_libs is
# brought up to date, then `cmake --install BUILD_DIR --prefix ...`. Without it the library is
# configured and built afresh in the temporary folder.
# Environment: CMAKE (cmake), MPIEXEC (mpirun), CXX (c++), PKG_CONFIG (pkg-config),
# DOWNSTREAM_TIMEOUT (seconds per mpirun, 60), KEEP_TMP=1 keeps the temporary folder;
# CXXFLAGS and LDFLAGS go into every downstream compile and link (CMake reads them too: a
# sanitizer build's tests set them to its -fsanitize).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
build=${1:-}
CMAKE=${CMAKE:-cmake}
MPIEXEC=${MPIEXEC:-mpirun}
CXX=${CXX:-c++}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
limit=${DOWNSTREAM_TIMEOUT:-60}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/asyncps-downstream.XXXXXX")
cleanup() { if [ "${KEEP_TMP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
prefix=$tmp/prefix
step() { echo; echo "=== $*"; }
fail() { echo "FAIL: $*"; exit 1; }
# whether a program loads libasyncps.so (ldd read whole first: under pipefail, `ldd | grep -q`
# fails at random when grep exits before ldd has written everything, SIGPIPE)
links_shared() { local out; out=$(ldd "$1") || return 2; [[ $out == *libasyncps.so* ]]; }
run_np3() {  # run_np3 EXE: 1 server + 2 workers, under a timeout
  local run=(${ASYNCPS_TEST_MPIRUN:-$MPIEXEC --oversubscribe --bind-to none})
  timeout -k 5 "$limit" "${run[@]}" -np 3 "$1" \
    || fail "$1 under mpirun -np 3 exited with $?"
}

if [ -z "$build" ]; then
  step "configure and build libasyncps in $tmp/build"
  build=$tmp/build
  "$CMAKE" -S "$src" -B "$build" -DASYNCPS_WITH_CUDA=OFF -DASYNCPS_BUILD_TESTS=OFF \
    -DASYNCPS_BUILD_APPS=OFF -DASYNCPS_BUILD_BENCH=OFF >/dev/null
  "$CMAKE" --build "$build" -j1
fi

step "bring $build up to date (asyncps_libs: both libraries), install it into $prefix"
# The headers are installed from the source tree: a library built from older sources than them
# would not match them.
"$CMAKE" --build "$build" --target asyncps_libs -j1
"$CMAKE" --install "$build" --prefix "$prefix"

step "what was installed"
libdir=$(find "$prefix" -name 'libasyncps.a' -printf '%h\n' | head -1)
[ -n "$libdir" ] || fail "no libasyncps.a under $prefix"
ls -l "$libdir"/libasyncps*
[ -e "$libdir/libasyncps.so" ] || fail "no libasyncps.so (the development link) in $libdir"
ls "$libdir"/libasyncps.so.* >/dev/null 2>&1 || fail "no versioned libasyncps.so.* in $libdir"
[ -f "$libdir/cmake/asyncps/asyncpsConfig.cmake" ] || fail "no asyncpsConfig.cmake in $libdir/cmake/asyncps"
[ -f "$libdir/cmake/asyncps/asyncpsConfigVersion.cmake" ] || fail "no asyncpsConfigVersion.cmake"
[ -f "$libdir/pkgconfig/asyncps.pc" ] || fail "no asyncps.pc in $libdir/pkgconfig"
want=$( (cd "$src/include/asyncps" && ls ./*.h; echo ./version.h) | sed 's|^\./||' | sort)
got=$(cd "$prefix/include/asyncps" && ls | sort)
[ "$want" = "$got" ] || fail "installed headers differ from the public ones:
$(diff <(echo "$want") <(echo "$got") || true)"
echo "headers: $(echo $got)"
python3 "$here/check_portable_lib.py" "$libdir"/libasyncps.a "$libdir"/libasyncps.so \
  || fail "the installed library holds instructions beyond x86-64-v2 outside its dispatched clones"
grep -rq -- "-march" "$libdir/cmake/asyncps" "$libdir/pkgconfig" && fail "the installed package asks for -march"

step "tests/downstream with find_package(asyncps), shared, project(x CXX)"
"$CMAKE" -S "$src/tests/downstream" -B "$tmp/ds" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
"$CMAKE" --build "$tmp/ds" -j1
links_shared "$tmp/ds/downstream" || fail "downstream does not link libasyncps.so"
run_np3 "$tmp/ds/downstream"

step "tests/downstream with find_package(asyncps), static (asyncps::asyncps_static), project(x C CXX)"
"$CMAKE" -S "$src/tests/downstream" -B "$tmp/ds_static" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DDOWNSTREAM_STATIC=ON -DDOWNSTREAM_LANGUAGES="C;CXX" >/dev/null
"$CMAKE" --build "$tmp/ds_static" -j1
if links_shared "$tmp/ds_static/downstream"; then fail "the static build links libasyncps.so"; fi
run_np3 "$tmp/ds_static/downstream"

step "apps/logreg_async built on its own against the package"
"$CMAKE" -S "$src/apps/logreg_async" -B "$tmp/lr" -DCMAKE_PREFIX_PATH="$prefix" -DBUILD_TESTING=OFF >/dev/null
"$CMAKE" --build "$tmp/lr" -j1
run_np3 "$tmp/lr/logreg_async"

step "pkg-config --cflags --libs asyncps"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
"$PKG_CONFIG" --modversion asyncps
flags=$("$PKG_CONFIG" --cflags --libs asyncps) || fail "pkg-config --cflags --libs asyncps failed"
echo "$flags"
incdir=$("$PKG_CONFIG" --variable=includedir asyncps)
[ "$(realpath "$incdir")" = "$(realpath "$prefix/include")" ] \
  || fail "pkg-config includedir $incdir is not $prefix/include (the .pc file must follow the prefix)"
# shellcheck disable=SC2086
"$CXX" ${CXXFLAGS:-} -std=c++20 -O1 -o "$tmp/pc_downstream" "$src/tests/downstream/main.cpp" $flags -Wl,-rpath,"$libdir" ${LDFLAGS:-}
run_np3 "$tmp/pc_downstream"
static_flags=$("$PKG_CONFIG" --static --cflags --libs asyncps)
echo "--static: $static_flags"
# shellcheck disable=SC2086
"$CXX" ${CXXFLAGS:-} -std=c++20 -O1 -o "$tmp/pc_downstream_static" "$src/tests/downstream/main.cpp" \
  $("$PKG_CONFIG" --static --cflags asyncps) -L"$libdir" -Wl,-Bstatic -lasyncps -Wl,-Bdynamic \
  $("$PKG_CONFIG" --static --libs asyncps | sed 's/-lasyncps//') ${LDFLAGS:-}
if links_shared "$tmp/pc_downstream_static"; then fail "the static pkg-config build links libasyncps.so"; fi
run_np3 "$tmp/pc_downstream_static"

step "each installed header compiles on its own with the pkg-config flags"
for h in "$prefix"/include/asyncps/*.h; do
  # shellcheck disable=SC2086
  echo "#include \"asyncps/$(basename "$h")\"" | "$CXX" -std=c++20 -fsyntax-only -x c++ - \
    $("$PKG_CONFIG" --cflags asyncps) || fail "asyncps/$(basename "$h") does not compile on its own"
done

echo
echo "PASS: installed, found by find_package and pkg-config, linked shared and static, ran under mpirun -np 3"
