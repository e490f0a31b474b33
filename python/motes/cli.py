"""The ``motes`` command: inspect, write, query, histogram and verify particle datasets.

Run ``motes --help`` or ``motes COMMAND --help``. Every command is also callable in-process::

    from motes.cli import main
    status = main(["query", "run.motes", "--where", "energy > 1.3", "--count"])

Exit status: 0 on success, 2 for usage errors (bad arguments, unknown columns, malformed
expressions), 1 for format and I/O errors (missing or corrupted files, failed checksums).

Heavy modules (numpy, pandas, pyarrow, matplotlib) are imported inside the commands that
need them, so ``motes --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from . import __version__
from ._core import FormatError, MotesError, UsageError

__all__ = ["main", "build_parser"]


class CliError(Exception):
    """A user-facing error with an exit status (printed as ``motes: error: ...``)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


# ----------------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------------
def _out(*args: Any) -> None:
    print(*args, file=sys.stdout)


def _err(*args: Any) -> None:
    print(*args, file=sys.stderr)


def _require(module: str, extra: str, what: str):
    """Imports an optional dependency or raises a CliError telling how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise CliError(f"{what} needs the '{module.split('.')[0]}' package "
                       f"(pip install 'motes[{extra}]' or pip install {module.split('.')[0]})") from None


def _num(n: Any) -> str:
    """Integer with thousands separators."""
    return f"{int(n):,}"


def _bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024.0
    return f"{n:.3g} PiB"  # pragma: no cover


def _g(v: Any, digits: int = 6) -> str:
    """Compact number: integers as such, floats with ``digits`` significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(f):
        return "nan"
    return f"{f:.{digits}g}"


def _seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def _rate(n: float, seconds: float, unit: str) -> str:
    if seconds <= 0:
        return f"- {unit}/s"
    r = n / seconds
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= scale:
            return f"{r / scale:.3g} {prefix}{unit}/s"
    return f"{r:.3g} {unit}/s"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Optional[Sequence[str]] = None,
           indent: str = "") -> str:
    """Plain-text table; ``align`` holds '<' or '>' per column (default: right)."""
    align = list(align or [">"] * len(headers))
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]

    def line(cells):
        return indent + "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths)).rstrip()

    out = [line(headers), indent + "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def _finite(v: Any) -> Any:
    """JSON-safe float: NaN/inf -> None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _count_arg(text: str) -> int:
    """Particle count: 100000, 100_000, 1e5, 100k, 2M, 1G."""
    t = text.strip().replace("_", "").replace(",", "")
    scale = 1
    if t and t[-1] in "kKmMgG":
        scale = {"k": 10**3, "m": 10**6, "g": 10**9}[t[-1].lower()]
        t = t[:-1]
    try:
        v = float(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid particle count '{text}' (e.g. 100000, 1e5, 100k, 2M)") from None
    if v < 0 or v != int(v):
        raise argparse.ArgumentTypeError(f"particle count must be a non-negative integer, got '{text}'")
    return int(v)


def _quality_arg(text: str) -> float:
    try:
        q = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid quality '{text}' (a number in [0, 1])") from None
    if not 0.0 <= q <= 1.0:
        raise argparse.ArgumentTypeError(f"quality must be in [0, 1], got {text}")
    return q


def _int_at_least(minimum: int):
    """An argparse type: an integer >= minimum."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer '{text}'") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {v}")
        return v

    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _key_value(text: str) -> tuple:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected COL=VALUE, got '{text}'")
    k, v = text.split("=", 1)
    k, v = k.strip(), v.strip()
    if not k:
        raise argparse.ArgumentTypeError(f"expected COL=VALUE, got '{text}'")
    return k, v


def _progress(args) -> bool:
    """--progress / --no-progress; by default bars are shown when stderr is a terminal."""
    p = getattr(args, "progress", None)
    if p is None:
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False
    return bool(p)


def _open(path: str):
    """Opens a dataset, with a clear message for a missing path."""
    from .dataset import open as open_dataset

    if not os.path.exists(path):
        raise FileNotFoundError(f"no such dataset: '{path}'")
    if not os.path.isdir(path):
        raise CliError(f"'{path}' is not a motes dataset (a dataset is a directory)", 1)
    return open_dataset(path)


def _species_of(ds, step: Optional[int], species: Optional[str]) -> str:
    """Resolves --species (the only species of the step when not given)."""
    st = ds.step(step)
    names = list(st.species)
    if species is None:
        if len(names) == 1:
            return names[0]
        if not names:
            raise UsageError(f"step {st.index} has no species")
        raise UsageError(f"step {st.index} has several species ({', '.join(names)}): choose one with --species")
    if species not in st.species:
        raise UsageError(f"step {st.index} has no species '{species}' (species: {', '.join(names)})")
    return species


def _split_columns(text: Optional[str]) -> Optional[List[str]]:
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise UsageError("--columns needs at least one column name (e.g. --columns x,y,energy)")
    return cols


def _check_columns(ds, cols: Sequence[str], step: Optional[int], species: str, option: str) -> None:
    known = [c.name for c in ds.schema(step, species)]
    for c in cols:
        if c not in known:
            raise UsageError(f"unknown column '{c}' in {option} (columns: {', '.join(known)})")


def _quality(args):
    if getattr(args, "quality_range", None) is not None:
        q0, q1 = args.quality_range
        if q0 > q1:
            raise UsageError(f"--quality-range: Q0 must be <= Q1, got {q0} > {q1}")
        return (q0, q1)
    q = getattr(args, "quality", None)
    return 1.0 if q is None else q


def _selection_kwargs(args, species: str) -> Dict[str, Any]:
    return dict(where=args.where, box=args.box, quality=_quality(args), step=args.step, species=species,
                threads=args.threads)


