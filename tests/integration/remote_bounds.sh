#!/usr/bin/env bash
# Downloads bounded by --max-download-bytes, not by what a server claims or omits: an endless
# chunked body, an endless body until close, a Content-Length of 10^15 (refused before anything
# is written; one over the free space too). Retries count only real progress: a server that
# answers Range with the whole object and closes early gets --retries + 1 GETs, not 20 times
# that, and a listing size the object contradicts fails at once naming both sizes.
source "$(dirname "$0")/common.bash"
$PY "$SRC/tests/servers/hostile_server.py" "$WORK/port" --log "$WORK/log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1200); do [ -s "$WORK/port" ] && break; sleep 0.05; done  # a hang guard, not a bound
base="http://127.0.0.1:$(cat "$WORK/port")"
dl=$WORK/dl
common=(-o "$WORK/out-caches" --download-dir "$dl" --retries 3 --retry-delay 0.05)
gets() { grep -c "\"path\": \"$1" "$WORK/log" || true; }
# disk_bytes: the bytes left in the download directory (the bodies are sparse-free zeros).
disk_bytes() { du -sb "$dl" 2>/dev/null | cut -f1 || echo 0; }

# 1. Bodies without a length: cut off at the bound, nothing kept. (`timeout` is a hang guard: an
# endless body read without the bound never ends.)
for kind in chunked close; do
  rm -rf "$dl"
  expect_status 3 timeout 300 "$SLIP" convert "$base/endless-$kind.tar" "${common[@]}" --max-download-bytes 4MiB
  grep -q "endless-$kind.tar" "$WORK/err" && grep -q "max-download-bytes 4194304" "$WORK/err" ||
    { cat "$WORK/err"; fail "the refusal of an endless $kind body names neither the URL nor the bound"; }
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "more than one error line"; }
  [ "$(gets /endless-$kind.tar)" -eq 1 ] || fail "an endless $kind body was fetched again"
  [ "$(disk_bytes)" -lt $((4 << 20)) ] || fail "$(disk_bytes) bytes of an endless $kind body left on disk"
  pass "an endless $kind body: cut off at --max-download-bytes (exit 3, one GET, $(disk_bytes) bytes left)"
done

# 2. Content-Length 10^15 with a 100-byte body: refused before a byte is written, not retried.
rm -rf "$dl"
expect_status 3 timeout 300 "$SLIP" convert "$base/huge.tar" "${common[@]}"
grep -q "announces 1000000000000000 bytes, more than --max-download-bytes" "$WORK/err" && grep -q huge.tar "$WORK/err" ||
  { cat "$WORK/err"; fail "a Content-Length of 10^15 was not refused by its size"; }
[ "$(gets /huge.tar)" -eq 1 ] || fail "a refused length was asked for again"
[ -z "$(find "$dl" -name 'huge.tar*' -size +0c)" ] || { find "$dl" -ls; fail "bytes of a refused body were written"; }
# The bound raised past it: the free-space check refuses it instead (exit 4), still nothing written.
expect_status 4 timeout 300 "$SLIP" convert "$base/huge.tar" "${common[@]}" --max-download-bytes 2000000000000000
grep -q "needs 1000000000000000 bytes, [0-9]* free in" "$WORK/err" || { cat "$WORK/err"; fail "free space not checked"; }
[ -z "$(find "$dl" -name 'huge.tar*' -size +0c)" ] || fail "bytes written past the free-space check"
pass "Content-Length 10^15: refused before writing (exit 3 over the bound, exit 4 over the free space)"

# 3. A server that ignores Range and closes after 100,000 of 1,000,000 bytes: each retry
#    restarts at byte 0, which is no progress: --retries 3 means 4 GETs (before: 80).
: > "$WORK/log"
rm -rf "$dl"
expect_status 5 timeout 300 "$SLIP" convert "$base/norange.tar" "${common[@]}"
n=$(gets /norange.tar)
[ "$n" -le 4 ] || fail "$n GETs of an object whose server ignores Range (want at most 4)"
grep -q "ignored Range" "$WORK/err" || { cat "$WORK/err"; fail "the error does not say the server ignored Range"; }
pass "a server ignoring Range: $n GETs, then exit 5 saying so"

# 4. An S3 listing size the object contradicts: one GET, an error naming both sizes (exit 5:
#    a rerun lists again). Announced (Content-Length) and not (chunked, shorter).
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1
for bucket in size-bucket short-bucket; do
  : > "$WORK/log"
  rm -rf "$dl"
  expect_status 5 timeout 300 "$SLIP" convert "s3://$bucket/shards/a.tar" "${common[@]}" --endpoint-url "$base"
  [ "$(grep -c '"GET"' "$WORK/log")" -le 2 ] || { cat "$WORK/log"; fail "$bucket: the object was fetched again after its size contradicted the listing"; }
  case $bucket in
    size-bucket) grep -q "announces 5000 bytes, the listing (or HEAD) said 1000" "$WORK/err" ;;
    short-bucket) grep -q "downloaded 5000 bytes, the listing (or HEAD) said 10000" "$WORK/err" ;;
  esac || { cat "$WORK/err"; fail "$bucket: the sizes are not named"; }
  pass "$bucket: a listing size the object contradicts fails at once naming both ($(cut -c1-140 "$WORK/err"))"
done
