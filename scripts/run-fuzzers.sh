#!/usr/bin/env bash
# usage: run-fuzzers.sh BUILD_DIR SECONDS [TARGET...]
# Runs each libFuzzer target of fuzz/ (built in BUILD_DIR: ASYNCPS_BUILD_FUZZERS=ON, target
# asyncps_fuzzers) for SECONDS, one after the other, each on a fresh copy of its seed corpus
# (fuzz/corpus/<target>/, never written to) with its dictionary (fuzz/dict/; fuzz_config's also
# every flag its parser has, which the binary lists: fuzz/fuzz_config.cpp), and fails if any
# of them finds a crash, a sanitizer report, an exception outside its contract, a timeout
# (10 s for one input) or an allocation over 64 MiB. The input that did it is kept in
# BUILD_DIR/fuzz-artifacts/ and the command that replays it is printed.
# TARGET: idx, checkpoint_index, checkpoint_shard, config (default: all).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
seconds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(idx checkpoint_index checkpoint_shard config)
declare -A dict=([idx]=idx [checkpoint_index]=checkpoint [checkpoint_shard]=checkpoint [config]=config)

artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/asyncps-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
# (the fuzzers' own ASan/UBSan options: reports are fatal, leaks checked)
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=()
for t in "${targets[@]}"; do
  exe=$build/bin/fuzz_$t
  [ -x "$exe" ] || { echo "run-fuzzers: no $exe (cmake --build $build --target asyncps_fuzzers)" >&2; exit 2; }
  [ -n "${dict[$t]:-}" ] || { echo "run-fuzzers: unknown target $t" >&2; exit 2; }
  mkdir -p "$work/$t"
  cp -r "$root/fuzz/corpus/$t/." "$work/$t/"
  cp "$root/fuzz/dict/${dict[$t]}.dict" "$work/$t.dict"
  if [ "$t" = config ]; then  # + every flag of the parser and the library's choices, as the binary lists them
    ASYNCPS_FUZZ_PRINT_DICT=1 "$exe" >>"$work/$t.dict" 2>"$work/$t.dict.err" ||
      { cat "$work/$t.dict.err"; echo "run-fuzzers: fuzz_$t could not list its flags" >&2; exit 2; }
  fi
  echo "=== fuzz_$t: ${seconds}s from $(ls "$work/$t" | wc -l) seeds, $(grep -c '^"' "$work/$t.dict") dictionary entries"
  start=$(date +%s)
  "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
    -dict="$work/$t.dict" -artifact_prefix="$artifacts/$t-" -print_final_stats=1 \
    "$work/$t" >"$work/$t.log" 2>&1
  rc=$?
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|Done [0-9]+ runs)" "$work/$t.log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$work/$t.log"
    found=$(grep -oE "Test unit written to [^ ]+" "$work/$t.log" | sed 's/Test unit written to //' | tail -1)
    echo "FAIL: fuzz_$t exited $rc after $(( $(date +%s) - start ))s${found:+; input kept: $found}"
    [ -n "$found" ] && echo "  replay: $exe $found"
    failed+=("$t")
  else
    echo "ok: fuzz_$t, $(( $(date +%s) - start ))s, corpus grew to $(ls "$work/$t" | wc -l) inputs"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzzers: findings in: ${failed[*]}"
  exit 1
fi
echo "run-fuzzers: ${#targets[@]} targets, ${seconds}s each, no findings"
