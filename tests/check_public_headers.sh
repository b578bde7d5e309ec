#!/usr/bin/env bash
# usage: check_public_headers.sh DIR...
# API hygiene of the public headers (include/asyncps/*.h and the generated version.h): they may
# include the standard library, <mpi.h> and each other, but nothing from Eigen, CUDA/cuDNN/cuBLAS,
# Boost, Catch2, or Open MPI's own headers (mpi-ext.h, ompi/…, opal/…, openmpi/…, mpi_portable_platform.h),
# and no private header of lib/asyncps (every one is included by its folder: "transport/window.h").
# No internal (detail::) type appears in a function's signature: a line naming detail:: with a
# parenthesis (a declaration of a call) fails; a private data member's pointer to opaque state is
# the only use (`detail::TableState* state_;`).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR..."; exit 2; }
headers=()
for d in "$@"; do headers+=("$d"/asyncps/*.h); done
bad='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*/)?(Eigen|unsupported/Eigen|eigen3|cuda|cudnn|cublas|curand|thrust|cub/|boost|catch2|mpi-ext|mpif|ompi|opal|orte|openmpi|mpi_portable_platform|check\.h|window\.h|control_block\.h|(core|transport|diagnostics|checkpoint|runtime|server|worker)/)'
if grep -nE "$bad" "${headers[@]}"; then
  echo "FAIL: a public header includes one of the headers above"
  exit 1
fi
internal=$(for h in "${headers[@]}"; do sed -E 's#//.*##' "$h" | { grep -nE 'detail::[A-Za-z_:]+.*\(|\(.*detail::' || true; } | sed "s#^#$h:#"; done)
if [ -n "$internal" ]; then
  echo "$internal"
  echo "FAIL: a public header names an internal (detail::) type in a signature"
  exit 1
fi
# Only standard, <mpi.h> or asyncps/ includes are expected; print them for the record.
grep -hE '^[[:space:]]*#[[:space:]]*include' "${headers[@]}" | sort | uniq -c
echo "PASS: ${#headers[@]} public headers include no Eigen, CUDA, Boost or Open MPI-specific header, and name no detail:: type in a signature"
