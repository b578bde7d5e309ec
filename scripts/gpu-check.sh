#!/usr/bin/env bash
# GPU checks of libasyncps in one call, for a machine with a CUDA device:
#   1. the GPU backend tests (test_nn_gpu: GPU == CPU on random data at batch 1, 7, 128; training)
#   2. mpirun -np 2 and -np 3 mnist_async --device gpu (a short async training job each)
#   3. the training step at batch 128 and 1024: bench_gpu_step vs PyTorch (bench/torch_mnist_gpu.py)
#      on the same GPU and model, then a short table.
# Everything (logs, the table) goes under $OUT if set, else build/gpu-check/.
#
# usage: scripts/gpu-check.sh [BIN_DIR]
#          BIN_DIR (default: build/gpu-carry/bin, else build/gpu/bin) holds test_nn_gpu, mnist_async,
#          bench_gpu_step. If none of these exists and nvcc does, configures and builds build/gpu.
#        scripts/gpu-check.sh --prepare BUILD_DIR
#          On the build machine: copies BUILD_DIR/bin's three binaries, the shared libraries a bare
#          GPU machine may lack, and a 25000-image MNIST subset into build/gpu-carry/ (~35 MB; the
#          device run carries at most 64 MiB), to run there with carry ["build/gpu-carry"].
#
# Carrying libboost_program_options: mnist_async links libboost_program_options.so.1.74.0 (and
# Open MPI's libmpi.so.40), which a GPU machine may not have. --prepare copies it (cp -L, the real
# file under its soname) into build/gpu-carry/lib, which this script puts on LD_LIBRARY_PATH; by
# hand: mkdir -p build/gpu-carry/lib && cp -L /usr/lib/x86_64-linux-gnu/libboost_program_options.so.1.74.0 build/gpu-carry/lib/
# Open MPI cannot be carried that way (mpirun, its plugins and helpers): without an mpirun on the
# GPU machine step 2 is skipped and says so. Note also that a build with ASYNCPS_NATIVE=ON uses
# this machine's instruction set: configure the carried build with -DASYNCPS_NATIVE=OFF.
#
# cuDNN and cuBLAS are found, in this order, in build/gpu-carry/lib, the lib/ folders of Python's
# nvidia.cudnn / nvidia.cublas / nvidia.cuda_runtime / nvidia.cu13 packages (pip wheels, e.g.
# beside torch), /usr/local/cuda/lib64; `ldd` says what is still missing before anything runs.
# The binaries need libcublas.so.13 and libcudnn.so.9 (CUDA 13 build) and a driver for CUDA 13.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=$REPO/build/gpu-carry
BINS=(test_nn_gpu mnist_async bench_gpu_step)

if [ "${1:-}" = "--prepare" ]; then
  src=${2:?usage: gpu-check.sh --prepare BUILD_DIR}
  mkdir -p "$CARRY/bin" "$CARRY/lib" "$CARRY/mnist"
  for b in "${BINS[@]}"; do cp "$src/bin/$b" "$CARRY/bin/" || exit 1; done
  for lib in libboost_program_options.so.1.74.0; do
    p=$(ldd "$src/bin/mnist_async" | awk -v l="$lib" '$1 == l {print $3}')
    [ -n "$p" ] && cp -L "$p" "$CARRY/lib/$lib"
  done
  # MNIST subset: the first 25000 training images (5000 validation + 20000 train), all 10000 test.
  python3 - "$REPO/data/mnist" "$CARRY/mnist" 25000 <<'PY' || exit 1
import shutil, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item in (("train-images-idx3-ubyte", 784), ("train-labels-idx1-ubyte", 1)):
    with open(f"{src}/{name}", "rb") as f:
        magic, count = struct.unpack(">II", f.read(8))
        rest = f.read(8 if item == 784 else 0)  # rows, cols
        data = f.read(n * item)
    with open(f"{dst}/{name}", "wb") as f:
        f.write(struct.pack(">II", magic, min(n, count)) + rest + data)
for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
    shutil.copy(f"{src}/{name}", f"{dst}/{name}")
PY
  du -sh "$CARRY"
  echo "run on the GPU machine with carry [\"build/gpu-carry\"]: scripts/gpu-check.sh"
  exit 0
fi

RES=${OUT:-$REPO/build/gpu-check}
mkdir -p "$RES"
exec > >(tee "$RES/gpu-check.log") 2>&1
say() { printf '\n== %s\n' "$*"; }

# ---- binaries ----------------------------------------------------------------------------------
BIN=${1:-}
if [ -z "$BIN" ]; then
  for d in "$CARRY/bin" "$REPO/build/gpu/bin"; do [ -x "$d/test_nn_gpu" ] && { BIN=$d; break; }; done
fi
if [ -z "$BIN" ]; then
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
  if [ -z "$nvcc" ]; then echo "gpu-check: no binaries (build/gpu-carry/bin, build/gpu/bin) and no nvcc to build them"; exit 1; fi
  say "building build/gpu (nvcc $nvcc)"
  cmake -S "$REPO" -B "$REPO/build/gpu" -DASYNCPS_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" >"$RES/configure.log" 2>&1 &&
    cmake --build "$REPO/build/gpu" -j"$(nproc)" --target "${BINS[@]}" >"$RES/build.log" 2>&1 ||
    { tail -30 "$RES/configure.log" "$RES/build.log" 2>/dev/null; echo "gpu-check: build failed"; exit 1; }
  BIN=$REPO/build/gpu/bin
