"""Generic HDF5 import: one group of equal-length 1-D datasets becomes one step of one species.

>>> from motes.convert import hdf5
>>> steps = hdf5.read("sim.h5", group="/particles",
...                   columns={"x": "pos_x", "y": "pos_y", "z": "pos_z", "energy": "E"})

Without ``columns`` every 1-D numeric dataset directly in the group is taken under its own
name, and a dataset of shape (n, 3) called ``pos``, ``position(s)``, ``coord(s)``,
``coordinate(s)`` or ``xyz`` is split into ``x``, ``y``, ``z``. Other datasets (2-D arrays,
scalars, strings, compound types) are skipped with a warning naming them. With ``columns``
exactly the mapped datasets are taken; a path may end in ``[k]`` to take column ``k`` of an
(n, m) dataset, e.g. ``{"x": "pos[0]", "y": "pos[1]", "z": "pos[2]"}``.

This module also holds the small HDF5 helpers shared by the H5Part and VTKHDF converters
(opening files with clear errors, attribute <-> JSON conversion).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import numpy as np

from ...dtypes import SUMMARY
from ...errors import FormatError, MotesError, NotFoundError, UsageError, storage_error
from ..base import DEFAULT_CHUNK_ROWS, POSITION_NAMES, Species, Step, check_dtype, chunked_arrays, warn
from ..spelling import option
from . import links as hdf5_links
from ..input_files import check_regular

try:  # h5py is an optional dependency of motes (extra "convert")
    import h5py
except ImportError:  # pragma: no cover - exercised only without h5py
    h5py = None

__all__ = ["read"]


# ----------------------------------------------------------------------------------------
# helpers shared with h5part.py and vtkhdf.py


def require_h5py():
    if h5py is None:
        raise UsageError("HDF5 conversions need h5py (pip install h5py, or pip install 'motes[convert]')")
    return h5py


def open_file(path, mode: str = "r"):
    """h5py.File with UsageError for a missing file and FormatError for a file that is not HDF5."""
    require_h5py()
    path = os.fspath(path)
    if mode == "r":
        if not os.path.exists(path):
            raise NotFoundError(f"{path}: no such file", filename=path)
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory, not an HDF5 file")
        check_regular(path, "HDF5 file", UsageError)  # opening a FIFO would block
        try:
            f = h5py.File(path, "r")
        except OSError as e:  # h5py sets errno for failures of the file system, not for bad content
            if e.errno is not None:
                raise storage_error(e, path, "cannot read") from e
            raise FormatError(f"{path}: not an HDF5 file ({e})") from None
        try:
            hdf5_links.check(path, f)  # no external link, virtual source or raw file outside its folder
        except BaseException:
            f.close()
            raise
        return f
    try:
        return h5py.File(path, mode)
    except OSError as e:
        raise storage_error(e, path, "cannot create the file") from e


_ERRNO = re.compile(r"errno = (\d+)")


def _failed_write(e: BaseException, path: str):
    """The StorageError for an h5py write failure that is a failed system call (disk full,
    file too large, ...): h5py raises OSError or RuntimeError, with the errno in the text."""
    if isinstance(e, MotesError) or not isinstance(e, (OSError, RuntimeError)):
        return None
    n = e.errno if isinstance(e, OSError) and e.errno else None
    if n is None:
        m = _ERRNO.search(str(e))
        n = int(m.group(1)) if m is not None else 0
    if not n:
        return None
    return storage_error(OSError(n, os.strerror(n)), path, "cannot write")  # HDF5's text: a page of internals


# HDF5 filters an export may use. "gzip" is built into every HDF5; "zstd" and "blosc2" are
# the registered filters of hdf5plugin (ids 32015 and 32026): readers need the plugin too
# (`import hdf5plugin` in Python, HDF5_PLUGIN_PATH elsewhere). Values are byte-shuffled first.
H5_COMPRESSIONS = ("none", "gzip", "zstd", "blosc2")
H5_CHUNK_ROWS = 1 << 18


def h5_filter(compression: str) -> Dict[str, Any]:
    """create_dataset keywords of an export's compression (chunks are the caller's)."""
    if compression not in H5_COMPRESSIONS:
        raise UsageError(f"HDF5 compression must be one of {', '.join(H5_COMPRESSIONS)}, got {compression!r}")
    if compression == "none":
        return {}
    if compression == "gzip":
        return {"compression": "gzip", "compression_opts": 1, "shuffle": True}
    try:
        import hdf5plugin
    except ImportError:
        raise UsageError(f"HDF5 compression '{compression}' needs the hdf5plugin package (pip install hdf5plugin)") from None
    if compression == "zstd":
        return {"shuffle": True, **hdf5plugin.Zstd(clevel=1)}
    return dict(hdf5plugin.Blosc2(cname="zstd", clevel=1, filters=hdf5plugin.Blosc2.SHUFFLE))


@contextlib.contextmanager
def created_file(path):
    """A new HDF5 file for writing; closed at the end, and removed when the block (or the
    close, which flushes) fails. Failed system calls surface as motes.StorageError."""
    f = open_file(path, "w")
    try:
        yield f
        f.close()
    except BaseException as e:
        try:
            f.close()
        except Exception:  # noqa: BLE001 - the first error is the one to report
            pass
        try:
            os.remove(path)
        except OSError:
            pass
        failed = _failed_write(e, path)
        if failed is not None:
            raise failed from e
        raise


def attr_to_json(value: Any) -> Any:
    """An HDF5 attribute value as plain JSON-able Python (numbers, strings, lists)."""
    if h5py is not None and isinstance(value, h5py.Empty):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SO":
            return [attr_to_json(v) for v in value.tolist()]
        if value.dtype.names is not None or value.dtype.kind not in "biufU":
            return str(value.tolist())
        return value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, complex):
            return str(value)
        return value
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _native_attr(value: Any) -> Optional[Any]:
    """The value to store as a plain HDF5 attribute, or None when it needs JSON text.

    Plain: str, int (int64 range), float, and non-empty flat lists of only ints or only floats.
    Everything else (bool, None, dicts, nested or mixed lists, empty lists) goes as JSON text."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return np.int64(value) if -(1 << 63) <= value < (1 << 63) else None
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            if all(-(1 << 63) <= v < (1 << 63) for v in value):
                return np.asarray(value, dtype=np.int64)
            return None
        if all(isinstance(v, float) for v in value):
            return np.asarray(value, dtype=np.float64)
    return None


