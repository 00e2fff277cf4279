#!/usr/bin/env bash
# Small things a newcomer trips over (issue 38): convert prints an absolute cache path even for
# a relative -o; subset without -o writes where --help says ($SLIPSTREAM_CACHE_DIR); a field that
# does not exist is refused naming the fields there are (cat, index, subset).
source "$(dirname "$0")/common.bash"
cd "$WORK"

# A relative -o: the printed path (stdout's last line and --json's "path") is absolute and exists.
cache=$("$SLIP" convert "$SRC/examples/sample" -o rel-out -q)
case "$cache" in "$WORK"/rel-out/sample-????????.slipstream) ;; *) fail "convert -o rel-out printed '$cache', not an absolute path" ;; esac
[ -f "$cache/manifest.json" ] || fail "printed path $cache is not the cache"
(cd / && "$SLIP" verify "$cache" -q) || fail "the printed path does not work from another directory"
got=$("$SLIP" convert "$SRC/examples/sample" -o rel-out --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["path"])')
[ "$got" = "$cache" ] || fail "convert --json path '$got' is not '$cache'"
pass "convert -o RELATIVE prints the absolute cache path (text and --json)"

# subset without -o: the documented default, $SLIPSTREAM_CACHE_DIR (as --help and --dry-run say).
"$SLIP" subset --help | grep -q 'SLIPSTREAM_CACHE_DIR' || fail "subset --help does not name the default output"
planned=$("$SLIP" subset "$cache" --names n01440764,n02979186 --dry-run --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["path"])')
expect_status 0 "$SLIP" subset "$cache" --names n01440764,n02979186
sub=$(tail -n 1 "$WORK/out")
[ "$sub" = "$planned" ] || fail "subset wrote '$sub', --dry-run said '$planned'"
case "$sub" in "$SLIPSTREAM_CACHE_DIR"/sample-subset-????????.slipstream) ;; *) fail "subset without -o wrote '$sub', not under \$SLIPSTREAM_CACHE_DIR" ;; esac
[ "$("$SLIP" info "$sub" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" = 20 ] || fail "the subset does not hold the two classes' 20 samples"
pass "subset without -o writes the documented default (\$SLIPSTREAM_CACHE_DIR), where --dry-run said"

# An unknown field names the fields there are.
for cmd in "cat $cache 0 --field nope" "index $cache --field nope" "subset $cache --field nope --values 0"; do
  expect_status 2 "$SLIP" $cmd
  grep -q 'no field "nope" (its fields: image, label, index, path)' "$WORK/err" || { cat "$WORK/err"; fail "slip $cmd: the fields are not listed"; }
done
pass "cat/index/subset --field nope: exit 2 naming the fields (image, label, index, path)"
