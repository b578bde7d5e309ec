#!/usr/bin/env bash
# usage: check_using_doc.sh [REPO_ROOT]
# docs/USING.md shows tests/downstream/main.cpp verbatim, between the lines
#   <!-- BEGIN tests/downstream/main.cpp -->  and  <!-- END tests/downstream/main.cpp -->
# inside a ```cpp fence. Passes when the two are byte-for-byte the same; prints the diff otherwise.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
doc=$root/docs/USING.md
src=$root/tests/downstream/main.cpp
block=$(mktemp); trap 'rm -f "$block"' EXIT
awk '/^<!-- BEGIN tests\/downstream\/main.cpp -->$/ {inside = 1; next}
     /^<!-- END tests\/downstream\/main.cpp -->$/   {inside = 0}
     inside' "$doc" | sed '1{/^```cpp$/d}; ${/^```$/d}' >"$block"
[ -s "$block" ] || { echo "FAIL: no code block between the BEGIN/END markers in $doc"; exit 1; }
if diff -u "$src" "$block"; then
  echo "PASS: the program in docs/USING.md is tests/downstream/main.cpp"
else
  echo "FAIL: docs/USING.md and tests/downstream/main.cpp differ (diff above: - file, + doc)"
  exit 1
fi
