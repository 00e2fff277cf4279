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
import json, os, sys
d = json.load(open(sys.argv[1])); p, j, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
assert d["command"] == "bench" and d["pipeline"] == p and d["threads"] == j and d["samples"] == n, d
assert len(d["epochs"]) == 2 and all(e["images_per_second"] > 0 and e["ms_per_batch"] > 0 for e in d["epochs"]), d
assert d["limit"]["images_per_second"] > 0 and d["efficiency"] > 0, d
assert d["limit"]["kind"] == ("memcpy" if p == "raw" else "tjDecompress2 on the threads at once"), d
# The limit is measured on the threads at once; the ideal is one thread's rate times the threads.
lim = d["limit"]
assert d["cpus"] >= 1 and d["oversubscribed"] == (j > d["cpus"]), d
if p != "raw":
    assert abs(lim["ideal_images_per_second"] - lim["single_thread_images_per_second"] * j) < 1e-6 * lim["ideal_images_per_second"], d
    if j == 1:
        assert lim["images_per_second"] == lim["single_thread_images_per_second"], d
assert abs(d["efficiency"] - d["best_images_per_second"] / lim["images_per_second"]) < 1e-9, d
assert abs(d["efficiency_vs_ideal"] - d["best_images_per_second"] / lim["ideal_images_per_second"]) < 1e-9, d
assert d["crops_per_image"] == {"raw": 0, "decode": 0, "multicrop": 10}.get(p, 1), d
# The spread is computed from the epochs it reports (two epochs: both judged).
rates = [e["images_per_second"] for e in d["epochs"]]
assert abs(d["epoch_spread"] - (max(rates) - min(rates)) / max(rates)) < 1e-9, d
assert d["noisy"] == (d["epoch_spread"] > 0.10), d
# Decoding pipelines name their kernels' SIMD level: by default the best /proc/cpuinfo says this
# CPU (and kernel) runs, AVX-512 needing F, BW, VNNI and VBMI (tests/integration/kernel_levels.sh
# forces the others).
if p != "raw":
    flags = set(next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split(":")[1].split())
    if os.environ.get("SLIP_TARGET_ARCH", "x86_64") != "x86_64":
        flags = set()  # slip built for another processor (arm64 under qemu-user reads this machine's cpuinfo)
    sse4 = {"sse4_1", "ssse3"} <= flags
    avx2 = sse4 and "avx2" in flags
    want = ("avx512" if avx2 and {"avx512f", "avx512bw", "avx512_vnni", "avx512vbmi"} <= flags else
            "avx2" if avx2 else "sse4" if sse4 else "scalar")
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

# --scaling: one row per thread count, 1, 2, 4, ... up to the CPUs, each a full report.
"$SLIP" bench "$cache" -p rrc -e 1 -b 8 --scaling --json >"$WORK/s.json"
$PY - "$WORK/s.json" "$($PY -c 'import os; print(len(os.sched_getaffinity(0)))')" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); cpus = int(sys.argv[2])
counts = [r["threads"] for r in d["scaling"]]
want = []
n = 1
while n < cpus:
    want.append(n); n *= 2
want.append(cpus)
assert counts == want, (counts, want)
for r in d["scaling"]:
    assert r["pipeline"] == "rrc" and r["limit"]["images_per_second"] > 0 and r["efficiency"] > 0, r
PY
"$SLIP" bench "$cache" -p decode -e 1 -b 8 --scaling >"$WORK/s.txt"
head -1 "$WORK/s.txt" | grep -q '^threads .*img/s .*limit img/s .*ideal img/s .*efficiency .*vs ideal .*speed-up$' || { cat "$WORK/s.txt"; fail "scaling header"; }
[ "$(grep -c '^[0-9]' "$WORK/s.txt")" -ge 1 ] && grep -q '^1 .* 1\.00x$' "$WORK/s.txt" || { cat "$WORK/s.txt"; fail "scaling rows"; }
expect_status 2 "$SLIP" bench "$cache" --scaling --compare siblings
pass "--scaling: a row per thread count up to the CPUs"

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
