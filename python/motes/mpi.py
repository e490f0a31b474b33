"""Collective analyses over an mpi4py communicator: count, stats and histograms of one step,
its part files shared over the ranks.

>>> from mpi4py import MPI
>>> import motes.mpi
>>> n = motes.mpi.count("run.motes", MPI.COMM_WORLD, where="energy > 2")
>>> counts, edges = motes.mpi.histogram("run.motes", MPI.COMM_WORLD, "ux", bins=256)

Every rank of the communicator calls the function with the same arguments and gets the
same result, equal to the serial ``Dataset`` call (histogram counts and particle counts
exactly; a float sum up to its rounding, since the parts' partial sums are added in another
order). Rank 0 plans the read with :meth:`motes.Dataset.plan` (the parts that cannot hold a
matching particle are left out by the index), and the parts are shared over the ranks by
their estimated rows. Each rank queries its own parts; the results are combined with a
reduction. An error on any rank (a bad argument, a missing file) is raised on every rank.

This module also holds what :mod:`motes.dask` shares with it: the queries of one part. It
imports no MPI library itself: the communicator's own methods (mpi4py) do the collective
work.
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args, _core
from ._ranks import on_every_rank
from ._defaults import HISTOGRAM_BINS, histogram_range
from .dataset import Dataset
from .dataset import open as _open
from .errors import UsageError
from .plan import PartRead
from .request import BoxLike, Quality, selection

__all__ = ["count", "stats", "histogram"]


# --- the steps and parts of a distributed analysis --------------------------------------------

def _steps_of(ds: Dataset, steps: Any, species: Optional[str]) -> Tuple[List[Tuple[int, str]], bool]:
    """(step, species name) of each step ``steps`` names, in the dataset's step order, each
    once; and whether a step column is due (every form but a single index). ``steps`` takes
    the forms of ``Dataset.query(steps=)`` (:func:`motes.steps.resolve`: a list or range of
    step indexes, ``"all"``, slice text, ...), None for ``"all"``, or one step index (one
    step, no step column)."""
    from .steps import resolve

    several = True
    if isinstance(steps, (int, np.integer)) and not isinstance(steps, bool):
        wanted, several = resolve(ds, [_args.step(steps)], species), False
    else:
        wanted = resolve(ds, "all" if steps is None else steps, species)
    out = []
    for k in wanted:
        st, name = ds._resolve(k, species)
        out.append((st.index, name))
    return out, several


def _check_schemas(ds: Dataset, resolved: List[Tuple[int, str]], names: Sequence[str]) -> None:
    """The columns read must have one dtype in every step (a numeric expression among
    ``names``, checked by Dataset._check_values, is float64 in every step)."""
    first = {c.name: c.dtype for c in ds.schema(*resolved[0])}
    for step, sp in resolved[1:]:
        here = {c.name: c.dtype for c in ds.schema(step, sp)}
        for n in names:
            if n not in first and not n.isidentifier():
                continue
            if n not in here:
                raise UsageError(f"step {step} has no column '{n}' (columns: {', '.join(here)})")
            if here[n] != first[n]:
                raise UsageError(f"column '{n}' is {first[n]} in step {resolved[0][0]} but {here[n]} in step {step}")


def _spec(ds: Dataset, step: int, where, box, quality, threads, values: Sequence[Optional[str]] = (),
          species: Optional[str] = None):
    """The core's QuerySpec of a part's query (fields named in ``where`` and in the numeric
    expressions among ``values``, a histogram's axes and weights, bound to the step's)."""
    return ds._fields_for(selection(where, box, quality, None, threads), step, values, species)


# --- one part's query ------------------------------------------------------------------------

def _part_source(ds: Dataset, part: PartRead):
    """A collection of one part file, which the core's queries and analyses run over (the
    part opened through the species first: checked against the step index)."""
    src = ds.source(part.step, part.species)
    if src.part_count == 1:
        return src
    return _core.Collection.open(ds.file(part.step, part.species, part.part).path)


def _part_count(ds, part, where, box, quality, threads) -> int:
    return int(_core.count(_part_source(ds, part), _spec(ds, part.step, where, box, quality, threads)))


def _part_stats(ds, part, column, where, box, quality, threads) -> Dict[str, Any]:
    spec = _spec(ds, part.step, where, box, quality, threads, [column], part.species)
    return _core.stats(_part_source(ds, part), column, spec).to_dict()


def _part_histogram(ds, part, axes, nbins, ranges, weights, where, box, quality, threads) -> np.ndarray:
    src = _part_source(ds, part)
    spec = _spec(ds, part.step, where, box, quality, threads, axes + [weights], part.species)
    if len(axes) == 1:
        return _core.histogram(src, axes[0], int(nbins[0]), *ranges[0], weight=weights, spec=spec)
    return _core.histogram(src, axes[0], int(nbins[0]), *ranges[0], y=axes[1], ybins=int(nbins[1]),
                           ylo=ranges[1][0], yhi=ranges[1][1], weight=weights, spec=spec)


def _combine_stats(results: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The stats of the union of disjoint selections (in the order given)."""
    out: Dict[str, Any] = {"count": 0, "valid": 0, "min": None, "max": None, "sum": 0.0, "mean": None}
    for r in results:
        out["count"] += int(r["count"])
        out["valid"] += int(r["valid"])
        out["sum"] += float(r["sum"])
        if r["min"] is not None:
            out["min"] = r["min"] if out["min"] is None else min(out["min"], r["min"])
            out["max"] = r["max"] if out["max"] is None else max(out["max"], r["max"])
    if out["valid"]:
        out["mean"] = out["sum"] / out["valid"]
    return out


