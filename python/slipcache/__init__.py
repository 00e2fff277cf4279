"""slipcache: read slipstream caches and load training batches on slip's decode engine.

The Python package of slip (https://github.com/... , library libslipstream). Three classes:

- :class:`Cache` -- a cache directory written by ``slip convert``: samples, fields, zero-copy
  numpy columns, verification.
- :class:`Dataset` -- several caches with the same fields read as one (a list of caches, a
  directory of caches or of ``slip convert --shard`` parts, a dataset list file).
- :class:`Loader` -- batches of decoded, cropped (and flipped, normalised) images plus their
  fields, as numpy arrays, decoded on slip's own threads while Python trains on the previous
  batch. An iterable like ``torch.utils.data.DataLoader``: each ``for batch in loader`` is one
  epoch.

Every failure is a :class:`Error` (a ``RuntimeError``) carrying ``code`` (the ``slip``
command's exit status for it), ``kind``, ``path``, ``sample`` and ``offset`` where known; bad
argument types raise ``TypeError``, allocation failures ``MemoryError``.

docs/PYTHON.md has the installation, the whole API and a training loop.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

try:
    import numpy as np
except ImportError as _numpy_missing:  # said here, not at the first batch (or as _core's own failure)
    raise ImportError(f"slipcache needs numpy, which this Python ({sys.executable}) cannot import: "
                      f"pip install numpy (Debian: apt install python3-numpy) ({_numpy_missing})") from _numpy_missing

from . import _core
# The argument checks (_args.py) of the classes below.
from ._args import _bool_arg, _floats_arg, _fspath, _indices_arg, _int_arg, _usage_error, _weights_arg

__all__ = ["Cache", "Dataset", "Loader", "Error", "__version__", "build_info", "simd_level", "set_simd_level"]

__version__: str = _core.__version__

Error = _core.Error


def build_info() -> str:
    """The libraries slip runs with: the libjpeg-turbo compiled against and the one loaded, whether
    the JPEG entropy hook is on (docs/JPEG_ENGINE.md), the SIMD level, libarchive, libcurl, ..."""
    return _core.build_info()


def simd_level() -> str:
    """The SIMD level the decode kernels run at: "scalar", "sse4", "avx2" or "avx512" (SLIP_SIMD
    at import, else the best this CPU has). Every level gives the same pixels."""
    return _core.simd_level()


def set_simd_level(level: str) -> None:
    """Runs the kernels at most at `level` from now on, process-wide; raises Error (code 2) for a
    level this CPU lacks or an unknown name."""
    if not isinstance(level, str):
        raise TypeError("level must be a str, not " + type(level).__name__)
    _core.set_simd_level(level)

Error.__module__ = __name__
Error.__doc__ = """A slip failure: the message is the line the ``slip`` command prints.

Attributes (None where unknown):
    code:    the ``slip`` command's exit status for this kind of failure (2 usage, 3 bad input,
             4 I/O, 5 retryable remote failure, 130 interrupted).
    kind:    the category: "usage", "bad_input", "io", "retryable" or "interrupted".
    message: the message without the path/sample prefix.
    path:    the file or cache the failure concerns.
    sample:  the sample id it concerns.
    offset:  the byte offset in ``path``.
