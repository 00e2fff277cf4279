#!/usr/bin/python3
"""Packs the files of a cache directory into one fuzz input for fuzz_cache_verify
(records of u8 file id, u32le length, bytes; ids as in cache_container.hpp)."""
import os, struct, sys

FILES = ["manifest.json", "manifest.json.xxh3", "image.bin", "image.meta.npy", "image.xxh3.npy",
         "label.npy", "index.npy", "path.bin", "path.offsets.npy", "label.index.keys.npy",
         "label.index.offsets.npy", "label.index.ids.npy", "label_index.npy"]
cache, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as f:
    for i, name in enumerate(FILES):
        p = os.path.join(cache, name)
        if os.path.exists(p):
            data = open(p, "rb").read()
            f.write(struct.pack("<BI", i, len(data)) + data)
