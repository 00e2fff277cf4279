#!/usr/bin/env bash
# Terminal safety: names and text from sources, caches and the command line never reach the
# terminal raw. ESC sequences (clear screen, window title, CSI via C1), newlines that would
# fake a "slip: info:" line, and invalid UTF-8 are escaped in every error, warning and
# human-readable output; --json stays exact JSON; each warning is printed once; the cache path
# printed last on stdout is one line even when the source's name holds a newline.
source "$(dirname "$0")/common.bash"
img=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1p)
ESC=$'\e'
no_raw_controls() {  # no_raw_controls FILE WHAT: no ESC, BEL, CR or C1 CSI byte in FILE
  if LC_ALL=C grep -qP '[\x07\x0d\x1b\x9b]' "$1"; then od -c "$1" | head; fail "$2: raw control characters in output"; fi
}

# 1. Tar members whose names carry ESC sequences and a newline: warnings escaped, once each.
stage=$WORK/stage && mkdir -p "$stage"
cp "$img" "$stage/a.jpg" && echo 1 > "$stage/a.cls"
$PY - "$stage" "$WORK/hostile.tar" <<'PY'
import sys, tarfile, io
stage, out = sys.argv[1:3]
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as t:
    t.add(f"{stage}/a.jpg", "a.jpg"); t.add(f"{stage}/a.cls", "a.cls")
    for name in ["\x1b]0;owned\x07\x1b[2J", "x\nslip: info: all good"]:   # no extension: skipped with a warning
        data = b"x"; ti = tarfile.TarInfo(name); ti.size = 1; t.addfile(ti, io.BytesIO(data))
    ti = tarfile.TarInfo("link\x1b[31m.jpg"); ti.type = tarfile.SYMTYPE; ti.linkname = "/etc/passwd"; t.addfile(ti)
PY
expect_status 0 "$SLIP" convert "$WORK/hostile.tar" -o "$WORK/o1"
no_raw_controls "$WORK/err" "tar warnings"
grep -q 'x\\nslip: info: all good' "$WORK/err" || { cat "$WORK/err"; fail "newline in a member name not shown as \\n"; }
grep -q '\\x1b\]0;owned\\x07\\x1b\[2J' "$WORK/err" || { cat "$WORK/err"; fail "ESC sequence not shown escaped"; }
[ "$(grep -c '^slip: info: all good' "$WORK/err")" -eq 0 ] || fail "a member name faked a log line"
[ "$(grep -c 'symlink skipped' "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "the symlink warning is not printed exactly once"; }
[ "$(grep -c 'no extension' "$WORK/err")" -eq 2 ] || { cat "$WORK/err"; fail "each no-extension warning not printed exactly once"; }
pass "tar member names with ESC/newline are escaped; each warning once"

# 2. A source directory whose name holds a newline and ESC: the last stdout line is the path,
#    and the default cache name is a safe file name.
src="$WORK/data"$'\n'"set${ESC}[2J"
mkdir -p "$src/a" && cp "$img" "$src/a/"
expect_status 0 "$SLIP" convert "$src" -o "$WORK/o2"
[ "$(wc -l < "$WORK/out")" -eq 1 ] || { od -c "$WORK/out"; fail "cache path is not one line"; }
path=$(tail -1 "$WORK/out")
[ -f "$path/manifest.json" ] || fail "last stdout line is not the cache: $path"
case "$(basename "$path")" in data_set_\[2J-*.slipstream) ;; *) fail "unsafe default name: $(basename "$path" | od -c)";; esac
no_raw_controls "$WORK/err" "convert of a dir with ESC in its name"
# The provenance keeps the real path; info escapes it, --json keeps it exact.
expect_status 0 "$SLIP" info "$path"
no_raw_controls "$WORK/out" "info"
grep -q 'data\\nset\\x1b\[2J' "$WORK/out" || { cat "$WORK/out"; fail "info does not show the escaped source path"; }
expect_status 0 "$SLIP" info "$path" --json
$PY - "$WORK/out" "$src" <<'PY' || fail "info --json is not the exact path"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["provenance"]["source"]["uri"] == sys.argv[2], d["provenance"]
PY
expect_status 0 "$SLIP" ls "$WORK/o2"
no_raw_controls "$WORK/out" "ls"
pass "a source name with newline/ESC gives a one-line safe cache path; info/ls escape, --json exact"

# 3. Errors name hostile paths escaped, on one line.
expect_status 4 "$SLIP" convert "$WORK/no${ESC}]0;x${ESC}\\such"$'\n'"dir" -o "$WORK/o3"
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "error is not one line"; }
no_raw_controls "$WORK/err" "error for a hostile path"
expect_status 2 "$SLIP" convert "$src" -o "$WORK/o3" --name "x${ESC}[2J"
no_raw_controls "$WORK/err" "invalid --name"
grep -q 'invalid cache name "x\\x1b\[2J"' "$WORK/err" || { cat "$WORK/err"; fail "--name not shown escaped"; }
pass "errors escape hostile paths and names"

# 4. cat of a str field holding ESC: raw into a pipe, escaped on a terminal.
printf '1' > "$stage/b.cls"; cp "$img" "$stage/b.jpg"; printf 'hi\e[2J\e]0;t\a' > "$stage/b.txt"; printf 'x' > "$stage/a.txt"
(cd "$stage" && tar cf "$WORK/txt.tar" a.jpg a.cls a.txt b.jpg b.cls b.txt)
cache=$("$SLIP" convert "$WORK/txt.tar" -o "$WORK/o4" -q)
"$SLIP" cat "$cache" 1 --field txt > "$WORK/raw"
printf 'hi\e[2J\e]0;t\a\n' | cmp - "$WORK/raw" || fail "cat into a pipe is not the exact value"
if command -v script >/dev/null; then
  script -qec "$SLIP cat $cache 1 --field txt" /dev/null > "$WORK/tty.log"
  no_raw_controls <(tr -d '\r' < "$WORK/tty.log") "cat to a terminal"
  grep -q 'hi\\x1b\[2J\\x1b\]0;t\\x07' "$WORK/tty.log" || { od -c "$WORK/tty.log"; fail "cat to a terminal not escaped"; }
  pass "cat: exact into a pipe, escaped on a terminal"
else
  echo "skip: script(1) not installed; cat-to-terminal case not run"
fi
