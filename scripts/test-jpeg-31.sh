#!/usr/bin/env bash
# libjpeg-turbo 3.1.4.1 built from ../shared/third_party (issue 43, item 4), two ways:
#  (a) loaded under the existing (Debian-headers) build with LD_LIBRARY_PATH: the 3.x ABI turns the
#      entropy hook off with a reason, and the pixel suite passes on the public-API path;
#  (b) slip compiled against it (-DCMAKE_PREFIX_PATH=<prefix>, -DSLIP_LIBJPEG_TURBO_SOURCE_DIR=<its
#      source tree>, so jpegint.h is 3.1's own): configure reports matching headers, the hook is on,
#      and the LibjpegInternals self-test and the pixel tests pass.
# Lean for its CI stage: the library alone (no tools, tests, TurboJPEG or static library), slip's
# unit-test target alone, ccache for both; the scratch directory is reused between runs.
# Exit 77 (skipped) with the reason when ../shared is absent.
# Usage: scripts/test-jpeg-31.sh [build dir]   (SLIP_JPEG31_DIR: the libjpeg-turbo scratch directory;
#        SLIP_JPEG31_BUILD: slip's build against it, default <build dir>-libjpeg31)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${BUILD:-build}}
VERSION=3.1.4.1
TARBALL=../shared/third_party/libjpeg-turbo-$VERSION.tar.xz
[ -f "$TARBALL" ] || { echo "skipped: $TARBALL is absent (the shared third_party sources)"; exit 77; }
SCRATCH=${SLIP_JPEG31_DIR:-${TMPDIR:-/tmp}/slip-libjpeg-turbo-$VERSION}
SRC=$SCRATCH/libjpeg-turbo-$VERSION PREFIX=$SCRATCH/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
t0=$SECONDS

if [ ! -e "$PREFIX/lib/libjpeg.so.62" ] || [ ! -e "$PREFIX/lib/pkgconfig/libjpeg.pc" ] || [ ! -e "$SRC/src/jpegint.h" ]; then
  rm -rf "$SCRATCH"
  mkdir -p "$SCRATCH"
  tar -xf "$TARBALL" -C "$SCRATCH"
  # Without nasm libjpeg-turbo builds its C code only (it says so): the ABI and the structures slip reads are the same.
  cmake -S "$SRC" -B "$SCRATCH/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DENABLE_STATIC=OFF -DWITH_TOOLS=OFF -DWITH_TESTS=OFF \
    -DWITH_TURBOJPEG=OFF -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib "${launcher[@]}" >"$SCRATCH/configure.log" ||
    { cat "$SCRATCH/configure.log"; fail "libjpeg-turbo $VERSION: configure"; }
  cmake --build "$SCRATCH/b" >"$SCRATCH/build.log" || { tail -30 "$SCRATCH/build.log"; fail "libjpeg-turbo $VERSION: build"; }
  cmake --install "$SCRATCH/b" >/dev/null
fi
echo "libjpeg-turbo $VERSION in $PREFIX ($((SECONDS - t0)) s)"
# The pixel suite: the unit tests of the JPEG engine and its decoders, and the end-to-end pixel comparisons.
SUITES='LibjpegInternals|LibjpegInternalsDeathTest|LibjpegErrors|JpegRegion|JpegScans|JpegRestarts|HuffmanDecoder|DecodeEngine|DecodePixels|ImageDecode|ImageJpegHeader'
PIXEL_CTEST="^(($SUITES)\\.|[A-Za-z]+/Planar|Planar|integration\\.(pipeline_identical|jpeg_restarts|bench_decode)\$)"
PIXEL_GTEST="$(echo "$SUITES" | sed 's/|/.*:/g').*:*Planar*"

# (a) 3.1 loaded under this build: the 3.x ABI generation turns the hook off (with its reason), same pixels.
SLIP=$(realpath "$BUILD/apps/slip/slip")
LD_LIBRARY_PATH=$PREFIX/lib "$SLIP" --version >"$SCRATCH/version-a" 2>&1 || { cat "$SCRATCH/version-a"; fail "(a) slip --version"; }
grep -q "libjpeg loaded: .*$PREFIX/lib/libjpeg.so.62" "$SCRATCH/version-a" || { cat "$SCRATCH/version-a"; fail "(a) not running with $PREFIX"; }
LD_LIBRARY_PATH=$PREFIX/lib ctest --test-dir "$BUILD" --output-on-failure -j 2 -R "$PIXEL_CTEST" >"$SCRATCH/tests-a.log" 2>&1 ||
  { tail -40 "$SCRATCH/tests-a.log"; fail "(a) pixel tests with $VERSION loaded under $BUILD"; }
echo "(a) $(grep -m1 'tests passed' "$SCRATCH/tests-a.log") with $VERSION loaded under $BUILD; $(grep -m1 'JPEG entropy hook' "$SCRATCH/version-a" | sed 's/^ *//')"

# (b) slip compiled against 3.1, jpegint.h from its own source tree: the hook must be on.
# Beside the build (build-libjpeg31/ in the checkout by default): the same relative source paths, so
# ccache serves every file that does not include libjpeg's headers from the main build's entries.
B31=${SLIP_JPEG31_BUILD:-$(dirname "$BUILD")/$(basename "$BUILD")-libjpeg31}
cmake -S . -B "$B31" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLIP_BUILD_TESTS=ON -DSLIP_BUILD_BENCH=ON -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DSLIP_LIBJPEG_TURBO_SOURCE_DIR="$SRC" "${launcher[@]}" >"$SCRATCH/configure-b.log" 2>&1 ||
  { tail -30 "$SCRATCH/configure-b.log"; fail "(b) configure against $PREFIX"; }
grep -q "libjpeg headers: jpeglib.h $VERSION from $PREFIX/include, jpegint.h from the source tree $SRC" "$SCRATCH/configure-b.log" ||
  { grep -i jpeg "$SCRATCH/configure-b.log"; fail "(b) configure did not pair $VERSION's jpeglib.h and jpegint.h"; }
! grep -q "internals not compiled in" "$SCRATCH/configure-b.log" || fail "(b) configure compiled the public API only"
CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 cmake --build "$B31" --target slip slip_unit_tests >"$SCRATCH/build-b.log" 2>&1 ||
  { tail -30 "$SCRATCH/build-b.log"; fail "(b) build against $PREFIX"; }
"$B31/apps/slip/slip" --version >"$SCRATCH/version-b" 2>&1 || { cat "$SCRATCH/version-b"; fail "(b) slip --version"; }
grep -q "libjpeg loaded: .*$PREFIX/lib/libjpeg.so.62" "$SCRATCH/version-b" || { cat "$SCRATCH/version-b"; fail "(b) not running with $PREFIX"; }
grep -q "JPEG entropy hook: on" "$SCRATCH/version-b" || { cat "$SCRATCH/version-b"; fail "(b) the hook is off against $VERSION's own headers"; }
"$B31/tests/slip_unit_tests" --gtest_filter="$PIXEL_GTEST" >"$SCRATCH/tests-b.log" 2>&1 ||
  { tail -40 "$SCRATCH/tests-b.log"; fail "(b) self-test and pixel tests against $VERSION"; }
grep -q '^\[  PASSED  \]' "$SCRATCH/tests-b.log" || fail "(b) no tests ran"
echo "(b) built against $VERSION, hook on; $(grep -m1 '^\[  PASSED  \]' "$SCRATCH/tests-b.log")"
echo "ok: libjpeg-turbo $VERSION, loaded and compiled against, in $((SECONDS - t0)) s"
