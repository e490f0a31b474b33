#!/usr/bin/env python3
"""yt on a sphere of 0.05 L: ``ds.sphere(c, 0.05 L)[("all", "particle_mass")]`` through motes' yt
frontend (``yt.load("run.motes")``) against yt's own ``open_pmd`` frontend on motes' openPMD
export of the same step (HDF5), in one run.

Usage (from the repository root)::

    python bench/yt_sphere.py                       # 16M particles -> bench/results/yt_sphere.json
    python bench/yt_sphere.py --n 2000000 --out /tmp/yt_sphere.json

The data: ``motes.synth.clustered`` (blobs and filaments in the unit cube, L = 1) with a
``mass`` column, and a 64^3 density mesh beside the particles (yt's open_pmd frontend takes
its domain and its smallest cell from the meshes: with none it assumes a 1 m cube and refuses
every sphere). Two spheres: at the domain's centre (yt's ``"c"``), and at the densest cell of
that mesh that the whole sphere fits around (the densest blob: about 15 % of the particles).

Each run is a fresh Python process (yt and motes imported before the clock starts) that
loads the dataset, selects the sphere and reads the masses; it reports its time, the bytes
it caused to be read from storage (``read_bytes`` of /proc/self/io) and the masses' count
and sum, which must equal numpy's on the arrays written. Cold runs evict every file of both
peers from the page cache first (``posix_fadvise(DONTNEED)``); warm runs follow a cold one.
Sides alternate within each round.

yt 4.4.3's open_pmd frontend counts a species' particles through ``species["/position"]``
and ``species["/particlePatches/numParticles"]``: h5py resolves these absolute names from
the file's root, so as released it finds no particle in any file. The peer runs with those
two names made relative (the method's own source, edited at import by this script, nothing
else changed); the JSON records the patch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import child_results, figure, log, peer, run, touch_memory  # noqa: E402
from cold import evict, files_under  # noqa: E402

PATCH = ('yt.frontends.open_pmd.data_structures.OpenPMDHierarchy._count_grids: species["/position"] -> '
         'species["position"], species["/particlePatches/numParticles"] -> species["particlePatches/numParticles"]')

CHILD = r'''
import inspect, json, sys, textwrap, time
import numpy as np
import yt
import motes, motes.yt
from yt.frontends.open_pmd import data_structures as opmd
src = textwrap.dedent(inspect.getsource(opmd.OpenPMDHierarchy._count_grids)).replace('species["/', 'species["')
ns = {}
exec(compile(src, opmd.__file__, "exec"), opmd.__dict__, ns)
opmd.OpenPMDHierarchy._count_grids = ns["_count_grids"]
yt.set_log_level(40)
side, path, c, r = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
def io():
    with open("/proc/self/io") as fh:
        return {k: int(v) for k, v in (ln.split(":") for ln in fh)}
b0 = io()
t0 = time.perf_counter()
ds = yt.load(path)
if side == "open_pmd":
    ds = ds[0]
ds.index, ds.field_list
t1 = time.perf_counter()
m = ds.sphere(c, (r, "code_length"))["all", "particle_mass"].d
t = time.perf_counter() - t0
b1 = io()
print("RESULT " + json.dumps({"s": t, "load_s": t1 - t0, "sphere_s": t - (t1 - t0),
                              "read_bytes": b1["read_bytes"] - b0["read_bytes"],
                              "rchar": b1["rchar"] - b0["rchar"], "n": int(m.size),
                              "sum": float(np.sort(m).sum())}), flush=True)
'''


def child(script, side, path, c, r) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, script, side, path, json.dumps(c), repr(r)], capture_output=True,
                         text=True, env=env, timeout=1800)
    results = child_results(out.stdout)
    if out.returncode or not results:
        raise RuntimeError(f"{side} failed:\n{(out.stdout + out.stderr)[-3000:]}")
    return results[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--radius", type=float, default=0.05, help="the sphere's radius, in units of L (1)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "yt_sphere.json"))
    args = ap.parse_args()
    import motes

    with run(args.out, ".tmp-yt-", repeat=args.repeat, n=args.n, peer_patch=PATCH) as r:
        path, h5 = os.path.join(r.scratch, "c.motes"), os.path.join(r.scratch, "c.h5")
        cols = motes.synth.clustered(args.n, seed=5)
        cols["mass"] = np.random.default_rng(6).uniform(0.5, 1.5, args.n).astype(np.float32)
        g = 64
        rho, _ = np.histogramdd(np.stack([cols["z"], cols["y"], cols["x"]], axis=1), bins=(g, g, g),
                                range=[(0, 1)] * 3)
        edge = int(np.ceil(args.radius * g))  # the densest cell the whole sphere fits around
        inner = rho[edge:g - edge, edge:g - edge, edge:g - edge]
        k, j, i = (int(v) + edge for v in np.unravel_index(int(np.argmax(inner)), inner.shape))
        centres = {"centre": [0.5, 0.5, 0.5], "densest": [(i + 0.5) / g, (j + 0.5) / g, (k + 0.5) / g]}
        motes.write(path, cols, sync=True, fields={"density": motes.Field(
            rho.astype(np.float32), origin=(0, 0, 0), spacing=(1 / g,) * 3, centering="cell")})
        subprocess.run([sys.executable, "-m", "motes", "convert", path, h5, "--to", "openpmd", "--no-progress"],
                       check=True, capture_output=True)
        refs = {}
        for name, c in centres.items():
            d2 = (cols["x"] - c[0]) ** 2 + (cols["y"] - c[1]) ** 2 + (cols["z"] - c[2]) ** 2
            refs[name] = np.sort(cols["mass"][d2 <= args.radius ** 2]).astype(np.float64)
            log(f"sphere '{name}' at {c}, r {args.radius}: {refs[name].size:,} of {args.n:,} particles")
        del cols, d2
        script = os.path.join(r.scratch, "child.py")
        with open(script, "w") as fh:
            fh.write(CHILD)
        sides = {"motes": path, "open_pmd": h5}
        sizes = {side: sum(os.path.getsize(f) for f in files_under(p)) for side, p in sides.items()}
        for name, c in centres.items():
            ref = refs[name]
            runs = {(side, how): [] for side in sides for how in ("cold", "warm")}
            for _ in range(args.repeat):
                for side, data in sides.items():
                    for how in ("cold", "warm"):
                        if how == "cold":
                            evict([path, h5])
                        touch_memory()
                        out = child(script, side, data, c, args.radius)
                        if out["n"] != ref.size or not np.isclose(out["sum"], ref.sum(), rtol=1e-9):
                            raise AssertionError(f"{side}: {out['n']} masses summing to {out['sum']}, "
                                                 f"numpy: {ref.size} summing to {ref.sum()}")
                        runs[side, how].append(out)
                        log(f"{name} {side} {how}: {out['s']:.3f} s (load {out['load_s']:.3f} s, sphere "
                            f"{out['sphere_s']:.3f} s), {out['read_bytes'] / 1e6:.1f} MB from "
                            f"storage, {out['rchar'] / 1e6:.1f} MB through read()")

            def med(side, how, key):
                return statistics.median(o[key] for o in runs[side, how])

            what = f"ds.sphere({name} {c}, {args.radius} L)[('all', 'particle_mass')]: {ref.size:,} of {args.n:,}"
            for how in ("cold", "warm"):
                m, o = med("motes", how, "s"), med("open_pmd", how, "s")
                r.figures[f"{name}_{how}"] = figure(
                    f"{name}_{how}", f"yt: load, {what} particles, page cache {how}", m, "s",
                    peers={"open_pmd": peer(o, "s", o / m, "open_pmd time / motes time", runs=runs["open_pmd", how])},
                    ratio=o / m, ratio_meaning="open_pmd time / motes time", target=">= 10x faster",
                    met=o / m >= 10, runs=runs["motes", how], load_s=med("motes", how, "load_s"),
                    sphere_s=med("motes", how, "sphere_s"), peer_load_s=med("open_pmd", how, "load_s"),
                    peer_sphere_s=med("open_pmd", how, "sphere_s"))
                ms, os_ = med("motes", how, "sphere_s"), med("open_pmd", how, "sphere_s")
                r.figures[f"{name}_{how}_selection"] = figure(
                    f"{name}_{how}_selection", "the same runs: the sphere's selection and read alone, after "
                    "yt.load, ds.index and ds.field_list (yt's own set-up, the same for both)", ms, "s",
                    peers={"open_pmd": peer(os_, "s", os_ / ms, "open_pmd time / motes time")},
                    ratio=os_ / ms, ratio_meaning="open_pmd time / motes time", target=">= 10x faster",
                    met=os_ / ms >= 10)
            mb, ob = med("motes", "cold", "read_bytes"), med("open_pmd", "cold", "read_bytes")
            r.figures[f"{name}_bytes"] = figure(
                f"{name}_bytes", f"{what}: bytes read from storage, cold (read_bytes of /proc/self/io)", mb, "B",
                peers={"open_pmd": peer(ob, "B", ob / max(mb, 1), "open_pmd bytes / motes bytes")},
                ratio=ob / max(mb, 1), ratio_meaning="open_pmd bytes / motes bytes", target="<= 1/10 the bytes",
                met=ob / max(mb, 1) >= 10, file_bytes=sizes)
            r.sections[name] = {"center": c, "radius": args.radius, "particles": int(ref.size)}
    return 0


if __name__ == "__main__":
    sys.exit(main())
