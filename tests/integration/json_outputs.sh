#!/usr/bin/env bash
# Every command's --json is one parseable object with the keys docs/JSON.md documents.
source "$(dirname "$0")/common.bash"
check() {  # check KEYS... < json
  $PY -c '
import json, sys
lines = sys.stdin.read().splitlines()
assert len(lines) == 1, f"{len(lines)} lines on stdout"
d = json.loads(lines[0])
missing = [k for k in ["schema", "command"] + sys.argv[1:] if k not in d]
assert not missing, f"missing keys {missing}"
assert d["schema"] == 1
' "$@"
}
root=$SRC/examples/sample
"$SLIP" convert "$root" -o "$WORK/c" --json | check path content_id reused source_samples written skipped transcoded bytes seconds ledger || fail convert
cache=$("$SLIP" convert "$root" -o "$WORK/c")
"$SLIP" convert "$root" -o "$WORK/c" --dry-run --json | check dry_run path content_id exists source fields samples || fail "convert --dry-run"
"$SLIP" verify "$cache" --json | check path ok samples slip_written checksums_present payloads_checked checksums_checked bytes_hashed issue_count issues notes seconds || fail verify
"$SLIP" info "$cache" --json | check path samples bytes fields provenance ledger indexes || fail info
"$SLIP" ls "$WORK/c" --json | check dir caches || fail ls
"$SLIP" index "$cache" --field label --json | check path indexes || fail index
"$SLIP" subset "$cache" --values 0 --json -o "$WORK/s" | check parent mode selected path content_id reused || fail subset
"$SLIP" subset "$cache" --values 0 --mode ids -o "$WORK/ids.npy" --json | check parent mode selected path || fail "subset ids"
"$SLIP" subset "$cache" --values 0 --dry-run --json -o "$WORK/s2" | check parent mode selected path dry_run || fail "subset --dry-run"
[ ! -e "$WORK/s2" ] || fail "subset --dry-run wrote something"
pass "--json of convert, convert --dry-run, verify, info, ls, index, subset"

