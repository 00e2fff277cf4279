#!/usr/bin/env bash
# The JPEG engine's public-API path (docs/JPEG_ENGINE.md), as a process gets it when the
# libjpeg it loads fails the internals' checks: the unit suite and the end-to-end tests that
# compare pixels, run again with SLIP_JPEG_INTERNALS=off on an existing build.
# Then libjpeg-turbo 3.1.4.1 loaded and compiled against (scripts/test-jpeg-31.sh).
# Usage: scripts/test-jpeg-fallback.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${BUILD:-build}}
export SLIP_JPEG_INTERNALS=off
# The switch reaches the engine: slip says the hook is off, and why.
"$BUILD/apps/slip/slip" --version | grep -q 'JPEG entropy hook: off: turned off by the program' || {
  echo "slip --version does not report the forced public-API path" >&2
  exit 1
}
# Every unit test (gtest names), the fuzz corpora replayed, and the pixel end-to-end tests.
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" \
  -R '^([A-Z][A-Za-z0-9]*\.|All/|Fixtures/|fuzz_replay$|integration\.(pipeline_identical|bench_decode|jpeg_restarts|imagefolder_e2e|bad_input|yuv420|jpeg_engine)$|python\.)'
# libjpeg-turbo 3.1.4.1 from ../shared/third_party: loaded under this build, and compiled against
# (its own jpegint.h: the hook on). Skipped (77) without ../shared; other failures fail the stage.
rc=0
SLIP_JPEG_INTERNALS=auto scripts/test-jpeg-31.sh "$BUILD" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || exit "$rc"
