#!/usr/bin/env bash
# The `slip bench` table of docs/PERFORMANCE.md: every pipeline on a cache of the corpus (800 images), 2
# threads, batch 256, 3 epochs (best epoch per run), each row run RUNS times (default 3); the
# efficiency reported is the minimum over the runs, each against the limit measured in its own
# run. Then the decode engine's goals (issue 23) against those minima, and whether any run was
# too noisy to judge (epochs more than 10% apart).
# 1-thread rows show the thread scaling. "(restarts)" rows run on the same corpus converted with
# --jpeg-restarts (docs/FORMAT.md#restart-markers), against the full decode of those images.
# Usage: bench/figures.sh [path/to/slip] [path/to/shared] [--write-readme]
#   --write-readme  also replaces the table between the bench-figures markers in docs/PERFORMANCE.md
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SLIP=${1:-$here/build/apps/slip/slip}
SHARED=${2:-$here/../shared}
WRITE_README=0
[ "${3:-}" = "--write-readme" ] && WRITE_README=1
RUNS=${RUNS:-3}
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$("$SLIP" convert "$SHARED/corpus/imagenet_like" -o "$work" -q)
# The same images re-encoded with restart markers (convert --jpeg-restarts): rows marked
# "(restarts)" run on it, each against the full decode of its own images.
restarts=$("$SLIP" convert "$SHARED/corpus/imagenet_like" -o "$work" -q --jpeg-restarts)
# Rows run on 2 threads; the "-j 1" rows show the thread scaling on the same images.
rows=(
  "-p raw" "-p decode" "-p center" "-p center --resample rgb" "-p center --no-crop-aware"
  "-p rrc" "-p rrc --resample rgb" "-p rrc --no-crop-aware" "-p direct-rrc"
  "-p multicrop" "-p multicrop --resample rgb" "-p multicrop --filter bicubic" "-p rrc --order shuffle"
  "-p decode -j 1" "-p rrc -j 1" "-p multicrop -j 1"
  "(restarts) -p decode" "(restarts) -p center" "(restarts) -p rrc" "(restarts) -p direct-rrc" "(restarts) -p multicrop"
  "(restarts) -p multicrop --filter bicubic" "(restarts) -p rrc -j 1"
)
: >"$work/runs.jsonl"
for run in $(seq "$RUNS"); do
  for args in "${rows[@]}"; do
    # shellcheck disable=SC2086 # the row's flags are words
    threads=(-j 2)
    [[ "$args" == *"-j "* ]] && threads=()
    target=$cache flags=$args
    [[ "$args" == "(restarts) "* ]] && target=$restarts flags=${args#"(restarts) "}
    "$SLIP" bench "$target" "${threads[@]}" -e 3 --json $flags |
      $PY -c 'import json, sys; d = json.load(sys.stdin); d["row"] = sys.argv[1]; d["run"] = int(sys.argv[2]); print(json.dumps(d))' "$args" "$run" \
        >>"$work/runs.jsonl"
  done
done
$PY - "$work/runs.jsonl" "$RUNS" "$(uname -m), $(nproc) CPUs" >"$work/table.md" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
n_runs, machine = int(sys.argv[2]), sys.argv[3]
order = []
by_row = {}
for d in runs:
    if d["row"] not in by_row:
        order.append(d["row"])
    by_row.setdefault(d["row"], []).append(d)
print("| pipeline | threads | img/s | MB/s | ms/batch | limit | efficiency (min of %d runs) | all runs |" % n_runs)
print("| --- | ---: | ---: | ---: | ---: | --- | ---: | --- |")
minima = {}
noisy = []
for row in order:
    ds = by_row[row]
    worst = min(ds, key=lambda d: d["efficiency"])
    e = max(worst["epochs"], key=lambda e: e["images_per_second"])
    l = worst["limit"]
    lim = ("%.0f MB/s memcpy" % l["megabytes_per_second"]) if l["kind"] == "memcpy" else \
          ("%.0f img/s (tjDecompress2 x %d)" % (l["images_per_second"], worst["threads"]))
    minima[row] = worst["efficiency"]
    marks = ["%.2f%s" % (d["efficiency"], "*" if d["noisy"] else "") for d in ds]
    noisy += [row for d in ds if d["noisy"]]
    label = row.replace(" -j 1", "")
    print("| %s | %d | %.0f | %.0f | %.1f | %s | %.2f | %s |" % (label, worst["threads"], e["images_per_second"], e["megabytes_per_second"],
                                                               e["ms_per_batch"], lim, worst["efficiency"], " ".join(marks)))
print()
kernels = sorted({d["kernels"] for d in runs if "kernels" in d})
print("%s%s; batch 256, best of 3 epochs per run; `*`: a run whose epochs were more than 10%% apart (noisy)." %
      (machine, "; planar kernels: " + ", ".join(kernels) if kernels else ""))
scaling = [(p, by_row.get("-p %s -j 1" % p), by_row.get("-p %s" % p)) for p in ("decode", "rrc", "multicrop")]
scaling.append(("rrc (restarts)", by_row.get("(restarts) -p rrc -j 1"), by_row.get("(restarts) -p rrc")))
parts = ["%s %.2fx" % (p, max(d["best_images_per_second"] for d in two) / max(d["best_images_per_second"] for d in one))
         for p, one, two in scaling if one and two]
if parts:
    print("Thread scaling, 2 threads over 1 (best runs): %s." % ", ".join(parts))
goals = [("-p decode", 0.95), ("-p center", 1.4), ("-p rrc", 1.6), ("-p direct-rrc", 1.6), ("-p multicrop", 1.0),
         ("-p multicrop --filter bicubic", 0.9)]
goals += [("(restarts) " + row, target) for row, target in goals]
print()
print("| goal (min over runs) | target | measured | met |")
print("| --- | ---: | ---: | --- |")
for row, target in goals:
    if row in minima:
        print("| %s | >= %.2f | %.2f | %s |" % (row, target, minima[row], "yes" if minima[row] >= target else "**no**"))
if noisy:
    print()
    print("Noisy runs (epochs more than 10%% apart), judge these rows with care: %s" % ", ".join(sorted(set(noisy))))
PY
cat "$work/table.md"
if [ "$WRITE_README" = 1 ]; then
  $PY - "$here/docs/PERFORMANCE.md" "$work/table.md" <<'PY'
import sys
readme, table = sys.argv[1], open(sys.argv[2]).read()
text = open(readme).read()
begin, end = "<!-- bench/figures.sh: begin -->\n", "<!-- bench/figures.sh: end -->\n"
a, b = text.index(begin) + len(begin), text.index(end)
open(readme, "w").write(text[:a] + table + text[b:])
PY
  echo "docs/PERFORMANCE.md: table replaced"
fi
