#!/usr/bin/env bash
# `subset --values-file` reads the file as a stream: memory is bounded by the cache's distinct
# values, not by the file (a 200 MB file of ids once held every line as a string: 5.75 GB peak).
# An 80 MB file of 20 million lines (values the field holds, repeated, and values it does not)
# runs under 300 MB RSS; values the field does not hold are warned about 5 times, then one
# "... and N more" line, and counted in --json; a file none of whose values is held is exit 2;
# a line that is not an integer is exit 2 naming its line number.
source "$(dirname "$0")/common.bash"
r=$WORK/src && mkdir -p "$r"
files=$(find "$CORPUS" -type f | LC_ALL=C sort | first_lines 12)
i=0
for f in $files; do
  d=$r/c$((i % 4)) && mkdir -p "$d" && cp "$f" "$d/"
  i=$((i + 1))
done
cache=$("$SLIP" convert "$r" -o "$WORK/o" -q)

# 20M lines (~88 MB): 0..3 (held: 4 classes) and 1000..500999 (not held), interleaved, 20 times.
# Under a sanitizer, where the RSS is not measured, 2M lines (the same counts checked; 1/10 the CPU).
repeats=20
[ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || repeats=2
$PY - "$WORK/values.txt" "$repeats" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    block = "".join(f"{i % 4}\n{1000 + i}\n" for i in range(500_000))
    for _ in range(int(sys.argv[2])):
        f.write(block)
PY
size=$(stat -c %s "$WORK/values.txt")
[ "$size" -gt $((repeats * 4000000)) ] || fail "values file only $size bytes"
lines=$(wc -l < "$WORK/values.txt")

/usr/bin/time -v "$SLIP" subset "$cache" --values-file "$WORK/values.txt" --mode ids -o "$WORK/ids.npy" --json \
  >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err"; fail "subset --values-file failed"; }
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/err")
echo "subset --values-file of $size bytes ($lines lines): peak RSS ${rss_kb} KB"
# (Not under a sanitizer: ASan's quarantine keeps up to 256 MB of freed blocks resident.)
[ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || [ "$rss_kb" -lt 307200 ] || fail "peak RSS ${rss_kb} KB for a $size-byte values file (bound: 300 MB)"
warned=$(grep -c 'has no sample with value' "$WORK/err" || true)
[ "$warned" -eq 5 ] || { head -20 "$WORK/err"; fail "$warned not-found warnings, want 5 then a summary"; }
grep -q '\.\.\. and [0-9]* more values of field "label" not found' "$WORK/err" || { head -20 "$WORK/err"; fail "no summary line"; }
$PY - "$WORK/out" "$WORK/ids.npy" "$lines" <<'PY' || fail "subset --values-file --json"
import json, sys, numpy as np
d = json.load(open(sys.argv[1])); lines = int(sys.argv[3])
assert d["values_read"] == lines, d
assert d["values_not_found"] == lines // 2, d
assert d["selected"] == 12, d
assert np.load(sys.argv[2]).tolist() == list(range(12))
PY
summary=$(sed -n 's/.*\.\.\. and \([0-9]*\) more values.*/\1/p' "$WORK/err")
[ "$summary" -eq $((lines / 2 - 5)) ] || fail "summary counts $summary, want $((lines / 2 - 5))"
pass "subset --values-file: $size bytes in ${rss_kb} KB peak RSS; 5 warnings then '... and $summary more'"

# The same selection as --values, byte for byte; CRLF lines and blank lines are fine.
printf '1\r\n\r\n3\n' > "$WORK/crlf.txt"
expect_status 0 "$SLIP" subset "$cache" --values-file "$WORK/crlf.txt" --mode ids -o "$WORK/a.npy"
expect_status 0 "$SLIP" subset "$cache" --values 1,3 --mode ids -o "$WORK/b.npy"
cmp -s "$WORK/a.npy" "$WORK/b.npy" || fail "--values-file and --values select differently"
# Nothing held: a usage error; a bad line: a usage error naming the line; no final newline: read.
printf '7\n8\n' > "$WORK/none.txt"
expect_status 2 "$SLIP" subset "$cache" --values-file "$WORK/none.txt" --mode ids -o "$WORK/c.npy"
grep -q 'none of the 2 values' "$WORK/err" || { cat "$WORK/err"; fail "no-match file not refused"; }
printf '1\n2\nx2\n' > "$WORK/bad.txt"
expect_status 2 "$SLIP" subset "$cache" --values-file "$WORK/bad.txt" --mode ids -o "$WORK/c.npy"
grep -q 'line 3: not an integer' "$WORK/err" || { cat "$WORK/err"; fail "bad line not named"; }
head -c 100000 /dev/zero | tr '\0' '9' > "$WORK/long.txt"  # one 100 KB line, no newline
expect_status 2 "$SLIP" subset "$cache" --values-file "$WORK/long.txt" --mode ids -o "$WORK/c.npy"
grep -q 'line 1: not an integer' "$WORK/err" || { cat "$WORK/err"; fail "overlong line"; }
printf '2' > "$WORK/last.txt"
expect_status 0 "$SLIP" subset "$cache" --values-file "$WORK/last.txt" --mode ids -o "$WORK/d.npy" --json
[ "$(json_get "$WORK/out" "['selected']")" = 3 ] || fail "a last line without newline was not read"
# A str field: values looked up by hash (the lookup was linear in the distinct values).
"$SLIP" cat "$cache" 4 --field path > "$WORK/p4"
{ cat "$WORK/p4"; echo; echo "no/such/file.JPEG"; } > "$WORK/paths.txt"
expect_status 0 "$SLIP" subset "$cache" --field path --values-file "$WORK/paths.txt" --mode ids -o "$WORK/e.npy" --json
$PY -c "import numpy as np,sys; assert np.load(sys.argv[1]).tolist() == [4]" "$WORK/e.npy" || fail "str field selection"
[ "$(json_get "$WORK/out" "['values_not_found']")" = 1 ] || fail "str not-found count"
pass "--values-file: CRLF, no final newline, str fields; nothing held and bad lines are usage errors"
