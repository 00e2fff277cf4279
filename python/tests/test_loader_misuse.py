"""The Loader under misuse (issue 42, "A Loader used from two threads"; issue 44's state rule):
one Loader iterated from several threads, a Loader inherited by a forked child, arguments of
the wrong type or out of range (checked without a loop over a range), and states loaded on a
loader whose batches mean other samples. Runs that could hang run in a subprocess with a
timeout, so a deadlock fails the test instead of stalling the suite."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import slipcache


def run_script(script, timeout=180, **env):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, **env})
    return out


def ids_of(batches):
    return [int(i) for b in batches for i in b["index"]]


def test_one_loader_iterated_from_several_threads(sample_cache):
    # numpy is not imported by the script before the threads run (the deadlock: both
    # threads made their first arrays at once). Whatever the scheduling, each thread's
    # iteration either ends with a whole epoch (every sample once) or raises the documented
    # ValueError because another thread's iter() replaced it; never a hang, never a short epoch.
    out = run_script(f"""
        import sys, threading
        import slipcache
        loader = slipcache.Loader({sample_cache!r}, batch_size=4, fields=["index"], threads=1, pipeline="96")
        results, lock = [], threading.Lock()
        def work():
            for _ in range(3):
                got = []
                try:
                    for b in loader:
                        got += [int(i) for i in b["index"]]
                    outcome = "whole" if sorted(got) == list(range(40)) else "short:%d" % len(got)
                except ValueError as e:
                    outcome = "replaced" if "no longer running" in str(e) else "other:" + str(e)
                except BaseException as e:
                    outcome = "other:%r" % e
                with lock:
                    results.append(outcome)
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(" ".join(results))
        print(len(list(loader)))  # the loader still works after
    """)
    assert out.returncode == 0, out.stderr
    outcomes, after = out.stdout.splitlines()
    assert len(outcomes.split()) == 12 and set(outcomes.split()) <= {"whole", "replaced"}, outcomes
    assert "whole" in outcomes.split()  # the last iteration to start is never replaced
    assert after == "10"


def test_a_forked_child_gets_an_error_that_says_what_to_do(sample_cache):
    out = run_script(f"""
        import gc, os, sys
        import slipcache
        loader = slipcache.Loader({sample_cache!r}, batch_size=4, fields=["index"], threads=2, pipeline="96")
        it = iter(loader)
        batch = next(it)  # the producer and decode threads run in the parent
        pid = os.fork()
        if pid == 0:
            code = 0
            for attempt in (lambda: next(iter(loader)), lambda: next(it), lambda: loader.skipped):
                try:
                    attempt()
                    print("child: no error"); code = 1
                except slipcache.Error as e:
                    if not (e.code == 2 and "create the Loader in the child" in str(e) and "fork" in str(e)):
                        print("child: wrong error", e); code = 1
                except BaseException as e:
                    print("child: not slipcache.Error:", repr(e)); code = 1
            # what needs no thread still works; a Loader made in the child works
            assert len(loader) == 10 and sorted(loader.order()) == list(range(40))
            fresh = slipcache.Loader({sample_cache!r}, batch_size=4, fields=["index"], threads=2, pipeline="96")
            if sorted(i for b in fresh for i in b["index"].tolist()) != list(range(40)):
                print("child: fresh loader wrong"); code = 1
            del batch, it, loader, fresh  # the parent's Loader and arrays go away without a crash
            gc.collect()
            sys.stdout.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        rest = [i for b in it for i in b["index"].tolist()]
        print("parent", len(rest) + len(batch["index"]))
    """, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2:] == ["child exit 0", "parent 40"], out.stdout + out.stderr


def test_a_forked_child_may_exit_with_the_parents_loader(sample_cache):
    # The child does nothing with the Loader: the interpreter's exit destroys it there.
    out = run_script(f"""
        import os
        import slipcache
        loader = slipcache.Loader({sample_cache!r}, batch_size=4, threads=2, pipeline="96")
        it = iter(loader); next(it)
        pid = os.fork()
        if pid == 0:
            raise SystemExit(0)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["0"], out.stdout + out.stderr


