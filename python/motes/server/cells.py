"""Cells, quality ranges and budgets (docs/http-api.md, "Points"): the quality ladder of a
species, the half-open cells of a points request as queries, and the quality a budget
of points allows, estimated from the tree alone (no value is read)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..plan import levels_for_quality
from .config import Limits
from .errors import bad_request, over_limit, unprocessable
from .params import numbers

AXES = ("x", "y", "z")


class Ladder:
    """The qualities k / K (K: the largest level count of the species' part files) and the
    particles a read at each returns, exactly (from the parts' level boundaries)."""

    def __init__(self, level_starts: Sequence[np.ndarray]):
        self.part_levels = [len(s) - 1 for s in level_starts]
        top = max(self.part_levels, default=0) or 1
        self.quality = [k / top for k in range(top + 1)]
        # levels[k, p]: the levels of part p a read at quality k / K takes (the core's rule).
        self.levels = np.array([[self.levels_of(q, n) for n in self.part_levels] for q in self.quality],
                               dtype=np.int64).reshape(len(self.quality), len(self.part_levels))
        self.count = [int(sum(int(s[L]) for s, L in zip(level_starts, row))) for row in self.levels]

    @staticmethod
    def levels_of(q: float, level_count: int) -> int:
        return levels_for_quality(q, level_count)

    def estimate(self, cell_counts: Sequence[Sequence[np.ndarray]], q0s: Sequence[float]) -> np.ndarray:
        """Per ladder quality q, the estimated particles of the cells between their q0 and q:
        ``cell_counts[c][p]`` is the estimated particles per level of part p in cell c
        (``PartRead.levels`` of ``Dataset.plan``; empty: none)."""
        total = np.zeros(len(self.quality))
        for p, n in enumerate(self.part_levels):
            cells = [c for c in range(len(cell_counts)) if cell_counts[c][p].size]
            if not cells:
                continue
            cum = np.zeros((len(cells), n + 1))
            cum[:, 1:] = np.cumsum(np.stack([cell_counts[c][p] for c in cells]), axis=1)
            start = np.array([self.levels_of(q0s[c], n) for c in cells])
            added = cum[:, self.levels[:, p]] - cum[np.arange(len(cells)), start][:, None]
            total += np.clip(added, 0.0, None).sum(axis=0)
        return total

    def by_budget(self, totals: np.ndarray, q0s: Sequence[float], budget: int) -> Tuple[float, float]:
        """The largest ladder quality whose total is at most ``budget``, above the smallest q0;
        when even the first step above it is over, that step (progress). Returns (to, estimate)."""
        lowest = min(q0s, default=1.0)
        steps = [k for k, q in enumerate(self.quality) if q > lowest]
        if not steps:
            return 1.0, 0.0
        fitting = [k for k in steps if totals[k] <= budget]
        k = fitting[-1] if fitting else steps[0]
        return self.quality[k], float(totals[k])


@dataclass(frozen=True)
class Cell:
    """A box and the quality q0 the client already has there. On each axis the cell holds
    the particles with x0 <= x < x1, except at the species' maximum ``top``: a particle at
    ``top`` belongs to the cell with x0 < top <= x1 (its upper bound is then inclusive), or to
    a cell with x0 = x1 = top. So cells that tile any box partition its particles, also
    when the tiling continues past the maximum."""

    lo: Tuple[float, float, float]
    hi: Tuple[float, float, float]
    q0: float

    @property
    def box(self) -> Tuple[float, ...]:
        return (*self.lo, *self.hi)

    def empty(self, top: Sequence[float]) -> bool:
        """Holds no particle: on some axis it starts at or past the maximum (and is not the
        maximum's plane itself)."""
        return any(lo > t or (lo == t and hi > t) for lo, hi, t in zip(self.lo, self.hi, top))

    def where(self, top: Sequence[float], where: Optional[str]) -> Optional[str]:
        """The filter of the cell's query (whose box is inclusive): the request's, and each
        upper face that is open, written so that the number reads back the same."""
        clauses = [f"({where})"] if where else []
        clauses += [f"{a} < {hi!r}" for a, hi, t in zip(AXES, self.hi, top) if hi < t]
        return " and ".join(clauses) or None


def parse_cells(text: Optional[str], bounds, limits: Limits) -> List[Cell]:
    """``x0,y0,z0,x1,y1,z1,q0`` cells separated by ``;`` (default: the species' bounds, q0 = 0)."""
    if text is None:
        lo, hi = bounds
        return [Cell(tuple(map(float, lo)), tuple(map(float, hi)), 0.0)]
    items = text.split(";")
    if len(items) > limits.max_cells:
        raise over_limit(limits, "max_cells", len(items), "cells in this request")
    cells = []
    for k, item in enumerate(items):
        v = numbers(f"cell {k}", item, 7)
        cell = Cell(v[0:3], v[3:6], v[6])
        for a, lo, hi in zip(AXES, cell.lo, cell.hi):
            if lo > hi:
                raise unprocessable(f"cell {k} is empty on {a}: [{lo!r}, {hi!r})")
        if not 0.0 <= cell.q0 <= 1.0:
            raise unprocessable(f"cell {k}: quality {cell.q0!r} is not in [0, 1]")
        cells.append(cell)
    return cells


def quality(name: str, value: Optional[float]) -> Optional[float]:
    """A target quality in (0, 1]."""
    if value is not None and not 0.0 < value <= 1.0:
        raise unprocessable(f"{name} must be a quality in (0, 1], got {value!r}")
    return value


def budget(name: str, value: Optional[int]) -> Optional[int]:
    if value is not None and value < 0:
        raise bad_request(f"{name} must be a number of points >= 0, got {value}")
    return value
