"""Flat tables: Parquet, Arrow IPC, CSV (pyarrow) and numpy .npz, streamed in chunks.

A table holds one species of one step. Reading gives one step (index and time from the
file's metadata when motes wrote it, else 0) of one species (named in the metadata, else
"particles"). Writing takes exactly one species of one step: choose them with
``step=`` / ``species=`` when the source has more. Parquet and Arrow keep each column's
unit in the field metadata (``unit``) and the step's index, time, species name and
attributes in the schema metadata (``motes``, JSON); CSV and .npz keep values only
(.npz: also a ``__motes__`` member with that JSON).
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from .._core import FormatError, UsageError
from .base import DEFAULT_CHUNK_ROWS, Species, Step, check_dtype, rechunk

_META_KEY = b"motes"


def _kind(path: str) -> str:
    low = path.lower()
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".arrow", ".feather", ".ipc")):
        return "arrow"
    if low.endswith(".csv"):
        return "csv"
    if low.endswith(".npz"):
        return "npz"
    raise UsageError(f"{path}: not a table file (.parquet, .arrow, .feather, .csv, .npz)")


def _meta_step(meta: Dict[str, Any], species_columns, count, chunks, units) -> Step:
    name = meta.get("species", "particles")
    sp = Species(name, species_columns, count, chunks, units, meta.get("species_attributes", {}))
    return Step(int(meta.get("step", 0)), float(meta.get("time", 0.0)), meta.get("attributes", {}), {name: sp})


def _arrow_columns(path: str, schema) -> Tuple[List[Tuple[str, np.dtype]], Dict[str, str]]:
    cols, units = [], {}
    for field in schema:
        try:
            dt = np.dtype(field.type.to_pandas_dtype())
        except (NotImplementedError, TypeError):
            raise UsageError(f"{path}: column '{field.name}' has type {field.type}, which motes cannot store "
                             "(numbers only)") from None
        cols.append((field.name, check_dtype(path, field.name, dt)))
        if field.metadata and b"unit" in field.metadata:
            units[field.name] = field.metadata[b"unit"].decode()
    return cols, units


def _batch_to_chunk(path: str, batch, cols) -> Dict[str, np.ndarray]:
    out = {}
    for (name, dt), col in zip(cols, batch.columns):
        if col.null_count:
            raise UsageError(f"{path}: column '{name}' has {col.null_count} missing values (motes stores no nulls)")
        out[name] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=dt)
    return out


def read(path: str, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, **options) -> Iterator[Step]:
    if options:
        raise UsageError(f"table sources take no options (got {', '.join(options)})")
    kind = _kind(path)
    if kind == "npz":
        yield _read_npz(path, chunk_rows)
        return
    import pyarrow as pa

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
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"{path}: not a readable {kind} file ({e})") from None
    cols, units = _arrow_columns(path, schema)
    meta = json.loads(schema.metadata[_META_KEY]) if schema.metadata and _META_KEY in schema.metadata else {}

    def chunks():
        try:
            yield from rechunk((_batch_to_chunk(path, b, cols) for b in batches() if b.num_rows), chunk_rows)
        except pa.ArrowInvalid as e:
            raise FormatError(f"{path}: {e}") from None

    if count is None:  # CSV: one counting pass (streaming, values not kept)
        count = sum(len(next(iter(c.values()))) for c in chunks()) if cols else 0
    yield _meta_step(meta, cols, count, chunks, units)


def _one(steps: Iterable[Step], path: str) -> Tuple[Step, Species]:
    chosen = None
    for st in steps:
        for sp in st.species.values():
            if chosen is not None:
                raise UsageError(f"{path}: a table holds one species of one step; the source has more "
                                 "(choose with step= and species=, CLI: --step, --species)")
            chosen = (st, sp)
    if chosen is None:
        raise UsageError(f"{path}: nothing to write (no step or species selected)")
    return chosen


def _meta(st: Step, sp: Species) -> Dict[str, Any]:
    attrs = {k: v for k, v in sp.attributes.items() if k != "motes_patches"}
    return {"step": st.index, "time": st.time, "species": sp.name, "attributes": st.attributes,
            "species_attributes": attrs}


def write(path: str, steps: Iterable[Step], **options) -> None:
    if options:
        raise UsageError(f"table destinations take no options (got {', '.join(options)})")
    kind = _kind(path)
    st, sp = _one(steps, path)
    if kind == "npz":
        return _write_npz(path, st, sp)
    import pyarrow as pa

    fields = []
    for name, dt in sp.columns:
        md = {b"unit": sp.units[name].encode()} if sp.units.get(name) else None
        fields.append(pa.field(name, pa.from_numpy_dtype(dt), nullable=False, metadata=md))
    schema = pa.schema(fields, metadata={_META_KEY: json.dumps(_meta(st, sp)).encode()})
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


# --- .npz, streamed member by member -------------------------------------------------------------
def _npy_header(f) -> Tuple[np.dtype, int]:
    version = np.lib.format.read_magic(f)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_header(f)
    if len(shape) != 1 or fortran:
        raise UsageError("not a 1-D array")
    return np.dtype(dtype), int(shape[0])


def _read_npz(path: str, chunk_rows: int) -> Step:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise FormatError(f"{path}: not an .npz file ({e})") from None
    with zf:
        names = [n for n in zf.namelist() if n.endswith(".npy") and n != "__motes__.npy"]
        meta = {}
        if "__motes__.npy" in zf.namelist():
            with zf.open("__motes__.npy") as f:
                dt, n = _npy_header(f)
                meta = json.loads(f.read(n * dt.itemsize).decode())
        cols, count = [], None
        for member in names:
            with zf.open(member) as f:
                try:
                    dt, n = _npy_header(f)
                except (UsageError, ValueError) as e:
                    raise UsageError(f"{path}: member {member}: {e}") from None
            name = member[:-4]
            cols.append((name, check_dtype(path, name, dt)))
            if count is not None and n != count:
                raise UsageError(f"{path}: arrays have unequal lengths ({name}: {n}, others: {count})")
            count = n
    count = count or 0

    def chunks():
        with zipfile.ZipFile(path) as z:
            handles = {}
            try:
                for (name, dt) in cols:
                    h = z.open(name + ".npy")
                    file_dt, _ = _npy_header(h)
                    handles[name] = (h, file_dt)
                for start in range(0, count, chunk_rows):
                    n = min(chunk_rows, count - start)
                    out = {}
                    for name, dt in cols:
                        h, file_dt = handles[name]
                        raw = h.read(n * file_dt.itemsize)
                        out[name] = np.frombuffer(raw, dtype=file_dt).astype(dt, copy=False)
                    yield out
            finally:
                for h, _ in handles.values():
                    h.close()

    return _meta_step(meta, cols, count, chunks, {})


def _write_npz(path: str, st: Step, sp: Species) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, dt in sp.columns:  # one pass over the source per column: members are written one at a time
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(dt)),
                                                         "fortran_order": False, "shape": (sp.count,)})
                written = 0
                for chunk in sp.chunks():
                    a = np.ascontiguousarray(chunk[name], dtype=dt)
                    f.write(a.tobytes())
                    written += len(a)
                if written != sp.count:
                    raise UsageError(f"{path}: species '{sp.name}' gave {written} rows, announced {sp.count}")
        meta = np.frombuffer(json.dumps(_meta(st, sp)).encode(), dtype=np.uint8)
        with zf.open("__motes__.npy", "w") as f:
            np.lib.format.write_array(f, meta)
