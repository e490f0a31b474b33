"""openPMD as a conversion source: ``read(path)`` yields the iterations of a series as
motes steps, streaming each species ``chunk_rows`` rows at a time (``load_chunk``).

This module owns the openpmd-api side of reading: opening a series (with clear errors for
the usual mistakes), iterations and their attributes, one open iteration at a time
(:class:`_Handle`), and loading the rows and the meshes. Which columns the records become,
and their units, is decided in :mod:`.mapping`, which fields the meshes become in
:mod:`.meshes`; particlePatches are read by :mod:`.patches`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ...fields.model import Field
from ...errors import FormatError, NotFoundError, UsageError
from ..base import DEFAULT_CHUNK_ROWS, LazyFields, Species, Step, warn
from ..hdf5 import links as hdf5_links
from ..input_files import check_regular
from ..sources import PATTERN as _PATTERN
from . import patches
from .api import (COMPONENT_STANDARD, ITERATION_STANDARD, MESH_COMPONENT_STANDARD, MESH_STANDARD, RECORD_STANDARD,
                  SERIES_STANDARD, custom_attributes, io as _io, motes_attributes, plain, typed, why)
from .mapping import (CODE_TIMES, Component, assemble, canon, columns_of, extent_problem, particle_count,
                      where_of)
from .meshes import FieldPlan, Mesh, MeshComp, plan_fields, skip_reason

__all__ = ["read", "stream"]



def _precheck(path: str) -> None:
    """Clear errors for the common mistakes before openpmd-api prints its own diagnostics."""
    if _PATTERN.search(path):
        base = os.path.basename(path)
        mb = _PATTERN.search(base)
        if mb is None:
            raise UsageError(f"{path}: the iteration placeholder %T must be in the file name, not the directory")
        digits = r"\d+" if not mb.group(1) else r"\d{%d,}" % int(mb.group(1))
        rx = re.compile("^" + re.escape(base[:mb.start()]) + digits + re.escape(base[mb.end():]) + "$")
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            raise NotFoundError(f"{path}: no such directory '{folder}'", filename=folder)
        matches = sorted(f for f in os.listdir(folder) if rx.match(f))
        if not matches:
            raise NotFoundError(f"{path}: no file of the series exists (looked for {rx.pattern[1:-1]} in '{folder}')",
                                filename=path)
        files = [os.path.join(folder, m) for m in matches]
    else:
        if not os.path.exists(path):
            raise NotFoundError(f"{path}: no such file", filename=path)
        files = [path]
    for f in files:
        if os.path.isdir(f):  # an ADIOS2 BP series is a folder
            continue
        check_regular(f, "openPMD file", UsageError)  # opening a FIFO would block
        if f.endswith(".h5"):
            import h5py  # noqa: PLC0415
            if not h5py.is_hdf5(f):
                raise FormatError(f"{f}: not an HDF5 file, so not an openPMD series")
            with h5py.File(f, "r") as h:
                hdf5_links.check(f, h)  # no external link or virtual source outside its folder
                if f != files[0]:
                    continue
                if "openPMD" not in h.attrs:
                    raise FormatError(f"{f}: not an openPMD file (no 'openPMD' attribute at '/')")
                ver = h.attrs["openPMD"]
                ver = ver.decode() if isinstance(ver, bytes) else str(ver)
                if not ver.startswith("1."):
                    raise FormatError(f"{f}: openPMD version {ver} is not supported (motes reads 1.x)")


# verify_homogeneous_extents off: FBPIC (and other h5py-based writers) give constant records
# such as charge, mass and positionOffset the shape [1], not the particle count; openpmd-api
# would otherwise drop the whole species. _species_from checks the extents itself, record by
# record.
READ_OPTIONS = {"defer_iteration_parsing": True, "verify_homogeneous_extents": False}


def _axes_list(axes: Optional[Sequence[str]]) -> Optional[List[str]]:
    """The ``axes`` read option as a list of component names ("x,y,t" or ["x", "y", "t"])."""
    if axes is None:
        return None
    axes = [str(a) for a in ([axes] if isinstance(axes, str) else axes)]
    return axes[0].split(",") if len(axes) == 1 and "," in axes[0] else axes


def _open_for_read(io, path: str, access=None):
    _precheck(path)
    try:
        return io.Series(path, io.Access.read_only if access is None else access, json.dumps(READ_OPTIONS))
    except Exception as e:  # openpmd_api.Error, RuntimeError from ADIOS2
        raise FormatError(f"{path}: not a readable openPMD series ({why(e)})") from None


def _series_info(series) -> Dict[str, Any]:
    info: Dict[str, Any] = {}
    for name in SERIES_STANDARD:
        if series.contains_attribute(name):
            info[name] = plain(series.get_attribute(name))
    info["attributes"] = custom_attributes(series, SERIES_STANDARD)
    return info


def _components(io, rname: str, rec) -> List[Component]:
    """The components of a record, described for the mapping (shape and constancy only: the
    rest is read once the record is known to fit the species, see _describe)."""
    if rec.scalar:
        members = [("", rec[io.Record_Component.SCALAR])]
    else:
        members = list(rec.items())
    return [Component(rname, cname, tuple(int(s) for s in rc.shape), bool(rc.constant), handle=rc)
            for cname, rc in members]


def _describe(c: Component) -> None:
    rc = c.handle
    c.dtype, c.unit_si = canon(rc.dtype), float(rc.unit_SI)
    if c.is_constant:
        c.constant = plain(rc.get_attribute("value"))


def _species_from(io, handle: "_Handle", path: str, index: int, name: str, sp, chunk_rows: int,
                  software: Optional[str] = None, axes: Optional[List[str]] = None) -> Species:
    where = where_of(path, index, name)
    found: Dict[str, List[Component]] = {}
    for rname, rec in sp.items():
        found[rname] = _components(io, rname, rec)
    count, count_from = particle_count(found, where)
    records_meta: Dict[str, Any] = {}
    comps: Dict[Tuple[str, str], Component] = {}
    skipped: Dict[str, str] = {}
    for rname, rec in sp.items():
        problem = extent_problem(found[rname], count, count_from)
        if problem:
            if rname in ("position", "positionOffset"):
                raise FormatError(f"{where_of(path, index, name, rname)}: {problem}")
            skipped[rname] = problem  # a record motes cannot hold as columns: said, not silent
            warn(f"{where_of(path, index, name, rname)}: skipped: {problem}")
            continue
        is_scalar = bool(rec.scalar)
        rmeta: Dict[str, Any] = {
            "scalar": is_scalar,
            "unitDimension": [float(v) for v in rec.unit_dimension],
            "timeOffset": typed(rec.get_attribute("timeOffset"), rec.attribute_dtypes.get("timeOffset"))
            if rec.contains_attribute("timeOffset") else None,
            "attributes": custom_attributes(rec, RECORD_STANDARD + (COMPONENT_STANDARD if is_scalar else ())),
            "components": {},
        }
        for c in found[rname]:
            _describe(c)
            cmeta: Dict[str, Any] = {"unitSI": c.unit_si, "dtype": c.dtype.name}
            if c.is_constant:
                cmeta["constant"] = c.constant
            if not is_scalar:
                cmeta["attributes"] = custom_attributes(c.handle, COMPONENT_STANDARD)
            rmeta["components"][c.comp] = cmeta
            comps[(rname, c.comp)] = c
        records_meta[rname] = rmeta

    columns = columns_of(where, records_meta, comps, count, software, axes)
    meta: Dict[str, Any] = {
        "attributes": custom_attributes(sp, ()),
        "records": records_meta,
    }
    if skipped:
        meta["skipped"] = skipped
    series = handle.series
    read_patches = patches.read(io, series, sp, where)
    if read_patches is not None:
        meta["patches"] = read_patches
    attributes = dict(motes_attributes(sp, where))
    attributes["openpmd"] = meta

    def chunks() -> Iterator[Dict[str, np.ndarray]]:
        for start in range(0, count, chunk_rows):
            n = min(chunk_rows, count - start)
            pending: Dict[Tuple[str, str], np.ndarray] = {}
            handle.activate(index)
            for c in columns:
                for comp in (c.comp, c.offset):
                    if comp is not None and comp.constant is None and (comp.record, comp.comp) not in pending:
                        pending[(comp.record, comp.comp)] = comp.handle.load_chunk([start], [n])
            if pending:
                try:
                    series.flush()
                except Exception as e:
                    raise FormatError(f"{where}: reading rows {start}..{start + n} failed ({why(e)})") from None
            yield assemble(columns, n, pending)

    return Species(name=name, columns=[(c.name, c.dtype) for c in columns], count=count, chunks=chunks,
                   units={c.name: c.unit for c in columns if c.unit}, attributes=attributes)


def _mesh(name: str, m, where: str) -> Mesh:
    """A mesh record described for the mapping (the datasets stay unread)."""
    try:
        comps = []
        for cname, rc in m.items():
            comps.append(MeshComp("" if m.scalar else cname, tuple(int(s) for s in rc.shape), canon(rc.dtype),
                                  float(rc.unit_SI), [float(p) for p in rc.position],
                                  plain(rc.get_attribute("value")) if rc.constant else None,
                                  {} if m.scalar else custom_attributes(rc, MESH_COMPONENT_STANDARD), rc))
        extra = {"": motes_attributes(m, where)}
        if not m.scalar:
            extra.update({c.comp: motes_attributes(c.handle, f"{where}, component '{c.comp}'") for c in comps})
        return Mesh(name, bool(m.scalar), m.geometry_string, str(m.data_order), [str(a) for a in m.axis_labels],
                    [float(v) for v in m.grid_spacing], [float(v) for v in m.grid_global_offset],
                    float(m.grid_unit_SI), [float(v) for v in m.unit_dimension], comps,
                    str(m.get_attribute("geometryParameters")) if m.contains_attribute("geometryParameters") else None,
                    typed(m.get_attribute("timeOffset"), m.attribute_dtypes.get("timeOffset"))
                    if m.contains_attribute("timeOffset") else None,
                    custom_attributes(m, MESH_STANDARD + (MESH_COMPONENT_STANDARD if m.scalar else ())), extra)
    except (FormatError, UsageError):
        raise
    except Exception as e:  # openpmd_api.Error, RuntimeError: an attribute missing or of the wrong type
        raise FormatError(f"{where}: cannot read the mesh's attributes ({why(e)})") from None


def _fields(handle: "_Handle", path: str, index: int, it) -> LazyFields:
    """The fields of an iteration's meshes, their layout checked now, each read when looked up."""
    loaders: Dict[str, Callable[[], Field]] = {}
    kinds: Dict[str, str] = {}
    for name in it.meshes:
        where = f"{path}: iteration {index}, mesh '{name}'"
        mesh = _mesh(name, it.meshes[name], where)
        problem = skip_reason(mesh)
        if problem and "axisLabels ['']" in problem and path.endswith(".sst"):
            problem += (" (ADIOS2 SST's default BP5 marshaling loses string-array attributes such as axisLabels on "
                        "the way: the producer keeps them with the SST engine parameter MarshalMethod=BP)")
        if problem:  # a mesh motes cannot hold as a field: said, not silent
            warn(f"{where}: skipped: {problem}")
            continue
        for plan in plan_fields(where, mesh):
            if plan.name in loaders:
                raise UsageError(f"{where}: makes field '{plan.name}', which another mesh makes too")
            loaders[plan.name] = _field_loader(handle, index, where, plan)
            kinds[plan.name] = mesh.geometry   # openPMD meshes are uniform: cartesian or thetaMode
    return LazyFields(loaders, kinds.get)


