#!/usr/bin/env bash
# Tar shards are bounded before they are read: a member larger than --max-sample-bytes (its
# header says so, or its bytes do) and a GNU sparse member are a bad sample (exit 3, or skipped
# with --on-error skip), never read into memory; memory stays flat whatever the members claim.
# A shard cut exactly at a member boundary (no end-of-archive blocks) is bad input unless
# --allow-truncated, for WebDataset and ImageFolder layouts, plain and compressed.
source "$(dirname "$0")/common.bash"
# Peak-RSS bounds are checked in normal builds only (sanitizers add shadow memory).
rss_limit() { [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] && echo 99999999 || echo "$1"; }
img=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1p)
s=$WORK/s && mkdir -p "$s"
for k in a b c; do cp "$img" "$s/$k.jpg"; echo 1 > "$s/$k.cls"; done
truncate -s 600M "$s/b.bin"   # zeros: 600 MiB claimed, a few KB compressed
(cd "$s" && tar cf - a.jpg a.cls b.jpg b.cls b.bin c.jpg c.cls) | zstd -q -o "$WORK/big.tar.zst"
peak() { /usr/bin/time -f %M -o "$WORK/rss" "$@" >"$WORK/out" 2>"$WORK/err" || true; tail -1 "$WORK/rss"; }
rss=$(peak "$SLIP" convert "$WORK/big.tar.zst" -o "$WORK/o1" --max-sample-bytes 1MiB)
grep -q "member b.bin (byte [0-9]*): member of 629145600 bytes exceeds --max-sample-bytes 1048576" "$WORK/err" || { cat "$WORK/err"; fail "oversized member not named"; }
[ "$rss" -lt "$(rss_limit 150000)" ] || fail "peak RSS ${rss} KiB while refusing a 600 MiB member"
expect_status 3 "$SLIP" convert "$WORK/big.tar.zst" -o "$WORK/o1" --max-sample-bytes 1MiB
expect_status 0 "$SLIP" convert "$WORK/big.tar.zst" -o "$WORK/o1" --max-sample-bytes 1MiB --on-error skip --json
$PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['written'] == 2 and d['skipped'] == 1, d" "$WORK/out" || fail "skip accounting"
pass "a 600 MiB member over --max-sample-bytes: bad sample, peak RSS ${rss} KiB"

# GNU sparse member: refused, never expanded.
mkdir -p "$WORK/sp" && cp "$img" "$WORK/sp/a.jpg" && echo 1 > "$WORK/sp/a.cls" && truncate -s 2G "$WORK/sp/a.bin"
(cd "$WORK/sp" && tar --sparse -cf "$WORK/sparse.tar" a.jpg a.cls a.bin)
rss=$(peak "$SLIP" convert "$WORK/sparse.tar" -o "$WORK/o2" --max-sample-bytes 4GiB)
grep -q "sparse member" "$WORK/err" || { cat "$WORK/err"; fail "sparse member not refused"; }
[ "$rss" -lt "$(rss_limit 150000)" ] || fail "peak RSS ${rss} KiB on a sparse member"
pass "GNU sparse member refused (peak RSS ${rss} KiB)"

# Cut at a member boundary: the first sample's three members, no end-of-archive blocks.
(cd "$s" && tar cf "$WORK/whole.tar" a.jpg a.cls c.jpg c.cls)
jpg_blocks=$(( ($(stat -c %s "$img") + 511) / 512 ))
cut_at=$(( (1 + jpg_blocks + 1 + 1) * 512 ))   # a.jpg + a.cls headers and data
head -c "$cut_at" "$WORK/whole.tar" > "$WORK/cut.tar"
gzip -c "$WORK/cut.tar" > "$WORK/cut.tar.gz"
for t in cut.tar cut.tar.gz; do
  expect_status 3 "$SLIP" convert "$WORK/$t" -o "$WORK/o3"
  grep -q "without tar's end-of-archive blocks" "$WORK/err" || { cat "$WORK/err"; fail "$t: truncation not reported"; }
  expect_status 0 "$SLIP" convert "$WORK/$t" -o "$WORK/o3" --allow-truncated --json
  grep -q "end-of-archive" "$WORK/err" || fail "$t: --allow-truncated does not warn"
  $PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['written'] == 1, d" "$WORK/out" || fail "$t: --allow-truncated"
done
expect_status 0 "$SLIP" convert "$WORK/whole.tar" -o "$WORK/o3"
# ImageFolder layout too.
mkdir -p "$WORK/if/cls" && cp "$img" "$WORK/if/cls/x.jpg" && cp "$img" "$WORK/if/cls/y.jpg"
(cd "$WORK/if" && tar cf "$WORK/if.tar" cls/x.jpg cls/y.jpg)
head -c $(( (1 + jpg_blocks) * 2 * 512 )) "$WORK/if.tar" > "$WORK/if-cut.tar"
expect_status 3 "$SLIP" convert "$WORK/if-cut.tar" --layout imagefolder -o "$WORK/o4"
expect_status 0 "$SLIP" convert "$WORK/if-cut.tar" --layout imagefolder -o "$WORK/o4" --allow-truncated
expect_status 0 "$SLIP" convert "$WORK/if.tar" --layout imagefolder -o "$WORK/o5"
pass "shards cut at a member boundary: exit 3 unless --allow-truncated (plain, gzip, ImageFolder layout)"

