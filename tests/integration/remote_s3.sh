#!/usr/bin/env bash
# Sources over s3:// from a real S3 implementation on 127.0.0.1: s3rver (npm, installed by
# .ci/run) behind tests/servers/s3_sigv4_gateway.py, which checks every Signature V4 with
# botocore (AWS's own signer) and caps ListObjectsV2 pages at 2 keys so listings paginate.
# LitData, tar shards (prefix, brace range, glob, odd key names) and FFCV convert to the same
# bytes as their local copies; a wrong secret gives the 403 at once (exit 4) and never shows
# the secret; a body that fails its MD5 (ETag) check is discarded, no cache; --no-sign-request works on a public bucket and is refused on a private one; a
# profile from a credentials file works; 503 SlowDown is retried.
source "$(dirname "$0")/common.bash"
need_shared "the FFCV and LitData fixtures served over S3"
source "$(dirname "$0")/remote_common.bash"

S3RVER=${SLIP_S3RVER:-${XDG_CACHE_HOME:-$HOME/.cache}/slip-test-tools/node_modules/.bin/s3rver}
if [ ! -x "$S3RVER" ]; then
  echo "SKIP: s3rver not installed (scripts/install-test-servers.sh installs it: npm ci from tests/servers/s3rver/package-lock.json)"
  exit 77
fi
$PY -c 'import botocore' 2>/dev/null || { echo "SKIP: python3-botocore missing"; exit 77; }

s3_port=$(free_port)
# s3rver encrypts its continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider.
NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$WORK/s3data" -a 127.0.0.1 -p "$s3_port" --configure-bucket data --configure-bucket public > "$WORK/s3rver.log" 2>&1 &
PIDS+=($!)
wait_port "$s3_port"
start_gateway() {  # start_gateway PORT [options...]
  local port=$1; shift
  $PY "$SERVERS/s3_sigv4_gateway.py" --upstream-port "$s3_port" --port "$port" --credentials AKIASLIPTEST:s3cr3t-k3y-do-not-print \
    --credentials AKIAPROFILE:profile-secret --public public --max-keys 2 --log "$WORK/gw.log" "$@" &
  PIDS+=($!)
  wait_port "$port"
}
gw=$(free_port)
start_gateway "$gw"

