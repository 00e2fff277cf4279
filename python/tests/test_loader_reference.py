"""The slipcache Python module against independent references: the slip command (cat, order),
Pillow (the rgb path's crops), torchvision (the center pipeline), numpy."""
import io
import os
import resource
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

import slipcache
from conftest import run, SLIP


def test_values_equal_slip_cat(sample_cache):
    c = slipcache.Cache(sample_cache)
    assert len(c) == 40
    assert c.fields == {"image": "ImageBytes", "label": "int", "index": "int", "path": "str"}
    for i in (0, 7, 23, 39, -1):
        s = c[i]
        j = i % len(c)
        assert s["image"] == run("cat", sample_cache, j, "-F", "image", binary=True)
        assert s["label"] == int(run("cat", sample_cache, j, "-F", "label"))
        assert s["path"] + "\n" == run("cat", sample_cache, j, "-F", "path")  # cat ends a str line
    with pytest.raises(IndexError):
        c[40]


def test_column_is_a_zero_copy_read_only_view(sample_cache):
    c = slipcache.Cache(sample_cache)
    labels = c.column("label")
    assert labels.dtype == np.int64 and labels.shape == (40,)
    assert [int(v) for v in labels] == [c[i]["label"] for i in range(40)]
    assert not labels.flags.writeable and not labels.flags.owndata
    with pytest.raises(slipcache.Error, match="views numeric"):
        c.column("path")


@pytest.mark.parametrize("seed,epoch,rank,world,block", [(0, 0, 0, 1, 1), (1, 2, 0, 1, 1), (7, 3, 1, 3, 1), (5, 1, 2, 3, 4)])
def test_order_equals_slip_order(sample_cache, seed, epoch, rank, world, block):
    loader = slipcache.Loader(sample_cache, batch_size=8, seed=seed, epoch=epoch, rank=rank, world_size=world, block_size=block)
    want = [int(x) for x in run("order", sample_cache, "--seed", seed, "--epoch", epoch, "--rank", rank,
                                "--world-size", world, "--block-size", block).split()]
    assert loader.order() == want
    labels = slipcache.Cache(sample_cache).column("label")
    got = np.concatenate([b["label"] for b in loader])
    assert got.tolist() == [int(labels[i]) for i in want]  # batches come in that order


def test_rank_slices_are_disjoint_and_cover(sample_cache):
    orders = [slipcache.Loader(sample_cache, seed=3, rank=r, world_size=3).order() for r in range(3)]
    assert sorted(set().union(*map(set, orders))) == list(range(40))
    assert [len(o) for o in orders] == [14, 14, 14]  # ceil(40/3), padded by repetition
    # Rank r takes global positions r, r+3, ...; the 2 of padding (positions 40, 41) wrap to the
    # epoch's positions 0 and 1 (DistributedSampler's rule): nothing else is seen twice.
    assert sum(map(len, orders)) - len(set().union(*map(set, orders))) == 2
    assert orders[1][-1] == orders[0][0] and orders[2][-1] == orders[1][0]


def pillow_crop(payload, window, size):
    x, y, w, h, flip = window
    img = Image.open(io.BytesIO(payload)).convert("RGB")
    out = img.crop((x, y, x + w, y + h)).resize((size, size), Image.BILINEAR)
    if flip:
        out = out.transpose(Image.FLIP_LEFT_RIGHT)
    return np.asarray(out)


def test_rgb_path_crops_are_pillows_bytes(sample_cache):
    """The engine's windows (seed, epoch, sample), cut and resized by Pillow, are the loader's
    bytes exactly on the rgb path without DCT scaling (docs/PERFORMANCE.md)."""
    c = slipcache.Cache(sample_cache)
    loader = slipcache.Loader(c, batch_size=16, seed=11, epoch=2, resample="rgb", crop_aware=False, threads=2)
    ids = loader.order()
    seen = 0
    for b in loader:
        for k in range(b["image"].shape[0]):
            sid = ids[seen + k]
            want = pillow_crop(c[sid]["image"], loader.window(sid), 224)
            np.testing.assert_array_equal(b["image"][k], want, err_msg=f"sample {sid}")
        seen += b["image"].shape[0]
    assert seen == 40


