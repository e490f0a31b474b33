"""ParaView's "Motes Field" in Debian's real pvbatch (run as tests/python/paraview_util.py
runs it) on thetaMode fields as FBPIC writes them (made small by paraview_util.field_dataset):
the reader made as a script or the GUI makes it, with ``Field='E'``, opens E only (before,
an unset field read the first, B, and its traceback came first); E at a chosen resolution is
an image whose values are motes' own Cartesian resampling; it renders; the field list is the
Field property's domain; a rectilinear field is a vtkRectilinearGrid; what cannot be read is
a message in the output window and the ``ErrorMessage`` property (no traceback), which the
script turns into a failing exit status."""
import numpy as np
from paraview_util import BLACK_VIEW, FIELD_STEPS, SAVE_VIEW, field_dataset, require_pvbatch, run_pvbatch

import motes

require_pvbatch()

SCRIPT = r'''
import json, sys
import numpy as np
from paraview.simple import *
from vtkmodules.util.numpy_support import vtk_to_numpy
plugin, manifest, out, png, t = sys.argv[1:6]
LoadPlugin(plugin, ns=globals())
import motes
opened, field = [], motes.Dataset.field
motes.Dataset.field = lambda ds, name, step=None: opened.append(name) or field(ds, name, step)

e = MotesField(FileName=manifest, Field="E", Resolution=[16, 12, 20])
e.UpdatePipeline(float(t))
e_opened = sorted(set(opened))
image = e.GetClientSideObject().GetOutputDataObject(0)  # the reader's output (pvbatch: one process)
grid = MotesField(FileName=manifest, Field="grid", Level=1)
grid.UpdatePipeline(0.0)
rect = grid.GetClientSideObject().GetOutputDataObject(0)
first = MotesField(FileName=manifest)  # as File > Open makes it: Field is the first of the list
np.savez(out, E=vtk_to_numpy(image.GetPointData().GetArray("E")), origin=image.GetOrigin(),
         spacing=image.GetSpacing(), dims=image.GetDimensions(), grid=vtk_to_numpy(rect.GetPointData().GetArray("grid")),
         x=vtk_to_numpy(rect.GetXCoordinates()))

''' + BLACK_VIEW + r'''
view.ViewTime = float(t)
shown = Show(e, view)
shown.SetRepresentationType("Slice")
shown.SliceMode = "XZ Plane"
shown.Slice = 6  # of 12 samples across y: the plane next to the axis
ColorBy(shown, ("POINTS", "E", "X"))
shown.RescaleTransferFunctionToDataRange(True)
view.CameraPosition = [0, -10, 3]
view.CameraFocalPoint = [0, 0, 3]
view.CameraViewUp = [0, 0, 1]
''' + SAVE_VIEW + r'''

errors = {}
for name, settings in (("field", dict(Field="nope")), ("component", dict(Field="E", Component="w"))):
    bad = MotesField(FileName=manifest, **settings)
    bad.UpdatePipeline(float(t))
    bad.UpdatePropertyInformation()
    errors[name] = bad.GetPropertyValue("ErrorMessage")
e.UpdatePropertyInformation()
print("RESULT " + json.dumps({"opened": e_opened, "type": e.GetDataInformation().GetDataSetTypeAsString(),
                              "grid_type": grid.GetDataInformation().GetDataSetTypeAsString(),
                              "first": first.Field[0], "names": list(first.Field.Available),
                              "times": list(e.TimestepValues),
                              "errors": errors, "ok": e.GetPropertyValue("ErrorMessage")}), flush=True)
if any(errors.values()):
    raise SystemExit("motes: " + "; ".join(errors.values()))  # how a script makes a failure its exit status
'''


def test_pvbatch_reads_thetamode_and_rectilinear_fields_and_reports_what_it_cannot(tmp_path):
    path = field_dataset(str(tmp_path / "fbpic.motes"))
    step, t = FIELD_STEPS[1]
    out, png = tmp_path / "out.npz", tmp_path / "field.png"
    result, log, status = run_pvbatch(tmp_path, SCRIPT, [f"{path}/manifest.json", out, png, t], needs=[out, png])
    assert result["opened"] == ["E"]  # no other field read, none reported
    assert result["type"] == "vtkImageData" and result["grid_type"] == "vtkRectilinearGrid"
    assert result["ok"] == "" and result["times"] == [t for _, t in FIELD_STEPS]
    ds = motes.open(path)
    assert result["first"] == ds.field_names(0)[0] and result["names"] == ds.field_names(0)

    got = np.load(out)
    f = ds.field("E", step)
    view = f.cartesian(dims=(16, 12, 20))
    assert tuple(got["dims"]) == view.dims
    assert np.allclose(got["origin"], view.origin) and np.allclose(got["spacing"], view.spacing)
    want = np.stack([view.read(component=c) for c in "xyz"], axis=-1).reshape(-1, 3)
    assert np.allclose(got["E"], want, equal_nan=True, rtol=1e-12, atol=0)
    assert np.isfinite(got["E"]).sum() > 1000
    g = ds.field("grid", FIELD_STEPS[0][0])
    assert np.array_equal(got["x"], g.coords[0][::2]) and np.array_equal(got["grid"], g.read(level=1).reshape(-1, 2))

    assert "no field 'nope' in the dataset (its fields: " in result["errors"]["field"]
    assert "field 'E' has no component 'w'" in result["errors"]["component"]
    for message in result["errors"].values():
        assert f"ERROR: Motes Field ({path}): {message}" in log  # the output window (stderr in pvbatch)
    assert "Traceback" not in log
    assert status != 0 and "motes: no field 'nope'" in log  # the script made the failures its exit status
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB"))
    lit = rgb.max(axis=2) > 30
    assert lit.sum() > 2000  # the x-z plane through the axis fills much of the view
    assert len({tuple(p) for p in rgb[lit][:: max(1, lit.sum() // 500)]}) > 10  # E_x's colours, not one
