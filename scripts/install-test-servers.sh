#!/usr/bin/env bash
# Installs the servers the remote-source tests start on 127.0.0.1 that Debian does not package:
# s3rver (npm), into ${XDG_CACHE_HOME:-~/.cache}/slip-test-tools, where tests/integration/remote_s3.sh
# looks for it (or set SLIP_S3RVER). `npm ci` from tests/servers/s3rver/package-lock.json: every
# package of the tree at the version and integrity hash recorded there, so a new release of a
# dependency cannot change what CI runs. (Regenerate the lock: `npm install --package-lock-only`
# in tests/servers/s3rver.) Idempotent: skipped while the installed lock matches.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
spec=$here/tests/servers/s3rver
prefix=${XDG_CACHE_HOME:-$HOME/.cache}/slip-test-tools
if [ -x "$prefix/node_modules/.bin/s3rver" ] && cmp -s "$spec/package-lock.json" "$prefix/package-lock.json"; then
  exit 0
fi
mkdir -p "$prefix"
cp "$spec/package.json" "$spec/package-lock.json" "$prefix/"
(cd "$prefix" && npm ci --no-audit --no-fund --loglevel=error)
"$prefix/node_modules/.bin/s3rver" --version