def test_batches_do_not_depend_on_threads_or_batch_size(sample_cache):
    def images(**kw):
        return np.concatenate([b["image"] for b in slipcache.Loader(sample_cache, seed=4, epoch=1, **kw)])
    a = images(threads=1, batch_size=8)
    np.testing.assert_array_equal(a, images(threads=2, batch_size=16))
    np.testing.assert_array_equal(a, images(threads=2, batch_size=40, prefetch=1))
    assert not np.array_equal(a, np.concatenate([b["image"] for b in slipcache.Loader(sample_cache, seed=4, epoch=2)]))


def test_every_simd_level_gives_the_same_batches(sample_cache):
    best = slipcache.simd_level()
    levels = ["scalar", "sse4", "avx2", "avx512"]
    assert best in levels
    def images(pipeline, resample):
        return [np.concatenate([np.asarray(a) for a in (b["image"] if isinstance(b["image"], list) else [b["image"]])], axis=None)
                for b in slipcache.Loader(sample_cache, batch_size=16, seed=3, pipeline=pipeline, resample=resample, filter="bicubic")]
    try:
        for pipeline, resample in [("rrc", "rgb"), ("rrc", "planar"), ("multicrop", "planar"), ("decode", "auto")]:
            slipcache.set_simd_level(best)
            want = images(pipeline, resample)
            for level in levels[:levels.index(best)]:
                slipcache.set_simd_level(level)
                assert slipcache.simd_level() == level
                got = images(pipeline, resample)
                assert len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want)), (pipeline, resample, level)
        if best != "avx512":
            with pytest.raises(slipcache.Error, match="SIMD level avx512 is not available on this CPU"):
                slipcache.set_simd_level("avx512")
    finally:
        slipcache.set_simd_level(best)
    assert slipcache.simd_level() == best


def test_float32_nchw_is_normalised_uint8(sample_cache):
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    u8 = next(iter(slipcache.Loader(sample_cache, batch_size=8, seed=2)))["image"].copy()
    f32 = next(iter(slipcache.Loader(sample_cache, batch_size=8, seed=2, dtype="float32", layout="NCHW")))["image"]
    assert f32.dtype == np.float32 and f32.shape == (8, 3, 224, 224)
    want = ((u8.astype(np.float64) / 255 - mean) / std).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(f32, want, atol=1e-5)


def test_multicrop_gives_one_array_per_group(sample_cache):
    b = next(iter(slipcache.Loader(sample_cache, batch_size=4, pipeline="2x224@0.32-1,8x96@0.05-0.32")))
    assert [a.shape for a in b["image"]] == [(4, 2, 224, 224, 3), (4, 8, 96, 96, 3)]


def test_center_pipeline_against_torchvision(corpus_cache):
    """Resize(256) + CenterCrop(224) within the bounds in docs/PERFORMANCE.md (mean <= 1, PSNR >= 40 dB)."""
    tv = pytest.importorskip("torchvision.transforms")
    c = slipcache.Cache(corpus_cache)
    loader = slipcache.Loader(c, batch_size=32, pipeline="center", shuffle=False, indices=list(range(0, 800, 25)))
    transform = tv.Compose([tv.Resize(256), tv.CenterCrop(224)])
    batch = next(iter(loader))["image"]
    for k, sid in enumerate(range(0, 800, 25)):
        want = np.asarray(transform(Image.open(io.BytesIO(c[sid]["image"])).convert("RGB"))).astype(np.float64)
        diff = np.abs(batch[k].astype(np.float64) - want)
        mse = (diff ** 2).mean()
        psnr = 10 * np.log10(255 ** 2 / mse) if mse else 99
        assert diff.mean() <= 1.0 and psnr >= 40, (sid, diff.mean(), psnr)


def test_yuv420_siblings_decode_like_the_jpegs(sample_cache, tmp_path):
    cache = str(tmp_path / "c")
    shutil.copytree(sample_cache, cache)
    run("yuv420", cache, "-q")
    a = next(iter(slipcache.Loader(cache, batch_size=16, pipeline="center", shuffle=False)))["image"].astype(np.float64)
    b = next(iter(slipcache.Loader(cache, batch_size=16, pipeline="center", shuffle=False, yuv420_siblings=True)))["image"]
    assert np.abs(a - b).mean() <= 4.0  # odd sizes included: crops under a pixel apart
    # Every even-sized image, rrc on both paths (an odd-sized one's sibling is padded to even
    # sizes and its crops drawn from that size, as the Python loader does: docs/YUV420.md).
    c = slipcache.Cache(cache)
    even = [i for i in range(40) if all(d % 2 == 0 for d in Image.open(io.BytesIO(c[i]["image"])).size)]
    assert len(even) >= 10
    for resample in ("auto", "rgb"):
        kw = dict(batch_size=40, pipeline="rrc", shuffle=False, resample=resample, seed=5, indices=even)
        a = next(iter(slipcache.Loader(cache, **kw)))["image"].astype(np.float64)
        b = next(iter(slipcache.Loader(cache, yuv420_siblings=True, **kw)))["image"]
        n = len(even)
        diff = np.abs(a - b).reshape(n, -1)
        mse = ((a - b) ** 2).reshape(n, -1).mean(1)
        psnr = 10 * np.log10(255**2 / np.maximum(mse, 1e-9))
        assert diff.mean(1).max() <= 2.5 and psnr.min() >= 30, (resample, diff.mean(1).max(), psnr.min())


