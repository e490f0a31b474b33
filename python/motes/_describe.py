"""Dataset.describe(): what a dataset holds, as a plain JSON-serialisable dict (``motes
info`` prints it, as text or with ``--json`` as is).

Layout of the dict::

    {"path", "attributes", "step_count", "species": [names], "particle_count",
     "steps": [{"index", "time", "attributes", "species": {name: {"count", "bounds"}}}],
     "skipped": [{"index", "time", "reason"}],
     "files": [{"step", "species", "path", "parts", "part_files": [{"path", "count", "bounds",
                "sizes"}], "count", "format_version", "levels", "nodes", "leaf_size",
                "lod_count", "bounds", "sizes", "columns": [{"name", "dtype", "index",
                "unit", "unit_label", "unit_si", "unit_dimension", "min", "max",
                "nan_count", "error_bound", "storage": {"data_bytes", "raw_bytes", "codec",
                ["codes_bytes", "codes_codec"]}}]}]}

``bounds`` are ``{"min": [x, y, z], "max": [x, y, z]}``; numbers that JSON cannot hold
(NaN, infinities: the bounds of an empty species) are None. ``files`` describes the
particle files of the chosen steps and species (default: every species of the last step).
``skipped`` lists the steps a writer was given and did not write (``Dataset.skipped``).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from . import units
from .dtypes import numpy_dtype

__all__ = ["describe"]


def _finite(v: Any) -> Any:
    """A JSON-safe number: NaN and infinities are None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _bounds(lo, hi) -> Dict[str, List[Any]]:
    return {"min": [_finite(float(v)) for v in lo], "max": [_finite(float(v)) for v in hi]}


def _unit_fields(text: str) -> Dict[str, Any]:
    """The unit as a person reads it, and for openPMD units its SI factor and dimension."""
    u = units.parse(text)
    return {"unit_label": u.label, "unit_si": u.unit_si,
            "unit_dimension": list(u.dimension) if u.dimension else None}


def _storage(per: List[Dict[str, Any]]) -> Dict[str, Any]:
    """How one column is stored, over its part files: bytes as stored (their sum over the
    columns is sizes["data_bytes"]), bytes as numbers, and the codecs used."""
    codecs: List[str] = []
    for p in per:
        for name in p["codec"].split(" | "):
            if name not in codecs:
                codecs.append(name)
    out = {"data_bytes": sum(int(p["stored_bytes"]) for p in per), "raw_bytes": sum(int(p["raw_bytes"]) for p in per),
           "codec": " | ".join(codecs)}
    if any("codes_codec" in p for p in per):
        out["codes_bytes"] = sum(int(p.get("codes_stored_bytes", 0)) for p in per)
        out["codes_codec"] = " | ".join(sorted({p["codes_codec"] for p in per if "codes_codec" in p}))
    return out


def _file_info(ds, step: int, species: str, storage: bool = True) -> Dict[str, Any]:
    """One species of one step: its file, or the sum over the part files of a parallel write.
    ``storage``: also how each column is stored (reads the header of every block)."""
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
    per_file = [f.column_info(storage) for f in files]
    for j, c in enumerate(per_file[0]):
        per = [columns[j] for columns in per_file]
        valid = [p for f, p in zip(files, per) if p["nan_count"] < f.count]  # parts with a range
        col = {"name": c["name"], "dtype": c["dtype"],
               "index": "quantile" if any(p["index"] == "quantile" for p in per) else "none",
               "unit": c["unit"],
               **_unit_fields(c["unit"]),
               "min": _finite(min(p["min"] for p in valid)) if valid else None,
               "max": _finite(max(p["max"] for p in valid)) if valid else None,
               "nan_count": sum(p["nan_count"] for p in per),
               "error_bound": c.get("error_bound", 0.0)}
        if storage:
            col["storage"] = _storage(per)
        cols.append(col)
    (lo, hi) = src.bounds
    return {
        "step": step,
        "species": species,
        "path": src.path,
        "parts": int(src.part_count),
        "part_files": [{"path": f.path, "count": int(f.count), "bounds": _bounds(*f.bounds), "sizes": dict(f.sizes)}
                       for f in files],
        "count": int(src.count),
        "format_version": ".".join(str(v) for v in files[0].version),
        "id_index": files[0].id_column,  # the column of the id index (format 2.1), or None
        "levels": max(int(f.level_count) for f in files),
        "nodes": sum(int(f.node_count) for f in files),
        "leaf_size": int(files[0].leaf_size),
        "lod_count": int(files[0].lod_count),
        "bounds": _bounds(lo, hi),
        "sizes": sizes,
        "columns": cols,
        "derived": _derived_info(files),
    }


