#!/usr/bin/python3
"""Independent check of a slip cache with Debian's numpy (and torchvision when importable).

usage: check_cache.py CACHE IMAGEFOLDER_ROOT

- every .npy in the cache loads with np.load(mmap_mode='r') with the dtype and shape the
  format prescribes (docs/FORMAT.md);
- labels and order equal torchvision.datasets.ImageFolder's (or a re-implementation of
  torchvision's rules when torchvision is not installed);
- image bytes read through the meta table equal the source files byte for byte, except the
  samples the ledger lists as transcoded, which must be RGB JPEGs of the source's size.
Prints a summary; exits non-zero on the first mismatch.
"""
import hashlib
import io
import json
import os
import sys

import numpy as np

cache, root = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(cache, "manifest.json")))
n = manifest["num_samples"]
META = np.dtype([("data_ptr", "<u8"), ("data_size", "<u8"), ("height", "<u4"), ("width", "<u4")])


def load(name, dtype, shape):
    arr = np.load(os.path.join(cache, name), mmap_mode="r")
    assert arr.dtype == dtype, f"{name}: dtype {arr.dtype} != {dtype}"
    assert arr.shape == shape, f"{name}: shape {arr.shape} != {shape}"
    return arr


for name, spec in manifest["fields"].items():
    t = spec["type"]
    if t in ("ImageBytes", "bytes"):
        load(f"{name}.meta.npy", META, (n,))
        load(f"{name}.xxh3.npy", np.dtype("<u8"), (n,))
    elif t == "str":
        load(f"{name}.offsets.npy", np.dtype("<u8"), (n, 2))
    elif t == "float":
        load(f"{name}.npy", np.dtype("<f8"), (n,))
    else:
        load(f"{name}.npy", np.dtype("<i8"), (n,))
for fname, size in manifest["file_sizes"].items():
    assert os.path.getsize(os.path.join(cache, fname)) == size, f"file_sizes[{fname}] wrong"

try:
    from torchvision.datasets import ImageFolder

    ds = ImageFolder(root)
    samples = [(os.path.relpath(p, root), y) for p, y in ds.samples]
    reference = "torchvision.datasets.ImageFolder"
except ImportError:
    exts = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    samples = []
    for label, c in enumerate(classes):
        for r, _, files in sorted(os.walk(os.path.join(root, c), followlinks=True)):
            for f in sorted(files):
                if f.lower().endswith(exts):
                    samples.append((os.path.relpath(os.path.join(r, f), root), label))
    reference = "torchvision's rules (re-implemented; torchvision not importable)"

transcoded = {e["source_index"] for e in manifest["slip"]["ledger"] if e["action"] == "transcoded"}
skipped = {e["source_index"] for e in manifest["slip"]["ledger"] if e["action"] == "skipped"}
kept = [(i, s) for i, s in enumerate(samples) if i not in skipped]
assert len(kept) == n, f"{len(kept)} source samples kept, cache has {n}"

meta = np.load(os.path.join(cache, "image.meta.npy"), mmap_mode="r")
label = np.load(os.path.join(cache, "label.npy"), mmap_mode="r")
index = np.load(os.path.join(cache, "index.npy"), mmap_mode="r")
offsets = np.load(os.path.join(cache, "path.offsets.npy"), mmap_mode="r")
blob = np.memmap(os.path.join(cache, "image.bin"), dtype=np.uint8, mode="r")
paths = open(os.path.join(cache, "path.bin"), "rb").read()
root_name = os.path.basename(os.path.normpath(root))
identical = 0
for sid, (src_index, (rel, y)) in enumerate(kept):
    assert label[sid] == y, f"sample {sid}: label {label[sid]} != {y}"
    assert index[sid] == src_index, f"sample {sid}: index {index[sid]} != {src_index}"
    o, l = offsets[sid]
    assert paths[o:o + l].decode() == f"{root_name}/{rel}", f"sample {sid}: path {paths[o:o+l]!r}"
    ptr, size, h, w = (int(meta[sid][k]) for k in ("data_ptr", "data_size", "height", "width"))
    payload = bytes(blob[ptr:ptr + size])
    source = open(os.path.join(root, rel), "rb").read()
    if src_index in transcoded:
        from PIL import Image

        img = Image.open(io.BytesIO(payload))
        assert img.format == "JPEG" and img.mode == "RGB", f"sample {sid}: transcoded to {img.format}/{img.mode}"
        src_img = Image.open(io.BytesIO(source))
        assert img.size == src_img.size == (w, h), f"sample {sid}: size {img.size} vs {src_img.size} vs {(w, h)}"
    else:
        assert hashlib.sha256(payload).digest() == hashlib.sha256(source).digest(), f"sample {sid}: bytes differ from {rel}"
        identical += 1
print(f"ok: {n} samples, labels/order = {reference}, {identical} payloads byte-identical to their "
      f"source files, {len(transcoded)} transcoded, {len(skipped)} skipped; every .npy loads with mmap_mode='r'")