fi
echo "binaries: $BIN"

# ---- libraries ---------------------------------------------------------------------------------
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
# the list is most-preferred first; prepend in reverse so that the first stays first
for ((i=${#libdirs[@]}-1; i>=0; i--)); do [ -d "${libdirs[$i]}" ] && LD_LIBRARY_PATH=${libdirs[$i]}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; done
export LD_LIBRARY_PATH
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$RES/nvidia-smi.txt"

say "ldd: libraries not found"
missing=0
for b in "${BINS[@]}"; do
  nf=$(ldd "$BIN/$b" 2>&1 | grep "not found")
  if [ -n "$nf" ]; then missing=1; echo "$b:"; echo "$nf"; fi
done
[ "$missing" = 0 ] && echo "none"
ldd "$BIN/mnist_async" | grep -q "libboost_program_options.*not found" &&
  echo "note: carry libboost_program_options (scripts/gpu-check.sh --prepare, see the header of this script)"

declare -A STATUS
# ---- 1. tests ----------------------------------------------------------------------------------
say "test_nn_gpu"
"$BIN/test_nn_gpu" 2>&1 | tee "$RES/test_nn_gpu.txt"
rc=${PIPESTATUS[0]}
gpu_rc=$rc
case $rc in 0) STATUS[tests]=passed ;; 77) STATUS[tests]="skipped (no GPU)" ;; *) STATUS[tests]="FAILED (exit $rc)" ;; esac

# ---- 2. training under mpirun ------------------------------------------------------------------
DATA=$REPO/data/mnist
[ -f "$DATA/train-images-idx3-ubyte" ] || DATA=$CARRY/mnist
MPIRUN=$(command -v mpirun || command -v mpiexec || true)
for np in 2 3; do
  say "mpirun -np $np mnist_async --device gpu"
  if [ "$gpu_rc" = 77 ]; then STATUS[np$np]="skipped (no GPU)"; echo "${STATUS[np$np]}"; continue; fi
  if [ -z "$MPIRUN" ]; then STATUS[np$np]="skipped (no mpirun on this machine)"; echo "${STATUS[np$np]}"; continue; fi
  if [ ! -f "$DATA/train-images-idx3-ubyte" ]; then STATUS[np$np]="skipped (no MNIST data; --prepare makes a subset)"; echo "${STATUS[np$np]}"; continue; fi
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 \
    "$REPO/tests/app/check_training.sh" 0.80 -- \
    "$MPIRUN" --oversubscribe --bind-to none -x LD_LIBRARY_PATH -np "$np" "$BIN/mnist_async" --device gpu \
    --data_dir "$DATA" --training_steps 300 --train_limit 20000 --logdir "$RES/log_np$np" 2>&1 | tee "$RES/train_np$np.txt"
  rc=${PIPESTATUS[0]}
  acc=$(sed -n 's/^Done:.*test accuracy \([0-9.]*\).*/\1/p' "$RES/train_np$np.txt" | tail -1)
  [ "$rc" = 0 ] && STATUS[np$np]="passed (test accuracy $acc)" || STATUS[np$np]="FAILED (exit $rc)"
done

# ---- 3. benchmark ------------------------------------------------------------------------------
: >"$RES/bench_results.txt"
for batch in 128 1024; do
  say "bench_gpu_step $batch"
  "$BIN/bench_gpu_step" "$batch" 3 2>&1 | tee "$RES/bench_gpu_step_$batch.txt"
  grep '^RESULT' "$RES/bench_gpu_step_$batch.txt" >>"$RES/bench_results.txt"
done
say "torch_mnist_gpu.py"
if command -v python3 >/dev/null; then
  python3 "$REPO/bench/torch_mnist_gpu.py" --batch 128 1024 --seconds 3 2>&1 | tee "$RES/torch_mnist_gpu.txt"
  grep '^RESULT' "$RES/torch_mnist_gpu.txt" >>"$RES/bench_results.txt"
else
  echo "no python3: PyTorch comparison not run"
fi

# ---- summary -----------------------------------------------------------------------------------
say "summary"
{
  printf '%-28s %s\n' "GPU backend tests" "${STATUS[tests]}"
  printf '%-28s %s\n' "mpirun -np 2 --device gpu" "${STATUS[np2]}"
  printf '%-28s %s\n' "mpirun -np 3 --device gpu" "${STATUS[np3]}"
  echo
  printf '%-18s %6s %12s %14s\n' impl batch ms/step samples/s
  sed -n 's/^RESULT impl=\([^ ]*\) batch=\([0-9]*\) ms_per_step=\([0-9.]*\) samples_per_s=\([0-9]*\).*/\1 \2 \3 \4/p' \
    "$RES/bench_results.txt" | sort -k2,2n -k1,1 | while read -r impl b ms sps; do
    printf '%-18s %6s %12s %14s\n' "$impl" "$b" "$ms" "$sps"
  done
  echo "(asyncps-cudnn and torch-roundtrip both upload params+batch from host and download grads each step)"
} | tee "$RES/summary.txt"
case "${STATUS[tests]}${STATUS[np2]}${STATUS[np3]}" in *FAILED*) exit 1 ;; esac
exit 0
