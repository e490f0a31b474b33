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

The queries of one part are :mod:`motes.parts` (shared with :mod:`motes.dask`). This module
imports no MPI library itself: the communicator's own methods (mpi4py) do the collective
work.
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args
from ._ranks import on_every_rank
from ._defaults import HISTOGRAM_BINS
from .dataset import open as _open
from .errors import UsageError
from .parts import merge_stats, part_count, part_histogram, part_stats, resolve_ranges
from .plan import PartRead
from .request import BoxLike, Quality, check_values

__all__ = ["count", "stats", "histogram"]


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
        ds.request(step=step, species=species)  # checked on every rank
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
    local = on_every_rank(comm, lambda: sum(part_count(ds, u, where, box, quality, threads) for u in mine),
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
        check_values([name], ds.request(step=step, species=species).known)  # fails on every rank, parts or not
        return merge_stats([part_stats(ds, u, name, where, box, quality, threads) for u in mine])

    return merge_stats(comm.allgather(on_every_rank(comm, local, f"computing stats of '{column}'")))


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
        check_values(axes + ([] if weights is None else [_args.text("weights", weights)]),
                     ds.request(step=step, species=species).known)
        return axes, nbins, given

    axes, nbins, given = on_every_rank(comm, check, "checking the histogram's arguments")
    found: List[Optional[Dict[str, Any]]] = [None] * len(axes)
    if any(r is None for r in given):
        def local_ranges():
            return [None if r is not None else
                    merge_stats([part_stats(ds, u, a, where, box, quality, threads) for u in mine])
                    for a, r in zip(axes, given)]

        every = comm.allgather(on_every_rank(comm, local_ranges, "finding the histogram's range"))
        found = [None if given[i] is not None else merge_stats([e[i] for e in every]) for i in builtins.range(len(axes))]
    ranges = resolve_ranges(given, found)

    def local_histogram():
        shape = tuple(nbins)
        h = np.zeros(shape, dtype=np.float64)
        for u in mine:
            h += np.asarray(part_histogram(ds, u, axes, nbins, ranges, weights, where, box, quality, threads)).reshape(shape)
        return h

    h = _sum_arrays(comm, on_every_rank(comm, local_histogram, "computing the histogram"))
    if weights is None:
        h = h.astype(np.int64)
    edges = [np.linspace(lo, hi, n + 1) for (lo, hi), n in zip(ranges, nbins)]
    return (h, *edges)

