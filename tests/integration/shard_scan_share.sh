#!/usr/bin/env bash
# The tasks of a job array share one ImageFolder scan (docs/SLURM.md "What a task costs"): the
# first task lists and fingerprints the tree and saves the scan beside the caches; later tasks
# reuse it while no directory changed, so all parts agree on one listing and one content id and
# a task does not stat every image again. A changed directory, a damaged scan or a finished
# merge means a fresh scan. An image rewritten in place after the scan (its directory's mtime
# unchanged) is refused by the task that reads it (exit 3, naming it), never merged.
source "$(dirname "$0")/common.bash"
# The manifests record a creation time: pinned, so the merged and single-process caches compare
# byte for byte (unpinned, runs that straddle a second differed in manifest.json.xxh3).
export SOURCE_DATE_EPOCH=1700000000
r=$WORK/tree
# Three classes of four images (the corpus's first three classes, named as below).
names=(n01440764 n02102040 n02979186) i=0
for c in $(ls "$CORPUS" | LC_ALL=C sort | first_lines 3); do
  mkdir -p "$r/${names[i]}/sub"
  find "$CORPUS/$c" -type f | LC_ALL=C sort | sed -n 1,4p | xargs -I{} cp {} "$r/${names[i]}/"
  i=$((i + 1))
done
# Names with a tab, a newline and a backslash: the saved scan must keep them exact.
f=$(find "$r/n01440764" -maxdepth 1 -type f | LC_ALL=C sort | sed -n 1p)
cp "$f" "$r/n01440764/sub/tab	name.JPEG"
cp "$f" "$r/n01440764/sub/new
line.jpg"
cp "$f" "$r/n02102040/back\\slash.jpeg"
out=$WORK/o

"$SLIP" convert "$r" -o "$out" --shard 0/3 -q > "$WORK/p0"
scans=$(find "$out" -maxdepth 1 -name '.tree-*.scan' | wc -l)
[ "$scans" = 1 ] || fail "the first task saved $scans scans"
workdir=$(dirname "$(cat "$WORK/p0")")
# Touching an image changes the stat fingerprint but not its directory's mtime: a task that
# scanned again would compute another content id and write into another work directory. (The
# images of the last class: task 1 does not read them, it would refuse them as changed.)
touch -d '2002-02-02' "$r/n02979186/"*.JPEG
"$SLIP" convert "$r" -o "$out" --shard 1/3 -v > "$WORK/p1" 2> "$WORK/err1"
grep -q "reused the scan of" "$WORK/err1" || { cat "$WORK/err1"; fail "task 1 did not reuse the saved scan"; }
[ "$(dirname "$(cat "$WORK/p1")")" = "$workdir" ] || fail "task 1 wrote into $(cat "$WORK/p1"), not $workdir"
pass "later tasks reuse the saved scan (one listing, one content id for every part)"

# A damaged scan is ignored (checksum), never trusted.
scan=$(find "$out" -maxdepth 1 -name '.tree-*.scan')
sed -i '0,/^e\t0\t/s//e\t2\t/' "$scan"
grep -q "$(printf '^e\t2\t')" "$scan" || fail "the test did not damage the scan"
"$SLIP" convert "$r" -o "$out" --shard 2/3 -v > "$WORK/p2" 2> "$WORK/err2"
grep -q "reused the scan of" "$WORK/err2" && fail "a damaged scan was reused"
[ "$(dirname "$(cat "$WORK/p2")")" != "$workdir" ] || fail "a fresh scan after touching images kept the old content id"
pass "a damaged scan is rescanned"

# The merged parts equal a single-process conversion of the same tree (the path field holds
# the odd names), byte for byte.
rm -rf "$out" && mkdir -p "$out"
for i in 0 1 2; do "$SLIP" convert "$r" -o "$out" --shard $i/3 -q > /dev/null & done
wait
[ "$(find "$out" -maxdepth 1 -name '.tree-*.scan' | wc -l)" = 1 ] || fail "concurrent tasks saved several scans"
merged=$("$SLIP" merge "$out"/tree-*.parts -q)
single=$("$SLIP" convert "$r" -o "$WORK/single" -q)
for file in $(cd "$single" && ls); do
  cmp -s "$single/$file" "$merged/$file" || fail "merged $file differs from the single-process cache"
done
[ -z "$(find "$out" -maxdepth 1 -name '.tree-*.scan*')" ] || fail "merge left the shared scan behind"
pass "concurrent tasks share one scan; merged parts equal the single-process cache; merge removes the scan"