def _resolve_ranges(given, found: Sequence[Optional[Dict[str, Any]]]) -> List[Tuple[float, float]]:
    """Each axis' range: the one given, else the min/max of the matching values (``found``:
    their combined stats), by the core's rule (as ``Dataset.histogram`` resolves it)."""
    return [histogram_range(r, *((None, None) if s is None else (s["min"], s["max"]))) for r, s in zip(given, found)]


# --- the collective calls ---------------------------------------------------------------------

def _check_comm(comm: Any) -> None:
    for method in ("allgather", "bcast", "Get_rank", "Get_size"):
        if not hasattr(comm, method):
            raise UsageError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")


def _shares(units: Sequence[PartRead], size: int) -> List[List[PartRead]]:
    """The parts of each rank: largest first, each to the rank with the fewest estimated
    rows so far (the lowest on a tie), so every rank computes the same plan."""
    load = [0.0] * size
    out: List[List[PartRead]] = [[] for _ in range(size)]
    for u in sorted(units, key=lambda u: (-u.rows, u.step, u.part)):
        r = min(range(size), key=lambda r: (load[r], r))
        out[r].append(u)
        load[r] += u.rows
    for share in out:
        share.sort(key=lambda u: (u.step, u.part))
    return out


def _plan(path, comm, where, box, quality, step, species, stage):
    """Every rank's dataset, and its share of the parts (planned on rank 0)."""
    _check_comm(comm)

    def prepare():
        ds = _open(path)
        ds._resolve(step, species)  # checked on every rank
        plan = ds.plan(where, box, quality, step=step, species=species).parts if comm.Get_rank() == 0 else None
        return ds, plan

    ds, plan = on_every_rank(comm, prepare, stage)
    plan = comm.bcast(plan, root=0)
    return ds, _shares(plan, comm.Get_size())[comm.Get_rank()]


def _sum_arrays(comm, local: np.ndarray) -> np.ndarray:
    """The element-wise sum of every rank's array, added in rank order on rank 0 and sent
    to every rank (the same bits everywhere)."""
    every = comm.gather(local, root=0)
    total = None
    if comm.Get_rank() == 0:
        total = every[0].copy()
        for a in every[1:]:
            total += a
    return comm.bcast(total, root=0)


