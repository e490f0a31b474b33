"""For the ParaView tests: a small dataset with grid fields of every geometry the "Motes Field"
reader takes (thetaMode, rectilinear, cell-centred uniform), and Debian's pvbatch run as a user
runs it (``motes paraview-plugin --install`` into a temporary PYTHONUSERBASE, ParaView's Python
seeing none of motes' environment, under ``xvfb-run`` with a 24-bit screen: on xvfb-run's
default 8-bit one, pvbatch aborted making its window in about a third of the runs). pvbatch may
still abort while exiting: a run is judged by the ``RESULT`` line its script printed, and tried
up to three times."""

import json
import os
import shutil
import subprocess
import sys
from typing import Sequence, Tuple

import numpy as np
import pytest

import motes

#: The steps (and their times) of field_dataset.
FIELD_STEPS = ((0, 0.0), (5, 2.5))
#: The thetaMode fields of field_dataset: B and E vectors (r, t, z), rho a scalar.
THETA = ("B", "E", "rho")

#: Lines of a pvbatch script that make ``view``: 320 x 240 on black, no orientation axes
#: (ParaView's colour palette off where it has one), so that the PNG's pixels can be checked.
BLACK_VIEW = r'''
view = CreateRenderView()
view.ViewSize = [320, 240]
view.OrientationAxesVisibility = 0
try:
    view.UseColorPaletteForBackground = 0
except AttributeError:
    pass
view.Background = [0, 0, 0]
'''
#: Lines that fit the camera to what ``view`` shows and save it as the PNG ``png``.
SAVE_VIEW = r'''
ResetCamera(view)
Render(view)
SaveScreenshot(png, view, ImageResolution=[320, 240])
'''


def require_pvbatch() -> None:
    """Skips the module when Debian's ParaView or xvfb is missing."""
    if not (shutil.which("pvbatch") and shutil.which("xvfb-run")):
        pytest.skip("Debian's paraview (pvbatch) and xvfb are not installed (scripts/setup.sh installs them)",
                    allow_module_level=True)


def field_dataset(path: str) -> str:
    """Writes two steps (FIELD_STEPS) of 2000 particles with fields: thetaMode B, E (components
    r, t, z) and rho (2 modes on 6 radii x 10 z samples, cell-centred as FBPIC's, the z
    window moving between steps), ``grid`` (rectilinear, 2 components) and ``cells`` (a
    cell-centred uniform scalar). Returns path."""
    rng = np.random.default_rng(17)
    nr, nz, dr, dz = 6, 10, 0.25, 0.5
    r = (np.arange(nr) + 0.5) * dr
    z = np.arange(nz) * dz
    for k, (step, t) in enumerate(FIELD_STEPS):
        smooth = np.cos(z[None, :] * 0.7 + k) * np.exp(-(r[:, None] / 1.2) ** 2)  # (Nr, Nz)

        def modes(ncomp):
            shape = (3, nr, nz) + ((ncomp,) if ncomp else ())
            noise = 0.1 * rng.standard_normal(shape)
            base = smooth[None, :, :, None] if ncomp else smooth[None]
            return base * np.array([1.0, 0.5, -0.3]).reshape((3, 1, 1) + ((1,) if ncomp else ())) + noise

        theta = dict(geometry="thetaMode", origin=(1.0 + k * dz, 0.0), spacing=(dz, dr), centering="cell")
        fields = {name: motes.Field(modes(None if name == "rho" else 3), **theta,
                                    components=None if name == "rho" else ("r", "t", "z")) for name in THETA}
        xs, ys, zs = np.cumsum(rng.uniform(0.1, 1, 7)), np.cumsum(rng.uniform(0.1, 1, 5)), np.cumsum(rng.uniform(0.1, 1, 4))
        fields["grid"] = motes.Field(rng.standard_normal((4, 5, 7, 2)), coords=(xs, ys, zs), components=("a", "b"))
        fields["cells"] = motes.Field(rng.standard_normal((3, 4, 5)), origin=(0.0, 1.0, 2.0), spacing=(0.5, 0.25, 1.0),
                                      centering="cell")
        motes.write(path, motes.synth.vpic(2000, seed=k), step=step, time=t, fields=fields)
    return path


def install_plugin(tmp_path) -> Tuple[str, dict]:
    """``motes paraview-plugin --install`` as a user runs it, into tmp_path/user: the plugin's
    path and the environment pvbatch runs in."""
    env = {**os.environ, "PYTHONUSERBASE": str(tmp_path / "user")}
    env.pop("PYTHONPATH", None)  # ParaView's Python sees none of motes' environment
    out = subprocess.run([sys.executable, "-m", "motes", "paraview-plugin", "--install"], capture_output=True,
                         text=True, check=True, env={**env, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    plugin = out.strip().splitlines()[-1]
    assert os.path.exists(plugin)
    return plugin, env


def run_pvbatch(tmp_path, script: str, args: Sequence[str], needs: Sequence[str] = ()):
    """Runs ``script`` (text) in pvbatch with the installed plugin's path as its first argument,
    then ``args``; returns (the JSON of its last ``RESULT`` line, its stdout + stderr, its exit
    status). A run counts when it printed that line and wrote every file of ``needs``."""
    plugin, env = install_plugin(tmp_path)
    path = tmp_path / "script.py"
    path.write_text(script)
    log = ""
    for _ in range(3):
        run = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", "pvbatch", str(path), plugin,
                              *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
        log = run.stdout + run.stderr
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
        if lines and all(os.path.exists(f) for f in needs):
            return json.loads(lines[-1][len("RESULT "):]), log, run.returncode
    raise AssertionError(f"pvbatch gave no result in 3 runs:\n{log[-3000:]}")
