#!/usr/bin/env bash
# YUV420 from the command line: convert --image-format yuv420, slip yuv420 (atomic, idempotent,
# checksummed), what numpy reads from both, verify (and verify --decode), bench on both with
# --compare, and the errors.
source "$(dirname "$0")/common.bash"
jpeg=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q)
yuv=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q --image-format yuv420)
[[ "$yuv" == *"-yuv420-"* && "$yuv" != "$jpeg" ]] || fail "yuv420 cache path $yuv"
"$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" --image-format yuv420 --dry-run --json | \
  $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["exists"] and d["path"] == sys.argv[1], d' "$yuv"
pass "convert --image-format yuv420 writes its own cache, found again by --dry-run"

"$SLIP" yuv420 "$jpeg" --json >"$WORK/y.json"
$PY - "$WORK/y.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["fields"][0]
assert d["field"] == "image" and not d["reused"] and d["bytes"] > 0 and d["storage_ratio"] > 1, d
PY
"$SLIP" yuv420 "$jpeg" --json | $PY -c 'import json,sys; assert json.load(sys.stdin)["fields"][0]["reused"]'
ls -a "$jpeg" | grep -q '^\..*tmp' && fail "temporary files left in the cache"
pass "slip yuv420 builds the siblings once, then reuses them"

# What the Python loader's numpy code sees: the same payloads in the dedicated cache and in the
# siblings (except where the JPEG cache holds a re-encoded PNG/CMYK image, per its ledger), even
# padded sizes, payload sizes h*w*3/2, manifest format strings.
$PY - "$jpeg" "$yuv" <<'PY'
import json, sys
import numpy as np
jdir, ydir = sys.argv[1], sys.argv[2]
jm, ym = json.load(open(jdir + "/manifest.json")), json.load(open(ydir + "/manifest.json"))
assert jm["fields"]["image"]["image_format"] == "jpeg" and ym["fields"]["image"]["image_format"] == "yuv420"
assert "image_yuv420.bin" not in jm["file_sizes"], "siblings must not be in file_sizes"
assert "image_yuv420.bin" in jm["slip"]["checksums"]["files"], "siblings are checksummed"
jmeta, smeta, ymeta = (np.load(p) for p in (jdir + "/image.meta.npy", jdir + "/image_yuv420.meta.npy", ydir + "/image.meta.npy"))
sbin, ybin = np.fromfile(jdir + "/image_yuv420.bin", np.uint8), np.fromfile(ydir + "/image.bin", np.uint8)
assert len(smeta) == len(ymeta) == len(jmeta) == jm["num_samples"]
transcoded = {e["sample"] for e in jm["slip"]["ledger"] if e["action"] == "transcoded"}
assert transcoded, "the sample set has a PNG/CMYK image"
for i in range(len(jmeta)):
    h, w = int(jmeta["height"][i]), int(jmeta["width"][i])
    for m in (smeta, ymeta):
        assert (m["height"][i], m["width"][i]) == (h + h % 2, w + w % 2), (i, m[i], h, w)
        assert m["data_size"][i] == (h + h % 2) * (w + w % 2) * 3 // 2
    a = sbin[smeta["data_ptr"][i]: smeta["data_ptr"][i] + smeta["data_size"][i]]
    b = ybin[ymeta["data_ptr"][i]: ymeta["data_ptr"][i] + ymeta["data_size"][i]]
    if i not in transcoded:
        assert (a == b).all(), i
assert ym["fields"]["image"]["max_size"] == int(ymeta["data_size"].max() * 1.2)
print(len(jmeta), "samples agree")
PY
pass "numpy reads matching payloads from the dedicated cache and the siblings"

expect_status 0 "$SLIP" verify "$yuv"
expect_status 0 "$SLIP" verify "$jpeg" --decode
grep -q "images decoded (max diff 0, mean 0)" "$WORK/out" || { cat "$WORK/out"; fail "verify --decode of siblings"; }
printf '\x00\x00\x00\x00' | dd of="$jpeg/image_yuv420.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_status 1 "$SLIP" verify "$jpeg"
grep -q "image_yuv420.bin.*checksum mismatch" "$WORK/out" || { cat "$WORK/out"; fail "damaged sibling not named"; }
"$SLIP" yuv420 "$jpeg" -q >/dev/null
expect_status 0 "$SLIP" verify "$jpeg"
pass "verify checks the siblings; slip yuv420 rebuilds damaged ones"

for p in raw center rrc multicrop; do
  "$SLIP" bench "$jpeg" -p "$p" -e 1 -b 8 --compare "$yuv" --json >"$WORK/b.json"
  $PY - "$WORK/b.json" "$p" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["base"]["image_format"] == "jpeg" and d["other"]["image_format"] == "yuv420", d
assert d["base"]["pipeline"] == d["other"]["pipeline"] == sys.argv[2]
assert d["speed_ratio"] > 0 and d["storage_ratio"] > 1, d
PY
done
"$SLIP" bench "$jpeg" -p rrc -e 1 --compare siblings >"$WORK/text"
grep -q "^yuv420 siblings vs jpeg, pipeline rrc: .* img/s: .*x the speed at .*x the bytes$" "$WORK/text" || { cat "$WORK/text"; fail "comparison line"; }
"$SLIP" bench "$jpeg" -p center -e 1 --yuv420-siblings --json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["yuv420_siblings"] and d["image_format"] == "yuv420", d'
pass "bench runs every pipeline on YUV420 and prints the ratios"

expect_status 2 "$SLIP" yuv420 "$yuv"
grep -q "no JPEG image field" "$WORK/err" || { cat "$WORK/err"; fail "yuv420 of a yuv420 cache"; }
expect_status 2 "$SLIP" bench "$yuv" --compare siblings
expect_status 2 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" --image-format png
rm "$jpeg/image_yuv420.meta.npy"
expect_status 2 "$SLIP" bench "$jpeg" --yuv420-siblings
grep -q "slip yuv420" "$WORK/err" || { cat "$WORK/err"; fail "missing siblings message"; }
pass "usage errors"