# Every output docs/JSON.md documents has every top-level key its table lists (and is one
# object per line, each with schema and command).
doc=$WORK/doc-json && mkdir -p "$doc"
"$SLIP" convert "$root" -o "$WORK/c" --json > "$doc/convert"
"$SLIP" convert "$root" -o "$WORK/c" --dry-run --json > "$doc/convert --dry-run"
"$SLIP" convert https://example.invalid/shard-0.tar --dry-run --json > "$doc/convert --dry-run (remote source)"
"$SLIP" verify "$cache" --json > "$doc/verify"
"$SLIP" info "$cache" --json > "$doc/info"
"$SLIP" ls "$WORK/c" --json > "$doc/ls"
"$SLIP" convert "$WORK/no-such-source" -o "$WORK/c" --json > "$doc/convert (failure)" 2>/dev/null || true
"$SLIP" index "$cache" --field label --json > "$doc/index"
"$SLIP" subset "$cache" --values 1 --json -o "$WORK/s3" > "$doc/subset"
"$SLIP" subset "$cache" --values 1 --mode ids -o "$WORK/ids1.npy" --json > "$doc/subset --mode ids"
"$SLIP" subset "$cache" --values 1 --dry-run --json -o "$WORK/s4" > "$doc/subset --dry-run"
"$SLIP" convert "$root" -o "$WORK/sh" --shard 0/2 -q >/dev/null
"$SLIP" convert "$root" -o "$WORK/sh" --shard 1/2 -q >/dev/null
"$SLIP" cat "$cache" 3 -F label --json > "$doc/cat"
"$SLIP" order "$cache" --seed 1 --json > "$doc/order"
"$SLIP" merge --status "$WORK"/sh/*.parts --json > "$doc/merge --status"
"$SLIP" merge --from "$WORK"/sh/*.parts --json > "$doc/merge"
cp -r "$cache" "$WORK/y.slipstream"
"$SLIP" yuv420 "$WORK/y.slipstream" --json -q > "$doc/yuv420"
"$SLIP" stage "$cache" --to "$WORK/stage" --json > "$doc/stage"
"$SLIP" bench "$WORK/y.slipstream" -e 1 -b 4 --max-samples 8 --json > "$doc/bench"
"$SLIP" bench "$WORK/y.slipstream" -e 1 -b 4 --max-samples 8 --no-limit --compare siblings --json > "$doc/bench --compare"
$PY - "$SRC/docs/JSON.md" "$doc" <<'PY' || fail "docs/JSON.md and the --json outputs disagree"
import json, os, re, sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 3 and cells[0].startswith("`"):
        label = re.sub(r"`", "", cells[0])
        rows[label] = re.findall(r"`([a-z_0-9]+)`", cells[1])
produced = set(os.listdir(sys.argv[2]))
assert produced == set(rows), f"documented {sorted(rows)} vs tested {sorted(produced)}"
for label, keys in rows.items():
    lines = open(os.path.join(sys.argv[2], label)).read().splitlines()
    assert len(lines) == 1, f"{label}: {len(lines)} lines"
    d = json.loads(lines[0])
    missing = [k for k in ["schema", "command"] + keys if k not in d]
    assert not missing, f"{label}: documented keys missing: {missing}"
    assert d["command"] == label.split()[0], (label, d["command"])
print(f"ok: {len(rows)} documented outputs checked")
PY
grep -qE '^\| `bench`' "$SRC/docs/JSON.md" && grep -qE '^\| `yuv420`' "$SRC/docs/JSON.md" || fail "JSON.md lacks bench or yuv420"
pass "every --json output docs/JSON.md documents has its documented keys"

# cat and order: the values they print, as JSON (issue 45: they had no --json).
[ "$(json_get "$doc/cat" "['value']")" = "$("$SLIP" cat "$cache" 3 -F label)" ] || { cat "$doc/cat"; fail "cat --json value"; }
$PY - "$doc/order" <<PY || fail "order --json ids"
import json
d = json.loads(open("$doc/order").read())
assert d["ids"] == [int(x) for x in """$("$SLIP" order "$cache" --seed 1)""".split()], d
assert d["size"] == len(d["ids"]) == d["num_samples"] == 40, d
PY
"$SLIP" cat "$cache" 0 --json -o "$WORK/img.jpg" > "$WORK/cat.json"
cmp -s "$WORK/img.jpg" <("$SLIP" cat "$cache" 0 -o -) || fail "cat --json -o wrote other bytes"
[ "$(json_get "$WORK/cat.json" "['output']")" = "$WORK/img.jpg" ] || fail "cat --json -o: no output key"
[ "$(json_get "$WORK/cat.json" "['bytes']")" = "$(stat -c %s "$WORK/img.jpg")" ] || fail "cat --json -o: bytes"
expect_status 2 "$SLIP" cat "$cache" 0 --json
[ "$(json_get "$WORK/out" "['class']")" = usage ] || { cat "$WORK/out"; fail "cat --json of an image without -o: no usage error object"; }
"$SLIP" order "$cache" --seed 1 --format npy -o "$WORK/o.npy" --json > "$WORK/o.json"
[ "$(json_get "$WORK/o.json" "['output']")" = "$WORK/o.npy" ] && [ -s "$WORK/o.npy" ] || { cat "$WORK/o.json"; fail "order --json -o"; }
pass "cat --json (values; payloads with -o), order --json (ids streamed; -o FILE)"

# A command line that does not parse is an error object too when --json is among its words.
expect_status 2 "$SLIP" conver "$cache" --json
[ "$(json_get "$WORK/out" "['class']")" = usage ] && [ "$(json_get "$WORK/out" "['command']")" = None ] ||
  { cat "$WORK/out"; fail "slip conver X --json: no usage error object"; }
expect_status 2 "$SLIP" verify "$cache" --no-such-flag --json
[ "$(json_get "$WORK/out" "['command']")" = verify ] && [ "$(json_get "$WORK/out" "['exit_code']")" = 2 ] ||
  { cat "$WORK/out"; fail "verify --no-such-flag --json: no usage error object naming verify"; }
expect_status 2 "$SLIP" info --json
[ "$(json_get "$WORK/out" "['command']")" = info ] || { cat "$WORK/out"; fail "info --json without a cache: no error object"; }
expect_status 2 "$SLIP" conver "$cache"
[ ! -s "$WORK/out" ] || { cat "$WORK/out"; fail "a usage error without --json printed on stdout"; }
pass "usage errors under --json: one error object (command null for an unknown command)"
