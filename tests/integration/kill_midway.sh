#!/usr/bin/env bash
# A convert killed with SIGKILL halfway leaves nothing `ls` shows as complete or `verify`
# accepts; SIGINT exits 130 and removes its temporary directory; the next run completes.
source "$(dirname "$0")/common.bash"
out=$WORK/o
mkdir -p "$out"
# A source big enough to be caught halfway: the corpus's class folders linked until they hold
# 4,800 images (6 times the corpus; 120 times examples/sample without the reference data).
BIG=$WORK/big
mkdir -p "$BIG"
images=$(find "$CORPUS" -type f | wc -l)
for k in $(seq 1 $(((4800 + images - 1) / images))); do for c in "$CORPUS"/*/; do ln -s "$c" "$BIG/$(basename "$c")_$k"; done; done
# How long an uninterrupted convert takes here, then SIGKILL at fractions of that time.
t0=$(date +%s%N)
"$SLIP" convert "$BIG" -o "$WORK/timing" -j 1 >/dev/null
full_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "an uninterrupted convert takes ${full_ms} ms"
# wait_for_temp PID: until convert PID's temporary directory exists in $out (an event, not a
# time: a kill after a fixed fraction of the calibrated run could land before it on a loaded
# machine). The polls are a hang guard; the conversion takes seconds after it appears.
wait_for_temp() {
  for _ in $(seq 6000); do
    ls -A "$out" | grep -q "tmp-$1-" && return 0
    kill -0 "$1" 2>/dev/null || fail "convert $1 ended before its temporary directory was seen"
    sleep 0.01
  done
  fail "convert $1 made no temporary directory"
}

# A staging directory whose files are all written (a run killed between its last fsync and the
# rename) is still not a cache: verify rejects it by its name, abandoned or in progress.
timing_cache=$(ls -d "$WORK"/timing/*/ | first_lines 1)
staged=$WORK/staged/.$(basename "$timing_cache").tmp-99999-0badf00d
mkdir -p "$WORK/staged" && cp -r "$timing_cache" "$staged"
expect_status 0 "$SLIP" verify "$timing_cache"
expect_status 1 "$SLIP" verify "$staged"
grep -q "a temporary directory of an interrupted run, not a cache" "$WORK/out" || fail "verify of an abandoned staging directory: $(cat "$WORK/out")"
expect_status 1 "$SLIP" verify "$staged/"
grep -q "^FAIL \.$(basename "$timing_cache")\.tmp-99999-0badf00d: a temporary directory" "$WORK/out" || fail "verify DIR/ names: $(cat "$WORK/out")"
# No other command takes it for a cache either.
for cmd in info cat; do
  status=0; "$SLIP" $cmd "$staged" $([ $cmd = cat ] && echo 0) >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" -ne 0 ] && grep -q "a temporary directory of an interrupted run, not a cache" "$WORK/err" ||
    fail "slip $cmd of a staging directory: exit $status: $(cat "$WORK/err")"
done
exec {lock_fd}>"$staged.lock"
flock -n "$lock_fd"  # this shell is now the run in progress
expect_status 1 "$SLIP" verify "$staged" --json
grep -q "a temporary directory of a run in progress, not a cache" "$WORK/out" || fail "verify of a staging directory in progress: $(cat "$WORK/out")"
exec {lock_fd}>&-
pass "verify rejects a complete staging directory, abandoned or in progress"

