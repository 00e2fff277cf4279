#!/usr/bin/env bash
# Sources over http:// from a real HTTP server on 127.0.0.1 (tests/servers/http_server.py):
# an FFCV file, tar shards (brace ranges) and a LitData directory convert to the same bytes as
# their local copies; a second run reuses the downloads (304s); a server killed mid-transfer and
# restarted: the download resumes with a Range request and the cache is identical; a server that
# truncates its responses, a 404 and persistent 503s give clear errors, distinct exit codes and
# no cache; transient 503s are retried; https:// with a CA given by CURL_CA_BUNDLE, and a
# certificate the client cannot verify refused at once.
source "$(dirname "$0")/common.bash"
need_shared "the FFCV and LitData fixtures served over HTTP"
source "$(dirname "$0")/remote_common.bash"

www=$WORK/www && mkdir -p "$www/ffcv" "$www/shards" "$www/big"
cp "$SLIP_SHARED_DIR/fixtures/ffcv/imagenet_like.beton" "$www/ffcv/"
cp -r "$SLIP_SHARED_DIR/fixtures/litdata/all_types" "$www/litdata"
# Three small tar shards (ImageFolder layout) and one big one, with GNU tar.
class_shards "$www/shards" 20
(cd "$CORPUS" && tar --format=gnu -cf "$www/big/all.tar" $(ls -d */ | first_lines 40 | tr -d /))
[ "$(stat -c %s "$www/big/all.tar")" -gt 4000000 ] || fail "the big shard is too small to kill the server mid-transfer"

start_http() {  # start_http PORT [options...]
  local port=$1; shift
  $PY "$SERVERS/http_server.py" "$www" --port "$port" --log "$WORK/http.log" "$@" &
  HTTP_PID=$!
  PIDS+=("$HTTP_PID")
  wait_port "$port"
}
port=$(free_port)
start_http "$port"
base=http://127.0.0.1:$port
local_cache() { "$SLIP" convert "$@" -o "$WORK/local" -q --layout imagefolder 2>/dev/null || "$SLIP" convert "$@" -o "$WORK/local" -q; }

# FFCV file.
remote=$("$SLIP" convert "$base/ffcv/imagenet_like.beton" -o "$WORK/remote" -q)
local=$("$SLIP" convert "$www/ffcv/imagenet_like.beton" -o "$WORK/local" -q)
same_cache "$remote" "$local"
grep -q "\"uri\": \"$base/ffcv/imagenet_like.beton\"" "$remote/manifest.json" || fail "the manifest does not name the remote URI"
pass "FFCV over http equals the local conversion"

# Tar shards, brace range, several transfers at once.
remote=$("$SLIP" convert "$base/shards/shard-{000000..000002}.tar" --layout imagefolder --jobs 3 -o "$WORK/remote" -q)
local=$("$SLIP" convert "$www"/shards/shard-00000{0,1,2}.tar --layout imagefolder -o "$WORK/local" -q)
same_cache "$remote" "$local"
[ "$(json_get "$remote/manifest.json" "['num_samples']")" -eq 60 ] || fail "expected 60 samples"
pass "tar shards over http (brace range, 3 jobs) equal the local conversion"

# WebDataset shards: a HEAD each gives the sizes and times the content id needs, so the
# conversion starts on the first shard while the others download (one transfer at a time at
# 1 MB/s here, so the last shard is still on its way). Same bytes as the local conversion,
# and the content id the downloaded files give.
port_slow=$(free_port)
main_http=$HTTP_PID
start_http "$port_slow" --rate 1000000
convert_while_held "$WORK/stream" "$WORK/dl-stream/http/127.0.0.1_$port_slow/shards/shard-000002.tar" \
  "$SLIP" -v convert "http://127.0.0.1:$port_slow/shards/shard-{000000..000002}.tar" --jobs 1 --download-dir "$WORK/dl-stream" -o "$WORK/stream"
