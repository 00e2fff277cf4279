#!/usr/bin/env bash
# slip stage as scripts run it: six concurrent callers on one directory copy the cache once
# (the bytes each read from the source, summed), a staged cache is not copied again, a damaged
# source is refused (exit 3, nothing published), --budget evicts the least recently used copy
# that no process holds and refuses (exit 4) when the held ones leave no room.
source "$(dirname "$0")/common.bash"
cache=$("$SLIP" convert "$CORPUS" -o "$WORK/caches" -q)
bytes=$(find "$cache" -maxdepth 1 -type f ! -name '*.lock' -printf '%s\n' | awk '{s += $1} END {print s}')
name=$(basename "$cache")

# Six callers at once, each printing its JSON line; exactly one copies, and the source's bytes
# are read once in all.
stage=$WORK/node
for i in 1 2 3 4 5 6; do "$SLIP" stage "$cache" --to "$stage" --copy --json >"$WORK/caller.$i" 2>"$WORK/caller.$i.err" & done
wait
$PY - "$WORK" "$bytes" "$stage/$name" <<'PY' || fail "six concurrent callers: $(cat "$WORK"/caller.*)"
import json, sys
work, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [json.load(open(f"{work}/caller.{i}")) for i in range(1, 7)]
assert all(r["path"] == path for r in rows), rows
assert sum(r["copied"] for r in rows) == 1, rows
assert sum(r["bytes_copied"] for r in rows) == size, (size, rows)
PY
expect_status 0 "$SLIP" verify "$stage/$name"
pass "6 concurrent slip stage: one copy ($bytes bytes read from the source in all), verified"

# Already staged: the path again, nothing read. Several sources: one path per line.
other=$WORK/sources/other-$name
mkdir -p "$WORK/sources" && cp -r "$cache" "$other"
expect_status 0 "$SLIP" stage "$cache" "$other" --to "$stage" --copy
[ "$(cat "$WORK/out")" = "$(printf '%s\n%s' "$stage/$name" "$stage/other-$name")" ] || fail "stdout: $(cat "$WORK/out")"
expect_status 0 "$SLIP" stage "$cache" --to "$stage" --json
[ "$(json_get "$WORK/out" '["copied"]')" = False ] && [ "$(json_get "$WORK/out" '["bytes_copied"]')" = 0 ] ||
  fail "an already staged cache was copied again: $(cat "$WORK/out")"
pass "an already staged cache is not copied again; one path per line"

# A damaged source: one byte flipped in a payload. Refused, exit 3, nothing published.
damaged=$WORK/sources/damaged-$name
cp -r "$cache" "$damaged"
size=$(stat -c %s "$damaged/image.bin")
$PY - "$damaged/image.bin" "$((size / 2))" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1]))
PY
expect_status 3 "$SLIP" stage "$damaged" --to "$WORK/node2" --copy
grep -q "damaged-$name/image.bin: sample [0-9]*: refused to stage: .*checksum mismatch" "$WORK/err" || fail "stderr: $(cat "$WORK/err")"
[ -z "$(ls -A "$WORK/node2" | grep -v '^\.slip-stage\.lock$')" ] || fail "left behind: $(ls -A "$WORK/node2")"
expect_status 3 "$SLIP" stage "$damaged" --to "$WORK/node2" --json
[ "$(json_get "$WORK/out" '["class"]')" = bad_input ] || fail "--json: $(cat "$WORK/out")"
pass "a damaged source is refused (exit 3) and nothing is published"

# --budget: room for one cache. A copy held by a reader (a shared flock on its lock file, as
# StagedCache holds it) is never evicted.
small=$WORK/small
expect_status 0 "$SLIP" stage "$cache" --to "$small" --budget $((bytes * 3 / 2))
mkfifo "$WORK/held" "$WORK/release"
flock -s "$small/.$name.stage-lock" sh -c "echo held > '$WORK/held'; cat '$WORK/release' >/dev/null" &
reader=$!
read -r _ <"$WORK/held"
expect_status 4 "$SLIP" stage "$other" --to "$small" --budget $((bytes * 3 / 2))
grep -q "does not fit the budget" "$WORK/err" || fail "stderr: $(cat "$WORK/err")"
[ -d "$small/$name" ] && [ ! -e "$small/other-$name" ] || fail "a held cache was evicted: $(ls -A "$small")"
echo >"$WORK/release"
wait "$reader"
expect_status 0 "$SLIP" stage "$other" --to "$small" --budget $((bytes * 3 / 2)) --json
[ "$(json_get "$WORK/out" '["evicted"]')" = "['$small/$name']" ] || fail "evicted: $(cat "$WORK/out")"
[ ! -e "$small/$name" ] && [ -d "$small/other-$name" ] || fail "after eviction: $(ls -A "$small")"
expect_status 4 "$SLIP" stage "$cache" --to "$small" --budget $((bytes / 2))
[ -d "$small/other-$name" ] || fail "a cache larger than the budget evicted another"
pass "--budget evicts the least recently used unheld copy; a held one is kept (exit 4)"

expect_status 2 "$SLIP" stage "$cache"
expect_status 2 "$SLIP" stage "$cache" --to "$WORK/caches"  # the cache is already there
mkdir -p "$WORK/inway/$name"
expect_status 4 "$SLIP" stage "$cache" --to "$WORK/inway"
grep -q "is in the way" "$WORK/err" || fail "stderr: $(cat "$WORK/err")"
pass "usage and in-the-way errors"