# A changed directory (an image added) is a new tree: a fresh scan, another content id.
"$SLIP" convert "$r" -o "$WORK/o2" --shard 0/2 -q > "$WORK/q0"
cp "$f" "$r/n02979186/added.jpg"
"$SLIP" convert "$r" -o "$WORK/o2" --shard 1/2 -v > "$WORK/q1" 2> "$WORK/err3"
grep -q "reused the scan of" "$WORK/err3" && fail "a scan was reused after an image was added"
[ "$(dirname "$(cat "$WORK/q1")")" != "$(dirname "$(cat "$WORK/q0")")" ] || fail "an added image kept the content id"
pass "an added image means a fresh scan"

# An image of task 1 rewritten in place after task 0 saved the scan (its directory's mtime does
# not change, so the scan is reused): same size with other bytes, then another size. Task 1
# reads it and refuses it (exit 3, naming the file), rather than storing new bytes under the
# old content id for `merge` to accept.
rm -rf "$WORK/t2" "$WORK/o3" && cp -a "$r" "$WORK/t2"
"$SLIP" convert "$WORK/t2" -o "$WORK/o3" --shard 0/3 -q > /dev/null
victim=$(find "$WORK/t2/n02102040" -maxdepth 1 -name '*.JPEG' | LC_ALL=C sort | sed -n 1p)
size=$(stat -c %s "$victim")
$PY -c 'import sys; f=open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2]) // 2); b=f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0xff]))' "$victim" "$size"
[ "$(stat -c %s "$victim")" = "$size" ] || fail "the test changed the size"
expect_status 3 "$SLIP" convert "$WORK/t2" -o "$WORK/o3" --shard 1/3 -v
grep -q "reused the scan of" "$WORK/err" || { cat "$WORK/err"; fail "task 1 did not reuse the scan (the test needs it to)"; }
grep -q "$victim.*changed since the ImageFolder scan" "$WORK/err" || { cat "$WORK/err"; fail "a same-size rewrite was not named"; }
echo extra >> "$victim"
expect_status 3 "$SLIP" convert "$WORK/t2" -o "$WORK/o3" --shard 1/3 -q
grep -q "$victim.*changed since the ImageFolder scan ($size bytes" "$WORK/err" || { cat "$WORK/err"; fail "a resized image was not named"; }
pass "an image rewritten in place after the shared scan: the task reading it fails (exit 3) naming it ($(cut -c1-150 "$WORK/err"))"

# An image of task 0's slice rewritten in place after task 0 stored it (its directory's mtime
# unchanged): tasks 1 and 2 reuse the scan and never read it, so every part is intact on its
# own and a merge once gave the old bytes, which verify passes, while a single conversion now
# gives another content id. Each task records the listing it was converted from and what it
# saw when done (a stat of every image); merge refuses parts whose views differ (exit 3,
# naming the part).
rm -rf "$WORK/t3" "$WORK/o4" && cp -a "$r" "$WORK/t3"
"$SLIP" convert "$WORK/t3" -o "$WORK/o4" --shard 0/3 -q > /dev/null
victim=$(find "$WORK/t3/n01440764" -maxdepth 1 -name '*.JPEG' | LC_ALL=C sort | sed -n 1p)
size=$(stat -c %s "$victim")
$PY -c 'import sys; f=open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2]) // 2); b=f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0xff]))' "$victim" "$size"
expect_status 0 "$SLIP" convert "$WORK/t3" -o "$WORK/o4" --shard 1/3 -v
grep -q "reused the scan of" "$WORK/err" || { cat "$WORK/err"; fail "task 1 did not reuse the scan (the test needs it to)"; }
grep -q "changed during the conversion" "$WORK/err" || { cat "$WORK/err"; fail "task 1 did not warn that the source changed"; }
expect_status 0 "$SLIP" convert "$WORK/t3" -o "$WORK/o4" --shard 2/3 -q
expect_status 3 "$SLIP" merge "$WORK/o4"/t3-*.parts -o "$WORK/m4" -q
grep -q "part-00001-of-00003.*source changed during the conversion" "$WORK/err" || { cat "$WORK/err"; fail "merge did not name the part that saw the change"; }
refusal=$(cut -c1-200 "$WORK/err")
[ -z "$(find "$WORK/m4" -name '*.slipstream' 2> /dev/null)" ] || fail "a refused merge left a cache"
expect_status 0 "$SLIP" verify "$WORK/o4"/t3-*.parts/part-00000-of-00003.slipstream
pass "a file changed after an earlier task stored it: merge refuses (exit 3: $refusal)"
