#!/usr/bin/env bash
# Planning a remote conversion is linear in its shards and interruptible. 100,000 brace-range
# HTTP shards (a pairwise duplicate check took minutes) cost at most 4x ten times the CPU of
# 10,000 (a quadratic plan costs 100x), and a server that answers no HEAD gets a handful of them,
# not one per shard; SIGINT while convert waits on the server ends it (exit 130), leaving no
# temp dir. No wall-clock bound: CPU times compared within the run, requests counted, and
# SIGINT sent once the server's log shows the request is held. (The wall-clock figures:
# bench/timing_figures.sh.)
source "$(dirname "$0")/common.bash"
source "$(dirname "$0")/remote_common.bash"

# serve PORT LOG MODE: a server that logs each request's path; MODE 404 answers 404 (the convert
# fails at the first GET), MODE hold never answers.
serve() {
  $PY - "$@" <<'PY' &
import http.server, sys, time
log = open(sys.argv[2], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        log.write("%s %s\n" % (self.command, self.path))
        if sys.argv[3] == "hold":
            time.sleep(3600)
        self.send_error(404)
    do_HEAD = do_GET
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
s.daemon_threads = True
s.serve_forever()
PY
  PIDS+=($!)
  wait_port "$1"
  : >"$2"
}

port=$(free_port)
serve "$port" "$WORK/requests.log" 404
small=$(cpu_seconds "$SLIP" convert "http://127.0.0.1:$port/s-{00000..09999}.tar" -o "$WORK/out" --download-dir "$WORK/dl" --retries 0)
grep -q "HTTP error 404\|404" "$WORK/err" || { cat "$WORK/err"; fail "10,000 shards: not the server's 404"; }
: >"$WORK/requests.log"
large=$(cpu_seconds "$SLIP" convert "http://127.0.0.1:$port/s-{000000..099999}.tar" -o "$WORK/out" --download-dir "$WORK/dl" --retries 0)
grep -q "404" "$WORK/err" || { cat "$WORK/err"; fail "100,000 shards: not the server's 404"; }
linear_ratio "planning 10,000 -> 100,000 HTTP shards" "$small" "$large" 10
[ -s "$WORK/requests.log" ] || fail "no request reached the server"
# The first shards are probed first (by several threads at once: in any order among themselves).
grep -q 's-000000.tar' "$WORK/requests.log" || { head -5 "$WORK/requests.log"; fail "the first shard was never requested"; }
# Each probing thread stops once any HEAD shows the shards must be downloaded first: at most two
# HEADs per thread and the one GET, wherever the threads are scheduled.
n=$(wc -l <"$WORK/requests.log")
[ "$n" -le 100 ] || fail "$n requests for 100,000 shards on a server that answers no HEAD (probing did not stop)"
pass "100,000 HTTP shards planned in linear CPU time, $n requests"

# SIGINT while a 1,000,000-shard conversion waits on a server that holds every request.
hport=$(free_port)
serve "$hport" "$WORK/held.log" hold
"$SLIP" convert "http://127.0.0.1:$hport/s-{0000000..0999999}.tar" -o "$WORK/out2" --download-dir "$WORK/dl2" >"$WORK/o" 2>"$WORK/e" &
pid=$!
# Wait for the event (a request held), not for a time; 6,000 polls are a hang guard only.
for _ in $(seq 6000); do [ -s "$WORK/held.log" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
[ -s "$WORK/held.log" ] || { cat "$WORK/e"; fail "no request reached the holding server"; }
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { cat "$WORK/e"; fail "SIGINT while a request was held: exit $rc, want 130"; }
[ -z "$(ls -A "$WORK/out2" 2>/dev/null)" ] || { ls -la "$WORK/out2"; fail "left files in the output directory"; }
[ -z "$(ls -A "$WORK/dl2" 2>/dev/null)" ] || { ls -la "$WORK/dl2"; fail "left files in the download directory"; }
pass "SIGINT during a 1,000,000-shard conversion waiting on the server: exit 130, nothing left"