def _field_loader(handle: "_Handle", index: int, where: str, plan: FieldPlan) -> Callable[[], Field]:
    def load() -> Field:
        handle.activate(index)
        arrays = [np.full(c.shape, c.constant, dtype=c.dtype) if c.constant is not None else c.handle.load_chunk()
                  for c in plan.comps]
        try:
            handle.series.flush()
        except Exception as e:
            raise FormatError(f"{where}: reading the mesh failed ({why(e)})") from None
        return plan.field(arrays)

    return load


def read(path: str, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, species: Optional[List[str]] = None,
         steps: Optional[List[int]] = None, axes: Optional[Sequence[str]] = None) -> Iterator[Step]:
    """The iterations of an openPMD series as motes steps (see the module doc for the mapping);
    the meshes of an iteration become the step's ``fields`` (:mod:`.meshes`), each read when
    it is looked up.

    ``path`` is an openPMD series path: file-based (``data_%T.h5``, ``data_%06T.h5``) or one
    file with all iterations (``data.h5``, ``data.bp``). ``species`` and ``steps`` select
    species names and iteration numbers. ``axes`` puts position components on the motes
    axes x, y, z (in that order, ``"-"`` for none: ``["x", "y", "t"]``); by default the
    rule of :func:`.mapping.position_axes` does. The series stays open while the returned
    iterator is alive; a species' ``chunks()`` can be called again as long as it is.
    """
    io = _io()
    path = os.fspath(path)
    if int(chunk_rows) < 1:
        raise UsageError(f"chunk_rows must be at least 1, got {chunk_rows}")
    series = _open_for_read(io, path)
    axes = _axes_list(axes)
    if series.iteration_encoding == io.Iteration_Encoding.variable_based:
        # ADIOS2 steps: read once, in order, each iteration while it is the stream's current one
        series.close()
        linear = _open_for_read(io, path, io.Access.read_linear)
        return _iterate_linear(io, linear, path, steps, int(chunk_rows), species, axes)
    available = [int(i) for i in series.iterations]
    if steps is not None:
        missing = [s for s in steps if int(s) not in available]
        if missing:
            raise UsageError(f"{path}: no iteration {', '.join(map(str, missing))} "
                             f"(the series has {', '.join(map(str, available)) or 'none'})")
        wanted = set(int(s) for s in steps)
        selected = [i for i in available if i in wanted]
    else:
        selected = available
    info = _series_info(series)
    return _iterate(io, series, path, selected, info, int(chunk_rows), species, axes)