"""

PathLike = Union[str, "os.PathLike[str]"]


class Cache:
    """A slipstream cache directory (written by ``slip convert``, or by the Python loader).

    Args:
        path: the cache directory (``str`` or any ``os.PathLike``).

    ``len(cache)`` is the number of samples; ``cache[i]`` is sample ``i`` (negative ``i`` counts
    from the end) as a dict of field name to value (``int``, ``float``, ``str``, ``bytes`` for
    images and bytes fields, a numpy array for ndarray fields).
    """

    __slots__ = ("_core",)

    def __init__(self, path: PathLike) -> None:
        self._core = _core.Cache(_fspath(path, "path"))

    @property
    def path(self) -> str:
        """The cache directory."""
        return self._core.path

    @property
    def fields(self) -> Dict[str, str]:
        """Field name to type name ("int", "float", "str", "ImageBytes", ...), in cache order."""
        return self._core.fields

    def __len__(self) -> int:
        return len(self._core)

    def __getitem__(self, index: int) -> Dict[str, Any]:
        return self._core[index]

    def __repr__(self) -> str:
        return f"slipcache.Cache({self.path!r}, samples={len(self)}, fields={list(self.fields)})"

    def column(self, field: str) -> Any:
        """A read-only numpy view, without copying, of an int, float or ndarray field: shape
        ``(len(cache),)`` or ``(len(cache), *shape)``. Raises Error for other field types."""
        return self._core.column(field)

    def verify(self, decode: bool = False, threads: int = 0) -> Dict[str, Any]:
        """Checks the cache as ``slip verify`` does and returns its report as a dict (``ok``,
        ``samples``, ``issues``, ...).

        Args:
            decode: also decode every image (slower; finds payloads that do not decode).
            threads: decoding threads; 0: every available CPU.
        """
        return self._core.verify(decode=decode, threads=threads)

    def info(self) -> Dict[str, Any]:
        """What ``slip info`` reports: path, samples, bytes, fields, content_id, options (the
        conversion options that made these bytes, e.g. ``{"jpeg-restarts": "1"}``; ``{}`` for the
        defaults), indexes."""
        return self._core.info()


class Dataset:
    """Several caches with the same fields read as one: sample ids are global (the first cache's
    samples first, then the second's, ...), as ``slip order`` and ``slip info`` read them.

    Args:
        source: a cache directory, a directory of caches (and of ``slip convert --shard I/N``
            parts, without ``slip merge``), a dataset list file (JSON with content ids and
            optional weights and ``epoch_size``, or text with one ``PATH [CONTENT_ID]`` per
            line; a cache changed since the list was written is refused), or a list of these.

    Raises:
        Error: a cache that cannot be opened, caches whose fields differ (naming the first
            difference), a changed cache.
    """

    __slots__ = ("_core",)

    def __init__(self, source: Union[PathLike, Sequence[PathLike]]) -> None:
        if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
            inputs = [_fspath(source, "source")]
        elif hasattr(source, "__iter__"):
            inputs = [_fspath(p, "source") for p in source]
        else:
            raise TypeError(f"source must be a path or a list of paths, not {type(source).__name__}")
        if not inputs:
            raise _usage_error("a dataset needs at least one cache")
        self._core = _core.Dataset(inputs)

    def __len__(self) -> int:
        return len(self._core)

    @property
    def paths(self) -> List[str]:
        """Its cache directories, in order."""
        return self._core.paths

    @property
    def sizes(self) -> List[int]:
        """The samples of each cache."""
        return self._core.sizes

    @property
    def fields(self) -> Dict[str, str]:
        """Field name to type name (the same in every cache)."""
        return self._core.fields

    @property
    def weights(self) -> List[Dict[str, float]]:
        """The weights a JSON list file gave (``[{"proportion": 0.7}, ...]``), else ``[]``."""
        return self._core.weights

    @property
    def epoch_size(self) -> Optional[int]:
        """The ``epoch_size`` a JSON list file gave, else None."""
        return self._core.epoch_size

    def list_json(self) -> str:
        """A JSON list file naming these caches (absolute paths) with their content ids and sample
        counts: opened later, a cache changed since is refused."""
        return self._core.list_json()

    def __repr__(self) -> str:
        return f"slipcache.Dataset({self.paths!r}, samples={len(self)})"


_STATE_VERSION = 3  # the newest state_dict() layout this slipcache writes and reads


class Loader:
    """Batches of decoded, cropped images (and fields) from a cache, prefetched on slip's engine.

    Iterate it for one epoch of batches: each ``batch`` is a dict with ``"image"`` and one entry
    per name in ``fields``. Pixels are writable numpy arrays that share the loader's buffers (no
    copy; ``torch.from_numpy`` keeps sharing them); a buffer is reused once every array viewing
    it is gone, also after the loader is gone. Arrays kept longer keep their buffer (never
    decoded into again: the loader allocates another for its next batches).

    - One crop per image (``rrc``, ``center``, ``direct-rrc``, a spec such as ``"96"``):
      ``batch["image"]`` has shape ``(B, H, W, 3)`` (NHWC) or ``(B, 3, H, W)`` (NCHW).
    - Several crops (``multicrop`` or a spec such as ``"2x224@0.32-1,8x96@0.05-0.32"``): a list
      with one array per crop group, each ``(B, crops, H, W, 3)`` or ``(B, crops, 3, H, W)``
      (a group of one crop drops the crops axis).
    - ``pipeline="decode"``: a list of whole images, ``(H, W, 3)`` uint8 each (views laid one
      after another in one block per batch, which goes back to the pool when its last image is
      dropped).
    - ``batch[field]``: int64 or float64 arrays of shape ``(B,)``.

    Over a dataset of several caches (``source`` a list, a directory of caches or parts, a list
    file, a :class:`Dataset`), sample ids are the dataset's global ids (``order()``,
    ``skipped``, ``window()``), and each sample's pixels are those a Loader over its own cache
    alone gives it (crops are keyed by the sample's id in its cache). ``weights`` mix the caches
    per epoch, as MosaicML Streaming's ``Stream``: ``{"proportion": p}`` (relative share of an
    epoch of ``epoch_size`` samples), ``{"repeat": r}`` (times per epoch, fractional allowed) or
    ``{"choose": n}`` (samples per epoch), one per cache; the order is ``slip order --mix``'s
    for the same seed and epoch. :meth:`set_weights` changes the mix from the next epoch on.

    Epochs: each new ``iter(loader)`` runs the next epoch (a new shuffle and new crops), as
    ``DataLoader`` and FFCV do; the first one runs ``epoch``. ``set_epoch(e)`` chooses the epoch
    of the next ``iter()`` instead, so any epoch can be reproduced exactly from
    ``(seed, e)``; calling it while an iteration runs does not disturb that iteration. Only
    one iteration runs at a time: a new ``iter()`` stops the previous one (whose ``next()`` then
    raises ``ValueError``).

    Args:
        source: a :class:`Cache`, a :class:`Dataset`, or what ``slip order`` reads: the path of
            a cache (``str`` or ``os.PathLike``), of a directory of caches or of ``slip convert
            --shard I/N`` parts, of a dataset list file (``.json`` or text), or a list of such
            paths.
        cache: the former name of ``source`` (a cache or its path), for callers that pass it
            by keyword; give one of the two.
        batch_size: samples per batch (the last batch may be smaller unless ``drop_last``).
        pipeline: ``"rrc"`` (RandomResizedCrop, decoding only the crop), ``"direct-rrc"``
            (RandomResizedCrop sampled over the whole image), ``"center"`` (resize to
            ``size/0.875`` then center-crop ``size``, for validation), ``"multicrop"`` (DINO's 2
            global + 8 local crops), ``"decode"`` (whole images, no crop), or a crop spec
            ``[COUNTx]SIZE[@LO-HI]`` groups separated by commas, e.g. ``"96"``,
            ``"2x224@0.32-1,8x96@0.05-0.32"``.
        size: the output side of a one-crop pipeline in pixels (1..4096). None: 224 for the named
            pipelines, the spec's own size for a crop spec (``"96"`` gives 96-px crops). Refused for
            pipelines with several crops (give the sizes in the spec) and for ``"decode"``.
        scale: ``(low, high)`` fraction of the image area for ``rrc``/``direct-rrc``; None:
            ``(0.08, 1.0)``.
        ratio: ``(low, high)`` aspect ratio range for ``rrc``/``direct-rrc``; None:
            ``(3/4, 4/3)``.
        flip: flip each crop horizontally with probability 0.5 (never for ``center``).
        seed: the seed of the shuffle and the crops.
        epoch: the epoch of the first iteration.
        shuffle: shuffle each epoch (else the cache's order).
        rank: this process's rank for distributed training (``torch.distributed.get_rank()``).
        world_size: the number of ranks; rank r takes positions r, r+W, r+2W, ... of the epoch's
            global order (which does not depend on W): ``ceil(samples / world_size)`` samples per
            epoch, disjoint from the others' (padded by repetition, as DistributedSampler).
        drop_last: leave out the last, smaller batch.
        threads: decoding threads; 0: every available CPU.
        layout: ``"NHWC"`` or ``"NCHW"`` (also ``"HWC"``/``"CHW"``, as ``slip bench --layout``; any case).
        dtype: ``"uint8"`` (0..255) or ``"float32"`` (``(x/255 - mean) / std``).
        mean: per-channel mean for float32 output (ImageNet's by default).
        std: per-channel standard deviation for float32 output.
        indices: the sample ids to draw from (a subset, in that order before shuffling): a
            sequence of ints, a ``range`` (kept as one: no memory per sample) or a 1-D integer
            numpy array; None: every sample; an empty sequence: an empty epoch.
        fields: int and float fields to return with the images; None: ``["label"]`` if the cache
            has an int or float ``label`` field, else none.
        yuv420_siblings: read the cache's YUV420 siblings (``slip yuv420``) instead of the JPEGs.
        block_size: shuffle blocks of this many consecutive samples (1: a full shuffle; larger
            blocks read the cache more sequentially).
        prefetch: batches decoded ahead of the training loop.
        resample: ``"auto"``, ``"rgb"`` or ``"planar"`` (the resampling path; ``rgb`` without
            ``crop_aware`` matches Pillow exactly).
        filter: ``"bilinear"`` or ``"bicubic"``.
        crop_aware: let the JPEG decoder scale down by a power of two before resampling when the
            crop is much larger than the output (faster, within the README's error bounds).
        on_error: ``"raise"``: a sample that fails to decode raises :class:`Error` for its
            batch, and every later ``next()`` of that iteration raises it again (the epoch is
            over, never silently). ``"skip"``: such samples are left out of their batch (which is
            then smaller), listed in :attr:`skipped`, and the epoch goes on.
        stage_dir: a node-local directory (``/dev/shm``, local NVMe) to read a copy of the cache
            from, as ``slip stage CACHE --to DIR`` makes it: the first Loader on the node copies
            and checks it, the others wait and read that copy; the Loader holds it (no budgeted
            ``slip stage`` evicts it) while it lives. None: ``$SLIP_STAGE_DIR`` when set and
            non-empty, else the cache is read where it lies. Needs ``source`` as path(s); a
            dataset stages each of its caches.
        weights: the mix of a dataset's caches, one entry per cache in dataset order
            (``[{"proportion": 0.7}, {"proportion": 0.3}]``, ``{"repeat": 2}``, ``{"choose":
            1000}``; ``{}`` for none), or ``slip order --mix``'s text (``"proportion:0.7,0.3"``).
            None: a JSON list file's weights, else every sample once. Not with ``indices`` nor
            ``shuffle=False``.
        epoch_size: samples per epoch, split by the proportions (None: a JSON list file's, else
            the dataset's size). Not with repeat/choose.

    Integer arguments take Python or numpy integers, never ``bool`` or ``float``; ``bool``
    arguments ``bool`` or ``numpy.bool_``. A Loader may be iterated from several threads (an
    iteration another thread's ``iter()`` replaced raises ``ValueError``), but not in a forked
    child of the process that made it (:class:`Error`: create it in the child).

    Raises:
        Error: a bad value (``code`` 2), or a cache that cannot be opened.
        TypeError: an unknown keyword or a wrong type.
    """

    def __init__(
        self,
        source: Optional[Union[Cache, Dataset, PathLike, Sequence[PathLike]]] = None,
        batch_size: int = 256,
        *,
        cache: Optional[Union[Cache, PathLike]] = None,
        pipeline: str = "rrc",
        size: Optional[int] = None,
        scale: Optional[Tuple[float, float]] = None,
        ratio: Optional[Tuple[float, float]] = None,
        flip: bool = True,
        seed: int = 0,
        epoch: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        threads: int = 0,
        layout: str = "NHWC",
        dtype: str = "uint8",
        mean: Sequence[float] = (0.485, 0.456, 0.406),
        std: Sequence[float] = (0.229, 0.224, 0.225),
        indices: Optional[Sequence[int]] = None,
        fields: Optional[Sequence[str]] = None,
        yuv420_siblings: bool = False,
        block_size: int = 1,
        prefetch: int = 2,
        resample: str = "auto",
        filter: str = "bilinear",
        crop_aware: bool = True,
        on_error: str = "raise",
        stage_dir: Optional[PathLike] = None,
        weights: Optional[Union[str, Sequence[Optional[Dict[str, float]]]]] = None,
        epoch_size: Optional[int] = None,
    ) -> None:
        # `cache=`: the first parameter's name before datasets (keyword callers keep working).
        if cache is not None:
            if source is not None:
                raise TypeError("Loader() takes source or cache, not both")
            source = cache
        if source is None:
            raise TypeError("Loader() needs a source: a cache, a Dataset, a path or a list of paths")
        self._staged: List[Any] = []  # holds the node-local copies (slip stage) for as long as the Loader lives
        self._cache: Optional[Cache] = None
        self._dataset: Optional[Dataset] = None
        if isinstance(source, (Cache, Dataset)):
            if stage_dir is not None:
                raise _usage_error("stage_dir= needs the cache's path, not a Cache or Dataset (Loader(cache.path, stage_dir=...))")
            if isinstance(source, Cache):
                self._cache = source
            else:
                self._dataset = source
        else:
            one = isinstance(source, (str, bytes)) or hasattr(source, "__fspath__")
            paths = [_fspath(source, "source")] if one else None
            if paths is None:
                if not hasattr(source, "__iter__"):
                    raise TypeError(f"source must be a Cache, a Dataset, a path or a list of paths, not {type(source).__name__}")
                paths = [_fspath(p, "source") for p in source]
            where = _core.stage_dir(None if stage_dir is None else _fspath(stage_dir, "stage_dir"))
            if one and not _core.Dataset.is_dataset_input(paths[0]):  # one cache
                if where is not None:
                    self._staged.append(_core.stage(paths[0], where))
                    paths = [self._staged[-1].path]
                self._cache = Cache(paths[0])
            else:
                self._dataset = Dataset(paths)
                if where is not None:  # each cache staged; the list's weights stay the defaults
                    listed = self._dataset
                    self._staged = [_core.stage(p, where) for p in listed.paths]
                    self._dataset = Dataset([s.path for s in self._staged])
                    if weights is None and listed.weights:
                        weights = listed.weights
                    if epoch_size is None:
                        epoch_size = listed.epoch_size
        mix = _weights_arg(weights)
        if epoch_size is not None:
            epoch_size = _int_arg("epoch_size", epoch_size, low=1)
        if isinstance(fields, str):
            raise TypeError("fields must be a sequence of field names, not a str")
        if fields is not None:
            fields = list(fields)
            for name in fields:
                if not isinstance(name, str):
                    raise TypeError(f"fields must hold field names (str), not {type(name).__name__}")
        # Integers: Python or numpy ints, never bools or floats (batch_size=2.5 is not 2); each
        # within what the engine takes.
        batch_size = _int_arg("batch_size", batch_size)
        seed, epoch = _int_arg("seed", seed), _int_arg("epoch", epoch)
        rank, world_size = _int_arg("rank", rank, high=(1 << 32) - 1), _int_arg("world_size", world_size, high=(1 << 32) - 1)
        threads = _int_arg("threads", threads, high=(1 << 32) - 1)
        block_size, prefetch = _int_arg("block_size", block_size), _int_arg("prefetch", prefetch)
        for name, value in (("pipeline", pipeline), ("layout", layout), ("dtype", dtype), ("resample", resample),
                            ("filter", filter), ("on_error", on_error)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        flip, shuffle, drop_last = _bool_arg("flip", flip), _bool_arg("shuffle", shuffle), _bool_arg("drop_last", drop_last)
        yuv420_siblings, crop_aware = _bool_arg("yuv420_siblings", yuv420_siblings), _bool_arg("crop_aware", crop_aware)
        if size is not None:
            if isinstance(size, (bool, np.bool_)) or not hasattr(type(size), "__index__"):
                raise TypeError(f"size must be an int or None, not {type(size).__name__}")
            size = _int_arg("size", size, low=1, high=4096)
        if scale is not None:
            scale = _floats_arg("scale", scale, 2)
        if ratio is not None:
            ratio = _floats_arg("ratio", ratio, 2)
        mean, std = _floats_arg("mean", mean, 3), _floats_arg("std", std, 3)
        indices = _indices_arg(indices, len(self._source))
        if not all(s > 0 for s in std):
            raise _usage_error(f"std must be > 0, not {tuple(std)}")
        self._core = _core.Loader(
            self._source._core, batch_size=batch_size, pipeline=pipeline, size=size, scale=scale, ratio=ratio, flip=flip,
            seed=seed, epoch=epoch, shuffle=shuffle, rank=rank, world_size=world_size, drop_last=drop_last,
            threads=threads, layout=layout, dtype=dtype, mean=mean, std=std,
            indices=indices, fields=fields, yuv420_siblings=yuv420_siblings,
            block_size=block_size, prefetch=prefetch, resample=resample, filter=filter, crop_aware=crop_aware,
            on_error=on_error, weights=mix, epoch_size=epoch_size)
        self._seed = seed
        self._batch_size = batch_size
        self._pipeline = pipeline
        self._layout = layout
        self._dtype = dtype
        self._rank = rank
        self._world_size = world_size
        self._on_error = on_error

    # -- what it loads --------------------------------------------------------------------------
    @property
    def _source(self) -> Union[Cache, Dataset]:
        return self._cache if self._cache is not None else self._dataset  # type: ignore[return-value]

    @property
    def cache(self) -> Cache:
        """The :class:`Cache` the loader reads; over a dataset, :class:`Error` (code 2): see
        :attr:`dataset`."""
        if self._cache is None:
            raise _usage_error("this Loader reads a dataset of several caches: see loader.dataset")
        return self._cache

    @property
    def dataset(self) -> Union[Cache, Dataset]:
        """What the loader reads: its :class:`Cache`, or its :class:`Dataset` (``DataLoader``'s
        name for it)."""
        return self._source

    @property
    def weights(self) -> List[Dict[str, float]]:
        """The mix of the epochs that start from now on (``[]``: none); see :meth:`set_weights`."""
        return self._core.weights

    @property
    def epoch_size(self) -> Optional[int]:
        """The epoch size of that mix (None: the dataset's size, or the weights' sum)."""
        return self._core.epoch_size

    def set_weights(self, weights: Optional[Union[str, Sequence[Optional[Dict[str, float]]]]],
                    epoch_size: Optional[int] = None) -> None:
        """Mixes the caches with ``weights`` (as the constructor's; None: no weights, every sample
        once) and ``epoch_size`` from the next epoch that starts at its beginning: a running
        iteration, and a mid-epoch resumption chosen before (:meth:`load_state_dict`,
        :meth:`set_epoch` with ``start_batch``), keep the mix they began with. ``state_dict()``
        records each epoch's mix."""
        mix = _weights_arg(weights)
        if epoch_size is not None:
            epoch_size = _int_arg("epoch_size", epoch_size, low=1)
        self._core.set_mix(mix if mix is not None else [], epoch_size)

    @property
    def batch_size(self) -> int:
        """Samples per batch."""
        return self._batch_size

    @property
    def fields(self) -> List[str]:
        """The fields each batch carries besides ``"image"``."""
        return self._core.fields

    @property
    def samples_per_epoch(self) -> int:
        """This rank's samples per epoch (before any ``drop_last``)."""
        return self._core.samples_per_epoch

    def __len__(self) -> int:
        """Batches per epoch (for this rank)."""
        return len(self._core)

    def __repr__(self) -> str:
        where = self._cache.path if self._cache is not None else self._source.paths  # type: ignore[union-attr]
        return (f"slipcache.Loader({where!r}, batch_size={self._batch_size}, pipeline={self._pipeline!r}, "
                f"layout={self._layout!r}, dtype={self._dtype!r}, rank={self._rank}, world_size={self._world_size}, "
                f"epoch={self.epoch}, batches={len(self)}, on_error={self._on_error!r})")

    # -- epochs ---------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Dict[str, Any]]:
        """Starts an epoch: the next one, or the one :meth:`set_epoch` chose."""
        return iter(self._core)

    @property
    def epoch(self) -> int:
        """The epoch of the running (or last) iteration; after :meth:`set_epoch`, the chosen one.
        :meth:`order` and :meth:`window` describe this epoch."""
        return self._core.epoch

    def set_epoch(self, epoch: int, start_batch: int = 0) -> None:
        """Makes the next ``iter()`` run ``epoch``, starting at batch ``start_batch`` (to resume
        mid-epoch: the batches before it are not decoded). A running iteration is not disturbed.

        Args:
            epoch: the epoch (with ``seed``, it fixes the order and every crop).
            start_batch: the first batch to produce, 0..len(loader).
        """
        self._core.set_epoch(epoch, start_batch)

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader stands, for any number of ranks: ``{"version": 3, "epoch": e,
        "consumed": S, "samples", "seed", "world_size", "batch_size", "weights", "epoch_size",
        "batch", "rank", "batches"}`` (``weights``/``epoch_size``: the mix of epoch e, ``[]``
        and None without one; JSON-serialisable like the rest). The epoch's global order does not depend on the world size and rank r
        takes its positions r, r+W, r+2W, ...; so once every rank took k batches, the first
        ``S = k * batch_size * world_size`` positions of epoch e are consumed (all ``samples``
        of them at the epoch's end; a batch counts once ``next()`` returned it). ``batch`` is
        k for this world size, ``batches`` the batches per epoch per rank. Save it with the
        model's checkpoint; :meth:`load_state_dict` continues from position S on any
        ``world_size`` and ``batch_size``."""
        state = self._core.state()
        per_batch = self._batch_size * self._world_size
        consumed, samples = state["consumed"], state["samples"]
        batch = len(self) if consumed >= samples else min(len(self), -(-consumed // per_batch))
        return {**state, "batch": batch, "rank": self._rank, "batches": len(self)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Makes the next ``iter()`` continue where :meth:`state_dict` was taken: the rest of that
        epoch, or the next epoch if it was complete.

        A state with ``"consumed"`` (this version) resumes at that global position on any
        ``world_size``, ``batch_size`` and ``rank``: across the old and new ranks every sample of
        the epoch is seen once (beyond the padding by repetition of the rank that runs past the
        epoch's end). It must come from the same ``seed`` and ``samples`` (else the order differs:
        :class:`Error`, code 2). A state taken mid-epoch finishes that epoch with the mix it
        records (``weights``, ``epoch_size``; a version 2 state: with this Loader's own), whatever
        this Loader's weights; this Loader's own mix applies from the next epoch. An older ``{"epoch", "batch", ...}`` state counts batches of
        contiguous rank slices: mid-epoch it loads only on the same ``world_size`` and
        ``batch_size`` (and ``seed``, ``samples`` when recorded), else :class:`Error` (code 2);
        at an epoch boundary it loads on any loader."""
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict (from state_dict()), not {type(state).__name__}")
        keys = ("epoch", "consumed") if "consumed" in state else ("epoch", "batch")
        for key in keys:
            if key not in state:
                raise _usage_error(f"state has no \"{key}\": not a Loader.state_dict()")
        got = {key: _int_arg(f"state[\"{key}\"]", value) for key, value in state.items()
               if key in ("epoch", "batch", "consumed", "world_size", "rank", "batch_size", "seed", "samples", "batches",
                          "version")}
        if got.get("version", 0) > _STATE_VERSION:  # a newer slipcache's: its fields may mean more than these
            raise _usage_error(f"state version {got['version']} is from a newer slipcache (this one reads versions up to "
                               f"{_STATE_VERSION}): resume with that slipcache")
        samples = self._core.state()["samples"]  # of the epoch as the Loader stands
        if "consumed" in got:
            if got.get("version", 2) >= 3 and "weights" not in state:
                raise _usage_error("state has version 3 but no \"weights\": not a Loader.state_dict()")
            mix = _weights_arg(state.get("weights"), "state[\"weights\"]") if "weights" in state else None
            epoch_size = state.get("epoch_size")
            if epoch_size is not None:
                epoch_size = _int_arg("state[\"epoch_size\"]", epoch_size, low=1)
            self._core.load_state(got["epoch"], got["consumed"], got.get("samples", samples),
                                  got.get("seed", self._seed), mix, epoch_size)
            return
        epoch, batch = got["epoch"], got["batch"]
        batches = got.get("batches", len(self))
        if 0 < batch < batches:  # mid-epoch: the batch number means the same samples only here
            mine = {"world_size": self._world_size, "batch_size": self._batch_size, "seed": self._seed,
                    "samples": samples}
            differ = [f"{key} {got[key]} -> {value}" for key, value in mine.items() if key in got and got[key] != value]
            if differ:
                raise _usage_error(
                    f"cannot resume epoch {epoch} at batch {batch} of {batches} with a different " + ", ".join(differ) +
                    ": this state (without \"consumed\") is from an older slipcache whose ranks took contiguous slices; "
                    "resume with the same settings, or from a state taken at an epoch boundary")
        if batch >= batches:
            if epoch == (1 << 64) - 1:  # its next epoch would be 2**64 (set_epoch's TypeError), or wrap to 0
                raise _usage_error(f"the state completes epoch {epoch}, the last one: no epoch follows it")
            epoch, batch = epoch + 1, 0
        self.set_epoch(epoch, batch)

    @property
    def skipped(self) -> List[Tuple[int, str]]:
        """``(sample, message)`` for each sample left out by ``on_error="skip"`` in the current
        iteration."""
        return self._core.skipped

    # -- what an epoch holds --------------------------------------------------------------------
    def order(self) -> List[int]:
        """This rank's sample ids (global ids over a dataset) for :attr:`epoch`, in batch order
        (as ``slip order`` with the same seed, epoch, rank, world size, block size and mix)."""
        return self._core.order()

    def window(self, sample: int, crop: int = 0) -> Tuple[int, int, int, int, bool]:
        """``(x, y, width, height, flip)``: the source window of crop ``crop`` of ``sample`` in
        :attr:`epoch` (what the engine cuts out and resizes)."""
        return self._core.window(sample, crop)
