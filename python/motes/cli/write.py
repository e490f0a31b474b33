"""``motes write``: a step from a table file (.npz, .csv, .parquet); the writing options and
summary shared with ``motes generate``."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .._core import UsageError
from .common import (CliError, _add_progress, _attr_arg, _bytes, _g, _key_value, _nonneg_int, _num, _open, _out,
                     _output_kind, _positive_int, _progress, _rate, _require, _sub)


@dataclass
class Input:
    """What an input file holds: its columns, and the step metadata it carries (scalars of an
    .npz, or the metadata of a motes export), each None when the file does not say."""

    columns: Dict[str, Any]
    attributes: Dict[str, Any] = field(default_factory=dict)
    time: Optional[float] = None
    step: Optional[int] = None
    species: Optional[str] = None
    units: Dict[str, str] = field(default_factory=dict)


def _to_supported(name: str, arr):
    """Converts one input column to a dtype motes stores, or raises a UsageError naming it."""
    import numpy as np

    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise UsageError(f"column '{name}' must be 1-D, got shape {arr.shape}")
    k = arr.dtype.kind
    if k == "b":
        return arr.astype(np.uint8)
    if k in "OUSV":
        raise UsageError(f"column '{name}' holds text or objects (dtype {arr.dtype}); only numeric columns can be "
                         "stored: drop it or encode it as numbers")
    if k in "mM":
        raise UsageError(f"column '{name}' holds dates/times (dtype {arr.dtype}); convert it to a number first")
    if k == "c":
        raise UsageError(f"column '{name}' is complex; store its real and imaginary parts as two columns")
    if k == "f" and arr.dtype.itemsize < 4:
        arr = arr.astype(np.float32)
    elif k == "f" and arr.dtype.itemsize > 8:
        arr = arr.astype(np.float64)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def _read_npz(path: str, time_from: Optional[str]) -> Input:
    from ..convert import npz  # the same reading of an archive as motes convert

    c = npz.contents(path)
    m = npz.step_metadata(c, time_from)
    return Input(npz.load_columns(c), m["attributes"], m["time"], m["index"], m["species"], m["units"])


def _read_csv(path: str) -> Dict[str, Any]:
    import numpy as np

    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        df = pd.read_csv(path, skipinitialspace=True)
        out = {}
        for name in df.columns:
            s = df[name]
            key = str(name).strip()
            if isinstance(s.dtype, np.dtype):
                out[key] = s.to_numpy()
            elif pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
                # pandas extension dtypes (Int64, boolean, Float32, ...): nulls become NaN
                if s.isna().any():
                    out[key] = s.to_numpy(dtype="float64", na_value=np.nan)
                else:
                    out[key] = s.to_numpy(dtype=s.dtype.numpy_dtype)
            else:
                out[key] = s.to_numpy(dtype=object)
        return out
    a = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8", autostrip=True)
    a = np.atleast_1d(a)
    if a.dtype.names is None:
        raise UsageError(f"{path}: no header row with column names")
    return {n: np.ascontiguousarray(a[n]) for n in a.dtype.names}


def _read_parquet(path: str) -> Dict[str, Any]:
    import numpy as np

    pq = _require("pyarrow.parquet", "arrow", "reading Parquet")
    import pyarrow as pa

    table = pq.read_table(path)
    out = {}
    for name, col in zip(table.column_names, table.columns):
        t = col.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
                pa.types.is_large_binary(t) or pa.types.is_dictionary(t):
            raise UsageError(f"column '{name}' holds text or categories (arrow type {t}); only numeric columns "
                             "can be stored: drop it or encode it as numbers")
        if pa.types.is_nested(t):
            raise UsageError(f"column '{name}' is nested (arrow type {t}); only flat numeric columns can be stored")
        if col.null_count and (pa.types.is_integer(t) or pa.types.is_boolean(t)):
            arr = col.cast(pa.float64()).to_numpy()
        else:
            arr = col.to_numpy()
        if col.null_count and arr.dtype.kind == "O":
            arr = np.asarray(arr, dtype=np.float64)
        out[name] = arr
    return out


def _read_parquet_input(path: str) -> Input:
    """Columns, and what a motes export keeps in the schema: step metadata, units."""
    pq = _require("pyarrow.parquet", "arrow", "reading Parquet")
    schema = pq.read_schema(path)
    meta = json.loads(schema.metadata[b"motes"]) if schema.metadata and b"motes" in schema.metadata else {}
    units = {f.name: f.metadata[b"unit"].decode() for f in schema if f.metadata and b"unit" in f.metadata}
    return Input(_read_parquet(path), dict(meta.get("attributes", {})), meta.get("time"), meta.get("step"),
                 meta.get("species"), units)


def read_input(path: str, time_from: Optional[str] = None) -> Input:
    """Reads an input file (.npz, .csv, .parquet): columns converted for motes, and the step
    metadata it carries."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such input file: '{path}'")
    kind = _output_kind(path, ("npz", "csv", "parquet", "pq"), option="INPUT")
    if time_from is not None and kind != "npz":
        raise UsageError("--time-from takes the time from a scalar of an .npz input")
    try:
        if kind == "npz":
            inp = _read_npz(path, time_from)
        else:
            inp = Input(_read_csv(path)) if kind == "csv" else _read_parquet_input(path)
    except (UsageError, CliError, OSError):
        raise
    except Exception as e:  # parser errors of numpy/pandas/pyarrow
        raise CliError(f"cannot read {path}: {e}", 1) from None
    inp.columns = _checked_columns(path, inp.columns)
    return inp


