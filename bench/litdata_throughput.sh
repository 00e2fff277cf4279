#!/usr/bin/env bash
# LitData convert throughput vs reading the chunk files, on a LitData dataset built here from
# the corpus (jpeg, int, str leaves; ~64 MB chunks, as litdata.optimize(chunk_bytes="64MB")
# cuts them), uncompressed and zstd-compressed. Both rates are measured in the same run on
# warm page cache; the ratio is what matters (figures, not a test).
# Usage: bench/litdata_throughput.sh [build/apps/slip/slip] [repeat=6]
set -euo pipefail
SLIP=$(realpath "${1:-build/apps/slip/slip}")
REPEAT=${2:-6}
SHARED=${SLIP_SHARED_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
PY=${SLIP_PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/slip-litdata-bench-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

$PY - "$SHARED/corpus/imagenet_like" "$WORK/ds" "$REPEAT" <<'PY'
import json, os, struct, sys
root, out, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out)
classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
files = [(os.path.join(root, c, f), i, f"{c}/{f}") for i, c in enumerate(classes) for f in sorted(os.listdir(os.path.join(root, c)))]
target = 64 << 20
chunks, items = [], []
def flush():
    if not items:
        return
    name = f"chunk-0-{len(chunks)}.bin"
    n = len(items)
    offsets, pos = [], 4 + 4 * (n + 1)
    for it in items:
        offsets.append(pos)
        pos += len(it)
    offsets.append(pos)
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<I", n) + struct.pack(f"<{n + 1}I", *offsets))
        for it in items:
            f.write(it)
    chunks.append({"chunk_bytes": pos, "chunk_size": n, "dim": None, "filename": name})
    items.clear()
size = 0
for r in range(repeat):
    for path, label, rel in files:
        jpeg, text = open(path, "rb").read(), f"{r}/{rel}".encode()
        label_bytes = struct.pack("<q", label)
        item = struct.pack("<3I", len(jpeg), len(label_bytes), len(text)) + jpeg + label_bytes + text
        if size + len(item) > target:
            flush()
            size = 0
        items.append(item)
        size += len(item)
flush()
leaf = {"type": None, "context": None, "children_spec": []}
spec = [1, {"type": "builtins.dict", "context": json.dumps(["image", "label", "path"]), "children_spec": [leaf, leaf, leaf]}]
config = {"chunk_bytes": target, "chunk_size": None, "compression": None, "data_format": ["jpeg", "int", "str"],
          "data_spec": json.dumps(spec), "encryption": None, "item_loader": "PyTreeLoader"}
json.dump({"chunks": chunks, "config": config}, open(os.path.join(out, "index.json"), "w"))
print(f"{sum(c['chunk_size'] for c in chunks)} samples in {len(chunks)} chunks, {sum(c['chunk_bytes'] for c in chunks) / 1e6:.0f} MB")
PY
# The zstd variant: same items, chunk files compressed (names and config as LitData writes them).
mkdir "$WORK/dsz"
$PY - "$WORK/ds" "$WORK/dsz" <<'PY'
import json, os, subprocess, sys
src, dst = sys.argv[1:3]
index = json.load(open(os.path.join(src, "index.json")))
for c in index["chunks"]:
    name = c["filename"].replace(".bin", ".zstd.bin")
    subprocess.run(["zstd", "-q", "-3", "-T0", os.path.join(src, c["filename"]), "-o", os.path.join(dst, name)], check=True)
    c["filename"] = name
index["config"]["compression"] = "zstd"
json.dump(index, open(os.path.join(dst, "index.json"), "w"))
PY

rate() {  # rate LABEL BYTES SECONDS
  $PY -c 'import sys; b, s = float(sys.argv[2]), float(sys.argv[3]); print(f"{sys.argv[1]:<44} {s:6.2f} s  {b / s / 1e6:8.0f} MB/s")' "$@"
}
best_of3() {  # best_of3 CMD...: the fastest of three runs, in seconds
  local best=""
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N)
    best=$($PY -c 'import sys; t = float(sys.argv[2]) - float(sys.argv[1]); b = sys.argv[3]; print(t if b == "" or t < float(b) else b)' "$t0" "$t1" "$best")
  done
  echo "$best"
}
bytes=$(du -cb "$WORK"/ds/chunk-*.bin | tail -1 | cut -f1)
zbytes=$(du -cb "$WORK"/dsz/chunk-*.bin | tail -1 | cut -f1)
cat "$WORK"/ds/chunk-*.bin "$WORK"/dsz/chunk-*.bin > /dev/null   # warm the page cache
read_s=$(best_of3 sh -c "cat '$WORK'/ds/chunk-*.bin")
# The floor of any conversion that writes its output: the same bytes copied to the output
# disk and fsynced (slip convert writes every payload once and fsyncs before publishing).
copy_s=$(best_of3 sh -c "cat '$WORK'/ds/chunk-*.bin > '$WORK/copy.bin' && sync '$WORK/copy.bin' && rm '$WORK/copy.bin'")
conv_s=$(best_of3 "$SLIP" convert "$WORK/ds" -o "$WORK/out" --force -q)
zread_s=$(best_of3 sh -c "zstd -dc '$WORK'/dsz/chunk-*.bin")
zconv_s=$(best_of3 "$SLIP" convert "$WORK/dsz" -o "$WORK/outz" --force -q)
echo "LitData convert vs reading the chunks ($(nproc) CPUs, warm page cache, best of 3):"
rate "read chunk files (cat)" "$bytes" "$read_s"
rate "copy chunk files + fsync (write floor)" "$bytes" "$copy_s"
rate "slip convert (uncompressed chunks)" "$bytes" "$conv_s"
rate "read + decompress zstd chunks (zstd -dc)" "$bytes" "$zread_s"
rate "slip convert (zstd chunks)" "$bytes" "$zconv_s"
$PY -c 'import sys; r, w, c, zr, zc = map(float, sys.argv[1:]); print(f"convert rate / read rate: uncompressed {r / c:.2f}, zstd {zr / zc:.2f}; convert rate / copy+fsync rate: {w / c:.2f}")' \
  "$read_s" "$copy_s" "$conv_s" "$zread_s" "$zconv_s"
