#!/usr/bin/env bash
# Through a slow file system (tests/servers/slowfs: a FUSE pass-through adding 1 ms to every
# request, as NFS or Lustre do), reading an ImageFolder is not serial: --io-depth 16 beats
# --io-depth 1 by >= 4x on 160 files, and both give the same cache. Skipped (exit 77, with the
# reason) where slowfs was not built or FUSE cannot mount.
source "$(dirname "$0")/common.bash"
# Through the slow file system.
slowfs=${SLIP_BUILD_DIR:-}/tests/slowfs
if [ ! -x "$slowfs" ]; then echo "skip: slowfs not built (libfuse3-dev missing): the io-depth regression was not run"; exit 77; fi
if [ ! -e /dev/fuse ]; then echo "skip: no /dev/fuse: the io-depth regression was not run"; exit 77; fi
need_shared "the io-depth regression times 160 corpus files (examples/sample has too few)"
mnt=$WORK/mnt && mkdir -p "$mnt"
mkdir -p "$WORK/src-real" && for c in n01440764 n02102040; do cp -r "$CORPUS/$c" "$WORK/src-real/"; done
if ! "$slowfs" "$WORK/src-real" "$mnt" --delay-us 1000; then echo "skip: cannot mount a FUSE file system here: the io-depth regression was not run"; exit 77; fi
trap 'fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null; rm -rf "$WORK"' EXIT
for i in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
files=$(find "$WORK/src-real" -type f | wc -l)
t() { local s e; s=$(date +%s.%N); "$SLIP" convert "$mnt" -o "$WORK/$1" -q --non-jpeg keep --io-depth "$2" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
serial=$(t slow1 1)
parallel=$(t slow16 16)
ratio=$(echo "$serial / $parallel" | bc -l)
printf 'slow FS (1 ms/request), %d files: --io-depth 1 %.2f s, --io-depth 16 %.2f s: %.1fx\n' "$files" "$serial" "$parallel" "$ratio"
echo "$ratio >= 4" | bc -l | grep -q 1 || fail "--io-depth 16 is only ${ratio}x --io-depth 1 through the slow file system"
cmp <(cd "$WORK/slow1"/*/ && cat image.bin) <(cd "$WORK/slow16"/*/ && cat image.bin) || fail "slow FS caches differ"
pass "reading is not serial: $(printf %.1f "$ratio")x with 16 requests in flight"
