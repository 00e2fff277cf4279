#!/usr/bin/env bash
# Names from a source are data, never paths. FFCV field names, LitData data_spec keys and tar
# member extensions become file names in the cache; each hostile class is refused before
# anything is written (exit 3, one line, the name shown escaped) and nothing appears outside
# -o: traversal (../../x), absolute (/tmp/x), leading dot, control characters and ESC, invalid
# UTF-8, names slip itself writes (manifest, *_index, *_yuv420, *.index.*), two fields with one
# name or one storage file. --rename maps a bad name to a good one where the format allows.
source "$(dirname "$0")/common.bash"
FFCV=$SLIP_SHARED_DIR/fixtures/ffcv
LITDATA=$SLIP_SHARED_DIR/fixtures/litdata
canary_dir=$WORK/victim && mkdir -p "$canary_dir" && echo untouched > "$canary_dir/x.npy"
refused() {  # refused WHAT CMD...: exit 3, one line, no raw control bytes, nothing written
  local what=$1; shift
  rm -rf "$WORK/odir"
  expect_status 3 "$@" -o "$WORK/odir"
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$what: error is not one line"; }
  if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f\x80-\xff]' "$WORK/err"; then od -c "$WORK/err" | head; fail "$what: raw bytes in the error"; fi
  [ -z "$(ls -A "$WORK/odir" 2>/dev/null)" ] || { ls -laR "$WORK/odir"; fail "$what: something was written"; }
  [ "$(cat "$canary_dir/x.npy")" = untouched ] || fail "$what: a file outside -o was overwritten"
  [ ! -e "$WORK/x.npy" ] && [ ! -e /tmp/x.npy.slip-canary ] || fail "$what: a file was written outside -o"
}

# FFCV and LitData: real files from the reference data's fixtures (skipped without them).
if have_shared "FFCV field names and LitData data_spec keys (their fixtures)"; then
# FFCV: patch the 16-byte name of field 0 ("image") of a real FFCV file.
ffcv_named() {  # ffcv_named NAME(bytes, python literal) OUT
  $PY - "$FFCV/one_sample.beton" "$2" "$1" <<'PY'
import sys, ast
src, out, name = sys.argv[1], sys.argv[2], ast.literal_eval(sys.argv[3])
data = bytearray(open(src, "rb").read())
assert data[0x19:0x1f] == b"image\0"
data[0x19:0x19 + 16] = name.ljust(16, b"\0")[:16]
open(out, "wb").write(bytes(data))
PY
}
i=0
for name in "b'../../../x'" "b'/tmp/x'" "b'.hidden'" "b'..'" "b'a/b'" "b'x\\x1b[2J'" "b'x\\nslip: info:'" "b'\\xff\\xfe'" \
            "b'manifest'" "b'label_index'" "b'image_yuv420'" "b'image.index.ids'"; do
  i=$((i + 1))
  ffcv_named "$name" "$WORK/h$i.beton"
  (cd "$canary_dir" && refused "FFCV field $name" "$SLIP" convert "$WORK/h$i.beton")
  grep -q "field name" "$WORK/err" || { cat "$WORK/err"; fail "FFCV $name: the error does not say it is a field name"; }
done
pass "FFCV: $i hostile field names refused, nothing written"
# --rename maps a bad name to a good one: the conversion then succeeds.
ffcv_named "b'../../../x'" "$WORK/rename.beton"
expect_status 0 "$SLIP" convert "$WORK/rename.beton" --rename '../../../x=picture' -o "$WORK/renamed"
$PY -c "import json,sys; m=json.load(open(sys.argv[1])); assert 'picture' in m['fields'], m['fields']" "$(tail -1 "$WORK/out")/manifest.json" \
  || fail "--rename did not map the field"
# ... but not onto another bad name.
(cd "$canary_dir" && refused "rename to a bad name" "$SLIP" convert "$WORK/rename.beton" --rename '../../../x=../y')
pass "FFCV: --rename maps a hostile name to a safe one, and its target is checked too"

# LitData: data_spec keys.
litdata_named() {  # litdata_named OLD NEW(json string body) OUT: rename a dict key of the fixture
  rm -rf "$3" && cp -r "$LITDATA/imagenet_like" "$3"
  $PY - "$3/index.json" "$1" "$2" <<'PY'
import json, sys
p, old, new = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
idx = json.load(open(p))
spec = json.loads(idx["config"]["data_spec"])
ctx = json.loads(spec[1]["context"])
ctx[ctx.index(old)] = new
spec[1]["context"] = json.dumps(ctx)
idx["config"]["data_spec"] = json.dumps(spec)
json.dump(idx, open(p, "w"))
PY
}
i=0
for name in '"../../x"' '"/tmp/x"' '".x"' '"x\u001b]0;t\u0007"' '"label_index"' '"manifest"' '"path"'; do
  i=$((i + 1))
  litdata_named label "$name" "$WORK/ld$i"
  (cd "$canary_dir" && refused "LitData key $name" "$SLIP" convert "$WORK/ld$i")
