#!/usr/bin/env bash
# Two (or four) `convert --force` runs of one source at once: every one succeeds (the last
# publication wins, atomically), and the cache left is complete and verifies.
source "$(dirname "$0")/common.bash"

first=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/out" -q)
for round in 1 2 3 4 5; do
  pids=()
  for k in 1 2 3 4; do
    "$SLIP" convert "$SRC/examples/sample" -o "$WORK/out" -q --force >"$WORK/o$k" 2>"$WORK/e$k" &
    pids+=($!)
  done
  for k in 1 2 3 4; do
    rc=0
    wait "${pids[$((k - 1))]}" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$WORK/e$k"; fail "round $round: concurrent --force run $k exited $rc"; }
    [ "$(cat "$WORK/o$k")" = "$first" ] || fail "round $round: run $k printed $(cat "$WORK/o$k")"
  done
done
"$SLIP" verify "$first" -q >/dev/null || fail "the cache left does not verify"
[ "$(ls -A "$WORK/out" | grep -vc '^\.')" -eq 1 ] || { ls -la "$WORK/out"; fail "leftovers beside the cache"; }
pass "4 concurrent --force conversions, 5 rounds: all succeed, one complete cache left"
