"""motes' particle reader in Debian's real ParaView (5.11, ``pvbatch`` under ``xvfb-run``),
loaded as a user would: ``motes paraview-plugin --install`` prepares ParaView's Python (a .pth
in its user site folder, here a temporary PYTHONUSERBASE), then ``LoadPlugin`` of the printed
path (tests/python/paraview_util.py runs it). The script steps through time (counts equal
motes' own), renders and saves a PNG (checked by pixels). File > Open: a dataset's
manifest.json is offered to motes' readers by the reader factory the dialog asks, and
``OpenDataFile`` of it gives the particles. Grid fields: test_paraview_field_pvbatch.py."""
import numpy as np
from paraview_util import BLACK_VIEW, SAVE_VIEW, require_pvbatch, run_pvbatch

import motes

require_pvbatch()

SCRIPT = r'''
import json, sys
from paraview.simple import *
plugin, path, png, where = sys.argv[1:5]
LoadPlugin(plugin, ns=globals())
r = MotesParticles(FileName=path)
r.Where = where
r.Quality = 0.8
r.UpdatePipelineInformation()
times = list(r.TimestepValues)
counts = []
for t in times:
    r.UpdatePipeline(t)
    counts.append(r.GetDataInformation().GetNumberOfPoints())
''' + BLACK_VIEW + r'''
shown = Show(r, view)
shown.PointSize = 2
ColorBy(shown, ("POINTS", "energy"))
view.ViewTime = times[-1]
view.CameraPosition = [100, -150, 200]
view.CameraFocalPoint = [100, 50, 25]
view.CameraViewUp = [0, 0, 1]
''' + SAVE_VIEW + r'''
print("RESULT " + json.dumps({"times": times, "counts": counts}), flush=True)
'''


def test_pvbatch_loads_the_plugin_steps_through_time_and_renders(tmp_path):
    path = str(tmp_path / "series.motes")
    with motes.Writer(path, sync=False) as w:
        for k, s in enumerate((0, 3, 7)):
            w.write_step(s, motes.synth.vpic(60_000, seed=40 + k), time=0.5 * s)
    where = "energy > 0.3"
    png = tmp_path / "motes.png"
    result, _, _ = run_pvbatch(tmp_path, SCRIPT, [path, png, where], needs=[png])
    ds = motes.open(path)
    assert result["times"] == ds.times
    assert result["counts"] == [len(ds.query(where, quality=0.8, step=s, columns=["x"])) for s in ds.steps]
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB"))
    assert rgb.shape == (240, 320, 3)
    lit = rgb.max(axis=2) > 30
    assert lit.sum() > 500  # the particles, coloured by energy
    assert len({tuple(p) for p in rgb[lit][:: max(1, lit.sum() // 500)]}) > 5  # a colour map, not one colour


OPEN = r'''
import json, sys
from paraview.simple import *
plugin, manifest = sys.argv[1:3]
LoadPlugin(plugin, ns=globals())
session = servermanager.ActiveConnection.Session
factory = servermanager.vtkSMProxyManager.GetProxyManager().GetReaderFactory()
found = factory.GetReaders(manifest, session)  # File > Open asks this; more than one: "Open Data With..."
r = OpenDataFile(manifest)                     # the factory's first reader for the file
r.UpdatePipeline()
r.UpdatePropertyInformation()
print("RESULT " + json.dumps({"readers": [found.GetString(i) for i in range(found.GetNumberOfStrings())],
                              "filters": factory.GetSupportedFileTypes(session), "opened": r.GetXMLName(),
                              "points": r.GetDataInformation().GetNumberOfPoints(),
                              "arrays": sorted(r.PointData.keys()), "error": r.GetPropertyValue("ErrorMessage")}), flush=True)
'''


def test_file_open_of_the_manifest_offers_the_motes_readers_and_gives_the_particles(tmp_path):
    path = str(tmp_path / "run.motes")
    motes.write(path, motes.synth.vpic(30_000, seed=3), step=4, time=1.5)
    result, log, _ = run_pvbatch(tmp_path, OPEN, [f"{path}/manifest.json"])
    assert result["readers"] == ["sources", "MotesParticles", "Motes Particles",  # group, name, label
                                 "sources", "MotesStructuredField", "Motes Field"]
    assert "motes dataset: particles (manifest.json)" in result["filters"]  # a filter of the dialog
    ds = motes.open(path)
    assert result["opened"] == "MotesParticles" and result["points"] == ds.count(step=4) == 30_000
    assert result["arrays"] == sorted(ds.column_names(4)) and result["error"] == ""
    assert "Traceback" not in log
