#!/usr/bin/env bash
# Caches are inputs too (issue 18): a cache directory someone else wrote can hold pickles that
# run code in the Python loader, links to files elsewhere, FIFOs, manifests nested to crash a
# recursive parser, impossible sample counts, corrupt bytes under valid checksums' names, and
# temporaries of killed runs. Every reading command refuses or reports them; nothing hangs,
# crashes, copies corruption or follows a link.
source "$(dirname "$0")/common.bash"

# A small slip-written cache: 3 classes x 3 images, with a label index.
root=$WORK/src
for c in $(ls "$CORPUS" | LC_ALL=C sort | first_lines 3); do
  mkdir -p "$root/$c"
  for f in $(find "$CORPUS/$c" -type f -name '*.JPEG' | LC_ALL=C sort | first_lines 3); do cp "$f" "$root/$c/"; done
done
expect_status 0 "$SLIP" convert "$root" -o "$WORK/caches" -q
base=$(tail -n1 "$WORK/out")
rm -rf "$WORK/unindexed" && cp -r "$base" "$WORK/unindexed"
expect_status 0 "$SLIP" index "$base" -F label
expect_status 0 "$SLIP" verify "$base"
fresh() {  # fresh NAME: a copy of the clean cache
  rm -rf "$WORK/$1" && cp -r "$base" "$WORK/$1" && echo "$WORK/$1"
}
header128() {  # the 128-byte .npy header of an object array, for pickles written by hand
  $PY -c "import sys; sys.stdout.buffer.write(open(sys.argv[1],'rb').read()[:128])" "$base/label_index.npy"
}

# ---- 1. *_index.npy pickles are read, never run ------------------------------------------
marker=$WORK/PWNED
c=$(fresh pickles)
$PY - "$c" "$marker" <<'PY'
import os, pickle, sys, numpy as np
cache, marker = sys.argv[1], sys.argv[2]
head = open(os.path.join(cache, "label_index.npy"), "rb").read()[:128]
class System:
    def __reduce__(self):
        return (os.system, ("touch " + marker,))
class Eval:
    def __reduce__(self):
        return (eval, ("open(%r, 'w')" % marker,))
ids = np.arange(3, dtype=np.int64)
def save(name, data):
    open(os.path.join(cache, name), "wb").write(head + data)
# What the loader would run: os.system via GLOBAL (protocol 3) and eval via STACK_GLOBAL (4).
save("evil_index.npy", pickle.dumps(np.array({0: System()}, dtype=object), protocol=3))
save("evil4_index.npy", pickle.dumps(np.array({0: Eval()}, dtype=object), protocol=4))
# Harmless but not the index shape: float64 ids, a tuple key, a list instead of an array,
# an opcode numpy never writes (INST), a truncated pickle, a plain int64 array.
save("f8_index.npy", pickle.dumps(np.array({0: ids.astype(np.float64)}, dtype=object), protocol=3))
save("tuple_index.npy", pickle.dumps(np.array({(0, 1): ids}, dtype=object), protocol=3))
save("list_index.npy", pickle.dumps(np.array({0: [0, 1]}, dtype=object), protocol=3))
save("inst_index.npy", b"\x80\x02(i__builtin__\nobject\n.")
save("short_index.npy", pickle.dumps(np.array({0: ids}, dtype=object), protocol=3)[:-20])
np.save(os.path.join(cache, "plain_index.npy"), ids)
PY
for bad in evil evil4 f8 tuple list inst short plain; do
  c2=$(fresh "p-$bad")
  cp "$c/${bad}_index.npy" "$c2/label_index.npy"
  expect_status 1 "$SLIP" verify "$c2"
  grep -q "^FAIL label_index.npy: " "$WORK/out" || { cat "$WORK/out"; fail "$bad: verify does not name label_index.npy"; }
  echo "ok: $bad pickle refused: $(grep '^FAIL' "$WORK/out" | head -1)"
done
expect_status 1 "$SLIP" verify "$c" --json
$PY - "$WORK/out" <<'PY' || fail "verify --json does not list every bad index file"
import json, sys
d = json.load(open(sys.argv[1]))
files = {i["file"] for i in d["issues"]}
want = {n + "_index.npy" for n in "evil evil4 f8 tuple list inst short plain".split()}
assert want <= files, (want - files, d["issues"])
assert "label_index.npy" not in files
PY
[ ! -e "$marker" ] || fail "a pickle in the cache ran code"
pass "malicious and malformed *_index.npy pickles: verification failed, nothing executed"

