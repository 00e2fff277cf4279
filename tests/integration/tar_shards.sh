#!/usr/bin/env bash
# WebDataset tar shards made by GNU tar and by Python's tarfile from the corpus convert to the
# same bytes and labels as the ImageFolder conversion of the same images, in shard order;
# compressed shards, pax/long names, stdin, brace ranges, globs and @lists work; damaged and
# hostile shards give the documented errors or skips.
source "$(dirname "$0")/common.bash"
need_shared "shards of the 800-image corpus (counts, member offsets and names are the corpus's)"
export SOURCE_DATE_EPOCH=1700000000
stage=$WORK/stage && mkdir -p "$stage"
# Samples in ImageFolder order: key = <class>/<stem>, members .jpg + .cls + .json.
$PY - "$CORPUS" "$stage" <<'PY'
import os, sys, json
root, stage = sys.argv[1], sys.argv[2]
classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
order = []
for label, c in enumerate(classes):
    for f in sorted(os.listdir(os.path.join(root, c))):
        stem = os.path.splitext(f)[0]
        os.makedirs(os.path.join(stage, c), exist_ok=True)
        dst = os.path.join(stage, c, stem)
        os.symlink(os.path.join(root, c, f), dst + ".jpg")
        open(dst + ".cls", "w").write(f"{label}\n")
        json.dump({"class": c, "file": f}, open(dst + ".json", "w"))
        order.append(f"{c}/{stem}")
open(os.path.join(stage, "order.txt"), "w").write("\n".join(order) + "\n")
PY
# 4 shards of 200 samples with GNU tar (dereferencing the symlinked images).
split -l 200 -d -a 6 "$stage/order.txt" "$WORK/part-"
i=0
for part in "$WORK"/part-*; do
  name=$(printf 'shard-%06d.tar' $i)
  sed 's/$/.jpg/; p; s/\.jpg$/.cls/; p; s/\.cls$/.json/' "$part" > "$WORK/members"
  (cd "$stage" && tar --dereference --format=gnu -cf "$WORK/$name" -T "$WORK/members")
  i=$((i + 1))
done
ref=$("$SLIP" convert "$CORPUS" -o "$WORK/ref" -q)
compare() {  # compare CACHE: image bytes and labels equal the ImageFolder cache's, keys in order
  $PY - "$1" "$ref" "$stage/order.txt" <<'PY'
import sys, numpy as np
c, r, order = sys.argv[1:4]
def payloads(d):
    m = np.load(d + "/image.meta.npy"); b = open(d + "/image.bin", "rb").read()
    return [b[x["data_ptr"]:x["data_ptr"] + x["data_size"]] for x in m]
a, b = payloads(c), payloads(r)
assert len(a) == len(b) == 800, (len(a), len(b))
assert a == b, "image bytes differ"
assert (np.load(c + "/label.npy") == np.load(r + "/label.npy")).all(), "labels differ"
off = np.load(c + "/key.offsets.npy"); kb = open(c + "/key.bin", "rb").read()
keys = [kb[o:o + l].decode() for o, l in off]
assert keys == open(order).read().split(), "keys not in shard order"
PY
}
c=$("$SLIP" convert "$WORK"/shard-{000000..000003}.tar -o "$WORK/c1" -q)
compare "$c" || fail "GNU tar shards differ from the ImageFolder conversion"
"$SLIP" verify "$c" >/dev/null || fail "verify of the tar cache"
pass "GNU tar shards (list): same bytes and labels as ImageFolder, keys in order"

c=$("$SLIP" convert "$WORK/shard-{000000..000003}.tar" -o "$WORK/c2" -q)
compare "$c" || fail "brace range"
c=$("$SLIP" convert "$WORK/shard-*.tar" -o "$WORK/c3" -q)
compare "$c" || fail "glob"
ls "$WORK"/shard-*.tar > "$WORK/shards.txt"
c=$("$SLIP" convert "@$WORK/shards.txt" -o "$WORK/c4" -q)
compare "$c" || fail "@list"
pass "brace range, glob and @list"

