#!/usr/bin/env bash
# Every GPU check of libasyncps in one call, for a machine with a CUDA device; one table at the end.
#   1. tests: test_nn_gpu (both kernel sets, graph and call by call, resident data, == CPU backend),
#      test_nn on this CPU, and the PyTorch models on the GPU (tests/python/test_torch_gpu.py)
#   2. training: mpirun mnist_async --device gpu, 1 server + W workers on one GPU, W = 1, 2, 4
#      (samples/s, the GPU's own time a step, the transport's share of a step); W = 2 and 4 again
#      under the CUDA MPS daemon where the machine has one; 1,000 steps of W = 1 for the accuracy
#   3. the step benchmark at batch 128, 1024 and 4096: bench_gpu_step (every configuration) against
#      every PyTorch variant of bench/torch_mnist_gpu.py (eager, round trip, CUDA graph, compile)
#   4. apps/python/mnist_torch.py --device cuda under mpirun (the PyTorch example on the GPU)
# Logs and the table go to a work folder; under $OUT (the device runner's) only summary.txt,
# gpu-check.log and gpu-check.tgz (every log, the timeline), refreshed after each part.
#
# usage: scripts/gpu-check.sh [BIN_DIR]
#          BIN_DIR (default build/gpu-carry/bin, else build/gpu/bin) holds the binaries.
#          Exits 77 (one line) where no CUDA device is visible, 1 when a check failed, else 0.
#          GPU_CHECK_PARTS (default "tests train mps bench torch example") runs only those parts;
#          "cpu" adds test_nn (the CPU backend and the fused arithmetic, on that machine's CPU).
#        scripts/gpu-check.sh --prepare BUILD_DIR
#          On the build machine (configure BUILD_DIR with -DASYNCPS_WITH_CUDA=ON
#          -DCMAKE_CUDA_ARCHITECTURES=90-real and build it first): fills
#          build/gpu-carry/ with the binaries, the shared libraries a bare GPU machine lacks
#          (libboost_program_options), the Python module, MNIST (gzipped) and a relocatable Open
#          MPI (scripts/ompi-bundle.sh), ~40 MB: carry ["build/gpu-carry"] and run
#          `scripts/gpu-check.sh` there.
# cuDNN and cuBLAS are found, in this order, in build/gpu-carry/lib, the lib/ folders of Python's
# nvidia.* packages (the wheels beside torch), /usr/local/cuda/lib64.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=$REPO/build/gpu-carry
BINS=(test_nn_gpu test_nn mnist_async bench_gpu_step bench_gpu_kernels bench_cpu_step)

