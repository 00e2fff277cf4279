#!/usr/bin/env python3
"""Writes a WebDataset tar-shard set of the size of ImageNet's train split (1,281,167 samples
by default, in 1,282 shards of <= 1,000 samples, 1,000 classes) made of small real JPEGs
(16 distinct 32x32 images cycled), for the scale figures (bench/scale_figures.sh).

Usage: make_synthetic_shards.py OUT_DIR [SAMPLES] [SHARDS]
Each sample is <key>.jpg + <key>.cls. Headers are written directly (ustar), which is ~10x
faster than tarfile for millions of tiny members; GNU tar lists the result.
"""
import io, os, sys

from PIL import Image


def header(name: bytes, size: int) -> bytes:
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % size
    h[136:148] = b"%011o\0" % 1700000000
    h[148:156] = b" " * 8
    h[156:157] = b"0"
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


def main():
    out = sys.argv[1]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 1_281_167
    shards = int(sys.argv[3]) if len(sys.argv) > 3 else 1_282
    os.makedirs(out, exist_ok=True)
    jpegs = []
    for i in range(16):
        img = Image.new("RGB", (32, 32), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256))
        for x in range(0, 32, 4):
            img.putpixel((x, (x * i) % 32), (255 - i * 8, i * 8, 128))
        b = io.BytesIO()
        img.save(b, "JPEG", quality=90)
        jpegs.append(padded(b.getvalue()))
    per_shard = -(-samples // shards)
    n = 0
    for s in range(shards):
        path = os.path.join(out, "train-%06d.tar" % s)
        with open(path, "wb") as f:
            chunks = []
            for _ in range(per_shard):
                if n >= samples:
                    break
                key = b"%08d" % n
                jpg = jpegs[n % 16]
                raw = jpg.rstrip(b"\0")  # JPEGs end with FFD9, never with NUL
                cls = b"%d" % (n % 1000)
                chunks.append(header(key + b".jpg", len(raw)))
                chunks.append(jpg)
                chunks.append(header(key + b".cls", len(cls)))
                chunks.append(padded(cls))
                n += 1
            chunks.append(b"\0" * 1024)
            f.write(b"".join(chunks))
    print(f"{n} samples in {shards} shards under {out}")


if __name__ == "__main__":
    main()
