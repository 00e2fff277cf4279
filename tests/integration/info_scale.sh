#!/usr/bin/env bash
# `slip info` at ImageNet cardinalities: a label field with 1,000 classes and an id field with
# 200,000 distinct values. Histograms are exact (numpy's counts), built in linear memory;
# text output summarises any field over 50 values on one line (distinct, min, max, most
# frequent) instead of dropping it; --json carries the full histogram up to 100,000 values and
# says explicitly when it is truncated.
source "$(dirname "$0")/common.bash"
# Peak-RSS bounds are checked in normal builds only (sanitizers add shadow memory).
rss_limit() { [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] && echo 99999999 || echo "$1"; }
c=$WORK/scale.slipstream && mkdir -p "$c"
$PY - "$c" <<'PY'
import json, sys, numpy as np
d = sys.argv[1]; n = 200_000
rng = np.random.default_rng(7)
label = rng.integers(0, 1000, n).astype("<i8"); label[:5000] = 17   # one clear most-frequent class
ident = rng.permutation(n).astype("<i8") - 50_000                  # all distinct, negatives too
np.save(f"{d}/label.npy", label); np.save(f"{d}/ident.npy", ident)
fields = {k: {"type": "int", "num_samples": n} for k in ("label", "ident")}
sizes = {f: __import__("os").path.getsize(f"{d}/{f}") for f in ("label.npy", "ident.npy")}
json.dump({"version": 1, "num_samples": n, "fields": fields, "file_sizes": sizes}, open(f"{d}/manifest.json", "w"))
PY
expect_status 0 "$SLIP" info "$c" --json
$PY - "$WORK/out" "$c" <<'PY' || fail "info --json histograms"
import json, sys, numpy as np
d = json.load(open(sys.argv[1])); c = sys.argv[2]
f = {x["name"]: x for x in d["fields"]}
label = np.load(f"{c}/label.npy"); vals, counts = np.unique(label, return_counts=True)
L = f["label"]
assert L["distinct"] == len(vals) == 1000 and L["min"] == 0 and L["max"] == 999, L
assert L["histogram_truncated"] is False
assert L["histogram"] == {str(v): int(k) for v, k in zip(vals, counts)}
order = sorted(zip(vals.tolist(), counts.tolist()), key=lambda t: (-t[1], t[0]))[:10]
assert [tuple(x) for x in L["most_frequent"]] == order and order[0][0] == 17, (L["most_frequent"], order)
I = f["ident"]
assert I["distinct"] == 200_000 and I["min"] == -50_000 and I["max"] == 149_999, I
assert I["histogram_truncated"] is True and "histogram" not in I
assert len(I["most_frequent"]) == 10 and all(k == 1 for _, k in I["most_frequent"])
assert [v for v, _ in I["most_frequent"]] == list(range(-50_000, -49_990))
PY
pass "info --json: exact 1,000-class histogram, 200,000-value field summarised with truncated=true"
expect_status 0 "$SLIP" info "$c"
grep -q '^label: 1000 distinct values, min 0, max 999; most frequent: 17 (' "$WORK/out" || { cat "$WORK/out"; fail "no label summary line"; }
grep -q 'full histogram: slip info --json' "$WORK/out" || fail "text info does not say where the full histogram is"
grep -q '^ident: 200000 distinct values, min -50000, max 149999' "$WORK/out" || { cat "$WORK/out"; fail "no ident summary line"; }
[ "$(wc -l < "$WORK/out")" -lt 40 ] || fail "text info is $(wc -l < "$WORK/out") lines"
pass "text info: one summary line per high-cardinality field"

# slip index refuses a nearly unique field (one id list per sample) unless --force, before
# writing anything; a 1,000-class label field is indexed as usual.
expect_status 2 "$SLIP" index "$c" --field label --field ident
grep -q 'field "ident" has 200000 distinct values in 200000 samples.*--force' "$WORK/err" || { cat "$WORK/err"; fail "no near-unique refusal"; }
[ "$(wc -l < "$WORK/err")" -eq 1 ] || fail "refusal is not one line"
! ls "$c" | grep -q index || fail "an index was written before the refusal"
expect_status 0 "$SLIP" index "$c" --field label
[ -f "$c/label_index.npy" ] || fail "label index not written"
expect_status 0 "$SLIP" index "$c" --field ident --force
$PY -c "
import numpy as np, sys
d = np.load('$c/ident_index.npy', allow_pickle=True).item(); ident = np.load('$c/ident.npy')
assert len(d) == 200000 and all(d[int(v)].tolist() == [i] for i, v in list(enumerate(ident))[:1000])
" || fail "forced ident index wrong"
pass "index: nearly unique fields refused without --force; forced index correct"

# slip order streams: peak memory does not grow with the epoch (before: 8 bytes per sample for
# the ids plus the whole text or npy in memory).
$PY - "$WORK/big.slipstream" <<'PY'
import json, os, sys, numpy as np
d = sys.argv[1]; os.makedirs(d); n = 4_000_000
np.save(f"{d}/label.npy", np.zeros(n, dtype="<i8"))
json.dump({"version": 1, "num_samples": n, "fields": {"label": {"type": "int", "num_samples": n}},
           "file_sizes": {"label.npy": os.path.getsize(f"{d}/label.npy")}}, open(f"{d}/manifest.json", "w"))
PY
rss() { /usr/bin/time -f %M -o "$WORK/rss" "$@" > "$WORK/order.out"; tail -1 "$WORK/rss"; }
small=$(rss "$SLIP" order "$c" --seed 1 --format npy -o -)
for fmt in npy text; do
  big=$(rss "$SLIP" order "$WORK/big.slipstream" --seed 1 --format $fmt -o -)
  [ "$big" -lt "$(rss_limit $((small + 12000)))" ] || fail "order --format $fmt: peak RSS ${big} KiB for 4M samples (${small} KiB for 200k)"
done
[ "$(wc -l < "$WORK/order.out")" -eq 4000000 ] || fail "order text output has $(wc -l < "$WORK/order.out") lines"
[ "$(sort -n "$WORK/order.out" | uniq | wc -l)" -eq 4000000 ] || fail "order is not a permutation"
pass "order streams: 4M-sample epoch in ${big} KiB (200k: ${small} KiB), a permutation"
