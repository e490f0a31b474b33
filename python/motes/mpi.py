"""Collective analyses over an mpi4py communicator: count, stats and histograms of one step,
its part files shared over the ranks.

>>> from mpi4py import MPI
>>> import motes.mpi
>>> n = motes.mpi.count("run.motes", MPI.COMM_WORLD, where="energy > 2")
>>> counts, edges = motes.mpi.histogram("run.motes", MPI.COMM_WORLD, "ux", bins=256)

Every rank of the communicator calls the function with the same arguments and gets the
same result, equal to the serial ``Dataset`` call (histogram counts and particle counts
exactly; a float sum up to its rounding, since the parts' partial sums are added in another
order). Rank 0 plans the read: the parts that cannot hold a matching particle are pruned by
the index (their bounds against ``box``, their column ranges against ``where``), the others
are shared over the ranks by particle count. Each rank queries its own parts; the results
are combined with a reduction. An error on any rank (a bad argument, a missing file) is
raised on every rank.

This module also holds what :mod:`motes.dask` shares with it: the planner of part reads
(:func:`parts`) and the queries of one part. It imports no MPI library itself: the
communicator's own methods (mpi4py) do the collective work.
"""

from __future__ import annotations

import ast
import builtins
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args, _core
from ._core import UsageError
from ._support import on_every_rank
from .dataset import BoxLike, Dataset, Quality, _box, _selection
from .dataset import open as _open

__all__ = ["count", "stats", "histogram", "parts", "Part"]


# --- planning: which part files a query needs ----------------------------------------------

@dataclass(frozen=True)
class Part:
    """One part file of one species in one step (a serial write has one part per step)."""

    step: int
    species: str
    part: int   # its number among the species' parts
    count: int  # particles in the file (before any filter)


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
    """The columns read must have one dtype in every step."""
    first = {c.name: c.dtype for c in ds.schema(*resolved[0])}
    for step, sp in resolved[1:]:
        here = {c.name: c.dtype for c in ds.schema(step, sp)}
        for n in names:
            if n not in here:
                raise UsageError(f"step {step} has no column '{n}' (columns: {', '.join(here)})")
            if here[n] != first[n]:
                raise UsageError(f"column '{n}' is {first[n]} in step {resolved[0][0]} but {here[n]} in step {step}")


def _spec(ds: Dataset, step: int, where, box, quality, threads):
    """The core's QuerySpec of a part's query (fields named in ``where`` bound to the step's)."""
    return ds._fields_for(_selection(where, box, quality, None, threads), step)


def _box_meets(bounds, box) -> bool:
    """Whether a part's bounds ((x0, y0, z0), (x1, y1, z1)) meet an inclusive box; NaN
    bounds (unknown) always do."""
    (lo, hi) = bounds
    for a in range(3):
        if lo[a] > box[a + 3] or box[a] > hi[a]:
            return False
    return True


def parts(path_or_dataset: Union[str, os.PathLike, Dataset], *, where: Optional[str] = None, box: BoxLike = None,
          steps: Any = None, species: Optional[str] = None) -> Tuple[List[Part], int]:
    """The part files a query must read, and how many it may skip, found from the index
    alone before any particle is read: a part is skipped when it is empty, when its bounds
    miss ``box``, or when the value ranges its header records for every column (the
    step index's per-part ranges) show that no particle of it can satisfy ``where``
    (a conservative interval evaluation, as the core prunes tree nodes: arithmetic,
    functions, ``and``/``or``/``not`` and NaN are accounted for; what it cannot bound, e.g.
    a grid field sampled at the particles, never prunes).

    ``steps``: None (every step holding the species), a step index, or a sequence of them."""
    ds = path_or_dataset if isinstance(path_or_dataset, Dataset) else _open(path_or_dataset)
    resolved, _ = _steps_of(ds, steps, species)
    b = _box(box)
    tree = _where_tree(where)
    kept: List[Part] = []
    pruned = 0
    for step, sp in resolved:
        _spec(ds, step, where, b, None, None)  # the arguments checked as a query's
        if tree is not None:
            _check_names(tree, [c.name for c in ds.schema(step, sp)])
        src = ds.source(step, sp)
        counts = list(src.part_counts)
        bounds = list(src.part_bounds)
        for k, n in enumerate(counts):
            if n == 0 or (b is not None and not _box_meets(bounds[k], b)):
                pruned += 1
                continue
            if tree is not None:
                info = ds.file(step, sp, k).column_info(storage=False)
                ranges = {c["name"]: c for c in info}
                if not _may_hold(tree, ranges):
                    pruned += 1
                    continue
            kept.append(Part(step, sp, k, int(n)))
    return kept, pruned


