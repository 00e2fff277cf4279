#!/usr/bin/env bash
# Builds slip and runs the whole test suite (unit tests, reference checks, end-to-end runs).
# Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# With ccache installed, the later builds of the same sources (scripts/check-python-install.sh's
# wheel and prefix builds) reuse these objects: paths relative to the checkout, any build dir.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# SLIP_BUILD_TESTS=ON explicitly: the setup command configures the same build/ without tests.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLIP_BUILD_TESTS=ON -DSLIP_BUILD_BENCH=ON "${launcher[@]}"
cmake --build "$BUILD" -j "$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"
