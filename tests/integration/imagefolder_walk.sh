#!/usr/bin/env bash
# The ImageFolder walk and read-ahead:
#  - symbolic links back to an ancestor or to the same directory are walked once: no
#    exponential growth, no duplicated images, one warning per loop, a bounded run;
#  - the output is byte-identical whatever --io-depth and -j.
# (Reading through a slow file system: imagefolder_slowfs.sh.)
source "$(dirname "$0")/common.bash"
export SOURCE_DATE_EPOCH=1700000000
img=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1p)

# Loops inside a class: two links to ".", one from a sub-directory to its parent, one by name.
r=$WORK/loops && mkdir -p "$r/cls/sub" "$r/other"
cp "$img" "$r/cls/a.jpg" && cp "$img" "$r/cls/sub/b.jpg" && cp "$img" "$r/other/c.jpg"
ln -s . "$r/cls/self1" && ln -s . "$r/cls/self2" && ln -s .. "$r/cls/sub/up" && ln -s ../other "$r/other/me"
expect_status 0 timeout 300 "$SLIP" convert "$r" -o "$WORK/o1" --json
$PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['written'] == 3, d" "$WORK/out" || fail "loops: wrong sample count"
[ "$(grep -c 'already walked' "$WORK/err")" -eq 4 ] || { cat "$WORK/err"; fail "loops: want 4 warnings"; }
pass "symlink loops walked once: 3 images, 4 warnings"

# Byte-identical output for every depth and thread count.
mkdir -p "$WORK/src" && for c in $(ls "$CORPUS" | LC_ALL=C sort | first_lines 2); do ln -s "$CORPUS/$c" "$WORK/src/$c"; done
ref=""
for opts in "--io-depth 1 -j 1" "--io-depth 7 -j 2" "--io-depth 64 -j 2"; do
  dir=$WORK/id-${opts// /}
  cache=$("$SLIP" convert "$WORK/src" -o "$dir" -q $opts)
  sum=$(cd "$cache" && cat $(ls | LC_ALL=C sort) | sha256sum)
  [ -z "$ref" ] && ref=$sum
  [ "$sum" = "$ref" ] || fail "output differs with $opts"
done
pass "byte-identical caches for --io-depth 1/7/64 and -j 1/2"

