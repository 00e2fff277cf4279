#!/usr/bin/env bash
# End to end on the 800-image corpus (or, without the reference data, the 40 of examples/sample):
# convert, verify, an independent numpy/torchvision check, idempotence, --force, corruption
# detection, cat.
source "$(dirname "$0")/common.bash"
# What the tree holds, read independently of slip (Pillow): images, classes, the files slip must
# transcode (PNG content, CMYK JPEGs), the widest and narrowest image.
read -r N CLASSES T WMAX WMIN < <($PY - "$CORPUS" <<'PY'
import os, sys
from PIL import Image
root = sys.argv[1]
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
widths, transcode = [], 0
for f in files:
    with Image.open(f) as im:
        widths.append(im.size[0])
        transcode += im.format == "PNG" or im.mode == "CMYK"
print(len(files), len(next(os.walk(root))[1]), transcode, max(widths), min(widths))
PY
)
[ "$N" -ge 40 ] && [ "$T" -ge 2 ] || fail "unexpected corpus $CORPUS: $N files, $T to transcode"
NAME=$(basename "$CORPUS")

expect_status 0 "$SLIP" convert "$CORPUS" -o "$WORK/caches" --json
cp "$WORK/out" "$WORK/convert.json"
cache=$(json_get "$WORK/convert.json" "['path']")
[ "$(json_get "$WORK/convert.json" "['written']")" = "$N" ] || fail "written != $N"
[ "$(json_get "$WORK/convert.json" "['transcoded']")" = "$T" ] || fail "transcoded != $T (the PNG and CMYK files)"
[ "$(json_get "$WORK/convert.json" "['skipped']")" = 0 ] || fail "skipped != 0"
case "$(basename "$cache")" in "$NAME"-????????.slipstream) ;; *) fail "cache name $(basename "$cache")" ;; esac
# The ledger names every PNG and CMYK file of the tree (Pillow's view), and nothing else.
want=$($PY - "$CORPUS" <<'PY' | sort
import os, sys
from PIL import Image
root = sys.argv[1]
for d, _, fs in os.walk(root):
    for f in fs:
        with Image.open(os.path.join(d, f)) as im:
            if im.format == "PNG" or im.mode == "CMYK":
                print(os.path.relpath(os.path.join(d, f), root))
PY
)
got=$($PY -c "import json,sys,os; m=json.load(open(sys.argv[1]+'/manifest.json')); print('\n'.join(sorted(os.path.relpath(e['origin'], sys.argv[2]) for e in m['slip']['ledger'] if e['action']=='transcoded')))" "$cache" "$CORPUS")
[ "$want" = "$got" ] || fail "ledger transcoded set differs from the corpus's PNG+CMYK files"
pass "convert: $N samples, $T transcoded (the PNG and CMYK files)"

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
expect_status 0 "$SLIP" cat "$cache" $((N - 1)) --field label
[ "$(cat "$WORK/out")" = $((CLASSES - 1)) ] || fail "label of sample $((N - 1)) is $(cat "$WORK/out")"
expect_status 0 "$SLIP" cat "$cache" 5 --field path
[ "$(cat "$WORK/out")" = "$NAME/$(find "$CORPUS" -mindepth 2 -type f -printf '%P\n' | LC_ALL=C sort | sed -n 6p)" ] || fail "path of sample 5"
expect_status 2 "$SLIP" cat "$cache" "$N"
expect_status 2 "$SLIP" cat "$cache" 0 --field nope
pass "cat"

# Corruption: a flipped byte in image.bin names the sample; a truncated meta table names the file.
bad=$WORK/bad1 && cp -r "$cache" "$bad"
s=$((N > 123 ? 123 : N / 2))
read -r ptr size < <($PY -c "import numpy as np; m=np.load('$bad/image.meta.npy'); print(m[$s]['data_ptr'], m[$s]['data_size'])")
off=$((ptr + size / 2))
$PY -c "f=open('$bad/image.bin','r+b'); f.seek($off); b=f.read(1); f.seek($off); f.write(bytes([b[0]^0x40]))"
expect_status 1 "$SLIP" verify "$bad"
grep -q "sample $s" "$WORK/out" || { cat "$WORK/out"; fail "flipped byte: sample $s not named"; }
bad=$WORK/bad2 && cp -r "$cache" "$bad"
truncate -s -24 "$bad/image.meta.npy"
expect_status 1 "$SLIP" verify "$bad"
grep -q "image.meta.npy" "$WORK/out" || { cat "$WORK/out"; fail "truncated meta: file not named"; }
expect_status 1 "$SLIP" verify "$bad" --json
$PY -c "import json; d=json.load(open('$WORK/out')); assert d['ok'] is False and d['issues'][0]['file']=='image.meta.npy', d"
pass "corruptions detected"

# info reports the provenance and the ledger.
expect_status 0 "$SLIP" info "$cache" --json
$PY - "$WORK/out" "$N" "$CLASSES" "$T" "$WMAX" "$WMIN" <<'PY' || fail "info --json"
import json, sys
d = json.load(open(sys.argv[1]))
n, classes, transcoded, wmax, wmin = map(int, sys.argv[2:])
assert d["samples"] == n
f = {x["name"]: x for x in d["fields"]}
assert list(f) == ["image", "label", "index", "path"]
assert sum(f["label"]["histogram"].values()) == n and len(f["label"]["histogram"]) == classes
assert f["image"]["width"]["max"] == wmax and f["image"]["width"]["min"] == wmin, f["image"]["width"]
assert d["provenance"]["source"]["kind"] == "imagefolder"
assert d["ledger"] == {"transcoded": transcoded}
print("ok: info --json")
PY
expect_status 0 "$SLIP" ls "$(dirname "$cache")"
grep -q "$NAME-.*complete" "$WORK/out" || fail "ls does not list the cache as complete"
pass "info, ls"
