"""VTKHDF output: particles as a VTK PolyData of vertex cells, for ParaView >= 5.12 / VTK >= 9.3.

Layout (VTKHDF format version 2.0, the first with temporal PolyData)::

    /VTKHDF                      attributes Version = [2, 0] (int64), Type = "PolyData"
                                 (fixed-length ASCII string)
        NumberOfPoints           (parts,) int64: points of each step
        Points                   (N, 3) float32 or float64: x, y, z of all steps, step after step
        Vertices/                one vertex cell per particle
            NumberOfCells        (parts,) int64 = NumberOfPoints
            NumberOfConnectivityIds (parts,) int64 = NumberOfPoints
            Offsets              (N + parts,) int64: 0, 1, ..., n for each step
            Connectivity         (N,) int64: 0, 1, ..., n - 1 for each step (ids local to the step)
        Lines/, Polygons/, Strips/   the same four datasets, empty (0 cells, Offsets = [0] per step)
        PointData/<column>       (N,) every column other than x, y, z, in its own dtype
                                 (dataset attribute "unit" when the column has a unit)
        CellData/, FieldData/    empty
        Steps/                   only when there are several steps; attribute NSteps (int64)
            Values               (NSteps,) float64: the times
            PartOffsets          (NSteps,) int64: 0, 1, 2, ... (one part per step)
            NumberOfParts        (NSteps,) int64: 1, 1, ...
            PointOffsets         (NSteps,) int64: first point of each step in Points
            CellOffsets          (NSteps, 4) int64: cells before each step (Vertices, Lines, Polygons, Strips)
            ConnectivityIdOffsets (NSteps, 4) int64: connectivity ids before each step, same order
            PointDataOffsets/<column> (NSteps,) int64 = PointOffsets
    /motes                       outside the VTKHDF group (ignored by VTK): species name, step
                                 indices, times and step attributes (JSON text) for provenance

All datasets but the Steps metadata are chunked and resizable (maxshape None); points and
columns are appended chunk by chunk, so memory stays bounded by the source's chunk size.

With ``fields=`` the file is an ImageData of the steps' grid fields instead: see
:mod:`motes.convert.vtkhdf.image` (``write_image`` writes fields without steps).
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from ...errors import UsageError
from ..base import Species, Step, check_dtype, chunk_column, grid_kind, one_species, pick_species, warn
from ..spelling import option
from .steps import StepLog
from ..hdf5 import created_file, h5_filter
from .image import write_fields, write_image

__all__ = ["write", "write_image"]

VERSION = (2, 0)
TOPOLOGIES = ("Vertices", "Lines", "Polygons", "Strips")   # the order of CellOffsets' columns
POSITION = ("x", "y", "z")
_META_CHUNK = 256
_DATA_CHUNK = 1 << 14


def _append(ds, a) -> None:
    a = np.asarray(a)
    n0 = ds.shape[0]
    ds.resize(n0 + a.shape[0], axis=0)
    ds[n0:] = a


def _resizable(parent, name: str, dtype, chunk_rows: int, width: Optional[int] = None, filters=None):
    if width is None:
        return parent.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype, chunks=(chunk_rows,),
                                     **(filters or {}))
    return parent.create_dataset(name, shape=(0, width), maxshape=(None, width), dtype=dtype,
                                 chunks=(chunk_rows, width), **(filters or {}))


class _PolyDataWriter:
    def __init__(self, path: str, f, filters=None):
        self.path = path
        self.f = f
        self.filters = filters or {}
        root = f.create_group("VTKHDF")
        root.attrs.create("Version", np.array(VERSION, dtype=np.int64))
        # Type must be a fixed-length ASCII string: np.bytes_ makes h5py write exactly that.
        root.attrs.create("Type", np.bytes_(b"PolyData"))
        self.root = root
        self.number_of_points = _resizable(root, "NumberOfPoints", np.int64, _META_CHUNK)
        self.topo = {}
        for t in TOPOLOGIES:
            g = root.create_group(t)
            self.topo[t] = {
                "NumberOfCells": _resizable(g, "NumberOfCells", np.int64, _META_CHUNK),
                "NumberOfConnectivityIds": _resizable(g, "NumberOfConnectivityIds", np.int64, _META_CHUNK),
                "group": g,
            }
        for t in TOPOLOGIES:
            g = self.topo[t]["group"]
            rows = _DATA_CHUNK if t == "Vertices" else _META_CHUNK
            self.topo[t]["Offsets"] = _resizable(g, "Offsets", np.int64, rows)
            self.topo[t]["Connectivity"] = _resizable(g, "Connectivity", np.int64, rows)
        self.point_data = root.create_group("PointData")
        root.create_group("CellData")
        root.create_group("FieldData")
        self.points = None            # created with the first species (dtype, chunk size)
        self.arrays: Dict[str, object] = {}
        self.columns: Optional[List[str]] = None
        self.names0: List[str] = []
        self.steps = StepLog(path)  # per step metadata
        self.point_offsets: List[int] = []
        self.total_points = 0

    def _create(self, where: str, sp: Species) -> None:
        names = sp.column_names()
        missing = [c for c in ("x", "y") if c not in names]
        if missing:
            raise UsageError(f"{where}: no column {', '.join(missing)}; VTK points need x, y (and z) "
                             f"(columns: {', '.join(names) or 'none'})")
        dtypes = dict(sp.columns)
        pos_dt = np.result_type(*[check_dtype(where, c, dtypes[c]) for c in POSITION if c in dtypes])
        pos_dt = np.dtype(np.float32) if pos_dt == np.float32 else np.dtype(np.float64)
        rows = int(min(1 << 16, max(1024, sp.count)))
        self.points = _resizable(self.root, "Points", pos_dt, rows, width=3, filters=self.filters)
        self.names0 = list(names)
        self.columns = [c for c in names if c not in POSITION]
        for c in self.columns:
            if "/" in c or "." in c or not c:
                raise UsageError(f"{where}: column name {c!r} cannot be a VTKHDF array name "
                                 "(VTKHDF forbids '/' and '.' in array names)")
            ds = _resizable(self.point_data, c, check_dtype(where, c, dtypes[c]), rows, filters=self.filters)
            unit = sp.units.get(c)
            if unit:
                ds.attrs["unit"] = str(unit)
            self.arrays[c] = ds

    def _ensure_points(self) -> None:
        if self.points is None:  # no step had particles: an empty, valid PolyData
            self.points = _resizable(self.root, "Points", np.float32, _META_CHUNK, width=3)
            self.columns = []

    def add_step(self, step: Step, sp: Optional[Species]) -> None:
        where = f"{self.path}: step {step.index}" + (f" (species '{sp.name}')" if sp is not None else "")
        self.steps.add(step, where)
        self.point_offsets.append(self.total_points)
        if sp is not None and self.points is None:
            self._create(where, sp)
        n = 0
        _append(self.topo["Vertices"]["Offsets"], [0])   # each part's Offsets start at 0
        if sp is not None:
            names = sp.column_names()
            others = [c for c in names if c not in POSITION]
            if set(others) != set(self.columns) or ("z" in names) != ("z" in self.names0):
                raise UsageError(f"{where}: columns {', '.join(names)} differ from the first step's "
                                 f"({', '.join(self.names0)}); a VTKHDF time series has one set of arrays")
            dtypes = dict(sp.columns)
            for c in POSITION:
                if c in dtypes:
                    check_dtype(where, c, dtypes[c])
            for c in self.columns:
                dt = check_dtype(where, c, dtypes[c])
                if not np.can_cast(dt, self.arrays[c].dtype, "safe"):
                    raise UsageError(f"{where}: column '{c}' is {dt} here but {self.arrays[c].dtype} in the first "
                                     "step; a VTKHDF array has one type")
            n = self._stream(where, sp)
        # vertex topology: one cell per point, ids local to the step
        v = self.topo["Vertices"]
        _append(v["NumberOfCells"], [n])
        _append(v["NumberOfConnectivityIds"], [n])
        for t in TOPOLOGIES[1:]:
            d = self.topo[t]
            _append(d["NumberOfCells"], [0])
            _append(d["NumberOfConnectivityIds"], [0])
            _append(d["Offsets"], [0])
        _append(self.number_of_points, [n])
        self.total_points += n

    def _stream(self, where: str, sp: Species) -> int:
        count = int(sp.count)
        pos = 0
        v = self.topo["Vertices"]
        for chunk in sp.chunks():
            m = None
            for c in ("x", "y", "z") + tuple(self.columns):
                if c == "z" and "z" not in sp.column_names():
                    continue
                a = chunk_column(chunk, c, where)
                if m is None:
                    m = len(a)
                elif len(a) != m:
                    raise UsageError(f"{where}: chunk columns have unequal lengths ('{c}': {len(a)}, expected {m})")
            if not m:
                continue
            if pos + m > count:
                raise UsageError(f"{where}: chunks hold more rows than the species' count {count}")
            pts = np.empty((m, 3), dtype=self.points.dtype)
            pts[:, 0] = chunk["x"]
            pts[:, 1] = chunk["y"]
            pts[:, 2] = chunk["z"] if "z" in chunk and "z" in sp.column_names() else 0
            _append(self.points, pts)
            for c in self.columns:
                _append(self.arrays[c], np.asarray(chunk[c]).astype(self.arrays[c].dtype, copy=False))
            _append(v["Connectivity"], np.arange(pos, pos + m, dtype=np.int64))
            _append(v["Offsets"], np.arange(pos + 1, pos + m + 1, dtype=np.int64))
            pos += m
        if pos != count:
            raise UsageError(f"{where}: chunks hold {pos} rows but the species' count is {count}")
        return pos

    def finish(self, species_name: Optional[str]) -> None:
        self._ensure_points()
        nsteps = len(self.steps)
        if nsteps > 1:
            s = self.steps.steps_group(self.root, stacklevel=3)
            s.create_dataset("PartOffsets", data=np.arange(nsteps, dtype=np.int64))
            s.create_dataset("NumberOfParts", data=np.ones(nsteps, dtype=np.int64))
            point_offsets = np.asarray(self.point_offsets, dtype=np.int64)
            s.create_dataset("PointOffsets", data=point_offsets)
            # One vertex cell and one connectivity id per point: both offsets equal the point offsets.
            cells = np.zeros((nsteps, len(TOPOLOGIES)), dtype=np.int64)
            cells[:, 0] = point_offsets
            s.create_dataset("CellOffsets", data=cells)
            s.create_dataset("ConnectivityIdOffsets", data=cells.copy())
            pdo = s.create_group("PointDataOffsets")
            for c in self.columns or []:
                pdo.create_dataset(c, data=point_offsets)
        m = self.f.create_group("motes")
        if species_name is not None:
            m.attrs["species"] = species_name
        self.steps.record(m)


def write(path, steps: Iterable[Step], *, species: Optional[Union[str, Sequence[str]]] = None,
          compression: str = "none", fields: Union[None, bool, str, Sequence[str]] = None) -> None:
    """Writes steps as a VTKHDF PolyData file with one vertex cell per particle (temporal when
    there are several steps). Points are x, y, z (z = 0 when there is no z column); every
    other column becomes a point data array.

    species: the species to write; needed when a step holds several (a VTKHDF PolyData holds
    one point set). A step without it is written with no points. The file is removed on error.
    compression: "none", or an HDF5 filter on the points and point data ("gzip", which VTK
    reads; "zstd", "blosc2": the reader needs hdf5plugin).

    fields: write the steps' grid fields instead, as a VTKHDF ImageData (a VTKHDF file holds
    one kind of dataset): True for every field, or a field name or list of names; see
    :func:`motes.convert.vtkhdf.image.write_fields`. The particles are then not written
    (a ConversionWarning says so); without ``fields=``, fields are not written (likewise)."""
    path = os.fspath(path)
    if fields is not None and fields is not False:
        if species is not None:
            raise UsageError(f"{path}: species= and fields= exclude each other: a VTKHDF file holds particles "
                             "(PolyData) or fields (ImageData); write one file each")
        write_fields(path, _left_out(path, steps, "species", "particles"), fields, compression)
        return
    filters = h5_filter(compression)
    wanted = one_species(species, "a VTKHDF PolyData file")
    with created_file(path) as f:
        w = _PolyDataWriter(path, f, filters)
        chosen = wanted
        for step in _left_out(path, steps, "fields", "fields"):
            sp = pick_species(path, step, wanted, chosen, "a VTKHDF PolyData file")
            if sp is not None:
                if chosen is None:
                    chosen = sp.name
            w.add_step(step, sp)
        if not len(w.steps):
            raise UsageError(f"{path}: no steps to write")
        w.finish(chosen)


def _left_out(path: str, steps: Iterable[Step], attr: str, what: str) -> Iterable[Step]:
    """The steps, with one ConversionWarning when some hold ``what`` (their ``attr``: "species"
    or "fields") that this file leaves out, saying how to write them to a second file."""
    warned = False
    for step in steps:
        if not warned and getattr(step, attr):
            warned = True
            names = ", ".join(getattr(step, attr))
            how = _fields_file(step.fields) if attr == "fields" else \
                "write them to a second file without " + option("write_options['fields']", "--fields")
            warn(f"{path}: the steps hold {what} ({names}), which this VTKHDF file leaves out (a VTKHDF file holds "
                 f"particles or fields): {how}", stacklevel=3)
        yield step


def _fields_file(fields) -> str:
    """How to write a step's fields to a VTKHDF image: the uniform Cartesian ones with the
    fields option (all of them, or those named); what other grids need."""
    kinds = {name: grid_kind(fields, name) for name in fields}
    images = [n for n, k in kinds.items() if k in (None, "cartesian")]   # None: the source cannot tell
    others = [n for n in kinds if n not in images]
    if not others:
        return "write them to a second file with " + option("write_options={'fields': True}", "--fields")
    out = []
    if images:
        out.append("write " + ", ".join(images) + " to a second file with " + option(
            f"write_options={{'fields': {images!r}}}", "--fields " + ",".join(images)))
    out.append("a VTKHDF image takes uniform Cartesian grids, not " + ", ".join(f"{n} ({kinds[n]})" for n in others))
    if any(kinds[n] == "thetaMode" for n in others):
        out.append("resample a thetaMode field first, in Python: motes.open(DATASET).field(NAME, step)"
                   ".cartesian().to_field() is a Cartesian motes.Field, which motes.convert.vtkhdf.write_image "
                   "writes")
    return "; ".join(out)
