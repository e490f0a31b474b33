"""Seed corpora for the libFuzzer targets: small valid particle files, field files, step
indexes, manifests and expressions."""

import glob
import hashlib
import os
import shutil
import sys
import tempfile

import numpy as np

import motes
from motes import synth
from motes.fields.file import write_field_file

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
# Format 1 files written by the first release (tests/golden), and format 2 files, coded and raw.
for f in glob.glob(os.path.join(here, "..", "golden", "format1", "**", "*.mpf"), recursive=True):
    shutil.copy(f, os.path.join(out, "reader", "v1-" + hashlib.sha1(f.encode()).hexdigest()[:8] + ".mpf"))
with tempfile.TemporaryDirectory() as tmp:
    for kind, n in [("vpic", 2000), ("uniform", 300), ("wide", 100)]:
        for compression in ("lossless", "none"):
            path = os.path.join(tmp, f"{kind}-{compression}.motes")
            derived = {"s": "sqrt(ux**2 + uy**2) * 2"} if kind == "vpic" else None  # format 2.4 (lossless only)
            # fine levels region by region (format 2.6): regions of about 64 points
            motes.write(path, synth.generate(kind, n, seed=1, with_id=True), leaf_size=32, lod_count=4,
                        treelet_size=256, sync=False, compression=compression, derived=derived,
                        region_points=64 if kind != "wide" else 65536)
            for f in glob.glob(os.path.join(path, "steps", "*", "*.mpf")):
                shutil.copy(f, os.path.join(out, "reader", f"{kind}-{compression}.mpf"))
        # Error-bounded columns: the grid predictors, grid_quantile where ux has quantile codes.
        d = synth.generate(kind, n, seed=3, with_id=True)
        bounds = {a: 1e-3 for a in ("x", "y", "z", "ux") if a in d and d[a].dtype.kind == "f"}
        lossy = os.path.join(tmp, f"{kind}-lossy.motes")
        motes.write(lossy, d, leaf_size=32, lod_count=4, treelet_size=256, sync=False, error_bounds=bounds,
                    index={"ux": "quantile"} if "ux" in d else None)
        for f in glob.glob(os.path.join(lossy, "steps", "*", "*.mpf")):
            shutil.copy(f, os.path.join(out, "reader", f"{kind}-lossy.mpf"))
        motes.write(path, synth.generate(kind, 50, seed=2), step=7, time=0.5, attributes={"code": kind, "dt": [0.1, 2]},
                    sync=False)
        motes.open(path).set_attributes({"run": {"deck": [1, 2, {"a": None}]}, "note": "seed"})
        os.makedirs(os.path.join(out, "manifest"), exist_ok=True)
        shutil.copy(os.path.join(path, "manifest.json"), os.path.join(out, "manifest", f"{kind}.json"))
# Step indexes: a parallel write on MPI_COMM_SELF (mpi4py initialises MPI as a singleton).
os.makedirs(os.path.join(out, "index"), exist_ok=True)
if getattr(motes._core, "has_mpi", False):
    from mpi4py import MPI

    with tempfile.TemporaryDirectory() as tmp:
        for kind, n, target in [("clustered", 3000, 20_000), ("uniform", 500, 100_000)]:
            path = os.path.join(tmp, f"{kind}.motes")
            motes.write(path, synth.generate(kind, n, seed=2, with_id=True), comm=MPI.COMM_SELF,
                        target_bytes=target, sync=False)
            for f in glob.glob(os.path.join(path, "steps", "*", "*.mpi")):
                shutil.copy(f, os.path.join(out, "index", f"{kind}.mpi"))
            shutil.copy(os.path.join(path, "manifest.json"), os.path.join(out, "manifest", f"{kind}-parts.json"))
for text in ["energy > 1.3 and 157.6 < x < 162.4", "not (ux**2 + uy**2 >= 4) or sqrt(abs(z)) == 1e-3",
             "(x > 1) & (y < 2) | ~(z != 3)", "-x**-2 <= log10(y) / exp(z)", "a == b == c != d",
             "field('Bz') > 0.1 and energy > 1", "abs(field(\"E\", 'x')) * 2 < field('rho')",
             "id in (1, -9223372036854775809, 18446744073709551615) and k not in [0.5, -inf,]"]:
    name = hashlib.sha1(text.encode()).hexdigest()[:12]
    with open(os.path.join(out, "expr", name), "w") as f:
        f.write(text)
# Field files: 1-3-D, scalar and vector, coded and raw, small blocks (several levels of blocks).
os.makedirs(os.path.join(out, "field"), exist_ok=True)
rng = np.random.default_rng(5)
for name, field, options in [
        ("f32-3d", motes.Field(rng.random((5, 6, 7)).astype(np.float32)), {"block_bits": 6}),
        ("i16-2d-raw", motes.Field(rng.integers(-9, 9, (9, 13)).astype(np.int16)), {"compression": "none"}),
        ("vec-cell", motes.Field(rng.standard_normal((4, 4, 4, 3)), components="xyz", centering="cell"), {}),
        ("rect-1d", motes.Field(np.arange(17, dtype=np.uint8), coords=[np.arange(17.0) ** 2]), {"block_bits": 6})]:
    write_field_file(os.path.join(out, "field", name + ".mfd"), field, name=name, sync=False, **options)
