#!/usr/bin/env bash
# end_of_job_stall.sh MPIRUN_AND_JOB...: a rank stuck inside the end-of-job collectives ends the
# job within seconds. Rank 0 writes the timeline last (<file>.tmp, then a rename); a FIFO put at
# <file>.tmp (nothing looks at it before the end) makes that open wait forever for a reader, while every other
# rank waits for rank 0 in the final window free. The end of the job is watched (stall timeout
# 1 s plus its grace): every rank must exit non-zero within seconds, with one line naming the
# end of the job.
set -u
dir=$(mktemp -d /tmp/asyncps-endstall.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/trace.json.tmp"
start=$(date +%s%N)
timeout -k 2 40 "$@" --logdir "$dir/log" --training_steps 200 --train_limit 2000 --save_secs 0 \
  --stall_timeout 1 --timeline "$dir/trace.json" > "$dir/out.txt" 2>&1
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$dir/out.txt"
echo "--- exit $rc after $ms ms"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { echo "FAIL: expected a quick non-zero exit"; exit 1; }
grep -Eq "^asyncps: rank [0-9] on .*: (server|worker) [0-9] at the end of the job .* has made no progress" "$dir/out.txt" ||
  { echo "FAIL: no line naming the end of the job"; exit 1; }
echo "ok: a rank stuck at the end of the job ended it"