class _Handle:
    """The open series of a read() and the one iteration kept open at a time.

    Species' chunks() may be called after read() moved on (or finished): they reopen their
    iteration, closing the one open before, so a long file-based series never holds more
    than one file open. The series closes when the last step referring to it is gone."""

    def __init__(self, series, path: str):
        self.series = series
        self.path = path
        self.current: Optional[int] = None

    def activate(self, index: int):
        it = self.series.iterations[index]
        if self.current != index:
            if self.current is not None:
                try:
                    self.series.iterations[self.current].close()
                except Exception:  # noqa: BLE001 - closing a read-only iteration; the next open reports
                    pass
            try:
                it.open()
            except Exception as e:
                raise FormatError(f"{self.path}: cannot open iteration {index} ({why(e)})") from None
            self.current = index
        return it


def _iterate(io, series, path: str, selected: List[int], info: Dict[str, Any], chunk_rows: int,
             species: Optional[List[str]], axes: Optional[List[str]] = None) -> Iterator[Step]:
    found: set = set()
    handle = _Handle(series, path)
    for index in selected:
        it = handle.activate(index)
        yield _step(io, handle, path, index, it, info, chunk_rows, species, axes, found)
    _check_found(path, species, found, bool(selected))


class _StreamHandle(_Handle):
    """The one iteration a variable-based series (ADIOS2 steps, read linearly) has open: its
    species and fields are read while it is the current step, never after."""

    def __init__(self, series, path: str):
        super().__init__(series, path)
        self.it = None

    def activate(self, index: int):
        if index != self.current or self.it is None:
            raise FormatError(f"{self.path}: iteration {index} was read as a stream and is gone (a variable-based "
                              "series is read once, in order: use each step before asking for the next)")
        return self.it


