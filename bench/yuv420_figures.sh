#!/usr/bin/env bash
# The YUV420 table of docs/PERFORMANCE.md: ../shared/corpus/imagenet_like as a JPEG cache and as a YUV420
# cache (convert --image-format yuv420), every pipeline run on both in the same process
# (slip bench --compare), 2 threads, batch 256, 3 epochs, best epochs; plus raw I/O of the
# YUV420 cache against memcpy. Usage: bench/yuv420_figures.sh [path/to/slip] [path/to/shared]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
SHARED=${2:-$here/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jpeg=$("$SLIP" convert "$SHARED/corpus/imagenet_like" -o "$work" -q)
yuv=$("$SLIP" convert "$SHARED/corpus/imagenet_like" -o "$work" -q --image-format yuv420)
echo "| pipeline | JPEG img/s | YUV420 img/s | YUV420 / JPEG | storage YUV420 / JPEG |"
echo "| --- | ---: | ---: | ---: | ---: |"
for p in center rrc direct-rrc multicrop; do
  "$SLIP" bench "$jpeg" -p "$p" -j 2 -e 3 --no-limit --compare "$yuv" --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("| -p %s | %.0f | %.0f | %.2f | %.2f |" % (sys.argv[1], d["base"]["best_images_per_second"], d["other"]["best_images_per_second"], d["speed_ratio"], d["storage_ratio"]))
' "$p"
done
"$SLIP" bench "$yuv" -p raw -j 2 -e 3 --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin); e = max(d["epochs"], key=lambda e: e["images_per_second"])
print()
print("raw I/O of the YUV420 cache: %.2f GB/s, memcpy of the same bytes %.2f GB/s (%.2f)" % (e["megabytes_per_second"] / 1e3, d["limit"]["megabytes_per_second"] / 1e3, d["efficiency"]))
'
