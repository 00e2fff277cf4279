#!/usr/bin/python3
"""The Python module's Loader against `slip bench` (the same engine without Python) and against
torchvision's ImageFolder + DataLoader (2 workers), RandomResizedCrop(224) + flip, on the same
images in one run. Prints images/s (best of EPOCHS epochs) and the ratios.

Usage: bench/python_loader.py SLIP CACHE IMAGEFOLDER [EPOCHS]
  (PYTHONPATH must reach the built module, e.g. build/python; Debian's python3-torchvision)"""
import json
import subprocess
import sys
import time

import slip

slip_bin, cache, folder = sys.argv[1:4]
epochs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
threads, batch = 2, 64


def best(run):
    rates = []
    for e in range(epochs):
        t = time.perf_counter()
        n = run(e)
        rates.append(n / (time.perf_counter() - t))
    return max(rates)


loader = slip.Loader(cache, batch_size=batch, pipeline="rrc", size=224, flip=True, threads=threads, shuffle=True)


def module_epoch(e):
    loader.set_epoch(e)
    n = 0
    for b in loader:
        n += b["image"].shape[0]  # the batch is a numpy array, ready for torch.from_numpy
    return n


ours = best(module_epoch)
cli = json.loads(subprocess.run([slip_bin, "bench", cache, "-p", "rrc", "-j", str(threads), "-b", str(batch), "-e", str(epochs),
                                 "--order", "shuffle", "--no-limit", "--json"], check=True, capture_output=True).stdout)
cli_rate = cli["best_images_per_second"]

import torch  # noqa: E402
import torchvision.datasets as datasets  # noqa: E402
import torchvision.transforms as T  # noqa: E402

dataset = datasets.ImageFolder(folder, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()]))
tv_loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=threads, persistent_workers=True)


def tv_epoch(_):
    return sum(x.shape[0] for x, _ in tv_loader)


tv = best(tv_epoch)
print(f"{'loader (2 threads / workers)':40} {'img/s':>9}")
print(f"{'slip.Loader rrc (Python module)':40} {ours:9.1f}")
print(f"{'slip bench -p rrc (same engine, no Python)':40} {cli_rate:9.1f}   module/bench = {ours / cli_rate:.2f}")
print(f"{'torchvision DataLoader RRC+flip':40} {tv:9.1f}   module/torchvision = {ours / tv:.1f}x")
