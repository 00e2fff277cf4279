#!/usr/bin/env bash
# convert --jpeg-restarts: its own cache (a byte-affecting option, recorded in the manifest),
# verified; every image re-encoded with restart markers decodes in Pillow (an independent
# reader) to exactly the pixels of the plain cache's image, for every JPEG kind of the corpus
# (progressive, grayscale, 4:4:4, 4:2:2, CMYK transcoded, restart markers already there); and
# the option makes no sense with --image-format yuv420.
source "$(dirname "$0")/common.bash"
src=$WORK/src && mkdir -p "$src/a"
# One corpus image of each kind (sampling, progressive, notes), at most 4 MP, with the reference
# data; examples/sample has one of each kind too.
if have_shared "the corpus's images of each kind (examples/sample's only)"; then
awk -F'\t' 'NR>1 && $3*$4 <= 4000000 && !seen[$5 "/" $6 "/" $7 "/" $8]++ {print $1}' "$SLIP_SHARED_DIR/corpus/imagenet_like.manifest.tsv" |
  while read -r f; do cp "$CORPUS/$f" "$src/a/"; done
awk -F'\t' 'NR>1 && $9 ~ /restart/ {print $1}' "$SLIP_SHARED_DIR/corpus/imagenet_like.manifest.tsv" | while read -r f; do cp "$CORPUS/$f" "$src/a/"; done
fi
cp "$SRC"/examples/sample/*/*.JPEG "$src/a/" 2>/dev/null || true
n=$(ls "$src/a" | wc -l)
[ "$n" -ge 20 ] || fail "only $n source images"

plain=$("$SLIP" convert "$src" -o "$WORK/c" -q)
expect_status 0 "$SLIP" convert "$src" -o "$WORK/c" --jpeg-restarts --json
restarted=$(json_get "$WORK/out" "['path']")
[ "$restarted" != "$plain" ] || fail "--jpeg-restarts returned the plain cache"
$PY -c 'import json,sys; m=json.load(open(sys.argv[1]+"/manifest.json")); assert m["slip"]["options"] == {"jpeg-restarts": "1"}, m["slip"]["options"]' "$restarted" ||
  fail "manifest options"
"$SLIP" convert "$src" -o "$WORK/c" --jpeg-restarts --dry-run --json |
  $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["exists"] and d["path"] == sys.argv[1], d' "$restarted" || fail "dry run"
expect_status 0 "$SLIP" verify "$restarted"
pass "--jpeg-restarts: its own cache ($n images), options in the manifest, found by --dry-run, verified"

$PY - "$plain" "$restarted" <<'PY' || fail "Pillow pixels"
import io, json, sys
import numpy as np
from PIL import Image
def payloads(d):
    meta, data = np.load(d + "/image.meta.npy"), np.fromfile(d + "/image.bin", np.uint8)
    return meta, [data[m["data_ptr"]: m["data_ptr"] + m["data_size"]].tobytes() for m in meta]
pmeta, plain = payloads(sys.argv[1])
rmeta, restarted = payloads(sys.argv[2])
assert len(plain) == len(restarted)
assert (pmeta["height"] == rmeta["height"]).all() and (pmeta["width"] == rmeta["width"]).all()
def segments(b):
    """The marker segments before the first scan, and whether a DRI is there."""
    i, markers = 2, []
    while i + 4 <= len(b) and b[i] == 0xFF:
        m, n = b[i + 1], b[i + 2] << 8 | b[i + 3]
        markers.append(m)
        if m == 0xDA:
            break
        i += 2 + n
    return markers
reencoded = 0
for i, (a, b) in enumerate(zip(plain, restarted)):
    pa, pb = Image.open(io.BytesIO(a)), Image.open(io.BytesIO(b))
    assert pa.mode == pb.mode and pa.size == pb.size, (i, pa.mode, pb.mode)
    assert np.array_equal(np.asarray(pa.convert("RGB")), np.asarray(pb.convert("RGB"))), f"sample {i}: pixels differ"
    if pa.mode in ("RGB", "L") and a[:2] == b"\xff\xd8":
        markers = segments(b)
        assert 0xDD in markers, (i, markers)                     # DRI: restart markers
        assert 0xC2 not in markers and 0xDA in markers, (i, markers)  # sequential, one scan
        assert pb.info.get("progressive", 0) == 0
        reencoded += 1
assert reencoded >= 15, reencoded
print(len(plain), "images,", reencoded, "re-encoded, every pixel equal in Pillow")
PY
pass "Pillow decodes every re-encoded image to the plain cache's pixels"

expect_status 2 "$SLIP" convert "$src" -o "$WORK/c" --jpeg-restarts --image-format yuv420
grep -q "jpeg-restarts" "$WORK/err" || fail "the usage error does not name the option"
pass "--jpeg-restarts with --image-format yuv420 is a usage error"
