"""The VTK algorithm behind ParaView's "Motes Field": one grid field of a motes dataset, at a
level of detail, as the VTK dataset its grid is:

* a uniform Cartesian grid (1-, 2- or 3-D): ``vtkImageData``, its points at the samples'
  positions (a cell-centred field's cell centres);
* a rectilinear grid (``coords``): ``vtkRectilinearGrid``;
* a thetaMode field (FBPIC, WarpX RZ: azimuthal modes on an (r, z) grid): ``vtkImageData``
  resampled on a Cartesian grid at the chosen ``Resolution`` (samples along x, y, z; 0 along an
  axis: the field's own, Δr across and its z samples along) through
  :class:`motes.fields.theta.CartesianView`, NaN past the last radius.

Level k keeps every 2^k-th sample along each axis (a stored grid: a prefix of its file). A
vector field is one array of its components (a thetaMode field with components r, t, z: x, y
and z), or the one ``Component`` chosen (r, t, z, x or y of a thetaMode field). Time steps are
those of the steps that hold the field. Nothing is opened before a field is chosen: with
``Field`` empty the reader publishes the dataset's steps that hold fields, and an update fails
saying which fields there are (ParaView chooses the first when the reader is made).

>>> r = MotesFieldReader()
>>> r.SetFileName("run.motes"); r.SetField("E"); r.SetResolution(64, 64, 128)
>>> r.UpdateTimeStep(t); image = r.GetOutputDataObject(0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from vtkmodules.util.numpy_support import numpy_to_vtk
from vtkmodules.vtkCommonDataModel import vtkDataObject, vtkImageData, vtkRectilinearGrid

from .base import DatasetReader

__all__ = ["MotesFieldReader", "Layout", "layout"]


@dataclass
class Layout:
    """Where the samples of a read at a level lie, on 3 axes (x, y, z; an axis the grid does
    not have: one sample at 0): ``coords`` per axis, and whether they are uniform."""

    coords: Tuple[np.ndarray, np.ndarray, np.ndarray]
    uniform: bool
    level: int

    @property
    def dims(self) -> Tuple[int, int, int]:
        return tuple(len(c) for c in self.coords)

    @property
    def origin(self) -> Tuple[float, ...]:
        return tuple(float(c[0]) for c in self.coords)

    def spacing(self, grid) -> Tuple[float, ...]:
        """The image spacing: the grid's spacing times the level's stride (1 on missing axes)."""
        stride = 2 ** self.level
        return tuple(float(grid.spacing[k]) * stride if k < grid.ndim else 1.0 for k in range(3))


def layout(grid, level: int) -> Layout:
    """The layout of ``grid`` (a Cartesian StoredField or a CartesianView) read at ``level``."""
    level = min(max(0, int(level)), grid.levels)
    stride = 2 ** level
    coords = tuple(np.asarray(grid.axis(k), dtype=np.float64)[::stride] if k < grid.ndim else np.zeros(1)
                   for k in range(3))
    return Layout(coords, not _rectilinear(grid), level)


def _rectilinear(grid) -> bool:
    return getattr(grid, "coords", None) is not None


def _vector_components(grid) -> Optional[List[str]]:
    """The components of the one array a vector field gives (None: a scalar field): x, y, z
    of a thetaMode resampling whose field has them, else every stored component."""
    from motes.fields.theta import CartesianView

    names = list(grid.components or ())
    if names and isinstance(grid, CartesianView) and {"x", "y", "z"} <= set(grid.sample_components):
        return ["x", "y", "z"]
    return names or None


class MotesFieldReader(DatasetReader):
    """See the module. Settings: ``FileName``, ``Field``, ``Level`` (>= 0), ``Component``
    (empty: every component of a vector field as one array) and ``Resolution`` (nx, ny, nz of
    a thetaMode field's resampling; 0 along an axis: the field's own)."""

    label = "Motes Field"

    def __init__(self):
        DatasetReader.__init__(self, "vtkDataSet")  # vtkImageData or vtkRectilinearGrid: RequestDataObject
        self._field = ""
        self._level = 0
        self._component = ""
        self._resolution = (0, 0, 0)

    # --- settings ----------------------------------------------------------------------
    def SetField(self, name: Optional[str]) -> None:
        self._set("_field", str(name) if name else "")

    def SetLevel(self, level: int) -> None:
        self._set("_level", max(0, int(level)))

    def SetComponent(self, component: Optional[str]) -> None:
        self._set("_component", str(component) if component else "")

    def SetResolution(self, nx, ny=None, nz=None) -> None:
        """Samples along x, y, z of a thetaMode field's Cartesian resampling (three numbers, or
        one sequence of three); 0 along an axis: the field's own count."""
        values = list(nx) if ny is None else [nx, ny, nz]
        self._set("_resolution", tuple(max(0, int(v)) for v in values))

    # --- what the dataset offers -------------------------------------------------------
    def field_names(self) -> List[str]:
        """The names of the dataset's fields, in the order their steps first hold them."""
        ds = self.dataset()
        return list(dict.fromkeys(f for s in ds.steps for f in ds.field_names(s)))

    def field_names_or_none(self) -> List[str]:
        """field_names, or none when the dataset cannot be opened (ParaView's FieldNames: the
        failure is reported by the update)."""
        import motes

        try:
            return self.field_names() if self._path else []
        except (motes.MotesError, OSError):
            return []

    def steps(self) -> List[int]:
        """The steps that hold the field (that hold any field while none is chosen)."""
        import motes

        ds = self.dataset()
        held = [s for s in ds.steps if (self._field in ds.field_names(s) if self._field else ds.field_names(s))]
        if self._field and not held:
            names = self.field_names()
            raise motes.UsageError(f"no field '{self._field}' in the dataset (its fields: "
                                   f"{', '.join(names) if names else 'none'})")
        return held

    def grid(self, step: int):
        """The chosen field at ``step`` as a Cartesian grid: the stored field, or a thetaMode
        field's CartesianView at the chosen resolution."""
        self._require_field()
        f = self.dataset().field(self._field, step)
        if f.geometry != "thetaMode":
            return f
        if not any(self._resolution):
            return f.cartesian()
        own = f.cartesian().dims
        return f.cartesian(dims=[n or m for n, m in zip(self._resolution, own)])

    def _require_field(self) -> None:
        import motes

        if not self._field:
            names = self.field_names()
            raise motes.UsageError("no Field chosen: " + (f"choose one of {', '.join(names)}" if names
                                                          else "the dataset holds no grid fields"))

    # --- the pipeline ------------------------------------------------------------------
    def RequestDataObject(self, request, inInfo, outInfo):
        """vtkRectilinearGrid for a rectilinear field, vtkImageData for any other (and while
        no field is chosen)."""
        info = outInfo.GetInformationObject(0)
        rectilinear = bool(self._field) and _rectilinear(self.grid(self.steps()[0]))
        kind = vtkRectilinearGrid if rectilinear else vtkImageData
        current = info.Get(vtkDataObject.DATA_OBJECT())
        if current is None or current.GetClassName() != kind.__name__:
            info.Set(vtkDataObject.DATA_OBJECT(), kind())
        return 1

    def RequestInformation(self, request, inInfo, outInfo):
        info = outInfo.GetInformationObject(0)
        if self._publish_times(info) and self._field:
            nx, ny, nz = layout(self.grid(self.steps()[0]), self._level).dims
            info.Set(self.GetExecutive().WHOLE_EXTENT(), 0, nx - 1, 0, ny - 1, 0, nz - 1)
        return 1

    def RequestData(self, request, inInfo, outInfo):
        self._require_field()
        step = self._step_at(outInfo.GetInformationObject(0))
        grid = self.grid(step)
        where = layout(grid, self._level)
        values, name, names = self._values(grid, where.level)
        flat = np.ascontiguousarray(values).reshape(int(np.prod(where.dims)), -1)  # x fastest, as VTK's points
        array = numpy_to_vtk(flat if names is not None else flat[:, 0], deep=True)
        array.SetName(name)
        for k, c in enumerate(names or ()):
            array.SetComponentName(k, c)
        out = self.GetOutputData(outInfo, 0)
        out.Initialize()
        out.SetDimensions(*where.dims)
        if where.uniform:
            out.SetOrigin(*where.origin)
            out.SetSpacing(*where.spacing(grid))
        else:
            for k, setter in enumerate((out.SetXCoordinates, out.SetYCoordinates, out.SetZCoordinates)):
                setter(numpy_to_vtk(where.coords[k], deep=True))
        out.GetPointData().SetScalars(array)
        out.GetInformation().Set(out.DATA_TIME_STEP(), self.time_values()[self.steps().index(step)])
        self.last_step = step
        return 1

    def _values(self, grid, level: int):
        """The samples read: (values, array name, component names or None for one value a point)."""
        if self._component:
            return grid.read(level=level, component=self._component), f"{grid.name}_{self._component}", None
        names = _vector_components(grid)
        if names is None:
            return grid.read(level=level), grid.name, None
        if list(grid.components) == names:
            return grid.read(level=level), grid.name, names
        return np.stack([grid.read(level=level, component=c) for c in names], axis=-1), grid.name, names
