"""What the reader and the writer share of openpmd-api: the one place it is imported
(:func:`io`), a one-line reason from its exceptions (:func:`why`), and attributes both
ways: openPMD attribute values as typed JSON entries ``{"value": ..., "dtype": ...}``
(:func:`typed`, :func:`custom_attributes`) and back (:func:`set_attribute`)."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Sequence

import numpy as np

from ...errors import FormatError, UsageError

# Attributes that openpmd-api or this package manage; everything else is carried as "custom".
SERIES_STANDARD = ("openPMD", "openPMDextension", "basePath", "meshesPath", "particlesPath",
                   "iterationEncoding", "iterationFormat", "author", "software", "softwareVersion",
                   "date", "machine", "comment", "softwareDependencies")
ITERATION_STANDARD = ("time", "dt", "timeUnitSI")
RECORD_STANDARD = ("unitDimension", "timeOffset")
COMPONENT_STANDARD = ("unitSI", "value", "shape")
MESH_STANDARD = ("geometry", "geometryParameters", "dataOrder", "axisLabels", "gridSpacing", "gridGlobalOffset",
                 "gridUnitSI", "gridUnitDimension", "unitDimension", "timeOffset")
MESH_COMPONENT_STANDARD = COMPONENT_STANDARD + ("position",)
MOTES_ATTRIBUTES = "motesAttributes"   # JSON text of motes attributes openPMD has no place for
STEP_KEYS = ("time", "dt", "timeUnitSI", "openpmd")
SPECIES_KEYS = ("openpmd", "motes_patches")


def io():
    """The openpmd_api module, or a UsageError telling how to install it."""
    try:
        import openpmd_api  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise UsageError("openPMD conversion needs openpmd-api (pip install openpmd-api)") from None
    return openpmd_api


def why(e: BaseException) -> str:
    """A short, one-line reason from an openpmd-api exception."""
    text = " ".join(str(e).split())
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return text[:400] or type(e).__name__


def plain(v: Any) -> Any:
    """A JSON-like Python value from numpy scalars, arrays and lists of them."""
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def typed(value: Any, dtype: Any) -> Dict[str, Any]:
    """An attribute value as ``{"value": <JSON>, "dtype": <numpy name or "string", "bool">}``."""
    value = plain(value)
    if isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        return {"value": value, "dtype": "string"}
    if isinstance(value, bool):
        return {"value": value, "dtype": "bool"}
    try:
        name = np.dtype(dtype).name if dtype is not None else None
    except TypeError:
        name = None
    if isinstance(value, complex) or (isinstance(value, list) and any(isinstance(v, complex) for v in value)):
        return {"value": repr(value), "dtype": "string"}
    if name is None:
        name = "float64" if isinstance(value, float) else "int64"
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return {"value": repr(value), "dtype": "string"}
    return {"value": value, "dtype": name}


def numeric_list(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)


def custom_attributes(obj, skip: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    """The attributes of an openpmd-api object but those in ``skip``, typed."""
    dtypes = obj.attribute_dtypes
    out = {}
    for name in obj.attributes:
        if name in skip or name == MOTES_ATTRIBUTES:
            continue
        out[name] = typed(obj.get_attribute(name), dtypes.get(name))
    return out


def motes_attributes(obj, where: str) -> Dict[str, Any]:
    """The motes attributes an export kept as JSON text in ``motesAttributes``."""
    if not obj.contains_attribute(MOTES_ATTRIBUTES):
        return {}
    try:
        d = json.loads(obj.get_attribute(MOTES_ATTRIBUTES))
    except (TypeError, ValueError) as e:
        raise FormatError(f"{where}: attribute '{MOTES_ATTRIBUTES}' is not JSON ({e})") from None
    return d if isinstance(d, dict) else {}


def set_attribute(obj, name: str, entry: Any, where: str) -> None:
    """Writes one attribute: a typed entry made by :func:`typed`, or a plain JSON value."""
    if isinstance(entry, dict) and set(entry) == {"value", "dtype"}:
        value, dtype = entry["value"], entry["dtype"]
    else:
        value, dtype = entry, None
    try:
        if dtype == "string" or isinstance(value, str) or (
                isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            obj.set_attribute(name, value if isinstance(value, (str, list)) else str(value))
        elif dtype is None and isinstance(value, (dict, list)) and not numeric_list(value):
            obj.set_attribute(name, json.dumps(value))
        else:
            if dtype is None:
                floats = isinstance(value, float) or (isinstance(value, list) and
                                                      any(isinstance(v, float) for v in value))
                dtype = "bool" if isinstance(value, bool) else "float64" if floats else "int64"
            obj.set_attribute(name, value, np.dtype(dtype))
    except (TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"{where}: cannot write attribute '{name}' = {value!r} ({why(e)})") from None


def unit_dimension_map(io, dims: Sequence[float]) -> Dict[Any, float]:
    """openpmd-api's unitDimension mapping from the 7 powers (L, M, T, I, theta, N, J)."""
    keys = [io.Unit_Dimension.L, io.Unit_Dimension.M, io.Unit_Dimension.T, io.Unit_Dimension.I,
            io.Unit_Dimension.theta, io.Unit_Dimension.N, io.Unit_Dimension.J]
    if len(dims) != 7:
        raise UsageError(f"unitDimension needs 7 powers, got {list(dims)}")
    return {k: float(v) for k, v in zip(keys, dims)}
