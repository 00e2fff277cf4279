#!/usr/bin/env bash
# The many-caches simulation of docs/SCALE.md#many-caches:
#   bash bench/dataset_scale/run.sh build/bench/slip_dataset_scale build/apps/slip/slip [CACHES SAMPLES]
# builds a synthetic dataset (default 1,000 caches, 100,000,000 samples; real manifests and
# .meta.npy records, about 2.4 GB; sparse payload files) under $WORK (default /tmp/slip-scale),
# then measures ranks 0, 255 and 511 of 512, each in its own process, and `slip order` for one
# rank. Not a test: nothing is asserted about time.
set -euo pipefail
bench=${1:?usage: run.sh SLIP_DATASET_SCALE SLIP [CACHES SAMPLES]}
slip=${2:?usage: run.sh SLIP_DATASET_SCALE SLIP [CACHES SAMPLES]}
caches=${3:-1000}
samples=${4:-100000000}
WORK=${WORK:-/tmp/slip-scale}
dir=$WORK/dataset-$caches-$samples
if [ ! -f "$dir/dataset.json" ]; then
  rm -rf "$dir"
  "$bench" build "$dir" --caches "$caches" --samples "$samples"
fi
du -sh --apparent-size "$dir" | sed 's/^/apparent size: /'
du -sh "$dir" | sed 's/^/on disk: /'
# A warm page cache, as on a node where the job's first rank opened the dataset.
"$bench" run "$dir/dataset.json" --rank 0 > /dev/null
for input in "$dir" "$dir/dataset.json"; do
  for rank in 0 255 511; do
    /usr/bin/time -f '{"peak_rss_mb": %M}' -o "$WORK/time.json" "$bench" run "$input" --rank $rank --world 512 --resume-at 73000000 --resume-world 384
    echo "input $input: $(sed 's/}/ KiB}/' "$WORK/time.json")"
  done
done
# The CLI prints the same ids, for one rank of 512 (mixed 1:2:3:4 by cache index mod 4).
mix=proportion:$(python3 -c "print(','.join(str(1 + i % 4) for i in range($caches)))")
/usr/bin/time -f 'slip order, rank 7 of 512: %e s, peak RSS %M KiB' "$slip" order "$dir/dataset.json" --mix "$mix" --seed 1234 --epoch 5 \
  --rank 7 --world-size 512 --format npy -o "$WORK/order.npy"
/usr/bin/time -f 'slip order --consumed 73000000, rank 7 of 384: %e s, peak RSS %M KiB' "$slip" order "$dir/dataset.json" --mix "$mix" \
  --seed 1234 --epoch 5 --rank 7 --world-size 384 --consumed 73000000 --format npy -o "$WORK/resume.npy"