def loader(cache, **kw):
    kw.setdefault("batch_size", 8)
    kw.setdefault("fields", ["index"])
    return slipcache.Loader(cache, **kw)


@pytest.mark.parametrize("indices", [[1.5], [True], [np.float64(1.0)], ["1"], np.array([1.5]), np.array([True]),
                                     np.array([[1, 2]]), "12", 3])
def test_indices_must_be_integers(sample_cache, indices):
    with pytest.raises(TypeError, match="indices"):
        loader(sample_cache, indices=indices)


def test_indices_ranges_and_arrays(sample_cache):
    assert ids_of(loader(sample_cache, indices=range(0, 40, 3), shuffle=False)) == list(range(0, 40, 3))
    assert ids_of(loader(sample_cache, indices=range(39, -1, -2), shuffle=False)) == list(range(39, -1, -2))
    assert ids_of(loader(sample_cache, indices=range(7, 8), shuffle=False)) == [7]
    assert list(loader(sample_cache, indices=range(5, 5))) == []
    assert ids_of(loader(sample_cache, indices=np.array([5, 3, 39], dtype=np.int32), shuffle=False)) == [5, 3, 39]
    assert ids_of(loader(sample_cache, indices=np.array([2, 0], dtype=np.uint8), shuffle=False)) == [2, 0]
    assert ids_of(loader(sample_cache, indices=[np.int64(4), 6], shuffle=False)) == [4, 6]
    shuffled = loader(sample_cache, indices=range(40), seed=4).order()
    assert shuffled == loader(sample_cache, indices=list(range(40)), seed=4).order() == loader(sample_cache, seed=4).order()
    for bad, what in [([40], "index 40 is beyond"), ([-1], ">= 0"), (np.array([3, 40]), "index 40 is beyond"),
                      (np.array([-2, 3]), ">= 0"), (range(-1, 5), ">= 0"), (range(35, 45), "index 44 is beyond"),
                      (range(45, 30, -1), "index 45 is beyond"), ([2**64], "beyond")]:
        with pytest.raises(slipcache.Error, match=what) as e:
            loader(sample_cache, indices=bad)
        assert e.value.code == 2