caught=0
for pct in 3 8 13 18 23 28 33 38 43 48 53 58 63 68 73 78 83 88 93 98; do  # 20 points
  rm -rf "$out" && mkdir -p "$out"
  "$SLIP" convert "$BIG" -o "$out" -j 1 >/dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v ms="$full_ms" -v p="$pct" 'BEGIN{printf "%.3f", ms*p/100000}')"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  expect_status 0 "$SLIP" ls "$out" --json
  # Either the kill came before the rename (nothing complete, leftovers rejected by verify)
  # or after it (a complete cache, which must then verify clean).
  complete=$($PY -c "import json; d=json.load(open('$WORK/out')); print(sum(c['complete'] for c in d['caches']))")
  for d in "$out"/.* "$out"/*; do
    case "$(basename "$d")" in .|..) continue ;; esac
    [ -d "$d" ] || continue
    if [ "$complete" = 1 ] && [ "${d#"$out"/.}" = "$d" ]; then
      expect_status 0 "$SLIP" verify "$d"
    else
      expect_status 1 "$SLIP" verify "$d"
      caught=$((caught + 1))
    fi
  done
  [ "$complete" = 0 ] && [ -z "$(ls -A "$out")" ] && caught=$((caught + 1))  # killed before the temp dir
  echo "ok: SIGKILL at ${pct}%: complete caches: $complete"
done
[ "$caught" -gt 0 ] || fail "no SIGKILL landed midway (convert too fast?)"
pass "SIGKILL midway $caught times: nothing complete, verify rejects the leftovers"

rm -rf "$out" && mkdir -p "$out"
"$SLIP" convert "$BIG" -o "$out" -j 1 >/dev/null 2>"$WORK/int-err" &
pid=$!
wait_for_temp "$pid"
kill -INT "$pid"
status=0; wait "$pid" || status=$?
[ "$status" -eq 130 ] || fail "SIGINT exit status $status, want 130"
[ -z "$(ls -A "$out" | grep -v '^\.big-.*\.tmp-' || true)" ] || fail "SIGINT left a cache"
ls -A "$out" | grep -q "tmp-$pid" && fail "SIGINT left its temporary directory"
pass "SIGINT: exit 130, temporary directory removed"

# Leave an abandoned temporary directory behind, then convert for real.
"$SLIP" convert "$BIG" -o "$out" -j 1 >/dev/null 2>&1 &
pid=$!
wait_for_temp "$pid"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
ls -A "$out" | grep -q "^\.big-.*\.tmp-$pid-[0-9a-f]*\$" || fail "the SIGKILLed convert left no temporary directory"
expect_status 0 "$SLIP" ls "$out"
grep -qE " abandoned +interrupted conversion" "$WORK/out" || fail "ls does not show the abandoned directory"
expect_status 0 "$SLIP" convert "$BIG" -o "$out"
cache=$(tail -n1 "$WORK/out")
expect_status 0 "$SLIP" verify "$cache"
[ -z "$(ls -A "$out" | grep '^\.' || true)" ] || fail "stale temporary directories were not cleaned: $(ls -A "$out")"
pass "next run completes and cleans the abandoned temporaries"

# A merge killed with SIGKILL: nothing complete (or a complete cache that verifies), and the
# next merge completes.
parts=$WORK/parts
for i in 0 1; do "$SLIP" convert "$BIG" -o "$parts" --shard "$i/2" -q >/dev/null; done
workdir=$(ls -d "$parts"/*.parts)
t0=$(date +%s%N)
"$SLIP" merge --from "$workdir" -o "$WORK/mtiming" -q >/dev/null
merge_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "an uninterrupted merge takes ${merge_ms} ms"
for pct in 10 30 50 70 90; do
  rm -rf "$WORK/m" && mkdir -p "$WORK/m"
  "$SLIP" merge --from "$workdir" -o "$WORK/m" -q >/dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v ms="$merge_ms" -v p="$pct" 'BEGIN{printf "%.3f", ms*p/100000}')"
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  for d in "$WORK"/m/.* "$WORK"/m/*; do
    case "$(basename "$d")" in .|..) continue ;; esac
    [ -d "$d" ] || continue
    if [ "${d#"$WORK"/m/.}" = "$d" ]; then expect_status 0 "$SLIP" verify "$d"; else expect_status 1 "$SLIP" verify "$d"; fi
  done
  expect_status 0 "$SLIP" merge --from "$workdir" -o "$WORK/m"
  expect_status 0 "$SLIP" verify "$(tail -n1 "$WORK/out")"
done
pass "merge SIGKILLed at 5 points: no partial cache accepted; the next merge completes"