def read_columns(path: str) -> Dict[str, Any]:
    """The columns of an input file, converted for motes."""
    return read_input(path).columns


def _checked_columns(path: str, raw: Dict[str, Any]) -> Dict[str, Any]:
    if not raw:
        raise UsageError(f"{path} holds no columns")
    cols = {str(name): _to_supported(str(name), arr) for name, arr in raw.items()}
    missing = [a for a in ("x", "y", "z") if a not in cols]
    if missing:
        raise UsageError(f"{path}: missing position column(s) {', '.join(missing)} "
                         f"(columns: {', '.join(cols)}; x, y and z are required)")
    import numpy as np

    for a in ("x", "y", "z"):
        if cols[a].dtype.kind != "f":
            cols[a] = cols[a].astype(np.float64)
    n = {len(v) for v in cols.values()}
    if len(n) != 1:
        raise UsageError(f"{path}: columns have different lengths (" +
                         ", ".join(f"{k}: {len(v)}" for k, v in cols.items()) + ")")
    return cols


def _next_step(path: str) -> int:
    from .._core import DatasetCore

    if os.path.isdir(path) and DatasetCore.exists(path):
        steps = _open(path).steps
        return (max(steps) + 1) if steps else 0
    return 0


def _write(args, inp: Input, source: str) -> int:
    from ..dataset import write

    cols = inp.columns
    index = dict(getattr(args, "index", None) or [])
    units = {**inp.units, **dict(getattr(args, "unit", None) or [])}
    units = {k: v for k, v in units.items() if k in cols}
    for opt, mapping in (("--index", index), ("--unit", units)):
        for name in mapping:
            if name not in cols:
                raise UsageError(f"{opt}: unknown column '{name}' (columns: {', '.join(cols)})")
    for name, kind in index.items():
        if kind not in ("auto", "none", "quantile"):
            raise UsageError(f"--index {name}={kind}: kind must be auto, none or quantile")
    # The command line wins over what the file says, which wins over the defaults.
    step = args.step if args.step is not None else inp.step if inp.step is not None else _next_step(args.dataset)
    t = args.time if args.time is not None else inp.time if inp.time is not None else 0.0
    species = args.species or inp.species or "particles"
    attributes = {**inp.attributes, **dict(getattr(args, "attr", None) or [])}
    n = len(next(iter(cols.values())))
    in_bytes = sum(v.nbytes for v in cols.values())
    t0 = time.perf_counter()
    summaries = write(args.dataset, cols, step=step, time=t, species=species, index=index, units=units,
                      attributes=attributes, leaf_size=args.leaf_size, lod_count=args.lod_count,
                      threads=args.threads, progress=_progress(args))
    seconds = time.perf_counter() - t0
    s = summaries[0] if summaries else {}
    data = s.get("data_bytes", in_bytes)
    fbytes = s.get("file_bytes", 0)
    _out(f"wrote step {step} (time {_g(t)}) of {args.dataset}, species '{species}', from {source}")
    if attributes:
        _out(f"  attributes {json.dumps(attributes)}")
    _out(f"  particles  {_num(n)} x {len(cols)} columns ({', '.join(cols)})")
    ov = f", overhead {100.0 * (fbytes - data) / data:.1f}%" if data else ""
    _out(f"  bytes      {_bytes(fbytes)} on disk ({_bytes(data)} data{ov}), "
         f"{s.get('level_count', '?')} levels, {_num(s.get('node_count', 0))} nodes")
    _out(f"  seconds    {seconds:.3f} (layout {s.get('layout_seconds', 0):.3f}, "
         f"write {s.get('write_seconds', 0):.3f})")
    _out(f"  rate       {_rate(n, seconds, 'particles')}, {_rate(in_bytes, seconds, 'B')}")
    return 0