[ "$STATUS" -eq 0 ] || { cat "$WORK/stream.err"; fail "streamed http conversion exited $STATUS"; }
[ "$OVERLAP" = 1 ] || fail "the http conversion did not start before the last shard was downloaded"
grep -q '"method": "HEAD"' "$WORK/http.log" || fail "no HEAD request"
streamed=$(tail -n1 "$WORK/stream.out")
same_cache "$streamed" "$("$SLIP" convert "$www"/shards/shard-00000{0,1,2}.tar -o "$WORK/local-wds" -q)"
downloaded=$("$SLIP" convert "$WORK/dl-stream/http/127.0.0.1_$port_slow/shards/"shard-00000{0,1,2}.tar -o "$WORK/local-dl" -q)
[ "$(fingerprint_of "$streamed")" = "$(fingerprint_of "$downloaded")" ] || fail "streamed fingerprint $(fingerprint_of "$streamed") differs from the downloaded files' $(fingerprint_of "$downloaded")"
$PY -c "import json,sys; u=json.load(open(sys.argv[1]+'/manifest.json'))['slip']['source']['uris']; assert u==['http://127.0.0.1:$port_slow/shards/shard-%06d.tar'%i for i in range(3)], u" "$streamed" ||
  fail "the manifest does not list the shard URLs"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
HTTP_PID=$main_http
pass "http shards convert while later ones download ($(grep -o 'fetched.*while converting' "$WORK/stream.err")); same bytes and content id"

# A server that refuses HEAD: the shards are downloaded first, same cache. One whose HEAD
# announces another size than its GET delivers: the download fails its check (exit 5), no cache.
port_nohead=$(free_port)
start_http "$port_nohead" --head-status 405
nohead=$("$SLIP" convert "http://127.0.0.1:$port_nohead/shards/shard-{000000..000002}.tar" -o "$WORK/nohead" -q)
same_cache "$nohead" "$streamed"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
for length in 99999999999999999999 -1 12abc ''; do  # a HEAD size that does not parse: no size, download first
  port_odd=$(free_port)
  start_http "$port_odd" --head-length "$length"
  odd=$("$SLIP" convert "http://127.0.0.1:$port_odd/shards/shard-{000000..000002}.tar" -o "$WORK/odd-length" -q) ||
    fail "a HEAD Content-Length of '$length' failed the conversion"
  same_cache "$odd" "$streamed"
  kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
done
# A Last-Modified beyond what the file clock holds (the year 2500): no streaming, no overflow;
# downloaded first, same cache.
port_future=$(free_port)
start_http "$port_future" --last-modified 'Fri, 01 Jan 2500 00:00:00 GMT'
expect_status 0 "$SLIP" -v convert "http://127.0.0.1:$port_future/shards/shard-{000000..000002}.tar" -o "$WORK/future"
! grep -q "while converting" "$WORK/err" || fail "shards dated 2500 were streamed"
same_cache "$(tail -n1 "$WORK/out")" "$streamed"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
port_lies=$(free_port)
start_http "$port_lies" --head-lies-by -7
expect_status 5 "$SLIP" convert "http://127.0.0.1:$port_lies/shards/shard-{000000..000002}.tar" --retries 1 --retry-delay 0.05 -o "$WORK/lies"
grep -q "HEAD) said" "$WORK/err" || { cat "$WORK/err"; fail "the size mismatch is not named"; }
[ -z "$(ls -A "$WORK/lies" 2>/dev/null)" ] || fail "a cache was made from shards whose size contradicts their HEAD"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
HTTP_PID=$main_http
pass "a server refusing HEAD, or sizing its HEADs unparseably: downloaded first, same cache; a HEAD contradicting its GET: exit 5, no cache"

# LitData directory: index.json, then the chunks it names.
remote=$("$SLIP" convert "$base/litdata/" -o "$WORK/remote" -q)
local=$("$SLIP" convert "$www/litdata" -o "$WORK/local" -q)
same_cache "$remote" "$local"
pass "LitData over http equals the local conversion"

