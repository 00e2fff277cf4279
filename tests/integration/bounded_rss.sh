#!/usr/bin/env bash
# verify and bench on a cache larger than their resident window (256 MiB): the mapped pages are
# released behind the reader and whole-file checksums are streamed, so peak RSS stays far below
# the cache size (SLURM accounts resident file pages against a job). Before: RSS ~2x the cache.
source "$(dirname "$0")/common.bash"
command -v /usr/bin/time >/dev/null || { echo "skip: GNU time (/usr/bin/time) not installed"; exit 77; }
# Sanitizer builds carry shadow memory and quarantines: resident sizes mean nothing there.
[ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || { echo "skip: peak RSS is not comparable under a sanitizer"; exit 77; }
big=$(find "$CORPUS" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
# Hard links of the largest JPEG (640 of the corpus's ~1 MB one; more of a smaller one): a cache
# of over 600 MB from no extra source bytes.
links=$((650000000 / $(stat -c %s "$big") + 1))
[ "$links" -ge 640 ] || links=640
mkdir -p "$WORK/src/a"
for i in $(seq -w 1 "$links"); do ln "$big" "$WORK/src/a/$i.JPEG" 2>/dev/null || cp "$big" "$WORK/src/a/$i.JPEG"; done
cache=$("$SLIP" convert "$WORK/src" -o "$WORK/o" -q --non-jpeg keep)
mkdir -p "$WORK/small/a" && cp -l "$WORK"/src/a/00[1-4]*.JPEG "$WORK/small/a/"
small=$("$SLIP" convert "$WORK/small" -o "$WORK/o" -q --non-jpeg keep)
size_kb=$(du -k "$cache/image.bin" | cut -f1)
[ "$size_kb" -gt 600000 ] || fail "test cache too small: ${size_kb} KiB"
peak() { /usr/bin/time -f %M -o "$WORK/rss" "$@" > /dev/null 2>&1 || { cat "$WORK/rss"; fail "'$*' failed"; }; tail -1 "$WORK/rss"; }
# The bound: what the same command needs on a 40-image cache (buffers, decoder, libraries)
# plus the 256 MiB window plus 64 MiB of slack for in-flight pages; independent of cache size.
check() {  # check [--pixels] WHAT CMD...: peak RSS on the big cache within the bound
  # --pixels: the command holds a batch of decoded whole images (bench -p decode, as the Loader
  # does: one block per batch), which can outweigh the compressed cache itself; the bound is
  # still the same command on the small cache (whole batches there too) plus the window.
  local pixels=0; [ "$1" = --pixels ] && { pixels=1; shift; }
  local what=$1; shift
  local base; base=$(peak "$@" "$small")
  local got; got=$(peak "$@" "$cache")
  local limit=$((base + (256 + 64) * 1024))
  echo "$what: peak RSS ${got} KiB on a ${size_kb} KiB cache (${base} KiB on 40 images; bound ${limit} KiB)"
  [ "$got" -lt "$limit" ] || fail "$what: peak RSS ${got} KiB >= ${limit} KiB"
  [ "$pixels" = 1 ] || [ "$got" -lt $((size_kb * 2 / 3)) ] || fail "$what: peak RSS ${got} KiB grows with the cache (${size_kb} KiB)"
}
check verify "$SLIP" verify -j 2
check --pixels "bench decode" "$SLIP" bench -p decode -j 2 -e 1 -b 4 --no-limit  # -b 4: the small cache holds 4 images
v=ok b=ok
pass "verify and bench RSS bounded independently of the cache size"
