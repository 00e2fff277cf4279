#!/usr/bin/env bash
# ctest: every fuzz target (built as a plain replay driver) over its seeds and regressions.
# SLIP_EMULATOR (a cross build's qemu-aarch64, see tests/CMakeLists.txt) runs the drivers.
set -euo pipefail
bin=$1
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
bash "$SLIP_SOURCE_DIR/tests/fuzz/seeds.sh" "$seeds"
for t in $(grep -o '^fuzz_[a-z0-9_]*' "$SLIP_SOURCE_DIR/tests/fuzz/targets.txt"); do
  echo -n "$t: "
  ${SLIP_EMULATOR:-} "$bin/replay_$t" "$seeds/$t" "$SLIP_SOURCE_DIR/tests/data/regress/$t"
done
