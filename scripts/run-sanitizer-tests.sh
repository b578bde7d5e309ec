#!/usr/bin/env bash
# usage: run-sanitizer-tests.sh BUILD_DIR [CTEST_ARGS...]
# Runs the tests CTEST_ARGS select (all, without any) of a sanitizer build (ASYNCPS_SANITIZE,
# configured and built: `make sanitize` does both, then this with its SANITIZE_CTEST_ARGS) and fails on a failed test or on any sanitizer report in any test's
# output, even one of a test that expects its command to fail (a rank that prints the expected
# error and then an ASan report still passes such a test's own check). The tests get the
# sanitizers' options from <build>/sanitizer_env.cmake (cmake/AsyncpsSanitizers.cmake).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [CTEST_ARGS...]" >&2; exit 2; }
build=$1; shift
[ -f "$build/sanitizer_env.cmake" ] || { echo "run-sanitizer-tests: $build is not a sanitizer build (configure it with -DASYNCPS_SANITIZE=address,undefined)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(cd "$build" && ctest --output-on-failure --timeout 900 "$@")
rc=$?
log=$build/Testing/Temporary/LastTest.log
pattern='(ERROR|SUMMARY): (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|Sanitizer: CHECK failed|runtime error: '
if [ -f "$log" ] && grep -Eq "$pattern" "$log"; then
  echo "run-sanitizer-tests: sanitizer reports in the tests' output ($log):"
  grep -En "^Test: |$pattern" "$log" | grep -EB1 "$pattern" | head -n 60
  rc=1
fi
[ "$rc" -eq 0 ] && echo "run-sanitizer-tests: every test passed, no sanitizer report"
exit "$rc"
