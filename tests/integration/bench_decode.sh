#!/usr/bin/env bash
# slip bench (every pipeline, --json and text, 1 and 2 threads, shuffle, --cold) and
# slip verify --decode on a clean cache and on one holding a corrupt JPEG.
source "$(dirname "$0")/common.bash"
cache=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q)
n=$(find "$SRC/examples/sample" -type f | wc -l)

for p in raw decode center rrc direct-rrc multicrop; do
  for j in 1 2; do
    "$SLIP" bench "$cache" -p "$p" -j "$j" -e 2 -b 16 --json >"$WORK/b.json"
    $PY - "$WORK/b.json" "$p" "$j" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); p, j, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
assert d["command"] == "bench" and d["pipeline"] == p and d["threads"] == j and d["samples"] == n, d
assert len(d["epochs"]) == 2 and all(e["images_per_second"] > 0 and e["ms_per_batch"] > 0 for e in d["epochs"]), d
assert d["limit"]["images_per_second"] > 0 and d["efficiency"] > 0, d
assert d["limit"]["kind"] == ("memcpy" if p == "raw" else "tjDecompress2 x threads"), d
assert d["crops_per_image"] == {"raw": 0, "decode": 0, "multicrop": 10}.get(p, 1), d
# The spread is computed from the epochs it reports (two epochs: both judged).
rates = [e["images_per_second"] for e in d["epochs"]]
assert abs(d["epoch_spread"] - (max(rates) - min(rates)) / max(rates)) < 1e-9, d
assert d["noisy"] == (d["epoch_spread"] > 0.10), d
# The planar path names its kernels' instruction set: what /proc/cpuinfo says this CPU (and
# kernel) runs, AVX-512 needing F, BW, VNNI and VBMI.
if d.get("resample") == "planar":
    flags = set(next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split(":")[1].split())
    want = "avx512" if {"avx512f", "avx512bw", "avx512_vnni", "avx512vbmi"} <= flags else "avx2" if "avx2" in flags else "scalar"
    assert d["kernels"] == want, (d["kernels"], want)
else:
    assert "kernels" not in d, d
PY
  done
done
pass "every pipeline on 1 and 2 threads reports epochs, a limit and an efficiency"

"$SLIP" bench "$cache" -p rrc -e 2 --order shuffle --cold --crops 4x64@0.1-0.5 >"$WORK/text"
grep -q '^epoch 1: .* img/s .* MB/s .* ms/batch  (cold)$' "$WORK/text" || { cat "$WORK/text"; fail "text output"; }
grep -q '^limit: .*tjDecompress2' "$WORK/text" && grep -q '^efficiency: ' "$WORK/text" || fail "limit lines"
"$SLIP" bench "$cache" -p multicrop --crops 3x32@0.2-0.4,1x64 -e 1 --json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["crops_per_image"] == 4, d'
pass "text output, shuffle, cold, crop specs"

expect_status 2 "$SLIP" bench "$cache" -p multicrop --crops 2x224@0.9-0.1
grep -q "crop spec" "$WORK/err" || fail "bad crop spec message"
expect_status 2 "$SLIP" bench "$cache" -p nonsense
pass "bad options are usage errors"

expect_status 0 "$SLIP" verify "$cache" --decode
grep -q "$n images decoded (max diff 0, mean 0)" "$WORK/out" || { cat "$WORK/out"; fail "verify --decode summary"; }

mkdir -p "$WORK/bad/c"
cp "$(find "$SRC/examples/sample" -type f | LC_ALL=C sort | sed -n 1p)" "$WORK/bad/c/a.jpg"
cp "$(bad_dir)/garbage_in_entropy.JPEG" "$WORK/bad/c/b.jpg"
bad=$("$SLIP" convert "$WORK/bad" -o "$WORK/bc" -q)
expect_status 1 "$SLIP" verify "$bad" --decode
grep -q "^FAIL image.bin: sample 1: field image: image does not decode: corrupt JPEG" "$WORK/out" || { cat "$WORK/out"; fail "corrupt sample not named"; }
# Crop-aware decoding reads no row below a sample's windows, so a pipeline fails on the corrupt
# sample when its windows reach the damage (the whole image for decode, the middle for center,
# ten windows for multicrop; one rrc window may stop above it and give correct pixels).
for p in decode center multicrop; do
  expect_status 3 "$SLIP" bench "$bad" -p $p -e 1 --no-limit
  grep -q "sample 1" "$WORK/err" || { cat "$WORK/err"; fail "bench -p $p error does not name the sample"; }
done
pass "verify --decode and bench name the corrupt sample"
