"""A read request's arguments, checked once: what is read (``where``, ``box``, ``quality`` or
``fraction``) and how (threads, cancellation, deadline), as the core's ``QuerySpec``. Every
reader (``Dataset``, plans, steps, the part queries of MPI and Dask) builds its request here."""

from __future__ import annotations

import math
import time
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args, _core
from .errors import UsageError

__all__ = ["Quality", "BoxLike", "selection", "box_of"]

Quality = Union[float, Tuple[float, float]]
BoxLike = Optional[Sequence[float]]


def selection(where, box, quality, fraction, threads, cancel=None, timeout=None):
    """The core's QuerySpec of a query's arguments, checked; what is None keeps the core's default.
    ``cancel`` (a CancelToken) and ``timeout`` (seconds from now) stop the query with CancelledError."""
    spec = _core.QuerySpec()
    if cancel is not None:
        spec.cancel = _args.cancel_token(cancel)
    if timeout is not None and math.isfinite(_args.timeout(timeout)):
        spec.deadline = time.monotonic() + timeout
    if quality is not None:
        spec.quality_from, spec.quality_to = _args.quality(quality)
    if fraction is not None:
        spec.fraction = _fraction(fraction)
        if (spec.quality_from, spec.quality_to) != (_core.QuerySpec().quality_from, _core.QuerySpec().quality_to):
            raise UsageError("pass either fraction= or quality=, not both")
    if where is not None:
        spec.where = _args.where(where)
    spec.box = box_of(box)
    if threads is not None:
        spec.threads = _args.threads(threads)
    return spec


def _fraction(fraction: Any) -> float:
    fraction = _args.number("fraction", fraction)
    if not 0.0 <= fraction <= 1.0:
        raise UsageError(f"fraction must be in [0, 1], got {fraction:g}")
    return fraction


def box_of(box: BoxLike) -> Optional[List[float]]:
    if box is None:
        return None
    try:
        b = np.asarray(box, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        b = np.empty(0)
    if b.size != 6:
        raise UsageError("box must be 6 numbers (xmin, ymin, zmin, xmax, ymax, zmax) or ((xmin, ymin, zmin), (xmax, ymax, zmax))")
    return [float(v) for v in b]
