#!/usr/bin/env bash
# usage: check_include_rule.sh LIBDIR   (lib/asyncps)
# The library's include rule (docs/ARCHITECTURE.md "Folders"): its subsystems form layers,
#   core < transport < diagnostics < checkpoint < runtime < server, worker
# and a file may include the public headers ("asyncps/x.h"), its own folder and folders below
# its own, never one above, and server and worker never each other. Private headers are named by
# their folder ("transport/window.h"); a bare "x.h" is refused. Every file lives in a folder.
# lib/cpu ("cpu/level.h": the CPU levels the loops are compiled for) is below every layer.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 LIBDIR"; exit 2; }
cd "$1"
declare -A rank=([core]=0 [transport]=1 [diagnostics]=2 [checkpoint]=3 [runtime]=4 [server]=5 [worker]=5)
fail=0 checked=0
for f in $(find . -name '*.h' -o -name '*.cpp' | sed 's#^\./##' | sort); do
  dir=${f%%/*}
  if [ "$dir" = "$f" ]; then echo "FAIL: $f is outside the subsystem folders"; fail=1; continue; fi
  if [ -z "${rank[$dir]+x}" ]; then echo "FAIL: $f: folder '$dir' has no place in the rule"; fail=1; continue; fi
  while IFS= read -r inc; do
    checked=$((checked + 1))
    case "$inc" in
      asyncps/* | cpu/*) continue ;;
      */*) to=${inc%%/*} ;;
      *) echo "FAIL: $f includes \"$inc\" without its folder"; fail=1; continue ;;
    esac
    if [ -z "${rank[$to]+x}" ]; then echo "FAIL: $f includes \"$inc\": no such subsystem"; fail=1; continue; fi
    if [ "$to" != "$dir" ] && [ "${rank[$to]}" -ge "${rank[$dir]}" ]; then
      echo "FAIL: $f ($dir) includes \"$inc\" ($to): a layer includes only the ones below it"; fail=1
    fi
  done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$f")
done
[ "$fail" -eq 0 ] || exit 1
echo "PASS: $checked quoted includes in lib/asyncps keep the layer rule"
