#!/usr/bin/python3
"""A minimal PyTorch training loop on slip's Python package: batches come out of slipcache.Loader as
numpy arrays decoded, cropped and flipped on slip's threads (no Python workers), and reach torch
without a copy (torch.from_numpy). examples/train_ddp.py is the complete loop (DDP, GPU, resuming).

Usage: examples/train_loop.py CACHE [EPOCHS]   (slipcache installed, or PYTHONPATH=build/python)
  CACHE: a slipstream cache, e.g. the one `slip convert examples/sample` prints."""
import sys

import torch

import slipcache

cache = slipcache.Cache(sys.argv[1])
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
classes = int(cache.column("label").max()) + 1

# float32 NCHW, normalised with ImageNet's mean/std by the engine: what a model takes as is.
loader = slipcache.Loader(cache, batch_size=16, pipeline="rrc", size=64, layout="NCHW", dtype="float32", seed=0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 5, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(8, classes))
optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(epochs):
    loader.set_epoch(epoch)  # a new shuffle and new crops, reproducible from (seed, epoch)
    total = 0.0
    for batch in loader:
        images = torch.from_numpy(batch["image"])  # shares the batch's memory
        labels = torch.from_numpy(batch["label"])
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        total += loss.item() * len(labels)
    print(f"epoch {epoch}: {len(loader)} batches, mean loss {total / len(cache):.3f}")
