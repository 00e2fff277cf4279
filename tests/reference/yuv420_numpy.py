"""Independent numpy implementation of the YUV420 payload of docs/FORMAT.md#yuv420-conversion.

Usage: yuv420_numpy.py DIR
DIR holds pairs NAME.rgb.npy (H x W x 3 uint8, the pixels slip converted) and NAME.yuv
(slip's payload). Each payload must be byte-identical to what this script computes from the
same pixels. Prints one line per pair; exits 1 on the first difference.
"""
import pathlib
import sys

import numpy as np


def rgb_to_yuv420(rgb: np.ndarray) -> bytes:
    h, w, _ = rgb.shape
    # Step 2: pad odd sizes by replicating the last row / column.
    if h % 2:
        rgb = np.concatenate([rgb, rgb[-1:, :, :]], axis=0)
    if w % 2:
        rgb = np.concatenate([rgb, rgb[:, -1:, :]], axis=1)
    f = rgb.astype(np.float32)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    c = np.float32
    # Step 3: float32, coefficients rounded to float32, summed left to right, then the offset.
    y = c(0.299) * r + c(0.587) * g + c(0.114) * b
    u = c(-0.168736) * r - c(0.331264) * g + c(0.5) * b + c(128)
    v = c(0.5) * r - c(0.418688) * g - c(0.081312) * b + c(128)
    y, u, v = (np.clip(p, 0, 255).astype(np.uint8) for p in (y, u, v))

    # Step 4: floor of the mean of each 2x2 block of the truncated values.
    def sub(p):
        p = p.astype(np.uint16)
        return ((p[0::2, 0::2] + p[0::2, 1::2] + p[1::2, 0::2] + p[1::2, 1::2]) // 4).astype(np.uint8)

    # Step 5: planar Y, U, V.
    return y.tobytes() + sub(u).tobytes() + sub(v).tobytes()


def main() -> int:
    d = pathlib.Path(sys.argv[1])
    pairs = sorted(d.glob("*.rgb.npy"))
    if not pairs:
        print("no *.rgb.npy in", d)
        return 1
    for p in pairs:
        rgb = np.load(p)
        assert rgb.dtype == np.uint8 and rgb.ndim == 3 and rgb.shape[2] == 3, (p, rgb.dtype, rgb.shape)
        ours = (d / (p.name[: -len(".rgb.npy")] + ".yuv")).read_bytes()
        want = rgb_to_yuv420(rgb)
        if ours != want:
            a = np.frombuffer(ours, np.uint8)
            b = np.frombuffer(want, np.uint8)
            n = min(len(a), len(b))
            first = int(np.argmax(a[:n] != b[:n])) if n else 0
            print(f"{p.name}: {rgb.shape} differs: {len(a)} vs {len(b)} bytes, first difference at byte {first}")
            return 1
        print(f"{p.name}: {rgb.shape[1]}x{rgb.shape[0]} identical ({len(want)} bytes)")
    print(f"{len(pairs)} payloads byte-identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
