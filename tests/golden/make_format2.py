#!/usr/bin/env python3
"""Writes the format-2 golden fixtures in tests/golden/format2/ (run once per format minor
version, never to "fix" a failing test).

A serial dataset of one step whose columns take every coded path of format 2.0: positions
(delta and xor predictors), noise with a quantile index (quantile-residual predictor, raw
codes), a smooth field, error-bounded columns (grid predictors; grid within quantile bins),
integers (offset, delta), a sign in every value (bit planes), an id column, a constant,
NaNs and infinities, more than one block per column, and zstd
metadata sections. ``answers.json`` holds, for every array this version read back (values
in file order, the results of the queries of ``queries.json``), its dtype, length and SHA-256: the fixtures stay small and
pin every bit. ``appendix_c.mpf`` is the file of
docs/format.md Appendix C (N = 0, written with default parameters).

    python tests/golden/make_format2.py
"""
import os
import shutil
import sys

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2")


def inputs():
    rng = np.random.default_rng(2026)
    n = 40_000  # three blocks of 16384 values per column
    x = rng.random(n, dtype=np.float32) * 10
    y = rng.random(n, dtype=np.float32) * 5
    z = (rng.random(n) * 2).astype(np.float64)
    energy = (np.sin(x) + y * 0.1).astype(np.float32)
    energy[::101] = np.nan
    energy[7] = np.inf
    return {
        "x": x, "y": y, "z": z,
        "ux": rng.normal(0, 1, n).astype(np.float32),
        "energy": energy,
        "w": (rng.normal(0, 3, n)).astype(np.float64),
        "id": np.arange(n, dtype=np.uint64) * 3 + 5,
        "q": rng.integers(-5, 6, n).astype(np.int16),
        "cell": rng.integers(1000, 1100, n).astype(np.int32),
        "one": np.ones(n, np.float32),
        "charge": np.where(rng.random(n) < 0.5, -1.0, 1.0).astype(np.float32),
        "uy": rng.normal(0, 2, n).astype(np.float32),
    }


def main():
    readback.clear(HERE)
    path = os.path.join(HERE, "serial")
    e = inputs()
    motes.write(path, e, time=0.25, attributes={"code": "golden2"}, index={"ux": "quantile", "uy": "quantile"},
                units={"x": "m"}, error_bounds={"w": 1e-3, "uy": 1e-2}, leaf_size=64, lod_count=4, treelet_size=4096)
    os.remove(os.path.join(path, ".lock"))
    empty = os.path.join(HERE, "empty")
    motes.write(empty, {a: np.zeros(0, np.float32) for a in "xyz"})
    shutil.copy(os.path.join(empty, "steps", "000000", "particles.mpf"), os.path.join(HERE, "appendix_c.mpf"))
    shutil.rmtree(empty)
    readback.write_answers(HERE, indent=0)  # the reads of queries.json
    ds = motes.open(path)
    f = ds.file()
    print("wrote", HERE, "with motes", motes.__version__, "features", f.required_features, file=sys.stderr)
    for c in f.columns:
        print(f"  {c['name']:7s} {c['codec']}", file=sys.stderr)


if __name__ == "__main__":
    main()
