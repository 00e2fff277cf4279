#!/usr/bin/python3
"""The Python package's slipcache.Loader against `slip bench` (the same engine without Python) and against
torchvision's ImageFolder + DataLoader (2 workers), RandomResizedCrop(224) + flip, on the same
images in one run, for both outputs a training loop takes: uint8 HWC images (torchvision's
PILToTensor) and normalised float32 CHW (ToTensor + Normalize); and whole images (pipeline="decode"
against `slip bench -p decode`, no torchvision row). Prints images/s (best of EPOCHS epochs) and the
ratios, one table per thread count, and the CPU time per image of each (ms: every thread of the
Loader's process, of `slip bench`'s, over all epochs; what a shared machine's load changes least).

Usage: bench/python_loader.py SLIP IMAGEFOLDER [EPOCHS] [--threads 1,2,4,...|scaling] [--no-torchvision] [--dataset-parts N] [--rounds R]
  --threads: the loader's threads and the DataLoader's workers (default 2); "scaling": 1, 2, 4, ...
  up to the CPUs, then the CPUs (issue 39's Loader >= 0.95x `slip bench` at N threads).
  --no-torchvision: the Loader against `slip bench` only (torchvision takes most of the run).
  --rounds: each row's Loader and `slip bench` rates are the best of R rounds run alternately
  (Loader, bench, Loader, bench, ...), so that a shared machine's busy spells reach both
  (default 1: one of each).
  --dataset-parts N: instead, the Loader over the same images as one cache and as a dataset of N
  caches (`slip convert --shard I/N` parts, read without merge), epochs alternating between the
  two, and the ratio dataset/one cache (issue 44's goal: >= 0.95x).
  The images of IMAGEFOLDER of at most 10 MPix (the set the peer figures use: docs/PERFORMANCE.md's
  "Against the peers"), as a symlinked ImageFolder, converted by SLIP into a temporary cache.
  slipcache must be importable (installed, or PYTHONPATH=build/python); torchvision is Debian's
  python3-torchvision."""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from PIL import Image

import slipcache

parser = argparse.ArgumentParser(usage=__doc__.split("Usage: ")[1].split("\n")[0])
parser.add_argument("slip")
parser.add_argument("imagefolder")
parser.add_argument("epochs", nargs="?", type=int, default=3)
parser.add_argument("--threads", default="2")
parser.add_argument("--no-torchvision", action="store_true")
parser.add_argument("--dataset-parts", type=int, default=0)
parser.add_argument("--rounds", type=int, default=1)
args = parser.parse_args()
slip_bin, source, epochs = args.slip, args.imagefolder, args.epochs
cpus = len(os.sched_getaffinity(0))
if args.threads == "scaling":
    thread_counts = [1 << i for i in range(cpus.bit_length()) if 1 << i < cpus] + [cpus]
else:
    thread_counts = [int(t) for t in args.threads.split(",")]
batch, max_pixels = 64, 10_000_000

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


def dataset_comparison(parts):
    """The Loader over the one cache and over `parts` part caches of the same images (global ids
    are the one cache's): epochs alternate between the two so that both see the same machine load."""
    out = os.path.join(work.name, "parts")
    for i in range(parts):
        subprocess.run([slip_bin, "convert", folder, "-o", out, "--shard", f"{i}/{parts}", "-q"], check=True, capture_output=True)
    (parts_dir,) = [os.path.join(out, d) for d in os.listdir(out) if d.endswith(".parts")]
    print(f"{kept} images of at most {max_pixels:,} pixels, batch {batch}, best of {epochs} epochs (img/s); {cpus} CPUs; "
          f"one cache against a dataset of {parts} parts")
    print(f"{'threads':>7} {'pipeline':10} {'one cache':>10} {'dataset':>10} {'dataset/one':>11}")
    for threads in thread_counts:
        for pipeline in ("rrc", "decode"):
            size = 224 if pipeline == "rrc" else None
            loaders = [slipcache.Loader(src, batch_size=batch, pipeline=pipeline, size=size, threads=threads, shuffle=True)
                       for src in (cache, parts_dir)]
            assert loaders[0].order() == loaders[1].order(), "the same global order"
            rates = [[], []]
            for e in range(epochs):
                for which, loader in enumerate(loaders):
                    loader.set_epoch(e)
                    t = time.perf_counter()
                    n = sum(len(b["image"]) for b in loader)
                    rates[which].append(n / (time.perf_counter() - t))
            one, ds = max(rates[0]), max(rates[1])
            print(f"{threads:7} {pipeline:10} {one:10.1f} {ds:10.1f} {ds / one:11.3f}")


