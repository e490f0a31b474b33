"""openPMD as a conversion destination: ``write(path, steps)`` makes an openPMD 1.1.0
series (HDF5 for .h5, ADIOS2 for .bp), one iteration per step, storing each incoming
chunk with ``store_chunk``.

This module owns the openpmd-api side of writing: the series and its attributes, the
iteration encoding, declaring the records and streaming the rows, writing the meshes.
Which records and components a species becomes, and their units, is decided in
:mod:`.mapping`, which meshes the fields become in :mod:`.meshes`; particlePatches are
planned and written by :mod:`.patches`.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ...errors import FormatError, StorageError, UsageError
from ..base import Species, Step, check_columns
from ..sources import PATTERN as _PATTERN
from . import patches
from .api import (COMPONENT_STANDARD, ITERATION_STANDARD, MESH_COMPONENT_STANDARD, MESH_STANDARD, MOTES_ATTRIBUTES,
                  RECORD_STANDARD, SERIES_STANDARD, SPECIES_KEYS, STEP_KEYS, io as _io, set_attribute,
                  unit_dimension_map, why)
from .mapping import AXES, Out, canon, plan_species, stored_values, where_of
from .meshes import plan_meshes

__all__ = ["write"]


def _write_species(io, series, it, path: str, index: int, sp: Species, particle_patches: bool) -> None:
    where = where_of(path, index, sp.name)
    records, axes = plan_species(where, sp)
    count = int(sp.count)
    scalar_key = io.Record_Component.SCALAR
    out_sp = it.particles[sp.name]
    meta = sp.attributes.get("openpmd") if isinstance(sp.attributes.get("openpmd"), dict) else {}
    for name, entry in (meta.get("attributes") or {}).items():
        set_attribute(out_sp, name, entry, where)
    extra = {k: v for k, v in sp.attributes.items() if k not in SPECIES_KEYS}
    if extra:
        set_attribute(out_sp, MOTES_ATTRIBUTES, json.dumps(extra), where)

    data: List[Tuple[Out, Any]] = []
    try:
        for rname, rec in records.items():
            r = out_sp[rname]
            w = where_of(path, index, sp.name, rname)
            for cname, o in rec.comps.items():
                o.dtype = canon(o.dtype)
                rc = r[scalar_key] if rec.scalar else r[cname]
                rc.reset_dataset(io.Dataset(o.dtype, [count]))
                if o.constant is not None:
                    rc.make_constant(np.dtype(o.dtype).type(o.constant))
                else:
                    data.append((o, rc))
                rc.unit_SI = float(o.unit_si)
                for an, av in o.attributes.items():
                    if an not in COMPONENT_STANDARD:
                        set_attribute(rc, an, av, w)
            r.unit_dimension = unit_dimension_map(io, rec.unit_dimension)
            if rec.time_offset is not None:
                set_attribute(r, "timeOffset", rec.time_offset, w)
            for an, av in rec.attributes.items():
                if an not in RECORD_STANDARD and an not in COMPONENT_STANDARD:
                    set_attribute(r, an, av, w)
    except (UsageError, FormatError):
        raise
    except Exception as e:
        raise UsageError(f"{where}: cannot declare the records ({why(e)})") from None

    needed = sorted({o.column for o, _ in data} | {o.offset_column for o, _ in data if o.offset_column} | set(AXES))
    plan = None
    if particle_patches:
        pos = records["position"]
        plan = patches.plan(where, sp, axes, {c: pos.comps[c].unit_si for c in axes})
    boxes = plan.get("boxes") if plan else None
    start = 0
    for chunk in sp.chunks():
        missing = [c for c in needed if c not in chunk]
        if missing:
            raise UsageError(f"{where}: a chunk lacks column(s) {missing}")
        n = check_columns(where, {c: chunk[c] for c in needed})
        if n == 0:
            continue
        if start + n > count:
            raise UsageError(f"{where}: chunks hold more rows than the species count {count}")
        keep = []  # the arrays must live until the flush
        for o, rc in data:
            arr = stored_values(o, chunk)
            rc.store_chunk(arr, [start], [n])
            keep.append(arr)
        if boxes is not None:
            boxes.add(start, [np.asarray(chunk[a]) for a in AXES])
        try:
            series.flush()
        except Exception as e:  # the records were declared and checked: a failed flush is the storage's
            raise StorageError(f"{where}: writing rows {start}..{start + n} failed ({why(e)})",
                               filename=path) from None
        del keep
        start += n
    if start != count:
        raise UsageError(f"{where}: chunks hold {start} rows, the species count says {count}")
    if plan is not None:
        patches.write(io, series, out_sp, where, patches.finish(plan), records["position"].unit_dimension)


def _json_attribute(obj, attributes: Dict[str, Any], where: str, what: str) -> None:
    """motes attributes openPMD has no place for, as JSON text in ``motesAttributes``."""
    if not attributes:
        return
    try:
        text = json.dumps(attributes)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{where}: {what} are not JSON-serialisable ({e})") from None
    set_attribute(obj, MOTES_ATTRIBUTES, text, where)


def _write_meshes(io, series, it, path: str, index: int, fields) -> None:
    """The step's fields as the iteration's meshes, one field at a time (flushed before the next)."""
    scalar_key = io.Mesh_Record_Component.SCALAR
    for name, rec, new, comps in plan_meshes(f"{path}: iteration {index}", fields):
        where = f"{path}: iteration {index}, mesh '{name}'"
        m = it.meshes[name]
        try:
            if new:
                m.geometry = io.Geometry.thetaMode if rec.geometry == "thetaMode" else io.Geometry.cartesian
                if rec.geometry_parameters is not None:
                    m.geometry_parameters = str(rec.geometry_parameters)
                m.data_order = rec.data_order
                m.axis_labels = rec.axis_labels
                m.grid_spacing = rec.grid_spacing
                m.grid_global_offset = rec.grid_global_offset
                m.grid_unit_SI = rec.grid_unit_si
                m.unit_dimension = unit_dimension_map(io, rec.unit_dimension)
                if rec.time_offset is not None:
                    set_attribute(m, "timeOffset", rec.time_offset, where)
                for an, av in rec.attributes.items():
                    if an not in MESH_STANDARD and an not in MESH_COMPONENT_STANDARD:
                        set_attribute(m, an, av, where)
                _json_attribute(m, rec.extra, where, "field attributes")
            for c in comps:
                rc = m[scalar_key] if rec.scalar else m[c.comp]
                rc.reset_dataset(io.Dataset(c.values.dtype, list(c.values.shape)))
                if c.constant is not None:
                    rc.make_constant(c.values.dtype.type(c.constant))
                else:
                    rc.store_chunk(c.values)
                rc.unit_SI = float(c.unit_si)
                rc.position = [float(p) for p in c.position]
                for an, av in c.attributes.items():
                    if an not in MESH_COMPONENT_STANDARD:
                        set_attribute(rc, an, av, f"{where}, component '{c.comp}'")
                _json_attribute(rc, c.extra, f"{where}, component '{c.comp}'", "field attributes")
        except (UsageError, FormatError):
            raise
        except Exception as e:
            raise UsageError(f"{where}: cannot declare the mesh ({why(e)})") from None
        try:
            series.flush()   # the values are stored now: the next field's may take their memory
        except Exception as e:
            raise StorageError(f"{where}: writing the mesh failed ({why(e)})", filename=path) from None


def _create_series(io, path: str, encoding: str, info: Dict[str, Any]):
    try:
        series = io.Series(path, io.Access.create)
    except Exception as e:
        raise StorageError(f"{path}: cannot create the openPMD series ({why(e)})", filename=path) from None
    if encoding == "group":
        series.set_iteration_encoding(io.Iteration_Encoding.group_based)
    where = f"{path}: series"
    if info.get("author"):
        series.set_author(str(info["author"]))
    else:  # recommended by the standard: whoever ran the conversion (MOTES_AUTHOR overrides the login name)
        import getpass  # noqa: PLC0415

        try:
            author = os.environ.get("MOTES_AUTHOR") or getpass.getuser()
        except (KeyError, OSError):
            author = "unknown"
        series.set_author(author)
    if info.get("software"):
        if info.get("softwareVersion"):
            series.set_software(str(info["software"]), str(info["softwareVersion"]))
        else:
            series.set_software(str(info["software"]))
    else:
        from ... import __version__  # noqa: PLC0415
        series.set_software("motes", __version__)
    if info.get("date"):
        series.set_date(str(info["date"]))
    if info.get("machine"):
        series.machine = str(info["machine"])
    if info.get("comment"):
        series.set_comment(str(info["comment"]))
    if info.get("softwareDependencies"):
        series.set_attribute("softwareDependencies", str(info["softwareDependencies"]))
    if info.get("openPMDextension"):
        series.set_openPMD_extension(int(info["openPMDextension"]))
    pp = info.get("particlesPath")
    if isinstance(pp, str) and pp.strip("/"):
        series.set_particles_path(pp)
    mp = info.get("meshesPath")
    if isinstance(mp, str) and mp.strip("/"):
        series.set_meshes_path(mp)
    for name, entry in (info.get("attributes") or {}).items():
        if name not in SERIES_STANDARD:
            set_attribute(series, name, entry, where)
    return series


def _resolve_encoding(path: str, iteration_encoding: Optional[str]) -> str:
    has_t = _PATTERN.search(os.path.basename(path)) is not None
    enc = iteration_encoding or ("file" if has_t else "group")
    aliases = {"file": "file", "filebased": "file", "file_based": "file",
               "group": "group", "groupbased": "group", "group_based": "group"}
    key = aliases.get(str(enc).lower())
    if key is None:
        raise UsageError(f"iteration_encoding must be 'file' or 'group', got {enc!r}")
    if key == "file" and not has_t:
        raise UsageError(f"{path}: file-based openPMD needs %T (or %06T) in the file name, e.g. data_%T.h5")
    if key != "file" and _PATTERN.search(path):
        raise UsageError(f"{path}: {key}-based openPMD writes one file; drop the %T from the name")
    if os.path.splitext(path)[1] not in (".h5", ".bp", ".bp4", ".bp5"):
        raise UsageError(f"{path}: openPMD output must end in .h5 (HDF5), or .bp, .bp4 or .bp5 (ADIOS2)")
    return key


def write(path: str, steps: Iterable[Step], *, iteration_encoding: Optional[str] = None,
          particle_patches: bool = True) -> None:
    """Writes steps as an openPMD 1.1.0 series (HDF5 for .h5, ADIOS2 for .bp).

    A step's ``fields`` become meshes of the iteration (see :mod:`.meshes`).

    ``iteration_encoding`` is ``"file"`` (one file per iteration; the path needs ``%T``) or
    ``"group"`` (all iterations in one file); the default follows the path. With
    ``particle_patches`` each species gets openPMD particlePatches: the species'
    ``attributes["motes_patches"]`` when given, else the patches it was read with (when
    still valid), else one patch with the bounding box of all its particles.
    """
    io = _io()
    path = os.fspath(path)
    encoding = _resolve_encoding(path, iteration_encoding)
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        raise UsageError(f"{path}: no such directory '{folder}'")
    series = None
    written: set = set()
    no_particles: List[int] = []
    prev_time: Optional[float] = None
    ok = False
    try:
        for step in steps:
            index = int(step.index)
            if index < 0:
                raise UsageError(f"{path}: iteration numbers must be >= 0, got {index}")
            if index in written:
                raise UsageError(f"{path}: step {index} given twice")
            attrs = dict(step.attributes or {})
            info = attrs.get("openpmd") if isinstance(attrs.get("openpmd"), dict) else {}
            if series is None:
                series = _create_series(io, path, encoding, info)
            where = f"{path}: iteration {index}"
            it = series.iterations[index]
            unit = attrs.get("timeUnitSI")
            unit = float(unit) if isinstance(unit, (int, float)) and not isinstance(unit, bool) and unit > 0 else 1.0
            raw = attrs.get("time")
            if isinstance(raw, (int, float)) and not isinstance(raw, bool) and \
                    math.isclose(float(raw) * unit, float(step.time), rel_tol=1e-12, abs_tol=0.0):
                t = float(raw)
            else:
                t = float(step.time) / unit
            dt = attrs.get("dt")
            if not isinstance(dt, (int, float)) or isinstance(dt, bool):
                dt = (t - prev_time) if prev_time is not None and t > prev_time else 1.0
            it.set_time(t)
            it.set_dt(float(dt))
            it.set_time_unit_SI(unit)
            prev_time = t
            for name, entry in (info.get("iteration_attributes") or {}).items():
                if name not in ITERATION_STANDARD:
                    set_attribute(it, name, entry, where)
            _json_attribute(it, {k: v for k, v in attrs.items() if k not in STEP_KEYS}, where, "step attributes")
            for sp in step.species.values():
                _write_species(io, series, it, path, index, sp, particle_patches)
            _write_meshes(io, series, it, path, index, step.fields or {})
            if step.fields:   # the meshes group's attributes (ED-PIC's fieldSolver, fieldBoundary, ...)
                for name, entry in (info.get("meshes_attributes") or {}).items():
                    set_attribute(it.meshes, name, entry, f"{where}, meshes")
            if not step.species:
                no_particles.append(index)
            try:
                it.close()
            except Exception as e:
                raise UsageError(f"{where}: cannot finish the iteration ({why(e)})") from None
            written.add(index)
        if series is None:
            raise UsageError(f"{path}: no steps to write")
        ok = True
    finally:
        if series is not None:
            try:
                series.close()
            except Exception as e:
                if ok:
                    raise StorageError(f"{path}: cannot close the openPMD series ({why(e)})", filename=path) from None
    if no_particles and path.endswith(".h5"):
        _add_empty_particle_groups(path, encoding, no_particles)


def _file_of(path: str, index: int) -> str:
    m = _PATTERN.search(path)
    if m is None:
        return path
    width = int(m.group(1)) if m.group(1) else 0
    return path[:m.start()] + str(index).zfill(width) + path[m.end():]


def _add_empty_particle_groups(path: str, encoding: str, indices: List[int]) -> None:
    """openpmd-api writes no particles group for an iteration without species; the openPMD
    validator then reports the particlesPath the other iterations set as missing. An empty
    group is what the standard expects."""
    import h5py  # noqa: PLC0415
    files = [(_file_of(path, i), [i]) for i in indices] if encoding == "file" else [(path, indices)]
    for name, its in files:
        with h5py.File(name, "r+") as f:
            pp = f.attrs.get("particlesPath")
            if pp is None:
                continue
            pp = pp.decode() if isinstance(pp, bytes) else str(pp)
            for i in its:
                group = f"/data/{i}/{pp}".rstrip("/")
                if f"/data/{i}" in f and group not in f:
                    f.create_group(group)
