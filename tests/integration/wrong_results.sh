#!/usr/bin/env bash
# No silent wrong result with exit 0, no crash or hang on self-referencing input:
#  - an empty source or a conversion where every sample was skipped is bad input (exit 3)
#    unless --allow-empty; an empty tar and a 0-sample FFCV file agree;
#  - shard lists that include themselves (directly or through another list), nest too deep,
#    or brace patterns that expand to billions of names: one clear error, no crash.
source "$(dirname "$0")/common.bash"
# Peak-RSS bounds are checked in normal builds only (sanitizers add shadow memory).
rss_limit() { [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] && echo 99999999 || echo "$1"; }
img=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1p)

# Every sample bad + --on-error skip: exit 3, nothing written; --allow-empty writes it.
mkdir -p "$WORK/bad/a" && head -c 100 /dev/urandom > "$WORK/bad/a/1.jpg" && printf 'nope' > "$WORK/bad/a/2.jpg"
expect_status 3 "$SLIP" convert "$WORK/bad" -o "$WORK/o1" --on-error skip
grep -q "no sample left: all 2 were skipped" "$WORK/err" || { cat "$WORK/err"; fail "all-skipped not reported"; }
[ -z "$(ls -A "$WORK/o1" 2>/dev/null)" ] || fail "all-skipped conversion left files"
expect_status 0 "$SLIP" convert "$WORK/bad" -o "$WORK/o1" --on-error skip --allow-empty --json
$PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['written'] == 0 and d['skipped'] == 2, d" "$WORK/out" || fail "--allow-empty"
pass "every sample skipped: exit 3 unless --allow-empty"

# An empty tar and a 0-sample FFCV file (the fixture with its sample count and table cut) agree.
tar cf "$WORK/empty.tar" --files-from /dev/null
empties=("$WORK/empty.tar")
if have_shared "a 0-sample FFCV file (made from the FFCV fixture)"; then
$PY - "$SLIP_SHARED_DIR/fixtures/ffcv/one_sample.beton" "$WORK/zero.beton" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
table = struct.unpack_from("<Q", d, 16)[0]
struct.pack_into("<Q", d, 8, 0)
open(sys.argv[2], "wb").write(d[:table])
PY
empties+=("$WORK/zero.beton")
fi
for src in "${empties[@]}"; do
  expect_status 3 "$SLIP" convert "$src" -o "$WORK/o2"
  grep -qE "no samples" "$WORK/err" || { cat "$WORK/err"; fail "$src: empty source not reported"; }
done
if [ -e "$WORK/zero.beton" ]; then
  expect_status 0 "$SLIP" convert "$WORK/zero.beton" -o "$WORK/o2" --allow-empty
  expect_status 0 "$SLIP" verify "$(tail -1 "$WORK/out")"
fi
pass "empty tar and 0-sample FFCV: both exit 3; --allow-empty writes the FFCV's empty cache"

# Shard lists: self-inclusion, a cycle through two lists, deep nesting, explosive braces.
cd "$WORK"
echo "@self.txt" > self.txt
echo "@b.txt" > a.txt && echo "@a.txt" > b.txt
for i in $(seq 0 20); do echo "@deep$((i + 1)).txt" > "deep$i.txt"; done
for args in "@self.txt" "@a.txt" "@deep0.txt"; do
  expect_status 3 timeout 300 "$SLIP" convert "$args" -o "$WORK/o3"
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$args: not one error line"; }
  grep -qE "includes itself|nested deeper" "$WORK/err" || { cat "$WORK/err"; fail "$args: cause not named"; }
done
expect_status 2 timeout 300 "$SLIP" convert 'x-{0..99999}{0..99999}.tar' -o "$WORK/o3"
grep -q "expands to more than" "$WORK/err" || { cat "$WORK/err"; fail "explosive brace pattern"; }
pass "shard lists: cycles, deep nesting and explosive patterns refused without crashing"

# SLURM variables that are not task numbers are usage errors, never task 0.
for env in "SLURM_ARRAY_TASK_ID=abc SLURM_ARRAY_TASK_COUNT=3" "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3x" \
           "SLURM_ARRAY_TASK_ID=-1 SLURM_ARRAY_TASK_COUNT=3" "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=z"; do
  expect_status 2 env $env "$SLIP" convert "$WORK/bad" --shard auto -o "$WORK/o4"
  grep -q "is not a task number" "$WORK/err" || { cat "$WORK/err"; fail "$env accepted"; }
done
pass "SLURM variables that are not numbers: usage errors"

# merge: part metadata is checked against what is on disk before anything is sized by it: a
# work directory naming part 0 of 10^15 is refused at once, not enumerated.
cache_parts=$WORK/parts && mkdir -p "$WORK/good/a" && cp "$img" "$WORK/good/a/1.jpg" && cp "$img" "$WORK/good/a/2.jpg"
"$SLIP" convert "$WORK/good" --shard 0/2 -o "$cache_parts" -q >/dev/null
workdir=$(ls -d "$cache_parts"/*.parts)
mkdir "$workdir/part-00000-of-1000000000000000.slipstream"
expect_status 3 timeout 300 "$SLIP" merge --status "$workdir"
grep -q "names an impossible part" "$WORK/err" || { cat "$WORK/err"; fail "forged part count not refused"; }
pass "merge --status: a forged part count is refused at once"

# FFCV: a sample count the file cannot hold is refused before anything is sized by it, also for
# --raw-field files, whose row size is deduced from that count (10^12 samples: rows of 0 bytes).
if have_shared "forged FFCV sample counts (made from the FFCV fixture)"; then
$PY - "$SLIP_SHARED_DIR/fixtures/ffcv/custom_type.beton" "$WORK/huge-count.beton" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<Q", d, 8, 10**12)
open(sys.argv[2], "wb").write(d)
PY
/usr/bin/time -f %M -o "$WORK/rss" timeout 300 "$SLIP" convert "$WORK/huge-count.beton" --raw-field custom -o "$WORK/o5" >"$WORK/out" 2>"$WORK/err" && fail "10^12 samples accepted"
grep -qE "cannot be checked|does not fit|cannot deduce|do not add up|works only for files without payloads" "$WORK/err" || { cat "$WORK/err"; fail "forged FFCV count: $(cat "$WORK/err")"; }
[ "$(tail -1 "$WORK/rss")" -lt "$(rss_limit 200000)" ] || fail "forged FFCV count: peak RSS $(tail -1 "$WORK/rss") KiB"
# The same with rows of 0 bytes: the allocation table moved to where the metadata starts.
$PY - "$SLIP_SHARED_DIR/fixtures/ffcv/custom_type.beton" "$WORK/zero-rows.beton" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
fields = struct.unpack_from("<H", d, 2)[0]
meta = 24 + 1041 * fields
struct.pack_into("<Q", d, 8, 10**12)
struct.pack_into("<Q", d, 16, meta)
open(sys.argv[2], "wb").write(d[:meta])
PY
expect_status 3 timeout 300 "$SLIP" convert "$WORK/zero-rows.beton" --raw-field custom -o "$WORK/o5"
grep -qE "cannot be checked|do not add up" "$WORK/err" || { cat "$WORK/err"; fail "0-byte rows with 10^12 samples: $(cat "$WORK/err")"; }
pass "FFCV: a forged sample count is refused before any allocation"
fi
