"""Building query expressions from Python values."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _args
from .errors import UsageError


def isin(column: str, values: Any) -> str:
    """The expression ``column in (v1, v2, ...)`` for a list or array of numbers, written
    exactly (integers of any width as integers, floats by their shortest repr).

    >>> ds.query(motes.isin("id", ids))        # answered through the id index when there is one
    >>> ds.count(f"{motes.isin('id', ids)} and energy > 2")
    """
    name = _args.text("column", column)
    a = np.asarray(values)
    if a.ndim != 1:
        raise UsageError(f"isin takes a 1-D list of values, got an array of shape {a.shape}")
    if a.size and a.dtype.kind not in "iuf":
        raise UsageError(f"isin takes numbers, got {a.dtype}")
    if a.dtype.kind == "f":
        if np.isnan(a).any():
            raise UsageError("isin: NaN equals no value; leave it out")
        items = [repr(float(v)) for v in a]
    else:
        items = [str(int(v)) for v in a.tolist()]
    return f"{name} in ({', '.join(items)})"