def _iterate_linear(io, series, path: str, steps: Optional[List[int]], chunk_rows: int,
                    species: Optional[List[str]], axes: Optional[List[str]], eager: bool = False) -> Iterator[Step]:
    """The iterations of a variable-based series in the order written, each open while the
    consumer uses its step (until it asks for the next): ``steps`` keeps those numbers only.
    ``eager``: each step's rows and fields are read into memory and its iteration ended
    before the step is handed out (a stream's producer waits for no one but the copy)."""
    found: set = set()
    handle = _StreamHandle(series, path)
    wanted = None if steps is None else set(int(k) for k in steps)
    seen: List[int] = []
    info: Optional[Dict[str, Any]] = None  # the series' attributes, known once a step is open
    try:
        for it in series.read_iterations():
            index = int(it.iteration_index)
            seen.append(index)
            step = None
            if wanted is None or index in wanted:
                handle.current, handle.it = index, it
                info = info if info is not None else _series_info(series)
                step = _step(io, handle, path, index, it, info, chunk_rows, species, axes, found)
                if eager:
                    step = _in_memory(step)
                else:
                    yield step
                handle.it = None
            try:
                it.close()
            except Exception as e:
                raise FormatError(f"{path}: cannot end iteration {index} of the stream ({why(e)})") from None
            if eager and step is not None:
                yield step
    except (FormatError, UsageError):
        raise
    except Exception as e:  # openpmd_api.Error, RuntimeError from ADIOS2 mid-stream
        if not seen:  # the producer never came (openpmd-api opens a stream on its first step)
            raise FormatError(f"{path}: cannot open the openPMD stream ({why(e)})") from None
        raise FormatError(f"{path}: reading the stream failed after iterations {seen[-5:]} ({why(e)})") from None
    finally:
        handle.it = None
    if wanted is not None:
        missing = sorted(wanted - set(seen))
        if missing:
            raise UsageError(f"{path}: no iteration {', '.join(map(str, missing))} "
                             f"(the series has {', '.join(map(str, seen)) or 'none'})")
    _check_found(path, species, found, bool(seen))


