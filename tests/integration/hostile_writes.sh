#!/usr/bin/env bash
# Files slip writes never follow a link it did not make (issue 36): a `.part`, a lock or a
# directory planted as a symbolic link in a shared --download-dir, and outputs of `cat -o`,
# `order -o`, `subset --mode ids -o` and `man -o` that are links, are refused (exit 4) and the
# links' targets are untouched. A directory of the download tree owned by another user is
# refused too (only checked when running as root, which can make one).
source "$(dirname "$0")/common.bash"
source "$(dirname "$0")/remote_common.bash"

www=$WORK/www && mkdir -p "$www"
class_shards "$www" 3
port=$(free_port)
$PY "$SERVERS/http_server.py" "$www" --port "$port" --log "$WORK/http.log" &
PIDS+=($!)
wait_port "$port"
url=http://127.0.0.1:$port/shard-000000.tar
host_dir=http/127.0.0.1_$port

victim=$WORK/victim.txt
reset_victim() { printf 'precious\n' > "$victim"; }
victim_intact() { [ "$(cat "$victim")" = precious ] || fail "$1: the link's target was overwritten"; }

# 1. A `.part` planted as a link to the victim's file: refused, the victim intact.
dl=$WORK/dl1 && mkdir -p "$dl/$host_dir"
reset_victim
ln -s "$victim" "$dl/$host_dir/shard-000000.tar.part"
expect_status 4 timeout -k 5 300 "$SLIP" convert "$url" --download-dir "$dl" -o "$WORK/caches" --retries 0
victim_intact ".part link"
grep -q "symbolic link" "$WORK/err" || { cat "$WORK/err"; fail "the refusal does not name the link"; }
pass "a .part planted as a link is refused, its target untouched"

# 2. A lock file planted as a link to a file that does not exist yet: never created.
dl=$WORK/dl2 && mkdir -p "$dl/$host_dir"
ln -s "$WORK/made-by-lock" "$dl/$host_dir/shard-000000.tar.lock"
expect_status 4 timeout -k 5 300 "$SLIP" convert "$url" --download-dir "$dl" -o "$WORK/caches" --retries 0
[ ! -e "$WORK/made-by-lock" ] || fail "the lock link's target was created"
pass "a lock planted as a link is refused, nothing created at its target"

# 3. A directory of the download tree planted as a link elsewhere: nothing written there.
dl=$WORK/dl3 && mkdir -p "$dl" "$WORK/elsewhere"
ln -s "$WORK/elsewhere" "$dl/http"
expect_status 4 timeout -k 5 300 "$SLIP" convert "$url" --download-dir "$dl" -o "$WORK/caches" --retries 0
[ -z "$(ls -A "$WORK/elsewhere")" ] || { ls -laR "$WORK/elsewhere"; fail "files were written through a directory link"; }
pass "a directory planted as a link in the download tree is refused"

# 4. A directory of the download tree owned by another user (as root only: needs chown).
if [ "$(id -u)" = 0 ]; then
  dl=$WORK/dl4 && mkdir -p "$dl/http"
  chown 12345 "$dl/http"
  expect_status 4 timeout -k 5 300 "$SLIP" convert "$url" --download-dir "$dl" -o "$WORK/caches" --retries 0
  grep -q "owned by another user" "$WORK/err" || { cat "$WORK/err"; fail "another user's directory was used"; }
  pass "a download directory owned by another user is refused"
fi

# The same download with a clean directory works (the checks refuse only what was planted).
cache=$("$SLIP" convert "$url" --layout imagefolder --download-dir "$WORK/dl-clean" -o "$WORK/caches" -q --retries 0)
[ -f "$cache/manifest.json" ] || fail "a clean download did not convert"
pass "a clean download directory converts"

# 5. Outputs the user named that are links: refused, the target intact.
for cmd in "cat $cache 0" "order $cache" "subset $cache --values 0 --mode ids"; do
  reset_victim
  rm -f "$WORK/link-out" && ln -s "$victim" "$WORK/link-out"
  expect_status 4 "$SLIP" $cmd -o "$WORK/link-out"
  victim_intact "$cmd -o LINK"
  grep -q "symbolic link" "$WORK/err" || { cat "$WORK/err"; fail "$cmd: the refusal does not name the link"; }
done
mkdir -p "$WORK/man/man1" && reset_victim && ln -s "$victim" "$WORK/man/man1/slip.1"
expect_status 4 "$SLIP" man -o "$WORK/man"
victim_intact "man -o DIR with a planted slip.1"
pass "cat/order/subset/man outputs that are links are refused"

# Outputs to a regular file, /dev/null and a FIFO with a reader still work.
"$SLIP" order "$cache" -o "$WORK/order.txt" && [ -s "$WORK/order.txt" ] || fail "order -o FILE wrote nothing"
"$SLIP" order "$cache" -o /dev/null || fail "order -o /dev/null failed"
mkfifo "$WORK/fifo"
cat "$WORK/fifo" > "$WORK/from-fifo" &
timeout 300 "$SLIP" order "$cache" -o "$WORK/fifo" || fail "order -o FIFO failed"
wait $!
cmp -s "$WORK/from-fifo" "$WORK/order.txt" || fail "order through a FIFO differs"
pass "outputs to a file, /dev/null and a FIFO still work"
