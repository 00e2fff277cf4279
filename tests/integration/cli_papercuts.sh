#!/usr/bin/env bash
# Small things a newcomer trips over (issue 38): convert prints an absolute cache path even for
# a relative -o; subset without -o writes where --help says ($SLIPSTREAM_CACHE_DIR); a field that
# does not exist is refused naming the fields there are (cat, index, subset).
source "$(dirname "$0")/common.bash"
cd "$WORK"

# A relative -o: the printed path (stdout's last line and --json's "path") is absolute and exists.
cache=$("$SLIP" convert "$SRC/examples/sample" -o rel-out -q)
case "$cache" in "$WORK"/rel-out/sample-????????.slipstream) ;; *) fail "convert -o rel-out printed '$cache', not an absolute path" ;; esac
[ -f "$cache/manifest.json" ] || fail "printed path $cache is not the cache"
(cd / && "$SLIP" verify "$cache" -q) || fail "the printed path does not work from another directory"
got=$("$SLIP" convert "$SRC/examples/sample" -o rel-out --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["path"])')
[ "$got" = "$cache" ] || fail "convert --json path '$got' is not '$cache'"
pass "convert -o RELATIVE prints the absolute cache path (text and --json)"

# subset without -o: the documented default, $SLIPSTREAM_CACHE_DIR (as --help and --dry-run say).
"$SLIP" subset --help | grep -q 'SLIPSTREAM_CACHE_DIR' || fail "subset --help does not name the default output"
planned=$("$SLIP" subset "$cache" --names n01440764,n02979186 --dry-run --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["path"])')
expect_status 0 "$SLIP" subset "$cache" --names n01440764,n02979186
sub=$(tail -n 1 "$WORK/out")
[ "$sub" = "$planned" ] || fail "subset wrote '$sub', --dry-run said '$planned'"
case "$sub" in "$SLIPSTREAM_CACHE_DIR"/sample-subset-????????.slipstream) ;; *) fail "subset without -o wrote '$sub', not under \$SLIPSTREAM_CACHE_DIR" ;; esac
[ "$("$SLIP" info "$sub" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" = 20 ] || fail "the subset does not hold the two classes' 20 samples"
pass "subset without -o writes the documented default (\$SLIPSTREAM_CACHE_DIR), where --dry-run said"

# An unknown field names the fields there are.
for cmd in "cat $cache 0 --field nope" "index $cache --field nope" "subset $cache --field nope --values 0"; do
  expect_status 2 "$SLIP" $cmd
  grep -q 'no field "nope" (its fields: image, label, index, path)' "$WORK/err" || { cat "$WORK/err"; fail "slip $cmd: the fields are not listed"; }
done
pass "cat/index/subset --field nope: exit 2 naming the fields (image, label, index, path)"

# --json on failure (docs/JSON.md "Failures"): the stderr line as before, the same exit status,
# and one error object on stdout naming the class, the exit code and what failed.
json_error() {  # json_error COMMAND STATUS CLASS PATH FILE-PATTERN: checks $WORK/out and $WORK/err
  grep -q '^slip: error: ' "$WORK/err" || { cat "$WORK/err"; fail "$1: no stderr line"; }
  $PY - "$WORK/out" "$@" <<'PY' || { cat "$WORK/out" "$WORK/err"; fail "$1 --json: the error object"; }
import json, re, sys
out, command, status, cls, path, file_re = sys.argv[1:7]
lines = open(out).read().splitlines()
assert len(lines) == 1, f"{len(lines)} lines on stdout"
d = json.loads(lines[0])
assert d["schema"] == 1 and d["command"] == command, d
assert d["exit_code"] == int(status) and d["class"] == cls, d
assert d["path"] == (path or d["file"]), (d["path"], path)
assert re.search(file_re, d["file"] or ""), (d["file"], file_re)
err = [l for l in open(out.replace("/out", "/err")).read().splitlines() if l.startswith("slip: error: ")]
assert err == ["slip: error: " + d["error"]], (err, d["error"])
assert set(d) == {"schema", "command", "path", "error", "class", "exit_code", "file", "sample", "offset"}, sorted(d)
PY
}
# A source that is not there (io), a source holding a broken image (bad input, the image named),
# a bad --shard (usage), a usage error CLI11 finds while parsing: statuses as without --json.
mkdir -p "$WORK/broken/cls"
cp $(find "$SRC/examples/sample" -name '*.JPEG' | LC_ALL=C sort | sed -n 2,4p) "$WORK/broken/cls/"
printf "This is a text file, not an image.\n" > "$WORK/broken/cls/not-an-image.JPEG"
for args in "convert $WORK/missing -o $WORK/o" "convert $WORK/broken -o $WORK/o" "convert $WORK/broken -o $WORK/o --shard 5/2" \
            "convert $WORK/broken -o $WORK/o --max-in-flight 12Q" "merge --from $WORK/missing" "merge --source $WORK/broken -o $WORK/o"; do
  plain=0; "$SLIP" $args > /dev/null 2>&1 || plain=$?
  [ "$plain" -ge 2 ] || fail "slip $args: exit $plain"
  expect_status "$plain" "$SLIP" $args --json
  case "$plain" in 2) cls=usage ;; 3) cls=bad_input ;; 4) cls=io ;; *) cls=? ;; esac
  first=$(echo $args | cut -d' ' -f2)
  case "$args" in convert*) subject=$first ;; *) subject= ;; esac
  file='.*'
  [ "$args" = "convert $WORK/broken -o $WORK/o" ] && file='not-an-image\.JPEG$'
  json_error "${args%% *}" "$plain" "$cls" "$subject" "$file"
