#!/usr/bin/env bash
# Installs the servers the remote-source tests start on 127.0.0.1 that Debian does not package:
# s3rver (npm), into ${XDG_CACHE_HOME:-~/.cache}/slip-test-tools, where tests/integration/remote_s3.sh
# looks for it (or set SLIP_S3RVER). Idempotent.
set -euo pipefail
prefix=${XDG_CACHE_HOME:-$HOME/.cache}/slip-test-tools
if [ -x "$prefix/node_modules/.bin/s3rver" ] && [ "$(node -p 'require(process.argv[1]).version' "$prefix/node_modules/s3rver/package.json")" = 3.7.1 ]; then
  exit 0
fi
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error s3rver@3.7.1
"$prefix/node_modules/.bin/s3rver" --version
