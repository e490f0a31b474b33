"""The dtypes motes stores, derived from the C++ core's table, and the one function that
turns a caller's array into a column the core can read in place (or a copy when it cannot)."""

from __future__ import annotations

from typing import Dict

import numpy as np

from . import _core
from .errors import UsageError

__all__ = ["NAMES", "SUPPORTED", "SUMMARY", "numpy_dtype", "name_of", "column_array", "stored_array"]

#: Stored dtype names in code order ("f32", "f64", "i8", ... "u64"): the core's table.
NAMES = tuple(d.name for d in _core.dtypes())

_BY_NAME: Dict[str, np.dtype] = {d.name: np.dtype(d.numpy_name) for d in _core.dtypes()}

#: numpy dtypes a column may have (native byte order).
SUPPORTED = frozenset(_BY_NAME.values())


def _summary() -> str:
    """The stored dtypes as people write them: "float32/64, int8-64 and uint8-64"."""
    groups: Dict[str, list] = {}
    for d in _core.dtypes():
        groups.setdefault(d.numpy_name.rstrip("0123456789"), []).append(8 * d.size)
    parts = [f"{kind}{bits[0]}/{bits[1]}" if len(bits) == 2 else f"{kind}{bits[0]}-{bits[-1]}" if len(bits) > 2
             else f"{kind}{bits[0]}" for kind, bits in groups.items()]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


#: The stored dtypes in words, for messages: "float32/64, int8-64 and uint8-64".
SUMMARY = _summary()


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a stored dtype name ("f32" -> float32)."""
    dt = _BY_NAME.get(name)
    if dt is None:
        raise UsageError(f"unknown dtype '{name}' (dtypes: {', '.join(NAMES)})")
    return dt


def name_of(dtype) -> str:
    """The stored dtype name of a numpy dtype (float32 -> "f32")."""
    dt = np.dtype(dtype)
    for name, d in _BY_NAME.items():
        if d == dt:
            return name
    raise UsageError(f"dtype {dt} is not stored by motes (use {SUMMARY})")


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
    stored = stored_array(f"column '{name}'", arr)
    if stored is not arr:
        return stored
    if not arr.flags.aligned or arr.strides[0] % arr.dtype.itemsize:
        return np.ascontiguousarray(arr)
    return arr


def stored_array(what: str, arr: np.ndarray) -> np.ndarray:
    """``arr`` in the stored dtype it becomes, for particle columns and grid fields alike:
    itself when its dtype is stored as it is; a copy for booleans (stored as uint8) and for
    non-native byte order (big-endian data, in native order); UsageError naming ``what``
    for any other dtype (structured, text, complex, ...)."""
    dt = arr.dtype
    if dt == np.bool_:
        return arr.astype(np.uint8)
    if dt.fields is not None or dt.newbyteorder("=") not in SUPPORTED:
        raise UsageError(f"{what} has unsupported dtype {dt} (use {SUMMARY})")
    if not dt.isnative:
        return arr.astype(dt.newbyteorder("="))
    return arr
