#!/usr/bin/env bash
# Progress goes to stderr only on a terminal (or with --progress), never through a pipe or
# with -q / --no-progress; stdout stays clean for pipelines either way.
source "$(dirname "$0")/common.bash"
command -v script >/dev/null || { echo "skip: script(1) not installed"; exit 77; }
root=$SRC/examples/sample

# Under a pseudo-terminal: script(1) gives the command a tty for stdout and stderr.
script -qec "$SLIP convert $root -o $WORK/a" /dev/null > "$WORK/tty.log"
grep -aq "convert 40/40 (100%)" "$WORK/tty.log" || { cat -v "$WORK/tty.log"; fail "no progress on a terminal"; }
grep -aq "ETA" "$WORK/tty.log" || fail "progress shows no ETA"
script -qec "$SLIP convert $root -o $WORK/b -q" /dev/null > "$WORK/tty-q.log"
grep -aq "convert 40/40" "$WORK/tty-q.log" && fail "progress shown with -q"
script -qec "$SLIP convert $root -o $WORK/c --no-progress" /dev/null > "$WORK/tty-np.log"
grep -aq "convert 40/40" "$WORK/tty-np.log" && fail "progress shown with --no-progress"
cache=$(ls -d "$WORK"/a/*.slipstream)
script -qec "$SLIP verify $cache" /dev/null > "$WORK/tty-v.log"
grep -aq "verify payloads 40/40" "$WORK/tty-v.log" || { cat -v "$WORK/tty-v.log"; fail "no verify progress on a terminal"; }
pass "terminal: progress with count, rate and ETA; none with -q or --no-progress"

# Through pipes: no progress unless asked; stdout is exactly the cache path.
"$SLIP" convert "$root" -o "$WORK/d" 2>"$WORK/pipe.err" | cat > "$WORK/pipe.out"
grep -q "convert 40/40" "$WORK/pipe.err" && fail "progress shown through a pipe"
[ "$(wc -l < "$WORK/pipe.out")" -eq 1 ] && [ -d "$(cat "$WORK/pipe.out")" ] || fail "stdout is not just the cache path"
"$SLIP" convert "$root" -o "$WORK/e" --progress 2>"$WORK/forced.err" >/dev/null
grep -q "convert 40/40" "$WORK/forced.err" || fail "--progress did not force progress"
pass "pipe: no progress unless --progress; stdout clean"

# SIGPIPE: a reader that goes away early ends slip quietly.
for i in 1 2 3 4 5 6 7 8; do "$SLIP" convert "$root" -o "$WORK/many" --name "c$i" -q >/dev/null; done
status=0
"$SLIP" ls "$WORK/many" 2>"$WORK/sigpipe.err" | head -n1 >/dev/null || status=$?
[ ! -s "$WORK/sigpipe.err" ] || { cat "$WORK/sigpipe.err"; fail "slip ls | head -1 printed an error"; }
"$SLIP" order "$(cat "$WORK/pipe.out")" --seed 1 2>"$WORK/sigpipe2.err" | head -n1 >/dev/null || true
[ ! -s "$WORK/sigpipe2.err" ] || { cat "$WORK/sigpipe2.err"; fail "slip order | head -1 printed an error"; }
pass "closed stdout: quiet exit"

# verify --decode: every long phase has its own progress line, each reaching its total
# (before: the bar reached 100% for the payload pass, then decoding ran silently).
"$SLIP" verify "$(cat "$WORK/pipe.out")" --decode --progress 2>"$WORK/verify.err" >/dev/null
tr '\r' '\n' < "$WORK/verify.err" > "$WORK/verify.lines"
for phase in payloads checksums decode; do
  grep -q "^verify $phase [0-9]*/[0-9]* (100%)" "$WORK/verify.lines" || { cat "$WORK/verify.lines"; fail "verify --decode: no finished '$phase' progress"; }
done
pass "verify --decode: progress for payloads, checksums and decode"

# convert, --dry-run and the re-run check open the source first: the ImageFolder scan (class
# folders listed, then every image stat'ed) has its own progress lines, each reaching its total.
for run in "-o $WORK/scan1" "-o $WORK/scan1" "-o $WORK/scan2 --dry-run"; do
  "$SLIP" convert "$root" $run --progress 2>"$WORK/scan.err" >/dev/null
  tr '\r' '\n' < "$WORK/scan.err" > "$WORK/scan.lines"
  for phase in "scan 4/4" "fingerprint 40/40"; do
    grep -q "^$phase (100%)" "$WORK/scan.lines" || { cat "$WORK/scan.lines"; fail "convert $run: no finished '$phase' progress"; }
  done
done
pass "ImageFolder scan: progress for listing and fingerprinting (convert, re-run, --dry-run)"
