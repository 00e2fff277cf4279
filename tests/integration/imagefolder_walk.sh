#!/usr/bin/env bash
# The ImageFolder walk and read-ahead:
#  - symbolic links back to an ancestor or to the same directory are walked once: no
#    exponential growth, no duplicated images, one warning per loop, a bounded run;
#  - the output is byte-identical whatever --io-depth and -j;
#  - through a slow file system (tests/servers/slowfs: 1 ms per request, as NFS), reading is
#    not serial: --io-depth 16 beats --io-depth 1 by >= 4x on a few hundred files.
source "$(dirname "$0")/common.bash"
export SOURCE_DATE_EPOCH=1700000000
img=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1p)

# Loops inside a class: two links to ".", one from a sub-directory to its parent, one by name.
r=$WORK/loops && mkdir -p "$r/cls/sub" "$r/other"
cp "$img" "$r/cls/a.jpg" && cp "$img" "$r/cls/sub/b.jpg" && cp "$img" "$r/other/c.jpg"
ln -s . "$r/cls/self1" && ln -s . "$r/cls/self2" && ln -s .. "$r/cls/sub/up" && ln -s ../other "$r/other/me"
expect_status 0 timeout 30 "$SLIP" convert "$r" -o "$WORK/o1" --json
$PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['written'] == 3, d" "$WORK/out" || fail "loops: wrong sample count"
[ "$(grep -c 'already walked' "$WORK/err")" -eq 4 ] || { cat "$WORK/err"; fail "loops: want 4 warnings"; }
pass "symlink loops walked once: 3 images, 4 warnings"

# Byte-identical output for every depth and thread count.
mkdir -p "$WORK/src" && for c in n01440764 n02102040; do ln -s "$CORPUS/$c" "$WORK/src/$c"; done
ref=""
for opts in "--io-depth 1 -j 1" "--io-depth 7 -j 2" "--io-depth 64 -j 2"; do
  dir=$WORK/id-${opts// /}
  cache=$("$SLIP" convert "$WORK/src" -o "$dir" -q $opts)
  sum=$(cd "$cache" && cat $(ls | LC_ALL=C sort) | sha256sum)
  [ -z "$ref" ] && ref=$sum
  [ "$sum" = "$ref" ] || fail "output differs with $opts"
done
pass "byte-identical caches for --io-depth 1/7/64 and -j 1/2"

# Through the slow file system.
slowfs=${SLIP_BUILD_DIR:-}/tests/slowfs
if [ ! -x "$slowfs" ]; then echo "skip: slowfs not built (libfuse3-dev missing): the io-depth regression was not run"; exit 0; fi
if [ ! -e /dev/fuse ]; then echo "skip: no /dev/fuse: the io-depth regression was not run"; exit 0; fi
mnt=$WORK/mnt && mkdir -p "$mnt"
mkdir -p "$WORK/src-real" && for c in n01440764 n02102040; do cp -r "$CORPUS/$c" "$WORK/src-real/"; done
if ! "$slowfs" "$WORK/src-real" "$mnt" --delay-us 1000; then echo "skip: cannot mount a FUSE file system here: the io-depth regression was not run"; exit 0; fi
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
