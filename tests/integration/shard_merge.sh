#!/usr/bin/env bash
# convert --shard I/N + merge gives the single-process cache byte for byte (all files), for
# N = 1, 2, 3, 7 and N > samples; merge refuses missing, overlapping, foreign and corrupted
# parts; --status; a task killed halfway and rerun merges to the same bytes.
source "$(dirname "$0")/common.bash"
export SOURCE_DATE_EPOCH=1700000000   # the manifests record a creation time
SMALL=$SRC/examples/sample

single=$("$SLIP" convert "$CORPUS" -o "$WORK/single" -q)
for n in 1 2 3 7; do
  out=$WORK/n$n
  for ((i = 0; i < n; i++)); do "$SLIP" convert "$CORPUS" -o "$out" --shard "$i/$n" -q >/dev/null; done
  expect_status 0 "$SLIP" merge --status "$out"/*.parts
  merged=$("$SLIP" merge --from "$out"/*.parts -q)
  [ "$(basename "$merged")" = "$(basename "$single")" ] || fail "N=$n: merged name $(basename "$merged")"
  diff -r "$single" "$merged" >/dev/null || fail "N=$n: merged cache differs from the single-process build"
  echo "ok: N=$n merged cache byte-identical to the single-process build"
done

# LitData (sliced by sample index) and tar shards (sliced by whole shard files; N=7 over 4
# shards leaves parts empty).
LIT=$SLIP_SHARED_DIR/fixtures/litdata/imagenet_like
lit=0
have_shared "LitData parts (the LitData fixture)" && lit=1 && lit_single=$("$SLIP" convert "$LIT" -o "$WORK/lsingle" -q)
mkdir -p "$WORK/tars"
i=0
for c in "$SRC"/examples/sample/*/; do
  (cd "$c" && tar -cf "$WORK/tars/s$i.tar" $(ls | LC_ALL=C sort | sed -n 1,8p)) && i=$((i + 1))
done
tar_single=$("$SLIP" convert "$WORK"/tars/s{0..3}.tar -o "$WORK/tsingle" --on-error skip -q)
for n in 2 3 7; do
  for ((i = 0; i < n; i++)); do
    [ "$lit" = 0 ] || "$SLIP" convert "$LIT" -o "$WORK/l$n" --shard "$i/$n" -q >/dev/null
    "$SLIP" convert "$WORK"/tars/s{0..3}.tar -o "$WORK/t$n" --shard "$i/$n" --on-error skip -q >/dev/null
  done
  [ "$lit" = 0 ] || diff -r "$lit_single" "$("$SLIP" merge --from "$WORK"/l$n/*.parts -q)" >/dev/null || fail "LitData N=$n differs"
  diff -r "$tar_single" "$("$SLIP" merge --from "$WORK"/t$n/*.parts -q)" >/dev/null || fail "tar N=$n differs"
done
pass "LitData (by sample) and tar shards (by file, with skipped samples in the ledger): N=2,3,7 byte-identical"

