#!/usr/bin/env bash
# Errors keep their class end to end (issues 42 and 45): a cache the user cannot read is a
# permission error, exit 4 with the OS's message, from every command and from Python; it was
# "not a slipstream cache (no manifest.json)" (exit 3), and `verify` called it a failed
# verification (exit 1, `ok: false`). SLURM requeue logic depends on 3 vs 4 vs 5.
source "$(dirname "$0")/common.bash"

# As root, run the commands as nobody (root reads everything); otherwise as this user.
if [ "$(id -u)" = 0 ]; then
  command -v setpriv > /dev/null || { echo "skip: setpriv is needed to run as another user"; exit 77; }
  as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
else
  as_user() { "$@"; }
fi
chmod 755 "$WORK"
expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/caches" -q
c=$(tail -n1 "$WORK/out")
chmod -R a+rX "$WORK/caches"
pymod=$(ls "$SLIP_BUILD_DIR"/python/slipcache/_core*.so 2> /dev/null | first_lines 1 || true)

# permission_denied WHAT: every reader exits 4 naming "Permission denied"
permission_denied() {
  local what=$1 cmd
  for cmd in "info $c" "verify $c" "cat $c 0 -F label" "index $c -F label" "yuv420 $c"; do
    # shellcheck disable=SC2086
    expect_status 4 as_user "$SLIP" $cmd
    grep -q "Permission denied" "$WORK/err" || { cat "$WORK/err"; fail "$what: slip ${cmd%% *} does not give the OS's reason"; }
  done
  expect_status 4 as_user "$SLIP" verify "$c" --json
  [ "$(json_get "$WORK/out" '["exit_code"]')" = 4 ] || { cat "$WORK/out"; fail "$what: verify --json is no I/O error object"; }
  [ "$(json_get "$WORK/out" '["class"]')" = io ] || fail "$what: verify --json class"
  grep -q '"ok"' "$WORK/out" && fail "$what: verify --json reports a verification result"
  if [ -n "$pymod" ]; then
    as_user env PYTHONPATH="$SLIP_BUILD_DIR/python" "$PY" - "$c" <<'PY' || fail "$what: slipcache.Cache"
import sys, slipcache
for make in (lambda: slipcache.Cache(sys.argv[1]), lambda: next(iter(slipcache.Loader(sys.argv[1], batch_size=2)))):
    try:
        make()
    except slipcache.Error as e:
        assert (e.code, e.kind) == (4, "io") and "Permission denied" in str(e), (e.code, e.kind, str(e))
        continue
    sys.exit("opened")
PY
  fi
  # A listing of the directory goes on: the cache is "unreadable", with the reason.
  expect_status 0 as_user "$SLIP" ls "$WORK/caches"
  grep -q "unreadable.*Permission denied" "$WORK/out" || { cat "$WORK/out"; fail "$what: ls does not show it unreadable"; }
  pass "$what: info, verify (--json too), cat, index, yuv420 exit 4 'Permission denied'$([ -n "$pymod" ] && echo '; slipcache.Cache and Loader: Error code 4'); ls: unreadable"
}

chmod 700 "$c"
permission_denied "a cache directory the user may not search (chmod 700)"
chmod 755 "$c"
chmod 600 "$c/manifest.json"
permission_denied "an unreadable manifest.json (chmod 600)"
chmod 644 "$c/manifest.json"

# The same cache, readable again: every command works (the test changed nothing else).
expect_status 0 as_user "$SLIP" verify "$c"
pass "readable again: verify OK"