if [ "${1:-}" = "--prepare" ]; then
  src=${2:?usage: gpu-check.sh --prepare BUILD_DIR}
  rm -rf "$CARRY"
  mkdir -p "$CARRY/bin" "$CARRY/lib" "$CARRY/mnist" "$CARRY/python/asyncps"
  for b in "${BINS[@]}"; do cp "$src/bin/$b" "$CARRY/bin/" || exit 1; done
  p=$(ldd "$src/bin/mnist_async" | awk '$1 == "libboost_program_options.so.1.74.0" {print $3}')
  [ -n "$p" ] && cp -L "$p" "$CARRY/lib/"
  cp "$REPO"/python/asyncps/*.py "$CARRY/python/asyncps/" &&
    cp "$src"/python/asyncps/_asyncps*.so "$CARRY/python/asyncps/" 2>/dev/null ||
    echo "gpu-check: no Python module in $src/python (the PyTorch checks will be skipped there)"
  # the module's sources, libasyncps and the MPI headers, to build the module there for another Python
  mkdir -p "$CARRY/pysrc/mpi"
  cp -r "$REPO/python/src" "$CARRY/pysrc/src" && cp -r "$REPO/include" "$CARRY/pysrc/include" &&
    cp "$src/include/asyncps/version.h" "$CARRY/pysrc/include/asyncps/" && cp "$src/lib/libasyncps.a" "$CARRY/pysrc/" &&
    cp "$(mpicxx --showme:incdirs | awk '{print $1}')"/*.h "$CARRY/pysrc/mpi/" || exit 1
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    gzip -c "$REPO/data/mnist/$f" >"$CARRY/mnist/$f.gz" || exit 1
  done
  "$REPO/scripts/ompi-bundle.sh" "$CARRY/ompi" || exit 1
  du -sh "$CARRY"
  echo "run on the GPU machine with carry [\"build/gpu-carry\"]: scripts/gpu-check.sh"
  exit 0
fi

# ---- environment ---------------------------------------------------------------------------------
[ -f "$CARRY/ompi/env.sh" ] && . "$CARRY/ompi/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
libdirs=("$CARRY/lib")
if command -v python3 >/dev/null; then
  while IFS= read -r d; do libdirs+=("$d"); done < <(python3 - <<'PY' 2>/dev/null
import importlib, os
for mod in ("nvidia.cudnn", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cu13"):
    try:
        m = importlib.import_module(mod)
    except Exception:
        continue
    for p in getattr(m, "__path__", []):
        if os.path.isdir(os.path.join(p, "lib")):
            print(os.path.join(p, "lib"))
PY
)
fi
libdirs+=(/usr/local/cuda/lib64)
for ((i=${#libdirs[@]}-1; i>=0; i--)); do [ -d "${libdirs[$i]}" ] && LD_LIBRARY_PATH=${libdirs[$i]}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; done
export LD_LIBRARY_PATH

BIN=${1:-}
if [ -z "$BIN" ]; then
  for d in "$CARRY/bin" "$REPO/build/gpu/bin"; do [ -x "$d/test_nn_gpu" ] && { BIN=$d; break; }; done
fi
[ -n "$BIN" ] || { echo "gpu-check: no binaries (build/gpu-carry/bin, build/gpu/bin): build with CUDA and run --prepare"; exit 1; }

# no GPU: one line, 77 (skipped), before anything else runs
"$BIN/test_nn_gpu" --list-tests >/dev/null 2>&1  # (77 exactly when no device is visible)
if [ $? = 77 ]; then
  echo "gpu-check: no CUDA device is visible here: nothing checked"
  exit 77
fi

WORK=$(mktemp -d /tmp/gpu-check.XXXXXX)
RES=${OUT:-$REPO/build/gpu-check}
mkdir -p "$RES"
exec > >(tee "$WORK/gpu-check.log") 2>&1
PARTS=" ${GPU_CHECK_PARTS:-tests train mps bench torch example} "
part() { [[ $PARTS == *" $1 "* ]]; }
say() { printf '\n== %s  (%s)\n' "$*" "$(date +%T)"; }
publish() {  # what comes back: the table, the log, every file of the work folder
  cp "$WORK/gpu-check.log" "$RES/" 2>/dev/null
  [ -f "$WORK/summary.txt" ] && cp "$WORK/summary.txt" "$RES/"
  tar -czf "$RES/gpu-check.tgz" --exclude=./mnist -C "$WORK" . 2>/dev/null
}
declare -A ROW
FAILED=0
status() {  # status NAME RC [DETAIL]
  case $2 in
    0) ROW[$1]="passed${3:+ ($3)}" ;;
    77) ROW[$1]="skipped${3:+ ($3)}" ;;
    124) ROW[$1]="FAILED (timed out)"; FAILED=1 ;;
    *) ROW[$1]="FAILED (exit $2)${3:+ ($3)}"; FAILED=1 ;;
  esac
}

say "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$WORK/gpu.txt"
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | sed 's/\(Flags:\).*\(avx512f\).*/\1 ... \2 .../' | head -3
python3 --version 2>&1
echo "binaries: $BIN"
for b in "${BINS[@]}"; do ldd "$BIN/$b" | grep "not found" | sed "s/^/$b: /"; done