# N larger than the number of samples: some parts are empty.
small_single=$("$SLIP" convert "$SMALL" -o "$WORK/ssingle" -q)
for ((i = 0; i < 50; i++)); do "$SLIP" convert "$SMALL" -o "$WORK/n50" --shard "$i/50" -q >/dev/null; done
merged=$("$SLIP" merge "$WORK"/n50/*.parts/part-* -q)
diff -r "$small_single" "$merged" >/dev/null || fail "N=50 > 40 samples: merged cache differs"
pass "N=50 over 40 samples (empty parts) merges byte-identical"

# SLURM array variables: --shard auto.
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 "$SLIP" convert "$SMALL" -o "$WORK/auto" --shard auto -q >/dev/null
ls "$WORK"/auto/*.parts | grep -qx "part-00001-of-00002.slipstream" || fail "--shard auto did not pick part 1 of 2"
expect_status 2 env -u SLURM_ARRAY_TASK_ID "$SLIP" convert "$SMALL" -o "$WORK/auto" --shard auto
expect_status 2 "$SLIP" convert "$SMALL" -o "$WORK/auto" --shard 3/3
pass "--shard auto from SLURM_ARRAY_TASK_*; bad slices are usage errors"

# Refusals: missing, overlapping, foreign, corrupted.
w=$(echo "$WORK"/n3/*.parts)
w=$(echo $w)
expect_status 3 "$SLIP" merge "$w/part-00000-of-00003.slipstream" "$w/part-00002-of-00003.slipstream" -o "$WORK/m1"
grep -q "missing parts 1 of 3" "$WORK/err" || { cat "$WORK/err"; fail "missing part message"; }
expect_status 3 "$SLIP" merge "$w"/part-* "$w/part-00001-of-00003.slipstream" -o "$WORK/m2"
grep -q "given twice" "$WORK/err" || { cat "$WORK/err"; fail "overlap message"; }
foreign=$(echo "$WORK"/n50/*.parts/part-00001-of-00050.slipstream)
expect_status 3 "$SLIP" merge "$w/part-00000-of-00003.slipstream" "$foreign" -o "$WORK/m3"
grep -q "another conversion" "$WORK/err" || { cat "$WORK/err"; fail "foreign message"; }
cp -r "$w" "$WORK/corrupt.parts"
$PY -c "f=open('$WORK/corrupt.parts/part-00001-of-00003.slipstream/image.bin','r+b'); f.seek(5000); b=f.read(1); f.seek(5000); f.write(bytes([b[0]^1]))"
expect_status 3 "$SLIP" merge --from "$WORK/corrupt.parts" -o "$WORK/m4"
# The payload .bin is checked payload by payload (docs/FORMAT.md#checksums): the message names
# the file, the sample and its bytes.
grep "part-00001-of-00003.slipstream/image.bin" "$WORK/err" | grep "does not match its checksum" | grep -q "bytes [0-9]*\.\.[0-9]*" ||
  { cat "$WORK/err"; fail "corrupted message"; }
# A byte appended to a part's .bin: no payload covers it, so the part is refused too.
rm -rf "$WORK/corrupt.parts"
cp -r "$w" "$WORK/corrupt.parts"
printf 'x' >> "$WORK/corrupt.parts/part-00002-of-00003.slipstream/image.bin"
$PY - "$WORK/corrupt.parts/part-00002-of-00003.slipstream" <<'PYEOF'
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
assert "image.bin" not in m["slip"]["checksums"]["files"], "a payload .bin is covered by its payload checksums"
PYEOF
expect_status 3 "$SLIP" merge --from "$WORK/corrupt.parts" -o "$WORK/m5"
grep -q "part-00002-of-00003.slipstream" "$WORK/err" || { cat "$WORK/err"; fail "appended byte not refused"; }
[ -z "$(ls -A "$WORK/m1" "$WORK/m2" "$WORK/m3" "$WORK/m4" "$WORK/m5" 2>/dev/null | grep slipstream)" ] || fail "a refused merge left a cache"
pass "merge refuses missing, overlapping, foreign and corrupted parts"

# --status: missing and abandoned parts, exit 1; a killed task rerun merges identically.
out=$WORK/kill
"$SLIP" convert "$CORPUS" -o "$out" --shard 0/2 -q >/dev/null
expect_status 1 "$SLIP" merge --status "$out"/*.parts
grep -q "^1	missing" "$WORK/out" || fail "--status does not report part 1 missing"
"$SLIP" convert "$CORPUS" -o "$out" --shard 1/2 -j 1 >/dev/null 2>&1 &
pid=$!
sleep 0.15
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
"$SLIP" merge --status "$out"/*.parts > "$WORK/status" || true
grep -qE "^1	(incomplete \(abandoned\)|missing|done)" "$WORK/status" || { cat "$WORK/status"; fail "--status after kill"; }
echo "after SIGKILL: $(grep '^1' "$WORK/status")"
"$SLIP" convert "$CORPUS" -o "$out" --shard 1/2 -q >/dev/null
again=$("$SLIP" convert "$CORPUS" -o "$out" --shard 1/2 --json)
echo "$again" | grep -q '"reused":true' || fail "rerunning a complete part is not a no-op"
expect_status 0 "$SLIP" merge --status "$out"/*.parts
merged=$("$SLIP" merge --from "$out"/*.parts -q)
diff -r "$single" "$merged" >/dev/null || fail "killed + rerun task: merged cache differs"
pass "--status, kill + rerun: identical merged cache"

# --link with one part hard-links the storage files.
merged=$("$SLIP" merge --from "$WORK"/n1/*.parts -o "$WORK/linked" --link -q)
[ "$(stat -c %h "$merged/image.bin")" -ge 2 ] || fail "--link did not hard-link"
diff -r "$single" "$merged" >/dev/null || fail "--link merge differs"
# The same checks as a copy: one flipped payload byte in the only part is refused, nothing linked.
cp -r "$WORK"/n1/*.parts "$WORK/corrupt1.parts"
part1=$(echo "$WORK"/corrupt1.parts/part-*)
$PY -c "f=open('$part1/image.bin','r+b'); f.seek(7000); b=f.read(1); f.seek(7000); f.write(bytes([b[0]^1]))"
expect_status 3 "$SLIP" merge --from "$WORK/corrupt1.parts" -o "$WORK/linked-corrupt" --link
grep "image.bin" "$WORK/err" | grep -q "does not match its checksum" || { cat "$WORK/err"; fail "--link: corrupted part not refused"; }
[ -z "$(ls -A "$WORK/linked-corrupt" 2>/dev/null | grep slipstream)" ] || fail "--link: a refused merge left a cache"
pass "--link"

# Resubmitting a missing part keeps the original numbering (the split recorded in array.json),
# as docs/SLURM.md documents: --array=1 fills part 1 of 3, --array=1,7 refuses task 7.
for i in 0 1 2; do SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3 "$SLIP" convert "$SMALL" -o "$WORK/resub" --shard auto -q >/dev/null; done
w=$(ls -d "$WORK"/resub/*.parts)
rm -rf "$w/part-00001-of-00003.slipstream"
expect_status 1 "$SLIP" merge --status "$w"
missing=$("$SLIP" merge --status "$w" | awk '$2!="done"{printf "%s%s", s, $1; s=","}' || true)
[ "$missing" = 1 ] || fail "merge --status lists '$missing' as missing"
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=1 "$SLIP" convert "$SMALL" -o "$WORK/resub" --shard auto -q >/dev/null
[ -d "$w/part-00001-of-00003.slipstream" ] && [ ! -e "$w/part-00000-of-00001.slipstream" ] || { ls "$w"; fail "resubmitted task wrote the wrong part"; }
expect_status 0 "$SLIP" merge --status "$w"
expect_status 2 env SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=2 "$SLIP" convert "$SMALL" -o "$WORK/resub" --shard auto
grep -q "outside the recorded split of 3 parts" "$WORK/err" || { cat "$WORK/err"; fail "task 7 of a 3-part split accepted"; }
diff -r "$small_single" "$("$SLIP" merge --from "$w" -q)" >/dev/null || fail "resubmitted parts merge differently"
pass "resubmitted --array=1 fills part 1 of 3 (recorded split); task 7 refused; merge byte-identical"

# docs/REMOTE.md's requeue one-liner, with stub slip/scontrol: requeues on exit 5 only.
mkdir -p "$WORK/stub"
printf '#!/bin/sh\necho requeue "$@" >> "%s/requeued"\n' "$WORK" > "$WORK/stub/scontrol"
snippet=$(grep -E '^    slip convert "\$SRC" -o "\$OUT" \|\|' "$SRC/docs/REMOTE.md" | sed 's/^    //')
[ -n "$snippet" ] || fail "docs/REMOTE.md requeue snippet not found"
for rc in 0 3 5; do
  printf '#!/bin/sh\nexit %s\n' "$rc" > "$WORK/stub/slip"; chmod +x "$WORK/stub/slip" "$WORK/stub/scontrol"
  rm -f "$WORK/requeued"
  got=0; PATH="$WORK/stub:$PATH" SLURM_JOB_ID=42 SRC=x OUT=y bash -c "$snippet" || got=$?
  [ "$got" -eq "$rc" ] || fail "requeue snippet: exit $got for slip exit $rc"
  if [ "$rc" -eq 5 ]; then [ -s "$WORK/requeued" ] || fail "exit 5 not requeued"; else [ ! -e "$WORK/requeued" ] || fail "exit $rc requeued"; fi
done
pass "docs/REMOTE.md requeue snippet: requeues on exit 5 only, keeps the exit status"

# Merging again finds the merged cache: --json reports what it holds, with "reused": true.
expect_status 0 "$SLIP" merge --from "$w" --json
$PY - "$WORK/out" <<'PY' || fail "reused merge --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["reused"] is True and d["samples"] == 40 and d["bytes"] > 0 and d["parts"] == 3, d
PY
grep -q "payloads were not read" "$WORK/err" || { cat "$WORK/err"; fail "a reused merge does not say what was checked"; }
json_get "$WORK/out" "['reuse_checked']" | grep -q "the tables' checksums" || fail "merge --json reuse_checked"
pass "a reused merge reports the cache's samples and bytes, and what was checked"

# A merged cache damaged where convert's reuse would look (a table's byte, a file cut short) is
# merged again, with a warning naming the damage, not reused (the check was sizes only).
merged=$(json_get "$WORK/out" "['path']")
for damage in 'printf "\x07" | dd of="$merged/label.npy" bs=1 seek=130 conv=notrunc status=none' 'truncate -s -10 "$merged/image.bin"'; do
  eval "$damage"
  expect_status 0 "$SLIP" merge --from "$w" --json
  [ "$(json_get "$WORK/out" "['reused']")" = False ] || fail "a damaged merged cache was reused ($damage)"
  grep -q "the cache there is damaged (.*); merging it again" "$WORK/err" || { cat "$WORK/err"; fail "no warning naming the damage ($damage)"; }
  expect_status 0 "$SLIP" verify "$merged"
done
pass "a damaged merged cache (a table's byte, a file cut short) is merged again, with a warning"

# merge --clean removes the parts (and the work directory) once the merged cache is published.
for i in 0 1; do "$SLIP" convert "$SMALL" -o "$WORK/clean" --shard "$i/2" -q >/dev/null; done
cw=$(ls -d "$WORK"/clean/*.parts)
cleaned=$("$SLIP" merge --from "$cw" --clean -q)
[ ! -e "$cw" ] || { ls -la "$cw"; fail "merge --clean left the work directory"; }
diff -r "$small_single" "$cleaned" >/dev/null || fail "merge --clean: merged cache differs"
pass "merge --clean: parts removed after the merged cache is published"

# Merged without --clean, the parts are listed as merged, not as waiting for a merge.
"$SLIP" ls "$WORK/n2" > "$WORK/ls-n2"
grep -E '\.parts ' "$WORK/ls-n2" | grep -qE ' merged +merged into .*\.slipstream' || { cat "$WORK/ls-n2"; fail "slip ls: merged parts not shown as merged"; }
! grep -q 'join with slip merge' "$WORK/ls-n2" || { cat "$WORK/ls-n2"; fail "slip ls still says to join merged parts"; }
pass "slip ls after a merge without --clean: the parts are 'merged', not 'join with slip merge'"

# The documented SLURM scripts (docs/slurm/), run as SLURM runs them, in the directory the job
# was submitted from: four array tasks (SLURM_ARRAY_* set) with a relative source, then the
# merge job. The merge finds the work directory from the same source and -o without reading the
# source (moved away first), writes the single-process cache, and --clean leaves no parts.
recipe=$WORK/recipe && mkdir -p "$recipe" && cp -a "$SMALL" "$recipe/src"
cd "$recipe"
recipe_single=$("$SLIP" convert src -o single -q)
export PATH=$(dirname "$SLIP"):$PATH
for t in 0 1 2 3; do
  SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=4 bash "$SRC/docs/slurm/convert-array.sbatch" src out >/dev/null
done
[ "$(ls -d out/*.parts/part-* | wc -l)" = 4 ] || fail "the array tasks did not write 4 parts"
mv src src-moved
recipe_merged=$(bash "$SRC/docs/slurm/merge.sbatch" src out | tail -n 1) || fail "docs/slurm/merge.sbatch failed"
diff -r "$recipe_single" "$recipe_merged" >/dev/null || fail "the recipe's merged cache differs from the single-process build"
[ -z "$(ls -d out/*.parts 2>/dev/null)" ] || fail "the recipe left the parts (--clean)"
"$SLIP" ls out --json | $PY -c '
import json, sys
c = json.load(sys.stdin)["caches"]
assert [(x["kind"], x["status"]) for x in c] == [("cache", "complete")], c' || fail "slip ls after the recipe: $("$SLIP" ls out)"
# No work directory of these sources left, or two of them: refused (usage), naming what to do.
expect_status 2 "$SLIP" merge --source src -o out
grep -q 'no work directory of a `convert --shard` of these sources' "$WORK/err" || { cat "$WORK/err"; fail "merge --source without parts"; }
mv src-moved src
for o in "" "--name other"; do "$SLIP" convert src -o two --shard 0/1 $o -q >/dev/null; done
expect_status 2 "$SLIP" merge --source src -o two
grep -q 'several work directories hold parts of these sources (other-.*\.parts, src-.*\.parts); choose one with --from' "$WORK/err" ||
  { cat "$WORK/err"; fail "merge --source with two work directories"; }
cd "$WORK"
pass "docs/slurm recipe: merge --source finds the parts without the source; --clean; slip ls shows the one cache"