# Python tarfile: pax headers, member names over 100 bytes, gzip and zstd by content.
$PY - "$stage" "$WORK" <<'PY'
import os, sys, tarfile
stage, work = sys.argv[1:3]
order = open(os.path.join(stage, "order.txt")).read().split()
pad = "d" * 90 + "/"  # member names over 100 bytes need pax or GNU long names
with tarfile.open(os.path.join(work, "py.tar"), "w", format=tarfile.PAX_FORMAT) as t:
    for key in order:
        for ext in ("jpg", "cls", "json"):
            t.add(os.path.realpath(os.path.join(stage, key + "." + ext)), arcname=pad + key + "." + ext)
PY
gzip -c "$WORK/py.tar" > "$WORK/py.shard"           # no telling extension: detected by content
zstd -q -c "$WORK/py.tar" > "$WORK/py.tar.zst"
for f in py.tar py.shard py.tar.zst; do
  c=$("$SLIP" convert "$WORK/$f" -o "$WORK/py-$f" -q)
  $PY -c "import numpy as np,sys; m=np.load('$c/image.meta.npy'); assert len(m)==800" || fail "$f"
  cmp -s "$c/image.bin" "$ref/image.bin" || fail "$f: image.bin differs from the ImageFolder cache"
done
c=$(cat "$WORK/py.tar.zst" | "$SLIP" convert - -o "$WORK/stdin" -q)
cmp -s "$c/image.bin" "$ref/image.bin" || fail "stdin stream"
pass "pax headers + long names (Python tarfile), gzip and zstd by content, stdin"

# An ImageFolder packed in a tar (--layout imagefolder), members in a shuffled order: the same
# storage files as the ImageFolder conversion (the tar is named like the root, so `path` agrees).
mkdir -p "$WORK/ifl"
(cd "$CORPUS" && find . -type f | sed 's|^\./||' | shuf --random-source=<(yes) > "$WORK/ifl/members" && tar -cf "$WORK/ifl/imagenet_like.tar" -T "$WORK/ifl/members")
c=$("$SLIP" convert "$WORK/ifl/imagenet_like.tar" --layout imagefolder -o "$WORK/ifl/out" -q)
for f in image.bin image.meta.npy label.npy index.npy path.bin path.offsets.npy; do
  cmp -s "$c/$f" "$ref/$f" || fail "--layout imagefolder: $f differs from the ImageFolder conversion"
done
pass "--layout imagefolder (shuffled members): storage files identical to the ImageFolder conversion"

# Damaged and hostile shards.
one() { (cd "$stage" && tar --dereference -cf "$1" "${@:2}"); }
head -c 250000 "$WORK/shard-000000.tar" > "$WORK/trunc.tar"
expect_status 3 "$SLIP" convert "$WORK/trunc.tar" -o "$WORK/bad"
grep -qE "trunc.tar: .*byte [0-9]+" "$WORK/err" || { cat "$WORK/err"; fail "truncated shard message"; }
# Garbage over a member header in the middle (garbage inside JPEG data is only found by a decode).
$PY -c "
import tarfile
t=tarfile.open('$WORK/shard-000000.tar'); m=t.getmembers()[150]; t.close()
d=bytearray(open('$WORK/shard-000000.tar','rb').read()); d[m.offset:m.offset+2048]=bytes(range(256))*8
open('$WORK/garbage.tar','wb').write(d)"
status=0; "$SLIP" convert "$WORK/garbage.tar" -o "$WORK/bad" >/dev/null 2>"$WORK/err" || status=$?
[ "$status" -eq 3 ] || { cat "$WORK/err"; fail "garbage in the middle: exit $status"; }
k1=$(sed -n 1p "$stage/order.txt"); k2=$(sed -n 2p "$stage/order.txt")
one "$WORK/unordered.tar" "$k1.jpg" "$k1.cls" "$k2.jpg" "$k2.cls" "$k1.json"
expect_status 3 "$SLIP" convert "$WORK/unordered.tar" -o "$WORK/bad"
grep -q "member $k1.json: key \"$k1\" appears again" "$WORK/err" || { cat "$WORK/err"; fail "unordered message"; }
mkdir -p "$WORK/dup/x" && cp "$stage/$k1.cls" "$WORK/dup/x/a.cls" && cp "$stage/$k1.jpg" "$WORK/dup/x/a.jpg" && cp "$stage/$k2.cls" "$WORK/dup/x/a.CLS"
(cd "$WORK/dup" && tar -cf "$WORK/dup.tar" x/a.jpg x/a.cls x/a.CLS)
expect_status 3 "$SLIP" convert "$WORK/dup.tar" -o "$WORK/bad"
grep -q 'duplicate field "cls" in sample "x/a"' "$WORK/err" || { cat "$WORK/err"; fail "duplicate field message"; }
$PY - "$WORK" "$stage/$k1.jpg" <<'PY'
import io, sys, tarfile
work, jpg = sys.argv[1:3]
data = open(jpg, "rb").read()
def add(t, name, payload):
    ti = tarfile.TarInfo(name); ti.size = len(payload); t.addfile(ti, io.BytesIO(payload))
