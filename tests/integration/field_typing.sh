#!/usr/bin/env bash
# Caches that lie about their own fields (issue 42): every field file's dtype (byte order
# included) and shape must be what the manifest's field says (docs/FORMAT.md#numeric), for every
# field kind and every file of a field. Checksum-less copies (what the Python builder writes, or
# a slip cache whose checksums were stripped) of a real cache, with one file retyped by numpy:
# `verify` fails (exit 1) naming the file and the field; `info`, `cat`, `index` and the Python
# `slipcache.Cache` refuse to open them (exit 3 / code 3) naming the file. Before the check a
# float NaN or big-endian label.npy under "type": "int" verified OK, NaN labels reached `cat`,
# big-endian ones made info/cat/index exit 2, and an (N, 1) label.npy was silently dropped by
# the Loader.
source "$(dirname "$0")/common.bash"

expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/caches" -q
base=$(tail -n1 "$WORK/out")
expect_status 0 "$SLIP" index "$base" -F label

# mutate NAME PYTHON: a checksum-less copy of the cache, then PYTHON run with `c` (its path),
# `np`, `save(file, array)` (numpy.save, file_sizes updated) and `manifest` (a dict written back
# afterwards, file_sizes and all).
mutate() {
  local name=$1 code=$2
  rm -rf "$WORK/$name" && cp -r "$base" "$WORK/$name"
  $PY - "$WORK/$name" "$code" <<'PY'
import json, os, sys
import numpy as np
c, code = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(c, "manifest.json")))
# Checksum-less: no slip section, no checksum files (as the Python builder writes a cache).
manifest.pop("slip", None)
for f in ("manifest.json.xxh3", "image.xxh3.npy"):
    if os.path.exists(os.path.join(c, f)):
        os.remove(os.path.join(c, f))
def save(name, array):
    with open(os.path.join(c, name), "wb") as f:
        np.save(f, array)
    if name in manifest.get("file_sizes", {}):
        manifest["file_sizes"][name] = os.path.getsize(os.path.join(c, name))
def load(name):
    return np.load(os.path.join(c, name))
exec(code)
with open(os.path.join(c, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=2)
PY
  echo "$WORK/$name"
}

# The checksum-less copy itself is a good cache: verify passes, everything reads it.
c=$(mutate plain "pass")
expect_status 0 "$SLIP" verify "$c"
expect_status 0 "$SLIP" info "$c"
expect_status 0 "$SLIP" cat "$c" 0 -F label
pass "an untouched checksum-less copy verifies and reads"

# refused NAME FILE FIELD PYTHON: verify exit 1 naming FILE and FIELD; info, cat, index exit 3
# naming FILE; slipcache.Cache (when the module is built) raises code 3.
pymod=$(ls "$SLIP_BUILD_DIR"/python/slipcache/_core*.so 2> /dev/null | first_lines 1 || true)
refused() {
  local name=$1 file=$2 field=$3 code=$4
  local c
  c=$(mutate "$name" "$code")
  expect_status 1 "$SLIP" verify "$c"
  grep -q "$file.*$field\|$field.*$file" "$WORK/out" || { cat "$WORK/out"; fail "$name: verify does not name $file and field $field"; }
  expect_status 1 "$SLIP" verify "$c" --json
  [ "$(json_get "$WORK/out" '["ok"]')" = False ] || fail "$name: verify --json says ok"
  expect_status 3 "$SLIP" info "$c"
  grep -q "$file" "$WORK/err" || { cat "$WORK/err"; fail "$name: info does not name $file"; }
  expect_status 3 "$SLIP" cat "$c" 0 -F path
  grep -q "$file" "$WORK/err" || { cat "$WORK/err"; fail "$name: cat does not name $file"; }
  expect_status 3 "$SLIP" index "$c" -F path
  grep -q "$file" "$WORK/err" || { cat "$WORK/err"; fail "$name: index does not name $file"; }
  if [ -n "$pymod" ]; then
    PYTHONPATH=$SLIP_BUILD_DIR/python $PY - "$c" "$file" <<'PY' || fail "$name: slipcache.Cache opened it"
import sys, slipcache
try:
    slipcache.Cache(sys.argv[1])
except slipcache.Error as e:
    assert e.code == 3 and sys.argv[2] in str(e), (e.code, str(e))
    sys.exit(0)
sys.exit(1)
PY
  fi
  pass "$name: verify exit 1 naming $file / $field; info, cat, index exit 3$([ -n "$pymod" ] && echo ', slipcache.Cache code 3')"
}

