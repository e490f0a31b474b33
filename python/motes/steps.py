"""Queries and analyses across steps: ``ds.query/count/stats/histogram(..., steps=...)``.

``steps`` names the steps to visit, in one of these forms (:func:`resolve`, the one parser
that the Python API and the command line share):

* a list (tuple, numpy array, set) of step indexes, e.g. ``[0, 10, 20]``;
* a ``range`` of step indexes, e.g. ``range(0, 100, 10)``;
* ``"all"``: every step holding particles (of ``species`` when given);
* slice text ``"start:stop:stride"`` (or a ``slice``) over step *indexes* (the numbers of
  ``ds.steps``, not positions in that list), ``stop`` exclusive like Python: the steps of
  the dataset whose index is in ``range(start, stop, stride)``, so ``"0:100:10"`` is steps 0,
  10, ..., 90 of those present and ``"1000:2000"`` every step from 1000 to 1999; ``start``
  defaults to the first step, ``stop`` to just after the last, ``stride`` to 1 (it must be
  > 0); negative numbers are step indexes, not counted from the end;
* text of comma-separated indexes, e.g. ``"0,10,20"`` (also a single ``"5"``).

Every step a list, a range or comma-separated text names must exist (else
:class:`UsageError` naming those missing and the steps present); a slice must select at
least one step. Results come in the dataset's step order whatever the order given, each
step once. ``steps=`` and ``step=`` together are refused.

What the analyses return across steps:

* :func:`query`: one :class:`~motes.table.Table` with a leading ``step`` column (int64),
  then the columns of a single-step query, the rows of each step in step order (the same
  rows, in the same order, as ``ds.query(..., step=k)``); ``counters`` summed over steps.
* :func:`count`: a Table (time series) with ``step`` (int64), ``time`` (float64) and
  ``count`` (int64), one row per step.
* :func:`stats`: a Table with ``step``, ``time`` and the keys of a single-step result:
  ``count``, ``valid`` (int64), ``min``, ``max``, ``sum``, ``mean`` (float64; NaN where the
  single-step result is None).
* :func:`histogram`: ``(counts, edges, steps)`` in 1-D, ``(counts, xedges, yedges, steps)``
  in 2-D; ``counts`` has shape ``(n_steps, bins)`` or ``(n_steps, nx, ny)`` and row ``i`` is
  the histogram of step ``steps[i]`` over one range common to every step: the range given,
  else the min and max of the selected values over all the steps (found from the per-step
  stats first, one traversal per step and axis), with the single-step rules for a single
  value (v - 0.5, v + 0.5) and for no value at all (0, 1).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import time as _time
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np

from . import _args, _core
from ._defaults import HISTOGRAM_BINS, histogram_range
from .errors import UsageError

__all__ = ["resolve", "query", "query_batches", "count", "stats", "histogram"]

_FORMS = "a list of step indexes, a range, 'all' or 'start:stop:stride' text"


def _listing(values: Sequence[int], most: int = 20) -> str:
    text = ", ".join(map(str, values[:most]))
    return text + (f", ... ({len(values)} in all)" if len(values) > most else "")


def _int(text: str, spec: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"steps: invalid step index '{text.strip()}' in '{spec}' (steps are {_FORMS}, "
                         f"e.g. 'all', '0:100:10', '0,5,9')") from None


def _parse_text(spec: str, present: List[int]) -> List[int]:
    text = spec.strip()
    if text.lower() == "all":
        return list(present)
    if ":" in text:
        parts = text.split(":")
        if len(parts) > 3:
            raise UsageError(f"steps: '{spec}' is not 'start:stop' or 'start:stop:stride'")
        start, stop, stride = (None if not p.strip() else _int(p, spec) for p in parts + [""] * (3 - len(parts)))
        return _slice(start, stop, stride, present, spec)
    if not text:
        raise UsageError(f"steps must be {_FORMS}, got an empty text")
    return [_int(p, spec) for p in text.split(",")]


def _slice(start: Optional[int], stop: Optional[int], stride: Optional[int], present: List[int], spec: Any):
    stride = 1 if stride is None else stride
    if stride <= 0:
        raise UsageError(f"steps: the stride of '{_slice_text(spec)}' must be > 0, got {stride}")
    start = min(present) if start is None else start
    stop = max(present) + 1 if stop is None else stop
    chosen = [k for k in present if start <= k < stop and (k - start) % stride == 0]
    if not chosen:
        raise UsageError(f"steps '{_slice_text(spec)}' selects no step (steps: {_listing(present)})")
    return chosen


def _slice_text(spec: Any) -> str:
    if isinstance(spec, slice):
        return ":".join("" if v is None else str(v) for v in (spec.start, spec.stop, spec.step))
    return str(spec)


def resolve(ds, steps: Any, species: Optional[str] = None, step: Optional[int] = None) -> List[int]:
    """The step indexes that ``steps`` names in dataset ``ds``, in the dataset's step order,
    each once (see the module's documentation for the forms). ``step`` is the single-step
    argument of the same call: both given is a UsageError. ``species`` narrows ``"all"`` to
    the steps holding that species."""
    if step is not None:
        raise UsageError("pass either step= or steps=, not both")
    if not ds.steps:
        raise UsageError(f"dataset '{ds.path}' has no steps")
    present = ds.steps
    if isinstance(steps, str):
        if steps.strip().lower() == "all":
            chosen = [s.index for s in ds.step_entries if (s.species if species is None else species in s.species)]
            if not chosen:
                what = "particles" if species is None else f"species '{species}'"
                raise UsageError(f"no step of dataset '{ds.path}' holds {what}")
            return chosen
        wanted = _parse_text(steps, present)
    elif isinstance(steps, slice):
        wanted = _slice(*(None if v is None else _args.integer("steps", v, *_args.INT64)
                          for v in (steps.start, steps.stop, steps.step)), present, steps)
    elif isinstance(steps, range):
        wanted = list(steps)
    elif isinstance(steps, (bool, numbers.Number)):
        raise UsageError(f"steps must be {_FORMS}, got {steps!r} (for one step, pass step={steps!r} or steps=[{steps!r}])")
    else:
        try:
            items = list(np.asarray(steps).ravel().tolist()) if isinstance(steps, np.ndarray) else list(steps)
        except TypeError:
            raise UsageError(f"steps must be {_FORMS}, got {type(steps).__name__}") from None
        wanted = [_args.integer("steps", v, *_args.INT64) for v in items]
    if not wanted:
        raise UsageError(f"steps {steps!r} selects no step (steps: {_listing(present)})")
    known = set(present)
    missing = sorted({k for k in wanted if k not in known})
    if missing:
        raise UsageError(f"dataset has no step{'s' if len(missing) > 1 else ''} {_listing(missing)} "
                         f"(steps: {_listing(present)})")
    chosen = set(wanted)
    return [k for k in present if k in chosen]


# --- helpers -------------------------------------------------------------------------------------
@contextlib.contextmanager
def _at(k: int) -> Iterator[None]:
    """A UsageError of the work on step ``k`` names the step."""
    try:
        yield
    except UsageError as e:
        if f"step {k}" in str(e):
            raise
        raise UsageError(f"step {k}: {e}") from None


class _Clock:
    """One ``timeout`` over every step: each step gets what is left of it."""

    def __init__(self, timeout: Optional[float]):
        self.deadline = None
        if timeout is not None:
            t = _args.timeout(timeout)
            if math.isfinite(t):
                self.deadline = _time.monotonic() + t

    def left(self) -> Optional[float]:
        if self.deadline is None:
            return None
        return max(self.deadline - _time.monotonic(), 1e-9)  # spent: the core stops at its first check


def _check_columns(ds, ks: List[int], species: Optional[str], names: Sequence[str], values: bool = False) -> None:
    """Every step's species has every column of ``names``: grid field references among a
    query's columns are sampled, and with ``values`` (histogram axes and weights, a column
    of stats) a numeric expression over the step's columns is checked by the core."""
    from .fields.queries import field_reference

    for k in ks:
        known = ds.column_names(k, species)
        for c in names:
            if c in known or (not values and field_reference(c, known)):
                continue
            if values and not c.isidentifier():
                with _at(k):
                    _core.value_fields(c, known)
                continue
            of = f" (species '{species}')" if species is not None else ""
            raise UsageError(f"step {k}{of} has no column '{c}' (columns: {', '.join(known)})")


