#!/usr/bin/env bash
# Commands that rewrite one cache's manifest at the same time (issue 42): `slip yuv420` beside
# `slip index` runs of two fields, and `slip index` runs alone. Each holds the cache's lock while
# it reads the manifest, commits its files and replaces the manifest, so every run exits 0 and
# the manifest records every one (siblings, both indexes, all their checksums); verify, which
# fails on files no record accounts for, passes. Without the lock, `yuv420` (reading the
# manifest before its long conversion) wrote back a manifest without the indexes nearly every
# time. With it the result does not depend on how the runs interleave, so nothing here waits or
# measures time: several rounds on fresh copies, every one must come out whole.
source "$(dirname "$0")/common.bash"

base=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q)
"$SLIP" info "$base" --json >"$WORK/info.json"
# The int field to index and a str field (nearly unique: --force).
read -r int_field str_field < <($PY - "$WORK/info.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
types = {f["name"]: f["type"] for f in d["fields"]}
print(next(n for n, t in types.items() if t == "int"), next(n for n, t in types.items() if t == "str"))
PY
)
[ -n "$str_field" ] || fail "no int and str fields in $(cat "$WORK/info.json")"

check_records() {  # check_records CACHE WHAT...: the manifest records every WHAT (index:F, siblings:F)
  $PY - "$@" <<'PY' || fail "$1: a record is missing (see above)"
import json, os, sys
cache, wants = sys.argv[1], sys.argv[2:]
m = json.load(open(os.path.join(cache, "manifest.json")))
slip = m["slip"]
sums = slip["checksums"]["files"]
for want in wants:
    kind, field = want.split(":")
    if kind == "index":
        rec = slip.get("indexes", {}).get(field)
        assert rec, "no slip.indexes record for %s: %s" % (field, sorted(slip.get("indexes", {})))
        files = [rec["pickled"], rec["keys"], rec["offsets"], rec["ids"]]
    else:
        assert field in slip.get("yuv420_siblings", {}), "no slip.yuv420_siblings record for %s" % field
        files = [field + "_yuv420.bin", field + "_yuv420.meta.npy"]
    for f in files:
        assert f in sums, "no checksum recorded for %s" % f
        assert os.path.isfile(os.path.join(cache, f)), "%s recorded but missing" % f
PY
}

run_all() {  # run_all NAME CMD...; ... : starts every ";"-separated command at once, waits for each, fails on any non-zero exit
  local name=$1; shift
  local pids=() cmds=() cmd=() k=0 rc
  for arg in "$@" ";"; do
    if [ "$arg" = ";" ]; then
      [ ${#cmd[@]} -gt 0 ] || continue
      "${cmd[@]}" >"$WORK/$name.o$k" 2>"$WORK/$name.e$k" &
      pids+=($!)
      cmds+=("${cmd[*]}")
      cmd=()
      k=$((k + 1))
    else
      cmd+=("$arg")
    fi
  done
  for k in "${!pids[@]}"; do
    rc=0
    wait "${pids[$k]}" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$WORK/$name.e$k"; fail "$name: \`${cmds[$k]}\` exited $rc"; }
  done
}

rounds=4
for round in $(seq $rounds); do
  c=$WORK/r$round
  rm -rf "$c" && cp -r "$base" "$c"
  run_all "mixed$round" \
    "$SLIP" yuv420 "$c" -q ";" \
    "$SLIP" index "$c" -F "$int_field" ";" \
    "$SLIP" index "$c" -F "$str_field" --force ";" \
    "$SLIP" index "$c" -F "$int_field" ";" \
    "$SLIP" yuv420 "$c" -q --force ";" \
    "$SLIP" index "$c" -F "$str_field" --force
  check_records "$c" "index:$int_field" "index:$str_field" "siblings:image"
  expect_status 0 "$SLIP" verify "$c"
  [ -f "$c/manifest.json.lock" ] || fail "round $round: no lock file in the cache"
  if ls -A "$c" | grep -q '\.tmp-'; then ls -la "$c"; fail "round $round: temporaries left in the cache"; fi
done
pass "yuv420 (twice) and index of two fields (twice each) at once, $rounds rounds: every record kept, verify passes"

for round in $(seq $rounds); do
  c=$WORK/i$round
  rm -rf "$c" && cp -r "$base" "$c"
  args=()
  for k in 1 2 3 4; do args+=("$SLIP" index "$c" -F "$int_field" ";" "$SLIP" index "$c" -F "$str_field" --force ";"); done
  run_all "index$round" "${args[@]}"
  check_records "$c" "index:$int_field" "index:$str_field"
  expect_status 0 "$SLIP" verify "$c"
done
pass "8 concurrent index runs of two fields, $rounds rounds: both indexes recorded"

# The lock file is the cache's own: ls lists the cache as complete, with no temporaries.
expect_status 0 "$SLIP" ls "$WORK" --json
$PY - "$WORK/out" "$WORK/r1" <<'PY' || fail "ls of a cache with its lock file"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d if isinstance(d, list) else d.get("caches", d.get("entries", []))
row = next(r for r in rows if r.get("path", "").rstrip("/").endswith("/r1"))
assert row.get("state") == "complete" and not row.get("temporaries"), row
PY
pass "ls: a cache holding its lock file is complete, without temporaries"