def write_attributes(obj, attributes: Mapping[str, Any], where: str, json_attr: str,
                     reserved: Iterable[str] = ()) -> None:
    """Writes a JSON-able dict as HDF5 attributes of ``obj``: strings, numbers and flat numeric
    lists natively, anything else as JSON text; the names of the JSON ones are listed in the
    attribute ``json_attr`` so that reading gives back exactly the same values."""
    reserved = set(reserved) | {json_attr}
    as_json: List[str] = []
    for key, value in attributes.items():
        key = str(key)
        if key in reserved:
            raise UsageError(f"{where}: attribute name '{key}' is reserved by this format")
        if "/" in key or not key:
            raise UsageError(f"{where}: attribute name {key!r} cannot be stored in HDF5")
        native = _native_attr(value)
        if native is None:
            try:
                native = json.dumps(value)
            except (TypeError, ValueError) as e:
                raise UsageError(f"{where}: attribute '{key}' is not JSON-serialisable ({e})") from None
            as_json.append(key)
        try:
            obj.attrs[key] = native
        except (OSError, ValueError, TypeError) as e:
            raise UsageError(f"{where}: cannot store attribute '{key}' ({e})") from None
    if as_json:
        obj.attrs[json_attr] = json.dumps(as_json)


def read_attributes(obj, json_attr: str, skip: Iterable[str] = ()) -> Dict[str, Any]:
    """Inverse of :func:`write_attributes` (also reads foreign attributes as plain JSON-able values)."""
    skip = set(skip) | {json_attr}
    as_json: List[str] = []
    if json_attr in obj.attrs:
        try:
            as_json = list(json.loads(attr_to_json(obj.attrs[json_attr])))
        except (ValueError, TypeError):
            as_json = []
    out: Dict[str, Any] = {}
    for key in obj.attrs:
        if key in skip:
            continue
        try:
            value = attr_to_json(obj.attrs[key])
        except (OSError, TypeError, ValueError):  # unreadable attribute type: keep its name only
            value = None
        if key in as_json and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out


def unit_of(ds) -> Optional[str]:
    """The unit text of a dataset: its ``unit`` (or ``units``) string attribute."""
    for name in ("unit", "units"):
        if name in ds.attrs:
            value = attr_to_json(ds.attrs[name])
            if isinstance(value, str):
                return value
    return None


