"""slipcache.Loader over a dataset of several caches (issue 44): `slip convert --shard I/N` parts,
lists of caches and list files read as one dataset with global ids; each sample's pixels are
those a Loader over the merged (single-process) conversion gives; weighted mixes are `slip order --mix`'s order; the
state records the mix; set_weights takes effect at the next epoch; a changed part is refused."""
import json
import os

import numpy as np
import pytest

import slipcache
from conftest import SRC, run


@pytest.fixture(scope="session")
def sample_parts(tmp_path_factory):
    """examples/sample converted as 3 parts (`slip convert --shard I/3`): their work directory."""
    from conftest import SLIP
    if not SLIP:
        pytest.skip("SLIP (the slip binary) not set")
    out = tmp_path_factory.mktemp("parts")
    parts = [run("convert", os.path.join(SRC, "examples", "sample"), "-o", out, "--shard", f"{i}/3", "-q").strip()
             for i in range(3)]
    return os.path.dirname(parts[0]), parts


def whole_cache_pixels(cache, epoch, **kw):
    """The whole conversion's crops in id order (unshuffled): a dataset of its parts reads as it."""
    ld = slipcache.Loader(cache, batch_size=64, shuffle=False, epoch=epoch, fields=[], **kw)
    return (np.concatenate([b["image"] for b in ld]) if kw.get("pipeline") != "decode"
            else [im for b in ld for im in b["image"]])


def locate(sizes, g):
    for c, n in enumerate(sizes):
        if g < n:
            return c, g
        g -= n
    raise AssertionError("past the dataset")


@pytest.mark.parametrize("pipeline", ["32", "decode"])
def test_a_dataset_gives_its_merged_caches_pixels(sample_parts, sample_cache, pipeline):
    work, parts = sample_parts
    ld = slipcache.Loader(work, batch_size=7, pipeline=pipeline, seed=5, epoch=2, fields=["index"], threads=2)
    ds = ld.dataset
    assert isinstance(ds, slipcache.Dataset) and len(ds) == 40 and ds.paths == parts
    sizes = ds.sizes
    assert sizes == [13, 13, 14]
    whole = whole_cache_pixels(sample_cache, 2, seed=5, pipeline=pipeline, threads=2)
    order = ld.order()
    whole_index = slipcache.Cache(sample_cache).column("index")
    seen = []
    for k, batch in enumerate(ld):
        ids = order[k * 7:(k + 1) * 7]
        assert len(batch["image"]) == len(ids)
        for i, g in enumerate(ids):
            assert np.array_equal(batch["image"][i], whole[g]), f"sample {g}"
            assert batch["index"][i] == whole_index[g]  # global ids are the whole conversion's
        seen += ids
    assert sorted(seen) == list(range(40))
    # The same dataset named by its parts, or by a list file, gives the same order.
    assert slipcache.Loader(parts, batch_size=7, seed=5, epoch=2).order() == order
    assert slipcache.Loader(slipcache.Dataset(work), batch_size=7, seed=5, epoch=2).order() == order
    with pytest.raises(slipcache.Error, match="loader.dataset"):
        ld.cache


def slip_order(work, seed, epoch, mix, epoch_size=None, rank=0, world=1, consumed=0):
    args = ["order", work, "--seed", seed, "--epoch", epoch, "--mix", mix, "--rank", rank, "--world-size", world,
            "--consumed", consumed, "--json"]
    if epoch_size is not None:
        args += ["--epoch-size", epoch_size]
    return json.loads(run(*args))["ids"]


def test_weights_mix_the_caches_as_slip_order_does(sample_parts):
    work, parts = sample_parts
    weights = [{"proportion": 0.5}, {"proportion": 0.25}, {"proportion": 0.25}]
    for rank in range(3):
        ld = slipcache.Loader(work, batch_size=8, seed=4, epoch=1, rank=rank, world_size=3, weights=weights, epoch_size=80,
                              fields=["index"])
        expected = slip_order(work, 4, 1, "proportion:0.5,0.25,0.25", 80, rank, 3)
        assert ld.order() == expected
        assert [int(i) for b in ld for i in b["index"]] == expected  # the index field is the global id here
    ld = slipcache.Loader(work, batch_size=8, seed=4, weights=weights, epoch_size=80)
    counts = np.bincount([locate([13, 13, 14], g)[0] for g in ld.order()], minlength=3)
    assert counts.tolist() == [40, 20, 20]
    # slip order --mix's text, and repeat/choose.
    assert slipcache.Loader(work, seed=4, weights="proportion:0.5,0.25,0.25", epoch_size=80).order() == ld.order()
    rc = slipcache.Loader(work, seed=4, weights=[{"repeat": 2}, {"choose": 5}, {}])
    assert len(rc.order()) == 26 + 5 + 14
    assert rc.weights == [{"repeat": 2.0}, {"choose": 5}, {}]
    # A JSON list's weights are the default.
    doc = json.loads(slipcache.Dataset(work).list_json())
    for entry, w in zip(doc["caches"], weights):
        entry.update(w)
    doc["epoch_size"] = 80
    listed = os.path.join(os.path.dirname(work), "mix.json")
    with open(listed, "w") as f:
        json.dump(doc, f)
    assert slipcache.Loader(listed, seed=4).order() == ld.order()
    # Refused: weights not one per cache, mixed kinds, with indices, bad types.
    for bad in ([{"proportion": 1}], [{"proportion": 1}, {"repeat": 1}, {"proportion": 1}], [{"share": 1}] * 3):
        with pytest.raises(slipcache.Error) as e:
            slipcache.Loader(work, weights=bad)
        assert e.value.code == 2
    with pytest.raises(slipcache.Error):
        slipcache.Loader(work, weights=weights, indices=[0, 1])
    with pytest.raises(TypeError):
        slipcache.Loader(work, weights=[0.5, 0.25, 0.25])