def _describe_selection(args) -> str:
    parts = []
    if args.where:
        parts.append(f"where {args.where}")
    if args.box:
        b = args.box
        parts.append(f"box [{_g(b[0])}, {_g(b[3])}]x[{_g(b[1])}, {_g(b[4])}]x[{_g(b[2])}, {_g(b[5])}]")
    q = _quality(args)
    if q != 1.0:
        parts.append(f"quality {q[0]:g}..{q[1]:g}" if isinstance(q, tuple) else f"quality {q:g}")
    return ", ".join(parts)


def _output_kind(path: str, allowed: Sequence[str], option: str = "-o") -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in allowed:
        raise UsageError(f"{option} {path}: unsupported file type '.{ext}' (use " +
                         ", ".join("." + a for a in allowed) + ")")
    return ext


# ----------------------------------------------------------------------------------------------
# motes info
# ----------------------------------------------------------------------------------------------
def _file_info(ds, step: int, species: str) -> Dict[str, Any]:
    """One species of one step: its file, or the sum over the part files of a parallel write."""
    src = ds.source(step, species)
    files = [src.part(k) for k in range(src.part_count)]
    sizes: Dict[str, Any] = {}
    for f in files:
        for k, v in f.sizes.items():
            sizes[k] = sizes.get(k, 0) + v
    data = sizes.get("data_bytes", 0)
    overhead = sizes.get("file_bytes", 0) - data
    sizes["overhead_bytes"] = overhead
    sizes["overhead_percent"] = (100.0 * overhead / data) if data else None
    cols = []
    for j, c in enumerate(files[0].columns):
        per = [f.columns[j] for f in files]
        valid = [p for f, p in zip(files, per) if p["nan_count"] < f.count]  # parts with a range
        cols.append({"name": c["name"], "dtype": c["dtype"],
                     "index": "quantile" if any(p["index"] == "quantile" for p in per) else "none",
                     "unit": c["unit"],
                     "min": _finite(min(p["min"] for p in valid)) if valid else None,
                     "max": _finite(max(p["max"] for p in valid)) if valid else None,
                     "nan_count": sum(p["nan_count"] for p in per)})
    (lo, hi) = src.bounds
    return {
        "step": step,
        "species": species,
        "path": src.path,
        "parts": int(src.part_count),
        "count": int(src.count),
        "format_version": ".".join(str(v) for v in files[0].version),
        "levels": max(int(f.level_count) for f in files),
        "nodes": sum(int(f.node_count) for f in files),
        "leaf_size": int(files[0].leaf_size),
        "lod_count": int(files[0].lod_count),
        "bounds": {"min": [_finite(v) for v in lo], "max": [_finite(v) for v in hi]},
        "sizes": sizes,
        "columns": cols,
    }


def _info_data(ds, args) -> Dict[str, Any]:
    steps = []
    for st in (ds.step(i) for i in ds.steps):
        species = {}
        for name, sp in st.species.items():
            lo, hi = sp["bounds"]
            species[name] = {"count": int(sp["count"]),
                             "bounds": {"min": [_finite(v) for v in lo], "max": [_finite(v) for v in hi]}}
        steps.append({"index": st.index, "time": _finite(st.time), "attributes": st.attributes,
                      "species": species})
    details = []
    if steps:
        chosen = ds.steps if args.all else [ds.step(args.step).index]
        for s in chosen:
            for name in ds.species_names(s):
                if args.species is not None and name != args.species:
                    continue
                details.append(_file_info(ds, s, name))
        if args.species is not None and not details:
            _species_of(ds, args.step, args.species)  # raises with the list of species
    return {
        "path": ds.path,
        "attributes": ds.attributes,
        "step_count": len(steps),
        "species": sorted({n for s in steps for n in s["species"]}),
        "particle_count": sum(sp["count"] for s in steps for sp in s["species"].values()),
        "steps": steps,
        "files": details,
    }


def _print_info(info: Dict[str, Any]) -> None:
    steps = info["steps"]
    _out(f"dataset    {info['path']}")
    if not steps:
        _out("steps      none (empty dataset)")
        return
    times = [s["time"] for s in steps if s["time"] is not None]
    tr = f", time {_g(min(times))} .. {_g(max(times))}" if times else ""
    _out(f"steps      {len(steps)} (index {steps[0]['index']} .. {steps[-1]['index']}{tr})")
    _out(f"species    {', '.join(info['species'])}")
    _out(f"particles  {_num(info['particle_count'])} in all steps")
    if info["attributes"]:
        _out(f"attributes {json.dumps(info['attributes'])}")
    _out("")
    shown = steps if len(steps) <= 40 else steps[:20] + steps[-20:]
    rows = []
    for i, s in enumerate(shown):
        if len(steps) > 40 and i == 20:
            rows.append(["...", "", "", ""])
        for j, (name, sp) in enumerate(s["species"].items()):
            rows.append([str(s["index"]) if j == 0 else "", _g(s["time"]) if j == 0 else "", name,
                         _num(sp["count"])])
    _out(_table(["step", "time", "species", "particles"], rows, ["<", ">", "<", ">"], indent="  "))
    for d in info["files"]:
        sz = d["sizes"]
        lo, hi = d["bounds"]["min"], d["bounds"]["max"]
        _out("")
        _out(f"step {d['step']}, species '{d['species']}': {_num(d['count'])} particles")
        parts = f", {d['parts']} part files" if d.get('parts', 1) > 1 else ""
        _out(f"  file     {d['path']} (format {d['format_version']}{parts})")
        _out("  bounds   " + "  ".join(f"{a} [{_g(l)}, {_g(h)}]" for a, l, h in zip("xyz", lo, hi)))
        _out(f"  tree     {d['levels']} levels, {_num(d['nodes'])} nodes, leaf size {d['leaf_size']}, "
             f"{d['lod_count']} LOD particles per inner node")
        ov = sz.get("overhead_percent")
        _out(f"  size     {_bytes(sz['file_bytes'])} = data {_bytes(sz['data_bytes'])} + index "
             f"{_bytes(sz['index_bytes'])} + fine index {_bytes(sz['fine_index_bytes'])} + padding "
             f"{_bytes(sz['padding_bytes'])}" + (f"  (overhead {ov:.1f}% of data)" if ov is not None else ""))
        rows = []
        for c in d["columns"]:
            integer = c["dtype"][0] in "iu"
            fmt = (lambda v: "-" if v is None else (str(int(v)) if integer else _g(v)))
            rows.append([c["name"], c["dtype"], c["index"], c["unit"] or "", fmt(c["min"]), fmt(c["max"]),
                         _num(c["nan_count"]) if c["nan_count"] else ""])
        _out("  columns")
        _out(_table(["name", "dtype", "index", "unit", "min", "max", "NaNs"], rows,
                    ["<", "<", "<", "<", ">", ">", ">"], indent="    "))


