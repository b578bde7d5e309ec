#!/usr/bin/env bash
# Private OpenBLAS (Debian's libopenblas0-pthread) for the PyTorch reference benchmark, without
# touching the system: `apt-get download` the .deb into build/openblas/ and `dpkg -x` it there.
# Prints the directory that holds its libblas.so.3; run torch with
#   LD_LIBRARY_PATH=<that dir> OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_mnist.py ...
# Usage: bench/setup-openblas.sh [DEST=build/openblas]   (idempotent; exit 1 if it cannot)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/openblas}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
libdir="$dest/root/usr/lib/$multiarch/openblas-pthread"
if [[ ! -e "$libdir/libblas.so.3" ]]; then
  if ! ls "$dest"/libopenblas0-pthread_*_"$arch".deb >/dev/null 2>&1; then
    # apt-get download writes into the current directory; it runs as _apt when it can, so the
    # directory must be writable by it (or apt falls back to root with a warning).
    (cd "$dest" && apt-get download libopenblas0-pthread) >&2 || {
      echo "setup-openblas: apt-get download libopenblas0-pthread failed (offline? try apt-get update)" >&2
      exit 1
    }
  fi
  deb=$(ls -t "$dest"/libopenblas0-pthread_*_"$arch".deb | head -1)
  rm -rf "$dest/root"
  dpkg -x "$deb" "$dest/root"
fi
[[ -e "$libdir/libblas.so.3" ]] || { echo "setup-openblas: no libblas.so.3 under $libdir" >&2; exit 1; }
echo "$libdir"
