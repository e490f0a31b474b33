"""VTKHDF ImageData output: grid fields on one uniform grid, for ParaView >= 5.12 / VTK >= 9.3.

Layout (VTKHDF format version 2.0; ``n`` = points of the image per axis)::

    /VTKHDF                 attributes Version = [2, 0] (int64), Type = "ImageData" (fixed-length
                            ASCII), WholeExtent = [0, nx-1, 0, ny-1, 0, nz-1] (int64),
                            Origin, Spacing (float64[3], x, y, z), Direction = identity (float64[9])
        PointData/<field>   a node-centred field: one value per point
        CellData/<field>    a cell-centred field: one value per cell (n - 1 per axis)
        FieldData/          empty
        Steps/              only with several steps; attribute NSteps (int64)
            Values          (NSteps,) float64: the step times
            PointDataOffsets/<field>, CellDataOffsets/<field>   (NSteps,) int64: 0, 1, 2, ...
    /motes                  outside /VTKHDF (ignored by VTK): step_index, time, step_attributes
                            (JSON text) and, per field, attributes of /motes/fields/<field>

A field's dataset has the dims of its points (or cells) in (z, y, x) order without the axes
where the image has a single point (what VTK's own vtkHDFWriter writes: (ny, nx) for a 2-D
image), then the components of a vector field, and with several steps a leading step axis.
The image's points are the samples of the node-centred fields; a cell-centred field's cells
start at its origin, so its image has one point more per axis than the field has samples.
All fields of a file must give the same image (origin, spacing, points).
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ...fields.model import Field, require_cartesian
from ...errors import UsageError
from ..base import Step
from ..hdf5 import created_file, h5_filter
from .steps import StepLog

__all__ = ["write_image", "write_fields"]

VERSION = (2, 0)
Grid = Tuple[Tuple[float, ...], Tuple[float, ...], Tuple[int, ...]]   # origin, spacing, points (x, y, z)


def image_grid(where: str, name: str, fld: Field) -> Grid:
    """The image a field lies on: origin, spacing and number of points per axis, (x, y, z)."""
    if not isinstance(fld, Field):
        raise UsageError(f"{where}: field '{name}' must be a motes.Field, got {type(fld).__name__}")
    require_cartesian(fld, f"{where}: field '{name}'", "a VTKHDF ImageData")
    if not fld.uniform:
        raise UsageError(f"{where}: field '{name}' is on a rectilinear grid (coords); a VTKHDF ImageData "
                         "needs a uniform one (origin and spacing)")
    pad = 3 - fld.ndim
    extra = 1 if fld.centering == "cell" else 0
    return (tuple(fld.origin) + (0.0,) * pad, tuple(fld.spacing) + (1.0,) * pad,
            tuple(n + extra for n in fld.dims) + (1,) * pad)


def _dims(grid: Grid, cell: bool) -> Tuple[int, ...]:
    """The dataset dims of one step of a field: (z, y, x) without the image's single-point axes."""
    points = grid[2]
    return tuple(n - 1 if cell else n for n in reversed(points) if n > 1) or (1,)


def _step_chunks(dims: Tuple[int, ...], itemsize: int, target: int = 1 << 22) -> Tuple[int, ...]:
    """Chunks of a time series' dataset: one step deep (a reader reads one step), the longest
    axes halved until a chunk holds at most ``target`` bytes (HDF5 caps chunks at 4 GiB)."""
    chunk = list(dims)
    while int(np.prod(chunk)) * itemsize > target and max(chunk) > 1:
        k = int(np.argmax(chunk))
        chunk[k] = (chunk[k] + 1) // 2
    return (1,) + tuple(chunk)


def _name_ok(where: str, name: Any) -> None:
    if not isinstance(name, str) or not name or "/" in name or "." in name:
        raise UsageError(f"{where}: field name {name!r} cannot be a VTKHDF array name "
                         "(VTKHDF forbids '/' and '.' in array names)")


