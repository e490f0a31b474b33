"""SQL over motes with DuckDB: one step (or several, with a ``step`` column) of a species
registered as a table whose scans push the columns a query reads and the filters motes
answers exactly into motes' planner.

>>> con = duckdb.connect()
>>> motes.duckdb.register(con, "electrons", "run.motes", step=10)
>>> con.sql("SELECT count(*), avg(energy) FROM electrons WHERE x BETWEEN 10 AND 20 AND energy > 3").fetchall()
>>> motes.duckdb.register(con, "series", "run.motes", steps="all")   # a leading step column
>>> con.sql("SELECT step, count(*) FROM series WHERE step >= 100 AND energy > 3 GROUP BY step").fetchall()

DuckDB 2.0's Python package offers the predicates of a scan to an Arrow scan source
(``duckdb._sources.ArrowScanSource``: ``accepts(predicate)``, then ``stream(columns,
filters)``): each predicate that :func:`motes.pushdown.duckdb_filter` translates is
accepted, becomes part of the motes ``where`` of the scan, and shows under "Filters" in
``EXPLAIN``; a predicate on ``step`` alone chooses the steps read; DuckDB applies the others
itself. Where the package has no such sources (earlier versions), the table is registered
as an Arrow stream: every row is read, and DuckDB filters.
"""

from __future__ import annotations

import os
from typing import List, Optional, Tuple, Union

from . import pushdown
from .arrow import Dataset as ArrowDataset
from .dataset import Dataset as _MotesDataset, open as _open
from .errors import UsageError
from .steps import resolve as _resolve_steps

__all__ = ["STEP", "pushes_filters", "register", "source"]

#: The leading column of a table of several steps.
STEP = "step"


def _scan_source_class():
    """duckdb's Arrow scan source base class, where this DuckDB has one."""
    try:
        from duckdb._sources import ArrowScanSource
        from duckdb._sources.nodes import exact_value  # noqa: F401  (the translator needs it)
    except ImportError:
        return None
    return ArrowScanSource


def pushes_filters() -> bool:
    """Whether this DuckDB hands a scan's filters to motes."""
    return _scan_source_class() is not None


class StepTables:
    """The rows of one species in one or more steps, scanned with DuckDB's filters: what
    :func:`register` registers (wrapped as a DuckDB scan source where DuckDB has them).
    ``filters`` are the motes expressions of the last scan, ``steps_read`` its steps and
    ``last`` motes' counters summed over them (parts read, nodes pruned, bytes planned)."""

    def __init__(self, tables: List[Tuple[Optional[int], ArrowDataset]]):
        import pyarrow as pa

        self.tables = tables
        first = tables[0][1].schema
        for s, t in tables[1:]:
            if not t.schema.equals(first):
                raise UsageError(f"step {s} has other columns than step {tables[0][0]}: register them apart")
        self.with_step = tables[0][0] is not None
        if self.with_step and STEP in first.names:
            raise UsageError(f"column '{STEP}' would be hidden by the step column of a table across steps: "
                             "register one step with step=")
        self.schema = pa.schema(([pa.field(STEP, pa.int64(), nullable=False)] if self.with_step else []) + list(first))
        self._types: Optional[pushdown.ColumnTypes] = None
        self.filters: List[str] = []
        self.steps_read: List[Optional[int]] = []
        self._scanners: list = []

    def types(self) -> pushdown.ColumnTypes:
        """Each column's dtype, and whether any step's holds a NaN."""
        if self._types is None:
            merged: pushdown.ColumnTypes = {}
            for _, t in self.tables:
                for name, (dtype, nan) in t.column_types().items():
                    merged[name] = (dtype, nan or merged.get(name, (dtype, False))[1])
            self._types = merged
        return self._types

    def rows(self) -> int:
        return sum(t.count_total() for _, t in self.tables)

    @property
    def last(self) -> dict:
        total: dict = {}
        for sc in self._scanners:
            for k, v in sc.counters.items():
                total[k] = (total.get(k, False) or v) if isinstance(v, bool) else total.get(k, 0) + v
        return total

    def _step_test(self, predicate):
        if not self.with_step or pushdown.duckdb_columns(predicate) != {STEP}:
            return None
        return pushdown.duckdb_integer_test(predicate, STEP)

    def accepts(self, predicate) -> bool:
        if self._step_test(predicate) is not None:
            return True
        if self.with_step and STEP in pushdown.duckdb_columns(predicate):
            return False  # the step column with others: DuckDB's
        return pushdown.duckdb_filter(predicate, self.types()) is not None

    def reader(self, columns, filters):
        """A RecordBatchReader of ``columns`` (declared indexes, None: all) of the rows every
        one of ``filters`` (accepted predicates) holds for."""
        import numpy as np
        import pyarrow as pa

        tests, terms = [], []
        for f in filters:
            test = self._step_test(f)
            if test is not None:
                tests.append(test)
                continue
            term = pushdown.duckdb_filter(f, self.types())
            if term is None:
                raise ValueError("motes was handed a filter it did not accept")
            terms.append(term)
        self.filters = terms
        names = self.schema.names
        chosen = names if columns is None else [names[i] for i in columns]
        made = STEP if self.with_step else None  # the column the table adds (a stored one is read)
        read = [c for c in chosen if c != made]
        where = pushdown.conjunction([f"({t})" for t in terms])
        out_schema = pa.schema([self.schema.field(c) for c in chosen])
        picked = [(s, t) for s, t in self.tables if all(test(s) for test in tests)]
        self.steps_read = [s for s, _ in picked]
        self._scanners = [t.scanner(read, where=where) for _, t in picked]

        def batches():
            for (s, _), scanner in zip(picked, self._scanners):
                for b in scanner.to_batches():
                    arrays = [pa.array(np.full(b.num_rows, s, dtype=np.int64)) if c == made else b.column(c)
                              for c in chosen]
                    yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)

        return pa.RecordBatchReader.from_batches(out_schema, batches())

    def __arrow_c_schema__(self):
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema=None):
        return self.reader(None, []).__arrow_c_stream__(requested_schema)


