# Sourced by the stall tests (stall_restart.sh, stall_floor.sh): stall() starts a job, stops one
# rank with SIGSTOP once training runs (alive to the kernel and to mpirun, silent to MPI) and
# checks that the job ends non-zero, in time, with a line naming the silent rank.
# Needs: job, data, work (the caller's arguments), timeout_s (--stall_timeout), limit_ms (how
# long after the SIGSTOP the job may take to end), fail(); extra mpirun arguments in "$@".
mpirun=(${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} "$@")
# stall NAME NP STOP_RANK REGEX ARGS...: starts the job, stops STOP_RANK once training runs
stall() {
  local name=$1 np=$2 victim=$3 regex=$4; shift 4
  local log=$work/$name out=$work/$name.out
  timeout -k 2 60 "${mpirun[@]}" -np "$np" "$job" --data_dir "$data" --logdir "$log" --training_steps 100000000 \
    --train_limit 10000 --stall_timeout $timeout_s --save_secs 1000 "$@" >"$out" 2>&1 &
  local job_pid=$!
  local pid=""
  for _ in $(seq 1 100); do  # the victim's pid, once training has begun
    if grep -q "training steps" "$out" 2>/dev/null; then
      for p in $(pgrep -f "$job --data_dir $data --logdir $log"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxE "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$victim" && pid=$p
      done
      [ -n "$pid" ] && break
    fi
    sleep 0.1
  done
  [ -n "$pid" ] || { kill $job_pid; cat "$out"; fail "$name: training never started"; }
  kill -STOP "$pid"
  local start=$(date +%s%N)
  wait $job_pid
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  kill -CONT "$pid" 2>/dev/null
  echo "$name: [exit $rc, $ms ms after SIGSTOP of rank $victim] $(grep -m1 '^asyncps:' "$out")"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || { tail -5 "$out"; fail "$name: expected a non-zero end, not a hang"; }
  [ $ms -lt "$limit_ms" ] || fail "$name: took $ms ms to notice (the limit: $limit_ms ms)"
  grep -Eq "$regex" "$out" || { tail -5 "$out"; fail "$name: no line matching '$regex'"; }
}
