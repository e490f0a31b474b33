"""motes' reader in Debian's real ParaView (5.11, ``pvbatch`` under ``xvfb-run``), loaded as a
user would: ``motes paraview-plugin --install`` prepares ParaView's Python (a .pth in its user
site folder, here a temporary PYTHONUSERBASE), then ``LoadPlugin`` of the printed path. The
script steps through time (counts equal motes' own), renders and saves a PNG (checked by
pixels). Xvfb runs with a 24-bit screen: on xvfb-run's default 8-bit one, pvbatch aborted
making its window in about a third of the runs. It may still abort while exiting: a run is
judged by what the script printed and wrote, and tried up to three times."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import motes

if not (shutil.which("pvbatch") and shutil.which("xvfb-run")):
    pytest.skip("Debian's paraview (pvbatch) and xvfb are not installed (scripts/setup.sh installs them)",
                allow_module_level=True)

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
view = CreateRenderView()
view.ViewSize = [320, 240]
view.OrientationAxesVisibility = 0
try:
    view.UseColorPaletteForBackground = 0
except AttributeError:
    pass
view.Background = [0, 0, 0]
shown = Show(r, view)
shown.PointSize = 2
ColorBy(shown, ("POINTS", "energy"))
view.ViewTime = times[-1]
view.CameraPosition = [100, -150, 200]
view.CameraFocalPoint = [100, 50, 25]
view.CameraViewUp = [0, 0, 1]
ResetCamera(view)
Render(view)
SaveScreenshot(png, view, ImageResolution=[320, 240])
print("RESULT " + json.dumps({"times": times, "counts": counts}), flush=True)
'''


def test_pvbatch_loads_the_plugin_steps_through_time_and_renders(tmp_path):
    path = str(tmp_path / "series.motes")
    with motes.Writer(path, sync=False) as w:
        for k, s in enumerate((0, 3, 7)):
            w.write_step(s, motes.synth.vpic(60_000, seed=40 + k), time=0.5 * s)
    where = "energy > 0.3"
    env = {**os.environ, "PYTHONUSERBASE": str(tmp_path / "user")}
    env.pop("PYTHONPATH", None)  # ParaView's Python sees none of motes' environment
    out = subprocess.run([sys.executable, "-m", "motes", "paraview-plugin", "--install"], capture_output=True,
                         text=True, check=True, env={**env, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    plugin = out.strip().splitlines()[-1]
    assert os.path.exists(plugin)
    script, png = tmp_path / "script.py", tmp_path / "motes.png"
    script.write_text(SCRIPT)
    result, log = None, ""
    for _ in range(3):
        run = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", "pvbatch", str(script), plugin, path,
                              str(png), where], capture_output=True, text=True, env=env, timeout=300)
        log = run.stdout + run.stderr
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
        if lines and png.exists():
            result = json.loads(lines[-1][len("RESULT "):])
            break
    assert result is not None, log[-3000:]
    ds = motes.open(path)
    assert result["times"] == ds.times
    assert result["counts"] == [len(ds.query(where, quality=0.8, step=s, columns=["x"])) for s in ds.steps]
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB"))
    assert rgb.shape == (240, 320, 3)
    lit = rgb.max(axis=2) > 30
    assert lit.sum() > 500  # the particles, coloured by energy
    assert len({tuple(p) for p in rgb[lit][:: max(1, lit.sum() // 500)]}) > 5  # a colour map, not one colour
