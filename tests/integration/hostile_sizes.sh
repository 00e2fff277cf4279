#!/usr/bin/env bash
# Sizes from a file, a header or a flag are checked before anything is read or allocated by
# them: an ImageFolder image over --max-sample-bytes (a sparse 300 GB one), LitData chunks whose
# index.json or table lies about their size, numeric flags that size buffers or threads,
# --shard counts, `-o` inside the source, and a file-size limit (ulimit -f) mid-conversion.
# Each: one line naming the file or flag, the right exit code, flat memory, nothing left behind.
source "$(dirname "$0")/common.bash"
rss_limit() { [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] && echo 99999999 || echo "$1"; }
peak() { rm -f "$WORK/status"; /usr/bin/time -f %M -o "$WORK/rss" "$@" >"$WORK/out" 2>"$WORK/err" || echo "$?" > "$WORK/status"; tail -1 "$WORK/rss"; }
leftovers() {  # leftovers DIR: fails when DIR holds a staging directory or a lock
  if find "$1" -mindepth 1 -maxdepth 1 -name '.*' 2>/dev/null | grep -q .; then ls -la "$1"; fail "$2: temporaries left in $1"; fi
}

# 1. ImageFolder: a sparse 300 GB image is never read. Before: std::bad_alloc, SIGABRT (exit
#    134), staging and lock left behind, with --on-error skip too.
src=$WORK/folder
two_class_folder "$src"
truncate -s 300G "$src/b/huge.JPEG"
expect_status 3 "$SLIP" convert "$src" -o "$WORK/o1"
grep -q "huge.JPEG.*exceeds the limit of 268435456 bytes (--max-sample-bytes" "$WORK/err" || { cat "$WORK/err"; fail "oversize image not named"; }
leftovers "$WORK/o1" "oversize image"
rss=$(peak "$SLIP" convert "$src" -o "$WORK/o2" --on-error skip --json)
[ ! -s "$WORK/status" ] || { cat "$WORK/err"; fail "--on-error skip with an oversize image exited $(cat "$WORK/status")"; }
[ "$(json_get "$WORK/out" '["skipped"]')" = 1 ] || fail "the oversize image was not skipped"
grep -q "exceeds the limit of 268435456 bytes" "$WORK/out" || fail "the ledger does not say why"
[ "$rss" -lt "$(rss_limit 200000)" ] || fail "peak RSS ${rss} KiB with a 300 GB image"
leftovers "$WORK/o2" "oversize image skipped"
# --fingerprint content hashes files in blocks, and an oversize one not at all.
expect_status 0 timeout 60 "$SLIP" convert "$src" -o "$WORK/o3" --on-error skip --fingerprint content
# The limit is the flag's, for ImageFolder too (refused as a tar-only flag before).
rm "$src/b/huge.JPEG"
smallest=$(find "$src" -type f -printf '%s\n' | sort -n | first_lines 1)
expect_status 0 "$SLIP" convert "$src" -o "$WORK/o4" --max-sample-bytes "$smallest" --on-error skip --json
[ "$(json_get "$WORK/out" '["written"]')" -ge 1 ] && [ "$(json_get "$WORK/out" '["skipped"]')" -ge 1 ] ||
  { cat "$WORK/out"; fail "--max-sample-bytes $smallest did not apply to ImageFolder images"; }
pass "ImageFolder: a sparse 300 GB image is a bad sample, never read (peak RSS ${rss} KiB); --max-sample-bytes applies"

