#!/usr/bin/env bash
# Conversion from the page cache with -j N against N `cat`s writing in parallel (issue 39 item 3:
# convert writes with more than one thread). The corpus (800 photos, 28 MB) is replicated to
# 20,000 files with hard links and packed into 100 plain tar shards, as in convert_figures.sh.
# For each N from 1 to the CPUs:
#   ImageFolder:  slip convert -j N        vs  find | xargs -P N cat, each cat into its own file
#   tar shards:   slip convert -j N        vs  the shards' cat, N at a time, each into its own file
# With a second slip (an older build: SLIP_BEFORE), it is measured in the same rounds, so its
# ratio is against the same baselines. Each side runs ROUNDS times (default 3), alternating, from
# a synced state (no dirty pages), and the best run of each is reported; the ratio is
# cat seconds / slip seconds (1.00: as fast as the N cats).
# Usage: bench/convert_writers.sh path/to/slip path/to/shared [path/to/slip-before]
# (an older slip may need LD_LIBRARY_PATH=DIR-of-its-libslipstream: give a wrapper script)
set -euo pipefail
SLIP=$1
SHARED=$2
BEFORE=${3:-}
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-$(seq 1 "$(nproc)")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SLIPSTREAM_CACHE_DIR=$work/caches

src=$work/tree
source "$(dirname "$0")/corpus_tree.bash"
hard_linked_tree "$SHARED" "$src"
(cd "$src" && find . -type f | LC_ALL=C sort | sed 's|^\./||' > "$work/list")
split -n l/100 -d -a 3 "$work/list" "$work/part-"
mkdir -p "$work/shards"
i=0
for p in "$work"/part-*; do
  (cd "$src" && tar cf "$work/shards/s$(printf '%03d' $i).tar" --hard-dereference --transform 's|/|_|g' \
    --transform 's|\.JPEG$|.jpg|' -T "$p")
  i=$((i + 1))
done
bytes=$(find "$src" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
printf '%d files, %d MB; 100 tar shards; %s, %s CPUs (%s); load before: %s\n\n' "$(wc -l < "$work/list")" $((bytes / 1000000)) \
  "$(uname -m)" "$(nproc)" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" "$(cut -d' ' -f1-3 /proc/loadavg)"
find "$src" -type f -exec cat {} + > /dev/null
cat "$work"/shards/*.tar > /dev/null  # the page cache holds every input

secs() {  # secs CMD...: wall seconds of CMD, from a synced state
  rm -rf "$work/caches" "$work"/out.*
  sync
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null 2> "$work/err" || { cat "$work/err" >&2; echo "FAILED: $*" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }

echo "| source | -j N | slip convert | $([ -n "$BEFORE" ] && echo 'slip before | ')N cats in parallel | slip vs N cats$([ -n "$BEFORE" ] && echo ' | before vs N cats') |"
echo "| --- | ---: | ---: | $([ -n "$BEFORE" ] && echo '---: | ')---: | ---:$([ -n "$BEFORE" ] && echo ' | ---:') |"
for kind in ImageFolder tar; do
  for n in $JOBS; do
    if [ $kind = ImageFolder ]; then
      input=("$src")
      cats=(bash -c "cd $src && find . -type f | xargs -P $n -n 250 sh -c 'cat \"\$@\" > $work/out.\$\$' _")
    else
      input=("$work"/shards/s{000..099}.tar)
      cats=(bash -c "ls $work/shards/*.tar | xargs -P $n -n 1 sh -c 'cat \"\$0\" > $work/out.\$\$'")
    fi
    best_cat="" best_slip="" best_before=""
    for _ in $(seq "$ROUNDS"); do
      best_cat=$(min "$best_cat" "$(secs "${cats[@]}")")
      best_slip=$(min "$best_slip" "$(SLIP_PARALLEL_WRITES=1 secs "$SLIP" convert "${input[@]}" -j "$n" --non-jpeg keep --force -q)")
      [ -z "$BEFORE" ] || best_before=$(min "$best_before" "$(secs "$BEFORE" convert "${input[@]}" -j "$n" --non-jpeg keep --force -q)")
    done
    if [ -n "$BEFORE" ]; then
      printf '| %s | %d | %.2f s | %.2f s | %.2f s | %.2fx | %.2fx |\n' $kind "$n" "$best_slip" "$best_before" "$best_cat" \
        "$(echo "$best_cat / $best_slip" | bc -l)" "$(echo "$best_cat / $best_before" | bc -l)"
    else
      printf '| %s | %d | %.2f s | %.2f s | %.2fx |\n' $kind "$n" "$best_slip" "$best_cat" "$(echo "$best_cat / $best_slip" | bc -l)"
    fi
  done
done
printf '\nload after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