# Pickles the loaders legitimately write are accepted: slip's own (above), the Python
# slipstream's (protocol 3 with memo), protocol 2 and 4 (numpy 2), float and str keys.
c=$(fresh goodpickles)
$PY - "$c" <<'PY'
import os, pickle, sys, numpy as np
cache = sys.argv[1]
head = open(os.path.join(cache, "label_index.npy"), "rb").read()[:128]
d = {0: np.array([0, 1, 2], dtype=np.int64), 1: np.array([3, 4, 5], dtype=np.int64), 2: np.array([6, 7, 8], dtype=np.int64)}
e = dict(d, x=np.array([], dtype=np.int64))  # an empty id array: bytes() in protocol 2
for proto in (2, 3, 4):
    for name, obj in (("p%d" % proto, d), ("e%d" % proto, e)):
        open(os.path.join(cache, name + "_index.npy"), "wb").write(head + pickle.dumps(np.array(obj, dtype=object), protocol=proto))
np.save(os.path.join(cache, "keys_index.npy"),
        np.array({0.5: np.array([1], dtype=np.int64), "n01440764": np.array([0, 2], dtype=np.int64), float("nan"): np.array([], dtype=np.int64)},
                 dtype=object), allow_pickle=True)
PY
# Parsed and accepted: the only findings are that no manifest record accounts for these files
# (indexes of fields this cache does not have).
expect_status 1 "$SLIP" verify "$c" --json
$PY - "$WORK/out" <<'PY' || fail "verify --json: a legitimate pickle was refused"
import json, sys
d = json.load(open(sys.argv[1]))
names = {p + "_index.npy" for p in "p2 e2 p3 e3 p4 e4 keys".split()}
assert {i["file"] for i in d["issues"]} == names, d["issues"]
assert all(i["message"].startswith("unknown file (an index of a field the cache does not have)") for i in d["issues"]), d["issues"]
assert sorted(d["unknown_files"]) == sorted(names), d["unknown_files"]
PY
if have_shared "the Python slipstream fixture's index pickle"; then
cp "$SLIP_SHARED_DIR/fixtures/pyslipstream/slipcache-3131b662/label_index.npy" "$c/label_index.npy"
expect_status 1 "$SLIP" verify "$c"  # the fixture's ids (up to 23) do not exist in a 9-sample cache
grep -q "label_index.npy.*sample id 9" "$WORK/out" || { cat "$WORK/out"; fail "out-of-range index ids not reported"; }
cp -r "$SLIP_SHARED_DIR/fixtures/pyslipstream/slipcache-3131b662" "$WORK/pyfix"
expect_status 0 "$SLIP" verify "$WORK/pyfix"
fi
pass "slip's, the Python slipstream's, protocol 2/4 and float/str-keyed index pickles are accepted"

# A linked index file is refused too; unknown files fail verification.
c=$(fresh links)
echo hello >"$c/notes.txt"
mkdir "$c/stuff"
ln -s "$base/label_index.npy" "$c/other_index.npy"
expect_status 1 "$SLIP" verify "$c" --json
$PY - "$WORK/out" <<'PY' || fail "verify --json: linked index / unknown files"
import json, sys
d = json.load(open(sys.argv[1]))
assert any(i["file"] == "other_index.npy" and "symbolic link" in i["message"] for i in d["issues"]), d["issues"]
assert sorted(d["unknown_files"]) == ["notes.txt", "other_index.npy", "stuff"], d["unknown_files"]
assert any(i["file"] == "notes.txt" and i["message"].startswith("unknown file:") for i in d["issues"]), d["issues"]
assert any(i["file"] == "stuff" and i["message"].startswith("unknown file (a directory)") for i in d["issues"]), d["issues"]
PY
rm "$c/other_index.npy"
expect_status 1 "$SLIP" verify "$c"
grep -q "^FAIL notes.txt: unknown file" "$WORK/out" || { cat "$WORK/out"; fail "unknown file not reported"; }
rm -r "$c/notes.txt" "$c/stuff"
expect_status 0 "$SLIP" verify "$c"
pass "linked index refused; unknown files fail verification, named in its issues and --json"

