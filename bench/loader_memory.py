#!/usr/bin/python3
"""Resident memory of slipcache.Loader across epochs (issue 42, "Memory that creeps"): EPOCHS epochs
of PIPELINE over the first IMAGES images of a cache, RSS (VmRSS) after each; the verdict is the
largest RSS after epoch WARM over the RSS at epoch WARM (the goal: within 5%). Not a timed test:
run it by hand; it prints one line per REPORT epochs and the verdict.

Usage: bench/loader_memory.py CACHE [--images N] [--max-mpix 10] [--epochs N] [--pipeline decode]
                              [--batch-size 64] [--threads 2] [--warm 5] [--report 10]
  --max-mpix: leave out images over this many megapixels (as the peer figures do: the corpus's two
  12-MPix photos make RSS at an epoch's end swing by 36 MB, by which buffer holds them then;
  0: keep every image).
  slipcache must be importable (installed, or PYTHONPATH=build/python). Make CACHE with
  `slip convert ../shared/corpus/imagenet_like -o CACHE` (800 images of 3 px to 36 MB of RGB)."""
import argparse
import io
import sys

from PIL import Image

import slipcache

parser = argparse.ArgumentParser(usage=__doc__.split("Usage: ")[1].split("\n  slipcache")[0])
parser.add_argument("cache")
parser.add_argument("--images", type=int, default=250)
parser.add_argument("--max-mpix", type=float, default=10)
parser.add_argument("--epochs", type=int, default=200)
parser.add_argument("--pipeline", default="decode")
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--warm", type=int, default=5)
parser.add_argument("--report", type=int, default=10)
args = parser.parse_args()


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status")


cache = slipcache.Cache(args.cache)
image_field = next(name for name, kind in cache.fields.items() if kind.startswith("Image"))
ids = []
for i in range(len(cache)):
    if len(ids) == args.images:
        break
    width, height = Image.open(io.BytesIO(cache[i][image_field])).size  # the header only
    if not args.max_mpix or width * height <= args.max_mpix * 1e6:
        ids.append(i)
loader = slipcache.Loader(cache, batch_size=args.batch_size, pipeline=args.pipeline, threads=args.threads, indices=ids)
print(f"{args.pipeline}: {len(ids)} images (of {len(cache)}; at most {args.max_mpix:g} MPix), batch {args.batch_size}, "
      f"{args.threads} threads, {args.epochs} epochs; start {rss_mb():.0f} MB")
rss = []
for epoch in range(args.epochs):
    pixels = 0
    for batch in loader:
        images = batch["image"]
        pixels += sum(a.size for a in images) if isinstance(images, list) else images.size
    del batch, images  # what a training loop lets go of
    rss.append(rss_mb())
    if epoch % args.report == 0 or epoch == args.epochs - 1:
        print(f"epoch {epoch:4d}: RSS {rss[-1]:7.1f} MB ({pixels / 1e6:.0f} MB of pixels this epoch)")
warm = rss[min(args.warm, len(rss) - 1)]
peak = max(rss[args.warm:]) if len(rss) > args.warm else warm
growth = peak / warm - 1
print(f"RSS at epoch {args.warm}: {warm:.1f} MB; highest after: {peak:.1f} MB ({growth * 100:+.1f}%); "
      f"epoch 0: {rss[0]:.1f} MB -> last: {rss[-1]:.1f} MB")
print("within 5%" if growth <= 0.05 else "OVER 5%")
sys.exit(0 if growth <= 0.05 else 1)