def _selected(ds, steps, species, step) -> List[int]:
    ks = resolve(ds, steps, species, step)
    for k in ks:
        ds.schema(k, species)  # the species exists in every step (else a UsageError naming the step)
    return ks


def _columns_of(ds, ks: List[int], species: Optional[str], columns: Any) -> List[str]:
    names = ds.column_names(ks[0], species) if columns is None else (
        [columns] if isinstance(columns, str) else list(columns))
    _check_columns(ds, ks, species, names)
    if "step" in names:
        raise UsageError("column 'step' would be hidden by the step column of a query across steps: "
                         "query it with step=")
    return names


# --- queries and analyses ------------------------------------------------------------------------
def query(ds, steps: Any, step: Optional[int] = None, *, columns: Any = None, species: Optional[str] = None,
          timeout: Optional[float] = None, **kw) -> Any:
    """``ds.query(..., steps=steps)``: one Table, a leading ``step`` column then ``columns``
    (default: those of the first step selected), the rows of each step in step order."""
    from .table import Table

    ks = _selected(ds, steps, species, step)
    names = _columns_of(ds, ks, species, columns)
    clock = _Clock(timeout)
    parts, counters = [], {}
    for k in ks:
        with _at(k):
            t = ds.query(columns=names, step=k, species=species, timeout=clock.left(), **kw)
        parts.append(t)
        for key, v in t.counters.items():
            counters[key] = counters.get(key, 0) + int(v)
    out = {"step": np.concatenate([np.full(len(t), k, dtype=np.int64) for k, t in zip(ks, parts)])}
    for n in names:
        out[n] = np.concatenate([t[n] for t in parts])
    return Table(out, counters)


