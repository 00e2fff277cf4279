#!/usr/bin/env bash
# Outputs placed inside a cache (a careless -o or --to): `slip stage C --to C/stage` and
# `--to C` once put lock files and a nested copy into C, `subset C -o C/sub`, `convert -o C`
# a cache into C, `order`/`cat`/`subset --mode ids -o C/x` a stray file: each made `slip verify C`
# fail (unknown file) afterwards. Every such output is refused before anything is written
# (exit 2, naming the output and the cache), links resolved; C stays intact. Outputs beside a
# cache, and inside a work directory of parts (which is no cache), are fine.
source "$(dirname "$0")/common.bash"
for i in 0 1; do "$SLIP" convert "$SRC/examples/sample" -o "$WORK/parts" --shard $i/2 --no-progress -q > /dev/null; done
part=$(ls -d "$WORK"/parts/*.parts/part-00000-of-00002.slipstream)
cache=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/caches" --no-progress -q)
ln -s "$cache" "$WORK/link"

refused() {  # refused OUTPUT CMD...: exit 2 naming OUTPUT and the cache it is in
  local output=$1; shift
  expect_status 2 "$@"
  grep -q "$output: the .* \(is\|is inside\) the cache .*: what slip wrote there would be no part of that cache" "$WORK/err" ||
    fail "'$*': $(cat "$WORK/err")"
}
refused "$cache/stage" "$SLIP" stage "$cache" --to "$cache/stage"
refused "$cache" "$SLIP" stage "$cache" --to "$cache"
refused "$WORK/link/stage" "$SLIP" stage "$part" --to "$WORK/link/stage"
refused "$cache/sub" "$SLIP" subset "$cache" --values 0 -o "$cache/sub"
refused "$part" "$SLIP" subset "$WORK/parts" --values 0 -o "$part"
refused "$part" "$SLIP" subset "$WORK/parts" --values 0 -o "$part" --dry-run
refused "$cache" "$SLIP" convert "$SRC/examples/sample" -o "$cache"
refused "$cache/order.npy" "$SLIP" order "$cache" --format npy -o "$cache/order.npy"
refused "$WORK/link/order.txt" "$SLIP" order "$WORK/parts" -o "$WORK/link/order.txt"
refused "$cache/label.txt" "$SLIP" cat "$cache" 0 -F label -o "$cache/label.txt"
refused "$cache/ids.npy" "$SLIP" subset "$cache" --values 0 --mode ids -o "$cache/ids.npy"
refused "$part/merged" "$SLIP" merge "$(dirname "$part")" -o "$part/merged"
for c in "$cache" "$part"; do
  [ -z "$(find "$c" -mindepth 1 -newer "$WORK/link" -print -quit)" ] || fail "something was written into $c: $(ls -a "$c")"
  expect_status 0 "$SLIP" verify "$c"
done
pass "outputs inside a cache (or a link to one) are refused; the caches still verify"

# Beside a cache, and in the work directory of parts (no cache), outputs are written as before.
expect_status 0 "$SLIP" order "$cache" -o "$WORK/order.txt"
[ "$(wc -l < "$WORK/order.txt")" -eq 40 ] || fail "order beside the cache"
expect_status 0 "$SLIP" stage "$cache" --to "$WORK/stage"
expect_status 0 "$SLIP" subset "$cache" --values 0 -o "$WORK/caches"
expect_status 0 "$SLIP" order "$WORK/parts" -o "$(dirname "$part")/order.txt"
pass "outputs beside a cache are written"
