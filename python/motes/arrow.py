"""One species of one step of a motes dataset as an Arrow dataset: what pyarrow, Polars
(``pl.scan_pyarrow_dataset``) and DuckDB scan, with the columns and the filter they ask for
pushed into motes' planner.

>>> import pyarrow.dataset as pads
>>> d = motes.arrow.dataset("run.motes", step=10)
>>> d.to_table(columns=["x", "energy"], filter=pads.field("energy") > 3.0)

It behaves as a ``pyarrow.dataset.Dataset`` (``schema``, ``scanner(columns=, filter=)``,
``to_table``, ``to_batches``, ``count_rows``, ``head``, ``get_fragments``, and the Arrow
stream protocol), without being one: pyarrow's dataset classes cannot be extended from
Python. A filter is translated into a motes ``where`` expression where that selects exactly
the rows pyarrow's own evaluation keeps, with pyarrow's semantics (:mod:`motes._arrow_pushdown`);
then the tree, the indexes and the tails prune, and only the matching rows are gathered.
What does not translate, and what pyarrow refuses for some values, is applied by pyarrow to
the rows motes returns (with the translatable conjuncts still pushed), so every answer is
the one pyarrow's own evaluation of the filter gives. Fragments are the part files of the step
(one for a step written serially), found by :meth:`motes.Dataset.plan`.
"""

from __future__ import annotations

import os
from typing import Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _core, pushdown
from ._describe import _file_info
from .dataset import Dataset as _MotesDataset, open as _open
from .dtypes import numpy_dtype
from .errors import UsageError, storage_errors

__all__ = ["Dataset", "Fragment", "Scanner", "dataset"]

#: Rows per record batch unless a scanner is given ``batch_size``: DuckDB's own vector-friendly size.
BATCH_SIZE = 1 << 17


def dataset(source: Union[str, os.PathLike, _MotesDataset], *, step: Optional[int] = None,
            species: Optional[str] = None) -> "Dataset":
    """The particles of ``species`` (default: the only one) in ``step`` (default: the last)
    of a motes dataset (a path, or an open :class:`motes.Dataset`), as an Arrow dataset."""
    return Dataset(source, step=step, species=species)


def _arrow_type(dtype: np.dtype):
    import pyarrow as pa

    return pa.from_numpy_dtype(dtype)


class Dataset:
    """See the module. ``schema`` holds every column, with its unit as field metadata."""

    def __init__(self, source, *, step: Optional[int] = None, species: Optional[str] = None):
        import pyarrow as pa

        self.motes = source if isinstance(source, _MotesDataset) else _open(source)
        steps = self.motes.steps
        if not steps:
            raise UsageError(f"{self.motes.path}: the dataset has no steps")
        self.step = steps[-1] if step is None else step
        req = self.motes.request(step=self.step, species=species)
        st, self.species = req.step, req.species
        self.step = st.index
        columns = self.motes.schema(self.step, self.species)
        self.schema = pa.schema([pa.field(c.name, _arrow_type(c.dtype), nullable=False,
                                          metadata={"unit": c.unit} if c.unit else None) for c in columns])
        self._types: Optional[pushdown.ColumnTypes] = None

    def __repr__(self) -> str:
        return f"<motes.arrow.Dataset {self.motes.path} step {self.step} species '{self.species}'>"

    def column_types(self) -> pushdown.ColumnTypes:
        """Each column's numpy dtype and whether it holds a NaN (from the column indexes)."""
        if self._types is None:
            info = _file_info(self.motes, self.step, self.species, storage=False)
            self._types = {c["name"]: (numpy_dtype(c["dtype"]), int(c["nan_count"]) > 0) for c in info["columns"]}
        return self._types

    def count_total(self) -> int:
        return self.motes.count_total(self.step, self.species)

    def scanner(self, columns: Optional[Sequence[str]] = None, filter=None, *, batch_size: int = BATCH_SIZE,
                where: Optional[str] = None, **_ignored) -> "Scanner":
        """A scan of ``columns`` (default: all) of the rows ``filter`` (a
        ``pyarrow.compute.Expression``) keeps; ``where`` (a motes expression) narrows it
        further. pyarrow's other scan options (threads, readahead) are accepted and left to
        motes."""
        return Scanner(self, columns, filter, batch_size, where)

    def to_table(self, columns=None, filter=None, **options):
        return self.scanner(columns, filter, **options).to_table()

    def to_batches(self, columns=None, filter=None, **options):
        return self.scanner(columns, filter, **options).to_batches()

    def to_reader(self, columns=None, filter=None, **options):
        return self.scanner(columns, filter, **options).to_reader()

    def count_rows(self, filter=None, **options) -> int:
        return self.scanner([], filter, **options).count_rows()

    def head(self, num_rows: int, columns=None, filter=None, **options):
        return self.scanner(columns, filter, **options).head(num_rows)

    def get_fragments(self, filter=None) -> Iterator["Fragment"]:
        """The part files of the step that may hold a row ``filter`` keeps (the others pruned
        from the index alone), in part order."""
        where, _ = pushdown.arrow_filter(filter, self.column_types())
        for part in self.motes.plan(where, steps=[self.step], species=self.species).parts:
            yield Fragment(self, part)

    def __arrow_c_stream__(self, requested_schema=None):
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self):
        return self.schema.__arrow_c_schema__()


