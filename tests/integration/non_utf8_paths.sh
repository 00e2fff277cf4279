#!/usr/bin/env bash
# Paths and URLs that are not UTF-8 (a Latin-1 directory name, a URL with a raw 0xE9 byte) go
# through every command that writes them into JSON: a job array's source record (convert
# --shard, merge), a remote dry run's plan. nlohmann's dump() throws on such bytes, which
# surfaced as "internal error" (exit 4); their bytes are now written replaced (U+FFFD).
source "$(dirname "$0")/common.bash"
export SOURCE_DATE_EPOCH=1700000000  # the manifests record a creation time

# (The source's own name is part of each sample's "path" field, which must be UTF-8 text: the
# Latin-1 name is one level up.)
latin=$WORK/$'caf\xe9'/sample
mkdir -p "$latin"
cp -r "$SRC/examples/sample/." "$latin/"
single=$("$SLIP" convert "$latin" -o "$WORK/single" -q)
for i in 0 1; do
  expect_status 0 "$SLIP" convert "$latin" -o "$WORK/parts" --shard "$i/2" -q
done
merged=$("$SLIP" merge --from "$WORK"/parts/*.parts -q) || fail "merge of a Latin-1 source's parts failed: $(cat "$WORK/err" 2>/dev/null)"
[ "$(basename "$merged")" = "$(basename "$single")" ] || fail "merged name $(basename "$merged") differs from $(basename "$single")"
diff -r "$single" "$merged" >/dev/null || fail "the merged cache differs from the single-process build"
pass "a Latin-1 source directory: convert --shard and merge give the single-process cache"

rc=0
"$SLIP" convert "http://127.0.0.1:9/$'\xe9'.tar" -o "$WORK/remote" --dry-run >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/err"; fail "remote dry run of a URL with a raw 0xE9 byte: exit $rc"; }
grep -q 'internal error' "$WORK/err" && fail "internal error on a non-UTF-8 URL"
pass "a non-UTF-8 URL's dry run"
