#!/usr/bin/env bash
# slip bench over a dataset (issue 44): the 4 parts of a `convert --shard I/4` conversion, read as
# one dataset without merge, decode the same samples into the same pixels as the merged cache:
# equal sample and payload counts and equal output checksums for each pipeline, in order and
# shuffled (crops are keyed by global ids); the report counts the caches. Caches whose fields
# differ are refused naming the cache.
source "$(dirname "$0")/common.bash"
out=$WORK/out-dir
for i in 0 1 2 3; do "$SLIP" convert "$SRC/examples/sample" -o "$out" --shard $i/4 --no-progress -q > /dev/null; done
parts=$(ls -d "$out"/*.parts)
merged=$("$SLIP" merge --source "$SRC/examples/sample" -o "$out" -q)
[ -d "$merged" ] || fail "merge printed no cache: $merged"

field() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d[sys.argv[2]])' "$@"; }
for args in "-p raw" "-p decode" "-p center" "-p rrc" "-p rrc --order shuffle --seed 7" "-p multicrop --crops 2x64,3x32@0.1-0.5"; do
  # shellcheck disable=SC2086
  "$SLIP" bench "$parts" $args -e 2 -b 7 -j 2 --no-limit --checksum --json > "$WORK/parts.json" || fail "bench over the parts ($args)"
  # shellcheck disable=SC2086
  "$SLIP" bench "$merged" $args -e 2 -b 7 -j 2 --no-limit --checksum --json > "$WORK/merged.json" || fail "bench over the merged cache ($args)"
  [ "$(field "$WORK/parts.json" caches)" = 4 ] && [ "$(field "$WORK/merged.json" caches)" = 1 ] || fail "caches ($args)"
  for key in samples payload_bytes crops_per_image; do
    [ "$(field "$WORK/parts.json" $key)" = "$(field "$WORK/merged.json" $key)" ] || fail "$key differs ($args)"
  done
  [ "$(field "$WORK/parts.json" samples)" = 40 ] || fail "samples ($args): $(field "$WORK/parts.json" samples)"
  if [ "$args" != "-p raw" ]; then  # raw has no checksum (no decoded pixels)
    sum=$(field "$WORK/parts.json" checksum)
    [ ${#sum} -eq 16 ] && [ "$sum" = "$(field "$WORK/merged.json" checksum)" ] || fail "checksums differ ($args): $sum"
  fi
done
pass "bench over 4 parts = bench over the merged cache: samples, payload bytes, checksums (raw, decode, center, rrc, shuffled, multicrop)"

# The parts named one by one, and a list file, are the same dataset; the first line counts the caches.
"$SLIP" bench "$parts"/part-0000{0,1,2,3}-of-00004.slipstream -p decode -e 1 -j 2 --no-limit --checksum > "$WORK/text"
grep -q "pipeline decode, 40 images (.*), 2 threads, batch 256, 4 caches" "$WORK/text" || fail "first line: $(head -1 "$WORK/text")"
ls -d "$parts"/part-* > "$WORK/list.txt"
"$SLIP" bench "$WORK/list.txt" -p decode -e 1 -j 2 --no-limit --checksum --json > "$WORK/list.json"
"$SLIP" bench "$merged" -p decode -e 1 -j 2 --no-limit --checksum --json > "$WORK/merged.json"
[ "$(field "$WORK/list.json" checksum)" = "$(field "$WORK/merged.json" checksum)" ] || fail "list file's checksum"
[ "$(grep -c '^checksum: ' "$WORK/text")" -eq 1 ] && grep -q "^checksum: $(field "$WORK/merged.json" checksum)$" "$WORK/text" || fail "paths' checksum"
pass "parts named one by one and a list file: the same samples and pixels"

# --max-samples spans caches in global order: the first 15 samples are parts 0 and 1 (10 each).
"$SLIP" bench "$parts" -p center -e 1 -b 4 -j 2 --max-samples 15 --no-limit --checksum --json > "$WORK/a.json"
"$SLIP" bench "$merged" -p center -e 1 -b 4 -j 2 --max-samples 15 --no-limit --checksum --json > "$WORK/b.json"
[ "$(field "$WORK/a.json" checksum)" = "$(field "$WORK/b.json" checksum)" ] || fail "--max-samples over caches"
pass "--max-samples takes the first global ids across caches"

# Fields that differ: the error names the cache and the difference (exit 3).
yuv=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/yuv" --image-format yuv420 -q)
expect_status 3 "$SLIP" bench "$parts/part-00000-of-00004.slipstream" "$yuv" -e 1 --no-limit
grep -qF "$yuv" "$WORK/err" && grep -q "fields differ" "$WORK/err" || fail "mismatched fields: $(cat "$WORK/err")"
expect_status 3 "$SLIP" bench "$parts/part-00000-of-00004.slipstream" "$yuv" -e 1 --no-limit --json
grep -q '"error"' "$WORK/out" || grep -q '"error"' "$WORK/err" || fail "--json error object"
pass "caches with other fields are refused, naming the cache"

# A sample that does not decode is named by its own cache's file and id, and its dataset id.
mkdir -p "$WORK/bad/c"
cp "$(find "$SRC/examples/sample" -type f | LC_ALL=C sort | sed -n 1p)" "$WORK/bad/c/a.jpg"
cp "$(bad_dir)/garbage_in_entropy.JPEG" "$WORK/bad/c/b.jpg"
bad=$("$SLIP" convert "$WORK/bad" -o "$WORK/bc" -q)
expect_status 3 "$SLIP" bench "$parts/part-00000-of-00004.slipstream" "$bad" -p decode -e 1 --no-limit
grep -qF "$bad/image.bin" "$WORK/err" && grep -q "sample 1\b" "$WORK/err" && grep -q "(dataset sample 11)" "$WORK/err" ||
  fail "corrupt sample in a dataset: $(cat "$WORK/err")"
pass "a corrupt sample is named by its cache's file, its id there and its dataset id"