def cmd_info(args) -> int:
    ds = _open(args.dataset)
    info = _info_data(ds, args)
    if args.json:
        _out(json.dumps(info, indent=2, allow_nan=False))
    else:
        _print_info(info)
    return 0


# ----------------------------------------------------------------------------------------------
# motes write / generate
# ----------------------------------------------------------------------------------------------
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


def _read_npz(path: str) -> Dict[str, Any]:
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


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


def read_columns(path: str) -> Dict[str, Any]:
    """Reads an input file (.npz, .csv, .parquet) into name -> numpy array, converted for motes."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such input file: '{path}'")
    kind = _output_kind(path, ("npz", "csv", "parquet", "pq"), option="INPUT")
    reader = {"npz": _read_npz, "csv": _read_csv, "parquet": _read_parquet, "pq": _read_parquet}[kind]
    try:
        raw = reader(path)
    except (UsageError, CliError, OSError):
        raise
    except Exception as e:  # parser errors of numpy/pandas/pyarrow
        raise CliError(f"cannot read {path}: {e}", 1) from None
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
    from ._core import DatasetCore

    if os.path.isdir(path) and DatasetCore.exists(path):
        steps = _open(path).steps
        return (max(steps) + 1) if steps else 0
    return 0


def _write(args, cols: Dict[str, Any], source: str) -> int:
    from .dataset import write

    index = dict(getattr(args, "index", None) or [])
    units = dict(getattr(args, "unit", None) or [])
    for opt, mapping in (("--index", index), ("--unit", units)):
        for name in mapping:
            if name not in cols:
                raise UsageError(f"{opt}: unknown column '{name}' (columns: {', '.join(cols)})")
    for name, kind in index.items():
        if kind not in ("auto", "none", "quantile"):
            raise UsageError(f"--index {name}={kind}: kind must be auto, none or quantile")
    step = args.step if args.step is not None else _next_step(args.dataset)
    n = len(next(iter(cols.values())))
    in_bytes = sum(v.nbytes for v in cols.values())
    t0 = time.perf_counter()
    summaries = write(args.dataset, cols, step=step, time=args.time, species=args.species, index=index,
                      units=units, leaf_size=args.leaf_size, lod_count=args.lod_count, threads=args.threads,
                      progress=_progress(args))
    seconds = time.perf_counter() - t0
    s = summaries[0] if summaries else {}
    data = s.get("data_bytes", in_bytes)
    fbytes = s.get("file_bytes", 0)
    _out(f"wrote step {step} (time {_g(args.time)}) of {args.dataset}, species '{args.species}', from {source}")
    _out(f"  particles  {_num(n)} x {len(cols)} columns ({', '.join(cols)})")
    ov = f", overhead {100.0 * (fbytes - data) / data:.1f}%" if data else ""
    _out(f"  bytes      {_bytes(fbytes)} on disk ({_bytes(data)} data{ov}), "
         f"{s.get('level_count', '?')} levels, {_num(s.get('node_count', 0))} nodes")
    _out(f"  seconds    {seconds:.3f} (layout {s.get('layout_seconds', 0):.3f}, "
         f"write {s.get('write_seconds', 0):.3f})")
    _out(f"  rate       {_rate(n, seconds, 'particles')}, {_rate(in_bytes, seconds, 'B')}")
    return 0


def cmd_write(args) -> int:
    cols = read_columns(args.input)
    return _write(args, cols, args.input)


def cmd_generate(args) -> int:
    import numpy as np

    from . import synth

    dtype = np.float64 if args.dtype == "float64" else np.float32
    t0 = time.perf_counter()
    cols = synth.generate(args.kind, args.n, seed=args.seed, with_id=args.with_id, dtype=dtype)
    if _progress(args):
        _err(f"generated {_num(args.n)} '{args.kind}' particles in {time.perf_counter() - t0:.2f} s")
    return _write(args, cols, f"synth.{args.kind}(n={args.n}, seed={args.seed})")


# ----------------------------------------------------------------------------------------------
# motes query
# ----------------------------------------------------------------------------------------------
def _cell(v, kind: str) -> str:
    if kind in "iub":
        return str(int(v))
    return _g(v, 7)


def _empty_table(ds, names, step, species):
    import numpy as np

    dtypes = {c.name: c.dtype for c in ds.schema(step, species)}
    from .dataset import Table

    return Table({n: np.empty(0, dtype=dtypes[n]) for n in names})


def _write_npz(ds, kw, names, out, limit) -> int:
    import numpy as np

    t = ds.query(columns=names, **kw)
    arrays = {k: (v[:limit] if limit is not None else v) for k, v in t.items()}
    with open(out, "wb") as fh:  # np.savez would append '.npz' to other names
        np.savez(fh, **arrays)
    return len(next(iter(arrays.values()))) if arrays else 0


def _batches(ds, kw, names, limit, batch_size):
    """query_batches, cut at ``limit`` rows; yields at least one (possibly empty) table."""
    rows = 0
    any_batch = False
    for t in ds.query_batches(columns=names, batch_size=batch_size, **kw):
        if limit is not None and rows + len(t) > limit:
            t = type(t)({k: v[:limit - rows] for k, v in t.items()})
        if len(t) == 0 and any_batch:
            break
        any_batch = True
        rows += len(t)
        yield t
        if limit is not None and rows >= limit:
            break
    if not any_batch:
        yield _empty_table(ds, names, kw["step"], kw["species"])


def _write_csv(ds, kw, names, out, limit, batch_size) -> int:
    import numpy as np

    try:
        import pandas as pd
    except ImportError:
        pd = None
    rows = 0
    with open(out, "w", newline="") as fh:
        first = True
        for t in _batches(ds, kw, names, limit, batch_size):
            if pd is not None:
                t.to_pandas().to_csv(fh, header=first, index=False)
            else:
                if first:
                    fh.write(",".join(names) + "\n")
                fmt = [("%d" if t[n].dtype.kind in "iu" else ("%.9g" if t[n].dtype.itemsize == 4 else "%.17g"))
                       for n in names]
                if len(t):
                    np.savetxt(fh, np.column_stack([t[n].astype(object) for n in names]), fmt=fmt, delimiter=",")
            first = False
            rows += len(t)
    return rows


def _write_parquet(ds, kw, names, out, limit, batch_size) -> int:
    pq = _require("pyarrow.parquet", "arrow", "writing Parquet")
    rows = 0
    writer = None
    try:
        for t in _batches(ds, kw, names, limit, batch_size):
            at = t.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(out, at.schema)
            writer.write_table(at)
            rows += len(t)
    finally:
        if writer is not None:
            writer.close()
    return rows


def cmd_query(args) -> int:
    if args.count and args.output:
        raise UsageError("--count and -o cannot be combined")
    ds = _open(args.dataset)
    species = _species_of(ds, args.step, args.species)
    kw = _selection_kwargs(args, species)
    if args.count:
        _out(ds.count(**kw))
        return 0
    names = _split_columns(args.columns)
    if names is None:
        names = [c.name for c in ds.schema(args.step, species)]
    else:
        _check_columns(ds, names, args.step, species, "--columns")
    if args.output:
        kind = _output_kind(args.output, ("npz", "csv", "parquet", "pq"))
        t0 = time.perf_counter()
        if kind == "npz":
            rows = _write_npz(ds, kw, names, args.output, args.limit)
        elif kind == "csv":
            rows = _write_csv(ds, kw, names, args.output, args.limit, args.batch_size)
        else:
            rows = _write_parquet(ds, kw, names, args.output, args.limit, args.batch_size)
        dt = time.perf_counter() - t0
        _out(f"wrote {_num(rows)} rows x {len(names)} columns to {args.output} in {_seconds(dt)}")
        return 0

    limit = 20 if args.limit is None else args.limit
    t0 = time.perf_counter()
    sel = ds.select(**kw)
    total = int(sel.size)
    dt = time.perf_counter() - t0
    shown = min(limit, total)
    data = {c: sel.gather(c, 0, shown) for c in names}
    if shown:
        rows = [[_cell(data[c][i], data[c].dtype.kind) for c in names] for i in range(shown)]
        _out(_table(names, rows))
    all_count = ds.count_total(args.step, species)
    what = _describe_selection(args)
    msg = f"{_num(total)} of {_num(all_count)} particles match" + (f" ({what})" if what else "")
    msg += f", found in {_seconds(dt)}"
    if total > shown:
        msg += f"; showing the first {_num(shown)} (use --limit N or -o FILE for more)"
    _out(msg)
    if args.verbose:
        _out("index: " + ", ".join(f"{k.replace('_', ' ')} {_num(v)}" for k, v in sel.counters.items()))
    return 0


# ----------------------------------------------------------------------------------------------
# motes hist
# ----------------------------------------------------------------------------------------------
def _axis_label(ds, name: str, step, species) -> str:
    for c in ds.schema(step, species):
        if c.name == name and c.unit:
            return f"{name} [{c.unit}]"
    return name


def _text_bars(counts, edges, log: bool, max_rows: int = 20, width: int = 40) -> List[str]:
    import numpy as np

    n = len(counts)
    group = max(1, -(-n // max_rows))
    starts = np.arange(0, n, group)
    sums = np.add.reduceat(np.asarray(counts, dtype=np.float64), starts)
    lo = edges[starts]
    hi = edges[np.minimum(starts + group, n)]
    vals = np.log10(1.0 + np.maximum(sums, 0)) if log else np.maximum(sums, 0)
    top = vals.max() if len(vals) and vals.max() > 0 else 1.0
    integer = np.issubdtype(np.asarray(counts).dtype, np.integer)
    labels = [f"[{_g(a, 4)}, {_g(b, 4)}{']' if i == len(starts) - 1 else ')'}" for i, (a, b) in enumerate(zip(lo, hi))]
    values = [_num(s) if integer else _g(s, 4) for s in sums]
    lw, vw = max(map(len, labels)), max(map(len, values))
    out = []
    for lab, val, v in zip(labels, values, vals):
        bar = "#" * int(round(width * v / top))
        if v > 0 and not bar:
            bar = "."
        out.append(f"  {lab:>{lw}} {val:>{vw}} {bar}")
    if group > 1:
        out.append(f"  ({group} bins per row{', log scale' if log else ''})")
    elif log:
        out.append("  (log scale)")
    return out


def _plot(args, ds, species, counts, edges, title: str) -> None:
    _require("matplotlib", "plot", "--plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm

    what = f"sum of {args.weights}" if args.weights else "count"
    fig, ax = plt.subplots(figsize=(7, 5) if len(edges) == 1 else (7, 5.6))
    try:
        if len(edges) == 1:
            if args.log:
                ax.stairs(counts, edges[0], baseline=None, color="C0")
                if np.any(np.asarray(counts) > 0):
                    ax.set_yscale("log")
            else:
                ax.stairs(counts, edges[0], fill=True, alpha=0.35)
                ax.stairs(counts, edges[0], color="C0")
            ax.set_xlabel(_axis_label(ds, args.x, args.step, species))
            ax.set_ylabel(what)
        else:
            c = np.asarray(counts, dtype=np.float64).T  # pcolormesh wants (ny, nx)
            norm = None
            if args.log:
                c = np.ma.masked_less_equal(c, 0)
                if c.count():
                    norm = LogNorm(vmin=float(c.min()), vmax=float(c.max()))
            mesh = ax.pcolormesh(edges[0], edges[1], c, norm=norm, shading="flat", cmap="viridis")
            fig.colorbar(mesh, ax=ax, label=what + (" (log)" if args.log else ""))
            ax.set_xlabel(_axis_label(ds, args.x, args.step, species))
            ax.set_ylabel(_axis_label(ds, args.y, args.step, species))
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=args.dpi)
    finally:
        plt.close(fig)


def _save_hist(path: str, args, counts, edges) -> None:
    import numpy as np

    kind = _output_kind(path, ("npz", "csv"))
    if kind == "npz":
        arrays = {"counts": counts, "x": np.array(args.x), "where": np.array(args.where or "")}
        if len(edges) == 1:
            arrays["edges"] = edges[0]
        else:
            arrays.update(xedges=edges[0], yedges=edges[1], y=np.array(args.y))
        if args.weights:
            arrays["weights"] = np.array(args.weights)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        return
    value = "sum" if args.weights else "count"
    vfmt = "%.17g" if args.weights else "%d"
    if len(edges) == 1:
        e = edges[0]
        table = np.column_stack([e[:-1], e[1:], counts])
        np.savetxt(path, table, delimiter=",", header=f"{args.x}_lo,{args.x}_hi,{value}", comments="",
                   fmt=["%.17g", "%.17g", vfmt])
    else:
        xe, ye = edges
        ix, iy = np.meshgrid(np.arange(len(xe) - 1), np.arange(len(ye) - 1), indexing="ij")
        ix, iy = ix.ravel(), iy.ravel()
        table = np.column_stack([xe[ix], xe[ix + 1], ye[iy], ye[iy + 1], np.asarray(counts).ravel()])
        np.savetxt(path, table, delimiter=",", comments="",
                   header=f"{args.x}_lo,{args.x}_hi,{args.y}_lo,{args.y}_hi,{value}",
                   fmt=["%.17g"] * 4 + [vfmt])


def cmd_hist(args) -> int:
    import numpy as np

    if args.plot:
        _output_kind(args.plot, ("png",), option="--plot")
    if args.output:
        _output_kind(args.output, ("npz", "csv"))
    two_d = args.y is not None
    bins = args.bins if args.bins is not None else ([64] if not two_d else [128])
    if len(bins) > 2 or (len(bins) == 2 and not two_d):
        raise UsageError("--bins takes one number, or two (NX NY) for a 2-D histogram")
    if args.yrange is not None and not two_d:
        raise UsageError("--yrange needs a second column Y (2-D histogram)")
    ds = _open(args.dataset)
    species = _species_of(ds, args.step, args.species)
    cols = [args.x] + ([args.y] if two_d else []) + ([args.weights] if args.weights else [])
    _check_columns(ds, cols, args.step, species, "the histogram columns")
    kw = _selection_kwargs(args, species)
    if two_d:
        nb = (bins[0], bins[-1])
        rng = None if args.range is None and args.yrange is None else (args.range, args.yrange)
    else:
        nb = bins[0]
        rng = args.range
    t0 = time.perf_counter()
    res = ds.histogram(args.x, args.y, bins=nb, range=rng, weights=args.weights, **kw)
    dt = time.perf_counter() - t0
    counts, edges = res[0], list(res[1:])
    total = counts.sum()
    nonempty = int(np.count_nonzero(counts))
    what = _describe_selection(args)
    axes = " x ".join(f"{name} {len(e) - 1} bins [{_g(e[0])}, {_g(e[-1])}]" for name, e in
                      zip([args.x] + ([args.y] if two_d else []), edges))
    _out(f"histogram of {axes}" + (f", {what}" if what else "") + f"  ({_seconds(dt)})")
    if args.weights:
        _out(f"  total {_g(total)} (sum of {args.weights}), non-empty bins {_num(nonempty)} of {_num(counts.size)}")
    else:
        _out(f"  total {_num(total)} particles, non-empty bins {_num(nonempty)} of {_num(counts.size)}")
    if two_d:
        if nonempty:
            i, j = np.unravel_index(int(np.argmax(counts)), counts.shape)
            peak = _g(counts[i, j]) if args.weights else _num(counts[i, j])
            _out(f"  peak {peak} at {args.x} [{_g(edges[0][i])}, {_g(edges[0][i + 1])}), "
                 f"{args.y} [{_g(edges[1][j])}, {_g(edges[1][j + 1])})")
    else:
        for line in _text_bars(counts, edges[0], args.log):
            _out(line)
    if args.plot:
        title = f"{os.path.basename(os.path.normpath(ds.path))}, step {ds.step(args.step).index}, {species}"
        if what:
            title += "\n" + what
        _plot(args, ds, species, counts, edges, title)
        _out(f"wrote plot {args.plot}")
    if args.output:
        _save_hist(args.output, args, counts, edges)
        _out(f"wrote {args.output}")
    return 0


# ----------------------------------------------------------------------------------------------
# motes verify / version
# ----------------------------------------------------------------------------------------------
def cmd_verify(args) -> int:
    ds = _open(args.dataset)
    t0 = time.perf_counter()
    try:
        res = ds.verify(progress=_progress(args))
    except FormatError as e:
        _err(f"motes: error: verification FAILED: {e}")
        return 1
    dt = time.perf_counter() - t0
    _out(f"OK: {ds.path}: {res['files']} files in {res['steps']} steps verified "
         f"(all checksums match) in {_seconds(dt)}")
    return 0


def cmd_convert(args) -> int:
    from . import convert as conv

    read_options: dict = {}
    if args.where or args.box or args.quality is not None or args.columns:
        src_fmt = args.src_format or conv.detect_format(args.src, False)
        if src_fmt != "motes":
            raise UsageError("--where, --box, --quality and --columns select from a motes dataset; "
                             f"the source is {src_fmt}")
        read_options = {"where": args.where, "box": args.box,
                        "quality": 1.0 if args.quality is None else args.quality,
                        "columns": args.columns.split(",") if args.columns else None}
    if args.group:
        read_options["group"] = args.group
    if args.map:
        read_options["columns"] = dict(args.map)
    t0 = time.perf_counter()
    conv.convert(args.src, args.dst, src_format=args.src_format, dst_format=args.dst_format,
                 step=args.step, species=args.species, chunk_rows=args.chunk_rows, overwrite=args.overwrite,
                 progress=_progress(args), read_options=read_options)
    _out(f"converted {args.src} -> {args.dst} in {time.perf_counter() - t0:.2f} s")
    return 0


def cmd_version(args) -> int:
    import platform

    import numpy as np

    _out(f"motes {__version__}")
    _out(f"python {platform.python_version()}, numpy {np.__version__}")
    return 0


# ----------------------------------------------------------------------------------------------
# argument parser
# ----------------------------------------------------------------------------------------------
class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the layout of descriptions/epilogs; shows meaningful defaults."""

    def _get_help_string(self, action):
        h = action.help or ""
        d = action.default
        if ("default" in h or d is None or d is False or d is argparse.SUPPRESS or not action.option_strings
                or isinstance(d, list)):
            return h
        return h + " (default: %(default)s)"


