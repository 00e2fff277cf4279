#!/usr/bin/env bash
# The ledger gives each transcoded field its own reason. A LitData item holding a CMYK JPEG in
# one field and `pil` pixels in another once gave the JPEG field the pil field's reason (one
# reason per sample, the last one's); pil images of 1, 2 or 4 channels (L, LA, RGBA, CMYK) were
# described by the channel count slip made of them ("raw 3-channel pixels" for CMYK). Each entry
# now names its field's own kind: "CMYK JPEG ...", "pil CMYK pixels (4 channels, ...)",
# "pil L pixels (1 channel, grey)", "pil RGBA pixels (4 channels, alpha dropped)".
source "$(dirname "$0")/common.bash"
ds=$WORK/ld && mkdir -p "$ds"
$PY - "$ds" <<'PY'
import io, json, struct, sys, numpy as np
from PIL import Image
d = sys.argv[1]
w, h = 40, 24
x = np.linspace(0, 1, w)[None, :, None]; y = np.linspace(0, 1, h)[:, None, None]
rgb = Image.fromarray((np.concatenate([x * 200 + 30 + 0 * y, y * 180 + 40 + 0 * x, (x + y) * 90 + 20], axis=2)).astype(np.uint8), "RGB")
def jpeg(im):
    b = io.BytesIO(); im.save(b, "JPEG", quality=95); return b.getvalue()
def pil(im):
    return struct.pack("<III", im.width, im.height, len(im.mode)) + im.mode.encode() + im.tobytes()
cmyk_jpeg, rgb_jpeg = jpeg(rgb.convert("CMYK")), jpeg(rgb)
assert Image.open(io.BytesIO(cmyk_jpeg)).mode == "CMYK"
# (photo: JPEG bytes, pixels: a pil image) per item.
items = [
    [cmyk_jpeg, pil(rgb.convert("L"))],     # both transcoded, each for its own reason
    [rgb_jpeg, pil(rgb.convert("RGBA"))],   # the JPEG kept; RGBA: 4 channels
    [cmyk_jpeg, pil(rgb.convert("CMYK"))],  # a CMYK JPEG and CMYK pixels
    [rgb_jpeg, pil(rgb.convert("LA"))],     # 2 channels, alpha dropped
    [rgb_jpeg, pil(rgb)],
]
def chunk(items):
    body = [struct.pack("<" + "I" * len(l), *map(len, l)) + b"".join(l) for l in items]
    n = len(body); off = [4 + 4 * (n + 1)]
    for b in body: off.append(off[-1] + len(b))
    return struct.pack("<I", n) + struct.pack("<" + "I" * (n + 1), *off) + b"".join(body)
data = chunk(items)
open(f"{d}/chunk-0-0.bin", "wb").write(data)
spec = [1, {"type": "builtins.dict", "context": json.dumps(["photo", "pixels"]),
            "children_spec": [{"type": None, "context": None, "children_spec": []}] * 2}]
json.dump({"chunks": [{"chunk_bytes": len(data), "chunk_size": len(items), "dim": None, "filename": "chunk-0-0.bin"}],
           "config": {"chunk_bytes": 1 << 26, "chunk_size": None, "compression": None, "data_format": ["jpeg", "pil"],
                      "data_spec": json.dumps(spec), "encryption": None, "item_loader": "PyTreeLoader"},
           "updated_at": "0"}, open(f"{d}/index.json", "w"))
PY
expect_status 0 "$SLIP" convert "$ds" -o "$WORK/o" --json
cache=$(json_get "$WORK/out" "['path']")
for src in "$WORK/out" "$cache/manifest.json"; do
  $PY - "$src" <<'PY' || fail "ledger reasons ($src)"