def count(path: Union[str, os.PathLike], comm: Any, where: Optional[str] = None, box: BoxLike = None,
          quality: Optional[Quality] = None, *, step: Optional[int] = None, species: Optional[str] = None,
          threads: Optional[int] = None) -> int:
    """Collective :meth:`motes.Dataset.count` of one step (default: the last) over the ranks
    of ``comm``: the same number on every rank. ``threads``: each rank's query threads
    (default: the core's)."""
    ds, mine = _plan(path, comm, where, box, quality, step, species, f"planning a count of '{os.fspath(path)}'")
    local = on_every_rank(comm, lambda: sum(_part_count(ds, u, where, box, quality, threads) for u in mine),
                           "counting")
    return int(sum(comm.allgather(local)))


def stats(path: Union[str, os.PathLike], comm: Any, column: str, where: Optional[str] = None, box: BoxLike = None,
          quality: Optional[Quality] = None, *, step: Optional[int] = None, species: Optional[str] = None,
          threads: Optional[int] = None) -> Dict[str, Any]:
    """Collective :meth:`motes.Dataset.stats` (count, valid, min, max, sum, mean of
    ``column`` over the matching particles): the same dict on every rank."""
    ds, mine = _plan(path, comm, where, box, quality, step, species, f"planning stats of '{os.fspath(path)}'")

    def local():
        name = _args.text("column", column)
        ds._check_values([name], step, species)  # an unknown column fails on every rank, parts or not
        return _combine_stats([_part_stats(ds, u, name, where, box, quality, threads) for u in mine])

    return _combine_stats(comm.allgather(on_every_rank(comm, local, f"computing stats of '{column}'")))


def histogram(path: Union[str, os.PathLike], comm: Any, x: str, y: Optional[str] = None, *,
              bins: Union[int, Tuple[int, int]] = HISTOGRAM_BINS, range: Optional[Sequence] = None,
              weights: Optional[str] = None, where: Optional[str] = None, box: BoxLike = None,
              quality: Optional[Quality] = None, step: Optional[int] = None, species: Optional[str] = None,
              threads: Optional[int] = None):
    """Collective :meth:`motes.Dataset.histogram` (1-D, or 2-D with ``y``): ``(counts, edges)``
    or ``(counts, xedges, yedges)`` on every rank, equal to the serial call. Without
    ``range``, a first collective pass finds the matching values' min/max."""
    ds, mine = _plan(path, comm, where, box, quality, step, species, f"planning a histogram of '{os.fspath(path)}'")

    def check():
        axes, nbins, given = _args.histogram_axes(x, y, bins, range)
        ds._check_values(axes + ([] if weights is None else [_args.text("weights", weights)]), step, species)
        return axes, nbins, given

    axes, nbins, given = on_every_rank(comm, check, "checking the histogram's arguments")
    found: List[Optional[Dict[str, Any]]] = [None] * len(axes)
    if any(r is None for r in given):
        def local_ranges():
            return [None if r is not None else
                    _combine_stats([_part_stats(ds, u, a, where, box, quality, threads) for u in mine])
                    for a, r in zip(axes, given)]

        every = comm.allgather(on_every_rank(comm, local_ranges, "finding the histogram's range"))
        found = [None if given[i] is not None else _combine_stats([e[i] for e in every]) for i in builtins.range(len(axes))]
    ranges = _resolve_ranges(given, found)

    def local_histogram():
        shape = tuple(nbins)
        h = np.zeros(shape, dtype=np.float64)
        for u in mine:
            h += np.asarray(_part_histogram(ds, u, axes, nbins, ranges, weights, where, box, quality, threads)).reshape(shape)
        return h

    h = _sum_arrays(comm, on_every_rank(comm, local_histogram, "computing the histogram"))
    if weights is None:
        h = h.astype(np.int64)
    edges = [np.linspace(lo, hi, n + 1) for (lo, hi), n in zip(ranges, nbins)]
    return (h, *edges)