def _derived_info(files) -> Dict[str, Any]:
    """The derived quantities (format 2.4) over the part files: name -> expression and the
    statistics of every part's values."""
    out: Dict[str, Any] = {}
    for f in files:
        for name, d in f.derived.items():
            e = out.setdefault(name, {"expression": d["expression"], "min": None, "max": None, "nan_count": 0})
            e["nan_count"] += int(d["nan_count"])
            if d["min"] == d["min"]:  # not NaN: the part has values
                e["min"] = d["min"] if e["min"] is None else min(e["min"], d["min"])
                e["max"] = d["max"] if e["max"] is None else max(e["max"], d["max"])
    return out


def _field_info(ds, step: int, name: str) -> Dict[str, Any]:
    """One grid field of one step: its geometry, levels, sizes and ranges."""
    f = ds.field(name, step)
    return {"step": step, "field": name, "path": f._f.path, "parts": f._f.part_count, "tolerance": f.tolerance,
            "dtype": f._f.dtype, "dims": list(f.dims),
            "components": list(f.components or ()), "geometry": f.geometry,
            **({"modes": f.modes, "imag": f.imag} if f.geometry == "thetaMode" else {}), "centering": f.centering,
            "origin": list(f.origin) if f.origin else None, "spacing": list(f.spacing) if f.spacing else None,
            "rectilinear": f.coords is not None, "unit": f.unit, **_unit_fields(f.unit), "levels": f.levels,
            "bitmask": f.bitmask, "stored_bytes": f.stored_bytes,
            "raw_bytes": int(np.prod(f.dims)) * f.dtype.itemsize * len(f.components or (0,)) * f.slots,
            "ranges": [[_finite(lo), _finite(hi)] for lo, hi in f.ranges]}


def describe(ds, step: Optional[int] = None, species: Optional[str] = None, all_steps: bool = False,
             storage: bool = True) -> Dict[str, Any]:
    """See :meth:`motes.Dataset.describe`."""
    steps = []
    for st in (ds.step(i) for i in ds.steps):
        names = {}
        for name, sp in st.species.items():
            names[name] = {"count": int(sp["count"]), "bounds": _bounds(*sp["bounds"])}
        fields = {name: {"dtype": f["dtype"], "dims": list(f["dims"][: f["ndim"]]), "components": f["components"],
                         **({"geometry": f["geometry"]} if f.get("geometry", "cartesian") != "cartesian" else {})}
                  for name, f in st.fields.items()}
        steps.append({"index": st.index, "time": _finite(st.time), "attributes": st.attributes, "species": names,
                      "fields": fields})
    details = []
    if steps:
        chosen = ds.steps if all_steps else [ds.step(step).index]
        for s in chosen:
            for name in ds.species_names(s):
                if species is not None and name != species:
                    continue
                details.append(_file_info(ds, s, name, storage))
        if species is not None and not details:
            ds.request(step=step, species=species)  # raises UsageError with the species of the step
        field_details = [_field_info(ds, s, name) for s in chosen for name in ds.field_names(s)]
    else:
        field_details = []
    return {
        "path": ds.path,
        "attributes": ds.attributes,
        "step_count": len(steps),
        "species": sorted({n for s in steps for n in s["species"]}),
        "particle_count": sum(sp["count"] for s in steps for sp in s["species"].values()),
        "fields": sorted({n for s in steps for n in s["fields"]}),
        "steps": steps,
        "skipped": [{"index": k.index, "time": _finite(k.time), "reason": k.reason} for k in ds.skipped],
        "files": details,
        "field_files": field_details,
    }
