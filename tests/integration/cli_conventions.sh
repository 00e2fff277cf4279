#!/usr/bin/env bash
# Command-line conventions: usage errors are one `slip: error:` line that names the bad word
# and suggests the nearest command or flag, exit 2; `-` is stdout wherever a file is written;
# several caches per verify/info; ls of a missing directory is "no caches".
source "$(dirname "$0")/common.bash"
one_error_line() {  # the whole of stderr is one "slip: error: ..." line
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "$1: stderr is not one line"; }
  grep -q '^slip: error: ' "$WORK/err" || { cat "$WORK/err" >&2; fail "$1: no 'slip: error:' prefix"; }
}

# Typos of commands and flags: the word named, the nearest suggested.
expect_status 2 "$SLIP" conver
one_error_line conver
grep -q "'conver' is not a slip command. The most similar command is 'convert'" "$WORK/err" || fail "conver: $(cat "$WORK/err")"
expect_status 2 "$SLIP" --versoin
one_error_line --versoin
grep -q "'--versoin'.*most similar option is '--version'" "$WORK/err" || fail "--versoin: $(cat "$WORK/err")"
expect_status 2 "$SLIP" convert --forse "$SRC/examples/sample"
one_error_line --forse
grep -q "'--forse'.*most similar option is '--force'" "$WORK/err" || fail "--forse: $(cat "$WORK/err")"
expect_status 2 "$SLIP" verify --jsno x
grep -q "most similar option is '--json'" "$WORK/err" || fail "--jsno: $(cat "$WORK/err")"
expect_status 2 "$SLIP" xyzzy
one_error_line xyzzy
grep -q "'xyzzy' is not a slip command" "$WORK/err" && ! grep -q "most similar" "$WORK/err" || fail "xyzzy: $(cat "$WORK/err")"
# Bare `slip`: the help on stderr (nothing on stdout), usage exit status.
expect_status 2 "$SLIP"
grep -q '^Subcommands:' "$WORK/err" && grep -q '^  convert ' "$WORK/err" || { cat "$WORK/err"; fail "bare slip does not print the help"; }
[ ! -s "$WORK/out" ] || fail "bare slip wrote to stdout"
expect_status 2 "$SLIP" cat
one_error_line "missing positional"
expect_status 2 "$SLIP" bench x --pipeline nope
one_error_line "bad choice"
expect_status 2 "$SLIP" subset x --mode
one_error_line "missing value"
grep -q -- "--mode needs a value: copy, ids" "$WORK/err" || fail "missing value: $(cat "$WORK/err")"
# The class: every command name and every long flag of every command, with two letters swapped,
# is one error line that suggests the intended word.
commands=$("$SLIP" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}')
for c in $commands; do
  typo=$(echo "$c" | sed -E 's/^(.)(.)(.)/\1\3\2/')
  [ "$typo" = "$c" ] && continue
  expect_status 2 "$SLIP" "$typo"
  one_error_line "$typo"
  grep -q "most similar command is '$c'" "$WORK/err" || fail "$typo: $(cat "$WORK/err")"
  for f in $("$SLIP" "$c" --help | grep -oE '^  (-[A-Za-z0-9],)?--[a-z][a-z0-9-]{4,}' | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    typo=$(echo "$f" | sed -E 's/^--(.)(.)/--\2\1/')
    [ "$typo" = "$f" ] && continue
    expect_status 2 "$SLIP" "$c" "$typo"
    one_error_line "$c $typo"
    grep -q "'$typo' is not a slip $c option. The most similar option is '--" "$WORK/err" || fail "$c $typo: $(cat "$WORK/err")"
  done
done
pass "typos name the word and the nearest command or flag, one line, exit 2"

# Ranges are said plainly, not as 'Value 0 not in range 0.000000 to 1797...'.
for args in "order x --block-size 0" "order x --world-size 0" "bench x -b 0" "bench x --epochs 0"; do
  expect_status 2 "$SLIP" $args
  one_error_line "$args"
  grep -qE -- "--[a-z-]+ must be >= 1" "$WORK/err" || fail "$args: $(cat "$WORK/err")"
  [ "$(wc -c < "$WORK/err")" -lt 120 ] || fail "$args: message too long: $(cat "$WORK/err")"
done
# Unsigned options refuse a sign (CLI11 would wrap -1 to 2^64-1) and values beyond 2^64-1
# (it would saturate); a non-number names the option and what it wants.
for args in "order x --seed -3" "order x --rank -1" "cat x -1" "verify x -j -2" "bench x --max-samples -5"; do
  expect_status 2 "$SLIP" $args
  one_error_line "$args"
  grep -qE -- "must be >= 0 \(got '-[0-9]+'\)" "$WORK/err" || fail "$args: $(cat "$WORK/err")"
done
expect_status 2 "$SLIP" order x --seed 18446744073709551616
grep -q -- "--seed is out of range" "$WORK/err" || fail "seed 2^64: $(cat "$WORK/err")"
expect_status 2 "$SLIP" order x --seed abc
grep -q -- "--seed wants a non-negative integer, got 'abc'" "$WORK/err" || fail "seed abc: $(cat "$WORK/err")"
expect_status 2 "$SLIP" verify x --mean-diff zz
grep -q -- "--mean-diff wants a number, got 'zz'" "$WORK/err" || fail "mean-diff zz: $(cat "$WORK/err")"
pass "range errors say '--flag must be >= N'; signs, overflow and non-numbers are named"

expect_status 0 "$SLIP" -V
grep -q '^slip ' "$WORK/out" || fail "-V does not print the version"
pass "-V prints the version"

# '-' is stdout wherever a file is written; directories (caches) refuse it.
cache=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q)
cd "$WORK"
"$SLIP" order "$cache" --format npy | cat > o.npy
$PY -c "import numpy as np; a=np.load('o.npy'); assert a.dtype==np.int64 and sorted(a.tolist())==list(range(len(a))), a" || fail "order --format npy into a pipe"
"$SLIP" order "$cache" --format npy -o - > o2.npy
cmp -s o.npy o2.npy || fail "order --format npy -o - differs from the pipe"
"$SLIP" order "$cache" -o - > o.txt
[ "$(wc -l < o.txt)" -eq "$($PY -c "import numpy as np; print(len(np.load('o.npy')))")" ] || fail "order -o -"
"$SLIP" cat "$cache" 0 -o - > s0.jpg
"$SLIP" cat "$cache" 0 | cmp -s - s0.jpg || fail "cat -o - differs from cat to stdout"
"$SLIP" cat "$cache" 0 --field label -o - > l.txt
[ -s l.txt ] || fail "cat --field label -o - printed nothing"
"$SLIP" subset "$cache" --values 0 --mode ids -o - > ids.npy
$PY -c "import numpy as np; a=np.load('ids.npy'); assert a.dtype==np.int64 and len(a) > 0" || fail "subset --mode ids -o -"
"$SLIP" man info -o - > info.1
grep -q '^\.TH SLIP\\-INFO' info.1 || fail "man -o -"
[ ! -e ./- ] || fail "a file named '-' was created"
expect_status 2 "$SLIP" convert "$SRC/examples/sample" -o -
one_error_line "convert -o -"
expect_status 2 "$SLIP" subset "$cache" --values 0 -o -
one_error_line "subset -o - (copy)"
expect_status 2 "$SLIP" subset "$cache" --values 0 --mode ids -o - --json
[ ! -e ./- ] || fail "a file named '-' was created"
pass "'-' is stdout for order, cat, subset --mode ids and man; directories refuse it"

