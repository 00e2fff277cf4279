#!/usr/bin/env bash
# The scale figures of docs/SCALE.md: ImageNet-sized inputs (1,281,167 samples) as 1,282 WebDataset
# tar shards and as an ImageFolder of 1,000 classes (hard links to 128 copies of 16 small JPEGs, so it costs
# inodes, not disk), then every command a user runs on them, with wall time, peak RSS and output
# size, in one run. Needs ~3 GB in WORK (default: a temporary directory).
# Usage: bench/scale_figures.sh [path/to/slip] [SAMPLES] [SHARDS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
SAMPLES=${2:-1281167}
SHARDS=${3:-1282}
PY=/usr/bin/python3
work=${WORK:-$(mktemp -d)}
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export SLIPSTREAM_CACHE_DIR=$work/cache-root

"$PY" "$here/bench/make_synthetic_shards.py" "$work/shards" "$SAMPLES" "$SHARDS" >/dev/null
# The ImageFolder: class c holds the samples with label c, as hard links.
"$PY" - "$work/shards" "$work/folder" "$SAMPLES" <<'PY'
import os, sys, tarfile
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
# 16 distinct JPEGs from the first shard, 8 files of each: an inode takes at most 65,000 links.
t = tarfile.open(os.path.join(src, "train-000000.tar"))
data = [t.extractfile(m).read() for m in t if m.name.endswith(".jpg")][:16]
blobs = []
for k in range(128):
    p = os.path.join(dst, ".src-%d.JPEG" % k)
    open(p, "wb").write(data[k % 16])
    blobs.append(p)
for c in range(1000):
    os.makedirs(os.path.join(dst, "n%08d" % c), exist_ok=True)
for i in range(n):
    os.link(blobs[i % 128], os.path.join(dst, "n%08d" % (i % 1000), "n%08d_%d.JPEG" % (i % 1000, i)))
for p in blobs:
    os.unlink(p)
PY
first=$(printf 'train-%06d.tar' 0)
last=$(printf 'train-%06d.tar' $((SHARDS - 1)))
shards="$work/shards/train-{$(printf '%06d' 0)..$(printf '%06d' $((SHARDS - 1)))}.tar"

printf '%s samples; %s tar shards (%s .. %s, %s); ImageFolder of 1,000 classes; %s, %s CPUs\n\n' \
  "$SAMPLES" "$SHARDS" "$first" "$last" "$(du -sh "$work/shards" | cut -f1)" "$(uname -m)" "$(nproc)"
echo "| command | wall s | peak RSS MB | output |"
echo "| --- | ---: | ---: | --- |"
# row LABEL CMD...: wall time and peak RSS (GNU time), and the size of what it printed.
row() {
  local label=$1; shift
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; echo "FAILED: $label" >&2; return 1; }
  read -r secs kb < "$work/time"
  printf '| `%s` | %.2f | %.0f | %s lines, %s bytes |\n' "$label" "$secs" "$((kb / 1024))" "$(wc -l < "$work/out")" "$(wc -c < "$work/out")"
}
row "slip convert SHARDS --dry-run" bash -c "$SLIP convert $shards -o $work/c --dry-run"
row "slip convert SHARDS" bash -c "$SLIP convert $shards -o $work/c -q"
cache=$(ls -d "$work"/c/*.slipstream)
row "slip convert SHARDS (re-run: reused)" bash -c "$SLIP convert $shards -o $work/c -q"
row "slip info CACHE" "$SLIP" info "$cache"
row "slip info CACHE --json" "$SLIP" info "$cache" --json
row "slip ls DIR" "$SLIP" ls "$work/c"
row "slip verify CACHE" "$SLIP" verify "$cache"
row "slip verify CACHE --decode" "$SLIP" verify "$cache" --decode
row "slip index CACHE --field label" "$SLIP" index "$cache" --field label
row "slip index CACHE --field key (refused)" bash -c "$SLIP index $cache --field key; [ \$? = 2 ]"
row "slip index CACHE --field key --force" "$SLIP" index "$cache" --field key --force
row "slip order CACHE --seed 0" "$SLIP" order "$cache" --seed 0
seq 0 99 > "$work/classes.txt"
row "slip subset CACHE --values-file 100 classes --per-class 10" "$SLIP" subset "$cache" --values-file "$work/classes.txt" --per-class 10 -o "$work/sub"
row "slip convert FOLDER --dry-run" "$SLIP" convert "$work/folder" -o "$work/f" --dry-run
row "slip convert FOLDER" "$SLIP" convert "$work/folder" -o "$work/f" -q
row "slip convert FOLDER (re-run: reused)" "$SLIP" convert "$work/folder" -o "$work/f" -q
for i in 0 1 2 3; do
  row "slip convert FOLDER --shard $i/4" "$SLIP" convert "$work/folder" -o "$work/s" --shard "$i/4" -q
done
row "slip merge WORKDIR --clean" bash -c "$SLIP merge --from $work/s/*.parts --clean -q"