# A member whose header claims 200 MiB (under --max-sample-bytes) in a shard that ends 64 KiB
# into its data: the header's size only sizes the first allocation (capped), so refusing it
# costs what was really read, not what was claimed.
liar_at=$($PY - "$WORK/liar.tar" "$img" <<'PY'
import sys, tarfile, io
out, img = sys.argv[1], sys.argv[2]
data = open(img, "rb").read()
with open(out, "wb") as f:
    for name, payload in (("s0.jpg", data), ("s0.cls", b"1")):
        ti = tarfile.TarInfo(name); ti.size = len(payload)
        f.write(ti.tobuf(format=tarfile.USTAR_FORMAT)); f.write(payload + bytes(-len(payload) % 512))
    ti = tarfile.TarInfo("s1.jpg"); ti.size = 200 << 20
    print(f.tell())  # where the lying header starts
    f.write(ti.tobuf(format=tarfile.USTAR_FORMAT)); f.write(bytes(64 << 10))
PY
)
rss=$(peak "$SLIP" convert "$WORK/liar.tar" -o "$WORK/o7")
grep -q "liar.tar: byte $liar_at: member s1.jpg: .*[Tt]runcated" "$WORK/err" || { cat "$WORK/err"; fail "a member cut short of its header's size is not named at byte $liar_at"; }
expect_status 3 "$SLIP" convert "$WORK/liar.tar" -o "$WORK/o7"
[ "$rss" -lt "$(rss_limit 100000)" ] || fail "peak RSS ${rss} KiB for a member claiming 200 MiB with 64 KiB of data"
pass "a member claiming 200 MiB with 64 KiB of data: exit 3, peak RSS ${rss} KiB"

# A batch is bounded by bytes too: 40 samples of 16 MiB each are never all held at once
# (before: a batch of 64 samples held all 640 MiB; then six batches of 64 MiB could be
# held across the pipeline's stages, up to 480 MiB). 256 MiB in flight + one sample + the program.
mkdir -p "$WORK/many"
cp "$img" "$WORK/many/x.jpg"
$PY - "$WORK/many.tar" "$img" <<'PY'
import sys, tarfile, io
out, img = sys.argv[1], sys.argv[2]
data = open(img, "rb").read(); zeros = bytes(16 << 20)
with tarfile.open(out, "w") as t:
    for k in range(40):
        for ext, payload in (("jpg", data), ("cls", b"1"), ("bin", zeros)):
            ti = tarfile.TarInfo(f"s{k:03d}.{ext}"); ti.size = len(payload); t.addfile(ti, io.BytesIO(payload))
PY
rss=$(peak "$SLIP" convert "$WORK/many.tar" -o "$WORK/o6" -j 2)
[ -d "$(ls -d "$WORK"/o6/*.slipstream)" ] || { cat "$WORK/err"; fail "40 x 16 MiB conversion failed"; }
[ "$rss" -lt "$(rss_limit 400000)" ] || fail "peak RSS ${rss} KiB converting 40 samples of 16 MiB (640 MiB)"
pass "batches bounded by bytes: 640 MiB of samples converted in ${rss} KiB peak RSS"

# Many shards stay readable: the manifest lists them (slip.source.uris) with a one-line summary,
# ls and info print one line for the source, and the cache is named after the shards' pattern.
for k in 0 1 2; do (cd "$s" && tar cf "$WORK/train-00000$k.tar" a.jpg a.cls); done
sh_cache=$("$SLIP" convert "$WORK"/train-00000{0,1,2}.tar -o "$WORK/o7" -q --on-error skip --allow-empty)
case "$(basename "$sh_cache")" in train-*.slipstream) ;; *) fail "cache of train-*.tar named $(basename "$sh_cache")";; esac
$PY - "$sh_cache/manifest.json" "$WORK" <<'PY' || fail "manifest source of several shards"
import json, sys
src = json.load(open(sys.argv[1]))["slip"]["source"]
w = sys.argv[2]
assert src["uris"] == [f"{w}/train-00000{k}.tar" for k in range(3)], src
assert src["uri"] == f"3 tar shards ({w}/train-000000.tar .. {w}/train-000002.tar)", src
PY
expect_status 0 "$SLIP" ls "$WORK/o7"
[ "$(wc -l < "$WORK/out")" -eq 2 ] || { cat "$WORK/out"; fail "ls of a 3-shard cache is not header + one line"; }
expect_status 0 "$SLIP" info "$sh_cache"
grep -q "source:      tar 3 tar shards" "$WORK/out" || { cat "$WORK/out"; fail "info does not summarise the shards"; }
pass "several shards: uris list + one-line summary in the manifest, ls and info; named after the pattern"
