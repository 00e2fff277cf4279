#!/usr/bin/env bash
# The README's `slip bench` table: every pipeline on a cache of ../shared/corpus/imagenet_like
# (800 images), 2 threads, batch 256, 3 epochs, best epoch; limit and efficiency from the same
# run; crop-aware decoding on and off, planar (the default) and rgb resampling.
# Usage: bench/figures.sh [path/to/slip] [path/to/shared]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
SHARED=${2:-$here/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$("$SLIP" convert "$SHARED/corpus/imagenet_like" -o "$work" -q)
echo "| pipeline | img/s | MB/s | ms/batch | limit | efficiency |"
echo "| --- | ---: | ---: | ---: | --- | ---: |"
row() {
  "$SLIP" bench "$cache" -j 2 -e 3 --json "$@" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin); e = max(d["epochs"], key=lambda e: e["images_per_second"]); l = d["limit"]
name = " ".join(sys.argv[1:])
if l["kind"] == "memcpy":
    lim = "%.0f MB/s memcpy" % l["megabytes_per_second"]
else:
    lim = "%.0f img/s (tjDecompress2 x %d)" % (l["images_per_second"], d["threads"])
print("| %s | %.0f | %.0f | %.1f | %s | %.2f |" % (name, e["images_per_second"], e["megabytes_per_second"], e["ms_per_batch"], lim, d["efficiency"]))
' "$@"
}
row -p raw
row -p decode
row -p center
row -p center --resample rgb
row -p center --no-crop-aware
row -p rrc
row -p rrc --resample rgb
row -p rrc --no-crop-aware
row -p direct-rrc
row -p multicrop
row -p multicrop --resample rgb
row -p multicrop --filter bicubic
row -p rrc --order shuffle
