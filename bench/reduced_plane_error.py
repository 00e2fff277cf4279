#!/usr/bin/python3
"""How far a crop resized from a 2x-reduced plane lands from the direct filter.

Multi-crop could resize a local crop whose window is at least twice its output from a plane
box-filtered 2x (Pillow's reduce(2)) with the filter at half the scale: a quarter of the
vertical pass's columns and half the taps. This measures what that costs in exactness, with
Pillow on both sides, on random square windows of 192 px up to the image's short side, resized
to 96 px (DINO's local crops) on the luma plane.

    /usr/bin/python3 bench/reduced_plane_error.py SHARED/corpus/imagenet_like [--filter bicubic]
"""
import argparse
import glob
import os
import random

import numpy as np
from PIL import Image


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("imagefolder")
    parser.add_argument("--filter", choices=["bilinear", "bicubic"], default="bicubic")
    parser.add_argument("--images", type=int, default=60)
    parser.add_argument("--windows", type=int, default=4, help="windows per image")
    args = parser.parse_args()
    resample = Image.BICUBIC if args.filter == "bicubic" else Image.BILINEAR
    random.seed(1)
    files = sorted(glob.glob(os.path.join(args.imagefolder, "*", "*")))
    worst, means, psnrs = 0.0, [], []
    for path in random.sample(files, min(args.images, len(files))):
        image = Image.open(path).convert("L")
        width, height = image.size
        if min(width, height) < 200:
            continue
        reduced = image.reduce(2)
        for _ in range(args.windows):
            side = random.uniform(192, min(width, height))
            x0, y0 = random.uniform(0, width - side), random.uniform(0, height - side)
            direct = np.asarray(image.resize((96, 96), resample, box=(x0, y0, x0 + side, y0 + side)), dtype=float)
            box = (x0 / 2, y0 / 2, (x0 + side) / 2, (y0 + side) / 2)
            via_reduced = np.asarray(reduced.resize((96, 96), resample, box=box), dtype=float)
            diff = np.abs(direct - via_reduced)
            worst = max(worst, diff.max())
            means.append(diff.mean())
            mse = (diff**2).mean()
            psnrs.append(10 * np.log10(255**2 / mse) if mse else float("inf"))
    print(f"{len(means)} windows ({args.filter}): max abs {worst:.0f} levels, mean {np.mean(means):.2f}, "
          f"worst window mean {max(means):.2f}, PSNR down to {min(psnrs):.1f} dB")


if __name__ == "__main__":
    main()
