#!/usr/bin/env bash
# usage: bad_data.sh MNIST_ASYNC DATA_DIR WORKDIR
# Damaged MNIST files at the job level: each case must end on every rank within 20 s with a
# non-zero exit and one "asyncps:" line naming the file and the problem.
set -u
job=$1; data=$2; work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
make_dir() {  # make_dir NAME: a data dir of links to the good files
  mkdir -p "$work/$1"
  for f in "${files[@]}"; do ln -sf "$(readlink -f "$data/$f")" "$work/$1/$f"; done
}
check() {  # check NAME REGEX [FLAG...]
  local start=$(date +%s%N) name=$1 regex=$2
  shift 2
  timeout -k 2 20 ${ASYNCPS_TEST_MPIRUN:-mpirun --oversubscribe --bind-to none} -np 2 "$job" --data_dir "$work/$name" --logdir "$work/log" \
    --no_restore "$@" >"$work/$name.out" 2>&1
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$name: [exit $rc after $ms ms] $(grep -m1 '^asyncps:' "$work/$name.out")"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$name: expected a quick error"
  grep -Eq "$regex" "$work/$name.out" || fail "$name: no message matching '$regex'"
}
make_dir truncated
rm "$work/truncated/train-labels-idx1-ubyte"; head -c 30000 "$data/train-labels-idx1-ubyte" >"$work/truncated/train-labels-idx1-ubyte"
check truncated "asyncps: .*truncated/train-labels-idx1-ubyte: truncated"
make_dir empty
rm "$work/empty/t10k-labels-idx1-ubyte"; : >"$work/empty/t10k-labels-idx1-ubyte"
check empty "asyncps: .*empty/t10k-labels-idx1-ubyte: .*empty"
make_dir magic
rm "$work/magic/t10k-images-idx3-ubyte"; cp "$data/t10k-labels-idx1-ubyte" "$work/magic/t10k-images-idx3-ubyte"
check magic "asyncps: .*magic/t10k-images-idx3-ubyte: .*magic"
make_dir mismatch
rm "$work/mismatch/t10k-labels-idx1-ubyte"; head -c 5008 "$data/t10k-labels-idx1-ubyte" >"$work/mismatch/t10k-labels-idx1-ubyte"
printf '\x00\x00\x13\x88' | dd of="$work/mismatch/t10k-labels-idx1-ubyte" bs=1 seek=4 conv=notrunc status=none  # header: 5000 labels
check mismatch "asyncps: .*(10000 images|5000 labels).*(5000|10000)"
make_dir missing_file
rm "$work/missing_file/train-images-idx3-ubyte"
check missing_file "asyncps: .*train-images-idx3-ubyte"
# a FIFO (or any file that is not a regular file) in place of a data file: refused, never read
# (a read would wait forever for a writer)
make_dir fifo
rm "$work/fifo/train-images-idx3-ubyte"; mkfifo "$work/fifo/train-images-idx3-ubyte"
check fifo "asyncps: .*fifo/train-images-idx3-ubyte: not a regular file" --stall_timeout 3
echo PASS
