# Sourced by the integration tests: environment, temp dir, assertions.
set -euo pipefail
: "${SLIP:?SLIP must point at the slip binary}"
: "${SLIP_SHARED_DIR:?SLIP_SHARED_DIR must point at ../shared}"
PY=${SLIP_PYTHON:-/usr/bin/python3}
SRC=${SLIP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CORPUS=$SLIP_SHARED_DIR/corpus/imagenet_like
WORK=$(mktemp -d "${TMPDIR:-/tmp}/slip-it-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export SLIPSTREAM_CACHE_DIR=$WORK/cache-root

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
# expect_status WANT CMD... : runs CMD, captures stdout/stderr in $WORK/out, $WORK/err.
expect_status() {
  local want=$1; shift
  local got=0
  "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  [ "$got" -eq "$want" ] || { cat "$WORK/err" >&2; fail "'$*' exited $got, want $want"; }
}
json_get() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval('d'+sys.argv[2]))" "$1" "$2"; }
