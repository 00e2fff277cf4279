#!/usr/bin/env bash
# convert's workers write the payloads themselves, each sample into the range of the .bin the
# ordering thread placed it at (through a shared mapping of the file, or pwrite): the cache is
# the same, byte for byte, content id included, for every -j and window size. Samples built here
# share pages (1-byte payloads, 0-byte ones), straddle window ends, and one is larger than a
# whole window (--max-in-flight 1MiB: windows of 256 KiB); a disk that fills up mid-window is an
# I/O error naming the file (exit 4), never a SIGBUS from the mapping.
source "$(dirname "$0")/common.bash"
export SOURCE_DATE_EPOCH=1700000000
export SLIP_PARALLEL_WRITES=1  # the mapped writers are opt-in (from -j 8 up)
have_shared "the 800-image corpus (examples/sample's 40 images are converted instead)" || true

same_files() {  # same_files A B WHAT: the same file names, each file equal byte for byte
  (cd "$1" && find . -type f | LC_ALL=C sort) > "$WORK/names.a"
  (cd "$2" && find . -type f | LC_ALL=C sort) > "$WORK/names.b"
  cmp -s "$WORK/names.a" "$WORK/names.b" || fail "$3: different files ($(diff "$WORK/names.a" "$WORK/names.b" | head -3))"
  [ "$(wc -l < "$WORK/names.a")" -gt 3 ] || fail "$3: only $(wc -l < "$WORK/names.a") files in $1"
  while read -r f; do cmp -s "$1/$f" "$2/$f" || fail "$3: $f differs"; done < "$WORK/names.a"
}
# check_all WHAT ARGS...: -j 1 is the reference; -j 2, 3, 8 (small windows too) must equal it.
check_all() {
  local what=$1; shift
  "$SLIP" convert "$@" -o "$WORK/j1" -j 1 --json > "$WORK/j1.json"
  local ref id
  ref=$(json_get "$WORK/j1.json" '["path"]')
  id=$(json_get "$WORK/j1.json" '["content_id"]')
  "$SLIP" verify "$ref" -q || fail "$what: -j 1 cache does not verify"
  for opts in "-j 2" "-j 3" "-j 8" "-j 8 --max-in-flight 1MiB" "-j 3 --max-in-flight 1MiB --io-depth 1"; do
    local dir=$WORK/o$RANDOM
    # shellcheck disable=SC2086
    "$SLIP" convert "$@" -o "$dir" $opts --json > "$WORK/jn.json"
    [ "$(json_get "$WORK/jn.json" '["content_id"]')" = "$id" ] || fail "$what $opts: content id differs from -j 1's"
    same_files "$ref" "$(json_get "$WORK/jn.json" '["path"]')" "$what $opts"
  done
  pass "$what: byte-identical caches and content ids for -j 1, 2, 3, 8 and 256 KiB windows"
}

check_all "ImageFolder ($(basename "$CORPUS"))" "$CORPUS"

# WebDataset shards by GNU tar: images, and a bytes field of hostile sizes (0, 1, odd, 3 MiB).
stage=$WORK/stage && mkdir -p "$stage"
$PY - "$CORPUS" "$stage" <<'PY'
import os, random, sys
root, stage = sys.argv[1:3]
images = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)[:120]
rng = random.Random(7)
sizes = [0, 1, 1, 4095, 4096, 4097, 3 << 20] + [rng.choice([1, 2, 3, rng.randrange(9000)]) for _ in range(len(images) - 7)]
for i, (img, size) in enumerate(zip(images, sizes)):
    key = f"k{i:05d}"
    open(os.path.join(stage, key + ".jpg"), "wb").write(open(img, "rb").read())
    open(os.path.join(stage, key + ".dat"), "wb").write(rng.randbytes(size))
    open(os.path.join(stage, key + ".cls"), "w").write(f"{i % 7}\n")
