"""numpy ``.npz`` archives as written by simulation codes and by motes, streamed member by
member (no member is ever loaded whole by ``read``).

What a member becomes, by its shape:

* 1-D: a column of the one species (name = member name);
* (n, 3) named ``pos``, ``position(s)``, ``coord(s)``, ``coordinate(s)`` or ``xyz``: the
  columns ``x``, ``y``, ``z``;
* 0-d (a scalar, as pysco and FBPIC store the redshift, time, box length, iteration): a
  step attribute; the one named ``time`` (or the one given as ``time_from``) is also the
  step's time, and an integer ``step`` or ``iteration`` its index;
* ``__motes__``: the metadata a motes export writes (step, time, species, attributes,
  units), which takes precedence over the scalars;
* anything else (other 2-D arrays, objects): skipped with a :class:`ConversionWarning`
  naming it.

:func:`contents` and :func:`step_metadata` are the one reading of an archive's layout;
``motes write`` uses them too, so both commands take the same files the same way.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from ...errors import FormatError, UsageError, storage_error
from ..base import POSITION_NAMES, Species, Step, check_dtype, single_species, table_metadata, warn

META_MEMBER = "__motes__"
STEP_NAMES = ("step", "iteration")  # scalars that give the step index, in this order


@dataclass
class Contents:
    """The layout of an archive: its columns (name -> (member, dtype, component or None)),
    its scalars (JSON values), the motes metadata, and the row count."""

    path: str
    columns: Dict[str, Tuple[str, np.dtype, Optional[int]]] = field(default_factory=dict)
    scalars: Dict[str, Any] = field(default_factory=dict)
    meta: Dict[str, Any] = field(default_factory=dict)
    count: int = 0


def _header(f) -> Tuple[np.dtype, Tuple[int, ...], bool]:
    version = np.lib.format.read_magic(f)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read(f)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):  # numpy's header reader lets it through; every use of it would fail
        raise ValueError(f"its header declares the shape {shape}, with a negative length")
    return np.dtype(dtype), shape, bool(fortran)


def _json_scalar(path: str, name: str, value: np.ndarray) -> Any:
    """A 0-d member as a JSON value; None (with a warning) when it has no JSON form."""
    v = value.item() if value.dtype.kind != "V" else None
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, float) and not math.isfinite(v):
        warn(f"{path}: scalar '{name}' is {v}, which JSON attributes cannot hold; kept as the string '{v}'")
        return str(v)
    if v is None or isinstance(v, complex) or not isinstance(v, (bool, int, float, str)):
        warn(f"{path}: scalar '{name}' of dtype {value.dtype} skipped: not a number or text")
        return None
    return v


@contextlib.contextmanager
def _damage_is_a_format_error(path: str):
    """What the zip and npy layers raise for a damaged archive, as a FormatError naming it."""
    try:
        yield
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, ValueError, KeyError,
            NotImplementedError, UnicodeDecodeError) as e:
        if isinstance(e, (FormatError, UsageError)):
            raise
        raise FormatError(f"{path}: damaged .npz archive ({type(e).__name__}: {e or 'truncated'})") from None
    except OSError as e:
        if e.errno != errno.EINVAL:  # a real I/O error stays one
            raise
        # A damaged directory makes zipfile seek before the start of the file.
        raise FormatError(f"{path}: damaged .npz archive (an offset outside the file: {e})") from None


def contents(path: str) -> Contents:
    """Reads the headers of every member (and the values of the 0-d ones)."""
    with _damage_is_a_format_error(path):
        return _contents(path)


def _contents(path: str) -> Contents:
    try:
        zf = zipfile.ZipFile(path)
    except OSError as e:
        if e.errno is not None:
            raise storage_error(e, path, "cannot read") from e
        raise FormatError(f"{path}: not an .npz file ({e})") from None
    except zipfile.BadZipFile as e:
        raise FormatError(f"{path}: not an .npz file ({e})") from None
    out = Contents(path)
    lengths: Dict[str, int] = {}
    skipped: List[str] = []
    with zf:
        for member in zf.namelist():
            if not member.endswith(".npy"):
                continue
            name = member[:-4]
            with zf.open(member) as f:
                try:
                    dt, shape, fortran = _header(f)
                except ValueError as e:
                    raise FormatError(f"{path}: member {member} is not a numpy array ({e})") from None
                if name == META_MEMBER:
                    raw = f.read(int(np.prod(shape)) * dt.itemsize)
                    try:
                        out.meta = json.loads(raw.decode("utf-8"))
                    except (UnicodeDecodeError, ValueError) as e:
                        raise FormatError(f"{path}: member {META_MEMBER} is not motes metadata ({e})") from None
                    continue
                if shape == ():
                    if dt.hasobject:
                        skipped.append(f"{name} (a Python object)")
                        continue
                    value = np.frombuffer(f.read(dt.itemsize), dtype=dt).reshape(())
                    if name in ("x", "y", "z"):
                        raise UsageError(f"{path}: '{name}' is a single value (0-d member), not a column of positions")
                    v = _json_scalar(path, name, value)
                    if v is not None:
                        out.scalars[name] = v
                    continue
            if len(shape) == 1 and not dt.hasobject:
                out.columns[name] = (member, check_dtype(path, name, dt), None)
                lengths[name] = shape[0]
            elif len(shape) == 2 and shape[1] == 3 and name.lower() in POSITION_NAMES and not fortran \
                    and not dt.hasobject:
                for k, axis in enumerate("xyz"):
                    out.columns[axis] = (member, check_dtype(path, name, dt), k)
                    lengths[axis] = shape[0]
            else:
                skipped.append(f"{name} (shape {list(shape)}, dtype {dt})")
    if skipped:
        warn(f"{path}: skipped members that are neither columns nor scalars: {', '.join(skipped)}")
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise UsageError(f"{path}: columns have unequal lengths ({detail})")
    out.count = next(iter(lengths.values()), 0)
    return out


def step_metadata(c: Contents, time_from: Optional[str] = None) -> Dict[str, Any]:
    """index (or None), time (or None), species (or None), attributes and units of the
    archive's step: from the motes metadata, else from its scalars."""
    meta = c.meta
    attributes = dict(meta.get("attributes", c.scalars if not meta else {}))
    if meta and c.scalars:  # scalars beside motes metadata: kept too
        attributes.update(c.scalars)
    time = meta.get("time")
    if time_from is not None:
        if time_from not in c.scalars:
            raise UsageError(f"{c.path}: no scalar '{time_from}' for the step time "
                             f"(scalars: {', '.join(c.scalars) or 'none'})")
        time = c.scalars[time_from]
    elif time is None and "time" in c.scalars:
        time = c.scalars["time"]
    if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float))):
        raise UsageError(f"{c.path}: the step time must be a number, got {time!r}")
    index = meta.get("step")
    for name in STEP_NAMES:
        v = c.scalars.get(name)
        if index is None and isinstance(v, int) and not isinstance(v, bool):
            index = v
    return {"index": index, "time": None if time is None else float(time), "species": meta.get("species"),
            "attributes": attributes, "units": dict(meta.get("units", {})),
            "species_attributes": meta.get("species_attributes", {})}