done
grep -q "fields 1 and 2 have the same name \"path\"" "$WORK/err" || { cat "$WORK/err"; fail "duplicate LitData leaves not named"; }
pass "LitData: $i hostile or duplicate data_spec keys refused, nothing written"
fi

# Tar: member extensions are field names too.
img=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1p)
mk_tar() {  # mk_tar OUT EXT(python bytes literal)
  $PY - "$1" "$img" "$2" <<'PY'
import sys, tarfile, io, ast
out, img, ext = sys.argv[1], sys.argv[2], ast.literal_eval(sys.argv[3])
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape") as t:
    data = open(img, "rb").read()
    for key in ("a", "b"):
        for name, payload in ((f"{key}.jpg".encode(), data), (f"{key}.cls".encode(), b"1"), (key.encode() + b"." + ext, b"v")):
            ti = tarfile.TarInfo(name.decode("utf-8", "surrogateescape")); ti.size = len(payload)
            t.addfile(ti, io.BytesIO(payload))
PY
}
i=0
for ext in "b'label_index'" "b'manifest'" "b'\\xff'" "b'x\\x1b[2J'" "b'jpg_yuv420'"; do
  i=$((i + 1))
  mk_tar "$WORK/t$i.tar" "$ext"
  (cd "$canary_dir" && refused "tar extension $ext" "$SLIP" convert "$WORK/t$i.tar")
done
pass "tar: $i hostile member extensions refused, nothing written"

# str values that are not UTF-8 (a tar .txt member, a tar key from a non-UTF-8 member name) are
# a per-sample problem: never a str field numpy or slip index cannot read back.
$PY - "$WORK/text.tar" "$img" <<'PY'
import sys, tarfile, io
out, img = sys.argv[1], sys.argv[2]
data = open(img, "rb").read()
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape") as t:
    for key, text in ((b"a", b"fine"), (b"b", b"caf\xe9"), (b"\xffc", b"ok")):
        for ext, payload in ((b".jpg", data), (b".cls", b"1"), (b".txt", text)):
            ti = tarfile.TarInfo((key + ext).decode("utf-8", "surrogateescape")); ti.size = len(payload)
            t.addfile(ti, io.BytesIO(payload))
PY
(cd "$canary_dir" && refused "non-UTF-8 text" "$SLIP" convert "$WORK/text.tar")
grep -q 'field "txt" is not valid UTF-8' "$WORK/err" || { cat "$WORK/err"; fail "non-UTF-8 .txt not named"; }
expect_status 0 "$SLIP" convert "$WORK/text.tar" -o "$WORK/text-skip" --on-error skip --json
$PY - "$WORK/out" <<'PY' || fail "non-UTF-8 samples not skipped into the ledger"
import json, sys, numpy as np
d = json.load(open(sys.argv[1]))
assert d["written"] == 1 and d["skipped"] == 2, d
assert sorted(e["field"] for e in d["ledger"]) == ["key", "txt"], d["ledger"]
c = d["path"]
off = np.load(f"{c}/txt.offsets.npy"); b = open(f"{c}/txt.bin", "rb").read()
assert [b[s:s + n].decode("utf-8") for s, n in off] == ["fine"]
PY
cache=$(tail -1 "$WORK/out" | $PY -c "import json,sys; print(json.load(sys.stdin)['path'])")
expect_status 0 "$SLIP" index "$cache" --field txt --field key
expect_status 0 "$SLIP" convert "$WORK/text.tar" -o "$WORK/text-bytes" --field txt=bytes --on-error skip --json
$PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['written'] == 2 and d['skipped'] == 1, d" "$WORK/out" \
  || fail "--field txt=bytes does not keep non-UTF-8 text"
pass "non-UTF-8 str values: per-sample problem (--on-error skip keeps the rest), --field EXT=bytes keeps them"

# A dry run performs the checks the real run does before writing: an invalid --name and a
# hostile field name are refused by --dry-run too.
expect_status 2 "$SLIP" convert "$SRC/examples/sample" --name ../evil --dry-run -o "$WORK/dry"
grep -q 'invalid cache name "../evil"' "$WORK/err" || { cat "$WORK/err"; fail "--dry-run accepted ../evil"; }
if [ -d "$FFCV" ]; then  # the FFCV fixture (reference data)
  ffcv_named "b'../../../x'" "$WORK/dry.beton"
  expect_status 3 "$SLIP" convert "$WORK/dry.beton" --dry-run -o "$WORK/dry"
fi
pass "--dry-run refuses what the real run refuses (cache name, field names)"