# Files whose record was lost (issue 42: two commands rewriting one manifest lost the indexes
# record, and verify said OK): an index and YUV420 siblings with no record fail verification,
# naming each file and the command that records them; that command makes the cache whole again.
c=$WORK/unrecorded
rm -rf "$c" && cp -r "$WORK/unindexed" "$c"
cp "$base/label_index.npy" "$base"/label.index.*.npy "$c/"
sib=$WORK/siblings
rm -rf "$sib" && cp -r "$WORK/unindexed" "$sib"
expect_status 0 "$SLIP" yuv420 "$sib"
cp "$sib"/image_yuv420.* "$c/"
expect_status 1 "$SLIP" verify "$c" --json
$PY - "$WORK/out" <<'PY' || fail "verify --json: unrecorded index / siblings"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"label_index.npy", "label.index.keys.npy", "label.index.offsets.npy", "label.index.ids.npy",
        "image_yuv420.bin", "image_yuv420.meta.npy"}
assert set(d["unknown_files"]) == want, d["unknown_files"]
by_file = {i["file"]: i for i in d["issues"]}
assert set(by_file) == want, d["issues"]
assert all(i["message"].startswith("unrecorded file") for i in d["issues"]), d["issues"]
assert "slip index CACHE -F label" in by_file["label_index.npy"]["message"], by_file["label_index.npy"]
assert "slip yuv420 CACHE --field image" in by_file["image_yuv420.bin"]["message"], by_file["image_yuv420.bin"]
PY
expect_status 1 "$SLIP" verify "$c"
grep -q "^FAIL label_index.npy: .*unrecorded file" "$WORK/out" || { cat "$WORK/out"; fail "unrecorded index not named"; }
expect_status 0 "$SLIP" index "$c" -F label
expect_status 0 "$SLIP" yuv420 "$c"  # the siblings are current: reused, and recorded now
expect_status 0 "$SLIP" verify "$c"
[ -f "$c/manifest.json.lock" ] || fail "no lock file after index"
pass "unrecorded index and siblings fail verify, named; slip index / slip yuv420 record them, lock file known"

# ---- 2. links, FIFOs and corrupt payloads ------------------------------------------------
outside=$WORK/outside.bin
cp "$base/path.bin" "$outside"
c=$(fresh symlinked)
rm "$c/path.bin" && ln -s "$outside" "$c/path.bin"
for cmd in "cat $c 0 -F path" "info $c" "subset $c --values 0 -o $WORK/sub-link" "index $c -F path" "bench $c -e 1"; do
  # shellcheck disable=SC2086
  expect_status 3 "$SLIP" $cmd
  grep -q "path.bin.*is a symbolic link" "$WORK/err" || { cat "$WORK/err"; fail "$cmd: no 'is a symbolic link' naming path.bin"; }
done
expect_status 1 "$SLIP" verify "$c"
grep -q "path.bin.*symbolic link" "$WORK/out" || { cat "$WORK/out"; fail "verify does not report the link"; }
[ ! -e "$WORK/sub-link" ] || [ -z "$(ls -A "$WORK/sub-link")" ] || fail "subset wrote from a linked cache"
rm "$c/path.bin" && ln -s /etc/shadow "$c/path.bin"
expect_status 3 "$SLIP" subset "$c" --values 0 --mode copy -o "$WORK/sub-shadow"
grep -q "is a symbolic link" "$WORK/err" || { cat "$WORK/err"; fail "subset followed path.bin to /etc/shadow"; }
pass "a linked storage file is refused by cat, info, subset, index, bench and verify"

c=$(fresh fifo)
rm "$c/manifest.json" && mkfifo "$c/manifest.json"
for cmd in info cat verify; do
  args=("$c"); [ "$cmd" = cat ] && args+=(0)
  got=0; timeout 300 "$SLIP" "$cmd" "${args[@]}" >"$WORK/out" 2>"$WORK/err" || got=$?
  [ "$got" != 124 ] || fail "$cmd hangs on a FIFO manifest"
  want=3; [ "$cmd" = verify ] && want=1
  [ "$got" = "$want" ] || { cat "$WORK/err" "$WORK/out"; fail "$cmd on a FIFO manifest exited $got, want $want"; }
  grep -q "manifest.json.*is not a regular file" "$WORK/err" "$WORK/out" || fail "$cmd: FIFO not named"
done
c=$(fresh fifo2)
rm "$c/label.npy" && mkfifo "$c/label.npy"
got=0; timeout 300 "$SLIP" cat "$c" 0 -F label >"$WORK/out" 2>"$WORK/err" || got=$?
[ "$got" = 3 ] && grep -q "label.npy.*is not a regular file" "$WORK/err" || { cat "$WORK/err"; fail "FIFO label.npy: exit $got"; }
pass "FIFOs inside a cache are refused without hanging"

