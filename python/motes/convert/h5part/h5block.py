"""H5Block grid fields (H5hut's layout, beside the H5Part particles of a step): read and write.

Layout of the fields of one step (``g`` is an H5Part step group ``/Step#n``)::

    /Step#n/Block/<field>/      group; attributes __Origin__, __Spacing__ (float64[3], x, y, z)
                                or __X_Coordinates__, __Y_Coordinates__, __Z_Coordinates__
                                (float64, one per sample: a rectilinear grid)
        0                       a scalar field: dataset of dims (k, j, i) = (z, y, x), i fastest
        0, 1, 2, ...            a vector field: one such dataset per component

H5Block grids are 3-D and node-centred: sample (k, j, i) sits at ``__Origin__ + (i, j, k) *
__Spacing__``. What H5Block has no place for goes into attributes of the field group that
H5hut ignores:

* ``motes_ndim`` (int64, 1 or 2): a 1-D or 2-D field, written as 3-D datasets of dims
  (1, 1, nx) or (1, ny, nx) with origin 0 and spacing 1 (coordinates [0]) on the missing axes;
* ``motes_centering`` = ``"cell"``: a cell-centred field. ``__Origin__`` is the position of
  the first sample (the first cell's centre, origin + spacing / 2), so that H5hut readers
  place the samples right; ``motes_origin`` (float64[3]) keeps the cells' corner exactly;
* ``motes_components`` (strings): the names of a vector field's components; without it a
  3-component field is (x, y, z), others are named "0", "1", ...;
* ``unit`` (string): the field's unit; other field attributes as for H5Part step
  attributes (JSON text listed in ``motes_json`` where HDF5 has no native type).

Reading checks the layout of every field first (FormatError naming the file, step group and
field); a field's values are read when the step's :class:`~motes.convert.base.LazyFields`
is looked up.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ...fields.model import AXES, Field, require_cartesian
from ...errors import FormatError, UsageError
from ..hdf5 import attr_to_json, dtype_of, open_file, read_attributes, write_attributes

__all__ = ["read", "write"]

BLOCK = "Block"
ORIGIN, SPACING = "__Origin__", "__Spacing__"
COORDINATES = ("__X_Coordinates__", "__Y_Coordinates__", "__Z_Coordinates__")
NDIM_ATTR = "motes_ndim"
CENTERING_ATTR = "motes_centering"
CELL_ORIGIN_ATTR = "motes_origin"
COMPONENTS_ATTR = "motes_components"
UNIT_ATTR = "unit"
JSON_ATTR = "motes_json"
RESERVED = {ORIGIN, SPACING, *COORDINATES, NDIM_ATTR, CENTERING_ATTR, CELL_ORIGIN_ATTR, COMPONENTS_ATTR,
            UNIT_ATTR, JSON_ATTR}


def _vector(g, name: str, where: str, n: Optional[int] = 3) -> Optional[np.ndarray]:
    """A float64 attribute of ``n`` values (any number when n is None), or None when absent."""
    if name not in g.attrs:
        return None
    try:
        v = np.asarray(g.attrs[name], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise FormatError(f"{where}: attribute {name} is not numeric") from None
    if n is not None and v.shape != (n,):
        raise FormatError(f"{where}: attribute {name} must have {n} values (x, y, z), got {v.size}")
    return v


def _components(where: str, g) -> List[Tuple[str, Any]]:
    """The component datasets 0, 1, ... of a field group, in order."""
    names = sorted((k for k in g if k.isdigit()), key=int)
    if not names or names != [str(i) for i in range(len(names))]:
        raise FormatError(f"{where}: the field has datasets {sorted(g) or 'none'}; H5Block expects '0' "
                          "(a scalar field) or '0', '1', ... (one per component)")
    comps = []
    for k in names:
        ds = g[k]
        if not hasattr(ds, "shape"):
            raise FormatError(f"{where}: '{k}' is a group; H5Block components are datasets")
        comps.append((k, ds))
    return comps


def _plan(path: str, gname: str, name: str, g) -> Dict[str, Any]:
    """Everything about one field but its values, checked."""
    where = f"{path}: {gname}/{BLOCK}/{name}"
    comps = _components(where, g)
    shape = comps[0][1].shape
    if shape is None or len(shape) != 3:
        raise FormatError(f"{where}: dataset '0' has dims {shape}; H5Block datasets are 3-D (k, j, i) = (z, y, x)")
    dtype = dtype_of(where, "0", comps[0][1])
    for k, ds in comps[1:]:
        if ds.shape != shape:
            raise FormatError(f"{where}: component datasets have different dims ('0': {shape}, '{k}': {ds.shape})")
        if dtype_of(where, k, ds) != dtype:
            raise FormatError(f"{where}: component datasets have different types ('0': {dtype}, '{k}': {ds.dtype})")
    attrs = read_attributes(g, json_attr=JSON_ATTR, skip=RESERVED)
    ndim = 3
    if NDIM_ATTR in g.attrs:
        ndim = attr_to_json(g.attrs[NDIM_ATTR])
        if ndim not in (1, 2, 3):
            raise FormatError(f"{where}: attribute {NDIM_ATTR} must be 1, 2 or 3, got {ndim!r}")
        if any(n != 1 for n in shape[:3 - ndim]):
            raise FormatError(f"{where}: a {ndim}-D field ({NDIM_ATTR}) must have dims of 1 on the missing axes, "
                              f"got {shape}")
    centering = attr_to_json(g.attrs[CENTERING_ATTR]) if CENTERING_ATTR in g.attrs else "node"
    if centering not in ("node", "cell"):
        raise FormatError(f"{where}: attribute {CENTERING_ATTR} must be 'node' or 'cell', got {centering!r}")
    names: Optional[Tuple[str, ...]] = None
    if COMPONENTS_ATTR in g.attrs:
        names = attr_to_json(g.attrs[COMPONENTS_ATTR])
        names = tuple(names) if isinstance(names, list) else (names,)
        if len(names) != len(comps) or not all(isinstance(c, str) for c in names):
            raise FormatError(f"{where}: attribute {COMPONENTS_ATTR} names {len(names)} components, the field "
                              f"has {len(comps)} datasets")
    elif len(comps) > 1:
        names = AXES if len(comps) == 3 else tuple(str(i) for i in range(len(comps)))
    dims = tuple(reversed(shape))  # (x, y, z)
    geometry: Dict[str, Any] = {}
    coords = [_vector(g, c, where, None) for c in COORDINATES]
    origin, spacing = _vector(g, ORIGIN, where), _vector(g, SPACING, where)
    if all(c is not None for c in coords):
        for k, c in enumerate(coords):
            if c.shape != (dims[k],):
                raise FormatError(f"{where}: {COORDINATES[k]} has {c.size} values, the field has {dims[k]} "
                                  f"samples along {AXES[k]}")
        geometry["coords"] = coords[:ndim]
    elif origin is not None and spacing is not None:
        origin, spacing = origin[:ndim], spacing[:ndim]
        if centering == "cell":
            corner = _vector(g, CELL_ORIGIN_ATTR, where)
            derived = origin - 0.5 * spacing
            if corner is None:
                corner = derived
            elif not np.allclose(corner[:ndim], derived, rtol=0, atol=1e-12 * np.max(np.abs(origin) + spacing)):
                raise FormatError(f"{where}: {CELL_ORIGIN_ATTR} {corner.tolist()} does not lie half a spacing "
                                  f"before {ORIGIN} {origin.tolist()}")
            origin = corner[:ndim]
        geometry.update(origin=tuple(origin), spacing=tuple(spacing))
    else:
        missing = [a for a, v in ((ORIGIN, origin), (SPACING, spacing)) if v is None]
        raise FormatError(f"{where}: no grid geometry: attribute {' and '.join(missing)} missing (or give all of "
                          f"{', '.join(COORDINATES)})")
    unit = attr_to_json(g.attrs[UNIT_ATTR]) if UNIT_ATTR in g.attrs else ""
    plan = {"where": where, "datasets": [k for k, _ in comps], "dtype": dtype, "components": names,
            "shape": tuple(shape[3 - ndim:]) + ((len(comps),) if names else ()), "geometry": geometry,
            "centering": centering, "unit": unit if isinstance(unit, str) else str(unit), "attributes": attrs}
    _field(plan, np.broadcast_to(np.zeros((), dtype), plan["shape"]))  # the geometry checked now, no values read
    return plan


def _field(plan: Dict[str, Any], values: np.ndarray) -> Field:
    try:
        return Field(values, centering=plan["centering"], components=plan["components"], unit=plan["unit"],
                     attributes=plan["attributes"], **plan["geometry"])
    except UsageError as e:
        raise FormatError(f"{plan['where']}: {e}") from None


def _loader(path: str, group: str, plan: Dict[str, Any]) -> Callable[[], Field]:
    def load() -> Field:
        out = np.empty(plan["shape"], dtype=plan["dtype"])
        with open_file(path) as f:
            g = f[group]
            for i, k in enumerate(plan["datasets"]):  # straight into place: no second copy
                g[k].read_direct(out, dest_sel=np.s_[..., i] if plan["components"] else np.s_[...])
        return _field(plan, out)

    return load


def read(path: str, step_group) -> Dict[str, Callable[[], Field]]:
    """Loaders of the fields under ``<step group>/Block`` (none when it has no Block group),
    the layout of each checked now."""
    if BLOCK not in step_group:
        return {}
    block = step_group[BLOCK]
    gname = step_group.name.lstrip("/")
    if not hasattr(block, "keys"):
        raise FormatError(f"{path}: {gname}/{BLOCK} is a dataset; H5Block fields are groups in it")
    loaders = {}
    for name in block:
        g = block[name]
        if not hasattr(g, "keys"):
            raise FormatError(f"{path}: {gname}/{BLOCK}/{name} is a dataset; an H5Block field is a group of "
                              "datasets '0', '1', ...")
        loaders[name] = _loader(path, g.name, _plan(path, gname, name, g))
    return loaders


def _padded(values, ndim: int, fill: float) -> np.ndarray:
    return np.asarray(list(values) + [fill] * (3 - ndim), dtype=np.float64)


def write(path: str, step_group, fields: Mapping[str, Field], filters: Optional[Dict[str, Any]] = None) -> None:
    """Writes ``fields`` into ``<step group>/Block`` (see the module doc for the layout).
    ``filters``: create_dataset keywords of the compression (datasets are then chunked)."""
    if not fields:
        return
    gname = step_group.name.lstrip("/")
    block = step_group.create_group(BLOCK, track_order=True)
    for name in fields:
        where = f"{path}: {gname}/{BLOCK}/{name}"
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise UsageError(f"{path}: {gname}: field name {name!r} cannot be an HDF5 group name")
        fld = fields[name]
        if not isinstance(fld, Field):
            raise UsageError(f"{where}: a step's fields must be motes.Field objects, got {type(fld).__name__}")
        require_cartesian(fld, where, "H5Block")
        g = block.create_group(name)
        nd = fld.ndim
        if nd < 3:
            g.attrs[NDIM_ATTR] = np.int64(nd)
        if fld.uniform:
            spacing = np.asarray(fld.spacing, dtype=np.float64)
            first = np.asarray([fld.axis(k)[0] for k in range(nd)], dtype=np.float64)
            g.attrs[ORIGIN] = _padded(first, nd, 0.0)
            g.attrs[SPACING] = _padded(spacing, nd, 1.0)
            if fld.centering == "cell":
                g.attrs[CELL_ORIGIN_ATTR] = _padded(fld.origin, nd, 0.0)
        else:
            for k, attr in enumerate(COORDINATES):
                g.attrs[attr] = fld.coords[k] if k < nd else np.zeros(1)
        if fld.centering != "node":
            g.attrs[CENTERING_ATTR] = fld.centering
        if fld.components is not None:
            g.attrs[COMPONENTS_ATTR] = list(fld.components)
        if fld.unit:
            g.attrs[UNIT_ATTR] = fld.unit
        write_attributes(g, fld.attributes, where, JSON_ATTR, reserved=RESERVED)
        dims = (1,) * (3 - nd) + fld.shape
        arr = fld.array
        for i in range(len(fld.components or ("",))):
            values = arr[..., i] if fld.components is not None else arr
            ds = g.create_dataset(str(i), shape=dims, dtype=arr.dtype, chunks=True if filters else None,
                                  **(filters or {}))
            ds[...] = values.reshape(dims)
