"""Argument checks shared by Cache, Dataset and Loader: paths, ints, bools, floats, sample ids and
mix weights, each a TypeError for a wrong type and a usage Error (code 2) for a wrong value."""
from __future__ import annotations

import numbers
import operator
import os
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _core

Error = _core.Error


def _fspath(path: Any, what: str) -> str:
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(f"{what} must be a str or os.PathLike, not {type(path).__name__}") from None


def _usage_error(message: str) -> Exception:
    error = Error(message)
    error.code, error.kind, error.message = 2, "usage", message
    return error


def _int_arg(name: str, value: Any, low: int = 0, high: int = (1 << 64) - 1) -> int:
    """`value` as an int: a Python or numpy integer (anything with ``__index__``), never a bool
    (``True`` as a count is a mistake) nor a float; out of ``low..high`` is a usage Error."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = operator.index(value)
    if value < low:
        raise _usage_error(f"{name} must be >= {low}, not {value}")
    if value > high:
        raise _usage_error(f"{name} must be <= {high}, not {value}")
    return value


def _bool_arg(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return bool(value)


def _floats_arg(name: str, value: Any, count: int) -> List[float]:
    """`count` finite real numbers (Python or numpy; not bools, not strings)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of {count} numbers, not {type(value).__name__}")
    out = list(value)
    for v in out:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must hold numbers, not {type(v).__name__}")
    if len(out) != count:
        raise _usage_error(f"{name} wants {count} values, not {len(out)}")
    out = [float(v) for v in out]
    if not all(np.isfinite(out)):
        raise _usage_error(f"{name} must be finite, not {tuple(out)}")
    return out


def _indices_arg(indices: Any, samples: int) -> Any:
    """Loader(indices=) checked without a Python loop where the type allows: a range by its ends
    (O(1), so range(10**8) costs nothing), a numpy array vectorised, any other iterable of
    integers one by one. Floats and bools are a TypeError (1.5 is not sample 1); a negative id or
    one beyond the cache a usage Error. Returns what _core.Loader takes: None, the range, a
    1-D integer array."""
    if indices is None:
        return None
    if isinstance(indices, range):
        if indices:  # by its ends, whatever its length
            _check_id_bounds(min(indices[0], indices[-1]), max(indices[0], indices[-1]), samples)
        return indices
    if isinstance(indices, np.ndarray):
        if indices.ndim != 1:
            raise TypeError(f"indices must be a 1-D array, not {indices.ndim}-D")
        if indices.dtype.kind not in "iu":
            raise TypeError(f"indices must be an array of integers, not {indices.dtype}")
        if indices.size:
            _check_id_bounds(int(indices.min()), int(indices.max()), samples)
        return np.ascontiguousarray(indices, dtype=np.uint64)
    if isinstance(indices, (str, bytes)) or not hasattr(indices, "__iter__"):
        raise TypeError(f"indices must be a sequence of ints, not {type(indices).__name__}")
    ids = []
    for i in indices:
        if isinstance(i, (bool, np.bool_)) or not hasattr(type(i), "__index__"):
            raise TypeError(f"indices must hold ints, not {type(i).__name__} ({i!r})")
        ids.append(operator.index(i))
    if ids:
        _check_id_bounds(min(ids), max(ids), samples)
    return np.array(ids, dtype=np.uint64)


def _check_id_bounds(low: int, high: int, samples: int) -> None:
    if low < 0:
        raise _usage_error(f"indices must be >= 0, not {low}")
    if high >= samples:
        raise _usage_error(f"index {high} is beyond the cache's {samples} samples")


_WEIGHT_KINDS = ("proportion", "repeat", "choose")


def _weights_arg(weights: Any, name: str = "weights") -> Optional[List[Tuple[str, float]]]:
    """Mix weights as _core takes them, ``(kind, value)`` per cache (kind "" for a cache without
    one), from ``slip order --mix``'s text (``"proportion:0.7,0.3"``) or a sequence with one
    entry per cache: ``{"proportion": 0.7}``, ``{"repeat": 2}``, ``{"choose": 1000}``, or
    ``{}``/None (none for that cache). None: None."""
    if weights is None:
        return None
    if isinstance(weights, str):
        kind, sep, values = weights.partition(":")
        if not sep:
            raise _usage_error(f"{name} as text is KIND:V1,V2,... (proportion, repeat or choose), not {weights!r}")
        return _core.parse_weights(weights, len(values.split(",")))
    if isinstance(weights, (bytes, dict)) or not hasattr(weights, "__iter__"):
        raise TypeError(f"{name} must be a list with one dict per cache ({{\"proportion\": 0.7}}, ...) or a str, "
                        f"not {type(weights).__name__}")
    out: List[Tuple[str, float]] = []
    for i, entry in enumerate(weights):
        if entry is None or (isinstance(entry, dict) and not entry):
            out.append(("", 0.0))
            continue
        if not isinstance(entry, dict):
            raise TypeError(f"{name}[{i}] must be a dict such as {{\"proportion\": 0.7}}, not {type(entry).__name__}")
        kinds = [key for key in entry if key in _WEIGHT_KINDS]
        others = [key for key in entry if key not in _WEIGHT_KINDS]
        if len(kinds) != 1 or others:
            raise _usage_error(f"{name}[{i}] must have one key of proportion, repeat or choose, not {sorted(entry)}")
        value = entry[kinds[0]]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}[{i}][\"{kinds[0]}\"] must be a number, not {type(value).__name__}")
        out.append((kinds[0], float(value)))
    return out
