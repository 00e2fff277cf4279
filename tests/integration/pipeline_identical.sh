#!/usr/bin/env bash
# The conversion pipeline (reader thread, preparing workers, writer thread, bounded queues)
# writes the same bytes whatever its settings: 1 or 2 threads, 1 or 64 reads in flight, 1 MiB
# or 256 MiB in flight (batches of a few samples, or hundreds). With SOURCE_DATE_EPOCH the
# manifests are identical too, so whole cache directories are compared.
source "$(dirname "$0")/common.bash"
export SOURCE_DATE_EPOCH=1700000000
same_tree() { diff -r "$1" "$2" >/dev/null || fail "$3: caches differ ($1 vs $2)"; }
ref=$("$SLIP" convert "$CORPUS" -o "$WORK/ref" -q -j 2)
for opts in "-j 1" "-j 1 --io-depth 1" "-j 2 --io-depth 64" "-j 2 --max-in-flight 1MiB" "-j 1 --max-in-flight 1MiB --io-depth 1"; do
  out=$("$SLIP" convert "$CORPUS" -o "$WORK/o$RANDOM" -q $opts)
  same_tree "$ref" "$out" "ImageFolder $opts"
done
pass "ImageFolder: identical caches for -j 1/2, --io-depth 1/64, --max-in-flight 1MiB/256MiB"

# Tar shards (and the skip ledger): the same across settings.
mkdir -p "$WORK/shards"
i=0
for c in $(ls "$CORPUS" | LC_ALL=C sort | first_lines 4); do
  (cd "$CORPUS/$c" && ls | LC_ALL=C sort | sed -n 1,40p | tar cf "$WORK/shards/s$i.tar" -T -)
  i=$((i + 1))
done
head -c 500 /dev/urandom > "$WORK/bad.jpg" && tar rf "$WORK/shards/s1.tar" -C "$WORK" bad.jpg
ref=$("$SLIP" convert "$WORK"/shards/s{0..3}.tar -o "$WORK/tref" -q --on-error skip -j 2)
for opts in "-j 1" "-j 2 --max-in-flight 1MiB" "--io-depth 1" "--io-depth 3" "--io-depth 16 -j 1"; do
  out=$("$SLIP" convert "$WORK"/shards/s{0..3}.tar -o "$WORK/t$RANDOM" -q --on-error skip $opts)
  same_tree "$ref" "$out" "tar shards $opts"
done
pass "tar shards: identical caches (ledger included) for -j 1/2, --max-in-flight 1MiB, 1/3/16 shards read at once"

# Compressed shards are decompressed on the shard threads: the same samples as plain ones.
mkdir -p "$WORK/gz"
for i in 0 1 2 3; do gzip -c "$WORK/shards/s$i.tar" > "$WORK/gz/s$i.tar.gz"; done
for depth in 1 4; do
  gz=$("$SLIP" convert "$WORK"/gz/s{0..3}.tar.gz -o "$WORK/gz$depth" -q --on-error skip --io-depth $depth)
  for f in image.bin image.meta.npy key.bin key.offsets.npy; do
    [ -e "$ref/$f" ] || fail "no $f in the tar cache"
    cmp -s "$ref/$f" "$gz/$f" || fail "gzip shards (--io-depth $depth): $f differs from the plain shards'"
  done
  [ "$("$SLIP" info "$gz" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" = \
    "$("$SLIP" info "$ref" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" ] || fail "gzip shards: sample count"
done
pass "gzip shards read in parallel: the same samples as the plain shards"

# A failing sample stops the pipeline with the sample's error and leaves nothing behind.
expect_status 3 "$SLIP" convert "$WORK"/shards/s{0..3}.tar -o "$WORK/fail" --max-in-flight 1MiB
grep -q "bad.jpg" "$WORK/err" || { cat "$WORK/err"; fail "the error does not name the bad sample"; }
[ -z "$(ls -A "$WORK/fail" 2>/dev/null)" ] || fail "a failed conversion left $(ls -A "$WORK/fail")"
pass "a bad sample mid-pipeline: exit 3 naming it, nothing left"
