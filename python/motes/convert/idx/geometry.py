"""Where an IDX grid sits in space: OpenVisus' (physic_box) for every viewer, and the
(motes) header line for what IDX has no words for (centering, rectilinear coordinates,
units, component names, attributes).

The (physic_box) is the image of the logic box [0, n) per axis: a = origin, b = origin +
n * spacing, so logic coordinate i maps to origin + i * spacing, the position of sample i
of a node-centred field and the lower corner of cell i of a cell-centred one (the (motes)
line says which). A rectilinear grid's box spans its first coordinate to its last plus the
last interval; its coordinates themselves are in the (motes) line.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ...errors import FormatError, UsageError
from ...fields.model import Field

__all__ = ["same_grid", "physic_box", "motes_meta", "field_of"]


def _geometry(f: Field) -> Dict[str, Any]:
    if f.coords is not None:
        return {"centering": f.centering, "coords": [c.tolist() for c in f.coords]}
    return {"centering": f.centering, "origin": list(f.origin), "spacing": list(f.spacing)}


def same_grid(a: Field, b: Field) -> bool:
    return a.shape == b.shape and _geometry(a) == _geometry(b)


def physic_box(f: Field) -> Optional[Tuple[float, ...]]:
    """a0 b0 a1 b1 ... of the field's grid; None for the identity (origin 0, spacing 1)."""
    out = []
    for k in range(f.ndim):
        if f.coords is not None:
            c = f.coords[k]
            step = float(c[-1] - c[-2]) if len(c) > 1 else 1.0
            out += [float(c[0]), float(c[-1]) + step]
        else:
            out += [f.origin[k], f.origin[k] + f.dims[k] * f.spacing[k]]
    identity = all(out[2 * k] == 0 and out[2 * k + 1] == f.dims[k] for k in range(f.ndim))
    return None if identity and f.coords is None else tuple(out)


def _jsonable(v, where: str):
    try:
        return json.loads(json.dumps(v, allow_nan=False, default=_default))
    except (TypeError, ValueError) as e:
        raise UsageError(f"{where} cannot be stored as JSON in the IDX header ({e})") from None


def _default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"{type(o).__name__} is not JSON")


def motes_meta(fields: Dict[str, Field]) -> dict:
    """The (motes) line: the grid's geometry (of the first field: all share it) and per
    field its unit, components and attributes."""
    first = next(iter(fields.values()))
    out: Dict[str, Any] = {"geometry": _geometry(first), "fields": {}}
    for name, f in fields.items():
        entry: Dict[str, Any] = {}
        if f.unit:
            entry["unit"] = f.unit
        if f.components is not None:
            entry["components"] = list(f.components)
        if f.attributes:
            entry["attributes"] = _jsonable(f.attributes, f"field '{name}''s attributes")
        out["fields"][name] = entry
    return out


def field_of(array: np.ndarray, name: str, ndim: int, dims: Sequence[int], header, path: str) -> Field:
    """The motes.Field of an array read from an IDX dataset, with the header's geometry."""
    meta = header.motes or {}
    info = (meta.get("fields") or {}).get(name) or {}
    geo = meta.get("geometry")
    affine = None
    if not isinstance(geo, dict) and header.physic_box is None and header.logic_to_physic is not None:
        affine = _affine(header.logic_to_physic, ndim, path)  # UsageError for a rotation: not damage
    try:
        kw: Dict[str, Any] = {}
        if isinstance(info, dict):
            kw["unit"] = info.get("unit", "")
            if info.get("components") is not None:
                kw["components"] = info["components"]
            kw["attributes"] = info.get("attributes") or {}
        if array.ndim > ndim and "components" not in kw:
            kw["components"] = tuple(str(c) for c in range(array.shape[-1]))
        if isinstance(geo, dict):
            kw["centering"] = geo.get("centering", "node")
            if geo.get("coords") is not None:
                kw["coords"] = geo["coords"]
            else:
                kw["origin"], kw["spacing"] = geo.get("origin"), geo.get("spacing")
        elif header.physic_box is not None:
            pb = list(header.physic_box) + [0.0, 1.0] * ndim
            kw["origin"] = [pb[2 * k] for k in range(ndim)]
            kw["spacing"] = [(pb[2 * k + 1] - pb[2 * k]) / dims[k] for k in range(ndim)]
        elif affine is not None:
            kw["origin"], kw["spacing"] = affine
        return Field(array, **kw)
    except (UsageError, TypeError, ValueError, KeyError, AttributeError) as e:
        raise FormatError(f"{path}: the header's geometry or (motes) line does not describe field '{name}' "
                          f"({e})") from None


def _affine(m: Sequence[float], ndim: int, path: str):
    n = int(round(len(m) ** 0.5))
    if n * n != len(m) or n < ndim + 1:
        raise FormatError(f"{path}: (logic_to_physic) has {len(m)} numbers, not a square matrix")
    mat = np.asarray(m, dtype=np.float64).reshape(n, n)
    off = mat[:n - 1, :n - 1] - np.diag(np.diag(mat[:n - 1, :n - 1]))
    if np.any(off != 0):
        raise UsageError(f"{path}: (logic_to_physic) rotates or shears the grid; a motes.Field is axis-aligned")
    return [float(mat[k, n - 1]) for k in range(ndim)], [float(mat[k, k]) for k in range(ndim)]