# --- the interval evaluation of `where` over a part's column ranges --------------------------

def _where_tree(where: Optional[str]):
    """The syntax tree (Python's ast) of the core's fully parenthesised form of ``where``,
    None for no filter; a syntax error is the core's UsageError."""
    if where is None:
        return None
    text = _core.parse_expression(_args.where(where))
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:  # a form this evaluator does not know: it never prunes
        return ast.Constant(value=_UNKNOWN)


_UNKNOWN = object()
_FUNCTIONS = {"abs", "sqrt", "exp", "log", "log10", "sin", "cos", "tan"}


def _check_names(tree, columns: Sequence[str]) -> None:
    """UsageError for a column of ``where`` the species does not have (as the core says it)."""
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in callees and node.id not in columns:
            raise UsageError(f"unknown column '{node.id}' in expression (columns: {', '.join(columns)})")


@dataclass
class _Interval:
    lo: float
    hi: float
    nan: bool  # whether a value may be NaN

    @staticmethod
    def full() -> "_Interval":
        return _Interval(-math.inf, math.inf, True)


def _widen(lo: float, hi: float, nan: bool) -> _Interval:
    """An interval computed in floating point, one ulp wider on each side (the core's
    per-particle arithmetic may round the other way); NaN endpoints: anything."""
    if math.isnan(lo) or math.isnan(hi):
        return _Interval.full()
    return _Interval(float(np.nextafter(lo, -np.inf)), float(np.nextafter(hi, np.inf)), nan)


def _interval(node, ranges: Dict[str, dict]) -> _Interval:
    """Bounds of a numeric subexpression over every particle of a part."""
    with np.errstate(all="ignore"):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            v = float(node.value)
            return _Interval(v, v, math.isnan(v))
        if isinstance(node, ast.Name):
            c = ranges.get(node.id)
            if c is None or c["min"] is None or c["max"] is None:
                return _Interval.full()
            lo, hi = float(c["min"]), float(c["max"])
            if math.isnan(lo) or math.isnan(hi) or lo > hi:  # no valid value recorded: let the query decide
                return _Interval.full()
            eb = float(c.get("error_bound") or 0.0)  # lossy columns: stored values within eb of the recorded range
            if eb > 0:
                lo, hi = lo - eb, hi + eb
                return _widen(lo, hi, c["nan_count"] > 0)
            return _Interval(lo, hi, c["nan_count"] > 0)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = _interval(node.operand, ranges)
            return _Interval(-a.hi, -a.lo, a.nan)
        if isinstance(node, ast.BinOp):
            a, b = _interval(node.left, ranges), _interval(node.right, ranges)
            nan = a.nan or b.nan or not all(map(math.isfinite, (a.lo, a.hi, b.lo, b.hi)))  # inf - inf, 0 * inf
            f = np.float64
            if isinstance(node.op, ast.Add):
                return _widen(float(f(a.lo) + f(b.lo)), float(f(a.hi) + f(b.hi)), nan)
            if isinstance(node.op, ast.Sub):
                return _widen(float(f(a.lo) - f(b.hi)), float(f(a.hi) - f(b.lo)), nan)
            if isinstance(node.op, ast.Mult):
                corners = [float(f(p) * f(q)) for p in (a.lo, a.hi) for q in (b.lo, b.hi)]
                return _widen(min(corners), max(corners), nan)
            if isinstance(node.op, ast.Div):
                if b.lo <= 0.0 <= b.hi:
                    return _Interval.full()
                corners = [float(f(p) / f(q)) for p in (a.lo, a.hi) for q in (b.lo, b.hi)]
                return _widen(min(corners), max(corners), nan)
            if isinstance(node.op, ast.Pow) and b.lo == b.hi and float(b.lo).is_integer() and 0 <= b.lo <= 64:
                k = int(b.lo)
                if k == 0:
                    return _Interval(1.0, 1.0, a.nan)
                lo, hi = float(f(a.lo) ** k), float(f(a.hi) ** k)
                if k % 2 == 1 or a.lo >= 0:
                    return _widen(lo, hi, a.nan)
                if a.hi <= 0:
                    return _widen(hi, lo, a.nan)
                return _widen(0.0, max(lo, hi), a.nan)
            return _Interval.full()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS \
                and len(node.args) == 1 and not node.keywords:
            a = _interval(node.args[0], ranges)
            name = node.func.id
            if name == "abs":
                if a.lo >= 0:
                    return a
                if a.hi <= 0:
                    return _Interval(-a.hi, -a.lo, a.nan)
                return _Interval(0.0, max(-a.lo, a.hi), a.nan)
            if name in ("sin", "cos"):
                return _Interval(-1.0, 1.0, a.nan or not (math.isfinite(a.lo) and math.isfinite(a.hi)))
            if name == "exp":
                return _widen(float(np.exp(a.lo)), float(np.exp(a.hi)), a.nan)
            if name == "sqrt" and a.lo >= 0:
                return _widen(float(np.sqrt(a.lo)), float(np.sqrt(a.hi)), a.nan)
            if name in ("log", "log10") and a.lo > 0:
                fn = np.log if name == "log" else np.log10
                return _widen(float(fn(a.lo)), float(fn(a.hi)), a.nan)
            return _Interval.full()
        return _Interval.full()  # field(...), anything else: unbounded


