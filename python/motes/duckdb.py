"""SQL over motes with DuckDB: a step and species registered as a table whose scans push the
columns a query reads and the filters motes answers exactly into motes' planner.

>>> con = duckdb.connect()
>>> motes.duckdb.register(con, "electrons", "run.motes", step=10)
>>> con.sql("SELECT count(*), avg(energy) FROM electrons WHERE x BETWEEN 10 AND 20 AND energy > 3").fetchall()

DuckDB 2.0's Python package offers the predicates of a scan to an Arrow scan source
(``duckdb._sources.ArrowScanSource``: ``accepts(predicate)``, then ``stream(columns,
filters)``): each predicate that :func:`motes.pushdown.duckdb_filter` translates is
accepted, becomes part of the motes ``where`` of the scan, and shows under "Filters" in
``EXPLAIN``; DuckDB applies the others itself. Where the package has no such sources
(earlier versions), the table is registered through the Arrow stream of
:func:`motes.arrow.dataset`: every row is read, and DuckDB filters.
"""

from __future__ import annotations

import os
from typing import Optional, Union

from . import pushdown
from .arrow import Dataset as ArrowDataset
from .dataset import Dataset as _MotesDataset

__all__ = ["pushes_filters", "register", "source"]


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


def source(path: Union[str, os.PathLike, _MotesDataset], *, step: Optional[int] = None,
           species: Optional[str] = None):
    """What :func:`register` registers: an Arrow scan source over the step and species
    (``last``: the motes counters of its last scan, ``filters``: the motes expressions of
    the filters it accepted), or the Arrow dataset where DuckDB takes no filters."""
    data = ArrowDataset(path, step=step, species=species)
    base = _scan_source_class()
    if base is None:
        return data

    class MotesScanSource(base):
        schema_is_stable = True

        def __init__(self, dataset: ArrowDataset):
            super().__init__(dataset)
            self.scanner = None
            self.filters: list = []

        @property
        def last(self) -> dict:
            """motes' counters of the last scan (parts read, nodes pruned, bytes planned)."""
            return self.scanner.counters if self.scanner is not None else {}

        def __arrow_c_schema__(self):
            return self.obj.schema.__arrow_c_schema__()

        def __arrow_c_stream__(self, requested_schema=None):  # how DuckDB recognises an Arrow object
            return self.obj.__arrow_c_stream__(requested_schema)

        def rows(self) -> int:
            return self.obj.count_total()

        def accepts(self, predicate) -> bool:
            return pushdown.duckdb_filter(predicate, self.obj.column_types()) is not None

        def stream(self, columns, filters):
            terms = [pushdown.duckdb_filter(f, self.obj.column_types()) for f in filters]
            if any(t is None for t in terms):  # offered only what accepts() took
                raise ValueError("motes was handed a filter it did not accept")
            self.filters = terms
            names = self.obj.schema.names
            chosen = None if columns is None else [names[i] for i in columns]
            self.scanner = self.obj.scanner(chosen, where=pushdown.conjunction([f"({t})" for t in terms]))
            return self.scanner.to_reader().__arrow_c_stream__(), chosen is not None

    return MotesScanSource(data)


def register(con, name: str, path: Union[str, os.PathLike, _MotesDataset], *, step: Optional[int] = None,
             species: Optional[str] = None):
    """Registers the particles of ``species`` in ``step`` (defaults: the only species, the last
    step) of a motes dataset as table ``name`` of DuckDB connection ``con``; returns the
    registered source (see :func:`source`)."""
    src = source(path, step=step, species=species)
    con.register(name, src)
    return src