# One flipped payload byte: subset copies nothing, cat refuses the sample, yuv420 derives nothing.
c=$(fresh corrupt)
$PY - "$c" <<'PY'
import sys, numpy as np
c = sys.argv[1]
meta = np.load(c + "/image.meta.npy")
ptr, size = int(meta[4]["data_ptr"]), int(meta[4]["data_size"])
with open(c + "/image.bin", "r+b") as f:
    f.seek(ptr + size // 2); b = f.read(1); f.seek(ptr + size // 2); f.write(bytes([b[0] ^ 0x55]))
PY
expect_status 3 "$SLIP" subset "$c" --values 0,1,2 --mode copy -o "$WORK/sub-corrupt"
grep -q "checksum mismatch" "$WORK/err" || { cat "$WORK/err"; fail "subset copy: no checksum error"; }
[ ! -e "$WORK/sub-corrupt" ] || [ -z "$(ls -A "$WORK/sub-corrupt")" ] || fail "subset copy wrote something: $(ls -A "$WORK/sub-corrupt")"
expect_status 3 "$SLIP" cat "$c" 4 -o "$WORK/x.jpg"
grep -q "checksum mismatch" "$WORK/err" || fail "cat: no checksum error"
expect_status 0 "$SLIP" cat "$c" 3 -o "$WORK/x.jpg"  # the other samples still read
expect_status 3 "$SLIP" yuv420 "$c"
grep -q "checksum mismatch" "$WORK/err" || { cat "$WORK/err"; fail "yuv420: no checksum error"; }
[ -z "$(ls "$c" | grep yuv420 || true)" ] || fail "yuv420 left files: $(ls -A "$c")"
c=$(fresh corrupt-label)
$PY -c "
import sys; p=sys.argv[1]+'/label.npy'; b=bytearray(open(p,'rb').read()); b[-8]^=1; open(p,'wb').write(bytes(b))" "$c"
rm "$c"/label.index.*.npy "$c/label_index.npy"
for cmd in "subset $c --values 0 --mode ids -o $WORK/ids.npy" "index $c -F label" "info $c" "cat $c 8 -F label"; do
  # shellcheck disable=SC2086
  expect_status 3 "$SLIP" $cmd
  grep -q "label.npy.*checksum mismatch" "$WORK/err" || { cat "$WORK/err"; fail "$cmd: corrupt label.npy not refused"; }
done
[ ! -e "$WORK/ids.npy" ] || fail "subset --mode ids wrote ids derived from a corrupt label.npy"
pass "corrupt payloads and tables: subset, cat, yuv420, index and info refuse them and write nothing"

# ---- 3. JSON nested 50,000 deep ------------------------------------------------------------
deep() { $PY -c "import sys; n=int(sys.argv[1]); sys.stdout.write('{\"num_samples\": 1, \"fields\": {}, \"x\": ' + '['*n + ']'*n + '}')" "$1"; }
c=$(fresh deep)
deep 50000 >"$c/manifest.json"
expect_status 3 "$SLIP" info "$c"
grep -q "nested deeper than 64" "$WORK/err" || { cat "$WORK/err"; fail "info: deep manifest"; }
expect_status 3 "$SLIP" cat "$c" 0
expect_status 1 "$SLIP" verify "$c"
grep -q "nested deeper than 64" "$WORK/out" || { cat "$WORK/out"; fail "verify: deep manifest"; }
expect_status 0 "$SLIP" ls "$WORK"  # a deep manifest in a listed directory is just damaged
ld=$WORK/litdata-deep
if have_shared "a deep LitData data_spec (made from the LitData fixture)"; then
cp -r "$SLIP_SHARED_DIR/fixtures/litdata/imagenet_like" "$ld"
$PY - "$ld/index.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["config"]["data_spec"] = "[1, " + "[" * 50000 + "]" * 50000 + "]"
json.dump(d, open(p, "w"))
PY
expect_status 3 "$SLIP" convert "$ld" -o "$WORK/ld-out"
grep -q "nested deeper" "$WORK/err" || { cat "$WORK/err"; fail "convert: deep data_spec"; }
fi
mkdir -p "$ld"
$PY -c "import sys; n=50000; open(sys.argv[1],'w').write('{\"chunks\": ' + '['*n + ']'*n + '}')" "$ld/index.json"
expect_status 3 "$SLIP" convert "$ld" -o "$WORK/ld-out"
grep -q "nested deeper" "$WORK/err" || { cat "$WORK/err"; fail "convert: deep index.json"; }
pass "manifests, LitData index.json and data_spec nested 50,000 deep: bad input, no crash"

# ---- 4. impossible counts, strict sample ids ----------------------------------------------
c=$(fresh nofields)
printf '{"version": 1, "num_samples": 1000000000000000000, "fields": {}}' >"$c/manifest.json"
rm -f "$c/manifest.json.xxh3"
expect_status 1 "$SLIP" verify "$c"
grep -q "no fields" "$WORK/out" || { cat "$WORK/out"; fail "verify accepted a cache with no fields"; }
expect_status 3 "$SLIP" info "$c"
c=$(fresh bign)
$PY -c "
import json, sys; p=sys.argv[1]+'/manifest.json'; m=json.load(open(p)); m['num_samples']=10**18; open(p,'w').write(json.dumps(m))" "$c"
expect_status 1 "$SLIP" verify "$c"
expect_status 3 "$SLIP" cat "$c" 0 -F label
for idx in -1 abc 1e3 0x1 " 1" 18446744073709551616 99999999999999999999; do
  expect_status 2 "$SLIP" cat "$base" "$idx" -F label
done
expect_status 2 "$SLIP" cat "$base" 9 -F label  # out of range for 9 samples
expect_status 0 "$SLIP" cat "$base" 08 -F label  # decimal, not octal
[ "$(cat "$WORK/out")" = "$("$SLIP" cat "$base" 8 -F label)" ] || fail "08 is not read as 8"
expect_status 2 "$SLIP" subset "$base" --values 0 --per-class -1 --mode ids -o "$WORK/ids.npy"
expect_status 2 "$SLIP" order "$base" --rank -1
expect_status 2 "$SLIP" order "$base" --world-size 0x2
expect_status 2 "$SLIP" verify "$base" --max-issues -5
expect_status 2 "$SLIP" convert "$root" -o "$WORK/x" --shard 1/-2
expect_status 2 "$SLIP" convert "$root" -o "$WORK/x" --max-image-pixels -1
pass "no fields / num_samples 10^18 refused; negative, non-numeric and out-of-range ids are usage errors"

# ---- 5. temporaries: a lock held by a live process protects, a free one marks abandoned -----
# hold_lock FILE: a live process holding flock(FILE) until killed; waits until it holds it.
hold_lock() {
  rm -f "$WORK/locked"
  $PY -c "
import fcntl, sys, time
f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], 'w').close(); time.sleep(600)" "$1" "$WORK/locked" \
    >/dev/null 2>&1 &
  holders+=($!)
  for _ in $(seq 6000); do [ -e "$WORK/locked" ] && return; sleep 0.05; done  # a hang guard, not a bound
  fail "could not take the lock of $1"
}
holders=()
trap 'kill "${holders[@]}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
c=$(fresh temps)
head -c 1000000 /dev/zero >"$c/.image_yuv420.bin.tmp-99999999-0badf00d"  # lock free: abandoned
: >"$c/.image_yuv420.bin.tmp-99999999-0badf00d.lock"
head -c 1000 /dev/zero >"$c/.image_yuv420.bin.tmp-424242"  # a pre-lock temporary: abandoned
head -c 1000 /dev/zero >"$c/.image_yuv420.meta.npy.tmp-99999998-1ive1ive"  # held: in progress
: >"$c/.image_yuv420.meta.npy.tmp-99999998-1ive1ive.lock"
hold_lock "$c/.image_yuv420.meta.npy.tmp-99999998-1ive1ive.lock"
expect_status 0 "$SLIP" verify "$c" --json
$PY - "$WORK/out" <<'PY' || fail "verify --json temporaries"
import json, sys
d = json.load(open(sys.argv[1]))
t = sorted(d["temporaries"])
assert t == [".image_yuv420.bin.tmp-424242 (abandoned)", ".image_yuv420.bin.tmp-99999999-0badf00d (abandoned)",
             ".image_yuv420.meta.npy.tmp-99999998-1ive1ive (in progress)"], t
