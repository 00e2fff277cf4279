#!/usr/bin/env bash
# Builds slip and runs the whole test suite (unit tests, reference checks, end-to-end runs).
# Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# SLIP_BUILD_TESTS=ON explicitly: the setup command configures the same build/ without tests.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLIP_BUILD_TESTS=ON -DSLIP_BUILD_BENCH=ON
cmake --build "$BUILD" -j "$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"
