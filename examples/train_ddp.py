#!/usr/bin/env python3
"""A complete training loop on slipcache.Loader: DistributedDataParallel ranks, float32 NCHW
batches straight into torch, pinned memory and non_blocking copies to the GPU, and checkpoints
that resume in the middle of an epoch (docs/PYTHON.md shows and explains this file).

  one process:  examples/train_ddp.py CACHE [--epochs N]
  8 GPUs:       torchrun --nproc_per_node 8 examples/train_ddp.py CACHE --arch resnet50
Run it again with the same --checkpoint to continue where it stopped."""
import argparse
import os

import torch
import torch.distributed as dist

import slipcache

parser = argparse.ArgumentParser()
parser.add_argument("cache")
parser.add_argument("--epochs", type=int, default=90)
parser.add_argument("--batch-size", type=int, default=256, help="per rank")
parser.add_argument("--size", type=int, default=224)
parser.add_argument("--threads", type=int, default=8, help="decoding threads per rank")
parser.add_argument("--arch", default="tiny", help="a torchvision model name, or tiny")
parser.add_argument("--checkpoint", default="checkpoint.pt")
parser.add_argument("--checkpoint-every", type=int, default=500, help="batches")
parser.add_argument("--stop-after", type=int, default=0, help="stop after this many batches (to try resuming)")
args = parser.parse_args()

# torchrun sets RANK, WORLD_SIZE and LOCAL_RANK; without it, one process.
distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
rank = dist.get_rank() if distributed else 0
world_size = dist.get_world_size() if distributed else 1
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
cuda = torch.cuda.is_available()
device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)

cache = slipcache.Cache(args.cache)
classes = int(cache.column("label").max()) + 1
# Each rank reads its own disjoint ceil(N / world_size) samples of every epoch; float32 NCHW,
# normalised by the engine with ImageNet's mean/std: what the model takes as it is.
loader = slipcache.Loader(cache, batch_size=args.batch_size, pipeline="rrc", size=args.size, layout="NCHW",
                          dtype="float32", seed=0, rank=rank, world_size=world_size, drop_last=True,
                          threads=args.threads)

if args.arch == "tiny":
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 5, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(8, classes))
else:
    import torchvision
    model = getattr(torchvision.models, args.arch)(num_classes=classes)
model = model.to(device, memory_format=torch.channels_last if cuda else torch.contiguous_format)
if distributed:
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * world_size, momentum=0.9, weight_decay=1e-4)

# Resuming: the model, the optimizer and where the loader stood ({"epoch": e, "batch": k}).
# The next iteration then runs batches k.. of epoch e (the earlier ones are not decoded again),
# and the iterations after it the epochs e+1, e+2, ... by themselves.
if os.path.exists(args.checkpoint):
    state = torch.load(args.checkpoint, map_location="cpu")
    (model.module if distributed else model).load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    loader.load_state_dict(state["loader"])


def save_checkpoint():
    if rank == 0:  # every rank stands at the same (epoch, batch)
        state = {"model": (model.module if distributed else model).state_dict(), "optimizer": optimizer.state_dict(),
                 "loader": loader.state_dict()}
        torch.save(state, args.checkpoint + ".tmp")
        os.replace(args.checkpoint + ".tmp", args.checkpoint)


steps = 0
for epoch in range(loader.epoch, args.epochs):  # 0 at first, else where the checkpoint stood
    total, seen = 0.0, 0
    for batch in loader:  # each iteration is the next epoch: loader.epoch == epoch
        # The batch's arrays share the loader's buffer: pin_memory() copies it once into
        # page-locked memory, from which the copy to the GPU runs asynchronously.
        images = torch.from_numpy(batch["image"])
        labels = torch.from_numpy(batch["label"])
        if cuda:
            images = images.pin_memory().to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
            labels = labels.pin_memory().to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(labels)
        seen += len(labels)
        steps += 1
        if steps % args.checkpoint_every == 0 or steps == args.stop_after:
            save_checkpoint()  # after the optimizer step: resuming continues with the next batch
        if steps == args.stop_after:
            raise SystemExit(f"stopped after {steps} batches at {loader.state_dict()}")
    if rank == 0:
        print(f"epoch {epoch}: {seen} samples, mean loss {total / max(seen, 1):.3f}", flush=True)
    save_checkpoint()  # the end of the epoch: resuming starts the next one
if distributed:
    dist.destroy_process_group()
