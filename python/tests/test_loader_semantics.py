"""The Loader behaves as DataLoader/FFCV users expect (issue 37, "Loader semantics"): epochs
advance by themselves, set_epoch reproduces any epoch, errors never end an epoch silently,
misuse raises, allocation failures are MemoryError, crop specs keep their sizes."""
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import textwrap

import numpy as np
import pytest

import slipcache
from conftest import run


def ids_of(batches):
    """The sample ids of the batches (the sample cache's `index` field is the sample id)."""
    return [int(i) for b in batches for i in b["index"]]


def loader(cache, **kw):
    kw.setdefault("batch_size", 8)
    kw.setdefault("fields", ["index"])
    return slipcache.Loader(cache, **kw)


def test_the_index_field_is_the_sample_id(sample_cache):
    assert slipcache.Cache(sample_cache).column("index").tolist() == list(range(40))


def test_each_iteration_is_the_next_epoch(sample_cache):
    ld = loader(sample_cache, seed=3)
    first, second, third = ids_of(ld), ids_of(ld), ids_of(ld)
    assert ld.epoch == 2
    for epoch, got in enumerate((first, second, third)):
        assert got == loader(sample_cache, seed=3, epoch=epoch).order()
    assert first != second != third and sorted(first) == sorted(second) == list(range(40))
    # the crops change too, as with a fresh loader of that epoch
    a = np.concatenate([b["image"] for b in ld])  # epoch 3
    b = np.concatenate([b["image"] for b in loader(sample_cache, seed=3, epoch=3)])
    np.testing.assert_array_equal(a, b)


def test_set_epoch_reproduces_any_epoch_and_the_next_follows(sample_cache):
    ld = loader(sample_cache, seed=5)
    ld.set_epoch(7)
    a = [b["image"].copy() for b in ld]
    assert ld.epoch == 7
    following = ids_of(ld)
    assert ld.epoch == 8 and following == loader(sample_cache, seed=5, epoch=8).order()
    ld.set_epoch(7)
    for x, y in zip(a, (b["image"] for b in ld)):
        np.testing.assert_array_equal(x, y)
    ld.set_epoch(7)  # set_epoch twice before one iteration: the last one counts
    ld.set_epoch(2)
    assert ids_of(ld) == loader(sample_cache, seed=5, epoch=2).order()


def test_set_epoch_during_an_iteration_applies_to_the_next(sample_cache):
    ld = loader(sample_cache, seed=1)
    it = iter(ld)
    head = ids_of([next(it)])
    ld.set_epoch(9)
    assert ld.epoch == 9 and ld.order() == loader(sample_cache, seed=1, epoch=9).order()
    rest = ids_of(it)  # the running epoch finishes undisturbed
    assert head + rest == loader(sample_cache, seed=1, epoch=0).order()
    assert ids_of(ld) == loader(sample_cache, seed=1, epoch=9).order()


def test_next_without_iter_is_a_type_error(sample_cache):
    ld = loader(sample_cache)
    with pytest.raises(TypeError):
        next(ld)


def test_a_newer_iter_replaces_the_running_one(sample_cache):
    ld = loader(sample_cache, shuffle=False)
    old = iter(ld)
    next(old)
    new = iter(ld)
    with pytest.raises(ValueError, match="no longer running"):
        next(old)
    assert len(ids_of(new)) == 40
    with pytest.raises(StopIteration):  # an exhausted iterator stays exhausted
        next(new)


def test_empty_indices_give_an_empty_epoch(sample_cache):
    ld = loader(sample_cache, indices=[])
    assert len(ld) == 0 and ld.order() == [] and list(ld) == [] and ld.samples_per_epoch == 0
    assert list(loader(sample_cache, indices=[], world_size=2, rank=1)) == []
    assert ids_of(loader(sample_cache, indices=[5], shuffle=False)) == [5]


@pytest.fixture
def damaged_cache(sample_cache, tmp_path):
    """Sample 0's JPEG header zeroed (damage inside the entropy data is only a libjpeg warning)."""
    cache = str(tmp_path / "bad")
    shutil.copytree(sample_cache, cache)
    with open(os.path.join(cache, "image.bin"), "r+b") as f:
        assert f.read(2) == b"\xff\xd8"
        f.seek(0)
        f.write(b"\0" * 600)
    return cache


