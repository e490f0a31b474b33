"""The queries of one part file of a step (what an MPI rank or a Dask task runs), and how
their results are put together: the steps and species a distributed analysis reads, their
schemas checked alike, each part's count, stats or histogram, the stats of the whole from
the parts' (the core's one merge, ``ColumnStats.add``) and the histogram ranges found from
them. :mod:`motes.mpi` and :mod:`motes.dask` share out :class:`motes.plan.PartRead` s and
call these; every query goes through :meth:`motes.Dataset.request`. The dataset is handed
in, never imported (the Python layer table, docs/architecture.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _args, _core
from ._defaults import histogram_range
from .errors import UsageError
from .plan import PartRead

if TYPE_CHECKING:
    from .dataset import Dataset

__all__ = ["steps_of", "check_schemas", "part_spec", "part_source", "part_count", "part_stats", "part_histogram",
           "binned", "merge_stats", "resolve_ranges"]


def steps_of(ds: Dataset, steps: Any, species: Optional[str]) -> Tuple[List[Tuple[int, str]], bool]:
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
        req = ds.request(step=k, species=species)
        out.append((req.step.index, req.species))
    return out, several


def check_schemas(ds: Dataset, resolved: List[Tuple[int, str]], names: Sequence[str]) -> None:
    """The columns read must have one dtype in every step (a numeric expression among
    ``names``, checked by motes.request.check_values, is float64 in every step)."""
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


def part_spec(ds: Dataset, step: int, species: str, where, box, quality, threads,
              values: Sequence[Optional[str]] = ()):
    """The core's QuerySpec of a part's query (fields named in ``where`` and in the numeric
    expressions among ``values``, a histogram's axes and weights, bound to the step's)."""
    return ds.request(where, box, quality, values=values, step=step, species=species, threads=threads).spec


def part_source(ds: Dataset, part: PartRead):
    """A collection of one part file, which the core's queries and analyses run over (the
    part opened through the species first: checked against the step index)."""
    src = ds.source(part.step, part.species)
    if src.part_count == 1:
        return src
    return _core.Collection.open(ds.file(part.step, part.species, part.part).path)


def part_count(ds, part, where, box, quality, threads) -> int:
    return int(_core.count(part_source(ds, part), part_spec(ds, part.step, part.species, where, box, quality, threads)))


def part_stats(ds, part, column, where, box, quality, threads) -> Dict[str, Any]:
    spec = part_spec(ds, part.step, part.species, where, box, quality, threads, [column])
    return _core.stats(part_source(ds, part), column, spec).to_dict()


def binned(src, axes: Sequence[str], nbins, ranges, weights: Optional[str], spec) -> np.ndarray:
    """The core's 1-D (one axis) or 2-D histogram of ``src`` under ``spec``: ``nbins`` and
    ``ranges`` (min, max) per axis, sums of ``weights`` when given (``Dataset.histogram``'s
    and each part's)."""
    if len(axes) == 1:
        return _core.histogram(src, axes[0], int(nbins[0]), *ranges[0], weight=weights, spec=spec)
    return _core.histogram(src, axes[0], int(nbins[0]), *ranges[0], y=axes[1], ybins=int(nbins[1]),
                           ylo=ranges[1][0], yhi=ranges[1][1], weight=weights, spec=spec)


def part_histogram(ds, part, axes, nbins, ranges, weights, where, box, quality, threads) -> np.ndarray:
    spec = part_spec(ds, part.step, part.species, where, box, quality, threads, axes + [weights])
    return binned(part_source(ds, part), axes, nbins, ranges, weights, spec)


def merge_stats(results: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The stats of the union of disjoint selections (each a ``ColumnStats.to_dict()``), in the
    order given: the core's merge."""
    return _core.merge_stats(list(results)).to_dict()


def resolve_ranges(given, found: Sequence[Optional[Dict[str, Any]]]) -> List[Tuple[float, float]]:
    """Each axis' range: the one given, else the min/max of the matching values (``found``:
    their combined stats), by the core's rule (as ``Dataset.histogram`` resolves it)."""
    return [histogram_range(r, *((None, None) if s is None else (s["min"], s["max"]))) for r, s in zip(given, found)]