def _in_memory(step: Step) -> Step:
    """The step with its species' rows and its fields read now (they no longer need the file)."""
    species = {}
    for name, sp in step.species.items():
        chunks = list(sp.chunks())
        species[name] = dataclasses.replace(sp, chunks=lambda chunks=chunks: iter(chunks))
    fields = {name: step.fields[name] for name in step.fields}
    kinds = {name: step.fields.kind(name) for name in fields}
    return dataclasses.replace(step, species=species,
                               fields=LazyFields({n: (lambda f=f: f) for n, f in fields.items()}, kinds.get))


def stream(path: str, *, timeout: float = 60.0, chunk_rows: int = DEFAULT_CHUNK_ROWS,
           species: Optional[List[str]] = None, axes: Optional[Sequence[str]] = None) -> Iterator[Step]:
    """The iterations of an openPMD stream as motes steps, in order, each read into memory and
    its iteration ended before it is handed out (so the producer is released at once): an
    ADIOS2 SST stream (``name.sst``; the producer's contact file ``name.sst.sst`` is looked
    for in the working directory), a BP4/BP5 file still being written, or any series read
    linearly. Waits up to ``timeout`` seconds for the producer to open the stream (ADIOS2's
    OpenTimeoutSecs), then for each next step as long as the producer keeps it open; the
    iterator ends when the producer closes the stream."""
    io = _io()
    path = os.fspath(path)
    timeout = float(timeout)
    if not timeout > 0:
        raise UsageError(f"timeout must be a positive number of seconds, got {timeout}")
    options = dict(READ_OPTIONS, adios2={"engine": {"parameters": {"OpenTimeoutSecs": str(timeout)}}})
    try:
        series = io.Series(path, io.Access.read_linear, json.dumps(options))
    except Exception as e:  # openpmd_api.Error, RuntimeError from ADIOS2: no producer in time
        raise FormatError(f"{path}: cannot open the openPMD stream ({why(e)})") from None
    axes = _axes_list(axes)
    return _iterate_linear(io, series, path, None, int(chunk_rows), species, axes, eager=True)


def _step(io, handle: _Handle, path: str, index: int, it, info: Dict[str, Any], chunk_rows: int,
          species: Optional[List[str]], axes: Optional[List[str]], found: set) -> Step:
    """The motes step of open iteration ``it`` (``found``: the species names seen so far)."""
    where = f"{path}: iteration {index}"
    attributes = motes_attributes(it, where)
    unit = float(it.time_unit_SI)
    attributes.update({
        "time": float(it.time), "dt": float(it.dt), "timeUnitSI": unit,
        "openpmd": dict(info, iteration_attributes=custom_attributes(it, ITERATION_STANDARD),
                        meshes=sorted(it.meshes), meshes_attributes=custom_attributes(it.meshes, ())),
    })
    out: Dict[str, Species] = {}
    for name in it.particles:
        if species is not None and name not in species:
            continue
        found.add(name)
        out[name] = _species_from(io, handle, path, index, name, it.particles[name], chunk_rows,
                                  info.get("software"), axes)
    code_time = CODE_TIMES.get(str(info.get("software", "")))
    if code_time is not None:
        attributes["time_quantity"], attributes["time_unit"] = code_time
        # the reference particle of each species (ImpactX's *_ref attributes)
        refs = {name: {k[:-4]: v["value"] for k, v in sp.attributes["openpmd"]["attributes"].items()
                       if k.endswith("_ref") and isinstance(v, dict) and "value" in v}
                for name, sp in out.items()}
        if any(refs.values()):
            attributes["reference_particle"] = {n: r for n, r in refs.items() if r}
    return Step(index=index, time=float(it.time) * unit, attributes=attributes, species=out,
                fields=_fields(handle, path, index, it))


def _check_found(path: str, species: Optional[List[str]], found: set, any_step: bool) -> None:
    if species is not None:
        missing = [s for s in species if s not in found]
        if missing and any_step:
            raise UsageError(f"{path}: no particle species {', '.join(repr(s) for s in missing)} "
                             "in the selected iterations")