# Sample 0 in the third batch of 8: two good batches come first.
BAD_LAST = list(range(1, 17)) + [0] + list(range(17, 40))


def test_after_an_error_every_next_raises_it_again(damaged_cache):
    it = iter(loader(damaged_cache, shuffle=False, indices=BAD_LAST, crop_aware=False))
    assert ids_of([next(it), next(it)]) == list(range(1, 17))
    for _ in range(3):  # never a StopIteration that would end the epoch silently
        with pytest.raises(slipcache.Error, match="sample 0") as e:
            next(it)
        assert e.value.sample == 0 and e.value.code == 3 and e.value.kind == "bad_input"
        assert e.value.path.endswith("image.bin")


@pytest.mark.parametrize("pipeline", ["rrc", "center", "decode"])
def test_on_error_skip_leaves_out_the_bad_sample_and_goes_on(damaged_cache, pipeline):
    ld = loader(damaged_cache, shuffle=False, indices=BAD_LAST, pipeline=pipeline, on_error="skip")
    batches = list(ld)
    got = ids_of(batches)
    assert got == [i for i in BAD_LAST if i != 0]
    assert [len(b["index"]) for b in batches] == [8, 8, 7, 8, 8]
    images = batches[2]["image"]
    assert len(images) == 7
    assert [s for s, _ in ld.skipped] == [0] and "sample 0" in ld.skipped[0][1]
    # the kept samples' pixels are those of a loader that never met the bad one
    if pipeline != "decode":
        good = loader(damaged_cache, shuffle=False, indices=[i for i in BAD_LAST[16:24] if i != 0], pipeline=pipeline)
        np.testing.assert_array_equal(images, next(iter(good))["image"])
    assert len(list(ld)) == 5 and [s for s, _ in ld.skipped] == [0]  # a new iteration, a new count


def test_on_error_is_checked(sample_cache):
    with pytest.raises(slipcache.Error, match="on_error"):
        loader(sample_cache, on_error="ignore")


def test_resuming_mid_epoch_gives_the_rest_of_that_epoch(sample_cache):
    ld = loader(sample_cache, seed=2, epoch=4)
    it = iter(ld)
    next(it), next(it)
    state = ld.state_dict()
    assert {k: state[k] for k in ("epoch", "batch")} == {"epoch": 4, "batch": 2}
    rest = [b["image"].copy() for b in it]
    resumed = loader(sample_cache, seed=2)
    resumed.load_state_dict(state)
    again = [b["image"] for b in resumed]
    assert len(again) == len(rest) == 3
    for x, y in zip(rest, again):
        np.testing.assert_array_equal(x, y)
    assert (resumed.state_dict()["epoch"], resumed.state_dict()["batch"]) == (4, 5)
    assert ids_of(resumed) == loader(sample_cache, seed=2, epoch=5).order()  # then the next epoch
    with pytest.raises(slipcache.Error, match="start_batch"):
        resumed.set_epoch(0, start_batch=6)


def test_a_huge_batch_size_is_one_batch_of_every_sample(sample_cache):
    ld = loader(sample_cache, batch_size=4_000_000_000, pipeline="center")
    batches = list(ld)
    assert len(ld) == 1 and len(batches) == 1 and sorted(ids_of(batches)) == list(range(40))


def test_allocation_failures_are_memory_errors(sample_cache):
    # 64 crops of 4096 px in float32 are 12.9 GB a sample: under a 4 GB address-space limit the
    # buffer cannot be allocated, on the producer thread; the interpreter must survive it.
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import slipcache
        try:
            ld = slipcache.Loader({sample_cache!r}, batch_size=2, pipeline="64x4096", dtype="float32", threads=1)
            next(iter(ld))
            print("no error")
        except MemoryError:
            print("MemoryError")
        print("alive")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MemoryError", "alive"], out.stdout + out.stderr


