#!/usr/bin/env bash
# LitData `pil` leaves in every mode LitData stores (CMYK, YCbCr, HSV, LAB, RGBX, PA besides
# RGB/L/...) convert to RGB as Pillow's Image.convert("RGB") does (LAB: standard CIE D65, close
# to Pillow's own approximation on average), then to the cache's JPEG
# (q100, ledger "transcoded"): compared with Pillow's own conversion of the same pixels, within
# what the JPEG q100 round trip itself costs (max 6, mean 1). A payload that does not decode (a bad dtype suffix, pixels of the
# wrong length) is a per-sample problem that --on-error skip skips.
source "$(dirname "$0")/common.bash"
ds=$WORK/pil && mkdir -p "$ds"
$PY - "$ds" <<'PY'
import json, struct, sys, numpy as np
from PIL import Image
d = sys.argv[1]
rng = np.random.default_rng(5)
modes = ["CMYK", "YCbCr", "HSV", "LAB", "RGBX", "PA", "RGB"]
items, refs = [], []
for mode in modes:
    # Smooth images (JPEG keeps them), in-gamut colours for LAB (built from RGB with Pillow).
    w, h = 48, 32
    x = np.linspace(0, 1, w)[None, :, None]; y = np.linspace(0, 1, h)[:, None, None]
    rgb = (np.concatenate([x * 200 + 30 + 0 * y, y * 180 + 40 + 0 * x, (x + y) * 90 + 20], axis=2)).astype(np.uint8)
    src = Image.fromarray(rgb, "RGB")
    im = src.convert("P").convert("PA") if mode == "PA" else src.convert(mode) if mode not in ("RGBX",) else src.convert("RGBX")
    raw = im.tobytes()
    payload = struct.pack("<III", w, h, len(mode)) + mode.encode() + raw
    ref = Image.frombytes(mode, (w, h), raw)
    ref = ref.convert("L").convert("RGB") if mode == "PA" else ref.convert("RGB")  # no palette stored: grey levels
    refs.append(np.asarray(ref).tolist())
    items.append([payload, mode.encode()])
bad = [struct.pack("<III", 4, 4, 4) + b"CMYK" + b"\0" * 10, b"CMYK"]  # pixels of the wrong length
items.insert(3, bad)
def chunk(items):
    body = []
    for leaves in items:
        body.append(struct.pack("<" + "I" * len(leaves), *map(len, leaves)) + b"".join(leaves))
    n = len(body); off = [4 + 4 * (n + 1)]
    for b in body: off.append(off[-1] + len(b))
    return struct.pack("<I", n) + struct.pack("<" + "I" * (n + 1), *off) + b"".join(body)
data = chunk(items)
open(f"{d}/chunk-0-0.bin", "wb").write(data)
spec = [1, {"type": "builtins.dict", "context": json.dumps(["image", "mode"]),
            "children_spec": [{"type": None, "context": None, "children_spec": []}] * 2}]
json.dump({"chunks": [{"chunk_bytes": len(data), "chunk_size": len(items), "dim": None, "filename": "chunk-0-0.bin"}],
           "config": {"chunk_bytes": 1 << 26, "chunk_size": None, "compression": None, "data_format": ["pil", "str"],
                      "data_spec": json.dumps(spec), "encryption": None, "item_loader": "PyTreeLoader"},
           "updated_at": "0"}, open(f"{d}/index.json", "w"))
json.dump(refs, open(f"{d}.refs.json", "w"))
PY
expect_status 3 "$SLIP" convert "$ds" -o "$WORK/o"
grep -q "pil CMYK pixels" "$WORK/err" || { cat "$WORK/err"; fail "bad pil payload not named"; }
expect_status 0 "$SLIP" convert "$ds" -o "$WORK/o" --on-error skip --json
$PY - "$WORK/out" "$ds.refs.json" <<'PY' || fail "pil modes differ from Pillow"
import io, json, sys, numpy as np
from PIL import Image
d = json.load(open(sys.argv[1])); refs = json.load(open(sys.argv[2]))
assert d["written"] == 7 and d["skipped"] == 1, d
assert sum(e["action"] == "transcoded" for e in d["ledger"]) == 7, d["ledger"]
c = d["path"]
meta = np.load(f"{c}/image.meta.npy"); blob = open(f"{c}/image.bin", "rb").read()
modes = ["CMYK", "YCbCr", "HSV", "LAB", "RGBX", "PA", "RGB"]
for i, (mode, ref) in enumerate(zip(modes, refs)):
    ptr, size = int(meta[i]["data_ptr"]), int(meta[i]["data_size"])
    ours = np.asarray(Image.open(io.BytesIO(blob[ptr:ptr + size])).convert("RGB")).astype(int)
    ref = np.asarray(ref, dtype=np.uint8)
    diff = np.abs(ours - ref.astype(int))
    print(f"{mode}: max {diff.max()}, mean {diff.mean():.3f} against Pillow's convert('RGB') (after our JPEG q100)")
    if mode == "LAB":
        # Standard CIE L*a*b* (D65) -> sRGB. Pillow's LAB is its own approximation (its own
        # RGB -> LAB -> RGB round trip is off by up to 32): close on average, not exactly.
        assert diff.mean() <= 4.0, mode
    else:
        assert diff.max() <= 6 and diff.mean() <= 1.0, mode  # JPEG q100's own error is about this
PY
cat "$WORK/out" > /dev/null
pass "pil CMYK/YCbCr/HSV/LAB/RGBX/PA converted as Pillow does; a bad payload is skipped with --on-error skip"
