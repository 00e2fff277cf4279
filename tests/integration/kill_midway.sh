#!/usr/bin/env bash
# A convert killed with SIGKILL halfway leaves nothing `ls` shows as complete or `verify`
# accepts; SIGINT exits 130 and removes its temporary directory; the next run completes.
source "$(dirname "$0")/common.bash"
out=$WORK/o
mkdir -p "$out"
# A source big enough to be caught halfway: the corpus's class folders linked 6 times.
BIG=$WORK/big
mkdir -p "$BIG"
for k in 1 2 3 4 5 6; do for c in "$CORPUS"/*/; do ln -s "$c" "$BIG/$(basename "$c")_$k"; done; done
for delay in 0.2 0.6; do
  "$SLIP" convert "$BIG" -o "$out" --force -j 1 >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  expect_status 0 "$SLIP" ls "$out" --json
  $PY -c "import json; d=json.load(open('$WORK/out')); assert not any(c['complete'] for c in d['caches']), d" ||
    fail "ls shows a complete cache after SIGKILL at ${delay}s"
  for d in "$out"/.* "$out"/*; do
    case "$(basename "$d")" in .|..) continue ;; esac
    [ -d "$d" ] || continue
    expect_status 1 "$SLIP" verify "$d"
  done
  pass "SIGKILL after ${delay}s: nothing complete, verify rejects the leftovers"
done

"$SLIP" convert "$BIG" -o "$out" -j 1 >/dev/null 2>"$WORK/int-err" &
pid=$!
sleep 0.5
kill -INT "$pid"
status=0; wait "$pid" || status=$?
[ "$status" -eq 130 ] || fail "SIGINT exit status $status, want 130"
[ -z "$(ls -A "$out" | grep -v '^\.big-.*\.tmp-' || true)" ] || fail "SIGINT left a cache"
ls -A "$out" | grep -q "tmp-$pid" && fail "SIGINT left its temporary directory"
pass "SIGINT: exit 130, temporary directory removed"

expect_status 0 "$SLIP" convert "$BIG" -o "$out"
cache=$(tail -n1 "$WORK/out")
expect_status 0 "$SLIP" verify "$cache"
[ -z "$(ls -A "$out" | grep '^\.' || true)" ] || fail "stale temporary directories were not cleaned: $(ls -A "$out")"
pass "next run completes and cleans the abandoned temporaries"
