"""motes' "Motes Field" VTK reader (motes.paraview.field_reader) with the pip vtk wheel, on
fields of every geometry (tests/python/paraview_util.py makes them): a uniform grid at a level
is the stored samples at their positions; a thetaMode field is vtkImageData whose values at its
points are motes' own reconstruction there (StoredField.sample) and equal its Cartesian view's
read, at the field's resolution or a chosen one; a rectilinear field is vtkRectilinearGrid with
its coordinates; a failure is a message (ErrorEvent / GetErrorMessage), not an exception, and
choosing one field opens no other. Debian's ParaView itself: test_paraview_field_pvbatch.py."""
import numpy as np
import pytest
from paraview_util import FIELD_STEPS, field_dataset

import motes

pytest.importorskip("vtkmodules.util.vtkAlgorithm")
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkCommonCore import vtkCommand  # noqa: E402

from motes.paraview.field_reader import MotesFieldReader  # noqa: E402


@pytest.fixture(scope="module")
def fields(tmp_path_factory):
    return field_dataset(str(tmp_path_factory.mktemp("pvf") / "fields.motes"))


def reader(path, field, **settings):
    r = MotesFieldReader()
    r.SetFileName(path)
    r.SetField(field)
    for name, value in settings.items():
        getattr(r, "Set" + name)(*np.atleast_1d(value))
    return r


def scalars(r):
    return vtk_to_numpy(r.GetOutputDataObject(0).GetPointData().GetScalars())


def points(image):
    """The positions of an image's points, x fastest (VTK's order)."""
    nx, ny, nz = image.GetDimensions()
    (x0, y0, z0), (dx, dy, dz) = image.GetOrigin(), image.GetSpacing()
    z, y, x = np.meshgrid(z0 + dz * np.arange(nz), y0 + dy * np.arange(ny), x0 + dx * np.arange(nx), indexing="ij")
    return x.ravel(), y.ravel(), z.ravel()


def test_field_reader_gives_a_uniform_field_at_a_level(tmp_path):
    path = str(tmp_path / "fields.motes")
    rng = np.random.default_rng(1)
    rho = {s: rng.random((9, 12, 20)).astype(np.float32) for s in (0, 2)}
    b = rng.random((9, 12, 20, 3)).astype(np.float32)
    for s in (0, 2):
        fields = {"rho": motes.Field(rho[s], origin=(1.0, 2.0, 3.0), spacing=(0.5, 0.25, 2.0))}
        if s == 2:
            fields["B"] = motes.Field(b, origin=(0.0, 0.0, 0.0), spacing=(1.0, 1.0, 1.0), components=("x", "y", "z"))
        motes.write(path, motes.synth.vpic(2000, seed=s), step=s, time=float(s), fields=fields)
    r = reader(path, "rho")
    for level, t, s in ((0, 0.0, 0), (1, 2.5, 2), (2, 2.0, 2)):
        r.SetLevel(level)
        r.UpdateTimeStep(t)
        image = r.GetOutputDataObject(0)
        want = motes.open(path).field("rho", s).read(level=level)
        assert r.last_step == s and image.GetDimensions() == want.shape[::-1]
        assert image.GetSpacing() == (0.5 * 2**level, 0.25 * 2**level, 2.0 * 2**level)
        assert image.GetOrigin() == (1.0, 2.0, 3.0)
        assert np.array_equal(scalars(r), want.ravel())
    r.SetField("B")
    r.SetLevel(0)
    r.UpdateTimeStep(2.0)
    assert scalars(r).shape == (9 * 12 * 20, 3) and np.array_equal(scalars(r), b.reshape(-1, 3))
    r.SetComponent("y")
    r.Update()
    assert np.array_equal(scalars(r), b[..., 1].ravel())
    assert r.time_values() == [2.0]  # the steps that hold B


def test_a_cell_centred_field_has_its_points_at_the_cell_centres(fields):
    f = motes.open(fields).field("cells", 0)
    r = reader(fields, "cells", Level=1)
    r.Update()
    image = r.GetOutputDataObject(0)
    assert image.GetOrigin() == (0.25, 1.125, 2.5)  # origin + spacing / 2: sample 0's centre
    assert image.GetSpacing() == (1.0, 0.5, 2.0) and image.GetDimensions() == (3, 2, 2)
    assert np.array_equal(scalars(r), f.read(level=1).ravel())
    assert np.allclose(f.sample(*points(image)), scalars(r))  # each value is the field at its point


