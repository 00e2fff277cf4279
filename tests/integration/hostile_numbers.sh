#!/usr/bin/env bash
# Numbers beyond 64 bits are usage errors naming the text, never an "internal error" (issue 36:
# std::stoull let std::out_of_range escape from `x{0..99999999999999999999999}.tar`); and a
# worker's failure keeps its class: running out of memory while decoding is reported as such
# (exit 4), not as a corrupt sample (exit 3).
source "$(dirname "$0")/common.bash"

# usage_error WHAT CMD...: exit 2, one line, no "internal error".
usage_error() {
  local what=$1; shift
  expect_status 2 "$@"
  if grep -q "internal error" "$WORK/err"; then cat "$WORK/err"; fail "$what: reported as an internal error"; fi
  [ "$(grep -c . "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$what: not one line"; }
  pass "$what: a usage error"
}
usage_error "brace range past 2^64" "$SLIP" convert "$WORK/x{0..99999999999999999999999}.tar" -o "$WORK/out"
grep -q "brace range" "$WORK/err" || { cat "$WORK/err"; fail "the brace range is not named"; }
usage_error "brace range start past 2^64" "$SLIP" convert "$WORK/x{99999999999999999999999..99999999999999999999999}.tar" -o "$WORK/out"
usage_error "brace range in a @list" bash -c "echo '$WORK/y{1..18446744073709551616}.tar' > '$WORK/list.txt' && exec '$SLIP' convert @'$WORK/list.txt' -o '$WORK/out'"
echo 1 > "$WORK/a.cls" && tar -C "$WORK" -cf "$WORK/x.tar" a.cls  # a real shard: the options are what is wrong
usage_error "--shard past 2^64" "$SLIP" convert "$WORK/x.tar" --shard 99999999999999999999999/99999999999999999999999 -o "$WORK/out"
usage_error "--max-sample-bytes past 2^64" "$SLIP" convert "$WORK/x.tar" --max-sample-bytes 99999999999999999999999 -o "$WORK/out"
usage_error "--max-image-pixels past 2^64" "$SLIP" convert "$WORK/x.tar" --max-image-pixels 99999999999999999999999 -o "$WORK/out"

# A cache of one 6000x6000 JPEG (108 MB decoded); a full decode under an address-space limit
# that leaves too little for its pixels fails with "out of memory" (exit 4), not as bad input.
mkdir -p "$WORK/big/a"
$PY -c "from PIL import Image; Image.new('RGB', (6000, 6000), (90, 120, 30)).save('$WORK/big/a/x.jpg', quality=50)"
cache=$("$SLIP" convert "$WORK/big" -o "$WORK/caches" -q)
"$SLIP" bench "$cache" -p decode -j 1 -b 1 -e 1 --no-limit > /dev/null 2>&1 || fail "the big image does not decode without a limit"
# The smallest limit (in steps of 32 to 64 MiB) under which slip still starts but the decode fails.
found=0
for mib in 64 96 128 160 192 224 256 320 384 448 512; do
  got=0
  (ulimit -v $((mib * 1024)); exec "$SLIP" bench "$cache" -p decode -j 1 -b 1 -e 1 --no-limit) >"$WORK/out" 2>"$WORK/err" || got=$?
  if [ "$got" -ne 0 ] && grep -q "std::bad_alloc\|out of memory\|cannot allocate" "$WORK/err"; then
    found=1
    [ "$got" -eq 4 ] || { cat "$WORK/err"; fail "out of memory under ulimit -v ${mib} MiB reported with exit $got (want 4)"; }
    grep -q "out of memory" "$WORK/err" || { cat "$WORK/err"; fail "out of memory not named as such"; }
    pass "out of memory in a decode worker (ulimit -v ${mib} MiB): exit 4, \"out of memory\""
    break
  fi
done
[ "$found" = 1 ] || echo "note: no address-space limit made the decode fail; the out-of-memory check did not run"
