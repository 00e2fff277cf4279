#!/usr/bin/env bash
# The tasks of a job array share one ImageFolder scan (docs/SLURM.md "What a task costs"): the
# first task lists and fingerprints the tree and saves the scan beside the caches; later tasks
# reuse it while no directory changed, so all parts agree on one listing and one content id and
# a task does not stat every image again. A changed directory, a damaged scan or a finished
# merge means a fresh scan.
source "$(dirname "$0")/common.bash"
# The manifests record a creation time: pinned, so the merged and single-process caches compare
# byte for byte (unpinned, runs that straddle a second differed in manifest.json.xxh3).
export SOURCE_DATE_EPOCH=1700000000
r=$WORK/tree
# Three classes of four images (the corpus's first three classes, named as below).
names=(n01440764 n02102040 n02979186) i=0
for c in $(ls "$CORPUS" | LC_ALL=C sort | head -3); do
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
# scanned again would compute another content id and write into another work directory.
touch -d '2002-02-02' "$r/n02102040/"*.JPEG
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
