"""The VTK algorithm behind motes' ParaView reader: one species of a motes dataset as
``vtkPolyData`` (a vertex per particle, every chosen column as point data), with the
dataset's time steps, a level of detail (``Quality``) or a share (``Fraction``), a box and a
``where`` expression, all answered by one motes query per update. It needs only VTK (the
pip ``vtk`` wheel or ParaView's); :mod:`motes.paraview.MotesReader` is the same class with
ParaView's property decorators, which ParaView loads as a plugin. Grid fields have their own
reader, :class:`~motes.paraview.field_reader.MotesFieldReader` (exported here too).

>>> r = MotesParticleReader()
>>> r.SetFileName("run.motes"); r.SetQuality(0.2); r.SetWhere("energy > 1.3")
>>> r.UpdateTimeStep(0.1)            # or r.Update(): the first step
>>> poly = r.GetOutputDataObject(0)
"""

from __future__ import annotations

from typing import List, Optional

from vtkmodules.vtkCommonDataModel import vtkPolyData

from .._polydata import polydata
from .base import DatasetReader, step_times
from .field_reader import MotesFieldReader

__all__ = ["MotesFieldReader", "MotesParticleReader", "polydata", "step_times"]


class MotesParticleReader(DatasetReader):
    """See the module. Settings: ``FileName`` (the dataset folder), ``Species`` (empty: the
    only one), ``Columns`` (names; empty: all), ``Quality`` in [0, 1] (1: every particle) or
    ``Fraction`` in (0, 1] (a share of the particles spread over space; 0: unused), ``Box``
    (x0, y0, z0, x1, y1, z1; unused while ``UseBox`` is off) and ``Where`` (a motes
    expression; empty: none)."""

    label = "Motes Particles"

    def __init__(self):
        DatasetReader.__init__(self, "vtkPolyData")
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