def test_state_dict_records_the_mix_and_resumes_with_it(sample_parts):
    work, _ = sample_parts
    first = [{"proportion": 0.6}, {"proportion": 0.2}, {"proportion": 0.2}]
    second = [{"proportion": 0.1}, {"proportion": 0.1}, {"proportion": 0.8}]
    ld = slipcache.Loader(work, batch_size=5, seed=9, weights=first, epoch_size=30, fields=["index"])
    it = iter(ld)
    before = [int(i) for _ in range(2) for i in next(it)["index"]]
    state = json.loads(json.dumps(ld.state_dict()))  # JSON-serialisable, as checkpoints store it
    assert state["version"] == 3 and state["consumed"] == 10 and state["samples"] == 30
    assert state["weights"] == first and state["epoch_size"] == 30
    rest = [int(i) for b in it for i in b["index"]]
    assert len(before) + len(rest) == 30
    # Another Loader with another mix finishes the epoch with the recorded one, then runs its own.
    other = slipcache.Loader(work, batch_size=4, seed=9, weights=second, epoch_size=20, fields=["index"])
    other.load_state_dict(state)
    assert [int(i) for b in other for i in b["index"]] == rest
    assert other.epoch == 0
    nxt = [int(i) for b in other for i in b["index"]]
    assert other.epoch == 1 and len(nxt) == 20
    assert nxt == slipcache.Loader(work, seed=9, weights=second, epoch_size=20, epoch=1).order()
    # A version-2 state (no mix) resumes with the Loader's own mix, refused if the epoch differs.
    old = {k: v for k, v in state.items() if k not in ("weights", "epoch_size")}
    old["version"] = 2
    with pytest.raises(slipcache.Error, match="number of samples"):
        other.load_state_dict(old)
    same = slipcache.Loader(work, batch_size=5, seed=9, weights=first, epoch_size=30, fields=["index"])
    same.load_state_dict(old)
    assert [int(i) for b in same for i in b["index"]] == rest


def test_set_weights_takes_effect_at_the_next_epoch(sample_parts):
    work, _ = sample_parts
    ld = slipcache.Loader(work, batch_size=4, seed=2, fields=["index"])
    it = iter(ld)
    got = [int(i) for i in next(it)["index"]]
    ld.set_weights([{"choose": 2}, {"choose": 2}, {"choose": 6}])
    assert ld.weights == [{"choose": 2}, {"choose": 2}, {"choose": 6}]
    got += [int(i) for b in it for i in b["index"]]
    assert sorted(got) == list(range(40)), "the running epoch keeps its mix"
    assert ld.state_dict()["weights"] == []
    nxt = [int(i) for b in ld for i in b["index"]]
    assert ld.epoch == 1 and len(nxt) == 10
    assert [locate([13, 13, 14], g)[0] for g in nxt].count(2) == 6
    assert ld.state_dict()["weights"] == [{"choose": 2}, {"choose": 2}, {"choose": 6}]
    ld.set_weights(None)  # back to every sample once
    assert sorted(int(i) for b in ld for i in b["index"]) == list(range(40))


def test_a_changed_part_in_a_list_is_refused(sample_parts, tmp_path):
    work, parts = sample_parts
    import shutil
    copies = []
    for p in parts:
        copies.append(str(tmp_path / os.path.basename(p)))
        shutil.copytree(p, copies[-1])
    listed = tmp_path / "list.json"
    listed.write_text(slipcache.Dataset(copies).list_json())
    assert len(slipcache.Loader(str(listed)).order()) == 40
    manifest = os.path.join(copies[1], "manifest.json")
    doc = json.load(open(manifest))
    cid = doc["slip"]["content_id"]
    doc["slip"]["content_id"] = ("b" if cid[0] == "a" else "a") + cid[1:]  # as a re-conversion would
    with open(manifest, "w") as f:
        json.dump(doc, f)
    with pytest.raises(slipcache.Error, match="changed since the list was written") as e:
        slipcache.Loader(str(listed))
    assert e.value.code == 3 and e.value.path == copies[1]


def test_the_first_parameters_old_name_still_works(sample_cache):
    """`Loader(cache=...)` (its name before datasets) is `Loader(source)`; both or neither: TypeError."""
    assert slipcache.Loader(cache=sample_cache, batch_size=8, seed=3).order() == \
        slipcache.Loader(sample_cache, batch_size=8, seed=3).order()
    with pytest.raises(TypeError, match="not both"):
        slipcache.Loader(sample_cache, cache=sample_cache)
    with pytest.raises(TypeError, match="needs a source"):
        slipcache.Loader()