with tarfile.open(work + "/evil.tar", "w") as t:
    add(t, "a.jpg", data); add(t, "a.cls", b"1")
    add(t, "../../etc/passwd", b"root:x:0:0")
with tarfile.open(work + "/symlink.tar", "w") as t:
    add(t, "a.jpg", data); add(t, "a.cls", b"1")
    ti = tarfile.TarInfo("b.jpg"); ti.type = tarfile.SYMTYPE; ti.linkname = "/etc/passwd"; t.addfile(ti)
    add(t, "b.cls", b"2")
with tarfile.open(work + "/zero.tar", "w") as t:
    add(t, "a.jpg", data); add(t, "a.cls", b"1"); add(t, "b.jpg", b""); add(t, "b.cls", b"2")
PY
expect_status 3 "$SLIP" convert "$WORK/evil.tar" -o "$WORK/bad"
grep -q "member ../../etc/passwd: unsafe member name" "$WORK/err" || { cat "$WORK/err"; fail "../ member message"; }
expect_status 0 "$SLIP" convert "$WORK/symlink.tar" -o "$WORK/sym" --on-error skip --json
grep -q "member b.jpg (byte [0-9]*): symlink skipped, never followed" "$WORK/err" || { cat "$WORK/err"; fail "symlink not reported"; }
$PY -c "import json; d=json.load(open('$WORK/out')); assert d['written']==1 and d['skipped']==1, d; assert 'no .jpg member' in d['ledger'][0]['reason'], d"
expect_status 3 "$SLIP" convert "$WORK/symlink.tar" -o "$WORK/bad"
expect_status 3 "$SLIP" convert "$WORK/zero.tar" -o "$WORK/bad"
grep -q "zero.tar:b@.*sample 1: empty image (0 bytes)" "$WORK/err" || { cat "$WORK/err"; fail "0-byte image message"; }
expect_status 0 "$SLIP" convert "$WORK/zero.tar" -o "$WORK/zero" --on-error skip --json
$PY -c "import json; d=json.load(open('$WORK/out')); assert (d['written'], d['skipped']) == (1, 1), d"
expect_status 0 "$SLIP" convert "$WORK/symlink.tar" -o "$WORK/sym2" --missing skip --json
$PY -c "import json; d=json.load(open('$WORK/out')); assert (d['written'], d['skipped']) == (1, 1) and d['ledger'][0]['action']=='skipped', d"
[ -z "$(ls -A "$WORK/bad" 2>/dev/null)" ] || fail "a failed convert left files"
pass "truncated, garbage, unordered, duplicate field, ../ member, symlink, 0-byte image: documented errors/skips"