# int fields (label: "type": "int" is (N,) <i8)
refused label_nan label.npy label 'a = load("label.npy").astype("<f8"); a[3] = np.nan; save("label.npy", a)'
refused label_big_endian label.npy label 'save("label.npy", load("label.npy").astype(">i8"))'
refused label_column label.npy label 'save("label.npy", load("label.npy").reshape(-1, 1))'
refused label_int32 label.npy label 'save("label.npy", load("label.npy").astype("<i4"))'
# float fields ("type": "float" is (N,) <f8): an int array under a float type
refused index_as_float index.npy index 'manifest["fields"]["index"]["type"] = "float"'
# ndarray fields: the manifest's dtype and shape
refused label_ndarray_dtype label.npy label 'manifest["fields"]["label"].update(type="ndarray", dtype="<i4", shape=[])'
refused label_ndarray_shape label.npy label 'manifest["fields"]["label"].update(type="ndarray", dtype="<i8", shape=[1])'
c=$(mutate label_ndarray_ok 'manifest["fields"]["label"].update(type="ndarray", dtype="<i8", shape=[])')
expect_status 0 "$SLIP" verify "$c"
pass "an ndarray field whose file matches its manifest dtype and shape verifies"
# str fields: <f>.offsets.npy is (N, 2) <u8
refused offsets_big_endian path.offsets.npy path 'save("path.offsets.npy", load("path.offsets.npy").astype(">u8"))'
refused offsets_shape path.offsets.npy path 'save("path.offsets.npy", load("path.offsets.npy").reshape(-1, 1, 2))'
# payload fields: <f>.meta.npy records, and slip's <f>.xxh3.npy (N,) <u8 where present
refused meta_big_endian image.meta.npy image 'a = load("image.meta.npy"); save("image.meta.npy", a.astype(a.dtype.newbyteorder(">")))'
refused meta_column image.meta.npy image 'save("image.meta.npy", load("image.meta.npy").reshape(-1, 1))'
refused sums_signed image.xxh3.npy image 'save("image.xxh3.npy", np.zeros(len(load("label.npy")), "<i8"))'

# Index files: keys of the field's own type (an int field's keys are <i8), offsets and ids <i8.
# (A copy without the slip section: verify checks the index files it finds as well as listed ones.)
c=$(mutate index_plain "pass")
expect_status 0 "$SLIP" subset "$c" -F label --values 0 --mode ids -o "$WORK/ids-plain.npy"
pass "the untouched index of a checksum-less copy is read"
index_refused() {
  local name=$1 file=$2 code=$3
  local c
  c=$(mutate "$name" "$code")
  expect_status 1 "$SLIP" verify "$c"
  grep -q "$file.*label\|label.*$file" "$WORK/out" || { cat "$WORK/out"; fail "$name: verify does not name $file and field label"; }
  expect_status 3 "$SLIP" subset "$c" -F label --values 0 --mode ids -o "$WORK/ids-$name.npy"
  grep -q "$file" "$WORK/err" || { cat "$WORK/err"; fail "$name: subset does not name $file"; }
  pass "$name: verify exit 1 naming $file and the field; subset (which reads the index) exit 3"
}
index_refused index_keys_float label.index.keys.npy 'save("label.index.keys.npy", load("label.index.keys.npy").astype("<f8"))'
index_refused index_keys_big_endian label.index.keys.npy 'save("label.index.keys.npy", load("label.index.keys.npy").astype(">i8"))'
index_refused index_ids_column label.index.ids.npy 'save("label.index.ids.npy", load("label.index.ids.npy").reshape(-1, 1))'
