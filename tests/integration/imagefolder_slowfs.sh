#!/usr/bin/env bash
# Through a slow file system (tests/servers/slowfs: a FUSE pass-through adding 5 ms here to every
# request, as NFS or Lustre do), reading an ImageFolder is not serial: slowfs counts the requests
# in flight at once, and --io-depth 16 keeps several in flight where --io-depth 1 reads one file
# at a time; both give the same cache. A count, not a time (the wall-clock speed-up:
# bench/convert_figures.sh (b)). Skipped (exit 77, with the reason) where slowfs was not built or
# FUSE cannot mount.
source "$(dirname "$0")/common.bash"
slowfs=${SLIP_BUILD_DIR:-}/tests/slowfs
if [ ! -x "$slowfs" ]; then echo "skip: slowfs not built (libfuse3-dev missing): the io-depth regression was not run"; exit 77; fi
if [ ! -e /dev/fuse ]; then echo "skip: no /dev/fuse: the io-depth regression was not run"; exit 77; fi
src=$WORK/src-real && mkdir -p "$src"
if have_shared "the io-depth regression on 160 corpus files (examples/sample's 40 here)"; then
  for c in n01440764 n02102040; do cp -r "$CORPUS/$c" "$src/"; done
else
  cp -r "$CORPUS"/. "$src/"
fi
mounted=()
trap 'for m in "${mounted[@]}"; do fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done; rm -rf "$WORK"' EXIT
# in_flight DEPTH: converts through a fresh mount with --io-depth DEPTH; $WORK/stats<DEPTH> then
# holds the most requests slowfs saw in flight at once. (Not in $(...): the mount is recorded
# for the EXIT trap here.)
in_flight() {
  local mnt=$WORK/mnt$1
  mkdir -p "$mnt"
  if ! "$slowfs" "$src" "$mnt" --delay-us 5000 --stats "$WORK/stats$1"; then echo "skip: cannot mount a FUSE file system here: the io-depth regression was not run"; exit 77; fi
  mounted+=("$mnt")
  for _ in $(seq 600); do mountpoint -q "$mnt" && break; sleep 0.1; done  # a hang guard, not a bound
  "$SLIP" convert "$mnt" -o "$WORK/slow$1" -q --non-jpeg keep --io-depth "$1" -j 1 >/dev/null || fail "convert --io-depth $1 through slowfs failed"
}
in_flight 1
in_flight 16
serial=$(awk '/^max_in_flight/ {print $2}' "$WORK/stats1")
parallel=$(awk '/^max_in_flight/ {print $2}' "$WORK/stats16")
echo "slow FS, $(find "$src" -type f | wc -l) files: at most $serial request(s) in flight with --io-depth 1, $parallel with --io-depth 16"
[ "$parallel" -ge 4 ] || fail "--io-depth 16 never had four requests in flight through the slow file system (reading is serial)"
[ "$parallel" -gt "$serial" ] || fail "--io-depth 16 ($parallel in flight) overlaps no more than --io-depth 1 ($serial)"
cmp <(cd "$WORK/slow1"/*/ && cat image.bin) <(cd "$WORK/slow16"/*/ && cat image.bin) || fail "slow FS caches differ"
pass "reading is not serial: $parallel requests in flight with --io-depth 16, $serial with --io-depth 1"
