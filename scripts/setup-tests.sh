#!/usr/bin/env bash
# Fresh Debian 12, the README's second command: installs what the tests add
# (.ci/packages-test.txt, and .ci/packages-build.txt if the first command did not run), the
# S3 test server (s3rver from npm, scripts/install-test-servers.sh), then builds slip with its
# tests and runs them all (scripts/test.sh). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends $(grep -hv '^#' .ci/packages-build.txt .ci/packages-test.txt)
# The S3 tests' server: s3rver from npm (a real S3 implementation in Node.js), pinned.
command -v npm >/dev/null || $SUDO apt-get install -y --no-install-recommends nodejs npm
scripts/install-test-servers.sh
scripts/test.sh "$@"
