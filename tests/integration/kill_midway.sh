#!/usr/bin/env bash
# A convert killed with SIGKILL halfway leaves nothing `ls` shows as complete or `verify`
# accepts; SIGINT exits 130 and removes its temporary directory; the next run completes.
source "$(dirname "$0")/common.bash"
out=$WORK/o
mkdir -p "$out"
for delay in 0.3 0.8; do
  "$SLIP" convert "$CORPUS" -o "$out" --force -j 1 >/dev/null 2>&1 &
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

"$SLIP" convert "$CORPUS" -o "$out" -j 1 >/dev/null 2>"$WORK/int-err" &
pid=$!
sleep 0.5
kill -INT "$pid"
status=0; wait "$pid" || status=$?
[ "$status" -eq 130 ] || fail "SIGINT exit status $status, want 130"
[ -z "$(ls -A "$out" | grep -v '^\.imagenet_like-.*\.tmp-' || true)" ] || fail "SIGINT left a cache"
ls -A "$out" | grep -q "tmp-$pid" && fail "SIGINT left its temporary directory"
pass "SIGINT: exit 130, temporary directory removed"

expect_status 0 "$SLIP" convert "$CORPUS" -o "$out"
cache=$(tail -n1 "$WORK/out")
expect_status 0 "$SLIP" verify "$cache"
[ -z "$(ls -A "$out" | grep '^\.' || true)" ] || fail "stale temporary directories were not cleaned: $(ls -A "$out")"
pass "next run completes and cleans the abandoned temporaries"
