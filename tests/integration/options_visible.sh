#!/usr/bin/env bash
# The options that changed a cache's bytes are shown wherever the cache is described: four
# caches of one folder (defaults, --jpeg-restarts, --max-image-pixels, --image-format yuv420)
# once looked identical in `convert --json`, `info`, `info --json`, `ls` and Cache.info() but for the id. Each now
# shows its manifest's slip.options (image-format included). `--on-error skip` with nothing to
# skip writes the bytes a run without it writes: it reuses that cache (or, first, writes the
# cache under that content id) instead of a second full copy. `-v` on a reused cache does not
# log the stored ledger as if this run had transcoded it.
source "$(dirname "$0")/common.bash"
r=$WORK/src && two_class_folder "$r"
png=$(corpus_png) || fail "no PNG in $CORPUS"
cp "$CORPUS/$png" "$r/b/png.JPEG"  # one transcoded sample: a ledger entry
o=$WORK/o

convert_json() {  # convert_json NAME [OPTION...]: the cache's path; its --json summary in $WORK/NAME.json
  local name=$1
  shift
  "$SLIP" convert "$r" -o "$o" -q --json "$@" >"$WORK/$name.json"
  json_get "$WORK/$name.json" "['path']"
}
plain=$(convert_json plain)
restarts=$(convert_json restarts --jpeg-restarts)
pixels=$(convert_json pixels --max-image-pixels 100000000)
yuv=$(convert_json yuv --image-format yuv420)
# --on-error skip, nothing to skip: the plain cache, reused.
expect_status 0 "$SLIP" convert "$r" -o "$o" --on-error skip --json
[ "$(json_get "$WORK/out" "['path']")" = "$plain" ] || fail "--on-error skip with nothing skipped made another cache: $(cat "$WORK/out")"
[ "$(json_get "$WORK/out" "['reused']")" = True ] || fail "--on-error skip did not reuse the plain cache"
[ "$(json_get "$WORK/out" "['options']")" = "{}" ] || fail "the reused plain cache's convert --json options: $(cat "$WORK/out")"
[ "$(ls "$o" | wc -l)" = 4 ] || fail "$(ls "$o" | wc -l) caches, want 4: $(ls "$o")"

check() {  # check NAME CACHE WANT(options as "k=v, k=v" or "")
  local name=$1 cache=$2 want=$3
  $PY - "$WORK/$name.json" "$want" <<'PY' || fail "convert --json options of $name"
import json, sys
d = json.load(open(sys.argv[1])); want = dict(kv.split("=") for kv in sys.argv[2].split(", ") if kv)
assert d["options"] == want, (d["options"], want)
PY
  expect_status 0 "$SLIP" info "$cache"
  local line
  line=$(sed -n 's/^  options:     //p' "$WORK/out")
  [ "$line" = "${want:-none (the defaults)}" ] || fail "info $(basename "$cache"): options '$line', want '$want'"
  expect_status 0 "$SLIP" info --json "$cache"
  $PY - "$WORK/out" "$want" "$cache/manifest.json" <<'PY' || fail "info --json options of $(basename "$cache")"
import json, sys
d = json.load(open(sys.argv[1])); want = dict(kv.split("=") for kv in sys.argv[2].split(", ") if kv)
assert d["provenance"]["options"] == want, (d["provenance"]["options"], want)
assert json.load(open(sys.argv[3]))["slip"]["options"] == want
PY
  expect_status 0 "$SLIP" ls "$cache"
  if [ -n "$want" ]; then grep -qF "[$want]" "$WORK/out" || { cat "$WORK/out"; fail "ls $(basename "$cache") lacks [$want]"; }
  else grep -q '\[' "$WORK/out" && { cat "$WORK/out"; fail "ls shows options for a default cache"; }; fi
  expect_status 0 "$SLIP" ls "$cache" --json
  $PY - "$WORK/out" "$want" <<'PY' || fail "ls --json options of $(basename "$cache")"
import json, sys
d = json.load(open(sys.argv[1])); want = dict(kv.split("=") for kv in sys.argv[2].split(", ") if kv)
assert d["caches"][0]["options"] == want, (d["caches"][0], want)
PY
  if [ -d "${SLIP_BUILD_DIR:-/nonexistent}/python/slipcache" ]; then
    PYTHONPATH=$SLIP_BUILD_DIR/python $PY - "$cache" "$want" <<'PY' || fail "Cache.info() options of $(basename "$cache")"
import sys, slipcache
want = dict(kv.split("=") for kv in sys.argv[2].split(", ") if kv)
assert slipcache.Cache(sys.argv[1]).info()["options"] == want, slipcache.Cache(sys.argv[1]).info()
PY
  fi
}
check plain "$plain" ""
check restarts "$restarts" "jpeg-restarts=1"
check pixels "$pixels" "max-image-pixels=100000000"
check yuv "$yuv" "image-format=yuv420"
[ -d "${SLIP_BUILD_DIR:-/nonexistent}/python/slipcache" ] || echo "skip: Cache.info() (the Python module is not built)"
pass "convert --json, info, info --json, ls, ls --json and Cache.info() show each cache's options"

# First run with --on-error skip and nothing to skip: the cache takes the plain content id.
expect_status 0 "$SLIP" convert "$r" -o "$WORK/o2" --on-error skip --json
first=$(json_get "$WORK/out" "['path']")
[ "$(basename "$first")" = "$(basename "$plain")" ] || fail "--on-error skip (nothing skipped) named $(basename "$first"), want $(basename "$plain")"
[ "$(json_get "$WORK/out" "['content_id']")" = "$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['slip']['content_id'])" "$plain/manifest.json")" ] ||
  fail "content ids differ"
expect_status 0 "$SLIP" convert "$r" -o "$WORK/o2" --json
[ "$(json_get "$WORK/out" "['reused']")" = True ] || fail "the plain run did not reuse the skip run's cache"
cmp -s "$first/image.bin" "$plain/image.bin" || fail "not the same bytes"
# Something to skip: its own cache, recorded as on-error=skip.
head -c 300 /dev/urandom > "$r/a/broken.JPEG"
expect_status 0 "$SLIP" convert "$r" -o "$WORK/o2" --on-error skip --json
skipped=$(json_get "$WORK/out" "['path']")
[ "$(json_get "$WORK/out" "['skipped']")" = 1 ] || fail "broken file not skipped"
cp "$WORK/out" "$WORK/skipped.json"
check skipped "$skipped" "on-error=skip"
rm "$r/a/broken.JPEG"
pass "--on-error skip: nothing skipped gives the plain cache (reused or written under its id); a skip gives its own"

# -v: a conversion logs its ledger; a reuse does not (the entries are an earlier run's).
touch "$r/b/png.JPEG"
expect_status 0 "$SLIP" -v convert "$r" -o "$WORK/o3"
grep -q "transcoded sample" "$WORK/err" || { cat "$WORK/err"; fail "-v does not log a conversion's ledger"; }
expect_status 0 "$SLIP" -v convert "$r" -o "$WORK/o3"
grep -q "transcoded sample" "$WORK/err" && { cat "$WORK/err"; fail "-v logs the stored ledger on reuse"; }
grep -q "already there" "$WORK/err" || { cat "$WORK/err"; fail "no reuse message"; }
pass "-v logs the ledger of a conversion, not of a reused cache"