# Stage: LitData fixture, three tar shards (one with an awkward key), an FFCV file.
stage=$WORK/stage && mkdir -p "$stage"
class_shards "$stage" 12
upload() {  # upload FILE BUCKET KEY: an anonymous PUT straight to s3rver
  $PY - "$1" "http://127.0.0.1:$s3_port/$2/$3" <<'PY'
import sys, urllib.parse, urllib.request
path, url = sys.argv[1], sys.argv[2]
scheme, netloc, p, q, f = urllib.parse.urlsplit(url)
req = urllib.request.Request(urllib.parse.urlunsplit((scheme, netloc, urllib.parse.quote(p), q, f)), data=open(path, "rb").read(), method="PUT")
assert urllib.request.urlopen(req).status == 200
PY
}
litdata_sets=$(cd "$SLIP_SHARED_DIR/fixtures/litdata" && ls -d */ | tr -d /)
for ds in $litdata_sets; do
  for f in "$SLIP_SHARED_DIR/fixtures/litdata/$ds"/*; do upload "$f" data "litdata/$ds/$(basename "$f")"; done
done
for f in "$stage"/shard-*.tar; do upload "$f" data "shards/$(basename "$f")"; upload "$f" public "shards/$(basename "$f")"; done
upload "$stage/shard-000001.tar" data "odd dir/été+1 (copy)/shard-000001.tar"
upload "$SLIP_SHARED_DIR/fixtures/ffcv/imagenet_like.beton" data "ffcv/imagenet_like.beton"

export AWS_ACCESS_KEY_ID=AKIASLIPTEST AWS_SECRET_ACCESS_KEY=s3cr3t-k3y-do-not-print AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$gw
unset AWS_PROFILE AWS_SESSION_TOKEN
export AWS_SHARED_CREDENTIALS_FILE=$WORK/no-credentials-file

# LitData from s3:// equals the local conversion (and so the fixture's expected values, which
# tests/unit/litdata_test.cpp checks for the local one).
for ds in $litdata_sets; do
  remote=$("$SLIP" convert "s3://data/litdata/$ds" -o "$WORK/remote" -q)
  same_cache "$remote" "$("$SLIP" convert "$SLIP_SHARED_DIR/fixtures/litdata/$ds" -o "$WORK/local" -q)"
  grep -q "\"uri\": \"s3://data/litdata/$ds\"" "$remote/manifest.json" || fail "the manifest does not name the s3 URI"
done
grep -q 'continuation-token' "$WORK/gw.log" || fail "the listing did not paginate"
! grep -q '"status": 403' "$WORK/gw.log" || fail "a signed request was refused"
pass "every LitData fixture ($(echo $litdata_sets)) from s3:// (listing paginated, every signature checked by botocore) equals the local conversion"

# Tar shards: a prefix, a brace range and a glob give the same cache as the local shards.
local=$("$SLIP" convert "$stage"/shard-00000{0,1,2}.tar --layout imagefolder -o "$WORK/local" -q)
source_of() { $PY -c "import json,sys; s=json.load(open(sys.argv[1]+'/manifest.json'))['slip']['source']; print(s['uri'], *s.get('uris', []))" "$1"; }
for uri in "s3://data/shards/" "s3://data/shards/shard-{000000..000002}.tar" "s3://data/shards/*.tar"; do
  remote=$("$SLIP" convert "$uri" --layout imagefolder --jobs 3 -o "$WORK/remote-$RANDOM" -q)
  same_cache "$remote" "$local"
  # The manifest names what was given, never the download directory.
  case "$uri" in
    *'{'*) want="3 tar shards (s3://data/shards/shard-000000.tar .. s3://data/shards/shard-000002.tar) s3://data/shards/shard-000000.tar s3://data/shards/shard-000001.tar s3://data/shards/shard-000002.tar" ;;
    *) want=$uri ;;
  esac
  [ "$(source_of "$remote")" = "$want" ] || fail "the manifest of $uri names: $(source_of "$remote")"
done
pass "tar shards from an s3 prefix, a brace range and a glob equal the local conversion"

# WebDataset shards listed with their sizes and times convert while later shards download: with
# the last shard held back, the conversion is under way (its staging directory exists) before
# that shard is on disk. The result equals the local conversion, and its content id is the one
# the downloaded files give (the listing's sizes and times are theirs).
gw4=$(free_port)
start_gateway "$gw4" --hold shard-000002 --hold-seconds 4
convert_while_held "$WORK/stream" "$WORK/dl4/s3/data/shards/shard-000002.tar" \
  env AWS_ENDPOINT_URL=http://127.0.0.1:$gw4 "$SLIP" -v convert s3://data/shards/ --download-dir "$WORK/dl4" -o "$WORK/stream"
[ "$STATUS" -eq 0 ] || { cat "$WORK/stream.err"; fail "streamed conversion exited $STATUS"; }
[ "$OVERLAP" = 1 ] || fail "the conversion did not start before the last shard was downloaded"
grep -q "while converting" "$WORK/stream.err" || fail "no 'fetched ... while converting' line"
streamed=$(tail -n1 "$WORK/stream.out")
local_wds=$("$SLIP" convert "$stage"/shard-00000{0,1,2}.tar -o "$WORK/local-wds" -q)
same_cache "$streamed" "$local_wds"
[ "$(source_of "$streamed")" = "s3://data/shards/" ] || fail "the streamed manifest names: $(source_of "$streamed")"
downloaded=$("$SLIP" convert "$WORK"/dl4/s3/data/shards/shard-00000{0,1,2}.tar -o "$WORK/local-dl" -q)
[ "$(fingerprint_of "$streamed")" = "$(fingerprint_of "$downloaded")" ] || fail "streamed fingerprint $(fingerprint_of "$streamed") differs from the downloaded files' $(fingerprint_of "$downloaded")"
# Run again: the cache is found after the first shard (the schema's); no other shard is fetched.
: >"$WORK/gw.log"
again=$("$SLIP" convert s3://data/shards/ --download-dir "$WORK/dl4" -o "$WORK/stream" -q)
[ "$again" = "$streamed" ] || fail "the second run made $again, not $streamed"
! grep -q 'shard-00000[12]' "$WORK/gw.log" || fail "the second run fetched more than the first shard: $(grep shard "$WORK/gw.log")"
# A job-array task fetches the first shard (the schema) and its own slice, no other shard.
part=$("$SLIP" convert s3://data/shards/ --shard 2/3 --download-dir "$WORK/dl7" -o "$WORK/parts7" -q)
expect_status 0 "$SLIP" verify "$part"
got=$(cd "$WORK/dl7/s3/data/shards" && ls shard-*.tar | tr '\n' ' ')
[ "$got" = "shard-000000.tar shard-000002.tar " ] || fail "--shard 2/3 fetched: $got"
pass "shards convert while later ones download ($(grep -o 'fetched.*while converting' "$WORK/stream.err")); same bytes and content id as downloading first"

# A streamed shard that fails its check fails the conversion (exit 5, no cache); SIGINT while a
# shard is still downloading stops at once (exit 130), not when the download ends.
gw5=$(free_port)
start_gateway "$gw5" --corrupt shard-000002
expect_status 5 env AWS_ENDPOINT_URL=http://127.0.0.1:$gw5 "$SLIP" convert s3://data/shards/ --retries 1 --retry-delay 0.05 \
  --download-dir "$WORK/dl5" -o "$WORK/corrupt-stream"
grep -q "MD5" "$WORK/err" || { cat "$WORK/err"; fail "the streamed checksum mismatch is not named"; }
[ -z "$(ls -A "$WORK/corrupt-stream" 2>/dev/null)" ] || fail "a streamed corrupt shard left $(ls -A "$WORK/corrupt-stream")"
gw6=$(free_port)
start_gateway "$gw6" --hold shard-000002 --hold-seconds 120
AWS_ENDPOINT_URL=http://127.0.0.1:$gw6 "$SLIP" convert s3://data/shards/ --download-dir "$WORK/dl6" -o "$WORK/int" >/dev/null 2>&1 &
pid=$!
# Wait for the event (the conversion under way), not a time; 6,000 polls are a hang guard only.
for _ in $(seq 1 6000); do compgen -G "$WORK/int/.*.tmp-*[0-9a-f]" >/dev/null && break; sleep 0.05; done
compgen -G "$WORK/int/.*.tmp-*[0-9a-f]" >/dev/null || fail "the conversion never started writing"
kill -INT "$pid"
status=0; wait "$pid" || status=$?
[ "$status" -eq 130 ] || fail "SIGINT during a streamed download: exit $status, want 130"
# The gateway logs the held GET only once it has answered it: logged already means slip waited.
! grep '"held"' "$WORK/gw.log" | grep -q shard-000002 || fail "SIGINT waited for the held download"
[ -z "$(ls -A "$WORK/int")" ] || fail "SIGINT left $(ls -A "$WORK/int")"
pass "a corrupt streamed shard fails the conversion (exit 5); SIGINT mid-download exits 130 at once, nothing left"

# An object key that needs encoding (space, UTF-8, '+', parentheses) signs and downloads.
remote=$("$SLIP" convert "s3://data/odd dir/été+1 (copy)/shard-000001.tar" --layout imagefolder -o "$WORK/odd" -q)
same_cache "$remote" "$("$SLIP" convert "$stage/shard-000001.tar" --layout imagefolder -o "$WORK/local" -q)"
pass "an awkward key (space, UTF-8, +, parentheses) is signed and fetched"

# FFCV from s3://, and a second run reuses the downloads without fetching any object again.
remote=$("$SLIP" convert s3://data/ffcv/imagenet_like.beton -o "$WORK/remote" -q)
same_cache "$remote" "$("$SLIP" convert "$SLIP_SHARED_DIR/fixtures/ffcv/imagenet_like.beton" -o "$WORK/local" -q)"
: > "$WORK/gw.log"
"$SLIP" convert s3://data/ffcv/imagenet_like.beton -o "$WORK/again" 2> "$WORK/again.err" > /dev/null
grep -q "1 reused" "$WORK/again.err" || { cat "$WORK/again.err"; fail "the download was not reused"; }
! grep -q '"path": "/data/ffcv/imagenet_like.beton"' "$WORK/gw.log" || fail "the object was fetched again"
pass "FFCV from s3:// equals the local conversion; the next run only lists"

# A wrong secret: 403 at once, exit 4, named; the secret never printed (not even with -v).
expect_status 4 env AWS_SECRET_ACCESS_KEY=wrong-secret-value "$SLIP" -v convert s3://data/shards/ --json -o "$WORK/x"
grep -q "403" "$WORK/err" && grep -q "SignatureDoesNotMatch" "$WORK/err" && grep -q "s3://data/shards/" "$WORK/err" ||
  { cat "$WORK/err"; fail "the 403 is not explained"; }
! grep -q "wrong-secret-value" "$WORK/err" "$WORK/out" || fail "the secret was printed"
[ "$(grep -c '"status": 403' "$WORK/gw.log")" -eq 1 ] || fail "a 403 was retried"
pass "wrong secret: $(grep -o 'listing failed.*' "$WORK/err" | head -c 120)"
expect_status 4 env AWS_ACCESS_KEY_ID=AKIAUNKNOWN "$SLIP" convert s3://data/shards/ -o "$WORK/x"
grep -q "InvalidAccessKeyId" "$WORK/err" || fail "an unknown key is not explained"
! grep -q "s3cr3t" "$WORK/err" || fail "the secret was printed"

# The region is part of what is signed: a wrong one is refused at once, named.
expect_status 4 env AWS_REGION=eu-west-1 "$SLIP" convert s3://data/shards/ -o "$WORK/x"
grep -q "AuthorizationHeaderMalformed" "$WORK/err" && grep -q "eu-west-1" "$WORK/err" || { cat "$WORK/err"; fail "a wrong region is not explained"; }

# No credentials at all: a usage error that says what to do.
expect_status 2 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$SLIP" convert s3://data/shards/ -o "$WORK/x"
grep -q -- "--no-sign-request" "$WORK/err" || fail "the missing-credentials error gives no hint"

# Public bucket: anonymous requests work; on a private bucket they are refused.
remote=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$SLIP" convert s3://public/shards/ --no-sign-request --layout imagefolder -o "$WORK/pub" -q)
same_cache "$remote" "$local"
grep -q '"auth": "anonymous"' "$WORK/gw.log" || fail "the requests were not anonymous"
expect_status 4 "$SLIP" convert s3://data/shards/ --no-sign-request -o "$WORK/x"
grep -q "AccessDenied" "$WORK/err" || fail "anonymous access to a private bucket not refused"
pass "--no-sign-request reads a public bucket; a private one answers 403 AccessDenied"

# A profile from a shared credentials file.
printf '[default]\naws_access_key_id = AKIANOPE\naws_secret_access_key = nope\n[slip]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profile-secret\n' > "$WORK/credentials"
remote=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$WORK/credentials" AWS_PROFILE=slip \
  "$SLIP" convert s3://data/ffcv/imagenet_like.beton -o "$WORK/prof" --force -q)
[ -f "$remote/manifest.json" ] || fail "profile credentials did not work"
pass "credentials from AWS_PROFILE in a shared credentials file"

# Throttling: the first answers are 503 SlowDown, retried with backoff until they pass.
gw2=$(free_port)
start_gateway "$gw2" --fail-first 3
remote=$(AWS_ENDPOINT_URL=http://127.0.0.1:$gw2 "$SLIP" convert s3://data/shards/shard-000000.tar --layout imagefolder --retry-delay 0.05 \
  --download-dir "$WORK/dl2" -o "$WORK/slow" -q)
same_cache "$remote" "$("$SLIP" convert "$stage/shard-000000.tar" --layout imagefolder -o "$WORK/local" -q)"
pass "503 SlowDown is retried"

# A body whose MD5 does not match its ETag is discarded, retried, and never converted.
gw3=$(free_port)
start_gateway "$gw3" --corrupt shard-000002
expect_status 5 env AWS_ENDPOINT_URL=http://127.0.0.1:$gw3 "$SLIP" convert s3://data/shards/shard-000002.tar --layout imagefolder --retries 1 \
  --retry-delay 0.05 --download-dir "$WORK/dl3" -o "$WORK/corrupt"
grep -q "MD5" "$WORK/err" || { cat "$WORK/err"; fail "the checksum mismatch is not named"; }
[ ! -e "$WORK/corrupt" ] || [ -z "$(ls "$WORK/corrupt")" ] || fail "a cache was made from a corrupt download"
[ -z "$(find "$WORK/dl3" -name 'shard-000002.tar*' ! -name '*.lock')" ] || fail "corrupt bytes were kept"
pass "a download failing its MD5/ETag check is discarded: $(grep -o 'the MD5.*' "$WORK/err" | head -c 90)"