# verify / info take several caches: one report each, the exit status is the worst.
"$SLIP" verify "$cache" "$cache" > v.txt || fail "verify A A"
[ "$(grep -c '^OK ' v.txt)" -eq 2 ] || fail "verify A A: $(cat v.txt)"
expect_status 4 "$SLIP" verify "$cache" "$WORK/nope" "$cache" --json
[ "$(wc -l < "$WORK/out")" -eq 3 ] || fail "verify --json of 3 caches is not 3 lines"
$PY -c '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
assert [o["command"] for o in objs] == ["verify"] * 3
assert objs[0]["ok"] and objs[2]["ok"] and objs[1]["exit_code"] == 4 and "error" in objs[1], objs
' "$WORK/out" || fail "verify --json of several caches"
"$SLIP" info "$cache" "$cache" | grep -c '^cache:' | grep -qx 2 || fail "info A A"
expect_status 4 "$SLIP" info "$cache" "$WORK/nope" --json
[ "$(wc -l < "$WORK/out")" -eq 2 ] || fail "info --json of 2 caches is not 2 lines"
pass "verify and info take several caches (JSON Lines, worst exit status)"

# Skipped samples are visible in `slip info` without -v: the first 10 entries, then a count.
mkdir -p bad/good bad/junk
cp "$SRC"/examples/sample/n01440764/*.JPEG bad/good/
for i in $(seq 1 13); do echo "not an image" > "bad/junk/x$i.jpg"; done
badc=$("$SLIP" convert bad -o "$WORK/c" --on-error skip -q)
"$SLIP" info "$badc" > i.txt
grep -qE '^  skipped +source #[0-9]+ .*junk/x1\.jpg' i.txt || { cat i.txt; fail "info does not list the skipped samples"; }
n=$(grep -cE '^  (skipped|transcoded) ' i.txt)
[ "$n" -eq 10 ] || fail "info lists $n ledger entries, want 10"
grep -qE '^  \.\.\. and [0-9]+ more' i.txt || fail "info does not say how many more"
"$SLIP" info "$badc" --json > i.json
$PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
skipped = [e for e in d["ledger_entries"] if e["action"] == "skipped"]
assert len(skipped) == 13 and all(e["sample"] is None for e in skipped), d["ledger_entries"]
' i.json || fail "info --json ledger_entries"
pass "info lists the ledger entries"

# ls: a header, one-word statuses, .parts work directories, one cache, a missing default dir.
SLIPSTREAM_CACHE_DIR=$WORK/never-created "$SLIP" ls > ls.txt || fail "ls of a missing default directory is an error"
[ ! -s ls.txt ] || fail "ls of a missing default directory printed: $(cat ls.txt)"
SLIPSTREAM_CACHE_DIR=$WORK/never-created "$SLIP" ls --json | $PY -c 'import json,sys; assert json.load(sys.stdin)["caches"] == []' || fail "ls --json"
"$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q --shard 1/2 >/dev/null
mkdir "$WORK/c/.gone-0123abcd.slipstream.tmp-999999"
"$SLIP" ls "$WORK/c" > ls.txt
head -1 ls.txt | grep -qE '^NAME +SAMPLES +SIZE +STATUS' || fail "ls has no header: $(head -1 ls.txt)"
grep -qE '^sample-[0-9a-f]{8}\.slipstream +40 .* complete ' ls.txt || fail "ls: $(cat ls.txt)"
grep -qE '^sample-[0-9a-f]{8}\.parts .* parts +1/2 parts done' ls.txt || fail "ls does not list the .parts directory: $(cat ls.txt)"
grep -qE '^gone-0123abcd\.slipstream .* abandoned ' ls.txt || fail "ls: abandoned temp dir: $(cat ls.txt)"
! grep -q 'INCOMPLETE\|(' <(awk '{print $5}' ls.txt) || fail "ls status column is not one word"
"$SLIP" ls "$cache" > ls1.txt
[ "$(wc -l < ls1.txt)" -eq 2 ] && grep -q "$(basename "$cache")" ls1.txt || fail "ls CACHE: $(cat ls1.txt)"
"$SLIP" ls "$cache" --json | $PY -c 'import json,sys; c=json.load(sys.stdin)["caches"]; assert len(c)==1 and c[0]["status"]=="complete" and c[0]["kind"]=="cache", c' || fail "ls CACHE --json"
pass "ls: header, statuses, .parts, one cache, missing default directory"

# slip/slip.hpp includes every public header (tests/unit/public_api_test.cpp compiles with it alone).
# Headers that refuse to compile without SLIP_UNSTABLE_API (export.hpp) are the opposite: never in slip.hpp.
for h in "$SRC"/lib/include/slip/*.hpp; do
  name=$(basename "$h")
  [ "$name" = slip.hpp ] && continue
  if grep -q '^#error.*SLIP_UNSTABLE_API' "$h"; then
    ! grep -q "^#include \"slip/$name\"" "$SRC/lib/include/slip/slip.hpp" || fail "slip.hpp includes the unstable slip/$name"
    continue
  fi
  grep -q "^#include \"slip/$name\"" "$SRC/lib/include/slip/slip.hpp" || fail "slip.hpp does not include slip/$name"
done
pass "slip.hpp includes every stable public header and no unstable one (the bench harness is not a public header: apps/bench_harness/)"

# bench --compare names each run by its own cache, not both by the first.
yuvc=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/cy" --image-format yuv420 -q)
"$SLIP" bench "$cache" --compare "$yuvc" -e 1 -b 4 --max-samples 4 --no-limit -p decode > b.txt
headers=$(grep -E ': pipeline ' b.txt)
[ "$(echo "$headers" | sed -n 1p | cut -d: -f1)" = "$cache" ] || fail "bench --compare first run: $headers"
[ "$(echo "$headers" | sed -n 2p | cut -d: -f1)" = "$yuvc" ] || fail "bench --compare labels the other run wrongly: $headers"
pass "bench --compare labels each run with its cache"
