#!/usr/bin/env bash
# seeds.sh OUTDIR: seed corpora for every fuzz target, from ../shared and a cache slip builds.
# Needs SLIP (the slip binary), SLIP_SHARED_DIR, SLIP_SOURCE_DIR, SLIP_PYTHON.
set -euo pipefail
out=$1
shared=$SLIP_SHARED_DIR src=$SLIP_SOURCE_DIR py=${SLIP_PYTHON:-/usr/bin/python3}
mkdir -p "$out"/{fuzz_npy_header,fuzz_jpeg_header,fuzz_image_decode,fuzz_cache_verify,fuzz_ffcv}
for f in "$shared"/fixtures/ffcv/*.beton; do if [ "$(stat -c %s "$f")" -lt 60000 ]; then cp "$f" "$out/fuzz_ffcv/"; fi; done
find "$shared/fixtures/pyslipstream" -name '*.npy' | head -40 | while read -r f; do cp "$f" "$out/fuzz_npy_header/$(echo "$f" | md5sum | cut -c1-12).npy"; done
for f in "$shared"/corpus/bad/* $(find "$src/examples/sample" -type f | LC_ALL=C sort | head -20); do
  cp "$f" "$out/fuzz_jpeg_header/$(basename "$f")"
done
# Small images only for full decodes (fast iterations): the tiny corpus files and bad files.
for f in "$shared"/corpus/bad/* "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" \
         "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_4775.JPEG"; do
  cp "$f" "$out/fuzz_image_decode/$(basename "$f")"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tiny/a" "$tmp/tiny/b"
cp "$shared/corpus/imagenet_like/n02979186/n02979186_11501.JPEG" "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$tmp/tiny/a/"
cp "$shared/corpus/imagenet_like/n03888605/n03888605_7974.JPEG" "$tmp/tiny/b/x.jpg"
cache=$("$SLIP" convert "$tmp/tiny" -o "$tmp/c" -q)
"$SLIP" index "$cache" --field label >/dev/null
"$py" "$src/tests/fuzz/pack_cache.py" "$cache" "$out/fuzz_cache_verify/slip_tiny.bin"
"$py" "$src/tests/fuzz/pack_cache.py" "$shared/fixtures/pyslipstream/slipcache-3131b662" "$out/fuzz_cache_verify/python_fixture.bin"