def _truth(node, ranges: Dict[str, dict]) -> Tuple[bool, bool]:
    """(whether some particle of the part may satisfy node, whether some may not)."""
    if isinstance(node, ast.BoolOp):
        parts = [_truth(v, ranges) for v in node.values]
        if isinstance(node.op, ast.And):
            return all(t for t, _ in parts), any(f for _, f in parts)
        return any(t for t, _ in parts), all(f for _, f in parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        t, f = _truth(node.operand, ranges)
        return f, t
    if isinstance(node, ast.Compare):
        results = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            results.append(_compare(op, _interval(left, ranges), _interval(right, ranges)))
            left = right
        return all(t for t, _ in results), any(f for _, f in results)
    return True, True


def _compare(op, a: _Interval, b: _Interval) -> Tuple[bool, bool]:
    """(may hold, may fail) for some pair of values in a and b; a NaN makes every
    comparison false but !=, which it makes true."""
    nan = a.nan or b.nan
    meet = a.lo <= b.hi and b.lo <= a.hi
    same = a.lo == a.hi == b.lo == b.hi
    if isinstance(op, ast.Lt):
        return a.lo < b.hi, nan or a.hi >= b.lo
    if isinstance(op, ast.LtE):
        return a.lo <= b.hi, nan or a.hi > b.lo
    if isinstance(op, ast.Gt):
        return a.hi > b.lo, nan or a.lo <= b.hi
    if isinstance(op, ast.GtE):
        return a.hi >= b.lo, nan or a.lo < b.hi
    if isinstance(op, ast.Eq):
        return meet, nan or not same
    if isinstance(op, ast.NotEq):
        return nan or not same, meet
    return True, True


def _may_hold(tree, ranges: Dict[str, dict]) -> bool:
    if isinstance(tree, ast.Constant) and tree.value is _UNKNOWN:
        return True
    return _truth(tree, ranges)[0]


# --- one part's query ------------------------------------------------------------------------

def _part_source(ds: Dataset, part: Part):
    """A collection of one part file, which the core's queries and analyses run over (the
    part opened through the species first: checked against the step index)."""
    src = ds.source(part.step, part.species)
    if src.part_count == 1:
        return src
    return _core.Collection.open(ds.file(part.step, part.species, part.part).path)


def _part_count(ds, part, where, box, quality, threads) -> int:
    return int(_core.count(_part_source(ds, part), _spec(ds, part.step, where, box, quality, threads)))


def _part_stats(ds, part, column, where, box, quality, threads) -> Dict[str, Any]:
    return _core.stats(_part_source(ds, part), column, _spec(ds, part.step, where, box, quality, threads)).to_dict()


def _part_histogram(ds, part, axes, nbins, ranges, weights, where, box, quality, threads) -> np.ndarray:
    src = _part_source(ds, part)
    spec = _spec(ds, part.step, where, box, quality, threads)
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


def _histogram_axes(x: str, y: Optional[str], bins, range) -> Tuple[List[str], List[int], List[Optional[Tuple[float, float]]]]:
    """The axes, bin counts and given ranges of a histogram's arguments, checked as
    ``Dataset.histogram`` checks them."""
    from .field_queries import field_reference

    axes, nbins, given = _args.histogram_axes(x, y, bins, range)
    if any(field_reference(a) for a in axes):
        raise UsageError("a grid field as a histogram axis is not supported here; use Dataset.histogram")
    return axes, nbins, given


def _resolve_ranges(given, found: Sequence[Optional[Dict[str, Any]]]) -> List[Tuple[float, float]]:
    """Each axis' range: the one given, else the min/max of the matching values (``found``:
    their combined stats), as ``Dataset.histogram`` resolves it."""
    out = []
    for r, s in zip(given, found):
        if r is None:
            lo, hi = (0.0, 1.0) if s is None or s["min"] is None else (s["min"], s["max"])
        else:
            lo, hi = r
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        out.append((float(lo), float(hi)))
    return out


# --- the collective calls ---------------------------------------------------------------------

def _check_comm(comm: Any) -> None:
    for method in ("allgather", "bcast", "Get_rank", "Get_size"):
        if not hasattr(comm, method):
            raise UsageError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")


def _shares(units: Sequence[Part], size: int) -> List[List[Part]]:
    """The parts of each rank: largest first, each to the rank holding the fewest particles
    so far (the lowest on a tie), so every rank computes the same plan."""
    load = [0] * size
    out: List[List[Part]] = [[] for _ in range(size)]
    for u in sorted(units, key=lambda u: (-u.count, u.step, u.part)):
        r = min(range(size), key=lambda r: (load[r], r))
        out[r].append(u)
        load[r] += u.count
    for share in out:
        share.sort(key=lambda u: (u.step, u.part))
    return out


def _plan(path, comm, where, box, step, species, stage):
    """Every rank's dataset, and its share of the parts (planned on rank 0)."""
    _check_comm(comm)

    def prepare():
        ds = _open(path)
        ds._resolve(step, species)  # checked on every rank
        plan = parts(ds, where=where, box=box, steps=[ds.step(step).index], species=species)[0] \
            if comm.Get_rank() == 0 else None
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
    ds, mine = _plan(path, comm, where, box, step, species, f"planning a count of '{os.fspath(path)}'")
    local = on_every_rank(comm, lambda: sum(_part_count(ds, u, where, box, quality, threads) for u in mine),
                           "counting")
    return int(sum(comm.allgather(local)))


def stats(path: Union[str, os.PathLike], comm: Any, column: str, where: Optional[str] = None, box: BoxLike = None,
          quality: Optional[Quality] = None, *, step: Optional[int] = None, species: Optional[str] = None,
          threads: Optional[int] = None) -> Dict[str, Any]:
    """Collective :meth:`motes.Dataset.stats` (count, valid, min, max, sum, mean of
    ``column`` over the matching particles): the same dict on every rank."""
    ds, mine = _plan(path, comm, where, box, step, species, f"planning stats of '{os.fspath(path)}'")

    def local():
        name = _args.text("column", column)
        ds._columns([name], step, species)  # an unknown column fails on every rank, parts or not
        return _combine_stats([_part_stats(ds, u, name, where, box, quality, threads) for u in mine])

    return _combine_stats(comm.allgather(on_every_rank(comm, local, f"computing stats of '{column}'")))


def histogram(path: Union[str, os.PathLike], comm: Any, x: str, y: Optional[str] = None, *,
              bins: Union[int, Tuple[int, int]] = 64, range: Optional[Sequence] = None, weights: Optional[str] = None,
              where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None,
              step: Optional[int] = None, species: Optional[str] = None, threads: Optional[int] = None):
    """Collective :meth:`motes.Dataset.histogram` (1-D, or 2-D with ``y``): ``(counts, edges)``
    or ``(counts, xedges, yedges)`` on every rank, equal to the serial call. Without
    ``range``, a first collective pass finds the matching values' min/max."""
    ds, mine = _plan(path, comm, where, box, step, species, f"planning a histogram of '{os.fspath(path)}'")

    def check():
        axes, nbins, given = _histogram_axes(x, y, bins, range)
        ds._columns(axes + ([] if weights is None else [_args.text("weights", weights)]), step, species)
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

