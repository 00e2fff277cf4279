#!/usr/bin/env bash
# A field's files must never be another field's, now or after a later command. The reserved-name
# rule blocks names ending in _yuv420, but an int field "image_yuv420.meta" owns
# image_yuv420.meta.npy, which `slip yuv420` then writes for the image field "image": the cache
# no longer opened and file_sizes was left wrong. Every file name comes from one naming function
# (format/layout.hpp field_files: storage, checksums, indexes, YUV420 siblings, the manifest), and
# a field set whose files coincide is refused at convert (tar, LitData, FFCV, --rename,
# --dry-run) and whenever a cache is opened (info, index, yuv420, verify), naming both fields and
# the file. A cache with the same names that never meet (a non-image field's "_yuv420.meta")
# converts, indexes and gets its siblings as before.
source "$(dirname "$0")/common.bash"
img=$(find "$CORPUS" -type f -name '*.JPEG' | LC_ALL=C sort | sed -n 1p)

refused() {  # refused WHAT FIELD_A FIELD_B FILE CMD...: exit 3 naming both fields and the file, nothing written
  local what=$1 a=$2 b=$3 file=$4; shift 4
  rm -rf "$WORK/odir"
  expect_status 3 "$@" -o "$WORK/odir"
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$what: error is not one line"; }
  grep -qF "\"$a\" and \"$b\" would share the file $file" "$WORK/err" || { cat "$WORK/err"; fail "$what: does not name both fields and $file"; }
  [ -z "$(ls -A "$WORK/odir" 2>/dev/null)" ] || { ls -laR "$WORK/odir"; fail "$what: something was written"; }
}

# Tar: member extensions are field names (.jpg becomes "image", .cls "label"); --field gives the
# hostile one a numeric type.
mk_tar() {  # mk_tar OUT EXT...: samples a, b with a JPEG (.jpg), a label (.cls) and "1" under each EXT
  local out=$1; shift
  $PY - "$out" "$img" "$@" <<'PY'
import sys, tarfile, io
out, img, exts = sys.argv[1], sys.argv[2], sys.argv[3:]
data = open(img, "rb").read()
with tarfile.open(out, "w") as t:
    for key in ("a", "b"):
        for ext, payload in [("jpg", data), ("cls", b"1")] + [(e, b"7") for e in exts]:
            ti = tarfile.TarInfo(f"{key}.{ext}"); ti.size = len(payload)
            t.addfile(ti, io.BytesIO(payload))
PY
}
mk_tar "$WORK/yuv.tar" image_yuv420.meta
refused "tar image_yuv420.meta=int" image image_yuv420.meta image_yuv420.meta.npy "$SLIP" convert "$WORK/yuv.tar" --field image_yuv420.meta=int
refused "tar --dry-run" image image_yuv420.meta image_yuv420.meta.npy "$SLIP" convert "$WORK/yuv.tar" --field image_yuv420.meta=float --dry-run
mk_tar "$WORK/meta.tar" txt txt.offsets
refused "tar txt vs txt.offsets" txt txt.offsets txt.offsets.npy "$SLIP" convert "$WORK/meta.tar" --field txt=str --field txt.offsets=int
mk_tar "$WORK/sums.tar" image.xxh3
refused "tar image.xxh3" image image.xxh3 image.xxh3.npy "$SLIP" convert "$WORK/sums.tar" --field image.xxh3=int
pass "tar: fields whose files coincide (a YUV420 sibling, a string table, a checksum file) refused, nothing written"

# A legitimate cache with look-alike names: "label_yuv420.meta" is an int field beside the int
# field "label" (no siblings), so nothing meets; index and yuv420 then work and verify passes.
mk_tar "$WORK/ok.tar" label_yuv420.meta
expect_status 0 "$SLIP" convert "$WORK/ok.tar" --field label_yuv420.meta=int -o "$WORK/ok"
ok=$(tail -1 "$WORK/out")
expect_status 0 "$SLIP" yuv420 "$ok"
expect_status 0 "$SLIP" index "$ok" --field label --field label_yuv420.meta
expect_status 0 "$SLIP" verify "$ok"
$PY - "$ok" <<'PY' || fail "the look-alike cache does not read back"
import json, sys, numpy as np
c = sys.argv[1]
m = json.load(open(f"{c}/manifest.json"))
assert list(m["fields"])[:3] == ["image", "label", "label_yuv420.meta"], m["fields"]
assert list(np.load(f"{c}/label_yuv420.meta.npy")) == [7, 7]
assert np.load(f"{c}/image_yuv420.meta.npy").shape == (2,)
PY
pass "look-alike names that never meet convert, index, get siblings and verify"