class Scanner:
    """A planned scan: ``projected_schema``; ``to_batches``, ``to_reader``, ``to_table``,
    ``count_rows``, ``head``; after a scan, ``counters`` are motes' (parts read, nodes pruned,
    bytes and requests planned)."""

    def __init__(self, dataset: Dataset, columns, filter, batch_size: int, where: Optional[str] = None,
                 part=None):
        import pyarrow as pa

        self.dataset, self._part = dataset, part
        names = dataset.schema.names
        if columns is None:
            columns = list(names)
        elif isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise UsageError("columns must be a list of column names (expressions are not supported)")
        for c in columns:
            if c not in names:
                raise UsageError(f"unknown column '{c}' (columns: {', '.join(names)})")
        if int(batch_size) < 1:
            raise UsageError("batch_size must be at least 1")
        self.columns, self.batch_size = list(columns), int(batch_size)
        self.projected_schema = pa.schema([dataset.schema.field(c) for c in self.columns])
        pushed, exact = pushdown.arrow_filter(filter, dataset.column_types())
        # What motes cannot answer exactly pyarrow applies to the rows motes returns (a superset:
        # the conjuncts it can are pushed), which then carry the columns the filter reads.
        self.residual = None if exact else filter
        if self.residual is not None:
            # A filter pyarrow refuses whatever the rows (an unknown column, a constant it cannot
            # cast to the column's type) is refused here, even when motes selects no row.
            dataset.schema.empty_table().filter(filter)
        self.where = pushdown.conjunction([t for t in (where, pushed) if t])
        read = list(self.columns)
        if self.residual is not None:
            used = pushdown.arrow_filter_columns(filter)
            read += [c for c in (names if used is None else used) if c not in read]
        self._read = read
        self.counters: dict = {}

    def _selection(self):
        ds = self.dataset
        if self._part is None:
            return ds.motes.select(self.where, step=ds.step, species=ds.species)
        from .parts import part_source, part_spec

        spec = part_spec(ds.motes, ds.step, ds.species, self.where, None, None, None)
        with storage_errors(ds.motes.path, "cannot read"):
            return _core.select(part_source(ds.motes, self._part), spec)

    def to_batches(self) -> Iterator:
        import pyarrow as pa

        sel = self._selection()
        self.counters = dict(sel.counters)
        # At least one column is read so that a batch without columns still has its rows.
        read = self._read or [self.dataset.schema.names[0]]
        schema = pa.schema([self.dataset.schema.field(c) for c in read])
        for begin in range(0, sel.size, self.batch_size):
            end = min(sel.size, begin + self.batch_size)
            with storage_errors(self.dataset.motes.path, "cannot read"):
                values = sel.gather_columns(read, begin, end)
            batch = pa.RecordBatch.from_arrays([pa.array(v) for v in values], schema=schema)
            if self.residual is not None:
                batch = batch.filter(self.residual)
            yield batch.select(self.columns)

    def to_reader(self):
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self):
        import pyarrow as pa

        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def count_rows(self) -> int:
        if self.residual is None:
            sel = self._selection()
            self.counters = dict(sel.counters)
            return int(sel.size)
        return sum(b.num_rows for b in self.to_batches())

    def head(self, num_rows: int):
        import pyarrow as pa

        got: List = []
        n = 0
        for b in self.to_batches():
            if n >= num_rows:
                break
            got.append(b.slice(0, num_rows - n))
            n += got[-1].num_rows
        return pa.Table.from_batches(got, schema=self.projected_schema)

    def __arrow_c_stream__(self, requested_schema=None):
        return self.to_reader().__arrow_c_stream__(requested_schema)


class Fragment:
    """One part file of the step: ``step``, ``species``, ``part``, ``count`` (particles in
    it); scanned as the dataset is, over that file alone."""

    def __init__(self, dataset: Dataset, part):
        self.dataset, self.plan = dataset, part
        self.step, self.species, self.part, self.count = part.step, part.species, part.part, part.count
        self.physical_schema = dataset.schema

    def __repr__(self) -> str:
        return f"<motes.arrow.Fragment step {self.step} species '{self.species}' part {self.part}>"

    def scanner(self, schema=None, columns=None, filter=None, *, batch_size: int = BATCH_SIZE, **_ignored):
        return Scanner(self.dataset, columns, filter, batch_size, part=self.plan)

    def to_table(self, schema=None, columns=None, filter=None, **options):
        return self.scanner(schema, columns, filter, **options).to_table()

    def to_batches(self, schema=None, columns=None, filter=None, **options):
        return self.scanner(schema, columns, filter, **options).to_batches()

    def count_rows(self, filter=None, **options) -> int:
        return self.scanner(None, [], filter, **options).count_rows()

    def head(self, num_rows: int, columns=None, filter=None, **options):
        return self.scanner(None, columns, filter, **options).head(num_rows)
