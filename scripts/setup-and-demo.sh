#!/usr/bin/env bash
# Fresh Debian 12: installs the dependencies, builds slip, converts the bundled sample of real
# photos (examples/sample) and shows `info` and `verify` of the result.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $(grep -v '^#' .ci/packages.txt)
# The S3 tests' server (s3rver, npm), so that scripts/test.sh runs every test.
command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends nodejs npm
scripts/install-test-servers.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
out=${SLIPSTREAM_CACHE_DIR:-$PWD/demo-caches}
cache=$(build/apps/slip/slip convert examples/sample -o "$out")
build/apps/slip/slip info "$cache"
build/apps/slip/slip verify "$cache"
