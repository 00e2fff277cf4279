# Sourced by the remote-source tests: starting and stopping servers on 127.0.0.1.
SERVERS=$SRC/tests/servers
PIDS=()
cleanup_servers() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup_servers EXIT
[ -n "${KEEP_WORK:-}" ] && trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done' EXIT
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {  # wait_port PORT: until something accepts connections on it (a hang guard of 60 s+, not a speed bound)
  for _ in $(seq 600); do
    $PY -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "nothing listens on port $1"
}
# same_cache A B: every data file of two caches is byte-identical (the manifests name their
# sources, which differ by design).
same_cache() {
  local a=$1 b=$2 f n=0
  for f in "$a"/*; do
    case $(basename "$f") in manifest.json*) continue ;; esac
    cmp -s "$f" "$b/$(basename "$f")" || fail "$(basename "$f") differs between $a and $b"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || fail "no data files in $a"
  [ "$(ls "$a" | wc -l)" -eq "$(ls "$b" | wc -l)" ] || fail "$a and $b hold different files"
}
# class_shards DIR N: three tar shards (ImageFolder layout, GNU tar), shard-00000{0,1,2}.tar, each
# the first N images of one of the corpus's first three classes.
class_shards() {
  local i=0 c
  for c in $(cd "$CORPUS" && ls -d */ | first_lines 3 | tr -d /); do
    (cd "$CORPUS" && tar --format=gnu -cf "$1/shard-$(printf %06d $i).tar" $(ls -d "$c"/* | head -"$2"))
    i=$((i + 1))
  done
}

# convert_while_held OUT HELD CMD...: runs the conversion CMD (writing into OUT) in the
# background, its output in $WORK/stream.out and .err. OVERLAP=1 when its staging directory
# appeared while HELD, the local copy of a shard still downloading, was not on disk yet (which
# cannot happen when everything is downloaded before converting); STATUS is CMD's exit status.
convert_while_held() {
  local out=$1 held=$2 pid
  shift 2
  "$@" >"$WORK/stream.out" 2>"$WORK/stream.err" &
  pid=$!
  OVERLAP=0
  for _ in $(seq 1 400); do
    if compgen -G "$out/.*.tmp-*[0-9a-f]" >/dev/null; then
      [ ! -e "$held" ] && OVERLAP=1
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  STATUS=0
  wait "$pid" || STATUS=$?
}
# The stat fingerprint a cache's manifest records for its source.
fingerprint_of() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]+'/manifest.json'))['slip']['source']['fingerprint'])" "$1"; }