def test_torch_from_numpy_is_zero_copy(sample_cache):
    torch = pytest.importorskip("torch")
    b = next(iter(slipcache.Loader(sample_cache, batch_size=8)))
    t = torch.from_numpy(b["image"])
    assert t.data_ptr() == b["image"].ctypes.data and tuple(t.shape) == (8, 224, 224, 3)


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGESIZE") // 1024


def test_no_leak_over_50_epochs(sample_cache):
    loader = slipcache.Loader(sample_cache, batch_size=8, threads=2)
    for epoch in range(50):
        loader.set_epoch(epoch)
        for b in loader:
            assert b["image"].shape[1:] == (224, 224, 3)
        if epoch == 9:
            after_10 = rss_kb()
    assert rss_kb() - after_10 < 8 * 1024, (after_10, rss_kb())


def test_errors_are_slip_errors_with_the_path(sample_cache, tmp_path):
    with pytest.raises(slipcache.Error, match="/nonexistent"):
        slipcache.Cache("/nonexistent")
    with pytest.raises(slipcache.Error, match="no field"):
        slipcache.Loader(sample_cache, fields=("nope",))
    with pytest.raises(slipcache.Error):
        slipcache.Loader(sample_cache, rank=3, world_size=2)
    # A payload damaged after conversion (sample 0's header zeroed; damage inside the entropy
    # data is only a libjpeg warning, which real ImageNet files trigger): the batch raises,
    # naming the sample.
    cache = str(tmp_path / "bad")
    shutil.copytree(sample_cache, cache)
    with open(os.path.join(cache, "image.bin"), "r+b") as f:
        assert f.read(2) == b"\xff\xd8"
        f.seek(0)
        f.write(b"\0" * 600)
    with pytest.raises(slipcache.Error, match="sample 0"):
        for _ in slipcache.Loader(cache, batch_size=40, shuffle=False, crop_aware=False):
            pass


