#!/usr/bin/env bash
# A SLURM conversion's parts read as one dataset without merge (issue 44): info and verify
# report each part then the total, order covers every sample once across ranks and equals the
# merged cache's ids; a list file with content ids refuses a part replaced since; the merged
# cache beside its parts, and a missing part, are refused naming them.
source "$(dirname "$0")/common.bash"
out=$WORK/out-dir
for i in 0 1 2 3; do "$SLIP" convert "$SRC/examples/sample" -o "$out" --shard $i/4 --no-progress -q > /dev/null; done
parts=$(ls -d "$out"/*.parts)

expect_status 0 "$SLIP" info "$out"
grep -q '^dataset:  4 caches, fields agree' "$WORK/out" && grep -q '^total:    40 samples' "$WORK/out" || { cat "$WORK/out"; fail "info total"; }
expect_status 0 "$SLIP" verify "$out"
[ "$(grep -c '^OK .*part-0000[0-3]-of-00004' "$WORK/out")" -eq 4 ] && grep -q '^OK dataset: 4 caches, 40 samples' "$WORK/out" || { cat "$WORK/out"; fail "verify"; }
pass "info/verify: 4 parts and the total"

# 3 ranks interleave over the epoch: 14 each, every sample at least once, 2 padded repeats.
for r in 0 1 2; do "$SLIP" order "$out" --seed 3 --epoch 1 --rank $r --world-size 3 > "$WORK/rank$r"; done
[ "$(cat "$WORK"/rank? | wc -l)" -eq 42 ] && [ "$(sort -un "$WORK"/rank? | wc -l)" -eq 40 ] || fail "3 ranks do not cover the 40 samples"
"$SLIP" order "$out" --seed 3 --epoch 1 > "$WORK/all"
paste -d'\n' "$WORK/rank0" "$WORK/rank1" "$WORK/rank2" | head -40 | cmp - "$WORK/all" || fail "ranks do not interleave over the 1-rank order"
pass "order: ranks interleave over one world-size-independent order"

# A list with content ids (from info --json); a part replaced since is refused, naming it.
"$SLIP" info "$out" --json | tail -1 | $PY -c '
import json, sys
d = json.load(sys.stdin)
for c in d["caches"]: print(c["path"], c["content_id"])' > "$WORK/list.txt"
expect_status 0 "$SLIP" order "$WORK/list.txt" --seed 3 --epoch 1
cmp "$WORK/out" "$WORK/all" || fail "the list's order differs from the directory's"
mv "$parts/part-00001-of-00004.slipstream" "$WORK/p1"
cp -r "$parts/part-00002-of-00004.slipstream" "$parts/part-00001-of-00004.slipstream"
expect_status 3 "$SLIP" order "$WORK/list.txt"
grep -q "part-00001-of-00004.slipstream: content id .* differs from .*: the cache changed since the list was written" "$WORK/err" || fail "changed part: $(cat "$WORK/err")"
expect_status 1 "$SLIP" verify "$WORK/list.txt"
grep -q "changed since the list was written" "$WORK/err" || fail "verify of a changed list: $(cat "$WORK/err")"
pass "a part replaced since the list was written is refused"

# A missing part; the merged cache beside its parts.
rm -rf "$parts/part-00001-of-00004.slipstream"
expect_status 3 "$SLIP" order "$out"
grep -q "part-00001-of-00004 is missing" "$WORK/err" || fail "missing part: $(cat "$WORK/err")"
mv "$WORK/p1" "$parts/part-00001-of-00004.slipstream"
"$SLIP" merge --source "$SRC/examples/sample" -o "$out" -q > "$WORK/merged"
expect_status 3 "$SLIP" order "$out"
grep -q "holds both the merged cache" "$WORK/err" || fail "merged beside parts: $(cat "$WORK/err")"
# The parts and the merged cache give the same order of the same samples.
expect_status 0 "$SLIP" order "$(cat "$WORK/merged")" --seed 3 --epoch 1
cmp "$WORK/out" "$WORK/all" || fail "the parts' order differs from the merged cache's"
pass "missing part and merged-beside-parts refused; parts order = merged order"

# Weights: a usage error names what is wrong.
expect_status 2 "$SLIP" order "$parts" --mix proportion:1,2
grep -q "2 values for 4 caches" "$WORK/err" || fail "--mix count: $(cat "$WORK/err")"
expect_status 2 "$SLIP" order "$parts" --mix repeat:1,1,1,1 --epoch-size 5
grep -q "epoch_size applies to proportions" "$WORK/err" || fail "--epoch-size with repeat: $(cat "$WORK/err")"
expect_status 0 "$SLIP" order "$parts" --mix choose:0,0,0,25 --seed 1
[ "$(wc -l < "$WORK/out")" -eq 25 ] && [ "$(sort -n "$WORK/out" | head -1)" -ge 30 ] || fail "choose from part 3 only"
pass "--mix"