def query_batches(ds, steps: Any, step: Optional[int] = None, *, columns: Any = None, batch_size: int = 1 << 20,
                  species: Optional[str] = None, timeout: Optional[float] = None, **kw) -> Iterator[Any]:
    """Like :func:`query`, yielding tables of at most ``batch_size`` rows (each from one step,
    with the ``step`` column), step after step: bounded memory."""
    from .table import Table

    ks = _selected(ds, steps, species, step)
    names = _columns_of(ds, ks, species, columns)
    clock = _Clock(timeout)
    for k in ks:
        with _at(k):
            batches = ds.query_batches(columns=names, batch_size=batch_size, step=k, species=species,
                                       timeout=clock.left(), **kw)
        while True:
            with _at(k):
                t = next(batches, None)
            if t is None:
                break
            cols = {"step": np.full(len(t), k, dtype=np.int64)}
            cols.update(t)
            yield Table(cols, t.counters)


def _series(ds, ks: List[int], values: Dict[str, Any]):
    from .table import Table

    cols = {"step": np.asarray(ks, dtype=np.int64),
            "time": np.asarray([ds.step(k).time for k in ks], dtype=np.float64)}
    cols.update(values)
    return Table(cols)


def count(ds, steps: Any, step: Optional[int] = None, *, species: Optional[str] = None,
          timeout: Optional[float] = None, **kw):
    """``ds.count(..., steps=steps)``: a Table of ``step``, ``time``, ``count`` (one row per step)."""
    ks = _selected(ds, steps, species, step)
    clock = _Clock(timeout)
    counts = []
    for k in ks:
        with _at(k):
            counts.append(ds.count(step=k, species=species, timeout=clock.left(), **kw))
    return _series(ds, ks, {"count": np.asarray(counts, dtype=np.int64)})


_INT_STATS = ("count", "valid")


def stats(ds, steps: Any, column: str, step: Optional[int] = None, *, species: Optional[str] = None,
          timeout: Optional[float] = None, **kw):
    """``ds.stats(column, ..., steps=steps)``: a Table of ``step``, ``time`` and the single-step
    keys (count, valid: int64; min, max, sum, mean: float64, NaN for None), one row per step."""
    ks = _selected(ds, steps, species, step)
    _check_columns(ds, ks, species, [_args.text("column", column)], values=True)
    clock = _Clock(timeout)
    rows = []
    for k in ks:
        with _at(k):
            rows.append(ds.stats(column, step=k, species=species, timeout=clock.left(), **kw))
    values = {}
    for key in rows[0]:
        if key in _INT_STATS:
            values[key] = np.asarray([r[key] for r in rows], dtype=np.int64)
        else:
            values[key] = np.asarray([np.nan if r[key] is None else r[key] for r in rows], dtype=np.float64)
    return _series(ds, ks, values)


def histogram(ds, steps: Any, x: str, y: Optional[str] = None, step: Optional[int] = None, *,
              bins: Any = HISTOGRAM_BINS, range: Optional[Sequence] = None, weights: Optional[str] = None,
              species: Optional[str] = None, timeout: Optional[float] = None, **kw):
    """``ds.histogram(x, y, ..., steps=steps)``: ``(counts, edges, steps)`` or
    ``(counts, xedges, yedges, steps)``, counts of shape ``(n_steps, bins)`` or
    ``(n_steps, nx, ny)`` over one range common to every step (see the module's documentation)."""
    ks = _selected(ds, steps, species, step)
    axes, _, ranges = _args.histogram_axes(x, y, bins, range)
    _check_columns(ds, ks, species, axes + ([weights] if weights is not None else []), values=True)
    clock = _Clock(timeout)
    common = []
    for name, r in zip(axes, ranges):
        if r is not None:
            common.append(r)  # checked by the single-step calls
            continue
        lo = hi = None
        for k in ks:
            with _at(k):
                s = ds.stats(name, step=k, species=species, timeout=clock.left(), **kw)
            if s["min"] is not None:
                lo = s["min"] if lo is None else min(lo, s["min"])
                hi = s["max"] if hi is None else max(hi, s["max"])
        common.append(histogram_range(None, lo, hi))
    rng = common[0] if y is None else tuple(common)
    counts, edges = [], None
    for k in ks:
        with _at(k):
            res = ds.histogram(x, y, bins=bins, range=rng, weights=weights, step=k, species=species,
                               timeout=clock.left(), **kw)
        counts.append(res[0])
        edges = res[1:]
    return (np.stack(counts), *edges, np.asarray(ks, dtype=np.int64))
