#!/usr/bin/env bash
# check_timeline.sh FILE RANKS SERVERS -- COMMAND...: runs the job (which writes --timeline FILE),
# then checks the file (check_timeline.py).
set -u
file=$1 ranks=$2 servers=$3
shift 3
[ "${1:-}" = "--" ] && shift
rm -f "$file"
"$@" > /dev/null || { echo "check_timeline: the job failed (exit $?)"; exit 1; }
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
exec $PY "$(dirname "$0")/check_timeline.py" "$file" "$ranks" "$servers"
