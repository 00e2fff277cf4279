#!/usr/bin/env bash
# Caches slip would never write do not pass verify. A str field holding bytes that are not UTF-8
# (the Python loader raises UnicodeDecodeError on them) fails verify (exit 1) naming the field,
# the sample and the byte; commands that read the string (cat, index) refuse it (exit 3) the same
# way, while info and the other samples are unaffected. A manifest claiming 10^15 samples whose
# only field holds 0 bytes a sample (an (N, 0) array: any count fits) is refused when opened:
# verify exit 1, info/cat exit 3, naming the field and the header's byte offset.
source "$(dirname "$0")/common.bash"

expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/c"
src=$(tail -1 "$WORK/out")
# As the Python builder writes it (no slip section, no checksums): only the bytes are wrong.
python_style() {  # python_style SRC DST
  rm -rf "$2" && cp -r "$1" "$2" && rm -f "$2/manifest.json.xxh3" "$2"/*.xxh3.npy
  $PY -c "import json,sys; p=sys.argv[1]; m=json.load(open(p)); m.pop('slip'); json.dump(m, open(p,'w'), indent=2)" "$2/manifest.json"
}
bad=$WORK/utf8.slipstream
python_style "$src" "$bad"
expect_status 0 "$SLIP" verify "$bad"
byte=$($PY - "$bad" <<'PY'
import sys, numpy as np
c = sys.argv[1]
off = np.load(f"{c}/path.offsets.npy")
at = int(off[5][0]) + 2
b = bytearray(open(f"{c}/path.bin", "rb").read())
b[at] = 0xFF  # same length: offsets and file_sizes still agree
open(f"{c}/path.bin", "wb").write(bytes(b))
print(at)
PY
)
$PY -c "import numpy as np,sys; o=np.load(sys.argv[1]+'/path.offsets.npy'); b=open(sys.argv[1]+'/path.bin','rb').read(); b[o[5][0]:o[5][0]+o[5][1]].decode()" "$bad" 2>/dev/null &&
  fail "the patched string still decodes (the test's premise)"
expect_status 1 "$SLIP" verify "$bad"
grep -qF "FAIL path.bin: sample 5: field path: string is not valid UTF-8 (byte $byte)" "$WORK/out" ||
  { cat "$WORK/out" "$WORK/err"; fail "verify does not name the field, sample and byte"; }
expect_status 1 "$SLIP" verify "$bad" --json
$PY - "$WORK/out" "$byte" <<'PY' || fail "verify --json does not name field, sample and byte"
import json, sys
d = json.load(open(sys.argv[1]))
hits = [i for i in d["issues"] if "UTF-8" in i["message"]]
assert len(hits) == 1, d["issues"]
i = hits[0]
assert i["field"] == "path" and i["sample"] == 5 and i["file"] == "path.bin" and f"(byte {sys.argv[2]})" in i["message"], i
PY
expect_status 3 "$SLIP" cat "$bad" 5 --field path
grep -q 'field "path": string is not valid UTF-8' "$WORK/err" && grep -q "sample 5" "$WORK/err" && grep -q "$byte" "$WORK/err" ||
  { cat "$WORK/err"; fail "cat does not name the field, sample and byte"; }
expect_status 0 "$SLIP" cat "$bad" 4 --field path
expect_status 3 "$SLIP" index "$bad" --field path
grep -q "not valid UTF-8" "$WORK/err" || { cat "$WORK/err"; fail "index of the bad str field"; }
[ ! -e "$bad/path_index.npy" ] || fail "index wrote a pickle Python cannot load"
expect_status 0 "$SLIP" info "$bad"
pass "a str field with invalid UTF-8: verify exit 1 (field, sample, byte), cat/index exit 3, info and other samples unaffected"

# 10^15 samples of 0 bytes each.
zero=$WORK/zero.slipstream
$PY - "$zero" <<'PY'
import json, os, sys, numpy as np
c = sys.argv[1]
os.makedirs(c)
n = 10**15
with open(f"{c}/x.npy", "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "<i8", "fortran_order": False, "shape": (n, 0)})
m = {"version": 1, "num_samples": n, "fields": {"x": {"type": "ndarray", "num_samples": n, "dtype": "<i8", "shape": [0]}},
     "file_sizes": {"x.npy": os.path.getsize(f"{c}/x.npy")}}
json.dump(m, open(f"{c}/manifest.json", "w"), indent=2)
PY
expect_status 1 "$SLIP" verify "$zero" --json
$PY - "$WORK/out" <<'PY' || fail "verify of 10^15 zero-size samples"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False, d
i = d["issues"][0]
assert i["file"] == "x.npy" and '"x" holds 0 bytes a sample' in i["message"] and "(byte 10)" in i["message"], i
assert "1000000000000000" in i["message"], i
PY
expect_status 3 "$SLIP" info "$zero"
grep -q '"x" holds 0 bytes a sample' "$WORK/err" || { cat "$WORK/err"; fail "info of 10^15 zero-size samples"; }
expect_status 3 "$SLIP" cat "$zero" 0 --field x
# The same field beside one that ties the count to the files: a cache slip could write.
$PY - "$zero" <<'PY'
import json, os, sys, numpy as np
c = sys.argv[1]
n = 3
with open(f"{c}/x.npy", "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "<i8", "fortran_order": False, "shape": (n, 0)})
np.save(f"{c}/label.npy", np.arange(n, dtype="<i8"))
m = {"version": 1, "num_samples": n, "fields": {"x": {"type": "ndarray", "num_samples": n, "dtype": "<i8", "shape": [0]},
                                               "label": {"type": "int", "num_samples": n}},
     "file_sizes": {"x.npy": os.path.getsize(f"{c}/x.npy"), "label.npy": os.path.getsize(f"{c}/label.npy")}}
json.dump(m, open(f"{c}/manifest.json", "w"), indent=2)
PY
expect_status 0 "$SLIP" verify "$zero"
expect_status 0 "$SLIP" info "$zero"
pass "10^15 samples of 0 bytes each: verify exit 1, info/cat exit 3 (field, byte); beside a sized field it opens"