def _sub(subs, name: str, help: str, description: str, epilog: str):
    return subs.add_parser(name, help=help, description=description, epilog="examples:\n" + epilog,
                           formatter_class=_Formatter)


def _add_selection(p) -> None:
    g = p.add_argument_group("selection")
    g.add_argument("-w", "--where", metavar="EXPR", default=None,
                   help="filter expression, e.g. \"energy > 1.3 and 10 < x < 20\" (and, or, not, parentheses, "
                        "comparisons (chained: 1 < x < 2), arithmetic + - * / **, abs sqrt exp log log10 sin cos tan)")
    g.add_argument("--box", nargs=6, type=float, metavar=("XMIN", "YMIN", "ZMIN", "XMAX", "YMAX", "ZMAX"),
                   help="spatial box, bounds inclusive")
    q = g.add_mutually_exclusive_group()
    q.add_argument("--quality", type=_quality_arg, metavar="Q", default=None,
                   help="level of detail in [0, 1], linear in tree levels so the particle count grows "
                        "exponentially with Q: a spread-out sample of real particles (0: none, default 1: every particle)")
    q.add_argument("--quality-range", type=_quality_arg, nargs=2, metavar=("Q0", "Q1"), default=None,
                   help="only the particles that quality Q1 adds to quality Q0 (progressive refinement)")
    g.add_argument("--step", type=int, default=None, help="step index (default: the last step)")
    g.add_argument("--species", default=None, help="species name (needed when the step has several)")
    g.add_argument("--threads", type=_nonneg_int, default=0, help="worker threads, 0 for all cores")