def test_a_huge_range_is_checked_without_a_list(sample_cache):
    # Under a 1.5 GB address space: a range of 10**12 ids turned into a list would be a
    # MemoryError (before the fix: 60 s and GBs for range(10**8)); its ends alone are checked.
    out = run_script(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
        import slipcache
        for r in (range(10**12), range(10**30, 0, -1), range(0, 10**12, 10**6)):
            try:
                slipcache.Loader({sample_cache!r}, indices=r, threads=1)
                print("accepted")
            except slipcache.Error as e:
                print("Error" if "beyond" in str(e) else e)
            except BaseException as e:
                print(type(e).__name__)
    """, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Error"] * 3, out.stdout + out.stderr


def test_every_argument_is_typed_alike(sample_cache):
    # numpy integers and booleans are what they say; Python bools are not counts, floats not ints
    ld = loader(sample_cache, batch_size=np.int64(8), seed=np.uint32(3), epoch=np.int16(1), world_size=np.int8(2),
                rank=np.int64(1), threads=np.int32(1), prefetch=np.int64(1), block_size=np.uint64(1), size=np.int32(64),
                flip=np.bool_(True), shuffle=np.bool_(True), mean=np.array([0.5, 0.5, 0.5]), std=(np.float32(0.25), 1, 1))
    assert len(ld) == 3 and ld.batch_size == 8 and ld.epoch == 1
    assert ld.order() == loader(sample_cache, seed=3, epoch=1, world_size=2, rank=1, size=64).order()
    for kw in [dict(batch_size=True), dict(seed=False), dict(epoch=1.0), dict(rank=np.float64(0)), dict(threads="2"),
               dict(prefetch=None), dict(block_size=2.5), dict(size=True), dict(size=64.0), dict(flip=1), dict(shuffle="yes"),
               dict(drop_last=None), dict(mean=(True, 0, 0)), dict(mean="abc"), dict(std=0.5), dict(scale=(0.5, "1")),
               dict(ratio=1.0), dict(fields=[1]), dict(fields=["index", None])]:
        with pytest.raises(TypeError):
            loader(sample_cache, **kw)
    for kw, what in [(dict(seed=-1), "seed must be >= 0"), (dict(seed=2**64), "seed must be <="),
                     (dict(rank=2**32, world_size=2**32 + 1), "<="), (dict(epoch=-3), "epoch"), (dict(size=0), "size"),
                     (dict(size=4097), "size"), (dict(std=(0, 1, 1)), "std"), (dict(mean=(float("nan"), 0, 0)), "finite"),
                     (dict(scale=(float("nan"), 1)), "finite"), (dict(ratio=(0.5, float("inf"))), "finite"),
                     (dict(mean=(1, 2)), "3 values"), (dict(threads=-1), "threads")]:
        with pytest.raises(slipcache.Error, match=what) as e:
            loader(sample_cache, **kw)
        assert e.value.code == 2, kw


def take(loaders, batches):
    """Each loader (a rank) takes `batches` batches (None: to the end); the ids they saw."""
    seen = []
    for ld in loaders:
        it = iter(ld)
        for k, batch in enumerate(it):
            seen += [int(i) for i in batch["index"]]
            if batches is not None and k + 1 == batches:
                break
    return seen


def test_a_mid_epoch_state_resumes_on_another_world_size(corpus_cache):
    # issue 44: 2 ranks take 3 batches of 50 each; resumed from rank 0's state on 3 ranks they
    # used to never see 267 of the 800 samples and see 118 twice. Now the state says how many
    # positions of the epoch's global order were consumed, and any world size resumes there.
    def ranks(world, batch_size=50, **kw):
        return [slipcache.Loader(corpus_cache, batch_size=batch_size, world_size=world, rank=r, threads=1, pipeline="16",
                                 fields=["index"], **kw) for r in range(world)]
    two = ranks(2)
    seen = take(two, 3)
    state = two[0].state_dict()
    assert state == {"version": 3, "epoch": 0, "consumed": 300, "samples": 800, "seed": 0, "world_size": 2,
                     "batch_size": 50, "weights": [], "epoch_size": None, "batch": 3, "rank": 0, "batches": 8}
    assert two[1].state_dict() == {**state, "rank": 1}
    three = ranks(3, batch_size=40)
    for ld in three:
        ld.load_state_dict(state)
    seen += take(three, None)  # the 500 left: 167 per rank, one padding sample
    assert len(seen) == 801 and sorted(set(seen)) == list(range(800))
    assert three[0].state_dict()["consumed"] == 800
    for kw, what in [(dict(seed=1), "seed"), (dict(indices=range(700)), "number of samples")]:
        with pytest.raises(slipcache.Error, match=what) as e:
            ranks(2, **kw)[0].load_state_dict(state)
        assert e.value.code == 2
    # a state at the end of an epoch starts the next one, anywhere
    other = ranks(3, batch_size=40)[0]
    other.load_state_dict(dict(state, consumed=800))
    assert other.epoch == 1 and other.state_dict()["consumed"] == 0


def test_resume_8_5_8_ranks_mid_epoch_loses_and_repeats_nothing(corpus_cache):
    def ranks(world, batch_size, state):
        out = [slipcache.Loader(corpus_cache, batch_size=batch_size, world_size=world, rank=r, threads=1, pipeline="16",
                                fields=["index"], seed=5, epoch=2) for r in range(world)]
        if state is not None:
            for ld in out:
                ld.load_state_dict(state)
        return out
    eight = ranks(8, 10, None)
    seen = take(eight, 3)  # positions 0..239
    five = ranks(5, 7, eight[3].state_dict())
    seen += take(five, 4)  # positions 240..379
    assert five[0].state_dict()["consumed"] == 380
    again = ranks(8, 16, five[4].state_dict())
    seen += take(again, None)  # the 420 left: 53 per rank, 4 of padding
    assert again[0].state_dict()["consumed"] == 800
    assert len(seen) == 804
    counts = np.bincount(seen, minlength=800)
    assert (counts >= 1).all() and counts.sum() - 800 == 4, "every sample; only the padding twice"
    want = slipcache.Loader(corpus_cache, seed=5, epoch=2).order()
    assert sorted(set(seen[:380])) == sorted(want[:380]), "the first S positions of the global order"


def test_an_old_mid_epoch_state_is_refused_on_another_world_size(corpus_cache):
    # A state without "consumed" (earlier slipcache) counts batches of contiguous rank slices:
    # mid-epoch it loads only with the same settings, naming what differs.
    state = {"epoch": 0, "batch": 3, "world_size": 2, "rank": 0, "batch_size": 50, "seed": 0, "samples": 800, "batches": 8}
    for kw, what in [(dict(world_size=3), "world_size 2 -> 3"), (dict(world_size=2, batch_size=40), "batch_size 50 -> 40"),
                     (dict(world_size=2, seed=1), "seed 0 -> 1"), (dict(world_size=2, indices=range(700)), "samples 800 -> 700")]:
        resumed = slipcache.Loader(corpus_cache, **{"batch_size": 50, **kw}, rank=0, threads=1, pipeline="32")
        with pytest.raises(slipcache.Error, match=what) as e:
            resumed.load_state_dict(state)
        assert e.value.code == 2 and "contiguous slices" in str(e.value)
    again = slipcache.Loader(corpus_cache, batch_size=50, world_size=2, rank=1, threads=1, pipeline="32")
    again.load_state_dict(state)
    assert again.state_dict()["batch"] == 3 and again.state_dict()["consumed"] == 300 and len(list(again)) == 5
    other = slipcache.Loader(corpus_cache, batch_size=40, world_size=3, threads=1, pipeline="32")
    other.load_state_dict(dict(state, batch=8))
    assert other.epoch == 1 and other.state_dict()["batch"] == 0
    other.load_state_dict(dict(state, batch=0, epoch=5))
    assert other.epoch == 5


def test_old_states_still_load_and_bad_states_are_named(sample_cache):
    ld = loader(sample_cache, world_size=2, seed=2)
    ld.load_state_dict({"epoch": 4, "batch": 2})  # before world_size was recorded: unchecked, as before
    assert ld.state_dict()["epoch"] == 4 and ld.state_dict()["batch"] == 2
    ld.load_state_dict({"epoch": 4, "batch": 3})
    assert ld.state_dict()["epoch"] == 5 and ld.state_dict()["batch"] == 0
    with pytest.raises(slipcache.Error, match="no \"batch\""):
        ld.load_state_dict({"epoch": 1})
    with pytest.raises(TypeError):
        ld.load_state_dict({"epoch": 1.5, "batch": 0})
    with pytest.raises(TypeError):
        ld.load_state_dict([1, 2])
    with pytest.raises(slipcache.Error, match="exceed"):
        ld.load_state_dict({"epoch": 1, "consumed": 41, "samples": 40, "seed": 2})
    # A state of a newer slipcache (version 99 was loaded as if it were this one's).
    with pytest.raises(slipcache.Error, match="state version 4 is from a newer slipcache") as e:
        ld.load_state_dict({**ld.state_dict(), "version": 4})
    assert e.value.code == 2
    # A state completing the last epoch (2**64 - 1): no next epoch (before: epoch 0 again, or a
    # TypeError from set_epoch naming pybind11's argument types).
    last = (1 << 64) - 1
    for state in ({"epoch": last, "consumed": 40, "samples": 40, "seed": 2}, {"epoch": last, "batch": len(ld)}):
        with pytest.raises(slipcache.Error, match="completes epoch 18446744073709551615, the last one") as e:
            ld.load_state_dict(state)
        assert e.value.code == 2