DATA=$WORK/mnist
mkdir -p "$DATA"
if [ -f "$REPO/data/mnist/train-images-idx3-ubyte" ]; then DATA=$REPO/data/mnist
else for f in "$CARRY"/mnist/*.gz; do gunzip -c "$f" >"$DATA/$(basename "$f" .gz)"; done; fi
MPIRUN=$(command -v mpirun || true)
MPI=("$MPIRUN" --oversubscribe --bind-to none -x LD_LIBRARY_PATH -x PATH -x PYTHONPATH)

# ---- 1. tests ----------------------------------------------------------------------------------
# The Python module: the carried one where this Python is the build machine's, else built here
# from the carried sources (python/src, libasyncps.a, the MPI headers) with this Python's headers,
# pybind11 and g++.
build_module() {
  local inc pyb suffix mpilib out=$WORK/python/asyncps
  inc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])") || return 1
  pyb=$(python3 -c "import pybind11; print(pybind11.get_include())" 2>/dev/null) || return 1
  suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  mpilib=$(dirname "$(find "$CARRY/ompi" -name 'libmpi.so.40' | head -1)")
  [ -f "$inc/Python.h" ] && command -v g++ >/dev/null && [ -f "$CARRY/pysrc/libasyncps.a" ] || return 1
  mkdir -p "$out" "$WORK/pyobj" && cp "$REPO"/python/asyncps/*.py "$out/" || return 1
  ls "$CARRY"/pysrc/src/*.cpp | timeout 300 xargs -P "$(nproc)" -I{} sh -c 'g++ -std=c++20 -O2 -fPIC -fvisibility=hidden -pthread -DOMPI_SKIP_MPICXX=1 \
      -I"$1" -I"$2" -I"$3/include" -I"$3/mpi" -I"$3/src" -c "$4" -o "$5/$(basename "$4" .cpp).o"' \
      _ "$inc" "$pyb" "$CARRY/pysrc" {} "$WORK/pyobj" || return 1
  timeout 60 g++ -shared -pthread -o "$out/_asyncps$suffix" "$WORK"/pyobj/*.o "$CARRY/pysrc/libasyncps.a" \
    -L"$mpilib" -l:libmpi.so.40 -Wl,-rpath,"$mpilib"
}
pyok=0
if (cd / && PYTHONPATH=$CARRY/python timeout 60 python3 -c "import asyncps" >"$WORK/import.txt" 2>&1); then
  export PYTHONPATH=$CARRY/python${PYTHONPATH:+:$PYTHONPATH}
  pyok=1
elif build_module >"$WORK/build_module.txt" 2>&1 &&
     (cd / && PYTHONPATH=$WORK/python timeout 60 python3 -c "import asyncps" >"$WORK/import.txt" 2>&1); then
  export PYTHONPATH=$WORK/python${PYTHONPATH:+:$PYTHONPATH}
  pyok=1
  echo "the Python module was built here for $(python3 --version)"
else
  tail -5 "$WORK/build_module.txt" 2>/dev/null
fi
if part tests; then
say "test_nn_gpu"
timeout 300 "$BIN/test_nn_gpu" 2>&1 | tee "$WORK/test_nn_gpu.txt" | tail -15
status test_nn_gpu "${PIPESTATUS[0]}"
if part cpu; then
  say "test_nn (the CPU backend, every CPU level this CPU runs, the fused arithmetic)"
  timeout 300 "$BIN/test_nn" --success "[cpu-levels]" 2>&1 | grep -E "cannot run|passed|failed" | tail -3
  timeout 300 "$BIN/test_nn" 2>&1 | tee "$WORK/test_nn.txt" | tail -3
  status test_nn "${PIPESTATUS[0]}"
  say "bench_cpu_step --compare (every CPU level and PyTorch on 1 thread, batch 32/128/1024)"
  timeout 300 "$BIN/bench_cpu_step" --compare --rounds 1 --seconds 1 --torch "$REPO/bench/torch_mnist.py" \
    --python python3 --data_dir "$DATA" 2>&1 | tee "$WORK/bench_cpu_step.txt" | tail -18
fi

say "PyTorch models on the GPU (tests/python/test_torch_gpu.py)"
if [ -z "$MPIRUN" ]; then ROW[torch_test]="skipped (no mpirun)"
elif [ "$pyok" != 1 ]; then
  ROW[torch_test]="skipped (asyncps does not import here: $(tail -1 "$WORK/import.txt"))"
else
  timeout 300 "${MPI[@]}" -np 2 python3 "$REPO/tests/python/test_torch_gpu.py" 2>&1 | tee "$WORK/test_torch_gpu.txt" | tail -15
  status torch_test "${PIPESTATUS[0]}"
fi
echo "${ROW[torch_test]}"
publish
fi

# ---- 2. training -------------------------------------------------------------------------------
# train W STEPS TAG [extra flags]: fills ROW[train_TAG] with samples/s, accuracy and the GPU's and
# the transport's share of the chief's steps
train() {
  local W=$1 steps=$2 tag=$3; shift 3
  local log=$WORK/train_$tag.txt
  say "mnist_async --device gpu: 1 server + $W worker(s), $steps steps ($tag)"
  if [ -z "$MPIRUN" ]; then ROW[train_$tag]="skipped (no mpirun)"; return; fi
  timeout 240 "${MPI[@]}" -np $((W + 1)) "$BIN/mnist_async" --device gpu --data_dir "$DATA" \
    --training_steps "$steps" --log_every 1000 --verbose --logdir "$WORK/log_$tag" "$@" >"$log" 2>&1
  local rc=$?
  grep -E "^(worker 0|Done|After [0-9]+ global)" "$log" | tail -4
  local sps acc verbose
  sps=$(sed -n 's/^Done:.* \([0-9]*\) samples\/s.*/\1/p' "$log" | tail -1)
  acc=$(sed -n 's/^Done:.*test accuracy \([0-9.]*\).*/\1/p' "$log" | tail -1)
  # worker 0: N local steps in T s: compute C s (the GPU's own time G s), pull P s, push Q s, ...
  verbose=$(grep -E "^worker 0: [0-9]+ local steps" "$log" | head -1)
  local share
  share=$(echo "$verbose" | awk '{
    for (i = 1; i <= NF; i++) {
      if ($i == "local") n = $(i - 1); if ($i == "in" && !t) t = $(i + 1);
      if ($i == "time") g = $(i + 1); if ($i == "pull") p = $(i + 1); if ($i == "push") q = $(i + 1) }
    if (n > 0 && t > 0) printf "%.1f us a step, GPU %.1f us, transport %.1f%%", 1e6 * t / n, 1e6 * g / n, 100 * (p + q) / t }')
  if [ "$rc" = 0 ]; then ROW[train_$tag]="$sps samples/s, test accuracy $acc; $share"
  else ROW[train_$tag]="FAILED (exit $rc)"; FAILED=1; tail -5 "$log"; fi
  echo "${ROW[train_$tag]}"
  publish
}
if part train; then
  train 1 20000 w1 --timeline "$WORK/timeline_w1.json"
  train 2 20000 w2
  train 4 20000 w4
  train 1 1000 w1_1000steps
  train 1 20000 w1_overlap --overlap            # the next claim and pull in flight during the GPU step
  train 1 5000 w1_cudnn --gpu_kernels cudnn     # the cuDNN kernels, to compare