def dtype_of(where: str, name: str, ds) -> np.dtype:
    """motes dtype for an HDF5 dataset (bool -> uint8, big-endian -> native); UsageError otherwise."""
    dt = ds.dtype
    kind = getattr(dt, "kind", "?")
    if dt.names is not None:
        raise UsageError(f"{where}: dataset '{name}' has a compound type {dt} "
                         f"(motes stores {SUMMARY})")
    if kind in "SUOV" or h5py.check_string_dtype(dt) is not None or h5py.check_vlen_dtype(dt) is not None:
        raise UsageError(f"{where}: dataset '{name}' holds strings or variable-length data ({dt}), "
                         f"which motes cannot store ({SUMMARY} only)")
    if h5py.check_enum_dtype(dt) is not None and dt != np.bool_:
        dt = np.dtype(dt.str)
    if kind == "f" and dt.itemsize == 2:  # half precision: widened losslessly
        return np.dtype(np.float32)
    return check_dtype(where, name, dt)


class _Column:
    """A sliceable 1-D view of a dataset: column ``k`` of an (n, m) dataset, cast to ``dtype``."""

    def __init__(self, ds, k: Optional[int], dtype: np.dtype):
        self.ds, self.k, self.dtype = ds, k, np.dtype(dtype)
        self.shape = (int(ds.shape[0]),)

    def __getitem__(self, sl):
        a = self.ds[sl] if self.k is None else self.ds[sl, self.k]
        return np.asarray(a).astype(self.dtype, copy=False)


def file_chunks(path: str, group: str, sources: List[Tuple[str, str, Optional[int], np.dtype]],
                count: int, chunk_rows: int):
    """chunks() that opens the file on each call and reads only each chunk's rows.

    sources: (column, dataset path in group, column index or None, target dtype)."""

    def gen():
        with open_file(path) as f:
            g = f[group]
            arrays = {col: _Column(g[ds], k, dt) for col, ds, k, dt in sources}
            yield from chunked_arrays(arrays, count, chunk_rows)()

    return gen


def check_chunk_rows(chunk_rows) -> int:
    try:
        n = int(chunk_rows)
    except (TypeError, ValueError):
        n = 0
    if n <= 0 or n != chunk_rows:
        raise UsageError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return n


# ----------------------------------------------------------------------------------------
# generic import

_COLUMN_SUFFIX = re.compile(r"^(.*)\[(\d+)\]$")


def _map_option() -> str:
    """How the reader's caller maps columns to datasets."""
    return option("columns=", "--map COL=DATASET")


def _auto_sources(path: str, gname: str, g) -> List[Tuple[str, str, Optional[int], np.dtype, Any]]:
    where = f"{path}:{gname}"
    out, skipped = [], []
    for name in g:
        try:
            obj = g[name]
        except (KeyError, OSError):  # dangling link
            skipped.append(f"{name} (broken link)")
            continue
        if not isinstance(obj, h5py.Dataset):
            continue
        shape = obj.shape
        if shape is None or len(shape) == 0:
            skipped.append(f"{name} (scalar)")
            continue
        try:
            dt = dtype_of(where, name, obj)
        except UsageError:
            skipped.append(f"{name} (type {obj.dtype})")
            continue
        if len(shape) == 1:
            out.append((name, name, None, dt, obj))
        elif len(shape) == 2 and shape[1] == 3 and name.lower() in POSITION_NAMES:
            for k, axis in enumerate("xyz"):
                out.append((axis, name, k, dt, obj))
        else:
            skipped.append(f"{name} (shape {shape})")
    if skipped:
        warn(f"{where}: skipped datasets that are not 1-D numeric columns: {', '.join(skipped)} "
             f"(pass {_map_option()} to choose datasets explicitly)", stacklevel=3)
    names = [c for c, *_ in out]
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise UsageError(f"{where}: column name(s) {', '.join(dup)} come from more than one dataset "
                         f"(an (n, 3) position dataset is split into x, y, z); pass {_map_option()} to choose")
    return out


