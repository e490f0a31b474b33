"""The VTK algorithm behind motes' ParaView reader: one species of a motes dataset as
``vtkPolyData`` (a vertex per particle, every chosen column as point data), with the
dataset's time steps, a level of detail (``Quality``) or a share (``Fraction``), a box and a
``where`` expression, all answered by one motes query per update. It needs only VTK (the
pip ``vtk`` wheel or ParaView's); :mod:`motes.paraview.MotesReader` is the same class with
ParaView's property decorators, which ParaView loads as a plugin.

>>> r = MotesParticleReader()
>>> r.SetFileName("run.motes"); r.SetQuality(0.2); r.SetWhere("energy > 1.3")
>>> r.UpdateTimeStep(0.1)            # or r.Update(): the first step
>>> poly = r.GetOutputDataObject(0)
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

import numpy as np
from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
from vtkmodules.util.vtkAlgorithm import VTKPythonAlgorithmBase
from vtkmodules.vtkCommonCore import vtkPoints
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkImageData, vtkPolyData

__all__ = ["MotesFieldReader", "MotesParticleReader", "polydata", "step_times"]


def step_times(times: Sequence[float], steps: Sequence[int]) -> List[float]:
    """The time value of each step as VTK sees it: the dataset's times when they increase
    strictly, else the step indexes (VTK needs distinct, increasing time steps)."""
    t = [float(v) for v in times]
    if all(b > a for a, b in zip(t, t[1:])) and all(np.isfinite(t)):
        return t
    return [float(s) for s in steps]


def polydata(table, columns: Sequence[str]) -> vtkPolyData:
    """A motes Table as vtkPolyData: points from x, y, z, one vertex cell per particle, and
    ``columns`` as point data (copied: VTK owns its arrays)."""
    n = len(table)
    x, y, z = (np.asarray(table[a]) for a in ("x", "y", "z"))
    dtype = np.result_type(x.dtype, y.dtype, z.dtype)
    xyz = np.empty((n, 3), dtype=dtype)
    xyz[:, 0], xyz[:, 1], xyz[:, 2] = x, y, z
    points = vtkPoints()
    points.SetData(numpy_to_vtk(xyz, deep=True))
    cells = vtkCellArray()
    ids = np.arange(n + 1, dtype=np.int64)
    cells.SetData(numpy_to_vtkIdTypeArray(ids, deep=True), numpy_to_vtkIdTypeArray(ids[:-1], deep=True))
    poly = vtkPolyData()
    poly.SetPoints(points)
    poly.SetVerts(cells)
    for name in columns:
        values = np.ascontiguousarray(table[name])
        if values.dtype == np.bool_:
            values = values.astype(np.uint8)
        array = numpy_to_vtk(values, deep=True)
        array.SetName(name)
        poly.GetPointData().AddArray(array)
    return poly


class _DatasetReader(VTKPythonAlgorithmBase):
    """What both readers share: the dataset (``FileName``), settings that mark the pipeline
    modified when they change, and the time steps (those of :meth:`steps`) published to VTK
    and chosen by the time VTK asks for."""

    _what = "the motes reader"

    def __init__(self, output_type: str):
        VTKPythonAlgorithmBase.__init__(self, nInputPorts=0, nOutputPorts=1, outputType=output_type)
        self._path: Optional[str] = None
        self._dataset = None
        self.last_step: Optional[int] = None

    def _set(self, attr: str, value) -> None:
        if getattr(self, attr) != value:
            setattr(self, attr, value)
            self.Modified()

    def SetFileName(self, name: str) -> None:
        """The dataset folder, or its manifest.json (what a file dialog can pick)."""
        if name and os.path.basename(str(name)) == "manifest.json":
            name = os.path.dirname(str(name))
        if name != self._path:
            self._path, self._dataset = (str(name) if name else None), None
            self.Modified()

    def GetFileName(self) -> Optional[str]:
        return self._path

    def dataset(self):
        import motes

        if self._dataset is None:
            if not self._path:
                raise motes.UsageError(f"{self._what} has no FileName")
            self._dataset = motes.open(self._path)
        return self._dataset

    def steps(self) -> List[int]:
        """The steps this reader reads (every step of the dataset)."""
        return self.dataset().steps

    def time_values(self) -> List[float]:
        ds = self.dataset()
        steps = self.steps()
        return step_times([ds.times[ds.steps.index(s)] for s in steps], steps)

    def _publish_times(self, info) -> List[float]:
        """Puts the time steps into VTK's output information; returns them."""
        executive = self.GetExecutive()
        info.Remove(executive.TIME_STEPS())
        info.Remove(executive.TIME_RANGE())
        times = self.time_values()
        for t in times:
            info.Append(executive.TIME_STEPS(), t)
        if times:
            info.Append(executive.TIME_RANGE(), times[0])
            info.Append(executive.TIME_RANGE(), times[-1])
        return times

    def _step_at(self, info) -> int:
        """The step whose time is the last at or before the time asked for (the first when
        none is asked, or the time comes before every step)."""
        steps = self.steps()
        executive = self.GetExecutive()
        if not info.Has(executive.UPDATE_TIME_STEP()):
            return steps[0]
        k = int(np.searchsorted(self.time_values(), info.Get(executive.UPDATE_TIME_STEP()), side="right")) - 1
        return steps[max(k, 0)]


