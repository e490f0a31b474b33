#!/usr/bin/env python3
"""Planner benchmark: a quantile index must never make a query slower than no index.

Usage (from the repository root)::

    python bench/planner.py                  # 2M particles -> bench/results/planner.json
    python bench/planner.py --n 500000 --out /tmp/planner.json

Two data sets of the same shape (2M particles, float32 velocities):

* ``halos``: particles in 400 halos; a velocity is the halo's bulk velocity plus a
  dispersion as wide, so values vary inside every tree leaf (the writer gives the column a
  quantile index) while the 0.1 % tail sits in a few fast halos (the tree prunes it);
* ``noise``: the same positions, velocities unrelated to them (the tree cannot prune).

Each is written twice, with ``index={"v": "quantile"}`` and ``{"v": "none"}``, and the
query ``v > t`` (0.1 % tail) is counted with threads=1 and all threads (median of repeats,
hot page cache). The engines must agree on the count (asserted); speed is not asserted.
The planner prices both plans from the index before reading any value (a probe of 128
leaves, then a traversal that stops when its points outnumber 1/8 of the levels read) and
the ``counters`` show which one ran.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import benchlib
import motes

HERE = os.path.dirname(os.path.abspath(__file__))


def make(n: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    centers, bulk = rng.random((400, 3)), rng.normal(0, 1.0, 400)
    h = rng.integers(0, 400, n)
    pos = (centers[h] + rng.normal(0, 0.01, (n, 3))).astype(np.float32)
    base = {"x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2]}
    return {"halos": {**base, "v": (bulk[h] + rng.normal(0, 0.6, n)).astype(np.float32)},
            "noise": {**base, "v": rng.normal(0, 1.0, n).astype(np.float32)}}


def median_ms(f, repeat: int) -> float:
    for _ in range(3):
        f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "planner.json"))
    args = ap.parse_args()
    started = time.perf_counter()
    meta = benchlib.start_meta(benchmark="planner", n=args.n, query="v > t, t = the 0.999 quantile",
                               target="with the index <= 1.1 x without (the index never makes a query slower)")
    tmp = tempfile.mkdtemp(prefix=".tmp-planner-", dir=HERE)
    rows = []
    try:
        for name, d in make(args.n).items():
            t = float(np.float32(np.quantile(d["v"], 0.999)))
            want = int((d["v"] > np.float32(t)).sum())
            for kind in ("quantile", "none"):
                path = os.path.join(tmp, f"{name}-{kind}.motes")
                motes.write(path, d, index={"v": kind}, sync=False)
                ds = motes.open(path)
                where = f"v > {t!r}"
                sel = ds.select(where, threads=1)
                assert sel.size == want == ds.count(where), (name, kind, sel.size, want)
                row = {"data": name, "index": kind, "rows": want,
                       "ms_threads1": median_ms(lambda: ds.count(where, threads=1), args.repeat),
                       "ms_all_threads": median_ms(lambda: ds.count(where), args.repeat),
                       "counters": {k: sel.counters[k] for k in ("scanned", "points_tested", "nodes_visited")}}
                rows.append(row)
                print(f"{name:6} index={kind:8} {want:6,} rows  threads=1 {row['ms_threads1']:.3f} ms  "
                      f"all {row['ms_all_threads']:.3f} ms  {row['counters']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratios = {}
    for name in ("halos", "noise"):
        q = next(r for r in rows if r["data"] == name and r["index"] == "quantile")
        z = next(r for r in rows if r["data"] == name and r["index"] == "none")
        ratios[name] = q["ms_threads1"] / z["ms_threads1"]
        print(f"{name}: with the index / without, threads=1: {ratios[name]:.2f}")
    benchlib.finish(meta, {}, args.out, started, results=rows, ratio_with_index_over_without_threads1=ratios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