def cmd_write(args) -> int:
    return _write(args, read_input(args.input, args.time_from), args.input)


def _add_write_options(p) -> None:
    g = p.add_argument_group("writing")
    g.add_argument("--step", type=int, default=None,
                   help="step index to write (default: the input's own, e.g. an .npz scalar 'step' or 'iteration'; "
                        "else 0 for a new dataset, else last step + 1)")
    g.add_argument("--time", type=float, default=None,
                   help="physical time of the step (default: the input's own, e.g. an .npz scalar 'time'; else 0)")
    g.add_argument("--species", default=None, help="species name (default: the input's own, else particles)")
    g.add_argument("--attr", type=_attr_arg, action="append", metavar="KEY=VALUE",
                   help="a step attribute (repeatable); VALUE is JSON when it parses (2.5, [1, 2], true), else text")
    g.add_argument("--index", type=_key_value, action="append", metavar="COL=KIND",
                   help="extra index for a column: auto, none or quantile (repeatable; auto builds a quantile "
                        "index for spatially incoherent columns)")
    g.add_argument("--unit", type=_key_value, action="append", metavar="COL=UNIT",
                   help="physical unit of a column, stored in the schema (repeatable)")
    g.add_argument("--leaf-size", type=_positive_int, default=512, help="particles per leaf of the spatial tree")
    g.add_argument("--lod-count", type=_positive_int, default=8, help="sample (level-of-detail) particles kept by each inner tree node")
    g.add_argument("--threads", type=_nonneg_int, default=0, help="worker threads, 0 for all cores")
    _add_progress(g)



def add_parser(subs) -> None:
    p = _sub(subs, "write", "write a step from a .npz, .csv or .parquet file",
             "Writes the particles of INPUT as one step (one species) of DATASET, creating the dataset\n"
             "when absent. INPUT is .npz (1-D arrays are columns, an (n, 3) 'pos' array is x, y, z,\n"
             "scalars are step attributes: 'time' the time, 'step' or 'iteration' the index), .csv\n"
             "(header row with the column names) or .parquet. Columns x, y and z are required; all\n"
             "columns must be numeric (booleans are stored as uint8, integer positions as float64).\n"
             "An .npz or .parquet that motes exported carries its step, time, species, attributes\n"
             "and units, and is written back as it was.",
             "  motes write run.motes step0.npz\n"
             "  motes write run.motes snap_0042.npz --time-from aexp --attr code=pysco\n"
             "  motes write run.motes electrons.parquet --step 3 --time 0.75 --species electrons\n"
             "  motes write run.motes table.csv --index energy=quantile --unit energy=keV --leaf-size 1024")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory (created when absent)")
    p.add_argument("input", metavar="INPUT", help="input file: .npz, .csv or .parquet")
    p.add_argument("--time-from", metavar="NAME", default=None,
                   help="take the step time from this scalar of an .npz input (default: a scalar named time)")
    _add_write_options(p)
    p.set_defaults(func=cmd_write)
