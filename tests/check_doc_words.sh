#!/usr/bin/env bash
# usage: check_doc_words.sh ROOT
# The docs and the code's comments speak of the project as it is, for a reader who never saw its
# tracker: no "issue N", "the issue's ...", "(build N)" (the project's own issues and builds: a
# reference an outside reader cannot follow). Upstream bugs are named as their trackers do
# (mpich#6596, Open MPI #13128). Fails naming every line.
set -u
root=$1
pattern='\b[Ii]ssues? [0-9]+\b|\b[Tt]he issue.s\b|\(build [0-9]+\)'
hits=$(cd "$root" && grep -rnE "$pattern" README.md docs include lib apps bench python scripts tests cmake Makefile \
         --include='*.md' --include='*.h' --include='*.cpp' --include='*.cu' --include='*.inc' --include='*.py' \
         --include='*.sh' --include='*.cmake' --include='CMakeLists.txt' --include=Makefile 2>/dev/null \
       | grep -v '^tests/check_doc_words.sh:')
if [ -n "$hits" ]; then
  echo "$hits"
  echo "FAIL: the lines above point at the project's own issues or builds; say what they mean instead"
  exit 1
fi
echo "PASS: no reference to the project's own issues or builds in the docs and comments"
