#!/usr/bin/env bash
# End to end on the 800-image corpus: convert, verify, an independent numpy/torchvision check,
# idempotence, --force, corruption detection, cat.
source "$(dirname "$0")/common.bash"

expect_status 0 "$SLIP" convert "$CORPUS" -o "$WORK/caches" --json
cp "$WORK/out" "$WORK/convert.json"
cache=$(json_get "$WORK/convert.json" "['path']")
[ "$(json_get "$WORK/convert.json" "['written']")" = 800 ] || fail "written != 800"
[ "$(json_get "$WORK/convert.json" "['transcoded']")" = 10 ] || fail "transcoded != 10 (6 PNG + 4 CMYK)"
[ "$(json_get "$WORK/convert.json" "['skipped']")" = 0 ] || fail "skipped != 0"
case "$(basename "$cache")" in imagenet_like-????????.slipstream) ;; *) fail "cache name $(basename "$cache")" ;; esac
# The ledger names every PNG and CMYK file of the corpus manifest, and nothing else.
want=$(awk -F'\t' 'NR>1 && ($5=="png" || $6=="cmyk") {print $1}' "$SLIP_SHARED_DIR/corpus/imagenet_like.manifest.tsv" | sort)
got=$($PY -c "import json,sys,os; m=json.load(open(sys.argv[1]+'/manifest.json')); print('\n'.join(sorted(os.path.relpath(e['origin'], sys.argv[2]) for e in m['slip']['ledger'] if e['action']=='transcoded')))" "$cache" "$CORPUS")
[ "$want" = "$got" ] || fail "ledger transcoded set differs from the corpus's PNG+CMYK files"
pass "convert: 800 samples, 10 transcoded (the corpus's PNG and CMYK files)"

expect_status 0 "$SLIP" verify "$cache"
grep -q "^OK " "$WORK/out" || fail "verify did not say OK"
pass "verify clean"

$PY "$SRC/tests/python/check_cache.py" "$cache" "$CORPUS" || fail "independent python check"

# Every stored image decodes to RGB with TurboJPEG after a default convert (PIL uses libjpeg-turbo).
$PY - "$cache" <<'PY' || fail "a stored image is not an RGB/L JPEG"
import io, sys, numpy as np
from PIL import Image
c = sys.argv[1]
meta = np.load(c + "/image.meta.npy"); blob = open(c + "/image.bin", "rb").read()
for i, r in enumerate(meta):
    im = Image.open(io.BytesIO(blob[r["data_ptr"]:r["data_ptr"] + r["data_size"]]))
    assert im.format == "JPEG" and im.mode in ("RGB", "L"), (i, im.mode)
    assert im.size == (r["width"], r["height"]), (i, im.size)
    im.load()
print("ok: all", len(meta), "stored images are RGB or grayscale JPEGs that decode")
PY

# Idempotent: the second run finds the complete cache and rewrites nothing.
before=$(stat -c %Y.%i "$cache/manifest.json")
expect_status 0 "$SLIP" convert "$CORPUS" -o "$WORK/caches2" --json
expect_status 0 "$SLIP" convert "$CORPUS" -o "$(dirname "$cache")" --json
[ "$(json_get "$WORK/out" "['reused']")" = True ] || fail "second convert did not reuse the cache"
[ "$(stat -c %Y.%i "$cache/manifest.json")" = "$before" ] || fail "second convert rewrote the cache"
expect_status 0 "$SLIP" convert "$CORPUS" -o "$(dirname "$cache")"
[ "$(tail -n1 "$WORK/out")" = "$cache" ] || fail "last stdout line is not the cache path"
pass "idempotent re-run"

expect_status 0 "$SLIP" convert "$CORPUS" -o "$(dirname "$cache")" --force --json
[ "$(json_get "$WORK/out" "['reused']")" = False ] || fail "--force reused"
[ "$(stat -c %Y.%i "$cache/manifest.json")" != "$before" ] || fail "--force did not rebuild"
expect_status 0 "$SLIP" verify "$cache"
pass "--force rebuilds"

# cat: the raw bytes of sample 0 equal its source file; values print as text.
first=$(find "$CORPUS" -mindepth 2 -type f | LC_ALL=C sort | sed -n 1p)
expect_status 0 "$SLIP" cat "$cache" 0 -o "$WORK/s0.jpg"
cmp -s "$WORK/s0.jpg" "$first" || fail "cat 0 differs from $first"
expect_status 0 "$SLIP" cat "$cache" 799 --field label
[ "$(cat "$WORK/out")" = 9 ] || fail "label of sample 799 is $(cat "$WORK/out")"
expect_status 0 "$SLIP" cat "$cache" 5 --field path
[ "$(cat "$WORK/out")" = "imagenet_like/$(find "$CORPUS" -mindepth 2 -type f -printf '%P\n' | LC_ALL=C sort | sed -n 6p)" ] || fail "path of sample 5"
expect_status 2 "$SLIP" cat "$cache" 800
expect_status 2 "$SLIP" cat "$cache" 0 --field nope
pass "cat"

# Corruption: a flipped byte in image.bin names the sample; a truncated meta table names the file.
bad=$WORK/bad1 && cp -r "$cache" "$bad"
read -r ptr size < <($PY -c "import numpy as np; m=np.load('$bad/image.meta.npy'); print(m[123]['data_ptr'], m[123]['data_size'])")
off=$((ptr + size / 2))
$PY -c "f=open('$bad/image.bin','r+b'); f.seek($off); b=f.read(1); f.seek($off); f.write(bytes([b[0]^0x40]))"
expect_status 1 "$SLIP" verify "$bad"
grep -q "sample 123" "$WORK/out" || { cat "$WORK/out"; fail "flipped byte: sample 123 not named"; }
bad=$WORK/bad2 && cp -r "$cache" "$bad"
truncate -s -24 "$bad/image.meta.npy"
expect_status 1 "$SLIP" verify "$bad"
grep -q "image.meta.npy" "$WORK/out" || { cat "$WORK/out"; fail "truncated meta: file not named"; }
expect_status 1 "$SLIP" verify "$bad" --json
$PY -c "import json; d=json.load(open('$WORK/out')); assert d['ok'] is False and d['issues'][0]['file']=='image.meta.npy', d"
pass "corruptions detected"

# info reports the provenance and the ledger.
expect_status 0 "$SLIP" info "$cache" --json
$PY - "$WORK/out" <<'PY' || fail "info --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["samples"] == 800
f = {x["name"]: x for x in d["fields"]}
assert list(f) == ["image", "label", "index", "path"]
assert sum(f["label"]["histogram"].values()) == 800 and len(f["label"]["histogram"]) == 10
assert f["image"]["width"]["max"] == 4000 and f["image"]["width"]["min"] == 1
assert d["provenance"]["source"]["kind"] == "imagefolder"
assert d["ledger"] == {"transcoded": 10}
print("ok: info --json")
PY
expect_status 0 "$SLIP" ls "$(dirname "$cache")"
grep -q "imagenet_like-.*complete" "$WORK/out" || fail "ls does not list the cache as complete"
pass "info, ls"
