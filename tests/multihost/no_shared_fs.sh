#!/usr/bin/env bash
# usage: no_shared_fs.sh MNIST_ASYNC DATA_DIR WORKDIR
# Two servers on two hosts that share no file system at the logdir (each host sees its own
# directory there: scripts/netns-launch.sh ASYNCPS_NETNS_PRIVATE_DIR). Each server writes its
# shard on its own host, server 0 the index on its host:
#  1. a restart with the same placement resumes (each server reads its own shard; the index
#     travels from rank 0 by broadcast);
#  2. a restart whose servers would need shards from the other host fails at once, saying
#     which server on which host misses which file.
set -u
job=$1; data=$2; work=$3
root=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
if ! reason=$("$root/scripts/netns-up.sh" --probe 2>&1); then echo "SKIP: ${reason}"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
log=$work/log
export ASYNCPS_NETNS_PRIVATE_DIR=$log
common=(--data_dir "$data" --logdir "$log" --train_limit 10000 --save_secs 0)
# -np 4 --map-by node: server 0 and worker 0 on h1, server 1 and worker 1 on h2
run() { timeout -k 5 120 "$root/scripts/netns-mpirun.sh" "$@"; }
run -np 4 --map-by node "$job" "${common[@]}" --ps 2 --training_steps 100 >"$work/first.out" 2>&1 \
  || { tail -20 "$work/first.out"; fail "the first job failed"; }
h1=$log.asyncps-h1 h2=$log.asyncps-h2
[ -f "$h1/ckpt-100.index" ] && [ -f "$h1/ckpt-100.shard-0-of-2.final" ] && [ -f "$h2/ckpt-100.shard-1-of-2.final" ] \
  || { ls -la "$h1" "$h2"; fail "each host should hold its own server's shard (and h1 the index)"; }
[ ! -e "$h1/ckpt-100.shard-1-of-2.final" ] && [ ! -e "$h2/ckpt-100.index" ] || fail "the hosts share files"
[ ! -e "$log/ckpt-100.index" ] || fail "the head's own directory was written"
echo "first: h1 holds the index and shard 0, h2 shard 1"
run -np 4 --map-by node "$job" "${common[@]}" --ps 2 --training_steps 150 >"$work/resume.out" 2>&1 \
  || { tail -20 "$work/resume.out"; fail "the restart with the same placement failed"; }
grep -q "restored $log/ckpt-100.index (global step 100" "$work/resume.out" || fail "the restart did not resume"
echo "resume: restored from step 100 with no shared file system"
start=$(date +%s%N)
run -np 3 --map-by node "$job" "${common[@]}" --ps 1 --training_steps 200 >"$work/reshard.out" 2>&1
rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "reshard: [exit $rc after $ms ms] $(grep -m1 'newest tried' "$work/reshard.out" | cut -c1-300)"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "re-sharding without the other host's files must fail clearly"
grep -q "server 0 on asyncps-h1: $log/ckpt-150.shard-1-of-2.final: cannot open it: No such file or directory" \
  "$work/reshard.out" || { tail -20 "$work/reshard.out"; fail "the failure does not say what is missing where"; }
echo PASS