PY
# Three shards of whole samples (a sample's members never straddle two shards), in key order.
$PY - "$stage" "$WORK" <<'PY'
import os, sys
stage, work = sys.argv[1:3]
keys = sorted({f.split(".")[0] for f in os.listdir(stage)})
per = -(-len(keys) // 3)
for p in range(3):
    with open(os.path.join(work, f"part-{p}"), "w") as out:
        for k in keys[p * per:(p + 1) * per]:
            out.writelines(f"{k}.{ext}\n" for ext in ("cls", "dat", "jpg"))
PY
for p in 0 1 2; do (cd "$stage" && tar --format=gnu -cf "$WORK/s$p.tar" -T "$WORK/part-$p"); done
check_all "tar shards (image + bytes of 0 B to 3 MiB)" "$WORK"/s{0..2}.tar --non-jpeg keep
# The bytes field holds the members' bytes, in order (not only the same as -j 1: right).
$PY - "$(json_get "$WORK/j1.json" '["path"]')" "$stage" <<'PY' || fail "tar shards: dat.bin is not the members in order"
import os, sys, numpy as np
cache, stage = sys.argv[1:3]
meta = np.load(os.path.join(cache, "dat.meta.npy"))
data = open(os.path.join(cache, "dat.bin"), "rb").read()
keys = sorted(f[:-4] for f in os.listdir(stage) if f.endswith(".dat"))
assert len(meta) == len(keys), (len(meta), len(keys))
for m, k in zip(meta, keys):
    want = open(os.path.join(stage, k + ".dat"), "rb").read()
    assert data[int(m[0]):int(m[0]) + int(m[1])] == want, k
assert int(meta[-1][0]) + int(meta[-1][1]) == len(data)
PY
pass "tar shards: the bytes field is the members' bytes in shard order"

# A disk that fills up while the workers write through the mapping: exit 4 naming the file.
mkdir -p "$WORK/small"
if [ "$(basename "$SLIP")" = slip-emulated ]; then
  # qemu-user accepts MADV_POPULATE_WRITE without doing it, so a full disk is found by the page
  # fault (SIGBUS), as without that call; a real arm64 kernel (5.14+) populates as x86-64 does.
  echo "skip: the full-disk case under qemu-user (madvise is not emulated)"
elif mount -t tmpfs -o size=2m tmpfs "$WORK/small" 2>/dev/null; then
  status=0
  "$SLIP" convert "$WORK"/s{0..2}.tar -o "$WORK/small" --non-jpeg keep -j 8 >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" -eq 4 ] && grep -q "No space left on device" "$WORK/err" && grep -q "dat.bin\|image.bin" "$WORK/err" ||
    { cat "$WORK/err"; umount "$WORK/small"; fail "disk full mid-window: exit $status, want 4 naming the file"; }
  leftovers=$(ls -A "$WORK/small"); umount "$WORK/small"
  [ -z "$leftovers" ] || fail "disk full left $leftovers"
  pass "disk full while writing in parallel: exit 4, the file and 'No space left on device', nothing left"
else
  echo "skip: cannot mount a tmpfs here for the full-disk case"
fi

# The switch is ConvertOptions::parallel_writes, which the command fills from --parallel-writes or
# SLIP_PARALLEL_WRITES=1 (the library never reads the variable); another value is a usage error
# naming the variable. `-v` says when the workers wrote the payloads.
unset SLIP_PARALLEL_WRITES
"$SLIP" -v convert "$CORPUS" -o "$WORK/pw-flag" -j 8 --parallel-writes >/dev/null 2>"$WORK/pw.err"
grep -q 'parallel writes' "$WORK/pw.err" || { cat "$WORK/pw.err"; fail "--parallel-writes -j 8: the workers did not write"; }
SLIP_PARALLEL_WRITES=1 "$SLIP" -v convert "$CORPUS" -o "$WORK/pw-env" -j 8 >/dev/null 2>"$WORK/pw.err"
grep -q 'parallel writes' "$WORK/pw.err" || fail "SLIP_PARALLEL_WRITES=1 -j 8: the workers did not write"
"$SLIP" -v convert "$CORPUS" -o "$WORK/pw-off" -j 8 >/dev/null 2>"$WORK/pw.err"
! grep -q 'parallel writes' "$WORK/pw.err" || fail "without the flag or the variable the workers wrote"
SLIP_PARALLEL_WRITES=yes expect_status 2 "$SLIP" convert "$CORPUS" -o "$WORK/pw-bad"
grep -q 'SLIP_PARALLEL_WRITES="yes" must be 0 or 1' "$WORK/err" || { cat "$WORK/err"; fail "a bad SLIP_PARALLEL_WRITES is not named"; }
pass "--parallel-writes and SLIP_PARALLEL_WRITES=1 turn the workers' writes on, nothing else does, a bad value is exit 2"
