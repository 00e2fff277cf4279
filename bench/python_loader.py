#!/usr/bin/python3
"""The Python package's slipcache.Loader against `slip bench` (the same engine without Python) and against
torchvision's ImageFolder + DataLoader (2 workers), RandomResizedCrop(224) + flip, on the same
images in one run, for both outputs a training loop takes: uint8 HWC images (torchvision's
PILToTensor) and normalised float32 CHW (ToTensor + Normalize). Prints images/s (best of EPOCHS
epochs) and the ratios.

Usage: bench/python_loader.py SLIP IMAGEFOLDER [EPOCHS]
  The images of IMAGEFOLDER of at most 10 MPix (the set the peer figures use: docs/PERFORMANCE.md's
  "Against the peers"), as a symlinked ImageFolder, converted by SLIP into a temporary cache.
  slipcache must be importable (installed, or PYTHONPATH=build/python); torchvision is Debian's
  python3-torchvision."""
import json
import os
import subprocess
import sys
import tempfile
import time

from PIL import Image

import slipcache

slip_bin, source = sys.argv[1:3]
epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
threads, batch, max_pixels = 2, 64, 10_000_000

work = tempfile.TemporaryDirectory()
folder = os.path.join(work.name, "set")
kept = 0
for cls in sorted(os.listdir(source)):
    if not os.path.isdir(os.path.join(source, cls)):
        continue
    for name in sorted(os.listdir(os.path.join(source, cls))):
        path = os.path.abspath(os.path.join(source, cls, name))
        with Image.open(path) as im:
            if im.width * im.height > max_pixels:
                continue
        os.makedirs(os.path.join(folder, cls), exist_ok=True)
        os.symlink(path, os.path.join(folder, cls, name))
        kept += 1
cache = subprocess.run([slip_bin, "convert", folder, "-o", os.path.join(work.name, "c"), "-q"], check=True, capture_output=True,
                       text=True).stdout.strip()


def best(run):
    rates = []
    for e in range(epochs):
        t = time.perf_counter()
        n = run(e)
        rates.append(n / (time.perf_counter() - t))
    return max(rates)


def module_rate(**kw):
    loader = slipcache.Loader(cache, batch_size=batch, pipeline="rrc", size=224, flip=True, threads=threads, shuffle=True, **kw)

    def epoch(e):
        loader.set_epoch(e)
        return sum(b["image"].shape[0] for b in loader)  # numpy arrays, ready for torch.from_numpy

    return best(epoch)


def bench_rate(*flags):
    out = subprocess.run([slip_bin, "bench", cache, "-p", "rrc", "-j", str(threads), "-b", str(batch), "-e", str(epochs), "--order",
                          "shuffle", "--no-limit", "--json", *flags], check=True, capture_output=True).stdout
    return json.loads(out)["best_images_per_second"]


import torch  # noqa: E402
import torchvision.datasets as datasets  # noqa: E402
import torchvision.transforms as T  # noqa: E402


def torchvision_rate(*to_tensor):
    dataset = datasets.ImageFolder(folder, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), *to_tensor]))
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=threads, persistent_workers=True)
    return best(lambda _: sum(x.shape[0] for x, _ in loader))


norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
rows = [
    ("uint8 NHWC / PILToTensor", module_rate(), bench_rate(), torchvision_rate(T.PILToTensor())),
    ("float32 NCHW normalised / ToTensor+Normalize", module_rate(layout="NCHW", dtype="float32"),
     bench_rate("--layout", "chw", "--dtype", "float32"), torchvision_rate(T.ToTensor(), norm)),
]
print(f"{kept} images of at most {max_pixels:,} pixels; RandomResizedCrop(224) + flip, {threads} threads / workers, batch {batch}, "
      f"best of {epochs} epochs (img/s)")
print(f"{'output':46} {'Loader':>11} {'slip bench':>10} {'torchvision':>11} {'Loader/bench':>12} {'Loader/torchvision':>18}")
for name, ours, cli, tv in rows:
    print(f"{name:46} {ours:11.1f} {cli:10.1f} {tv:11.1f} {ours / cli:12.2f} {ours / tv:17.1f}x")