def test_crop_specs_keep_their_sizes(sample_cache):
    assert next(iter(loader(sample_cache, pipeline="96")))["image"].shape == (8, 96, 96, 3)
    assert next(iter(loader(sample_cache, pipeline="96@0.5-1", layout="NCHW")))["image"].shape == (8, 3, 96, 96)
    assert next(iter(loader(sample_cache, pipeline="96", size=128)))["image"].shape == (8, 128, 128, 3)
    assert next(iter(loader(sample_cache)))["image"].shape == (8, 224, 224, 3)
    assert next(iter(loader(sample_cache, pipeline="center", size=160)))["image"].shape == (8, 160, 160, 3)
    b = next(iter(loader(sample_cache, pipeline="2x64,3x32@0.1-0.5")))
    assert [a.shape for a in b["image"]] == [(8, 2, 64, 64, 3), (8, 3, 32, 32, 3)]
    for bad, kw in [("2x96", dict(size=128)), ("multicrop", dict(size=128)), ("decode", dict(size=128)),
                    ("4294967297x96", {}), ("65x96", {}), ("1.5x96", {}), ("96", dict(scale=(0.5, 1)))]:
        with pytest.raises(slipcache.Error) as e:
            loader(sample_cache, pipeline=bad, **kw)
        assert e.value.code == 2, bad


def test_counts_are_checked(sample_cache):
    for kw in [dict(batch_size=0), dict(batch_size=-1), dict(rank=2, world_size=2), dict(world_size=0), dict(prefetch=-1)]:
        with pytest.raises(slipcache.Error):
            loader(sample_cache, **kw)
    with pytest.raises(TypeError):
        loader(sample_cache, batch_size=8.0)
    with pytest.raises(TypeError):
        loader(sample_cache, fields="label")
    with pytest.raises(slipcache.Error, match="beyond"):
        loader(sample_cache, indices=[40])


def test_default_fields_follow_the_cache(sample_cache, tmp_path):
    assert slipcache.Loader(sample_cache).fields == ["label"]
    # WebDataset shard of images only: a cache with no label field
    cache = slipcache.Cache(sample_cache)
    with tarfile.open(tmp_path / "shard-0.tar", "w") as tar:
        for i in range(6):
            data = cache[i]["image"]
            info = tarfile.TarInfo(f"s{i}.jpg")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = run("convert", tmp_path / "shard-0.tar", "-o", tmp_path / "c", "-q").strip()
    assert "label" not in slipcache.Cache(out).fields
    ld = slipcache.Loader(out, batch_size=4)
    assert ld.fields == [] and len(ld) == 2
    assert [list(b) for b in ld] == [["image"], ["image"]]
    with pytest.raises(slipcache.Error, match="no field"):
        slipcache.Loader(out, fields=["label"])


def test_paths_may_be_path_like(sample_cache):
    path = pathlib.Path(sample_cache)
    assert len(slipcache.Cache(path)) == 40
    ld = slipcache.Loader(path, batch_size=8)
    assert len(ld) == 5 and ld.cache.path == slipcache.Cache(sample_cache).path
    with pytest.raises(TypeError, match="os.PathLike"):
        slipcache.Cache(42)


def test_stage_dir_reads_one_checked_node_local_copy(sample_cache, tmp_path, monkeypatch):
    """Loader(stage_dir=) (or $SLIP_STAGE_DIR): the first Loader copies the cache into the
    directory, later ones read that copy without copying; the batches are the unstaged ones."""
    stage = tmp_path / "node"
    monkeypatch.delenv("SLIP_STAGE_DIR", raising=False)
    plain = [(b["index"].tolist(), b["image"].copy()) for b in loader(sample_cache, seed=4)]
    first = loader(sample_cache, seed=4, stage_dir=stage)
    assert first._staged[0].copied and first._cache.path.startswith(str(stage))
    staged_name = os.path.basename(first._cache.path)
    assert staged_name == os.path.basename(os.path.normpath(sample_cache))
    monkeypatch.setenv("SLIP_STAGE_DIR", str(stage))
    second = loader(sample_cache, seed=4)
    assert not second._staged[0].copied and second._cache.path == first._cache.path
    for got in (first, second):
        batches = [(b["index"].tolist(), b["image"]) for b in got]
        assert [i for i, _ in batches] == [i for i, _ in plain]
        for (_, a), (_, b) in zip(batches, plain):
            np.testing.assert_array_equal(a, b)
    monkeypatch.delenv("SLIP_STAGE_DIR")
    with pytest.raises(slipcache.Error) as e:
        slipcache.Loader(slipcache.Cache(sample_cache), stage_dir=stage)
    assert e.value.code == 2 and "stage_dir" in str(e.value)
