#!/usr/bin/env bash
# slip against its peers on the same images (../shared/corpus/imagenet_like without the two
# 4000x3000 files, as ../shared/baselines.md measures them), on this machine, in one run:
#   torchvision ImageFolder + DataLoader (2 workers) RandomResizedCrop(224) + flip, and
#   DINO multi-crop with Pillow (2x224 + 8x96, bicubic) through the same DataLoader,
# against slip bench rrc and multicrop (bicubic) with 2 threads. Prints slip's rate over theirs.
# Usage: bench/peers/compare.sh [path/to/slip] [path/to/shared]   (needs Debian's python3-torchvision)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
SHARED=$(cd "${2:-$here/../shared}" && pwd)  # absolute: the image set is symlinks
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The peers' image set: every corpus file of at most 10 MPix, as symlinks in an ImageFolder.
awk -F'\t' 'NR>1 && $3*$4 <= 10000000 {print $1}' "$SHARED/corpus/imagenet_like.manifest.tsv" | while read -r p; do
  mkdir -p "$work/set/$(dirname "$p")"
  ln -s "$SHARED/corpus/imagenet_like/$p" "$work/set/$p"
done
cache=$("$SLIP" convert "$work/set" -o "$work/cache" -q)
restarts=$("$SLIP" convert "$work/set" -o "$work/cache" -q --jpeg-restarts)  # the same images with restart markers

peer() {  # peer MODE -> median images/s of 3 runs
  $PY "$SHARED/reference/peers/bench_torchvision.py" "$SHARED/corpus" "$1" 3 | sed -n 's/.*median=\([0-9.]*\).*/\1/p'
}
ours() {  # ours PIPELINE [flags] -> best epoch images/s (CACHE: which cache)
  "$SLIP" bench "${CACHE:-$cache}" -p "$1" -j 2 -e 3 --no-limit --json "${@:2}" | $PY -c 'import json,sys; print(json.load(sys.stdin)["best_images_per_second"])'
}
tv_rrc=$(peer rrc); slip_rrc=$(ours rrc --flip 0.5); slip_rrc_r=$(CACHE=$restarts ours rrc --flip 0.5)
tv_dino=$(peer dino); slip_dino=$(ours multicrop --filter bicubic --flip 0.5); slip_dino_r=$(CACHE=$restarts ours multicrop --filter bicubic --flip 0.5)
printf '%-34s %12s %12s %8s\n' workload "peer img/s" "slip img/s" ratio
printf '%-34s %12.1f %12.1f %7.2fx\n' "RRC224+flip vs torchvision" "$tv_rrc" "$slip_rrc" "$(echo "$slip_rrc / $tv_rrc" | bc -l)"
printf '%-34s %12.1f %12.1f %7.2fx\n' "DINO multi-crop vs Pillow" "$tv_dino" "$slip_dino" "$(echo "$slip_dino / $tv_dino" | bc -l)"
printf '%-34s %12.1f %12.1f %7.2fx\n' "RRC, --jpeg-restarts cache" "$tv_rrc" "$slip_rrc_r" "$(echo "$slip_rrc_r / $tv_rrc" | bc -l)"
printf '%-34s %12.1f %12.1f %7.2fx\n' "DINO, --jpeg-restarts cache" "$tv_dino" "$slip_dino_r" "$(echo "$slip_dino_r / $tv_dino" | bc -l)"
