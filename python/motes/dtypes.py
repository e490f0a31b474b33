"""The dtypes motes stores, derived from the C++ core's table, and the one function that
turns a caller's array into a column the core can read in place (or a copy when it cannot)."""

from __future__ import annotations

from typing import Dict

import numpy as np

from . import _core
from ._core import UsageError

__all__ = ["NAMES", "SUPPORTED", "numpy_dtype", "column_array"]

#: Stored dtype names in code order ("f32", "f64", "i8", ... "u64"): the core's table.
NAMES = tuple(_core.dtype_names)


_BY_NAME: Dict[str, np.dtype] = {n: np.dtype(f"<{n[0]}{int(n[1:]) // 8}") for n in NAMES}

#: numpy dtypes a column may have (native byte order).
SUPPORTED = frozenset(_BY_NAME.values())


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a stored dtype name ("f32" -> float32)."""
    dt = _BY_NAME.get(name)
    if dt is None:
        raise UsageError(f"unknown dtype '{name}' (dtypes: {', '.join(NAMES)})")
    return dt


def column_array(name: str, values) -> np.ndarray:
    """``values`` as a 1-D array of a stored dtype that the core can read by its stride.

    Views are kept (any stride in whole elements, 0 for a broadcast value, negative for a
    reversed view); copies are made only where the core cannot read the memory as it is:
    booleans (stored as uint8), non-native byte order (big-endian fields), and fields whose
    stride is not a whole number of elements or that are misaligned (packed structured
    arrays)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise UsageError(f"column '{name}' must be 1-D, got shape {arr.shape}")
    dt = arr.dtype
    if dt == np.bool_:
        return arr.astype(np.uint8)
    if dt.fields is not None or dt.newbyteorder("=") not in SUPPORTED:
        raise UsageError(f"column '{name}' has unsupported dtype {dt} (use float32/64, int8-64 or uint8-64)")
    if not dt.isnative:
        return arr.astype(dt.newbyteorder("="))
    if not arr.flags.aligned or arr.strides[0] % dt.itemsize:
        return np.ascontiguousarray(arr)
    return arr