fi
MPS_NOTE="not run"
part mps && MPS_NOTE="no nvidia-cuda-mps-control on this machine"
if part mps && command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps_pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps_log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if timeout 20 nvidia-cuda-mps-control -d; then
    sleep 1
    MPS_NOTE="MPS daemon started"
    train 2 20000 w2_mps
    train 4 20000 w4_mps
    echo quit | timeout 20 nvidia-cuda-mps-control
  else
    MPS_NOTE="nvidia-cuda-mps-control -d failed (exit $?)"
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
echo "MPS: $MPS_NOTE"

# ---- 3. step benchmark -------------------------------------------------------------------------
: >"$WORK/bench_results.txt"
part bench && for batch in 128 1024 4096; do
  say "bench_gpu_kernels $batch (the fused step's passes, GPU time each)"
  timeout 60 "$BIN/bench_gpu_kernels" "$batch" 2>&1 | tee "$WORK/bench_gpu_kernels_$batch.txt"
  say "bench_gpu_step $batch"
  timeout 120 "$BIN/bench_gpu_step" "$batch" 1 2>&1 | tee "$WORK/bench_gpu_step_$batch.txt" | grep -E "RESULT|FAILED|forward"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { ROW[bench_$batch]="FAILED (exit $rc)"; FAILED=1; }
  grep -E '^(RESULT|FAILED)' "$WORK/bench_gpu_step_$batch.txt" >>"$WORK/bench_results.txt"
