"""Building query expressions from Python values."""

from __future__ import annotations

import math
import numbers
from typing import Any, List

import numpy as np

from . import _args
from .errors import UsageError


def _literal(v: Any) -> str:
    """One number as the expression language reads it back exactly: an integer (Python or
    numpy, any width) by its digits, a float (float64 or float32) by its shortest repr."""
    if isinstance(v, (bool, np.bool_)):
        raise UsageError(f"isin takes numbers, got the boolean {v!r}")
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)  # a float32 widens exactly
        if math.isnan(f):
            raise UsageError("isin: NaN equals no value; leave it out")
        return repr(f)
    raise UsageError(f"isin takes numbers, got {type(v).__name__} {v!r}")


def _literals(values: Any) -> List[str]:
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise UsageError(f"isin takes a 1-D list of values, got an array of shape {values.shape}")
        if values.dtype.kind not in "iufO" and values.size:
            raise UsageError(f"isin takes numbers, got {values.dtype}")
        return [_literal(v) for v in values.tolist()]  # Python ints and floats, exact
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise UsageError(f"isin takes a list or 1-D array of numbers, got {type(values).__name__} {values!r}")
    out = []
    for v in values:
        if isinstance(v, (list, tuple, np.ndarray)):
            raise UsageError("isin takes a 1-D list of values, got a nested list")
        out.append(_literal(v))
    return out


def isin(column: str, values: Any) -> str:
    """The expression ``column in (v1, v2, ...)`` for a list or 1-D array of numbers, each
    written exactly: an integer (Python ``int`` of any size, numpy integer) by its digits,
    never through float64; a float (Python ``float``, numpy float64 or float32) by its
    shortest repr, so it is that float64 (a float32 widened exactly). A list mixing them
    keeps each as it is: ``isin("id", [2**64 - 1, 2.5])`` is ``id in (18446744073709551615,
    2.5)``, and each value is compared exactly with the column's values (2.5 equals no
    integer).

    >>> ds.query(motes.isin("id", ids))        # answered through the id index when there is one
    >>> ds.count(f"{motes.isin('id', ids)} and energy > 2")
    """
    name = _args.text("column", column)
    return f"{name} in ({', '.join(_literals(values))})"
