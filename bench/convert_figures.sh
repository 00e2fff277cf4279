#!/usr/bin/env bash
# Conversion throughput against what the storage allows, in one run (issue 20's figures; the
# docs/PERFORMANCE.md table is this script's output). The corpus (800 real photos, 28 MB) is replicated to
# 20,000 files with hard links, and packed into 100 tar shards (plain and gzip):
#  (a) page cache:  slip convert           vs  find | xargs cat > FILE   (the same bytes read and written)
#  (b) slow FS:     slip convert           vs  find | xargs -P 32 cat > FILE, and vs --io-depth 1
#                   (tests/servers/slowfs adds 1 ms to every open/stat/read/readdir, as NFS does)
#  (c) tar shards:  slip convert           vs  cat / zcat of all shards, 2 at a time (the CPUs),
#                   and vs one cat of all shards into one file (slip too writes one file)
# Page-cache and tar rows are measured 3 times per side (ROUNDS), alternating, and the best of
# each is reported; the slow-FS rows once (the serial one takes minutes).
# Every slip run uses --non-jpeg keep (bytes copied, no transcoding: the storage is measured, not
# the CPU) and reports its stage seconds (read / prepare / write busy time) from --json.
# Usage: bench/convert_figures.sh [path/to/slip] [path/to/shared] [path/to/slowfs]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
SHARED=${2:-$here/../shared}
SLOWFS=${3:-$here/build/tests/slowfs}
PY=/usr/bin/python3
work=$(mktemp -d)
mnt=$work/mnt
cleanup() { fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export SLIPSTREAM_CACHE_DIR=$work/caches

src=$work/tree
source "$(dirname "$0")/corpus_tree.bash"
hard_linked_tree "$SHARED" "$src"
files=$(find "$src" -type f | wc -l)
bytes=$(find "$src" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
mkdir -p "$work/shards" "$work/gz"
(cd "$src" && find . -type f | LC_ALL=C sort | sed 's|^\./||' > "$work/list")
split -n l/100 -d -a 3 "$work/list" "$work/part-"
i=0
for p in "$work"/part-*; do
  n=$(printf '%03d' $i)
  # WebDataset keys: one member per sample, <key>.jpg (the class is not needed here).
  (cd "$src" && tar cf "$work/shards/s$n.tar" --hard-dereference --transform 's|/|_|g' --transform 's|\.JPEG$|.jpg|' -T "$p")
  gzip -1 -c "$work/shards/s$n.tar" > "$work/gz/s$n.tar.gz"
  i=$((i + 1))
done
printf '%d files, %d MB; 100 tar shards (%s), gzip (%s); %s, %s CPUs\n\n' "$files" $((bytes / 1000000)) \
  "$(du -sh "$work/shards" | cut -f1)" "$(du -sh "$work/gz" | cut -f1)" "$(uname -m)" "$(nproc)"

# measure LABEL CMD...: wall seconds, peak RSS (MB) -> "secs rss"
measure() {
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; echo "FAILED: $*" >&2; exit 1; }
  read -r secs kb < "$work/time"
  echo "$secs $((kb / 1024))"
}
stages() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["stage_seconds"]; print("read %.2f / prepare %.2f / write %.2f s" % (s["read"], s["prepare"], s["write"]))' "$work/out"; }
# row CASE "slip args" "baseline label" baseline-command...: each side $ROUNDS times, alternating
# (this machine's speed drifts by 2x within minutes); the best run of each side is reported.
ROUNDS=${ROUNDS:-3}
row() {
  local case=$1 args=$2 blabel=$3; shift 3
  local bs="" brss ss="" srss st="" b r s m
  for _ in $(seq "$ROUNDS"); do
    rm -rf "$work/caches" "$work"/cat.*
    # Each side starts with no dirty pages: otherwise the second one pays for the first one's writeback.
    sync
    read -r b r < <(measure bash -c "$*")
    if [ -z "$bs" ] || [ "$(echo "$b < $bs" | bc)" = 1 ]; then bs=$b; brss=$r; fi
    rm -rf "$work"/cat.*
    sync
    read -r s m < <(measure bash -c "$SLIP convert $args --non-jpeg keep --force --json")
    if [ -z "$ss" ] || [ "$(echo "$s < $ss" | bc)" = 1 ]; then ss=$s; srss=$m; st=$(stages); fi
  done
  printf '| %s | %.2f s (%s MB) | %s: %.2f s (%s MB) | %.2fx | %s |\n' "$case" "$ss" "$srss" "$blabel" "$bs" "$brss" \
    "$(echo "$bs / $ss" | bc -l)" "$st"
  last_slip=$ss
}
echo "| case | slip convert (peak RSS) | baseline (peak RSS) | slip vs baseline | slip stage busy time |"
echo "| --- | ---: | ---: | ---: | --- |"
cat "$work/list" > /dev/null; find "$src" -type f -exec cat {} + > /dev/null  # warm the page cache
row "(a) page cache, ImageFolder" "$src" 'find \| xargs cat > FILE' "cd $src && find . -type f | xargs cat > $work/cat.out"
# slip fsyncs what it publishes; the same baseline made durable too.
row "(a) page cache, ImageFolder" "$src" 'find \| xargs cat > FILE; sync FILE' "cd $src && find . -type f | xargs cat > $work/cat.out && sync $work/cat.out"
row "(c) 100 tar shards" "$work/shards/s{000..099}.tar" "cat, 2 at a time" \
  "ls $work/shards/*.tar | xargs -P 2 -n 1 sh -c 'cat \"\$0\" > $work/cat.\$\$'"
# slip writes one .bin, whose buffered writes the kernel serializes; the same shape of baseline:
row "(c) 100 tar shards" "$work/shards/s{000..099}.tar" "cat all > FILE (one file)" "cat $work/shards/*.tar > $work/cat.out"
row "(c) 100 tar.gz shards" "$work/gz/s{000..099}.tar.gz" "zcat, 2 at a time" \
  "ls $work/gz/*.tar.gz | xargs -P 2 -n 1 sh -c 'zcat \"\$0\" > $work/cat.\$\$'"
if [ -x "$SLOWFS" ] && [ -e /dev/fuse ] && mkdir -p "$mnt" && "$SLOWFS" "$src" "$mnt" --delay-us 1000; then
  for i in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
  ROUNDS=1
  row "(b) slow FS (1 ms), ImageFolder" "$mnt" 'find \| xargs -P 32 cat > FILE' \
    "cd $mnt && find . -type f | xargs -P 32 -n 64 cat > $work/cat.out"
  parallel=$last_slip
  row "(b) slow FS (1 ms), --io-depth 1" "$mnt --io-depth 1" 'find \| xargs -P 32 cat > FILE' \
    "cd $mnt && find . -type f | xargs -P 32 -n 64 cat > $work/cat.out"
  printf '\nslow FS: the default --io-depth 32 is %.1fx --io-depth 1 (the serial reader)\n' "$(echo "$last_slip / $parallel" | bc -l)"
else
  echo "(b) skipped: slowfs not built or FUSE cannot mount here"
fi
