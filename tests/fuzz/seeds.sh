#!/usr/bin/env bash
# seeds.sh OUTDIR: seed corpora for every fuzz target, from ../shared and a cache slip builds.
# Needs SLIP (the slip binary), SLIP_SHARED_DIR, SLIP_SOURCE_DIR, SLIP_PYTHON.
set -euo pipefail
shopt -s nullglob
mkdir -p "$1"; out=$(cd "$1" && pwd)  # absolute: the tar seeds are made from another directory
shared=$SLIP_SHARED_DIR src=$SLIP_SOURCE_DIR py=${SLIP_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
first_lines() { awk -v n="$1" 'NR <= n'; }  # not `| head -N`: its SIGPIPE fails a pipefail pipeline
# Without the reference data: seeds from examples/sample alone (its files stand in for the few
# corpus files named below; no bad files or fixtures), so the replay still runs every target
# over seeds and every regression input.
if [ ! -d "$shared/corpus/imagenet_like" ]; then
  echo "seeds: no reference data at $shared: seeds from examples/sample only" >&2
  shared=$tmp/shared
  mkdir -p "$shared/corpus/bad" "$shared/fixtures/ffcv" "$shared/fixtures/pyslipstream" "$shared/fixtures/litdata"
  cp -r "$src/examples/sample" "$shared/corpus/imagenet_like"
  chmod -R u+w "$shared/corpus/imagenet_like"
  c=$shared/corpus/imagenet_like
  cp "$c/n02979186/n02979186_11501.JPEG" "$c/n03888605/n03888605_7974.JPEG"                       # tiny: 1x1 for 3x7
  mkdir -p "$c/n03417042" && cp "$c/n03888605/n03888605_13171.JPEG" "$c/n03417042/n03417042_11319.JPEG"  # restart markers
fi
for t in $(grep -o '^fuzz_[a-z0-9_]*' "$src/tests/fuzz/targets.txt"); do mkdir -p "$out/$t"; done
for f in "$shared"/fixtures/ffcv/*.beton; do if [ "$(stat -c %s "$f")" -lt 60000 ]; then cp "$f" "$out/fuzz_ffcv/"; fi; done
find "$shared/fixtures/pyslipstream" -name '*.npy' | first_lines 40 | while read -r f; do cp "$f" "$out/fuzz_npy_header/$(echo "$f" | md5sum | cut -c1-12).npy"; done
for f in "$shared"/corpus/bad/* $(find "$src/examples/sample" -type f | LC_ALL=C sort | first_lines 20); do
  cp "$f" "$out/fuzz_jpeg_header/$(basename "$f")"
done
# Small images only for full decodes (fast iterations): the tiny corpus files and bad files.
for f in "$shared"/corpus/bad/* "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" \
         "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_4775.JPEG"; do
  cp "$f" "$out/fuzz_image_decode/$(basename "$f")"
done
# The engine's JPEG paths: a control byte (path, scale, window) before small JPEGs of every
# sampling the corpus has (4:2:0, 4:4:4, grayscale, progressive).
for f in "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" \
         $(find "$src/examples/sample" -type f | LC_ALL=C sort | first_lines 4); do
  for control in 00 05 0e 36 4b 7c; do
    { printf "\x$control"; cat "$f"; } > "$out/fuzz_engine_jpeg/$control-$(basename "$f")"
  done
done
# Restart markers: the same small JPEGs, re-encoded by the target itself (top bit) or not, and
# the corpus photos written with restart markers (one interval per MCU row; 5 MCUs).
for f in "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" \
         "$shared/corpus/imagenet_like/n03417042/n03417042_11319.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_13171.JPEG" \
         $(find "$src/examples/sample" -type f | LC_ALL=C sort | first_lines 4); do
  for control in 80 9b e5 2d; do
    { printf "\x$control"; cat "$f"; } > "$out/fuzz_restart_cut/$control-$(basename "$f")"
  done
done
# slip's Huffman decoder against libjpeg's: the same small JPEGs (and the restart photos) with
# control bytes for re-encoding, DCT scale and the RGB region path.
for f in "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" \
         "$shared/corpus/imagenet_like/n03417042/n03417042_11319.JPEG" $(find "$src/examples/sample" -type f | LC_ALL=C sort | first_lines 4); do
  for control in 00 05 83 86; do
    { printf "\x$control"; cat "$f"; } > "$out/fuzz_huffman_decoder/$control-$(basename "$f")"
  done
done
mkdir -p "$tmp/tiny/a" "$tmp/tiny/b"
cp "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$tmp/tiny/a/"
cp "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$tmp/tiny/b/x.jpg"
cache=$("$SLIP" convert "$tmp/tiny" -o "$tmp/c" -q)
"$SLIP" index "$cache" --field label >/dev/null
"$py" "$src/tests/fuzz/pack_cache.py" "$cache" "$out/fuzz_cache_verify/slip_tiny.bin"
if [ -d "$shared/fixtures/pyslipstream/slipcache-3131b662" ]; then
  "$py" "$src/tests/fuzz/pack_cache.py" "$shared/fixtures/pyslipstream/slipcache-3131b662" "$out/fuzz_cache_verify/python_fixture.bin"
fi
# Tar: two tiny WebDataset samples, plain and gzip-compressed.
mkdir -p "$tmp/wds"
cp "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$tmp/wds/a.jpg"; echo 1 > "$tmp/wds/a.cls"
cp "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" "$tmp/wds/b.jpg"; echo 2 > "$tmp/wds/b.cls"
(cd "$tmp/wds" && tar -cf "$out/fuzz_tar/two.tar" a.jpg a.cls b.jpg b.cls && gzip -c "$out/fuzz_tar/two.tar" > "$out/fuzz_tar/two.tar.gz")
# LitData: each fixture's index.json + its first chunk, repacked to name chunk-0-0.bin.
for d in "$shared"/fixtures/litdata/*/; do
  "$py" - "$d" "$out/fuzz_litdata/$(basename "$d").bin" <<'PY'
import json, struct, sys, os
d, out = sys.argv[1:3]
idx = json.load(open(os.path.join(d, "index.json")))
first = idx["chunks"][0]
if idx["config"].get("compression"):
    sys.exit(0)
idx["chunks"] = [dict(first, filename="chunk-0-0.bin")]
text = json.dumps(idx).encode()
open(out, "wb").write(struct.pack("<I", len(text)) + text + open(os.path.join(d, first["filename"]), "rb").read())
PY
done
# Round trip: a sample-count byte, then two tiny JPEGs (and a PNG) to be split into samples.
{ printf '\001'; cat "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG"; } > "$out/fuzz_roundtrip/two_jpegs.bin"
{ printf '\000'; cat "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG"; } > "$out/fuzz_roundtrip/one_jpeg.bin"
printf '\007abcdefghijklmnopqrstuvwxyz0123456789' > "$out/fuzz_roundtrip/text.bin"
# S3 listings: a page with entities and a token, a last page, an error document.
cat > "$out/fuzz_s3_listing/page.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>data</Name><Prefix>shards/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated><Contents><Key>shards/a&amp;b &#233;.tar</Key><LastModified>2026-11-23T08:00:00.000Z</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>358400</Size><StorageClass>STANDARD</StorageClass></Contents><Contents><Key>shards/sub/c.tar</Key><ETag>"x-2"</ETag><Size>0</Size></Contents><NextContinuationToken>1dNe1S2QHUm01jSAxPfFru/Fx+=</NextContinuationToken></ListBucketResult>
XML
printf '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>ds/index.json</Key><Size>12</Size></Contents></ListBucketResult>' > "$out/fuzz_s3_listing/last.xml"
printf '<Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>' > "$out/fuzz_s3_listing/error.xml"
# Dataset lists (fuzz_dataset_list makes the caches a, b, empty, f, py, whole and w.parts/part-*
# beside the list; content ids are 63 zeros and a digit): a control byte (0x01 a second input,
# 0x02 a --mix string on the last line, 0x04 cache_paths, 0x08 an epoch size), then the list.
ds_id() { printf '%064d' "$1"; }
d=$out/fuzz_dataset_list
printf '\000# two caches\na %s\n\nb\t%s\r\npy\n' "$(ds_id 1)" "$(ds_id 2)" > "$d/text.txt"
printf '\001a\n' > "$d/text_twice.txt"
printf '\005w.parts/part-00000-of-00002\nw.parts/part-00001-of-00002\nwhole\n' > "$d/parts_and_whole.txt"
printf '\002a\nb\nempty\nrepeat:2,0.5,0' > "$d/text_mix.txt"
printf '\000{"format": "slip-dataset-list", "version": 1, "epoch_size": 7, "caches": [{"path": "a", "content_id": "%s", "num_samples": 3, "proportion": 0.7}, {"path": "b", "proportion": 0.3}]}' "$(ds_id 1)" > "$d/proportion.json"
printf '\000{"caches": [{"path": "a", "repeat": 1.5}, {"path": "b", "choose": 5}, "empty"]}' > "$d/repeat_choose.json"
printf '\002["a", "b", "f"]\nproportion:1,2,3' > "$d/fields_differ_mix.json"
printf '\070["w.parts/part-00001-of-00002", {"path": "py", "num_samples": 4}]' > "$d/epoch_size.json"
printf '\000l\351\n' > "$d/latin1_name.txt"