# A second run reuses every download: conditional requests answered 304, no body sent.
: > "$WORK/http.log"
"$SLIP" convert "$base/shards/shard-{000000..000002}.tar" --layout imagefolder -o "$WORK/remote2" -q > /dev/null
[ "$(grep -c '"status": 304' "$WORK/http.log")" -eq 3 ] || { cat "$WORK/http.log"; fail "expected three 304 answers"; }
! grep -q '"status": 200' "$WORK/http.log" || fail "a complete download was fetched again"
pass "later runs reuse complete downloads (If-None-Match -> 304)"

# Killed mid-transfer, restarted: the download resumes where it stopped.
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
: > "$WORK/http.log"
start_http "$port" --rate 1500000
dl=$SLIPSTREAM_CACHE_DIR/downloads/http/127.0.0.1_$port/big/all.tar
# 30 retries with doubling backoff outlast a restart on a loaded machine.
"$SLIP" convert "$base/big/all.tar" --layout imagefolder --retries 30 --retry-delay 0.2 -o "$WORK/remote" > "$WORK/resume.out" 2> "$WORK/resume.err" &
convert_pid=$!
for _ in $(seq 6000); do  # until 1 MB is on disk (an event; the count is a hang guard)
  [ "$(stat -c %s "$dl.part" 2>/dev/null || echo 0)" -gt 1000000 ] && break
  sleep 0.05
done
kill -9 "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
had=$(stat -c %s "$dl.part")
[ "$had" -gt 0 ] || fail "nothing was downloaded before the kill"
sleep 1
start_http "$port"
wait "$convert_pid" || { cat "$WORK/resume.err"; fail "convert did not survive the server restart"; }
$PY - "$WORK/http.log" "$had" <<'PY' || fail "no resuming Range request"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
resumes = [e for e in log if e["status"] == 206 and e["start"] > 0]
assert resumes, log
assert resumes[0]["start"] >= int(sys.argv[2]) * 0.5, (resumes[0], sys.argv[2])
print(f"resumed at byte {resumes[0]['start']} of the part ({sys.argv[2]} bytes on disk at the kill)")
PY
grep -q "1 resumed" "$WORK/resume.err" || fail "the summary does not mention the resume"
local=$("$SLIP" convert "$www/big/all.tar" --layout imagefolder -o "$WORK/local" -q)
same_cache "$(cat "$WORK/resume.out")" "$local"
pass "a download interrupted by a server kill resumes with Range and gives the identical cache"

# A server that cuts every response short at byte 100000: no cache, a clear error, exit 5.
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
port2=$(free_port)
start_http "$port2" --truncate-at 100000
expect_status 5 "$SLIP" convert "http://127.0.0.1:$port2/big/all.tar" --layout imagefolder --retries 2 --retry-delay 0.05 -o "$WORK/trunc"
grep -q "http://127.0.0.1:$port2/big/all.tar" "$WORK/err" || fail "the error does not name the URL"
grep -qi "attempts" "$WORK/err" || fail "the error does not say it retried"
[ ! -e "$WORK/trunc" ] || [ -z "$(ls "$WORK/trunc")" ] || fail "a cache was produced from a truncated download"
[ ! -e "$SLIPSTREAM_CACHE_DIR/downloads/http/127.0.0.1_$port2/big/all.tar" ] || fail "a truncated download was kept under its final name"
pass "truncated responses: exit 5 ($(head -c 160 "$WORK/err" | tr '\n' ' '))"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true

# 404: at once (one request), exit 4, the URL and the status named.
port3=$(free_port)
: > "$WORK/http.log"
start_http "$port3" --fail-first 2
expect_status 4 "$SLIP" convert "http://127.0.0.1:$port3/nope/missing.tar" --retries 5 --retry-delay 0.05 -o "$WORK/x"
grep -q "HTTP 404" "$WORK/err" && grep -q "missing.tar" "$WORK/err" || { cat "$WORK/err"; fail "404 not reported"; }
[ "$(grep -c '"status": 404' "$WORK/http.log")" -eq 1 ] || fail "a 404 was retried"
grep -q '"status": 503' "$WORK/http.log" || fail "the 503s were not seen"
pass "503 retried, then 404 fails at once with exit 4"