done
# Commands working on one cache name it as the path; a parse error (no source) is one too.
for c in info verify index subset bench yuv420; do
  extra=; [ "$c" = index ] && extra="--field label"; [ "$c" = subset ] && extra="--values 1"
  expect_status 4 "$SLIP" $c "$WORK/no-cache" $extra --json
  json_error "$c" 4 io "$WORK/no-cache" '.*'
done
expect_status 2 "$SLIP" convert --json
json_error convert 2 usage "" '^$'
expect_status 0 "$SLIP" convert "$SRC/examples/sample" -o "$WORK/o" --json
! grep -q '"error"' "$WORK/out" || fail "a successful convert --json has an error key"
pass "--json failures: the error object on stdout (class, exit code, path, file), stderr line and status unchanged"

# info: a field whose every value is different (an index, an id) is one line, not a histogram
# of a line per sample; a few classes keep their histogram; long field names keep the columns.
expect_status 0 "$SLIP" info "$cache"
grep -qx 'index: 40 distinct values, min 0, max 39 (unique)' "$WORK/out" || { cat "$WORK/out"; fail "info: no one-line summary of the unique index field"; }
! grep -q '^index histogram' "$WORK/out" || fail "info prints the unique index field's histogram"
grep -q '^label histogram (4 values):' "$WORK/out" || { cat "$WORK/out"; fail "info: the 4-class label histogram is gone"; }
[ "$(wc -l < "$WORK/out")" -lt 40 ] || { cat "$WORK/out"; fail "info of 40 samples prints $(wc -l < "$WORK/out") lines"; }
# A tar source with a long field name (built here): an int field, unique, and a repeated one.
mkdir -p "$WORK/tarsrc"
i=0
for img in $(find "$SRC/examples/sample" -name '*.JPEG' | LC_ALL=C sort | sed -n 1,30p); do
  k=$(printf 's%03d' $i)
  cp "$img" "$WORK/tarsrc/$k.jpg"
  echo $((i % 3)) > "$WORK/tarsrc/$k.cls"
  echo $((1000 + i * 7)) > "$WORK/tarsrc/$k.acquisition_sequence_number"
  i=$((i + 1))
done
(cd "$WORK/tarsrc" && tar -cf "$WORK/long.tar" $(ls | LC_ALL=C sort))
long=$("$SLIP" convert "$WORK/long.tar" --field acquisition_sequence_number=int -o "$WORK/o" -q)
expect_status 0 "$SLIP" info "$long"
$PY - "$WORK/out" <<'PY' || { cat "$WORK/out"; fail "info: long field names break the columns"; }
import re, sys
text = open(sys.argv[1]).read()
rows = re.search(r"^fields:\n((?:  .*\n)+)", text, re.M).group(1).splitlines()
rows = [r for r in rows if not r.startswith("   ")]  # the image's width/height line
names = [r.split()[0] for r in rows]
assert "acquisition_sequence_number" in names, names
cols = {r.index(" " + r.split()[1] + " ", 2 + len(r.split()[0])) for r in rows}  # where the type column starts
assert len(cols) == 1, rows
assert re.search(r"^acquisition_sequence_number: 30 distinct values, min 1000, max 1203 \(unique\)$", text, re.M), text
assert re.search(r"^label histogram \(3 values\):$", text, re.M) or re.search(r"^cls histogram \(3 values\):$", text, re.M), text
PY
pass "info: unique fields are one line (N distinct values, min, max (unique)); columns fit the longest field name"