if args.dataset_parts:
    dataset_comparison(args.dataset_parts)
    sys.exit(0)


def best(run):
    rates = []
    for e in range(epochs):
        t = time.perf_counter()
        n = run(e)
        rates.append(n / (time.perf_counter() - t))
    return max(rates)


def cpu_seconds(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def module_rate(threads, pipeline="rrc", **kw):
    size = 224 if pipeline == "rrc" else None
    loader = slipcache.Loader(cache, batch_size=batch, pipeline=pipeline, size=size, flip=True, threads=threads, shuffle=True, **kw)

    def epoch(e):
        loader.set_epoch(e)
        # numpy arrays, ready for torch.from_numpy (decode: a list of per-image views of one block)
        return sum(len(b["image"]) for b in loader)

    start = cpu_seconds(resource.RUSAGE_SELF)  # the process: the Loader's threads and the Python loop
    rate = best(epoch)
    return rate, (cpu_seconds(resource.RUSAGE_SELF) - start) / (kept * epochs) * 1e3


def bench_rate(threads, *flags, pipeline="rrc"):
    start = cpu_seconds(resource.RUSAGE_CHILDREN)
    out = subprocess.run([slip_bin, "bench", cache, "-p", pipeline, "-j", str(threads), "-b", str(batch), "-e", str(epochs), "--order",
                          "shuffle", "--no-limit", "--json", *flags], check=True, capture_output=True).stdout
    return json.loads(out)["best_images_per_second"], (cpu_seconds(resource.RUSAGE_CHILDREN) - start) / (kept * epochs) * 1e3


import torch  # noqa: E402
import torchvision.datasets as datasets  # noqa: E402
import torchvision.transforms as T  # noqa: E402


def torchvision_rate(threads, *to_tensor):
    if args.no_torchvision:
        return float("nan")
    dataset = datasets.ImageFolder(folder, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), *to_tensor]))
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=threads, persistent_workers=True)
    return best(lambda _: sum(x.shape[0] for x, _ in loader))


def alternately(ours, cli):
    """The best rates and least CPU time per image (ms, every thread, every epoch) of --rounds
    alternate runs of each (Loader, bench, Loader, bench, ...)."""
    runs = [(ours(), cli()) for _ in range(max(1, args.rounds))]
    return (max(r[0][0] for r in runs), max(r[1][0] for r in runs), min(r[0][1] for r in runs), min(r[1][1] for r in runs))


norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
print(f"{kept} images of at most {max_pixels:,} pixels; RandomResizedCrop(224) + flip, batch {batch}, best of {epochs} epochs "
      f"x {max(1, args.rounds)} rounds (img/s); {cpus} CPUs")
for threads in thread_counts:
    rows = [
        ("uint8 NHWC / PILToTensor", alternately(lambda: module_rate(threads), lambda: bench_rate(threads)),
         torchvision_rate(threads, T.PILToTensor())),
        ("float32 NCHW normalised / ToTensor+Normalize",
         alternately(lambda: module_rate(threads, layout="NCHW", dtype="float32"),
                     lambda: bench_rate(threads, "--layout", "chw", "--dtype", "float32")), torchvision_rate(threads, T.ToTensor(), norm)),
        # issue 44: whole images, no crop (the Loader's pipeline="decode" against `slip bench -p decode`)
        ("uint8 HWC whole images / -p decode",
         alternately(lambda: module_rate(threads, pipeline="decode"), lambda: bench_rate(threads, pipeline="decode")), float("nan")),
    ]
    print(f"\n{threads} threads / workers")
    print(f"{'output':46} {'Loader':>11} {'slip bench':>10} {'torchvision':>11} {'Loader/bench':>12} {'Loader/torchvision':>18} "
          f"{'CPU ms/img Loader, bench':>24}")
    for name, (ours, cli, cpu_ours, cpu_cli), tv in rows:
        vs_tv = "-" if args.no_torchvision or tv != tv else f"{ours / tv:.1f}x"
        print(f"{name:46} {ours:11.1f} {cli:10.1f} {tv:11.1f} {ours / cli:12.2f} {vs_tv:>18} {cpu_ours:11.3f}, {cpu_cli:.3f}")