@pytest.mark.parametrize("resolution", [(0, 0, 0), (9, 7, 12), (0, 5, 0)])
@pytest.mark.parametrize("level", [0, 1])
def test_a_thetamode_field_is_an_image_of_motes_own_reconstruction(fields, resolution, level):
    step, t = FIELD_STEPS[1]
    f = motes.open(fields).field("E", step)
    own = f.cartesian().dims
    view = f.cartesian(dims=[n or m for n, m in zip(resolution, own)]) if any(resolution) else f.cartesian()
    r = reader(fields, "E", Resolution=resolution, Level=level)
    r.UpdateTimeStep(t + 0.1)
    image = r.GetOutputDataObject(0)
    assert image.GetClassName() == "vtkImageData" and r.last_step == step and r.GetErrorMessage() == ""
    assert image.GetDimensions() == view.read(level=level, component="x").shape[::-1]
    if resolution == (0, 0, 0):
        assert own == (12, 12, 10)  # FBPIC's grid: 2 Nr across at dr, Nz along
    else:
        assert image.GetDimensions()[0] == (-(-(resolution[0] or own[0]) // 2 ** level))
    assert np.allclose(image.GetOrigin(), view.origin)
    assert np.allclose(image.GetSpacing(), [h * 2**level for h in view.spacing])
    got = scalars(r)
    arr = image.GetPointData().GetScalars()
    assert arr.GetName() == "E" and [arr.GetComponentName(k) for k in range(3)] == ["x", "y", "z"]
    x, y, z = points(image)
    for k, c in enumerate("xyz"):
        at_points = f.sample(x, y, z, component=c)  # motes' reconstruction at the image's points
        assert np.allclose(got[:, k], at_points, equal_nan=True, rtol=1e-12, atol=1e-12)
        assert np.array_equal(got[:, k], view.read(level=level, component=c).ravel(), equal_nan=True)
    assert np.isfinite(got).any() and np.isnan(got).any()  # NaN past the last radius (the corners)
    r.SetComponent("t")
    r.Update()
    assert r.GetOutputDataObject(0).GetPointData().GetScalars().GetName() == "E_t"
    assert np.array_equal(scalars(r), view.read(level=level, component="t").ravel(), equal_nan=True)


def test_a_scalar_thetamode_field_and_its_time_steps(fields):
    r = reader(fields, "rho", Resolution=(8, 8, 6))
    for step, t in FIELD_STEPS:
        r.UpdateTimeStep(t)
        view = motes.open(fields).field("rho", step).cartesian(dims=(8, 8, 6))
        assert r.last_step == step and scalars(r).ndim == 1
        assert np.array_equal(scalars(r), view.read().ravel(), equal_nan=True)
        assert np.allclose(r.GetOutputDataObject(0).GetOrigin(), view.origin)  # the z window moves
    assert r.time_values() == [t for _, t in FIELD_STEPS]


def test_a_rectilinear_field_is_a_rectilinear_grid(fields):
    f = motes.open(fields).field("grid", 0)
    for level in (0, 1):
        r = reader(fields, "grid", Level=level)
        r.Update()
        grid = r.GetOutputDataObject(0)
        assert grid.GetClassName() == "vtkRectilinearGrid"
        for k, get in enumerate((grid.GetXCoordinates, grid.GetYCoordinates, grid.GetZCoordinates)):
            assert np.array_equal(vtk_to_numpy(get()), f.coords[k][:: 2**level])
        assert np.array_equal(scalars(r), f.read(level=level).reshape(-1, 2))
    r.SetField("cells")  # the same reader, now an image
    r.Update()
    assert r.GetOutputDataObject(0).GetClassName() == "vtkImageData"


def test_failures_are_messages_and_one_field_opens_no_other(fields, monkeypatch):
    seen = []
    r = reader(fields, "")

    def observe(obj, event, text):
        seen.append(text)

    observe.CallDataType = "string0"  # VTK passes the message as text
    r.AddObserver(vtkCommand.ErrorEvent, observe)
    opened = []
    field = motes.Dataset.field
    monkeypatch.setattr(motes.Dataset, "field", lambda ds, name, step=None: opened.append(name) or field(ds, name, step))
    r.UpdateInformation()  # no field yet (ParaView's first pass): nothing opened, the steps that hold fields
    assert opened == [] and r.time_values() == [t for _, t in FIELD_STEPS]
    r.Update()
    assert "no Field chosen: choose one of B, E, cells, grid, rho" in r.GetErrorMessage()
    r.SetField("E")
    r.Update()
    assert set(opened) == {"E"} and r.GetErrorMessage() == ""  # B, the first, never opened
    for setting, value, message in (("Field", "nope", "no field 'nope' in the dataset (its fields: B, E, cells, grid, rho)"),
                                    ("Component", "w", "field 'E' has no component 'w'"),
                                    ("Resolution", (0, 1, 0), None)):
        seen.clear()
        getattr(r, "Set" + setting)(*np.atleast_1d(value))
        r.Update()
        if message is None:  # one sample across y: fine
            assert r.GetErrorMessage() == "" and r.GetOutputDataObject(0).GetDimensions()[1] == 1
            continue
        assert message in r.GetErrorMessage()
        assert len(seen) == 1 and seen[0].startswith(f"Motes Field ({fields}): ") and message in seen[0]
        r.SetField("E")
        r.SetComponent("")
    r.SetFileName(fields + "-missing")
    r.Update()
    assert "fields.motes-missing" in r.GetErrorMessage()


def test_the_plugin_files_motes_field_without_paraview(fields):
    import importlib.util

    from motes.paraview import plugin_path

    spec = importlib.util.spec_from_file_location("motes_plugin_fields_under_test", plugin_path())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.MotesField()
    r.SetFileName(fields + "/manifest.json")  # what File > Open picks
    assert r.GetFieldNames() == ["B", "E", "cells", "grid", "rho"]  # the Field property's list
    r.SetField("rho")
    r.SetResolution(8, 8, 6)
    r.UpdateTimeStep(FIELD_STEPS[1][1])
    view = motes.open(fields).field("rho", FIELD_STEPS[1][0]).cartesian(dims=(8, 8, 6))
    assert np.array_equal(scalars(r), view.read().ravel(), equal_nan=True) and r.GetErrorMessage() == ""
    assert r.GetTimestepValues() == [t for _, t in FIELD_STEPS]
    r.SetFileName(fields + "-missing")
    assert r.GetFieldNames() == [] and r.GetTimestepValues() is None  # the update says why