def _add_write_options(p) -> None:
    g = p.add_argument_group("writing")
    g.add_argument("--step", type=int, default=None,
                   help="step index to write (default: 0 for a new dataset, else last step + 1)")
    g.add_argument("--time", type=float, default=0.0, help="physical time of the step")
    g.add_argument("--species", default="particles", help="species name")
    g.add_argument("--index", type=_key_value, action="append", metavar="COL=KIND",
                   help="extra index for a column: auto, none or quantile (repeatable; auto builds a quantile "
                        "index for spatially incoherent columns)")
    g.add_argument("--unit", type=_key_value, action="append", metavar="COL=UNIT",
                   help="physical unit of a column, stored in the schema (repeatable)")
    g.add_argument("--leaf-size", type=_positive_int, default=512, help="particles per leaf of the spatial tree")
    g.add_argument("--lod-count", type=_positive_int, default=8, help="sample (level-of-detail) particles kept by each inner tree node")
    g.add_argument("--threads", type=_nonneg_int, default=0, help="worker threads, 0 for all cores")
    _add_progress(g)


def _add_progress(g) -> None:
    g.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show progress bars on stderr (default: when stderr is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    from .synth import GENERATORS

    parser = argparse.ArgumentParser(
        prog="motes",
        formatter_class=_Formatter,
        description="motes: parallel I/O, indexing and exploration of particle simulation data.\n\n"
                    "A dataset is a directory of steps; each step holds one file per particle species,\n"
                    "laid out in a spatial tree with levels of detail and indexes for fast queries.",
        epilog="examples:\n"
               "  motes generate vpic 1M run.motes --with-id      # a synthetic demo dataset\n"
               "  motes write run.motes particles.parquet --step 10 --time 2.5\n"
               "  motes info run.motes\n"
               "  motes query run.motes --where 'energy > 1.3' --columns x,y,z,energy -o hot.parquet\n"
               "  motes hist run.motes x y --bins 256 128 --log --plot xy.png\n"
               "  motes verify run.motes\n\n"
               "Run 'motes COMMAND --help' for the options of a command.\n"
               "Exit status: 0 success, 1 format or I/O error, 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"motes {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    # info
    p = _sub(subs, "info", "describe a dataset: steps, species, columns, sizes",
             "Describes a dataset: its steps (index, time), species and particle counts, and for the\n"
             "files of one step (default: the last; --all: every step) the columns (dtype, index kind,\n"
             "unit, min/max), spatial bounds, file sizes (data, index, fine index, padding, overhead)\n"
             "and the spatial tree (levels, nodes).",
             "  motes info run.motes\n"
             "  motes info run.motes --step 0 --species ions\n"
             "  motes info run.motes --json | jq '.files[0].columns'")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    p.add_argument("--step", type=int, default=None, help="step whose files are described (default: last)")
    p.add_argument("--species", default=None, help="describe only this species")
    p.add_argument("--all", action="store_true", help="describe the files of every step")
    p.set_defaults(func=cmd_info)

    # write
    p = _sub(subs, "write", "write a step from a .npz, .csv or .parquet file",
             "Writes the particles of INPUT as one step (one species) of DATASET, creating the dataset\n"
             "when absent. INPUT is .npz (one array per column), .csv (header row with the column\n"
             "names) or .parquet. Columns x, y and z are required; all columns must be numeric\n"
             "(booleans are stored as uint8, integer positions as float64).",
             "  motes write run.motes step0.npz\n"
             "  motes write run.motes electrons.parquet --step 3 --time 0.75 --species electrons\n"
             "  motes write run.motes table.csv --index energy=quantile --unit energy=keV --leaf-size 1024")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory (created when absent)")
    p.add_argument("input", metavar="INPUT", help="input file: .npz, .csv or .parquet")
    _add_write_options(p)
    p.set_defaults(func=cmd_write)

    # query
    p = _sub(subs, "query", "select particles by expression, box and quality",
             "Selects the particles matching an expression, a spatial box and a level of detail.\n"
             "Without -o, prints the first --limit rows and the number of matches; with -o, writes\n"
             "every match (or the first --limit) to a .npz, .csv or .parquet file (csv and parquet\n"
             "are written in batches, so memory stays bounded).",
             "  motes query run.motes --where 'energy > 1.3' --limit 10\n"
             "  motes query run.motes --where 'energy > 1.3' --count\n"
             "  motes query run.motes --box 0 40 0 100 60 50 --quality 0.1 -o slab.npz\n"
             "  motes query run.motes --where 'q < 0 and ux > 0.2' --columns id,x,y,z,ux -o fast.parquet\n"
             "  motes query run.motes --step 0 --species ions --quality-range 0.1 0.2 -o more.csv")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    _add_selection(p)
    g = p.add_argument_group("output")
    g.add_argument("--columns", metavar="A,B,C", default=None, help="comma-separated columns (default: all)")
    g.add_argument("-o", "--output", metavar="OUT", default=None, help="write to OUT.npz, OUT.csv or OUT.parquet")
    g.add_argument("--limit", type=_nonneg_int, default=None,
                   help="rows to print (default 20); with -o, the most rows to write (default: all)")
    g.add_argument("--count", action="store_true", help="print only the number of matching particles")
    g.add_argument("--batch-size", type=_positive_int, default=1 << 20,
                   help="rows per batch when writing csv/parquet")
    g.add_argument("-v", "--verbose", action="store_true", help="also print how much the indexes pruned")
    p.set_defaults(func=cmd_query)

    # hist
    p = _sub(subs, "hist", "1-D or 2-D histogram of the selected particles",
             "Histograms column X (or X against Y) over the selected particles, computed while\n"
             "traversing the file (nothing is copied). Prints the total, the number of non-empty\n"
             "bins and, in 1-D, a text bar chart; --plot writes a PNG (needs matplotlib), -o saves\n"
             "the counts and bin edges. Ranges default to the min/max of the selected values; like\n"
             "numpy.histogram, bins are half-open except the last, which includes its right edge.",
             "  motes hist run.motes energy --bins 100 --log\n"
             "  motes hist run.motes energy --where 'q < 0' --range 0 2 --plot energy.png -o energy.npz\n"
             "  motes hist run.motes x y --bins 256 128 --log --plot xy.png\n"
             "  motes hist run.motes x uz --weights energy --box 60 45 0 100 55 50 -o xuz.csv")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    p.add_argument("x", metavar="X", help="column on the x axis")
    p.add_argument("y", metavar="Y", nargs="?", default=None, help="column on the y axis (2-D histogram)")
    g = p.add_argument_group("binning")
    g.add_argument("--bins", type=_positive_int, nargs="+", metavar="N", default=None,
                   help="number of bins: N, or NX NY in 2-D (default: 64 in 1-D, 128 per axis in 2-D)")
    g.add_argument("--range", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="range of X (default: min/max of the selected values)")
    g.add_argument("--yrange", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="range of Y (default: min/max of the selected values)")
    g.add_argument("--weights", metavar="COL", default=None, help="sum this column instead of counting")
    _add_selection(p)
    g = p.add_argument_group("output")
    g.add_argument("--plot", metavar="OUT.png", default=None, help="write a PNG plot (needs matplotlib)")
    g.add_argument("--log", action="store_true", help="logarithmic count scale (plot and text chart)")
    g.add_argument("--dpi", type=_positive_int, default=120, help="resolution of the plot")
    g.add_argument("-o", "--output", metavar="OUT", default=None,
                   help="save counts and edges to OUT.npz (counts, edges | xedges, yedges) or OUT.csv")
    p.set_defaults(func=cmd_hist)

    # verify
    p = _sub(subs, "verify", "check every checksum of a dataset",
             "Reads every file of every step and checks all checksums (headers, index sections, data\n"
             "blocks). Prints OK, or the first mismatch (file, column, block) and exits with status 1.",
             "  motes verify run.motes\n"
             "  motes verify run.motes --no-progress && echo intact")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    _add_progress(p)
    p.set_defaults(func=cmd_verify)

    # generate
    kinds = sorted(GENERATORS)
    p = _sub(subs, "generate", "write a synthetic dataset (for demos and benchmarks)",
             "Writes N synthetic particles from motes.synth as one step of DATASET. Kinds:\n"
             "  uniform    uniform positions in the unit cube, normal momenta\n"
             "  clustered  Gaussian blobs + filaments + 1% background in the unit cube\n"
             "  vpic       VPIC-like reconnection plasma in a 200 x 100 x 50 box\n"
             "  wide       uniform positions plus 14 float64 attributes\n"
             "Data are deterministic for a given seed.",
             "  motes generate vpic 1M run.motes --with-id\n"
             "  motes generate clustered 200k demo.motes --seed 7 --step 0\n"
             "  for s in 0 1 2; do motes generate uniform 1e5 series.motes --seed $s --time $s; done")
    p.add_argument("kind", metavar="KIND", choices=kinds, help="generator: " + ", ".join(kinds))
    p.add_argument("n", metavar="N", type=_count_arg, help="number of particles (e.g. 100000, 1e6, 250k, 2M)")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory (created when absent)")
    g = p.add_argument_group("data")
    g.add_argument("--seed", type=int, default=0, help="random seed")
    g.add_argument("--with-id", action="store_true", help="add an 'id' column (uint64 permutation of 0..N-1)")
    g.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="dtype of x, y, z")
    _add_write_options(p)
    p.set_defaults(func=cmd_generate)

    # version
    p = _sub(subs, "version", "print the version", "Prints the versions of motes, Python and numpy.",
             "  motes version")
    p.set_defaults(func=cmd_version)
    # convert
    p = _sub(subs, "convert", "convert between motes and openPMD, H5Part, HDF5, VTKHDF, Parquet, Arrow, CSV, NPZ",
             "Converts SRC into DST, streaming in chunks of --chunk-rows rows (bounded memory). Formats\n"
             "come from the names (.motes, .h5part, .vtkhdf, .parquet, .arrow/.feather, .csv, .npz; a\n"
             "path with %T is a file-based openPMD series) or, for existing .h5 files, from their\n"
             "content (openPMD, H5Part or plain HDF5); --from/--to choose explicitly. DST appears only\n"
             "once complete: a failed conversion leaves nothing. From a motes dataset, --where, --box,\n"
             "--quality and --columns export a query result or a preview.",
             "  motes convert run_%T.h5 run.motes                     # openPMD series -> motes\n"
             "  motes convert sim.h5part run.motes\n"
             "  motes convert run.motes out.h5 --to openpmd           # openPMD with particle patches\n"
             "  motes convert run.motes preview.vtkhdf --quality 0.6   # open in ParaView\n"
             "  motes convert run.motes hot.parquet --step 10 --where 'energy > 1.3'\n"
             "  motes convert dump.h5 run.motes --from hdf5 --group /particles --map x=px --map y=py --map z=pz")
    p.add_argument("src", metavar="SRC", help="source file, series pattern or dataset")
    p.add_argument("dst", metavar="DST", help="destination (must not exist unless --overwrite)")
    p.add_argument("--from", dest="src_format", default=None, metavar="FORMAT",
                   help="source format: motes, openpmd, h5part, hdf5, parquet, arrow, csv, npz")
    p.add_argument("--to", dest="dst_format", default=None, metavar="FORMAT",
                   help="destination format: motes, openpmd, h5part, vtkhdf, parquet, arrow, csv, npz")
    p.add_argument("--step", type=int, action="append", default=None, help="keep this step (repeatable)")
    p.add_argument("--species", action="append", default=None, help="keep this species (repeatable)")
    p.add_argument("-w", "--where", metavar="EXPR", default=None, help="motes source: filter expression")
    p.add_argument("--box", nargs=6, type=float, metavar=("XMIN", "YMIN", "ZMIN", "XMAX", "YMAX", "ZMAX"),
                   help="motes source: spatial box, bounds inclusive")
    p.add_argument("--quality", type=_quality_arg, default=None, metavar="Q",
                   help="motes source: level of detail in [0, 1] (a preview)")
    p.add_argument("--columns", metavar="A,B,C", default=None, help="motes source: columns to export")
    p.add_argument("--group", default=None, help="plain HDF5 source: the group holding the datasets")
    p.add_argument("--map", type=_key_value, action="append", metavar="COL=DATASET",
                   help="plain HDF5 source: motes column from a dataset of the group (repeatable)")
    p.add_argument("--chunk-rows", type=_positive_int, default=1 << 20, help="rows per chunk")
    p.add_argument("--overwrite", action="store_true", help="replace DST if it exists")
    _add_progress(p)
    p.set_defaults(func=cmd_convert)

    return parser


# ----------------------------------------------------------------------------------------------
# entry point
# ----------------------------------------------------------------------------------------------
def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``motes`` command line; returns the exit status (never raises for user errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as e:  # --help, --version, argument errors (argparse printed the message)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `motes query ... | head`
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0
    except KeyboardInterrupt:
        _err("motes: interrupted")
        return 130
    except CliError as e:
        _err(f"motes: error: {e}")
        return e.status
    except UsageError as e:
        _err(f"motes: error: {e}")
        return 2
    except (FormatError, MotesError) as e:
        _err(f"motes: error: {e}")
        return 1
    except FileNotFoundError as e:
        msg = str(e) if not e.filename else f"no such file or directory: '{e.filename}'"
        _err(f"motes: error: {msg}")
        return 1
    except OSError as e:
        msg = f"{e.strerror}: '{e.filename}'" if e.filename and e.strerror else str(e)
        _err(f"motes: error: {msg}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
