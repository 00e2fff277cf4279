#!/usr/bin/env bash
# verify reads every *_index.npy pickle (format/pickle_index.hpp) within bounds set by the cache,
# not by the file: a 64 MiB pickle of NEWTRUE opcodes took 8.7 GB and 11 s before it was refused;
# slip's own `index --force` output for 3 M distinct values failed ("too many objects") after
# 9.3 GB. Now: objects are reference-counted values pointing into the mapped file, only memo
# entries some GET reads are kept, and everything held at once counts against 2 per sample plus a
# constant; the ids may not outnumber the samples. Bombs are refused at once in flat memory, and
# an index of SLIP_PICKLE_KEYS (default 300,000) distinct values, written by slip and by numpy
# (protocol 3, memoized), verifies within a bound that scales with the keys.
source "$(dirname "$0")/common.bash"
command -v /usr/bin/time >/dev/null || { echo "skip: GNU time (/usr/bin/time) not installed"; exit 77; }
[ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || { echo "skip: peak RSS is not comparable under a sanitizer"; exit 77; }
keys=${SLIP_PICKLE_KEYS:-300000}

measure() {  # measure CMD...: runs CMD, sets rc, rss (KiB), secs; output in $WORK/out, $WORK/err
  rc=0
  /usr/bin/time -f '%M %e' -o "$WORK/time" "$@" > "$WORK/out" 2> "$WORK/err" || rc=$?
  read -r rss secs < <(tail -1 "$WORK/time")
}

# A cache of 40 samples; its clean verify is the baseline (libraries, buffers).
expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/c"
cache=$(tail -1 "$WORK/out")
measure "$SLIP" verify "$cache"
[ "$rc" -eq 0 ] || { cat "$WORK/err"; fail "clean cache does not verify"; }
base=$rss

bomb() {  # bomb NAME PYTHON-EXPR(bytes of the pickle after PROTO 3)
  $PY - "$cache/$1_index.npy" "$2" <<'PY'
import sys, numpy as np
with open(sys.argv[1], "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "|O", "fortran_order": False, "shape": ()})
    f.write(b"\x80\x03" + eval(sys.argv[2]) + b".")
PY
}
refused_fast() {  # refused_fast WHAT WANT: verify fails (exit 1) with WANT, flat memory, at once
  local what=$1 want=$2 size
  size=$(( $(stat -c %s "$cache/$what"_index.npy) / 1024 ))
  measure "$SLIP" verify "$cache"
  [ "$rc" -eq 1 ] || { cat "$WORK/err" "$WORK/out"; fail "$what: verify exited $rc, want 1"; }
  grep -qF "$want" "$WORK/out" "$WORK/err" || { cat "$WORK/out" "$WORK/err"; fail "$what: no \"$want\""; }
  echo "$what: refused in ${secs} s, peak RSS ${rss} KiB (${base} KiB clean, pickle ${size} KiB mapped)"
  [ "$rss" -lt $((base + size + 32 * 1024)) ] || fail "$what: peak RSS ${rss} KiB"
  awk -v s="$secs" 'BEGIN { exit !(s < 3) }' || fail "$what: took ${secs} s"
  rm -f "$cache/$what"_index.npy
}
bomb newtrue 'b"\x88" * (64 << 20)'
refused_fast newtrue "holds more than 65618 objects at once (an index of a cache of 40 samples needs fewer)"
bomb marks 'b"(" * (64 << 20)'
refused_fast marks "holds more than"
# Lists kept alive by a memo that is read back later: 4 M LONG_BINPUTs, then their GETs.
bomb memo 'b"".join(b"]r" + i.to_bytes(4, "little") for i in range(1 << 22)) + b"j\0\0\0\0"'
refused_fast memo "holds more than"
# One array of 40 ids, listed under 30,000 keys by a memo GET (SETITEMS batches of 1,000, as
# CPython writes them): within the object budget, but more ids than samples.
bomb ids '(b"cnumpy.core.multiarray\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01K\x00\x85C\x01b\x87R(K\x01)cnumpy\ndtype\n"
  b"X\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89]}("
  b"K\x00h\x00h\x01K\x00\x85C\x01b\x87R(K\x01K(\x85cnumpy\ndtype\nX\x02\x00\x00\x00i8\x89\x88\x87R(K\x03X\x01\x00\x00\x00<"
  b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89B@\x01\x00\x00" + bytes(320) + b"tbq\x02"
  + b"".join(b"J" + k.to_bytes(4, "little") + b"h\x02" + (b"u(" if k % 1000 == 0 else b"") for k in range(1, 30000)) + b"uatb")'
refused_fast ids "lists more sample ids than the cache's 40 samples"
pass "pickle bombs (NEWTRUE, MARK, memo, shared ids) refused at once in flat memory"

# An index of $keys distinct values, by slip (index --force) and by numpy (memoized protocol 3).
big=$WORK/unique.slipstream
$PY - "$big" "$keys" <<'PY'
import json, os, sys, numpy as np
c, n = sys.argv[1], int(sys.argv[2])
os.makedirs(c)
u = np.arange(n, dtype="<i8")[::-1].copy() * 3
np.save(f"{c}/u.npy", u)
np.save(f"{c}/v.npy", u)
m = {"version": 1, "num_samples": n, "fields": {"u": {"type": "int", "num_samples": n}, "v": {"type": "int", "num_samples": n}},
     "file_sizes": {"u.npy": os.path.getsize(f"{c}/u.npy"), "v.npy": os.path.getsize(f"{c}/v.npy")}}
json.dump(m, open(f"{c}/manifest.json", "w"), indent=2)
d = {int(x): np.array([i], dtype=np.int64) for i, x in enumerate(u)}  # as the Python write_index
a = np.empty((), dtype=object); a[()] = d
np.save(f"{c}/v_index.npy", a, allow_pickle=True)
PY
expect_status 0 "$SLIP" index "$big" --field u --force
mapped_kb=$(( $(du -sk "$big" | cut -f1) ))
measure "$SLIP" verify "$big"
[ "$rc" -eq 0 ] || { cat "$WORK/out" "$WORK/err"; fail "verify of slip's and numpy's $keys-key indexes exited $rc"; }
# The bound: the clean baseline, ~96 bytes a key (the dict's 32, chunk and allocator slack) and
# 64 MiB (the pickle's pages are released behind the reader every 32 MiB), whatever the files'
# size. (3 M keys, by hand: 188 MB peak for 600 MB of pickles; 9.3 GB and a refusal before.)
limit=$((base + keys * 96 / 1024 + 64 * 1024))
echo "$keys distinct values: verify ${secs} s, peak RSS ${rss} KiB (bound ${limit} KiB; cache ${mapped_kb} KiB)"
[ "$rss" -lt "$limit" ] || fail "verify of $keys keys: peak RSS ${rss} KiB >= ${limit} KiB"
pass "indexes of $keys distinct values (slip's and numpy's) verify in bounded memory"