class _ImageWriter:
    """Writes the fields of the steps given to :meth:`add`, one field at a time."""

    def __init__(self, path: str, f, names: Optional[Sequence[str]], temporal: bool, filters=None):
        self.path, self.f, self.names, self.temporal = path, f, names, temporal
        self.filters = filters or {}
        self.grid: Optional[Grid] = None
        self.first = ""                       # the field that set the grid (named by errors)
        self.arrays: Dict[str, Any] = {}      # field -> its dataset
        self.kinds: Dict[str, Tuple[bool, Optional[int], np.dtype]] = {}   # cell?, components, dtype
        self.steps = StepLog(path)
        root = f.create_group("VTKHDF")
        root.attrs.create("Version", np.array(VERSION, dtype=np.int64))
        root.attrs.create("Type", np.bytes_(b"ImageData"))   # a fixed-length ASCII string, as VTK wants
        self.root = root
        self.data = {False: root.create_group("PointData"), True: root.create_group("CellData")}
        root.create_group("FieldData")
        self.meta = f.create_group("motes").create_group("fields")

    def add(self, step: Step) -> None:
        where = f"{self.path}: step {step.index}"
        self.steps.add(step, where)
        fields = step.fields or {}
        names = list(fields) if self.names is None else list(self.names)
        missing = [n for n in names if n not in fields]
        if missing:
            raise UsageError(f"{where}: no field {', '.join(map(repr, missing))} "
                             f"(fields: {', '.join(fields) or 'none'})")
        if self.arrays and set(names) != set(self.arrays):
            raise UsageError(f"{where}: fields {', '.join(names) or 'none'} differ from the first step's "
                             f"({', '.join(self.arrays)}); a VTKHDF time series has one set of arrays")
        if not names:
            raise UsageError(f"{where}: no fields to write")
        for name in names:
            self._write(where, name, fields[name])   # looked up once: a source's LazyFields reads it here

    def _write(self, where: str, name: str, fld: Field) -> None:
        _name_ok(where, name)
        grid = image_grid(where, name, fld)
        if self.grid is None:
            self.grid, self.first = grid, name
            self._geometry(grid)
        elif grid != self.grid:
            raise UsageError(f"{where}: field '{name}' lies on another grid (origin, spacing, points "
                             f"{grid}) than field '{self.first}' ({self.grid}); a VTKHDF ImageData has one grid")
        cell = fld.centering == "cell"
        ncomp = None if fld.components is None else len(fld.components)
        kind = (cell, ncomp, fld.array.dtype)
        dims = _dims(grid, cell) + ((ncomp,) if ncomp is not None else ())
        values = np.ascontiguousarray(fld.array).reshape(dims)
        if name not in self.arrays:
            group = self.data[cell]
            if self.temporal:
                ds = group.create_dataset(name, shape=(0,) + dims, maxshape=(None,) + dims, dtype=fld.array.dtype,
                                          chunks=_step_chunks(dims, fld.array.dtype.itemsize), **self.filters)
            else:
                ds = group.create_dataset(name, data=values, chunks=True if self.filters else None, **self.filters)
            if fld.unit:
                ds.attrs["unit"] = fld.unit
            self.arrays[name], self.kinds[name] = ds, kind
            self._describe(where, name, fld)
        elif self.kinds[name] != kind:
            raise UsageError(f"{where}: field '{name}' is {self._kind_text(kind)} here but "
                             f"{self._kind_text(self.kinds[name])} in the first step; a VTKHDF array has one type")
        if self.temporal:
            ds = self.arrays[name]
            ds.resize(ds.shape[0] + 1, axis=0)
            ds[-1] = values

    @staticmethod
    def _kind_text(kind) -> str:
        cell, ncomp, dtype = kind
        return f"{'cell' if cell else 'node'}-centred {dtype}" + (f" with {ncomp} components" if ncomp else "")

    def _geometry(self, grid: Grid) -> None:
        origin, spacing, points = grid
        a = self.root.attrs
        a.create("WholeExtent", np.array([v for n in points for v in (0, n - 1)], dtype=np.int64))
        a.create("Origin", np.array(origin, dtype=np.float64))
        a.create("Spacing", np.array(spacing, dtype=np.float64))
        a.create("Direction", np.eye(3).reshape(-1))

    def _describe(self, where: str, name: str, fld: Field) -> None:
        """What VTK has no place for (component names, centering, attributes): /motes/fields/<name>."""
        g = self.meta.create_group(name)
        g.attrs["centering"] = fld.centering
        if fld.components is not None:
            g.attrs["components"] = list(fld.components)
        try:
            g.attrs["attributes"] = json.dumps(fld.attributes)
        except (TypeError, ValueError) as e:
            raise UsageError(f"{where}: field '{name}' attributes are not JSON-serialisable ({e})") from None

    def finish(self) -> None:
        nsteps = len(self.steps)
        if self.temporal:
            s = self.steps.steps_group(self.root, stacklevel=4)
            offsets = {False: s.create_group("PointDataOffsets"), True: s.create_group("CellDataOffsets")}
            for name, (cell, _, _) in self.kinds.items():
                offsets[cell].create_dataset(name, data=np.arange(nsteps, dtype=np.int64))
        self.steps.record(self.f["motes"])


def _selection(fields) -> Optional[List[str]]:
    """None (every field of the steps) for True, else the names asked for."""
    if fields is True:
        return None
    names = [fields] if isinstance(fields, str) else list(fields) if isinstance(fields, (list, tuple)) else None
    if not names or not all(isinstance(n, str) and n for n in names):
        raise UsageError(f"fields must be True (every field) or a field name or list of names, got {fields!r}")
    return names


def write_fields(path: str, steps: Iterable[Step], fields: Union[bool, str, Sequence[str]] = True,
                 compression: str = "none") -> None:
    """Writes the fields of the steps as a VTKHDF ImageData: ``fields=True`` every field, else
    the named ones. One step makes a static image; several a time series (``Steps``), which
    needs the same fields on the same grid, with the same type, in every step."""
    path = os.fspath(path)
    names = _selection(fields)
    filters = h5_filter(compression)
    steps = iter(steps)
    first = next(steps, None)
    if first is None:
        raise UsageError(f"{path}: no steps to write")
    second = next(steps, None)   # a second step makes a time series: its datasets get a step axis
    with created_file(path) as f:
        w = _ImageWriter(path, f, names, second is not None, filters)
        for step in itertools.chain([first], [] if second is None else [second], steps):
            w.add(step)
        w.finish()


def write_image(path, fields: Mapping[str, Field], *, time: float = 0.0, index: int = 0,
                attributes: Optional[Dict[str, Any]] = None, compression: str = "none") -> None:
    """Writes ``fields`` (name -> :class:`motes.Field`, all on one uniform grid) as one VTKHDF
    ImageData: node-centred fields as point data, cell-centred ones as cell data. A field on
    a rectilinear grid, or fields on different grids, are a UsageError."""
    write_fields(path, [Step(index, time, dict(attributes or {}), {}, dict(fields))], True, compression)
