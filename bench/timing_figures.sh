#!/usr/bin/env bash
# Wall-clock figures the test suite no longer asserts (tests compare counts and CPU-time ratios;
# a loaded machine must not fail them): how long 100,000 and 1,000,000 brace-range HTTP shards
# take to reach their first request, how soon SIGINT ends a conversion planning 1,000,000 shards,
# and how long `info`/`verify` take on a manifest of 200,000 keys. Prints one line per figure.
# (The slow-file-system speed-up of --io-depth: bench/convert_figures.sh (b).)
# Usage: bench/timing_figures.sh [path/to/slip]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
PY=/usr/bin/python3
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
now() { date +%s.%N; }
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$PY - "$port" "$work/requests.log" <<'PY' &
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
server=$!
for _ in $(seq 600); do $PY -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' "$port" 2>/dev/null && break; sleep 0.1; done

for range in 000000..099999 0000000..0999999; do
  : >"$work/requests.log"
  start=$(now)
  "$SLIP" convert "http://127.0.0.1:$port/s-{$range}.tar" -o "$work/out" --download-dir "$work/dl" --retries 0 >/dev/null 2>&1 || true
  first=$(head -1 "$work/requests.log" | cut -d' ' -f1)
  printf 'remote planning, %s shards: first request after %.2f s, %d requests\n' "$range" "$(echo "$first - $start" | bc -l)" "$(wc -l <"$work/requests.log")"
done

"$SLIP" convert "http://127.0.0.1:$port/s-{0000000..0999999}.tar" -o "$work/out2" --download-dir "$work/dl2" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
t0=$(now)
wait "$pid" || true
printf 'SIGINT 1 s into a 1,000,000-shard conversion: exit after %.2f s\n' "$(echo "$(now) - $t0" | bc -l)"

mkdir -p "$work/keys.slipstream"
$PY - "$work/keys.slipstream" <<'PY'
import json, os, sys
json.dump({"version": 1, "num_samples": 0, "fields": {}, "extra": {"k%d" % i: i for i in range(200000)}},
          open(os.path.join(sys.argv[1], "manifest.json"), "w"))
PY
for cmd in info verify; do
  t0=$(now)
  "$SLIP" "$cmd" "$work/keys.slipstream" >/dev/null 2>&1 || true
  printf '%s, manifest of 200,000 keys: %.2f s\n' "$cmd" "$(echo "$(now) - $t0" | bc -l)"
done
