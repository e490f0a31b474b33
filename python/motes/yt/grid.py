"""A step's uniform grid fields as a yt grid dataset (:func:`grid`)."""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

import numpy as np

import motes

from . import meta


def grid(path, step: Optional[int] = None, level: int = 0, fields: Optional[List[str]] = None):
    """The uniform 3-D Cartesian grid fields of a step (default: the last) as a yt dataset
    (``yt.load_uniform_grid``), read at ``level`` (every 2^level-th sample along each axis, a
    prefix of the field's file) only when yt first asks for each field. ``fields`` names the
    fields (default: every field of the step on the same grid as the first such field); they
    must share one grid. A sample is the centre of a cell one (level) spacing wide, so a
    node-centred field's domain reaches half a spacing past its first and last samples.
    Components of a vector field are the yt fields ``name_x``, ``name_y``... (its component
    names). The grid's length unit is openPMD's ``gridUnitSI`` (metres) for a converted mesh,
    else the unit of the step's particle positions, else 1 cm. Particles stay in
    :class:`MotesDataset` (``yt.load``): yt's grid datasets keep their particles in memory."""
    import yt

    from ..errors import UsageError

    ds = motes.open(path)
    st = ds.step(step)
    level = int(level)
    names = list(fields) if fields is not None else list(st.fields)
    chosen, geometry = [], None
    for name in names:
        f = ds.field(name, st.index)
        usable = f.geometry == "cartesian" and f.ndim == 3 and f.origin is not None
        if not usable:
            if fields is not None:
                raise UsageError(f"field '{name}' is not on a uniform 3-D Cartesian grid ({f.geometry}, {f.ndim}-D"
                                 f"{', rectilinear' if f.origin is None else ''}): yt's uniform grids cannot hold it")
            continue
        if not 0 <= level <= f.levels:
            raise UsageError(f"field '{name}' has levels 0 to {f.levels}, not {level}")
        here = (f.dims, f.origin, f.spacing, f.centering)
        if geometry is None:
            geometry = here
        elif here != geometry:
            if fields is not None:
                raise UsageError(f"field '{name}' is on another grid than '{chosen[0].name}' ({here} against "
                                 f"{geometry}); load them with separate calls")
            continue
        chosen.append(f)
    if not chosen:
        raise UsageError(f"step {st.index} has no uniform 3-D Cartesian grid field (fields: "
                         f"{', '.join(st.fields) or 'none'})")
    dims, origin, spacing, centering = geometry
    stride = 1 << level
    n = np.array([(d + stride - 1) // stride for d in dims])
    width = np.array(spacing, float) * stride
    first = np.array(origin, float) + (0.5 if centering == "cell" else 0.0) * np.array(spacing, float)
    bbox = np.stack([first - width / 2, first - width / 2 + n * width], axis=1)

    def reader(f, component):
        def read(grid_object, field_name):  # yt's (grid, field) callable: x, y, z index order
            a = f.read(level=level, component=component)
            return np.ascontiguousarray(np.transpose(a)).astype("float64", copy=False)
        return read

    data = {}
    for f in chosen:
        unit = meta.yt_unit(f.unit)
        for comp in (f.components or (None,)):
            key = f.name if comp is None else f"{f.name}_{comp}"
            data[key] = (reader(f, comp), unit) if unit else reader(f, comp)
    return yt.load_uniform_grid(data, tuple(int(v) for v in n), bbox=bbox, sim_time=float(st.time),
                                periodicity=(False, False, False), length_unit=_length(ds, st, chosen[0]),
                                parameters=dict(st.attributes), dataset_name=f"{os.fspath(path)}#{st.index}")


def _length(ds, st, f) -> Tuple[float, str]:
    """The grid's length unit: openPMD's gridUnitSI, else the positions' unit, else 1 cm."""
    from unyt import Unit
    from unyt.dimensions import length

    grid_si = ((f.attributes or {}).get("openpmd") or {}).get("gridUnitSI")
    if isinstance(grid_si, (int, float)) and not isinstance(grid_si, bool) and grid_si > 0:
        return float(grid_si), "m"
    texts = {p: [c.unit for c in ds.schema(st.index, p) if c.name in ("x", "y", "z")] for p in st.species}
    unit = meta.yt_unit(meta.position_unit(texts)) if texts else ""
    return (1.0, unit) if unit and Unit(unit).dimensions == length else (1.0, "cm")
