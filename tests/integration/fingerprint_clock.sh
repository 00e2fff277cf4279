#!/usr/bin/env bash
# One clock for every stat fingerprint (docs/FORMAT.md "content ids"): tar shards and FFCV files
# are fingerprinted with their modification time in Unix nanoseconds, as ImageFolder images are,
# not with the C++ library's file clock (whose epoch an upgrade could move).
source "$(dirname "$0")/common.bash"

mkdir -p "$WORK/src/a" "$WORK/src/b"
cp "$SRC"/examples/sample/*/* "$WORK/src/a/" 2>/dev/null || true
find "$SRC/examples/sample" -type f | first_lines 4 | while read -r f; do cp "$f" "$WORK/src/b/"; done
(cd "$WORK/src" && tar -cf "$WORK/shard-0.tar" a && tar -cf "$WORK/shard-1.tar" b)
touch -d '2021-03-04 05:06:07.123456789 UTC' "$WORK/shard-0.tar"
touch -d '1999-12-31 23:59:59.5 UTC' "$WORK/shard-1.tar"
cache=$("$SLIP" convert "$WORK/shard-0.tar" "$WORK/shard-1.tar" -o "$WORK/out" -q)
$PY - "$cache" "$WORK/shard-0.tar" "$WORK/shard-1.tar" <<'PY'
import hashlib, json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "manifest.json")))
got = m["slip"]["source"]["fingerprint"]
h = hashlib.sha256()
for f in sys.argv[2:]:
    st = os.stat(f)
    h.update(("%s\t%d\t%d\n" % (os.path.basename(f), st.st_size, st.st_mtime_ns)).encode())
want = "stat-shards:" + h.hexdigest()
assert got == want, (got, want)
PY
pass "tar shards: stat-shards fingerprint of Unix-ns mtimes"

beton=$(ls "$SLIP_SHARED_DIR"/fixtures/ffcv/*.beton 2>/dev/null | first_lines 1 || true)
if [ -z "$beton" ]; then
  # Part of the test did not run: a skip (77), which ctest reports, not a pass.
  echo "skip: the FFCV part (no fixtures/ffcv/*.beton under $SLIP_SHARED_DIR); the tar part passed"
  exit 77
fi
cp "$beton" "$WORK/x.beton"
touch -d '2020-01-02 03:04:05.987654321 UTC' "$WORK/x.beton"
cache=$("$SLIP" convert "$WORK/x.beton" -o "$WORK/out2" -q)
$PY - "$cache" "$WORK/x.beton" <<'PY'
import json, os, sys
got = json.load(open(os.path.join(sys.argv[1], "manifest.json")))["slip"]["source"]["fingerprint"]
st = os.stat(sys.argv[2])
assert got == "stat:%d:%d" % (st.st_size, st.st_mtime_ns), (got, st.st_mtime_ns)
PY
pass "FFCV: stat fingerprint of the Unix-ns mtime"