assert d["unknown_files"] == [], d["unknown_files"]
PY
expect_status 0 "$SLIP" ls "$WORK"
grep -q "temporary file .image_yuv420.bin.tmp-99999999-0badf00d (abandoned)" "$WORK/out" || { cat "$WORK/out"; fail "ls: abandoned temp"; }
grep -q "1ive1ive (in progress)" "$WORK/out" || fail "ls: temp in progress"
expect_status 0 "$SLIP" yuv420 "$c"
grep -q "removed .*0badf00d" "$WORK/err" || { cat "$WORK/err"; fail "yuv420 does not report the removed temporary"; }
[ ! -e "$c/.image_yuv420.bin.tmp-99999999-0badf00d" ] && [ ! -e "$c/.image_yuv420.bin.tmp-99999999-0badf00d.lock" ] &&
  [ ! -e "$c/.image_yuv420.bin.tmp-424242" ] || fail "abandoned temporaries not removed: $(ls -A "$c")"
[ -e "$c/.image_yuv420.meta.npy.tmp-99999998-1ive1ive" ] || fail "a temporary whose lock is held was removed"
expect_status 0 "$SLIP" verify "$c"
# A staging directory beside the caches, held by a live lock, survives a conversion of the same name.
name=$(basename "$base")
held=$WORK/caches/.$name.tmp-1-aaaaaaaa
mkdir "$held" && : >"$held.lock"
hold_lock "$held.lock"
stale=$WORK/caches/.$name.tmp-2-bbbbbbbb
mkdir "$stale" && : >"$stale.lock"
expect_status 0 "$SLIP" ls "$WORK/caches"
grep -q "converting pid 1$" "$WORK/out" && grep -q "abandoned  interrupted conversion" "$WORK/out" || { cat "$WORK/out"; fail "ls: staging dirs"; }
expect_status 0 "$SLIP" convert "$root" -o "$WORK/caches" --force -q
[ -d "$held" ] || fail "convert removed a staging directory whose lock is held"
[ ! -e "$stale" ] && [ ! -e "$stale.lock" ] || fail "convert left an abandoned staging directory"
kill "${holders[@]}" 2>/dev/null || true
# Fixed temporary names planted as links to files elsewhere are never written through.
c=$(fresh planted)
echo keep >"$WORK/victim"
for f in label_index.npy.tmp manifest.json.tmp manifest.json.xxh3.tmp label.index.ids.npy.tmp; do ln -s "$WORK/victim" "$c/$f"; done
expect_status 0 "$SLIP" index "$c" -F label
[ "$(cat "$WORK/victim")" = keep ] || fail "slip index wrote through a planted link"
expect_status 1 "$SLIP" verify "$c"  # the planted links are files no record accounts for
for f in label_index.npy.tmp manifest.json.tmp manifest.json.xxh3.tmp label.index.ids.npy.tmp; do
  grep -q "^FAIL $f: unknown file (a symbolic link)" "$WORK/out" || { cat "$WORK/out"; fail "planted link $f not reported"; }
  rm "$c/$f"
