#!/usr/bin/env bash
# A 12-bit libjpeg.so.62 (libjpeg-turbo 2.1 built with -DWITH_12BIT=1: same SONAME, same ABI
# generation, 12-bit samples) loaded under an existing build: slip refuses it with one message
# (docs/JPEG_ENGINE.md) instead of handing it 8-bit buffers, with and without
# SLIP_JPEG_INTERNALS=off. Builds the library once from ../shared/third_party into a scratch
# prefix (reused; ccache when present). Exit 77 (skipped) when ../shared is absent.
# Usage: scripts/test-jpeg-12bit.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${BUILD:-build}}
TARBALL=../shared/third_party/libjpeg-turbo-2.1.5.1.tar.xz
[ -f "$TARBALL" ] || { echo "skipped: $TARBALL is absent (the shared third_party sources)"; exit 77; }
SLIP=$(realpath "$BUILD/apps/slip/slip")
PREFIX=${SLIP_JPEG12_PREFIX:-${TMPDIR:-/tmp}/slip-libjpeg-turbo-2.1.5.1-12bit}
if [ ! -e "$PREFIX/lib/libjpeg.so.62" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  tar -xf "$TARBALL" -C "$scratch"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S "$scratch/libjpeg-turbo-2.1.5.1" -B "$scratch/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWITH_12BIT=1 \
    -DENABLE_STATIC=OFF "${launcher[@]}" >/dev/null
  cmake --build "$scratch/b" --target jpeg >/dev/null  # the library alone: no tools, no tests
  mkdir -p "$PREFIX/lib"
  cp -P "$scratch"/b/libjpeg.so* "$PREFIX/lib/"
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK" ${scratch:+"$scratch"}' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cache=$("$SLIP" convert examples/sample -o "$WORK/c" -q)
for internals in auto off; do
  export SLIP_JPEG_INTERNALS=$internals
  # --version reports the refusal and exits 0: it never hands the library a buffer.
  LD_LIBRARY_PATH=$PREFIX/lib "$SLIP" --version >"$WORK/v" 2>&1 || fail "--version exit $? (SLIP_JPEG_INTERNALS=$internals)"
  grep -q "libjpeg loaded: .* from $PREFIX/lib/libjpeg.so.62" "$WORK/v" || { cat "$WORK/v"; fail "not running with $PREFIX"; }
  grep -q '12-bit' "$WORK/v" || { cat "$WORK/v"; fail "--version does not name the 12-bit library"; }
  # Decoding: one message, exit 4 (this libjpeg cannot decode it), never "corrupt".
  for cmd in "verify $cache --decode" "bench $cache -p rrc -e 1 -b 4 --no-limit --checksum"; do
    set +e
    LD_LIBRARY_PATH=$PREFIX/lib "$SLIP" $cmd -q >"$WORK/out" 2>"$WORK/err"
    rc=$?
    set -e
    [ "$rc" = 4 ] || { cat "$WORK/err"; fail "slip $cmd: exit $rc, want 4 (SLIP_JPEG_INTERNALS=$internals)"; }
    [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q '12-bit' "$WORK/err" && ! grep -qi corrupt "$WORK/err" ||
      { cat "$WORK/err"; fail "slip $cmd: not one message naming the 12-bit library"; }
  done
done
echo "ok: the 12-bit libjpeg.so.62 from $PREFIX is refused with one message (exit 4), internals auto and off"
