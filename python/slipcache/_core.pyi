# Stubs for slipcache._core, the compiled module (python/core_module.cpp). Users call the
# documented wrappers in slipcache/__init__.py; python/tests/test_api.py checks that these names
# match the module's.
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

__version__: str

class Error(RuntimeError):
    code: Optional[int]
    kind: Optional[str]
    message: Optional[str]
    path: Optional[str]
    sample: Optional[int]
    offset: Optional[int]

class Cache:
    def __init__(self, path: str) -> None: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Dict[str, Any]: ...
    @property
    def path(self) -> str: ...
    @property
    def fields(self) -> Dict[str, str]: ...
    def column(self, field: str) -> Any: ...
    def verify(self, decode: bool = ..., threads: int = ...) -> Dict[str, Any]: ...
    def info(self) -> Dict[str, Any]: ...

class LoaderIterator:
    def __iter__(self) -> LoaderIterator: ...
    def __next__(self) -> Dict[str, Any]: ...

class Loader:
    def __init__(
        self,
        cache: Cache,
        batch_size: int,
        pipeline: str,
        size: Optional[int],
        scale: Optional[Tuple[float, float]],
        ratio: Optional[Tuple[float, float]],
        flip: bool,
        seed: int,
        epoch: int,
        shuffle: bool,
        rank: int,
        world_size: int,
        drop_last: bool,
        threads: int,
        layout: str,
        dtype: str,
        mean: Sequence[float],
        std: Sequence[float],
        indices: Optional[Sequence[int]],
        fields: Optional[Sequence[str]],
        yuv420_siblings: bool,
        block_size: int,
        prefetch: int,
        resample: str,
        filter: str,
        crop_aware: bool,
        on_error: str,
    ) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> LoaderIterator: ...
    @property
    def epoch(self) -> int: ...
    @property
    def cache(self) -> Cache: ...
    @property
    def fields(self) -> List[str]: ...
    @property
    def samples_per_epoch(self) -> int: ...
    @property
    def skipped(self) -> List[Tuple[int, str]]: ...
    def set_epoch(self, epoch: int, start_batch: int = ...) -> None: ...
    def state(self) -> Tuple[int, int]: ...
    def order(self) -> List[int]: ...
    def window(self, sample: int, crop: int = ...) -> Tuple[int, int, int, int, bool]: ...