class MotesParticleReader(_DatasetReader):
    """See the module. Settings: ``FileName`` (the dataset folder), ``Species`` (empty: the
    only one), ``Columns`` (names; empty: all), ``Quality`` in [0, 1] (1: every particle) or
    ``Fraction`` in (0, 1] (a share of the particles spread over space; 0: unused), ``Box``
    (x0, y0, z0, x1, y1, z1; unused while ``UseBox`` is off) and ``Where`` (a motes
    expression; empty: none)."""

    def __init__(self):
        _DatasetReader.__init__(self, "vtkPolyData")
        self._species = ""
        self._columns: List[str] = []
        self._quality = 1.0
        self._fraction = 0.0
        self._box = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
        self._use_box = False
        self._where = ""
        self.last_counters: dict = {}

    # --- settings ----------------------------------------------------------------------
    def SetSpecies(self, species: str) -> None:
        self._set("_species", species or "")

    def SetColumns(self, columns) -> None:
        """A list of names, or one text of names separated by commas or spaces; empty: all."""
        names = columns.replace(",", " ").split() if isinstance(columns, str) else list(columns or [])
        self._set("_columns", names)

    def SetQuality(self, quality: float) -> None:
        self._set("_quality", float(quality))

    def SetFraction(self, fraction: float) -> None:
        self._set("_fraction", float(fraction))

    def SetBox(self, x0, y0=None, z0=None, x1=None, y1=None, z1=None) -> None:
        box = list(x0) if y0 is None else [x0, y0, z0, x1, y1, z1]
        self._set("_box", [float(v) for v in box])

    def SetUseBox(self, use: bool) -> None:
        self._set("_use_box", bool(use))

    def SetWhere(self, where: str) -> None:
        self._set("_where", (where or "").strip())

    # --- what the dataset offers -------------------------------------------------------
    def species(self) -> Optional[str]:
        return self._species or None

    def column_names(self) -> List[str]:
        return self.dataset().column_names(species=self.species())

    # --- the pipeline ------------------------------------------------------------------
    def RequestInformation(self, request, inInfo, outInfo):
        self._publish_times(outInfo.GetInformationObject(0))
        return 1

    def RequestData(self, request, inInfo, outInfo):
        ds = self.dataset()
        info = outInfo.GetInformationObject(0)
        step = self._step_at(info)
        columns = self._columns or ds.column_names(step, self.species())
        read = list(dict.fromkeys(["x", "y", "z", *columns]))
        table = ds.query(self._where or None, box=self._box if self._use_box else None,
                         quality=None if self._fraction > 0 else self._quality,
                         fraction=self._fraction if self._fraction > 0 else None,
                         columns=read, step=step, species=self.species())
        self.last_counters, self.last_step = dict(table.counters), step
        out = vtkPolyData.GetData(outInfo, 0)
        out.ShallowCopy(polydata(table, columns))
        out.GetInformation().Set(out.DATA_TIME_STEP(), self.time_values()[ds.steps.index(step)])
        return 1


class MotesFieldReader(_DatasetReader):
    """One grid field of a motes dataset as ``vtkImageData`` at a level of detail: ``FileName``,
    ``Field``, ``Level`` (0: every sample; level k keeps every 2^k-th along each axis, a prefix
    of the file), ``Component`` (empty: every component of a vector field); time steps are
    the steps that hold the field. Cartesian 3-D fields on a uniform grid (rectilinear and
    thetaMode fields: ``motes convert``)."""

    _what = "the motes field reader"

    def __init__(self):
        _DatasetReader.__init__(self, "vtkImageData")
        self._field = ""
        self._level = 0
        self._component = ""

    def SetField(self, name: str) -> None:
        self._set("_field", name or "")

    def SetLevel(self, level: int) -> None:
        self._set("_level", max(0, int(level)))

    def SetComponent(self, component: str) -> None:
        self._set("_component", component or "")

    def steps(self) -> List[int]:
        """The steps that hold the field (every field of the dataset's first step when none is set)."""
        ds = self.dataset()
        name = self._field or next((f for s in ds.steps for f in ds.field_names(s)), "")
        return [s for s in ds.steps if name in ds.field_names(s)]

    def _stored(self, step: int):
        import motes

        ds = self.dataset()
        name = self._field or ds.field_names(step)[0]
        f = ds.field(name, step)
        if f.geometry != "cartesian" or f.ndim != 3 or f.origin is None:
            raise motes.UsageError(f"field '{name}' is not on a uniform 3-D Cartesian grid: convert it "
                                   "(motes convert) to read it in VTK")
        return f

    def _geometry(self, f):
        level = min(self._level, f.levels)
        dims = [(n + (1 << level) - 1) >> level for n in f.dims]
        spacing = [d * (1 << level) for d in f.spacing]
        return level, dims, spacing

    def RequestInformation(self, request, inInfo, outInfo):
        info = outInfo.GetInformationObject(0)
        if self._publish_times(info):
            _, dims, _ = self._geometry(self._stored(self.steps()[0]))
            info.Set(self.GetExecutive().WHOLE_EXTENT(), 0, dims[0] - 1, 0, dims[1] - 1, 0, dims[2] - 1)
        return 1

    def RequestData(self, request, inInfo, outInfo):
        step = self._step_at(outInfo.GetInformationObject(0))
        f = self._stored(step)
        level, dims, spacing = self._geometry(f)
        values = f.read(level=level, component=self._component or None)
        image = vtkImageData()
        image.SetDimensions(*dims)
        image.SetOrigin(*f.origin)
        image.SetSpacing(*spacing)
        flat = np.ascontiguousarray(values).reshape(int(np.prod(dims)), -1)  # x fastest, as VTK's points
        array = numpy_to_vtk(flat if flat.shape[1] > 1 else flat[:, 0], deep=True)
        array.SetName(f.name if not self._component else f"{f.name}_{self._component}")
        image.GetPointData().SetScalars(array)
        out = vtkImageData.GetData(outInfo, 0)
        out.ShallowCopy(image)
        self.last_step = step
        return 1
