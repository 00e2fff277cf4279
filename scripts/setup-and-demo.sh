#!/usr/bin/env bash
# Fresh Debian 12, the README's first command: installs only what building and running slip
# needs (.ci/packages-build.txt), builds slip without the test tree, converts the bundled sample
# of real photos (examples/sample) and shows `info` and `verify` of the result.
# Usage: scripts/setup-and-demo.sh [--demo-only]
#   --demo-only  skip the installation and the build: run the demo with $SLIP (default
#                build/apps/slip/slip); tests/integration/readme_commands.sh runs it so.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != --demo-only ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $(grep -v '^#' .ci/packages-build.txt)
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLIP_BUILD_TESTS=OFF
  cmake --build build -j "$(nproc)"
fi
slip=${SLIP:-build/apps/slip/slip}
out=${SLIPSTREAM_CACHE_DIR:-$PWD/demo-caches}
cache=$("$slip" convert examples/sample -o "$out")
"$slip" info "$cache"
"$slip" verify "$cache"
