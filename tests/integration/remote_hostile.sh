#!/usr/bin/env bash
# Hostile remote servers: credentials never follow a redirect to another origin; user-info in a
# URL is never shown nor turned into a path; a listing whose continuation tokens cycle ends with
# an error; a server trickling bytes trips --min-speed; error bodies with escape sequences are
# shown escaped. Each within a hang guard (timeout), with one error line and its exit code.
source "$(dirname "$0")/common.bash"
start() {  # start NAME ARGS...: a hostile_server.py in the background; sets PORT_<NAME>
  local name=$1; shift
  $PY "$SRC/tests/servers/hostile_server.py" "$WORK/$name.port" --log "$WORK/$name.log" "$@" &
  echo $! >> "$WORK/pids"
  for i in $(seq 1200); do [ -s "$WORK/$name.port" ] && break; sleep 0.05; done  # a hang guard
  eval "PORT_$name=$(cat "$WORK/$name.port")"
}
trap 'kill $(cat "$WORK/pids" 2>/dev/null) 2>/dev/null; rm -rf "$WORK"' EXIT
start victim
start main --redirect-to "http://127.0.0.1:$PORT_victim"
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIsecret AWS_SESSION_TOKEN=SESSIONTOKENsecret AWS_REGION=us-east-1
common=(-o "$WORK/out-caches" --download-dir "$WORK/dl" --retries 0 --endpoint-url "http://127.0.0.1:$PORT_main")
no_secret() {  # no_secret WHAT: no credential or user-info in stderr/stdout or in any created path
  if grep -qE 'SESSIONTOKENsecret|wJalrXUtnFEMIsecret|s3cr3t' "$WORK/err" "$WORK/out"; then cat "$WORK/err"; fail "$1: a secret was printed"; fi
  if find "$WORK/dl" "$WORK/out-caches" 2>/dev/null | grep -q 's3cr3t'; then fail "$1: a path was named after a password"; fi
}

# 1. S3: a 307 to another origin with a session token: refused, the other origin sees nothing.
expect_status 4 timeout 300 "$SLIP" convert "s3://redir-bucket/x.tar" "${common[@]}"
grep -q "redirects to another origin" "$WORK/err" || { cat "$WORK/err"; fail "cross-origin redirect not refused"; }
no_secret "S3 redirect"
if [ -s "$WORK/victim.log" ] && grep -qiE '"(authorization|x-amz-security-token|x-amz-date)"' "$WORK/victim.log"; then
  cat "$WORK/victim.log"; fail "credentials reached the other origin"
fi
pass "S3 307 to another origin: refused, no credential header sent there"

# 2. HTTP user-info: a password holding '?' does not parse (never half-shown), a valid one is
#    never printed nor used for paths, nor sent across a redirect.
expect_status 2 timeout 300 "$SLIP" convert "http://alice:s3cr3t?x@127.0.0.1:$PORT_main/a.tar" "${common[@]}"
no_secret "user-info with '?'"
expect_status 4 timeout 300 "$SLIP" convert "http://alice:s3cr3t@127.0.0.1:$PORT_main/redir-http/a.tar" "${common[@]}"
no_secret "user-info + redirect"
if grep -qi '"authorization"' "$WORK/victim.log" 2>/dev/null; then fail "user-info credentials followed a redirect"; fi
pass "URL user-info: never shown, never a path, never sent to another origin"

# 3. A listing whose tokens cycle: an error, not an endless listing.
expect_status 3 timeout 300 "$SLIP" convert "s3://cycle-bucket/shards/" "${common[@]}"
grep -q "repeated a continuation token" "$WORK/err" || { cat "$WORK/err"; fail "cyclic listing not detected"; }
pass "S3 listing with cycling continuation tokens: refused"

# 3b. A listing that repeats one page of keys under ever new tokens: refused on the second page
#     (keys come in order), not after --max-list-keys of repeats (10,001 requests before).
: > "$WORK/main.log"
expect_status 3 timeout 300 "$SLIP" convert "s3://repeat-bucket/shards/" "${common[@]}"
grep -q 'key "shards/a.tar" on page 2 is not after "shards/c.tar"' "$WORK/err" || { cat "$WORK/err"; fail "repeated listing page not detected"; }
lists=$(grep -c 'list-type' "$WORK/main.log" || true)
[ "$lists" -eq 2 ] || fail "a repeated listing page took $lists list requests (expected 2)"
pass "S3 listing repeating one page under new tokens: refused on its second page"

# 4. A body trickling 5 bytes/s: --min-speed trips within its window (curl's own check would not).
expect_status 5 timeout 300 "$SLIP" convert "http://127.0.0.1:$PORT_main/slow.tar" "${common[@]}" --min-speed 1000 --min-speed-time 2
grep -q "slower than 1000 bytes/s over 2 s" "$WORK/err" || { cat "$WORK/err"; fail "slow transfer not aborted"; }
pass "a trickling server trips --min-speed"

# 5. Error bodies with escape sequences and newlines are shown escaped, on one line.
expect_status 4 timeout 300 "$SLIP" convert "http://127.0.0.1:$PORT_main/esc.tar" "${common[@]}"
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "error body broke the line"; }
if LC_ALL=C grep -qP '[\x07\x1b]' "$WORK/err"; then fail "raw escape sequence from a server printed"; fi
pass "server error text escaped"

# 6. A download that passes the file-size limit (ulimit -f, as a full disk would: EFBIG / ENOSPC)
#    mid-body: exit 4 naming the file, the partial download removed (before: SIGXFSZ, exit 153,
#    and with it ignored a junk .part kept for a resume that would fail the same way).
expect_status 4 timeout 60 bash -c 'ulimit -f 1024; exec "$@"' _ "$SLIP" convert "http://127.0.0.1:$PORT_main/endless-close.tar" "${common[@]}"
grep -q "cannot write the download: File too large" "$WORK/err" || { cat "$WORK/err"; fail "EFBIG during a download not reported"; }
if find "$WORK/dl" -name 'endless-close.tar.part*' | grep -q .; then find "$WORK/dl" -name 'endless-close*'; fail "a partial download was left after EFBIG"; fi
pass "a download past the file-size limit: exit 4, no .part left"
