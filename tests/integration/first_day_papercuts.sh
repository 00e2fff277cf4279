#!/usr/bin/env bash
# A first day's papercuts (issue 45), each checked as a user meets it: NO_COLOR= (empty) keeps
# colour (no-color.org: only a non-empty value turns it off); --help marks only repeatable options
# with "..."; `bench --layout` takes the Loader's spellings (NCHW, nhwc, CHW, ...); the first
# progress tick shows no rate; convert counts transcoded samples, not ledger entries; a subset is
# written beside its parent cache, not into ~/.slipstream.
source "$(dirname "$0")/common.bash"

# 1. Colour on a terminal: stderr is a pty here (a pipe never gets colour).
colour() {  # colour NO_COLOR-setting: prints "colour" or "plain" for an error line on a terminal
  $PY - "$SLIP" "$@" <<'PY'
import os, pty, subprocess, sys
env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
if len(sys.argv) > 2:
    env["NO_COLOR"] = sys.argv[2]
master, slave = pty.openpty()
subprocess.run([sys.argv[1], "info", "/nonexistent/cache"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
assert b"error" in out, out
print("colour" if b"\x1b[" in out else "plain")
PY
}
[ "$(colour)" = colour ] || fail "no colour on a terminal without NO_COLOR"
[ "$(colour "")" = colour ] || fail "NO_COLOR= (empty) turned colour off"
[ "$(colour 1)" = plain ] || fail "NO_COLOR=1 left colour on"
pass "NO_COLOR: only a non-empty value turns colour off"

# 2. "..." after an option's placeholder in --help only where the option takes several values:
# its help says "repeatable" or "comma-separated". (An entry's help may wrap onto the next lines.)
commands=$("$SLIP" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}')
for c in $commands; do
  "$SLIP" "$c" --help | awk '/^  +-/ {if (e) print e; e = $0; next} /^      / && e {e = e " " $0; next} {if (e) print e; e = ""} END {if (e) print e}' |
    grep -E '^ +(-[A-Za-z0-9], ?)?--[a-z0-9-]+ [^ ]+ \.\.\.' | grep -vE 'repeatable|comma-separated' >"$WORK/dots" || true
  [ ! -s "$WORK/dots" ] || { cat "$WORK/dots"; fail "slip $c --help shows single-valued options as repeatable"; }
done
"$SLIP" convert --help | grep -E -- '--(fingerprint|jobs|io-depth|retries) ' | grep -qF '...' && fail "convert --help: --fingerprint/--jobs still show '...'"
"$SLIP" convert --help | grep -E -- '--field ' | grep -qF '...' || fail "convert --help: the repeatable --field lost its '...'"
# A single-valued setting given twice: the last wins, as before (no error).
"$SLIP" convert "$CORPUS" -o "$WORK/twice" --io-depth 4 --io-depth 8 -q --dry-run >/dev/null 2>&1 ||
  "$SLIP" convert "$CORPUS" -o "$WORK/twice" --io-depth 4 --io-depth 8 -q >/dev/null || fail "--io-depth given twice was refused"
pass "--help: '...' only on repeatable options"

# 3. Layout spellings: bench takes the Loader's (any case); nonsense is a usage error naming both.
cache=$("$SLIP" convert "$CORPUS" -o "$WORK/caches" -q)
for layout in hwc CHW NCHW nhwc; do
  "$SLIP" bench "$cache" --pipeline center --layout "$layout" --epochs 1 >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; fail "bench --layout $layout refused"; }
done
expect_status 2 "$SLIP" bench "$cache" --layout cwh
grep -q "hwc" "$WORK/err" && grep -q "nchw" "$WORK/err" || { cat "$WORK/err"; fail "bench --layout cwh: the error does not name the spellings"; }
pass "bench --layout: hwc/chw and NHWC/NCHW, any case"

# 4. Progress: no rate on a phase's first tick, and before a phase's last tick never one above 2x
# the items done (a rate needs half a second; the last tick is the whole phase's rate, so a short
# phase ends with one). --progress draws it on a pipe too.
"$SLIP" --progress convert "$CORPUS" -o "$WORK/progress" --non-jpeg keep >/dev/null 2>"$WORK/progress.err"
$PY - "$WORK/progress.err" <<'PY' || fail "progress ticks"
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
label = None
ticks = 0
for line in re.split(r"[\r\n]", text):
    m = re.match(r"(\S+) (\d+)(?:/(\d+) \(\s*\d+%\))?(?: (\d+)/s)?", line.strip())
    if not m or line.startswith("slip:"):
        continue
    ticks += 1
    done, total, rate = int(m.group(2)), m.group(3), m.group(4)
    if m.group(1) != label:
        assert rate is None, ("a rate on the first tick", line)
        label = m.group(1)
    elif rate is not None and not (total is not None and done >= int(total)):
        assert int(rate) <= 2 * done + 1, ("rate above 2x the items done", line)
assert ticks > 0, text
print("%d progress ticks checked" % ticks)
PY
pass "progress: no rate on the first tick"

# 5. convert's counts are samples: three samples, each with two PNG fields to transcode.
$PY - "$WORK/two.tar" "$CORPUS/$(corpus_png)" <<'PY'
import io, sys, tarfile
png = open(sys.argv[2], "rb").read()
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    for k in range(3):
        for ext, data in (("png", png), ("left.png", png), ("cls", b"%d" % k)):
            info = tarfile.TarInfo("s%03d.%s" % (k, ext)); info.size = len(data)
            t.addfile(info, io.BytesIO(data))
PY
"$SLIP" convert "$WORK/two.tar" -o "$WORK/two" --field left.png=image --non-jpeg transcode --json >"$WORK/two.json" 2>"$WORK/two.err" ||
  { cat "$WORK/two.err"; fail "converting two PNG fields per sample failed"; }
[ "$(json_get "$WORK/two.json" "['written']")" = 3 ] || { cat "$WORK/two.json"; fail "not 3 samples written"; }
[ "$(json_get "$WORK/two.json" "['transcoded']")" = 3 ] || { cat "$WORK/two.json"; fail "transcoded counts ledger entries, not samples"; }
[ "$(json_get "$WORK/two.json" "['ledger'].__len__()")" = 6 ] || { cat "$WORK/two.json"; fail "the ledger lost its entry per field"; }
"$SLIP" convert "$WORK/two.tar" -o "$WORK/two-b" --field left.png=image --non-jpeg transcode 2>&1 >/dev/null | grep -q "3 samples written, 0 skipped, 3 transcoded" ||
  fail "the summary line does not count samples"
pass "convert counts transcoded samples (3 of 3), the ledger an entry per field (6)"

# 6. A subset goes beside its parent cache (not into $HOME/.slipstream).
mkdir -p "$WORK/scratch" "$WORK/home"
cp -r "$cache" "$WORK/scratch/C"
name=$(basename "$(dirname "$(find "$CORPUS" -type f | sort | first_lines 1)")")
sub=$(env -u SLIPSTREAM_CACHE_DIR HOME="$WORK/home" "$SLIP" subset "$WORK/scratch/C/" --names "$name" -q)
[ "$(dirname "$sub")" = "$WORK/scratch" ] || fail "the subset went to $sub, not beside its parent in $WORK/scratch"
[ -f "$sub/manifest.json" ] || fail "no subset cache at $sub"
[ ! -e "$WORK/home/.slipstream" ] || fail "subset wrote into ~/.slipstream"
"$SLIP" subset --help | grep -q "beside the parent cache" || fail "subset --help does not say where the subset goes"
pass "subset: beside its parent ($sub)"
