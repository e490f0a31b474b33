"""A motes Table as VTK polydata (points, a vertex each, the other columns as point data):
the one conversion behind ``Table.to_pyvista`` and the ParaView reader. Needs VTK (the
``vtk`` wheel, or ParaView's own)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
from vtkmodules.vtkCommonCore import vtkPoints
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData

__all__ = ["polydata"]


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