# Metadata read whole is bounded before it is read: a sparse 2 GB manifest (before: copied
# whole, 2 GB RSS, then "not JSON"); a list of shards without a newline (before: one 1 GB line).
cp -r "$WORK/o4" "$WORK/o4-sparse"
m=$(ls -d "$WORK/o4-sparse"/*.slipstream)/manifest.json
rm "$m"; truncate -s 2G "$m"
rss=$(peak "$SLIP" info "$(dirname "$m")")
[ "$(cat "$WORK/status")" = 3 ] || { cat "$WORK/err"; fail "a sparse 2 GB manifest exited $(cat "$WORK/status")"; }
grep -q "manifest.json.*file of 2147483648 bytes is over the 1073741824 bytes" "$WORK/err" || { cat "$WORK/err"; fail "sparse manifest: wrong error"; }
[ "$rss" -lt "$(rss_limit 100000)" ] || fail "peak RSS ${rss} KiB on a sparse 2 GB manifest"
rm -f "$WORK/status"
truncate -s 1G "$WORK/list.txt"
rss=$(peak "$SLIP" convert "@$WORK/list.txt" -o "$WORK/o-list")
[ "$(cat "$WORK/status")" = 3 ] || { cat "$WORK/err"; fail "a 1 GB list without newlines exited $(cat "$WORK/status")"; }
grep -q "list.txt.*line 1 is longer than 65536 bytes" "$WORK/err" || { cat "$WORK/err"; fail "list without newlines: wrong error"; }
[ "$rss" -lt "$(rss_limit 100000)" ] || fail "peak RSS ${rss} KiB on a 1 GB list without newlines"
rm -f "$WORK/status"
# A planted sparse scan snapshot (job arrays share one ImageFolder scan through it) is not
# read whole: not a snapshot from its first line, the tree is scanned again.
mkdir -p "$WORK/o8"
truncate -s 2G "$WORK/o8/.folder-$(printf '%s\nstat' "$src" | sha256sum | cut -c1-16).scan"
rss=$(peak "$SLIP" convert "$src" -o "$WORK/o8" --shard 0/2)
[ ! -s "$WORK/status" ] || { cat "$WORK/err"; fail "a planted scan snapshot made --shard exit $(cat "$WORK/status")"; }
[ "$rss" -lt "$(rss_limit 200000)" ] || fail "peak RSS ${rss} KiB with a sparse 2 GB scan snapshot"
pass "a sparse manifest, list or scan snapshot: refused or ignored unread, memory flat"

# 2. LitData chunks: the index bounds a chunk's bytes (a count, its offset table, items of at
#    most --max-sample-bytes) and the table is checked before the rest is read or decompressed.
litdata() {  # litdata DIR ITEMS CHUNK_BYTES COMPRESSION FILE-MAKER...
  local d=$1 n=$2 bytes=$3 comp=$4; shift 4
  mkdir -p "$d"
  "$@" "$d/chunk-0-0.bin"
  $PY - "$d" "$n" "$bytes" "$comp" <<'PY'
import json, sys
d, n, nbytes, comp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
json.dump({"chunks": [{"chunk_bytes": nbytes, "chunk_size": n, "dim": None, "filename": "chunk-0-0.bin"}],
           "config": {"chunk_bytes": 1 << 26, "chunk_size": None, "compression": None if comp == "none" else comp,
                      "data_format": ["int"], "data_spec": None, "encryption": None, "item_loader": "PyTreeLoader"},
           "updated_at": "0"}, open(f"{d}/index.json", "w"))
PY
}
zeros_zst() { head -c 200000000 /dev/zero | zstd -q -c > "$1"; }  # 200 MB of zeros in ~6 KB
sparse() { truncate -s 1000000000 "$1"; }
# A chunk of 0 items claiming 200 MB (before: 200 MB decompressed, then "holds 0 items").
litdata "$WORK/ld1" 0 200000000 zstd zeros_zst
expect_status 3 "$SLIP" convert "$WORK/ld1" -o "$WORK/lo1"
grep -q "chunk_bytes 200000000 cannot hold its 0 items" "$WORK/err" || { cat "$WORK/err"; fail "a 0-item chunk of 200 MB not refused"; }
# 1,000 items of zeros: the table (4 KB) is all that is decompressed / read.
litdata "$WORK/ld2" 1000 200000000 zstd zeros_zst
rss=$(peak "$SLIP" convert "$WORK/ld2" -o "$WORK/lo2")
[ "$(cat "$WORK/status")" = 3 ] || { cat "$WORK/err"; fail "a zstd chunk of zeros exited $(cat "$WORK/status")"; }
grep -q "chunk holds 0 items, index.json says 1000" "$WORK/err" || { cat "$WORK/err"; fail "zstd chunk of zeros: wrong error"; }
[ "$rss" -lt "$(rss_limit 100000)" ] || fail "peak RSS ${rss} KiB decompressing a lying 200 MB zstd chunk"
rss_zstd=$rss
rm -f "$WORK/status"
litdata "$WORK/ld3" 1000 1000000000 none sparse
rss=$(peak "$SLIP" convert "$WORK/ld3" -o "$WORK/lo3")
[ "$(cat "$WORK/status")" = 3 ] || { cat "$WORK/err"; fail "a sparse raw chunk exited $(cat "$WORK/status")"; }
grep -q "chunk holds 0 items, index.json says 1000" "$WORK/err" || { cat "$WORK/err"; fail "sparse raw chunk: wrong error"; }
[ "$rss" -lt "$(rss_limit 100000)" ] || fail "peak RSS ${rss} KiB reading a sparse 1 GB chunk"
# 3 items cannot fill 1 GB with items of at most 256 MiB.
litdata "$WORK/ld4" 3 1000000000 none sparse
expect_status 3 "$SLIP" convert "$WORK/ld4" -o "$WORK/lo4"
grep -q "cannot hold its 3 items" "$WORK/err" || { cat "$WORK/err"; fail "3 items in 1 GB not refused"; }
pass "LitData: lying chunks refused from their table (zstd peak ${rss_zstd} KiB, raw ${rss} KiB)"

# 3. Numeric flags that size buffers or thread pools: a usage error naming the bound.
expect_status 2 "$SLIP" bench "$WORK/o4"/*.slipstream -b 18446744073709551615
grep -q "batch-size must be in 1..1048576" "$WORK/err" || { cat "$WORK/err"; fail "bench -b 2^64-1"; }
expect_status 2 "$SLIP" bench "$WORK/o4"/*.slipstream -j 4294967295
expect_status 2 "$SLIP" convert "$src" -o "$WORK/o5" -j 4294967295
grep -q "threads must be in 0..1024" "$WORK/err" || { cat "$WORK/err"; fail "convert -j 2^32-1"; }
expect_status 2 "$SLIP" yuv420 "$WORK/o4"/*.slipstream -j 100000
expect_status 2 "$SLIP" verify "$WORK/o4"/*.slipstream -j 100000
pass "numeric flags past their bound: exit 2 naming it"

# 4. --shard counts beyond SLURM's largest job array (before: exit 0, then ls 9-46 s, 2 GB).
expect_status 2 "$SLIP" convert "$src" -o "$WORK/o6" --shard 0/18446744073709551615
grep -q "at most 4000001 parts" "$WORK/err" || { cat "$WORK/err"; fail "--shard 0/2^64-1 accepted"; }
expect_status 2 "$SLIP" convert "$src" -o "$WORK/o6" --shard 0/4000002
[ ! -e "$WORK/o6" ] || [ -z "$(ls -A "$WORK/o6")" ] || fail "a refused --shard wrote $(ls -A "$WORK/o6")"
# A work directory whose one part claims the most parts there may be: ls counts, never lists
# them (before: a state per claimed part, hundreds of MB).
mkdir -p "$WORK/o6/x-00000000.parts/part-00000-of-4000001.slipstream"
rss=$(peak "$SLIP" ls "$WORK/o6")
[ ! -s "$WORK/status" ] || { cat "$WORK/err"; fail "ls of a forged work directory exited $(cat "$WORK/status")"; }
grep -q "0/4000001 parts done" "$WORK/out" || { cat "$WORK/out" "$WORK/err"; fail "ls does not count the claimed parts"; }
[ "$rss" -lt "$(rss_limit 60000)" ] || fail "peak RSS ${rss} KiB listing one part that claims 4,000,001"
pass "--shard I/N with N over 4,000,001: usage error, nothing written; ls of a part claiming 4,000,001: ${rss} KiB"

# 5. -o inside the source: refused at once (before: worked once, then the caches were a class).
expect_status 2 "$SLIP" convert "$src" -o "$src/out"
grep -q "is inside the source" "$WORK/err" || { cat "$WORK/err"; fail "-o inside the source accepted"; }
[ ! -e "$src/out" ] || fail "-o inside the source created it"
expect_status 2 "$SLIP" convert "$src" -o "$src"
ln -s "$src" "$WORK/link"
expect_status 2 "$SLIP" convert "$WORK/link" -o "$src/out"
expect_status 0 "$SLIP" convert "$src" -o "$WORK/folder-out"  # a sibling sharing a prefix is fine
pass "-o inside (or equal to) the source: usage error naming both"

# 6. A file-size limit (ulimit -f): EFBIG, exit 4 naming the file, staging removed (before:
#    SIGXFSZ, exit 153, no message, staging left).
big=$WORK/bigfolder
mkdir -p "$big/a" "$big/b"
for f in $(find "$CORPUS" -type f -name '*.JPEG' | LC_ALL=C sort | first_lines 40); do cp "$f" "$big/a/"; done
cp "$big/a/"* "$big/b/"
limit_kib=$(( $(du -sk --apparent-size "$big" | cut -f1) / 4 ))
expect_status 4 bash -c 'ulimit -f "$1"; shift; exec "$@"' _ "$limit_kib" "$SLIP" convert "$big" -o "$WORK/o7"
grep -q "File too large" "$WORK/err" || { cat "$WORK/err"; fail "EFBIG not reported"; }
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "more than one line for EFBIG"; }
leftovers "$WORK/o7" "ulimit -f"
pass "ulimit -f: exit 4 \"File too large\", staging removed"