# Transient 503s are retried and the conversion succeeds; persistent ones exit 5.
: > "$WORK/http.log"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
start_http "$port3" --fail-first 2
remote=$("$SLIP" convert "http://127.0.0.1:$port3/ffcv/imagenet_like.beton" --retry-delay 0.05 -o "$WORK/r503" -q)
same_cache "$remote" "$("$SLIP" convert "$www/ffcv/imagenet_like.beton" -o "$WORK/local" -q)"
kill "$HTTP_PID"; wait "$HTTP_PID" 2>/dev/null || true
start_http "$port3" --fail-first 1000
expect_status 5 "$SLIP" convert "http://127.0.0.1:$port3/shards/shard-000000.tar" --retries 2 --retry-delay 0.05 -o "$WORK/x"
grep -q "HTTP 503" "$WORK/err" || fail "the persistent 503 is not named"
pass "transient 503s retried; persistent ones exit 5"

# Connection refused (no server): retried, then exit 5.
expect_status 5 "$SLIP" convert "http://127.0.0.1:$(free_port)/a.tar" --retries 1 --retry-delay 0.05 -o "$WORK/x"
pass "connection refused: exit 5 ($(tail -1 "$WORK/err"))"

# HTTPS: a self-signed certificate for 127.0.0.1, trusted through CURL_CA_BUNDLE.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
port4=$(free_port)
start_http "$port4" --tls "$WORK/cert.pem" "$WORK/key.pem"
remote=$(CURL_CA_BUNDLE=$WORK/cert.pem "$SLIP" convert "https://127.0.0.1:$port4/ffcv/imagenet_like.beton" -o "$WORK/tls" -q)
same_cache "$remote" "$("$SLIP" convert "$www/ffcv/imagenet_like.beton" -o "$WORK/local" -q)"
expect_status 4 env -u CURL_CA_BUNDLE "$SLIP" convert "https://127.0.0.1:$port4/ffcv/imagenet_like.beton" --download-dir "$WORK/dl-tls" -o "$WORK/x"
grep -qi "certificate" "$WORK/err" || { cat "$WORK/err"; fail "an unverifiable certificate is not named"; }
pass "https:// with a CA bundle; an unverifiable certificate fails at once ($(tail -1 "$WORK/err" | head -c 140))"

# A dry run of a remote source sends no request and says what it would fetch, secrets redacted.
: > "$WORK/http.log"
"$SLIP" convert "https://user:pw@127.0.0.1:$port4/ffcv/imagenet_like.beton?sig=x" --dry-run --json > "$WORK/dry.json"
[ ! -s "$WORK/http.log" ] || fail "a dry run made requests"
[ "$(json_get "$WORK/dry.json" "['sources'][0]")" = "https://127.0.0.1:$port4/ffcv/imagenet_like.beton" ] || fail "the dry run did not redact the URI"
! grep -q "pw" "$WORK/dry.json" || fail "the dry run printed a password"
pass "a remote dry run fetches nothing and redacts the URI"

# A server that stops sending after 300 kB of every response without hanging up: each stall
# times out (--stall-timeout), each retry resumes where the last stopped, and the download
# completes to the identical cache.
port5=$(free_port)
: > "$WORK/http.log"
start_http "$port5" --stall-after 300000
remote=$("$SLIP" convert "http://127.0.0.1:$port5/shards/shard-000000.tar" --layout imagefolder --stall-timeout 1 --retries 5 \
  --retry-delay 0.05 -o "$WORK/stall" 2> "$WORK/stall.err") || { cat "$WORK/stall.err"; fail "convert did not get through the stalls"; }
same_cache "$remote" "$("$SLIP" convert "$www/shards/shard-000000.tar" --layout imagefolder -o "$WORK/local" -q)"
grep -q "stalled transfer" "$WORK/stall.err" || { cat "$WORK/stall.err"; fail "the stalls were not reported"; }
stalls=$($PY -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get("stalled")))' "$WORK/http.log")
[ "$stalls" -ge 2 ] || fail "expected at least 2 stalled responses, saw $stalls"
pass "$stalls stalled responses timed out and were resumed; the cache is identical"