import json, sys
d = json.load(open(sys.argv[1]))
ledger = d["ledger"] if "ledger" in d else d["slip"]["ledger"]
got = {(e["source_index"], e["field"]): e["reason"] for e in ledger if e["action"] == "transcoded"}
cmyk = "CMYK JPEG (TurboJPEG cannot decode it to RGB) re-encoded as RGB JPEG q100"
want = {
    (0, "photo"): cmyk,
    (0, "pixels"): "pil L pixels (1 channel, grey) encoded as RGB JPEG q100",
    (1, "pixels"): "pil RGBA pixels (4 channels, alpha dropped) encoded as RGB JPEG q100",
    (2, "photo"): cmyk,
    (2, "pixels"): "pil CMYK pixels (4 channels, converted to RGB as Pillow does) encoded as RGB JPEG q100",
    (3, "pixels"): "pil LA pixels (2 channels, grey, alpha dropped) encoded as RGB JPEG q100",
    (4, "pixels"): "pil RGB pixels (3 channels, RGB) encoded as RGB JPEG q100",
}
for k in sorted(set(want) | set(got)):
    print(k, got.get(k))
assert got == want, got
PY
done
# The same reasons in `slip info` (text), each on its field's line.
expect_status 0 "$SLIP" info "$cache"
grep -q "(photo) -> sample 0: CMYK JPEG" "$WORK/out" || { cat "$WORK/out"; fail "info: photo's reason"; }
grep -q "(pixels) -> sample 0: pil L pixels (1 channel, grey)" "$WORK/out" || { cat "$WORK/out"; fail "info: pixels' reason"; }
pass "each transcoded field carries its own reason; pil reasons give the mode and its real channel count"

# A YUV420 conversion stores decoded planes for every image, but what was not a JPEG (PNG, CMYK
# JPEG, raw pixels) went through another conversion on the way, and the ledger lists every
# sample not stored as it came (docs/FORMAT.md#ledger): the same samples and fields as a JPEG
# conversion, with YUV420 reasons. `store_as_yuv420` once returned before adding the entry, so
# a YUV420 cache of examples/sample (PNG-named .JPEG files, CMYK JPEGs) had an empty ledger.
expect_status 0 "$SLIP" convert "$ds" -o "$WORK/o" --image-format yuv420 --json
$PY - "$WORK/out" <<'PY' || fail "YUV420 ledger reasons (LitData)"
import json, sys
d = json.load(open(sys.argv[1]))
got = {(e["source_index"], e["field"]): e["reason"] for e in d["ledger"] if e["action"] == "transcoded"}
cmyk = "CMYK JPEG (TurboJPEG cannot decode it to RGB) decoded to RGB and stored as YUV420"
want = {
    (0, "photo"): cmyk,
    (0, "pixels"): "pil L pixels (1 channel, grey) converted to YUV420",
    (1, "pixels"): "pil RGBA pixels (4 channels, alpha dropped) converted to YUV420",
    (2, "photo"): cmyk,
    (2, "pixels"): "pil CMYK pixels (4 channels, converted to RGB as Pillow does) converted to YUV420",
    (3, "pixels"): "pil LA pixels (2 channels, grey, alpha dropped) converted to YUV420",
    (4, "pixels"): "pil RGB pixels (3 channels, RGB) converted to YUV420",
}
assert got == want, got
assert d["transcoded"] == len({sample for sample, _ in want}), d["transcoded"]  # samples, not ledger entries
PY
expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/s" --json
cp "$WORK/out" "$WORK/jpeg.json"
expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/s" --image-format yuv420 --json
$PY - "$WORK/jpeg.json" "$WORK/out" <<'PY' || fail "YUV420 ledger (examples/sample)"
import json, sys
jpeg, yuv = (json.load(open(p)) for p in sys.argv[1:3])
def entries(d):
    return {(e["source_index"], e["origin"], e["field"]): e["reason"] for e in d["ledger"] if e["action"] == "transcoded"}
j, y = entries(jpeg), entries(yuv)
assert j, "examples/sample has PNG and CMYK files: the JPEG conversion lists them"
assert set(j) == set(y), (sorted(set(j) ^ set(y)))
for k, reason in j.items():
    assert reason.endswith(" re-encoded as RGB JPEG q100"), reason
    assert y[k] == reason.replace(" re-encoded as RGB JPEG q100", " decoded to RGB and stored as YUV420"), y[k]
manifest = json.load(open(yuv["path"] + "/manifest.json"))
assert len(manifest["slip"]["ledger"]) == len(y)
print(len(y), "entries")
PY
pass "a YUV420 conversion lists every PNG, CMYK and raw-pixel source in its ledger, as a JPEG conversion does"