# LitData and FFCV: the reference fixtures (skipped without them).
if have_shared "LitData keys and FFCV --rename (their fixtures)"; then
  rm -rf "$WORK/ld" && cp -r "$SLIP_SHARED_DIR/fixtures/litdata/imagenet_like" "$WORK/ld"
  $PY - "$WORK/ld/index.json" <<'PY'
import json, sys
p = sys.argv[1]
idx = json.load(open(p))
spec = json.loads(idx["config"]["data_spec"])
ctx = json.loads(spec[1]["context"])
ctx[ctx.index("label")] = "image_yuv420.meta"
spec[1]["context"] = json.dumps(ctx)
idx["config"]["data_spec"] = json.dumps(spec)
json.dump(idx, open(p, "w"))
PY
  refused "LitData key image_yuv420.meta" image image_yuv420.meta image_yuv420.meta.npy "$SLIP" convert "$WORK/ld"
  beton=$SLIP_SHARED_DIR/fixtures/ffcv/imagenet_like.beton
  refused "FFCV --rename" image image_yuv420.meta image_yuv420.meta.npy "$SLIP" convert "$beton" --rename label=image_yuv420.meta
  refused "FFCV --rename --dry-run" image image_yuv420.meta image_yuv420.meta.npy \
    "$SLIP" convert "$beton" --rename label=image_yuv420.meta --dry-run
  expect_status 0 "$SLIP" convert "$beton" --rename label=label_yuv420.meta -o "$WORK/ffcv-ok"
  pass "LitData keys and FFCV --rename targets whose files meet another field's refused; a look-alike converts"
fi

# A cache written elsewhere (the manifest names its fields): "label" renamed to
# "image_yuv420.meta", as a Python-built cache would hold it (no slip section, no checksums).
expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/src-cache"
src=$(tail -1 "$WORK/out")
bad=$WORK/bad.slipstream
cp -r "$src" "$bad"
rm -f "$bad/manifest.json.xxh3"
mv "$bad/label.npy" "$bad/image_yuv420.meta.npy"
$PY - "$bad/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m.pop("slip")
m["fields"] = {("image_yuv420.meta" if k == "label" else k): v for k, v in m["fields"].items()}
m["file_sizes"] = {("image_yuv420.meta.npy" if k == "label.npy" else k): v for k, v in m["file_sizes"].items()}
json.dump(m, open(p, "w"), indent=2)
PY
sum_before=$(md5sum < "$bad/image_yuv420.meta.npy")
opened_refused() {  # opened_refused WHAT CODE CMD...
  local what=$1 code=$2; shift 2
  expect_status "$code" "$@"
  grep -qF '"image" and "image_yuv420.meta" would share the file image_yuv420.meta.npy' "$WORK/err" "$WORK/out" ||
    { cat "$WORK/err" "$WORK/out"; fail "$what: does not name both fields and the file"; }
  [ "$(md5sum < "$bad/image_yuv420.meta.npy")" = "$sum_before" ] || fail "$what: the data field's file was overwritten"
}
opened_refused "yuv420" 3 "$SLIP" yuv420 "$bad"
opened_refused "index" 3 "$SLIP" index "$bad" --field image_yuv420.meta
opened_refused "info" 3 "$SLIP" info "$bad"
opened_refused "cat" 3 "$SLIP" cat "$bad" 0 --field image_yuv420.meta
opened_refused "verify" 1 "$SLIP" verify "$bad"
[ ! -e "$bad/image_yuv420.bin" ] || fail "yuv420 wrote a sibling into the refused cache"
expect_status 0 "$SLIP" verify "$src"
pass "a cache whose field owns another's sibling file is refused when opened (yuv420, index, info, cat: exit 3; verify: 1), nothing clobbered"
