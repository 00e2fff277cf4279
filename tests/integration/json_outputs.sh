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
