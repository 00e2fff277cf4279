#!/usr/bin/env bash
# No silent wrong answers (issue 36): tar `--missing empty` stores -1 (never a real class) for a
# missing label and records a `filled` ledger entry; a tar of `class/file.jpg` members read as
# WebDataset warns that it gets no label (with the --layout imagefolder hint); LitData
# `--fields` with the wrong number of names is refused.
source "$(dirname "$0")/common.bash"

# A WebDataset shard: a.jpg a.cls (label 0), b.jpg without a label, c.jpg c.cls (label 3).
images=("$CORPUS"/*/*.JPEG) && img=${images[0]}
mkdir -p "$WORK/wds" && cd "$WORK/wds"
cp "$img" a.jpg && cp "$img" b.jpg && cp "$img" c.jpg && echo 0 > a.cls && echo 3 > c.cls
tar -cf "$WORK/missing.tar" a.jpg a.cls b.jpg c.jpg c.cls
cd - > /dev/null
cache=$("$SLIP" convert "$WORK/missing.tar" --missing empty -o "$WORK/caches" -q)
labels=$(for i in 0 1 2; do "$SLIP" cat "$cache" $i --field label; done | tr '\n' ' ')
[ "$labels" = "0 -1 3 " ] || fail "--missing empty labels are '$labels', want '0 -1 3 '"
"$SLIP" info --json "$cache" > "$WORK/info.json"
$PY - "$WORK/info.json" <<'PYEOF' || fail "no filled ledger entry for the missing label"
import json, sys
entries = json.load(open(sys.argv[1]))["ledger_entries"]
filled = [e for e in entries if e["action"] == "filled"]
assert len(filled) == 1, entries
assert filled[0]["field"] == "label" and filled[0]["sample"] == 1 and "-1" in filled[0]["reason"], filled
PYEOF
"$SLIP" verify "$cache" > /dev/null || fail "the --missing empty cache does not verify"
pass "--missing empty: a missing label is -1, with a 'filled' ledger entry"

# class/file.jpg members read as WebDataset: a warning naming the fix.
mkdir -p "$WORK/if/cat" "$WORK/if/dog" && cp "$img" "$WORK/if/cat/1.jpg" && cp "$img" "$WORK/if/dog/2.jpg"
tar -C "$WORK/if" -cf "$WORK/folders.tar" cat dog
expect_status 0 "$SLIP" convert "$WORK/folders.tar" -o "$WORK/caches"
grep -q "no label" "$WORK/err" && grep -q -- "--layout imagefolder" "$WORK/err" ||
  { cat "$WORK/err"; fail "no warning that class/file members give no label"; }
expect_status 0 "$SLIP" convert "$WORK/folders.tar" --layout imagefolder -o "$WORK/caches"
if grep -q -- "--layout imagefolder" "$WORK/err"; then cat "$WORK/err"; fail "the hint is printed with --layout imagefolder too"; fi
expect_status 0 "$SLIP" convert "$WORK/missing.tar" --missing empty -o "$WORK/caches2"
if grep -q -- "--layout imagefolder" "$WORK/err"; then cat "$WORK/err"; fail "the hint is printed for a WebDataset shard"; fi
pass "class/file.jpg members without --layout imagefolder: warned, with the hint"

# LitData --fields: one name per leaf (tuple_samples has two: an image and an int).
lit=$SLIP_SHARED_DIR/fixtures/litdata/tuple_samples
if have_shared "LitData --fields (the LitData fixture)"; then
  expect_status 2 "$SLIP" convert "$lit" --fields image -o "$WORK/lit"
  grep -q -- "--fields gives 1 name;" "$WORK/err" || { cat "$WORK/err"; fail "too few --fields names not explained"; }
  expect_status 2 "$SLIP" convert "$lit" --fields image,label,extra -o "$WORK/lit"
  expect_status 0 "$SLIP" convert "$lit" --fields image,label -o "$WORK/lit"
  pass "LitData --fields with the wrong number of names: refused"
fi