def test_keyboard_interrupt_stops_the_prefetch(corpus_cache):
    # numpy is imported, and the first batch taken, before the timer starts: a SIGINT that
    # lands while numpy is still being imported (a loaded machine) leaves a half-initialised
    # numpy behind, which is not what this test is about.
    # The epoch is long (the corpus 50 times over: 200 batches on one thread, tens of seconds),
    # so the SIGINT always lands while the epoch runs, whatever the machine's load; an epoch
    # that ends without KeyboardInterrupt means the signal was ignored.
    script = textwrap.dedent(f"""
        import os, signal, threading
        import numpy, slipcache
        loader = slipcache.Loader({corpus_cache!r}, batch_size=200, threads=1,
                                  indices=numpy.tile(numpy.arange(800), 50))
        try:
            for i, b in enumerate(loader):
                if i == 0:
                    threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        print(next(iter(loader))["image"].shape[0])  # the loader still works after
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["interrupted", "200"], out.stdout


def test_batches_may_be_kept_and_outlive_the_loader(sample_cache):
    # list() keeps every batch: the loader allocates instead of waiting for buffers that never
    # come back; the arrays stay valid after the loader is gone and equal a fresh epoch's.
    loader = slipcache.Loader(sample_cache, batch_size=2, pipeline="center", shuffle=False, prefetch=1)
    kept = list(loader)
    assert len(kept) == 20
    fresh = [b["image"].copy() for b in slipcache.Loader(sample_cache, batch_size=2, pipeline="center", shuffle=False)]
    del loader
    import gc
    gc.collect()
    for a, b in zip(kept, fresh):
        assert np.array_equal(a["image"], b)


def test_example_training_loop_runs(sample_cache):
    pytest.importorskip("torch")
    from conftest import SRC
    out = subprocess.run([sys.executable, os.path.join(SRC, "examples", "train_loop.py"), sample_cache, "2"],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [l.split(":")[0] for l in lines] == ["epoch 0", "epoch 1"] and all("3 batches" in l for l in lines), out.stdout


def test_decode_pipeline_gives_whole_images_equal_to_pillow(sample_cache):
    # pipeline="decode": a list of whole images, each its own size, equal to Pillow's
    # Image.open().convert("RGB") (CMYK, PNG and grayscale files of the sample included).
    c = slipcache.Cache(sample_cache)
    loader = slipcache.Loader(sample_cache, batch_size=16, pipeline="decode", shuffle=False)
    seen = 0
    for batch in loader:
        assert isinstance(batch["image"], list) and len(batch["image"]) == len(batch["label"])
        for k, image in enumerate(batch["image"]):
            reference = np.asarray(Image.open(io.BytesIO(c[seen + k]["image"])).convert("RGB"))
            assert image.dtype == np.uint8 and image.shape == reference.shape, (seen + k, image.shape)
            assert np.array_equal(image, reference), seen + k
        seen += len(batch["image"])
    assert seen == 40
    with pytest.raises(slipcache.Error, match="uint8 HWC"):
        slipcache.Loader(sample_cache, pipeline="decode", dtype="float32")


def test_decode_pipeline_images_are_views_of_one_block_that_outlive_later_batches_and_the_loader(sample_cache):
    # pipeline="decode" hands a batch's block itself to numpy: its images are writable views laid
    # one after another in it (no copy, no array of its own), all kept alive by one base object.
    # A batch kept while later batches and epochs run keeps its block (the loader takes another)
    # and its pixels, also after the loader is gone; writing into it changes no other batch.
    c = slipcache.Cache(sample_cache)

    def pillow(i):
        return np.asarray(Image.open(io.BytesIO(c[i]["image"])).convert("RGB"))

    loader = slipcache.Loader(sample_cache, batch_size=8, pipeline="decode", seed=3, prefetch=1, fields=["index"])
    it = iter(loader)
    kept = next(it)
    images, ids = kept["image"], [int(i) for i in kept["index"]]
    assert len(images) == 8
    start = images[0].__array_interface__["data"][0]
    offset = 0
    for image, i in zip(images, ids):
        assert image.flags.writeable and not image.flags.owndata and image.flags.c_contiguous
        assert image.base is images[0].base  # one owner for the whole batch
        assert image.__array_interface__["data"][0] == start + offset  # packed one after another
        offset += image.nbytes
        assert np.array_equal(image, pillow(i)), i
    end = start + offset
    images[0][:] = 7  # writable: yours until dropped
    later = 0
    for epoch in range(3):
        for batch in (it if epoch == 0 else loader):
            for image, i in zip(batch["image"], batch["index"]):
                address = image.__array_interface__["data"][0]
                assert not start <= address < end, "a kept batch's block was decoded into again"
                assert np.array_equal(image, pillow(int(i))), int(i)
            later += 1
    assert later == 4 + 5 + 5
    del it, loader, batch
    import gc
    gc.collect()
    assert (images[0] == 7).all()
    for image, i in zip(images[1:], ids[1:]):
        assert np.array_equal(image, pillow(i)), i


def test_ddp_example_trains_resumes_and_is_the_docs_loop(sample_cache, tmp_path):
    """examples/train_ddp.py (docs/PYTHON.md shows it verbatim): stopped after 3 batches (epoch 1,
    batch 1 of 2), run again it finishes epoch 1 from its second batch, then epoch 2."""
    pytest.importorskip("torch")
    from conftest import SRC
    example = os.path.join(SRC, "examples", "train_ddp.py")
    with open(os.path.join(SRC, "docs", "PYTHON.md")) as doc, open(example) as f:
        assert f.read() in doc.read()
    command = [sys.executable, example, sample_cache, "--epochs", "3", "--batch-size", "16", "--size", "64", "--threads", "2",
               "--checkpoint", str(tmp_path / "ckpt.pt")]
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    first = subprocess.run(command + ["--stop-after", "3"], capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode != 0 and "stopped after 3 batches at {'version': 3, 'epoch': 1, 'consumed': 16, 'samples': 40," in first.stderr, first.stderr
    assert [l.split(":")[0] for l in first.stdout.splitlines()] == ["epoch 0"]
    second = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert second.returncode == 0, second.stderr
    assert [l.split(",")[0] for l in second.stdout.splitlines()] == ["epoch 1: 16 samples", "epoch 2: 32 samples"], second.stdout
