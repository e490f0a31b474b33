"""motes' VTK reader (motes.paraview) with the pip vtk wheel: its output is ds.query's for
random boxes, levels, shares, steps and expressions; it publishes the dataset's time steps;
the ParaView plugin file loads without ParaView; an offscreen render shows the particles; a
bad expression is a message, not an exception. Grid fields: test_paraview_field_reader.py;
Debian's ParaView itself: test_paraview_pvbatch.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import motes

pytest.importorskip("vtkmodules.util.vtkAlgorithm")
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402

from motes.paraview import install, plugin_path  # noqa: E402
from motes.paraview.reader import MotesParticleReader, step_times  # noqa: E402

STEPS = (0, 4, 9)


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("pv") / "series.motes")
    with motes.Writer(path, sync=False) as w:
        for k, s in enumerate(STEPS):
            w.write_step(s, motes.synth.vpic(40_000, seed=30 + k), time=0.25 * s)
    return path


def output(reader):
    poly = reader.GetOutputDataObject(0)
    pts = vtk_to_numpy(poly.GetPoints().GetData()) if poly.GetNumberOfPoints() else np.zeros((0, 3))
    data = {poly.GetPointData().GetArrayName(i): vtk_to_numpy(poly.GetPointData().GetArray(i))
            for i in range(poly.GetPointData().GetNumberOfArrays())}
    return poly, pts, data


def test_output_is_the_query(series):
    ds = motes.open(series)
    rng = np.random.default_rng(4)
    r = MotesParticleReader()
    r.SetFileName(series)
    for _ in range(12):
        k = int(rng.integers(len(STEPS)))
        lo = rng.uniform([0, 0, 0], [150, 70, 35])
        box = [*lo, *(lo + rng.uniform([20, 10, 5], [80, 40, 20]))]
        use_box = bool(rng.integers(2))
        quality = float(rng.choice([0.1, 0.5, 1.0]))
        fraction = float(rng.choice([0.0, 0.0, 0.05]))
        where = str(rng.choice(["", "energy > 1.2", "ux > 0 and q < 0"]))
        columns = [] if rng.integers(2) else ["energy", "ux"]
        r.SetBox(*box)
        r.SetUseBox(use_box)
        r.SetQuality(quality)
        r.SetFraction(fraction)
        r.SetWhere(where)
        r.SetColumns(",".join(columns))
        r.UpdateTimeStep(0.25 * STEPS[k] + 0.01)  # a time just after the step's: that step
        want = ds.query(where or None, box=box if use_box else None,
                        quality=None if fraction else quality, fraction=fraction or None, step=STEPS[k])
        poly, pts, data = output(r)
        assert r.last_step == STEPS[k]
        assert poly.GetNumberOfPoints() == len(want) == poly.GetNumberOfVerts()
        for a, name in enumerate("xyz"):
            assert np.array_equal(pts[:, a], np.asarray(want[name]))
        assert sorted(data) == sorted(columns or list(want))
        for name, values in data.items():
            assert np.array_equal(values, np.asarray(want[name])), name


def test_time_steps_are_published(series):
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline as sddp

    r = MotesParticleReader()
    r.SetFileName(series)
    r.UpdateInformation()
    info = r.GetOutputInformation(0)
    assert list(info.Get(sddp.TIME_STEPS())) == [0.25 * s for s in STEPS]
    r.Update()  # no time asked: the first step
    assert r.last_step == STEPS[0]
    assert step_times([0.0, 0.0, 1.0], [3, 4, 5]) == [3.0, 4.0, 5.0]  # times not increasing: the indexes


def test_plugin_file_loads_without_paraview(series):
    import importlib.util

    spec = importlib.util.spec_from_file_location("motes_plugin_under_test", plugin_path())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.MotesParticles()
    r.SetFileName(series)
    r.SetColumns("energy")
    r.SetWhere("energy > 1.5")
    r.Update()
    assert r.GetOutputDataObject(0).GetNumberOfPoints() == motes.open(series).count("energy > 1.5", step=STEPS[0])
    assert r.GetTimestepValues() == [0.25 * s for s in STEPS]


def test_cli_prints_the_plugin_and_install_writes_the_shim(tmp_path):
    out = subprocess.run([sys.executable, "-m", "motes", "paraview-plugin"], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    assert out.strip() == plugin_path() and os.path.exists(plugin_path())
    fake = tmp_path / "python3"  # a Python without getargspec, whose user site is tmp_path/site
    fake.write_text(f"#!/bin/sh\necho False\necho {tmp_path / 'site'}\n")
    fake.chmod(0o755)
    written = install(str(fake))
    assert written == str(tmp_path / "site" / "motes-paraview-getargspec.pth")
    shim = open(written).read()
    import inspect

    had = hasattr(inspect, "getargspec")
    try:
        exec(shim, {})  # what site does with an "import" line

        def f(a, b=2, *c, **d):
            return a

        assert inspect.getargspec(f).args == ["a", "b"]
    finally:
        if not had:
            del inspect.getargspec
    assert install(str(tmp_path / "missing")) is None


def test_offscreen_render_shows_the_particles(series):
    from vtkmodules.vtkRenderingCore import (vtkActor, vtkPolyDataMapper, vtkRenderer, vtkRenderWindow,
                                             vtkWindowToImageFilter)
    import vtkmodules.vtkRenderingOpenGL2  # noqa: F401  (the OpenGL back end)

    def lit(box=None):
        r = MotesParticleReader()
        r.SetFileName(series)
        if box:
            r.SetBox(*box)
            r.SetUseBox(True)
        mapper = vtkPolyDataMapper()
        mapper.SetInputConnection(r.GetOutputPort())
        mapper.SetScalarModeToUsePointFieldData()
        mapper.SelectColorArray("energy")
        mapper.SetScalarRange(0.0, 2.0)
        actor = vtkActor()
        actor.SetMapper(mapper)
        actor.GetProperty().SetPointSize(2)
        ren = vtkRenderer()
        ren.SetBackground(0, 0, 0)
        ren.AddActor(actor)
        win = vtkRenderWindow()
        win.SetOffScreenRendering(1)
        win.SetSize(160, 120)
        win.AddRenderer(ren)
        r.Update()
        ren.ResetCamera(0, 200, 0, 100, 0, 50)  # the same view of the whole domain for both
        win.Render()
        grab = vtkWindowToImageFilter()
        grab.SetInput(win)
        grab.Update()
        image = grab.GetOutput()
        rgb = vtk_to_numpy(image.GetPointData().GetScalars()).reshape(120, 160, -1)[..., :3]
        win.Finalize()
        return int((rgb.max(axis=2) > 30).sum())

    everything, corner = lit(), lit([0, 0, 0, 50, 100, 50])
    assert everything > 2000  # the particles fill the view
    assert 100 < corner < everything * 0.6  # a quarter of the domain lights less of it


def test_table_to_pyvista_and_an_offscreen_plot(series):
    pv = pytest.importorskip("pyvista")
    t = motes.open(series).query("energy > 1", columns=["x", "y", "z", "energy", "ux"], step=STEPS[0])
    mesh = t.to_pyvista()
    assert isinstance(mesh, pv.PolyData) and mesh.n_points == len(t) == mesh.n_verts
    assert np.array_equal(mesh.points, np.column_stack([t["x"], t["y"], t["z"]]))
    assert sorted(mesh.point_data.keys()) == ["energy", "ux"]
    assert np.array_equal(mesh.point_data["energy"], t["energy"])
    plotter = pv.Plotter(off_screen=True, window_size=(160, 120))
    plotter.set_background("black")
    plotter.add_points(mesh, scalars="energy", point_size=3, show_scalar_bar=False)
    image = plotter.screenshot(return_img=True)
    plotter.close()
    assert (image[..., :3].max(axis=2) > 30).sum() > 200
    with pytest.raises(motes.UsageError, match="x, y and z"):
        motes.Table({"energy": np.zeros(3)}).to_pyvista()



def test_a_bad_expression_is_a_message_not_an_exception(series):
    from vtkmodules.vtkCommonCore import vtkCommand

    seen = []

    def observe(obj, event, text):
        seen.append(text)

    observe.CallDataType = "string0"
    r = MotesParticleReader()
    r.AddObserver(vtkCommand.ErrorEvent, observe)
    r.SetFileName(os.path.join(series, "manifest.json"))  # what File > Open picks
    r.SetWhere("energy >")
    r.Update()  # no exception: the request fails
    assert r.GetOutputDataObject(0).GetNumberOfPoints() == 0
    assert len(seen) == 1 and seen[0].startswith(f"Motes Particles ({series}): ") and r.GetErrorMessage() in seen[0]
    with pytest.raises(motes.UsageError) as raised:
        motes.open(series).query("energy >")
    assert r.GetErrorMessage() == str(raised.value)  # motes' own message
    r.SetWhere("energy > 1.5")
    r.Update()
    assert r.GetErrorMessage() == "" and r.GetOutputDataObject(0).GetNumberOfPoints() == motes.open(series).count(
        "energy > 1.5", step=STEPS[0])
