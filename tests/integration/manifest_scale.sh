#!/usr/bin/env bash
# Manifests of many keys open in linear time (issue 36): a manifest object of 200,000 keys took
# 35 s to open in `verify` (each key inserted by a linear search of the ones before), a cache
# of 40,000 fields 89 s. Both caches are built here at two sizes, 10x apart; `info` and `verify`
# must judge them, and the larger must cost at most 4x ten times the smaller's CPU time (a
# quadratic open costs 100x). CPU time, compared within the run: no wall-clock bound.
source "$(dirname "$0")/common.bash"

# build_cache DIR FIELDS EXTRA_KEYS: a 1-sample cache of FIELDS int fields (<f>.npy each) whose
# manifest also holds an object "extra" of EXTRA_KEYS keys, and every file in file_sizes.
build_cache() {
  $PY - "$@" <<'EOF'
import json, os, struct, sys
out, nfields, nextra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out)
def npy_int64(values):
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<%dq" % len(values), *values)
fields, sizes = {}, {}
for i in range(nfields):
    name = "f%d" % i
    data = npy_int64([i])
    with open(os.path.join(out, name + ".npy"), "wb") as f:
        f.write(data)
    fields[name] = {"type": "int", "num_samples": 1}
    sizes[name + ".npy"] = len(data)
manifest = {"version": 1, "num_samples": 1, "fields": fields, "file_sizes": sizes,
            "extra": {"k%d" % i: i for i in range(nextra)}}
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f)
EOF
}

# scaled WHAT SMALL LARGE CMD...: CMD (with {} replaced by the cache) on SMALL and LARGE, 10x
# apart: both finish, and the CPU time grows linearly. $WORK/out and $WORK/err hold LARGE's output.
scaled() {
  local what=$1 small=$2 large=$3; shift 3
  local a b
  a=$(cpu_seconds "${@/\{\}/$small}")
  b=$(cpu_seconds "${@/\{\}/$large}")
  linear_ratio "$what" "$a" "$b" 10
}

build_cache "$WORK/keys-small.slipstream" 2 20000
build_cache "$WORK/keys.slipstream" 2 200000
[ "$(stat -c %s "$WORK/keys.slipstream/manifest.json")" -gt 3000000 ] || fail "the manifest is too small to show a quadratic open"
scaled "info, 20,000 -> 200,000 keys" "$WORK/keys-small.slipstream" "$WORK/keys.slipstream" "$SLIP" info {}
grep -q "f1" "$WORK/out" || { cat "$WORK/out" "$WORK/err"; fail "info did not list the fields"; }
scaled "verify, 20,000 -> 200,000 keys" "$WORK/keys-small.slipstream" "$WORK/keys.slipstream" "$SLIP" verify {}
# The cache is sound (not written by slip: no checksums), so verify passes.
"$SLIP" verify "$WORK/keys.slipstream" >/dev/null 2>&1 || { "$SLIP" verify "$WORK/keys.slipstream"; fail "verify refused a sound cache"; }

build_cache "$WORK/fields-small.slipstream" 4000 0
build_cache "$WORK/fields.slipstream" 40000 0
scaled "info, 4,000 -> 40,000 fields" "$WORK/fields-small.slipstream" "$WORK/fields.slipstream" "$SLIP" info {}
scaled "verify, 4,000 -> 40,000 fields" "$WORK/fields-small.slipstream" "$WORK/fields.slipstream" "$SLIP" verify {}
"$SLIP" verify "$WORK/fields.slipstream" >/dev/null 2>&1 || { "$SLIP" verify "$WORK/fields.slipstream"; fail "verify refused a sound cache of 40,000 fields"; }
# Field order is the manifest's, and each field holds its own value.
[ "$("$SLIP" cat "$WORK/fields.slipstream" 0 --field f39999)" = 39999 ] || fail "field f39999 does not read back"
pass "40,000 fields read back by name"

# A key repeated in an object: the last value wins, at the first key's position (as before).
mkdir "$WORK/dup.slipstream" && cp "$WORK/keys.slipstream/"f*.npy "$WORK/dup.slipstream/"
printf '%s' '{"version": 1, "num_samples": 1, "fields": {"f0": {"type": "int", "num_samples": 1}, "f1": {"type": "int", "num_samples": 1}, "f0": {"type": "int", "num_samples": 1}}}' \
  > "$WORK/dup.slipstream/manifest.json"
"$SLIP" info --json "$WORK/dup.slipstream" > "$WORK/dup.json" || fail "a repeated key made the manifest unreadable"
[ "$($PY -c "import json,sys; print(','.join(f['name'] for f in json.load(open(sys.argv[1]))['fields']))" "$WORK/dup.json")" = "f0,f1" ] ||
  { cat "$WORK/dup.json"; fail "a repeated field key changed the field order"; }
pass "a repeated key keeps its first position"
