"""Flat tables: Parquet, Arrow IPC and CSV (pyarrow), streamed in chunks (.npz: npz.py).

A table holds one species of one step. Reading gives one step (index and time from the
file's metadata when motes wrote it, else 0) of one species (named in the metadata, else
"particles"). Writing takes exactly one species of one step: choose them with
``step=`` / ``species=`` when the source has more. Parquet and Arrow keep each column's
unit in the field metadata (``unit``) and the step's index, time, species name and
attributes in the schema metadata (``motes``, JSON); CSV keeps values only.

Reading (``motes convert`` and ``motes write`` alike): numeric and boolean columns, as
:func:`~motes.convert.base.check_dtype` says (half floats widened to float32); a missing
value (null) in a float column is NaN, in an integer or boolean column an error (motes
has no nulls); a column of no values at all (an empty CSV) is float64. CSV column names
are stripped of surrounding spaces; the values are parsed by pyarrow.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Iterator, List, Tuple

import numpy as np

from ...dtypes import SUMMARY
from ...errors import FormatError, UsageError, storage_error
from ..base import DEFAULT_CHUNK_ROWS, Species, Step, check_dtype, rechunk, single_species, table_metadata

_META_KEY = b"motes"


def _kind(path: str) -> str:
    low = path.lower()
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".arrow", ".feather", ".ipc")):
        return "arrow"
    if low.endswith(".csv"):
        return "csv"
    raise UsageError(f"{path}: not a table file (.parquet, .arrow, .feather, .csv)")


def _meta_step(meta: Dict[str, Any], species_columns, count, chunks, units) -> Step:
    name = meta.get("species", "particles")
    sp = Species(name, species_columns, count, chunks, units, meta.get("species_attributes", {}))
    index = meta.get("step")  # None: the file does not say (convert numbers it)
    missing = "" if "time" in meta else "no motes metadata (a table records no time)"
    return Step(None if index is None else int(index), float(meta.get("time", 0.0)), meta.get("attributes", {}),
                {name: sp}, time_missing=missing)


def _pyarrow():
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise UsageError("Parquet, Arrow and CSV files need pyarrow (pip install pyarrow, or "
                         "pip install 'motes[arrow]')") from None
    return pyarrow


def _arrow_columns(path: str, schema, names: List[str]) -> Tuple[List[Tuple[str, np.dtype]], Dict[str, str]]:
    pa = _pyarrow()
    cols, units = [], {}
    for name, field in zip(names, schema):
        t = field.type
        if pa.types.is_null(t):
            dt = np.dtype(np.float64)  # no values at all (a CSV with a header only): numbers
        elif pa.types.is_dictionary(t) or pa.types.is_string(t) or pa.types.is_large_string(t) or \
                pa.types.is_binary(t) or pa.types.is_large_binary(t):
            dt = np.dtype(object)  # text or categories: check_dtype says what to do
        elif pa.types.is_nested(t):
            raise UsageError(f"{path}: column '{name}' has unsupported type {t} (nested: only flat columns of "
                             "numbers can be stored)")
        else:
            try:
                dt = np.dtype(t.to_pandas_dtype())
            except (NotImplementedError, TypeError):
                dt = None
            if dt is None or (dt.kind == "O" and not pa.types.is_string(t)):
                raise UsageError(f"{path}: column '{name}' has unsupported type {t} "
                                 f"(motes stores {SUMMARY})")
        cols.append((name, check_dtype(path, name, dt)))
        if field.metadata and b"unit" in field.metadata:
            units[name] = field.metadata[b"unit"].decode()
    return cols, units


def _batch_to_chunk(path: str, batch, cols) -> Dict[str, np.ndarray]:
    pa = _pyarrow()
    out = {}
    for (name, dt), col in zip(cols, batch.columns):
        if col.null_count and not pa.types.is_null(col.type):
            if not pa.types.is_floating(col.type):
                raise UsageError(f"{path}: column '{name}' ({col.type}) has {col.null_count} missing values; motes "
                                 "has no nulls, and only a float column can store them (as NaN): fill them, or "
                                 "make the column float")
            col = col.fill_null(float("nan"))
        out[name] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=dt)
    return out


def read(path: str, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, **options) -> Iterator[Step]:
    if options:
        raise UsageError(f"table sources take no options (got {', '.join(options)})")
    kind = _kind(path)
    pa = _pyarrow()

    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            schema, count = pf.schema_arrow, pf.metadata.num_rows

            def batches():
                return pq.ParquetFile(path).iter_batches(batch_size=chunk_rows)
        elif kind == "arrow":
            reader = pa.ipc.open_file(path)
            schema, count = reader.schema, sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))

            def batches():
                r = pa.ipc.open_file(path)
                for i in range(r.num_record_batches):
                    b = r.get_batch(i)
                    for s in range(0, b.num_rows, chunk_rows):
                        yield b.slice(s, chunk_rows)
        else:
            import pyarrow.csv as pcsv

            def open_csv():
                return pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=1 << 24))

            schema = open_csv().schema
            count = None

            def batches():
                for b in open_csv():
                    for s in range(0, b.num_rows, chunk_rows):
                        yield b.slice(s, chunk_rows)
    except OSError as e:  # the file system's (errno set), or pyarrow's for a damaged file
        if e.errno is not None:
            raise storage_error(e, path, "cannot read") from e
        raise FormatError(f"{path}: not a readable {kind} file ({e})") from None
    except pa.ArrowInvalid as e:
        raise FormatError(f"{path}: not a readable {kind} file ({e})") from None
    names = [f.name.strip() if kind == "csv" else f.name for f in schema]
    cols, units = _arrow_columns(path, schema, names)
    meta = json.loads(schema.metadata[_META_KEY]) if schema.metadata and _META_KEY in schema.metadata else {}

    def chunks():
        try:
            yield from rechunk((_batch_to_chunk(path, b, cols) for b in batches() if b.num_rows), chunk_rows)
        except pa.ArrowInvalid as e:
            raise FormatError(f"{path}: {e}") from None

    if count is None:  # CSV: one counting pass (streaming, values not kept)
        count = sum(len(next(iter(c.values()))) for c in chunks()) if cols else 0
    yield _meta_step(meta, cols, count, chunks, units)


def write(path: str, steps: Iterable[Step], **options) -> None:
    if options:
        raise UsageError(f"table destinations take no options (got {', '.join(options)})")
    kind = _kind(path)
    st, sp = single_species(steps, path)
    import pyarrow as pa

    fields = []
    for name, dt in sp.columns:
        md = {b"unit": sp.units[name].encode()} if sp.units.get(name) else None
        fields.append(pa.field(name, pa.from_numpy_dtype(dt), nullable=False, metadata=md))
    schema = pa.schema(fields, metadata={_META_KEY: json.dumps(table_metadata(st, sp)).encode()})
    if kind == "parquet":
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(path, schema)
    elif kind == "arrow":
        writer = pa.ipc.new_file(path, schema)
    else:
        import pyarrow.csv as pcsv

        writer = pcsv.CSVWriter(path, schema.remove_metadata())
    try:
        for chunk in sp.chunks():
            arrays = [pa.array(np.asarray(chunk[name], dtype=dt)) for name, dt in sp.columns]
            batch = pa.record_batch(arrays, schema=schema if kind != "csv" else schema.remove_metadata())
            writer.write_batch(batch)
    finally:
        writer.close()
