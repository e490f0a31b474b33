"""Which part files a query reads, and about how many of their rows, found from the index
alone before any particle is read: :meth:`motes.Dataset.plan`, the one planner of reads
that :mod:`motes.mpi`, :mod:`motes.dask` and the server hand out work with (the core's
``plan_reads``).

A part is left out when it is empty, when the step index rules it out (its value ranges
and bitmaps against ``where`` and ``box``, as the core prunes a tree: every part that may
hold a match is kept, what cannot be bounded, e.g. a grid field sampled at the particles,
never prunes), or, for a step written as one file, when that file's root node rules it
out. The query of each kept part stays exact.

``rows`` estimates what a query reads from a part: inside ``box`` (from the tree: node
counts and position ranges, exact for nodes wholly inside or outside), at its quality or
fraction; ``where`` is then tested on those rows, so at most these match. Without a box the
estimate is exact, and the part file is not opened unless the quality leaves out levels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

from . import _core
from .errors import storage_errors

__all__ = ["PartRead", "ReadPlan", "plan", "levels_for_quality"]


@dataclass(frozen=True)
class PartRead:
    """One part file of one species in one step that a query reads (a step written
    serially is one part)."""

    step: int
    species: str
    part: int      # its number among the species' parts
    count: int     # particles in the file (before any filter)
    rows: float    # the rows the query reads from it, estimated (see motes.plan)
    # With levels=True: per level of detail of the file, the estimated particles inside the box.
    levels: Optional[np.ndarray] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ReadPlan:
    """The parts a query reads, in (step, part) order, and how many it leaves out."""

    parts: List[PartRead]
    pruned: int

    @property
    def rows(self) -> float:
        """The estimated rows of every part."""
        return float(sum(p.rows for p in self.parts))


def levels_for_quality(quality: float, level_count: int) -> int:
    """How many levels of detail a read at ``quality`` takes from a part file of
    ``level_count`` levels (the core's rule, ceil(quality * level_count)): the coarsest ones."""
    return _core.levels_for_quality(quality, level_count)


def plan(ds, where, box, quality, fraction, step, steps: Any, species: Optional[str], levels: bool) -> ReadPlan:
    """:meth:`motes.Dataset.plan` (see there)."""
    from .steps import resolve

    ks = [ds.step(step).index] if steps is None else resolve(ds, steps, species, step)
    parts: List[PartRead] = []
    pruned = 0
    for k in ks:
        req = ds.request(where, box, quality, fraction=fraction, step=k, species=species)
        with storage_errors(ds.path, "cannot read"):
            got = _core.plan_reads(req.source(), req.spec, levels)
        pruned += got.pruned
        parts += [PartRead(req.step.index, req.species, p.part, p.count, p.rows, p.levels if levels else None)
                  for p in got.parts]
    return ReadPlan(parts, pruned)