done
publish
if part torch; then
  say "bench/torch_mnist_gpu.py"
  timeout 200 python3 "$REPO/bench/torch_mnist_gpu.py" --batch 128 1024 4096 --seconds 0.5 2>&1 | tee "$WORK/torch_mnist_gpu.txt" |
    grep -E "^(RESULT|SKIP|BEST|torch)"
  grep -E '^(RESULT|SKIP)' "$WORK/torch_mnist_gpu.txt" >>"$WORK/bench_results.txt"
  publish
fi

# ---- 4. the PyTorch example on the GPU ---------------------------------------------------------
if part example; then
say "apps/python/mnist_torch.py --device cuda"
if [ "$pyok" = 1 ]; then
  timeout 240 "${MPI[@]}" -np 2 python3 "$REPO/apps/python/mnist_torch.py" --device cuda --steps 1000 \
    --data_dir "$DATA" 2>&1 | tee "$WORK/mnist_torch_cuda.txt" | tail -4
  status torch_example "${PIPESTATUS[0]}" "$(grep -io "test accuracy [0-9.]*" "$WORK/mnist_torch_cuda.txt" | tail -1)"
else
  ROW[torch_example]="skipped (asyncps does not import here: $(tail -1 "$WORK/import.txt"))"
fi
fi

# ---- summary -----------------------------------------------------------------------------------
{
  echo "GPU check: $(cat "$WORK/gpu.txt" 2>/dev/null), $(date -u +%F)"
  printf '%-44s %s\n' "test_nn_gpu (GPU == CPU, every configuration)" "${ROW[test_nn_gpu]:-not run}"
  [ -n "${ROW[test_nn]:-}" ] && printf '%-44s %s\n' "test_nn (CPU backend, fused arithmetic)" "${ROW[test_nn]}"
  printf '%-44s %s\n' "PyTorch models on the GPU (test_torch_gpu)" "${ROW[torch_test]:-not run}"
  printf '%-44s %s\n' "mnist_torch.py --device cuda, 1000 steps" "${ROW[torch_example]:-not run}"
  echo
  echo "mnist_async --device gpu, batch 128, 1 server + W workers on one GPU:"
  for t in w1 w1_overlap w1_cudnn w2 w4 w2_mps w4_mps w1_1000steps; do
    [ -n "${ROW[train_$t]:-}" ] && printf '  %-16s %s\n' "$t" "${ROW[train_$t]}"
  done
  echo "  MPS: $MPS_NOTE"
  echo
  echo "training step (params in, gradient out, host SGD), ms a step; x = best PyTorch / this:"
  python3 - "$WORK/bench_results.txt" <<'PY'
import re, sys
rows, skips = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"RESULT impl=(\S+) batch=(\d+) ms_per_step=([\d.]+)", line)
    if m:
        rows.setdefault(int(m[2]), {})[m[1]] = float(m[3])
    elif line.strip():
        skips.append(line.strip())
for b in sorted(rows):
    r = rows[b]
    torch = {k: v for k, v in r.items() if k.startswith("torch")}
    best_t = min(torch.items(), key=lambda kv: kv[1]) if torch else None
    print(f"  batch {b}" + (f": best PyTorch {best_t[0]} {best_t[1]:.4f} ms" if best_t else ": no PyTorch figure"))
    for k, v in sorted(r.items(), key=lambda kv: kv[1]):
        ratio = f"{best_t[1] / v:6.2f}x" if best_t else ""
        print(f"    {k:36s} {v:9.4f} ms {b * 1e3 / v:12.0f} samples/s  {ratio}")
for s in skips:
    print("  " + s)
PY
} | tee "$WORK/summary.txt"
publish
[ "$FAILED" = 0 ] || exit 1
exit 0