def _mapped_sources(path: str, gname: str, g, columns: Mapping[str, str]):
    where = f"{path}:{gname}"
    out = []
    for col, dspath in columns.items():
        if not isinstance(col, str) or not col:
            raise UsageError(f"columns: motes column names must be non-empty strings, got {col!r}")
        if not isinstance(dspath, str) or not dspath:
            raise UsageError(f"columns: dataset path for '{col}' must be a non-empty string, got {dspath!r}")
        k = None
        target = dspath
        if dspath not in g:
            m = _COLUMN_SUFFIX.match(dspath)
            if m and m.group(1) in g:
                target, k = m.group(1), int(m.group(2))
        if target not in g:
            raise UsageError(f"{where}: no dataset '{dspath}' (mapped to column '{col}'); "
                             f"the group holds: {', '.join(sorted(g)) or 'nothing'}")
        obj = g[target]
        if not isinstance(obj, h5py.Dataset):
            raise UsageError(f"{where}: '{target}' (mapped to column '{col}') is a group, not a dataset")
        shape = obj.shape or ()
        if k is None and len(shape) != 1:
            hint = f"; use '{target}[k]' to take column k" if len(shape) == 2 else ""
            raise UsageError(f"{where}: dataset '{target}' (mapped to column '{col}') is not 1-D "
                             f"(shape {shape}){hint}")
        if k is not None and (len(shape) != 2 or k >= shape[1]):
            raise UsageError(f"{where}: '{dspath}' (mapped to column '{col}'): dataset '{target}' has shape "
                             f"{shape}, no column {k}")
        dt = dtype_of(where, target, obj)
        out.append((col, target, k, dt, obj))
    return out


def read(path, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, group: str = "/",
         columns: Optional[Mapping[str, str]] = None, species: str = "particles",
         time: float = 0.0, step: int = 0) -> Iterator[Step]:
    """One step of one species from the equal-length 1-D datasets of an HDF5 group.

    columns: motes column name -> dataset path relative to ``group`` (``"pos[0]"`` picks column
    0 of a 2-D dataset); without it every 1-D numeric dataset of the group is taken under its
    own name and an (n, 3) ``pos``/``position``/``coords`` dataset becomes x, y, z. Group
    attributes become step attributes; a dataset's ``unit``/``units`` string attribute its unit.
    Raises UsageError naming the file, group and dataset for anything that cannot be mapped."""
    chunk_rows = check_chunk_rows(chunk_rows)
    path = os.fspath(path)
    if not isinstance(species, str) or not species:
        raise UsageError(f"species must be a non-empty name, got {species!r}")
    try:
        time = float(time)
        step_index = int(step)
    except (TypeError, ValueError):
        raise UsageError(f"time must be a number and step an integer, got {time!r} and {step!r}") from None
    if columns is not None and not isinstance(columns, Mapping):
        raise UsageError("columns must be a mapping of motes column name -> dataset path")

    with open_file(path) as f:
        if group not in f:
            raise UsageError(f"{path}: no group '{group}'")
        g = f[group]
        if not isinstance(g, h5py.Group):
            raise UsageError(f"{path}: '{group}' is a dataset, not a group (pass the group that holds it)")
        gname = g.name
        where = f"{path}:{gname}"
        if columns is None:
            sources = _auto_sources(path, gname, g)
        else:
            if not columns:
                raise UsageError(f"{where}: {_map_option()} maps nothing; give at least one column")
            sources = _mapped_sources(path, gname, g, columns)
        if not sources:
            raise UsageError(f"{where}: nothing to import: the group holds no 1-D numeric datasets "
                             f"(pass {option('group=', '--group')} to point at the particle group, or "
                             f"{_map_option()} to map datasets)")
        lengths = {}
        for col, ds, k, dt, obj in sources:
            lengths[ds if k is None else f"{ds}[{k}]"] = int(obj.shape[0])
        if len(set(lengths.values())) > 1:
            detail = ", ".join(f"{d}: {n}" for d, n in lengths.items())
            raise UsageError(f"{where}: datasets have unequal lengths ({detail}); "
                             f"pass {_map_option()} to choose datasets of one length")
        count = next(iter(lengths.values()))
        units = {}
        for col, ds, k, dt, obj in sources:
            u = unit_of(obj)
            if u is not None:
                units[col] = u
        attributes = read_attributes(g, json_attr="motes_json")
        schema = [(col, dt) for col, ds, k, dt, obj in sources]
        plan = [(col, ds, k, dt) for col, ds, k, dt, obj in sources]

    sp = Species(name=species, columns=schema, count=count,
                 chunks=file_chunks(path, gname, plan, count, chunk_rows),
                 units=units, attributes={})
    return iter([Step(index=step_index, time=time, attributes=attributes, species={species: sp})])