done
expect_status 0 "$SLIP" verify "$c"
pass "temporaries: abandoned ones (lock free) removed and reported, held ones kept, planted links not followed"

# ---- 6. the stdin spool never outlives the run ---------------------------------------------
spool=$WORK/tmpdir
mkdir -p "$spool"
echo "not a tar" | TMPDIR=$spool "$SLIP" convert - -o "$WORK/stdin-out" >/dev/null 2>&1 && fail "garbage on stdin converted"
[ -z "$(ls -A "$spool")" ] || fail "a failed stdin conversion left $(ls -A "$spool")"
mkfifo "$WORK/stdin"
sleep 600 >"$WORK/stdin" &  # a writer that never finishes: slip blocks reading it
writer=$!
TMPDIR=$spool "$SLIP" convert - -o "$WORK/stdin-out" <"$WORK/stdin" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 6000); do [ -n "$(ls -A "$spool")" ] && break; sleep 0.05; done  # an event; the count is a hang guard
[ -n "$(ls -A "$spool")" ] || fail "no stdin spool appeared"
kill -TERM "$pid"
status=0; wait "$pid" || status=$?
kill "$writer" 2>/dev/null || true
wait "$writer" 2>/dev/null || true
[ "$status" = 143 ] || fail "SIGTERM during the stdin spool: exit $status, want 143"
[ -z "$(ls -A "$spool")" ] || fail "a SIGTERM'd stdin conversion left $(ls -A "$spool")"
pass "stdin spool removed after a failure and after SIGTERM"
