#!/usr/bin/env bash
# Planning a remote conversion is linear in its shards and interruptible: 100,000 brace-range
# HTTP shards reach their first request within 5 s (a pairwise duplicate check took minutes), and
# SIGINT during planning or downloading ends convert promptly (exit 130), leaving no temp dir.
source "$(dirname "$0")/common.bash"
source "$(dirname "$0")/remote_common.bash"

port=$(free_port)
mkdir -p "$WORK/www"
# A server that logs when each request arrives and answers 404 (the convert fails at the first).
$PY - "$port" "$WORK/requests.log" <<'PY' &
import http.server, sys, time
log = open(sys.argv[2], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        log.write("%.3f %s\n" % (time.time(), self.path))
        self.send_error(404)
    do_HEAD = do_GET
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
PIDS+=($!)
wait_port "$port"
: >"$WORK/requests.log"

start=$($PY -c 'import time; print(time.time())')
expect_status 4 timeout 120 "$SLIP" convert "http://127.0.0.1:$port/s-{000000..099999}.tar" -o "$WORK/out" --download-dir "$WORK/dl" --retries 0
first=$(head -1 "$WORK/requests.log" | cut -d' ' -f1)
[ -n "$first" ] || fail "no request reached the server"
$PY -c "import sys; d=float(sys.argv[2])-float(sys.argv[1]); print('first request after %.2f s' % d); sys.exit(0 if d < 5 else 1)" "$start" "$first" ||
  fail "100,000 shards took too long to plan"
grep -q 's-000000.tar' "$WORK/requests.log" || fail "the first shard was not the first request"
pass "100,000 HTTP shards planned in under 5 s"

# SIGINT while a slow listing-free plan of 1,000,000 shards runs, or its downloads wait: prompt exit.
"$SLIP" convert "http://127.0.0.1:$port/s-{0000000..0999999}.tar" -o "$WORK/out2" --download-dir "$WORK/dl2" >"$WORK/o" 2>"$WORK/e" &
pid=$!
sleep 1
kill -INT "$pid"
t0=$(date +%s.%N)
rc=0
wait "$pid" || rc=$?
t1=$(date +%s.%N)
$PY -c "import sys; sys.exit(0 if float(sys.argv[2])-float(sys.argv[1]) < 3 else 1)" "$t0" "$t1" || fail "SIGINT took more than 3 s"
[ "$rc" -eq 130 ] || [ "$rc" -eq 4 ] || { cat "$WORK/e"; fail "SIGINT: exit $rc"; }
[ -z "$(ls -A "$WORK/out2" 2>/dev/null | grep -v '^$')" ] || { ls -la "$WORK/out2"; fail "left files in the output directory"; }
pass "SIGINT during a 1,000,000-shard conversion ends it within 3 s"