def source(path: Union[str, os.PathLike, _MotesDataset], *, step: Optional[int] = None,
           species: Optional[str] = None, steps=None):
    """What :func:`register` registers: the :class:`StepTables` of ``species`` (default: the
    only one) in ``step`` (default: the last), or in ``steps`` (the forms of
    :func:`motes.steps.resolve`: a list, a range, ``"all"``, ``"start:stop:stride"``) with a
    leading ``step`` column; as a DuckDB Arrow scan source where this DuckDB has them."""
    ds = path if isinstance(path, _MotesDataset) else _open(path)
    if steps is None:
        tables = [(None, ArrowDataset(ds, step=step, species=species))]
    else:
        tables = [(s, ArrowDataset(ds, step=s, species=species)) for s in _resolve_steps(ds, steps, species, step)]
    inner = StepTables(tables)
    base = _scan_source_class()
    if base is None:
        return inner

    class MotesScanSource(base):
        schema_is_stable = True

        def __getattr__(self, name):  # filters, steps_read, last, schema, ...: the tables'
            if name == "obj":
                raise AttributeError(name)
            return getattr(self.obj, name)

        def __arrow_c_schema__(self):
            return self.obj.__arrow_c_schema__()

        def __arrow_c_stream__(self, requested_schema=None):  # how DuckDB recognises an Arrow object
            return self.obj.__arrow_c_stream__(requested_schema)

        def rows(self) -> int:
            return self.obj.rows()

        def accepts(self, predicate) -> bool:
            return self.obj.accepts(predicate)

        def stream(self, columns, filters):
            return self.obj.reader(columns, filters).__arrow_c_stream__(), columns is not None

    return MotesScanSource(inner)


def register(con, name: str, path: Union[str, os.PathLike, _MotesDataset], *, step: Optional[int] = None,
             species: Optional[str] = None, steps=None):
    """Registers the particles of ``species`` in ``step`` (defaults: the only species, the last
    step), or in ``steps`` with a leading ``step`` column, of a motes dataset as table
    ``name`` of DuckDB connection ``con``; returns the registered source (its ``filters``,
    ``steps_read`` and ``last`` tell what the last scan pushed and read)."""
    src = source(path, step=step, species=species, steps=steps)
    con.register(name, src)
    return src
