#!/usr/bin/env bash
# Converting again reuses the cache only after checking what is cheap to check: the manifest
# against its checksum, every file's size against file_sizes, and the checksums of the tables
# (everything but the payloads). It says so, and that the payloads were not read ("slip verify
# checks them"), instead of "a complete cache already exists". A cache there that fails a check
# (a payload file cut short, a flipped byte in a table, an edited manifest) is not reused: it
# is converted again, with a warning naming what did not match, and the new cache replaces it.
source "$(dirname "$0")/common.bash"
r=$WORK/src && two_class_folder "$r"
cache=$("$SLIP" convert "$r" -o "$WORK/o" -q)
convert_again() { expect_status 0 "$SLIP" convert "$r" -o "$WORK/o" --json; }

convert_again
[ "$(json_get "$WORK/out" "['reused']")" = True ] || fail "an intact cache was not reused"
grep -q "payloads were not read: slip verify checks them" "$WORK/err" || { cat "$WORK/err"; fail "reuse does not say what was checked"; }
grep -q "complete cache of this source already exists" "$WORK/err" && fail "the old message is still printed"
json_get "$WORK/out" "['reuse_checked']" | grep -q "file sizes" || fail "--json reuse_checked"
pass "reuse says what was checked (manifest checksum, sizes, tables) and what was not (payloads)"

# A flipped payload byte keeps every size: reused (as said), and `slip verify` finds it.
printf '\x00' | dd of="$cache/image.bin" bs=1 seek=3000 conv=notrunc status=none
convert_again
[ "$(json_get "$WORK/out" "['reused']")" = True ] || fail "payload damage was found without reading payloads?"
expect_status 1 "$SLIP" verify "$cache"
pass "a flipped payload byte: reused as announced (payloads not read); slip verify reports it"

# Cut short: the size no longer matches: converted again, the warning says why.
truncate -s -10 "$cache/image.bin"
convert_again
[ "$(json_get "$WORK/out" "['reused']")" = False ] || fail "a cut-short cache was reused"
grep -q "damaged (image.bin is [0-9]* bytes; the manifest says [0-9]*); converting it again" "$WORK/err" ||
  { cat "$WORK/err"; fail "no warning naming the short file"; }
[ "$(json_get "$WORK/out" "['path']")" = "$cache" ] || fail "rebuilt elsewhere"
expect_status 0 "$SLIP" verify "$cache"
pass "a payload file cut short: converted again, with a warning naming it"

# A table with a flipped byte (same size): its checksum does not match.
printf '\x07' | dd of="$cache/label.npy" bs=1 seek=130 conv=notrunc status=none
convert_again
[ "$(json_get "$WORK/out" "['reused']")" = False ] || fail "a cache with a damaged table was reused"
grep -q "label.npy does not match its checksum" "$WORK/err" || { cat "$WORK/err"; fail "no warning naming the table"; }
expect_status 0 "$SLIP" verify "$cache"
# An edited manifest (its checksum no longer matches).
sed -i 's/"num_samples": 6/"num_samples":  6/' "$cache/manifest.json"
convert_again
[ "$(json_get "$WORK/out" "['reused']")" = False ] || fail "a cache with an edited manifest was reused"
grep -q "manifest.json does not match manifest.json.xxh3" "$WORK/err" || { cat "$WORK/err"; fail "no warning naming the manifest"; }
expect_status 0 "$SLIP" verify "$cache"
pass "a damaged table or an edited manifest: converted again, with a warning naming it"
