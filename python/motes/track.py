"""Tracking particles by id through steps (``Dataset.track``): each part file's id index
(particle format 2.1, docs/format.md §4.15) gives the file positions of the ids asked for,
and only those rows of each column are read, each block decoded once. Files without an index
(written before 2.1, with ``ids=False`` or ``compression="none"``) are searched by reading
their id column whole, with the same answers.

    t = ds.track([17, 42, 99], columns=["x", "y", "energy"])
    t.arrays["energy"]            # (steps, ids) float64, NaN where a particle is absent
    t.present                     # (steps, ids) bool
    t.table.to_pandas()           # long form: step, id, columns, one row per particle seen
    ds.track(where="energy > 2", at_step=0)   # the ids of a query at one step
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .errors import FormatError, UsageError


@dataclass
class Track:
    """Where a set of particles is in each step. ``ids`` in the order asked for; ``steps``
    the steps looked at; ``present[s, i]`` whether particle ``ids[i]`` is in step
    ``steps[s]``; ``arrays[c][s, i]`` its value of column ``c`` there, as float64 with NaN
    where absent (``values`` keeps each column's dtype, 0 where absent); ``table`` the long
    form (``step``, ``id`` and the columns, one row per particle seen, by step then id order)."""

    ids: np.ndarray
    steps: List[int]
    present: np.ndarray
    values: Dict[str, np.ndarray]
    id_column: str = "id"

    @cached_property
    def arrays(self) -> Dict[str, np.ndarray]:
        out = {}
        for name, v in self.values.items():
            a = v.astype(np.float64)
            a[~self.present] = np.nan
            out[name] = a
        return out

    @property
    def table(self):
        from .table import Table

        s, i = np.nonzero(self.present)
        cols = {"step": np.asarray(self.steps, dtype=np.int64)[s], "id": self.ids[i]}
        for name, v in self.values.items():
            if name != self.id_column:  # the ids are the id column
                cols[name] = v[s, i]
        return Table(cols)

    def to_pandas(self):
        return self.table.to_pandas()

    def __repr__(self) -> str:
        return (f"Track({len(self.ids)} ids through {len(self.steps)} steps, "
                f"{int(self.present.sum())} rows, columns {list(self.values)})")


_I64_MIN, _U64_END = -(1 << 63), 1 << 64


def _id_value(v) -> int:
    """One id as a Python int (an integral float is taken; anything else is a UsageError)."""
    if isinstance(v, (bool, np.bool_)):
        raise UsageError(f"ids must be integers, got {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer():
        return int(v)
    raise UsageError(f"ids must be integers, got {v!r}")


def _as_ids(ids) -> np.ndarray:
    """The ids asked for, 1-D, as int64, or uint64 when one is 2^63 or more (ids of a uint64
    column): every value checked exactly, never through float64 (which numpy makes of
    ``[2**63 + 1, 5]``, losing the id). UsageError naming a value that is not an integer or
    lies outside the 64-bit integers."""
    if isinstance(ids, np.ndarray) or (hasattr(ids, "__array__") and not isinstance(ids, (list, tuple))):
        a = np.asarray(ids).ravel()
        if a.dtype.kind in "iu":
            return a
        if a.dtype.kind not in "fO":
            raise UsageError(f"ids must be integers, got an array of dtype {a.dtype}")
        values = a.tolist()
    elif isinstance(ids, (int, np.integer, float, np.floating)):
        values = [ids]
    else:
        values = list(np.asarray(ids, dtype=object).ravel())  # nested lists too, each value as given
    out = [_id_value(v) for v in values]
    if not out:
        return np.zeros(0, dtype=np.int64)
    lo, hi = min(out), max(out)
    for v in (lo, hi):
        if not _I64_MIN <= v < _U64_END:
            raise UsageError(f"id {v} is outside the 64-bit integers (ids are int64 or uint64 values)")
    if lo < 0 and hi >= 1 << 63:
        raise UsageError(f"ids {lo} and {hi} cannot be ids of one column: no 64-bit integer type holds both")
    return np.array(out, dtype=np.uint64 if hi >= 1 << 63 else np.int64)


def _ids_for(dtype: np.dtype, ids: np.ndarray, column: str) -> np.ndarray:
    """The ids as the core's find_ids takes them: int64 values in the column's type (the bits
    of a uint64 id). UsageError naming an id the column's type cannot hold at all."""
    if dtype.kind == "u" and ids.dtype.kind == "i" and np.any(ids < 0):
        raise UsageError(f"id {int(ids[ids < 0][0])} is negative: the id column '{column}' is {dtype}, "
                         "which holds no negative id")
    if dtype.kind == "i" and ids.dtype == np.uint64 and np.any(ids >= np.uint64(1 << 63)):
        big = int(ids[ids >= np.uint64(1 << 63)][0])
        raise UsageError(f"id {big} is past 2^63 - 1: the id column '{column}' is {dtype}, which cannot hold it")
    if dtype == np.uint64:
        return ids.astype(np.uint64).view(np.int64)
    return ids.astype(np.int64)


def track(ds, ids=None, *, where: Optional[str] = None, at_step: Optional[int] = None, steps=None,
          columns: Optional[Sequence[str]] = None, species: Optional[str] = None, id_column: Optional[str] = None,
          fields: Optional[Sequence[str]] = None, preserve_order: bool = True) -> Track:
    """See :meth:`motes.Dataset.track`."""
    step_list = _steps(ds, steps, species)
    first = ds.source(step_list[0], species)
    col = id_column or first.part(0).id_column or "id"
    if ids is None:
        if where is None:
            raise UsageError("give ids, or where= (and at_step=) to take the ids of a query")
        ids = ds.query(where, step=at_step, species=species, columns=[col])[col]
    elif where is not None or at_step is not None:
        raise UsageError("give ids or where= (with at_step=), not both")
    ids = _as_ids(ids)
    if len(np.unique(ids)) != len(ids):
        raise UsageError("ids must be distinct")
    if not preserve_order:
        ids = np.sort(ids)
    names = list(columns) if columns is not None else ds.column_names(step_list[0], species)
    if col not in names:
        names = [col] + names
    nsteps, nids = len(step_list), len(ids)
    present = np.zeros((nsteps, nids), dtype=bool)
    values: Dict[str, np.ndarray] = {}
    # Every (step, part) is looked up and gathered on its own (the core releases the GIL), in
    # threads; the results are merged in step and part order, each id at most once a step.
    tasks = []
    for si, step in enumerate(step_list):
        src = ds.source(step, species)
        schema = {c.name: np.dtype(c.dtype) for c in ds.schema(step, species)}
        if col not in schema:
            raise UsageError(f"step {step} has no id column '{col}' (columns: {', '.join(schema)})")
        missing = [n for n in names if n not in schema]
        if missing:
            raise UsageError(f"step {step} has no column {missing[0]!r} (columns: {', '.join(schema)})")
        keys = _ids_for(schema[col], ids, col)
        for name in names:
            if name not in values:  # (setdefault would build, and zero, a discarded array per step)
                values[name] = np.zeros((nsteps, nids), dtype=schema[name])
        tasks += [(si, step, src.part(k), keys, schema[col]) for k in range(src.part_count)]

    def lookup(task):
        si, step, f, keys, id_dtype = task
        try:
            rows = f.find_ids(col, keys)
        except FormatError as e:
            raise FormatError(f"step {step}: {e} (ids must be distinct within a step)") from None
        hit = rows >= 0
        # The found positions ascending, sorted once for every column (each reads its
        # blocks in order), then put back in the order of the ids.
        at = np.flatnonzero(hit)
        order = np.argsort(rows[at], kind="stable")
        pos = rows[at][order]
        # The ids found are the ids asked: nothing to read (a 2.7 file stores none but its index).
        got = {name: (keys[at[order]].view(np.uint64) if id_dtype == np.uint64 else keys[at[order]]).astype(id_dtype)
               if name == col else f.read_rows(name, pos) for name in names}
        return si, step, hit, at[order], (got if len(pos) else {})

    workers = min(len(tasks), os.cpu_count() or 1)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(lookup, tasks))
    else:
        results = [lookup(t) for t in tasks]
    for si, step, hit, where, got in results:
        twice = hit & present[si]
        if twice.any():
            raise FormatError(f"step {step}: id {ids[np.argmax(twice)]} is held by two particles "
                              f"(in two part files; ids must be distinct within a step)")
        present[si] |= hit
        for name, v in got.items():
            values[name][si, where] = v
    for si, step in enumerate(step_list):
        for fname in fields or ():
            if {"x", "y", "z"} - set(values):
                raise UsageError("sampling fields along tracks needs the x, y, z columns")
            sel = present[si]
            key = f"field('{fname}')"
            if key not in values:
                values[key] = np.zeros((nsteps, nids), dtype=np.float64)
            v = values[key]
            if sel.any():
                v[si, sel] = ds.sample(fname, values["x"][si, sel], values["y"][si, sel], values["z"][si, sel], step=step)
    return Track(ids=ids, steps=step_list, present=present, values=values, id_column=col)


def _steps(ds, steps, species) -> List[int]:
    """The steps to look at: every step holding particles (of `species`), or those `steps`
    names (any form of motes.steps.resolve: a list, a range, "all", "0:100:10")."""
    from .steps import resolve

    out = resolve(ds, "all" if steps is None else steps, species)
    if not out:
        raise UsageError("no steps to track through")
    return out
