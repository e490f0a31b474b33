"""Dask over a motes dataset: a ``dask.dataframe`` with one partition per part file, and
histograms computed by the workers.

>>> import motes.dask
>>> df = motes.dask.read("run.motes", where="energy > 2", columns=["x", "ux", "energy"], steps=range(0, 100, 10))
>>> df.groupby("step").energy.mean().compute()
>>> counts, edges = motes.dask.histogram("run.motes", "ux", bins=256, steps=None)

The parts that cannot hold a matching particle are left out before any task runs, from the
index alone (:meth:`motes.Dataset.plan`); each remaining part becomes one partition, read
by a task that opens the dataset and queries that part only. Needs the ``dask`` extra
(``pip install "motes[dask]"``); the scheduler is dask's current one (a
``distributed.Client``'s when one is active).
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from . import _core
from ._args import histogram_axes
from ._defaults import HISTOGRAM_BINS
from .request import BoxLike, Quality, box_of, check_values
from .dataset import open as _open
from .errors import UsageError
from .parts import (check_schemas, merge_stats, part_histogram, part_source, part_spec, part_stats, resolve_ranges,
                    steps_of)
from .plan import PartRead

__all__ = ["read", "histogram"]

STEP = "step"  # the column of step indexes when several steps are read


def _read_part(part: PartRead, *, path: str, where, box, quality, threads, names: List[str], with_step: bool,
               columns=None) -> pd.DataFrame:
    """One partition: the matching particles of one part file. ``columns``: the subset dask's
    optimiser asks for (None: all of ``names``, with the step column when there is one)."""
    wanted = ([STEP] if with_step else []) + names
    if columns is not None:
        wanted = [columns] if isinstance(columns, str) else list(columns)
    read = [c for c in wanted if c != STEP]
    ds = _open(path)
    sel = _core_select(ds, part, where, box, quality, threads)
    values = dict(zip(read, sel.gather_columns(read, 0, sel.size))) if read else {}
    out = {}
    for c in wanted:
        out[c] = np.full(sel.size, part.step, dtype=np.int64) if c == STEP else values[c]
    return pd.DataFrame(out, columns=wanted, index=pd.RangeIndex(sel.size))


def _core_select(ds, part: PartRead, where, box, quality, threads):
    return _core.select(part_source(ds, part), part_spec(ds, part.step, part.species, where, box, quality, threads))


def read(path: Union[str, os.PathLike], where: Optional[str] = None, box: BoxLike = None,
         columns: Optional[Sequence[str]] = None, steps: Any = None, species: Optional[str] = None,
         quality: Optional[Quality] = None, *, threads: int = 1) -> dd.DataFrame:
    """The particles matching ``where`` inside ``box`` (inclusive) at ``quality``, as a lazy
    ``dask.dataframe.DataFrame`` of the ``columns`` asked for (default: all), one partition
    per part file that may hold some (a step written serially is one file: one partition).

    ``steps``: a step index (that step alone), or the forms of ``Dataset.query(steps=)``: a
    list or range of step indexes, ``"all"`` (or None, the default: every step holding the
    species), ``"start:stop:stride"`` text; unless ``steps`` is a single index, an int64
    ``step`` column comes first. Dtypes are the schema's; divisions are unknown (each partition has its own
    RangeIndex). Rows of a partition are in file order, partitions in (step, part) order:
    ``compute()`` holds the rows of ``Dataset.query`` on each step. ``threads``: each task's
    query threads (default 1: dask runs tasks side by side)."""
    path = os.fspath(path)
    ds = _open(path)
    resolved, several = steps_of(ds, steps, species)
    names = ds.request(columns=columns, step=resolved[0][0], species=resolved[0][1]).columns
    check_schemas(ds, resolved, names)
    if several and STEP in names:
        raise UsageError(f"a column is named '{STEP}', which clashes with the step column of a read of several "
                         "steps: pass one step, or columns= without it")
    b = box_of(box)
    for step, sp in resolved:
        part_spec(ds, step, sp, where, b, quality, threads)  # every argument checked now, not in a task
    kept = ds.plan(where, b, quality, steps=[s for s, _ in resolved], species=species).parts
    dtypes = {c.name: c.dtype for c in ds.schema(*resolved[0])}
    meta_columns: Dict[str, np.ndarray] = {}
    if several:
        meta_columns[STEP] = np.empty(0, dtype=np.int64)
    for n in names:
        meta_columns[n] = np.empty(0, dtype=dtypes[n])
    meta = pd.DataFrame(meta_columns, index=pd.RangeIndex(0))
    if not kept:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(_read_part, kept, meta=meta, divisions=None, label="motes-read", enforce_metadata=False,
                       path=path, where=where, box=b, quality=quality, threads=threads, names=names,
                       with_step=several)


def _stats_task(path, part, column, where, box, quality, threads):
    return part_stats(_open(path), part, column, where, box, quality, threads)


def _histogram_task(path, part, axes, nbins, ranges, weights, where, box, quality, threads):
    h = part_histogram(_open(path), part, axes, nbins, ranges, weights, where, box, quality, threads)
    return np.asarray(h, dtype=np.float64).reshape(tuple(nbins))


def _sum(arrays):
    total = None
    for a in arrays:
        total = a.copy() if total is None else total + a
    return total


def histogram(path: Union[str, os.PathLike], x: str, y: Optional[str] = None, *,
              bins: Union[int, Tuple[int, int]] = HISTOGRAM_BINS, range: Optional[Sequence] = None,
              weights: Optional[str] = None, where: Optional[str] = None, box: BoxLike = None,
              quality: Optional[Quality] = None, steps: Any = None, species: Optional[str] = None, threads: int = 1,
              split_every: int = 8):
    """A 1-D (``y=None``) or 2-D histogram of the matching particles, computed by dask: one
    task per part file that may hold some (the others pruned by the index before any task
    runs), each binning its part over one common range, the parts' counts of each step
    summed in a tree (``split_every`` at a time).

    With ``steps`` a single index, returns what :meth:`motes.Dataset.histogram` returns for
    that step, ``(counts, edges)`` or ``(counts, xedges, yedges)``, equal to it. Otherwise
    (None: every step holding the species; a list, a range, ``"all"``, ``"start:stop:stride"``)
    returns what ``Dataset.histogram(steps=...)`` returns: ``(counts, edges, steps)`` or
    ``(counts, xedges, yedges, steps)``, ``counts[i]`` the histogram of step ``steps[i]``,
    every step over one range (``counts.sum(axis=0)`` is the histogram of them all).
    Without ``range``, a first dask pass finds the matching values' min/max over every
    step asked for. Counts are exact; sums of ``weights`` are equal up to rounding (the
    parts' sums are added in another order)."""
    path = os.fspath(path)
    ds = _open(path)
    resolved, several = steps_of(ds, steps, species)
    axes, nbins, given = histogram_axes(x, y, bins, range)
    extra = [] if weights is None else [weights]
    for step, sp in resolved:
        check_values(axes + extra, ds.request(step=step, species=sp).known)
    check_schemas(ds, resolved, axes + extra)
    b = box_of(box)
    for step, sp in resolved:
        part_spec(ds, step, sp, where, b, quality, threads)
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise UsageError("split_every must be an integer >= 2")
    kept = ds.plan(where, b, quality, steps=[s for s, _ in resolved], species=species).parts

    found: List[Optional[Dict[str, Any]]] = [None] * len(axes)
    missing = [i for i, r in enumerate(given) if r is None]
    if missing and kept:
        tasks = [[dask.delayed(_stats_task, pure=True)(path, u, axes[i], where, b, quality, threads) for u in kept]
                 for i in missing]
        (results,) = dask.compute(tasks)
        for i, per_part in zip(missing, results):
            found[i] = merge_stats(per_part)
    ranges = resolve_ranges(given, found)

    shape = tuple(nbins)
    roots = {}
    for step, _sp in resolved:
        layer = [dask.delayed(_histogram_task, pure=True)(path, u, axes, nbins, ranges, weights, where, b, quality,
                                                         threads) for u in kept if u.step == step]
        while len(layer) > 1:
            layer = [dask.delayed(_sum, pure=True)(layer[i:i + split_every])
                     for i in builtins.range(0, len(layer), split_every)]
        if layer:
            roots[step] = layer[0]
    (done,) = dask.compute(roots) if roots else ({},)
    per_step = [done.get(step, np.zeros(shape, dtype=np.float64)) for step, _sp in resolved]
    counts = np.stack(per_step) if several else per_step[0]
    if weights is None:
        counts = counts.astype(np.int64)
    edges = [np.linspace(lo, hi, n + 1) for (lo, hi), n in zip(ranges, nbins)]
    if several:
        return (counts, *edges, np.array([step for step, _sp in resolved], dtype=np.int64))
    return (counts, *edges)
