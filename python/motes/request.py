"""A read request, resolved and checked once: which species of which step, which columns,
what is read (``where``, ``box``, ``quality`` or ``fraction``) and how (threads,
cancellation, deadline) as the core's ``QuerySpec``, with the grid fields its expressions
sample. ``Dataset.request`` makes one (this module never imports the dataset); every reader
(``Dataset``'s queries and analyses, plans, the part queries of MPI and Dask, Arrow, the
converters) reads through one."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args, _core
from .errors import UsageError

__all__ = ["Quality", "BoxLike", "Request", "selection", "box_of", "checked_columns", "check_values"]

Quality = Union[float, Tuple[float, float]]
BoxLike = Optional[Sequence[float]]


def selection(where, box, quality, fraction, threads, cancel=None, timeout=None):
    """The core's QuerySpec of a query's arguments, checked; what is None keeps the core's default.
    ``cancel`` (a CancelToken) and ``timeout`` (seconds from now) stop the query with CancelledError.
    Quality and fraction are checked by the core's one check (``check_query_spec``)."""
    spec = _core.QuerySpec()
    if cancel is not None:
        spec.cancel = _args.cancel_token(cancel)
    if timeout is not None and math.isfinite(_args.timeout(timeout)):
        spec.deadline = time.monotonic() + timeout
    if quality is not None:
        spec.quality_from, spec.quality_to = _args.quality(quality)
    if fraction is not None:
        spec.fraction = _args.number("fraction", fraction)
    if where is not None:
        spec.where = _args.where(where)
    spec.box = box_of(box)
    if threads is not None:
        spec.threads = _args.threads(threads)
    _core.check_query_spec(spec)
    return spec


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


@dataclass(frozen=True)
class Request:
    """One read of one species in one step (:meth:`motes.Dataset.request`): ``step`` (the
    :class:`motes.dataset.Step`), ``species`` (its name), ``known`` (the species' columns,
    in schema order), ``columns`` (those asked for, checked; all by default; a
    ``field('name')`` among them is sampled at the particles), ``spec`` (the core's
    ``QuerySpec``: where, box, quality or fraction, threads, cancellation, deadline, and the
    samplers of the grid fields its expression and values name). ``source()``: the particles
    it reads (the core's, opened once per dataset handle)."""

    step: Any
    species: str
    known: List[str]
    columns: List[str]
    spec: Any
    open: Callable[[], Any] = field(repr=False, compare=False)

    def source(self):
        return self.open()


def checked_columns(columns: Any, known: Sequence[str]) -> List[str]:
    """The columns asked for (None: every one of ``known``; a name alone: that column),
    UsageError naming an unknown one (a read that samples grid fields as columns is checked
    by the core's ``resolve_read``, through :meth:`motes.Dataset.request`)."""
    if columns is None:
        return list(known)
    if isinstance(columns, str):
        columns = [columns]
    columns = list(columns)
    for c in columns:
        if c not in known:
            raise UsageError(f"unknown column '{c}' (columns: {', '.join(known)})")
    return columns


def check_values(texts: Sequence[str], known: Sequence[str]) -> None:
    """UsageError unless each text is a column of ``known`` or a numeric expression over
    them (a histogram's axis or weights, a column of stats)."""
    for t in texts:
        if t in known:
            continue
        if t.isidentifier():
            checked_columns([t], known)  # "unknown column 't' (columns: ...)"
        _core.value_fields(t, known)
