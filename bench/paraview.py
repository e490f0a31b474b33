#!/usr/bin/env python3
"""ParaView's first image of a particle step: motes' reader plugin at a 1 % share of the
particles against ParaView's own H5Part reader on motes' H5Part export of the same step,
in Debian's pvbatch (5.11, under xvfb-run), the same script for both.

Usage (from the repository root)::

    python bench/paraview.py                    # 10M particles -> bench/results/paraview.json
    python bench/paraview.py --n 1000000 --out /tmp/paraview.json

Each run is a fresh ``pvbatch`` process: it opens the data, shows it coloured by energy,
renders and saves a 640x480 PNG. Figures: the time from the script's start (ParaView's
modules imported, the plugin not yet loaded) to the saved image, the whole process's wall
time, and its peak resident memory (``ru_maxrss``), for motes (``Fraction`` 0.01, every
column) and for H5Part (the whole step, every column; ParaView 5.11's ``vtkHDFReader``
reads no PolyData, so motes' VTKHDF export cannot be the peer there). Page cache warm (the
files were just written and read once); runs alternate, with a third pvbatch that shows a
sphere: memory is given above that one's (ParaView's own). The benchmark measures; it
asserts only that both images show particles.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import figure, log, peer  # noqa: E402

SCRIPT = r'''
import json, resource, sys, time
t0 = time.perf_counter()
from paraview.simple import *
which, path, png, plugin = sys.argv[1:5]
t1 = time.perf_counter()
if which == "motes":
    LoadPlugin(plugin, ns=globals())
    r = MotesParticles(FileName=path)
    r.Fraction = 0.01
elif which == "h5part":
    r = H5PartReader(FileName=path)
else:  # ParaView alone: a sphere
    r = Sphere()
view = CreateRenderView()
view.ViewSize = [640, 480]
shown = Show(r, view)
ColorBy(shown, ("POINTS", "energy"))
ResetCamera(view)
Render(view)
SaveScreenshot(png, view, ImageResolution=[640, 480])
t2 = time.perf_counter()
print("RESULT " + json.dumps({"first_image_s": t2 - t1, "import_s": t1 - t0,
                              "points": r.GetDataInformation().GetNumberOfPoints(),
                              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)
'''


def pvbatch(script: str, args, env) -> dict:
    """One pvbatch run (tried up to three times: pvbatch sometimes aborts making its window)."""
    for _ in range(3):
        t0 = benchlib.perf()
        run = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", "pvbatch", script, *args],
                             capture_output=True, text=True, env=env, timeout=900)
        wall = benchlib.perf() - t0
        results = benchlib.child_results(run.stdout)
        if results and os.path.exists(args[2]):
            out = results[-1]
            out["wall_s"] = wall
            return out
    raise RuntimeError("pvbatch failed three times:\n" + (run.stdout + run.stderr)[-3000:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "paraview.json"))
    args = ap.parse_args()
    if not (shutil.which("pvbatch") and shutil.which("xvfb-run")):
        raise SystemExit("needs Debian's paraview and xvfb (scripts/setup.sh installs them)")
    import motes
    from motes.paraview import plugin_path

    with benchlib.run(args.out, ".tmp-paraview-", repeat=args.repeat, n=args.n) as r:
        path, h5 = os.path.join(r.scratch, "p.motes"), os.path.join(r.scratch, "p.h5part")
        motes.write(path, motes.synth.vpic(args.n, seed=11), sync=True)
        subprocess.run([sys.executable, "-m", "motes", "convert", path, h5, "--no-progress"], check=True,
                       capture_output=True)
        script = os.path.join(r.scratch, "script.py")
        with open(script, "w") as fh:
            fh.write(SCRIPT)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONUSERBASE"] = os.path.join(r.scratch, "user")
        subprocess.run([sys.executable, "-m", "motes", "paraview-plugin", "--install"], check=True,
                       capture_output=True, env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
        sides = {"motes": path, "h5part": h5, "baseline": "none"}
        runs = {k: [] for k in sides}
        for i in range(args.repeat + 1):  # the first round warms the page cache and ParaView's files
            for name, data in sides.items():
                png = os.path.join(r.scratch, f"{name}.png")
                if os.path.exists(png):
                    os.remove(png)
                out = pvbatch(script, [name, data, png, plugin_path()], env)
                if i:
                    runs[name].append(out)
                log(f"{name}: first image {out['first_image_s']:.2f} s, process {out['wall_s']:.2f} s, "
                    f"peak {out['peak_rss_mb']:.0f} MB, {out['points']:,} points")
        from PIL import Image

        for name in ("motes", "h5part"):
            rgb = np.asarray(Image.open(os.path.join(r.scratch, f"{name}.png")).convert("RGB"))
            assert (np.abs(rgb.astype(int) - rgb[0, 0].astype(int)).max(axis=2) > 30).sum() > 1000, name

        def med(name, key):
            return statistics.median(o[key] for o in runs[name])

        m, h = med("motes", "first_image_s"), med("h5part", "first_image_s")
        b = med("baseline", "first_image_s")
        mm, hm = med("motes", "peak_rss_mb"), med("h5part", "peak_rss_mb")
        r.figures["first_image"] = figure(
            "first_image", f"pvbatch: open, colour by energy, render and save a 640x480 image of a {args.n:,}-"
            "particle step; motes at Fraction 0.01 against H5PartReader on the H5Part export (whole step)",
            m, "s", peers={"h5part": peer(h, "s", h / m, "H5Part time / motes time", runs=runs["h5part"])},
            ratio=h / m, ratio_meaning="H5Part time / motes time", target=">= 10x faster", met=h / m >= 10,
            runs=runs["motes"], process_s=med("motes", "wall_s"), peer_process_s=med("h5part", "wall_s"),
            baseline_s=b, ratio_above_baseline=(h - b) / max(m - b, 1e-3),
            ratio_above_baseline_meaning="(H5Part - sphere) / (motes - sphere): the time the data adds")
        base = med("baseline", "peak_rss_mb")
        r.figures["peak_memory"] = figure(
            "peak_memory", "peak resident memory of the same pvbatch processes above that of one that shows a "
            f"sphere ({base:.0f} MB: ParaView's own)", mm - base, "MB",
            peers={"h5part": peer(hm - base, "MB", (hm - base) / (mm - base), "H5Part / motes, above ParaView's own",
                                  peak_mb=hm)},
            ratio=(hm - base) / (mm - base), ratio_meaning="H5Part / motes, above ParaView's own",
            target="<= 1/10 the memory", met=(hm - base) / (mm - base) >= 10, peak_mb=mm, baseline_mb=base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