def load_columns(c: Contents) -> Dict[str, np.ndarray]:
    """Every column, whole (for ``motes write``, which writes from memory)."""
    out: Dict[str, np.ndarray] = {}
    with _damage_is_a_format_error(c.path), np.load(c.path, allow_pickle=False) as z:
        arrays = {}
        for name, (member, dt, k) in c.columns.items():
            key = member[:-4]
            if key not in arrays:
                arrays[key] = z[key]
            a = arrays[key] if k is None else arrays[key][:, k]
            out[name] = np.asarray(a, dtype=dt)
    return out


def read(path: str, *, chunk_rows: int, time_from: Optional[str] = None) -> Iterator[Step]:
    """The archive's one step (see the module docstring for what becomes what)."""
    c = contents(path)
    m = step_metadata(c, time_from)
    cols = [(name, dt) for name, (_, dt, _) in c.columns.items()]
    count = c.count

    def chunks():
        with _damage_is_a_format_error(path):
            yield from _chunks()

    def _chunks():
        with zipfile.ZipFile(path) as z:
            handles: Dict[str, Any] = {}
            try:
                for name, (member, _, _) in c.columns.items():
                    if member not in handles:
                        h = z.open(member)
                        file_dt, shape, _ = _header(h)
                        handles[member] = (h, file_dt, int(np.prod(shape[1:])) if len(shape) > 1 else 1)
                for start in range(0, count, chunk_rows):
                    n = min(chunk_rows, count - start)
                    rows = {}
                    for member, (h, file_dt, width) in handles.items():
                        raw = h.read(n * width * file_dt.itemsize)
                        if len(raw) != n * width * file_dt.itemsize:
                            raise FormatError(f"{path}: member {member} ends at row {start + len(raw) // max(1, width * file_dt.itemsize)} "
                                              f"of {count} (a truncated archive)")
                        rows[member] = np.frombuffer(raw, dtype=file_dt).reshape(n, width) if width > 1 else \
                            np.frombuffer(raw, dtype=file_dt)
                    out = {}
                    for name, (member, dt, k) in c.columns.items():
                        a = rows[member] if k is None else rows[member][:, k]
                        out[name] = np.asarray(a, dtype=dt)
                    yield out
            finally:
                for h, _, _ in handles.values():
                    h.close()

    name = m["species"] or "particles"
    sp = Species(name, cols, count, chunks, m["units"], m["species_attributes"])
    index = m["index"]  # None: the archive does not say (convert numbers it)
    missing = "" if m["time"] is not None else \
        f"no scalar 'time' (scalars: {', '.join(c.scalars) or 'none'}) and no motes metadata"
    yield Step(None if index is None else int(index), float(m["time"] or 0.0), m["attributes"], {name: sp},
               time_missing=missing)


def write(path: str, steps: Iterable[Step], **options) -> None:
    """One species of one step, a member per column (one pass over the source per column),
    and the metadata as the ``__motes__`` member (with the units, so ``motes write`` and
    ``motes convert`` take the archive back identically)."""
    if options:
        raise UsageError(f"npz destinations take no options (got {', '.join(options)})")
    st, sp = single_species(steps, path)
    meta = table_metadata(st, sp)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, dt in sp.columns:
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
        data = np.frombuffer(json.dumps({**meta, "units": sp.units}).encode(), dtype=np.uint8)
        with zf.open(META_MEMBER + ".npy", "w") as f:
            np.lib.format.write_array(f, data)
