#!/usr/bin/env python3
"""Writes that do not stall the simulation: a mini-app that computes for a fixed time between
writes of 10M particles per step, writing with motes (synchronous, and ``background=True``)
and with ADIOS2 BP5 (synchronous, and with its ``AsyncWrite``), in one run.

Usage (from the repository root)::

    python bench/background_write.py                 # 10M particles, 5 steps, 1 s and 4 s of compute
    python bench/background_write.py --n 2000000 --steps 4 --compute 0.3 --out /tmp/bg.json

Each step: compute (the arrays updated in place by numpy on one thread until ``--compute``
seconds have passed, as a simulation's time step would), then write the step, for each
compute time of ``--compute``: with less compute than a step's write costs, a background
writer cannot keep up and the queue's bound makes the simulation wait. Figures per side: the time the mini-app is blocked in the write call (median over the steps: motes'
``write_step``, which in the background copies the arrays and queues the step; ADIOS2's
``BeginStep``/``Put``/``EndStep``), and the step period (the whole run, last write's
completion included: ``close``, divided by the steps). motes syncs its files (acknowledged
steps are durable); ADIOS2 does not fsync. Sides alternate within each round; page cache and
memory as they come, ~2 GiB touched first. The benchmark measures; it asserts that each
side wrote every step.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import figure, log, peer, perf, run, touch_memory  # noqa: E402


def compute(cols, seconds: float) -> None:
    """The simulation's time step: the particles pushed in place until `seconds` have passed."""
    end = perf() + seconds
    while perf() < end:
        for name in ("x", "y", "z"):
            cols[name] *= np.float32(1.0)
            cols[name] += np.float32(0.0)


class MotesSide:
    def __init__(self, path, background):
        import motes

        self.w = motes.Writer(path, background=background, sync=True)
        self.futures = []

    def write(self, step, cols):
        out = self.w.write_step(step, cols, time=float(step))
        self.futures.append(out)

    def close(self):
        self.w.close()


class AdiosSide:
    def __init__(self, path, asynchronous, cols):
        from adios2 import bindings as b

        self.b = b
        self.adios = b.ADIOS()
        self.io = self.adios.DeclareIO(f"motes-bench-{asynchronous}-{id(self)}")
        self.io.SetEngine("BP5")
        self.io.SetParameter("AsyncWrite", "On" if asynchronous else "Off")
        n = len(cols["x"])
        self.vars = {k: self.io.DefineVariable(k, v, [n], [0], [n], b.ConstantDims) for k, v in cols.items()}
        self.engine = self.io.Open(path, b.Mode.Write)

    def write(self, step, cols):
        self.engine.BeginStep()
        for k, v in cols.items():
            self.engine.Put(self.vars[k], v)
        self.engine.EndStep()

    def close(self):
        self.engine.Close()


def one_run(kind, path, cols, steps, seconds):
    """(blocked seconds per step, step period)."""
    if kind.startswith("motes"):
        side = MotesSide(path, kind == "motes_background")
    else:
        side = AdiosSide(path, kind == "adios2_bp5_async", cols)
    blocked = []
    t0 = perf()
    for s in range(steps):
        compute(cols, seconds)
        b0 = perf()
        side.write(s, cols)
        blocked.append(perf() - b0)
    side.close()
    total = perf() - t0
    return blocked, total / steps


def check(kind, path, steps, n):
    if kind.startswith("motes"):
        import motes

        ds = motes.open(path)
        assert ds.steps == list(range(steps)) and all(ds.count_total(s) == n for s in ds.steps), kind
    else:
        from adios2 import FileReader

        with FileReader(path) as f:
            assert f.num_steps() == steps, kind


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--compute", default="1,4", help="seconds of compute between writes (a comma-separated list)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "background_write.json"))
    args = ap.parse_args()
    import motes

    kinds = ["motes_sync", "motes_background", "adios2_bp5", "adios2_bp5_async"]
    computes = [float(v) for v in args.compute.split(",")]
    with run(args.out, ".tmp-bgwrite-", repeat=args.repeat, n=args.n, steps=args.steps, compute_s=computes) as r:
        cols = dict(motes.synth.vpic(args.n, seed=3))
        mb = args.n * sum(v.itemsize for v in cols.values()) / 1e6
        for seconds in computes:
            blocked = {k: [] for k in kinds}
            period = {k: [] for k in kinds}
            for rnd in range(args.repeat):
                for kind in kinds:
                    path = os.path.join(r.scratch, f"{kind}-{rnd}" + (".motes" if kind.startswith("motes") else ".bp"))
                    touch_memory()
                    b, p = one_run(kind, path, cols, args.steps, seconds)
                    check(kind, path, args.steps, args.n)
                    shutil.rmtree(path)
                    blocked[kind] += b
                    period[kind].append(p)
                    log(f"{kind}: blocked per step {statistics.median(b):.3f} s (max {max(b):.3f}), "
                        f"period {p:.3f} s (compute {seconds:.2f} s)")
            med = {k: statistics.median(v) for k, v in blocked.items()}
            per = {k: statistics.median(v) for k, v in period.items()}
            tag = f"compute_{seconds:g}s"
            r.figures[f"blocked_per_step_{tag}"] = figure(
                f"blocked_per_step_{tag}", f"time the mini-app is blocked writing a step of {args.n:,} particles "
                f"({mb:.0f} MB) after {seconds:g} s of compute, median over the steps: motes background=True "
                "(copy + queue, and waiting for room when the writes fall behind)", med["motes_background"], "s",
                peers={"adios2_bp5_async": peer(med["adios2_bp5_async"], "s",
                                                med["adios2_bp5_async"] / med["motes_background"],
                                                "BP5 AsyncWrite / motes background"),
                       "adios2_bp5": peer(med["adios2_bp5"], "s", med["adios2_bp5"] / med["motes_background"],
                                          "BP5 / motes background"),
                       "motes_sync": peer(med["motes_sync"], "s", med["motes_sync"] / med["motes_background"],
                                          "motes synchronous / motes background")},
                ratio=med["adios2_bp5_async"] / med["motes_background"],
                ratio_meaning="BP5 AsyncWrite / motes background", target="<= BP5's blocked time with AsyncWrite",
                met=med["motes_background"] <= med["adios2_bp5_async"], runs=blocked)
            r.figures[f"step_period_{tag}"] = figure(
                f"step_period_{tag}", f"the mini-app's period per step ({seconds:g} s of compute + the write's "
                "blocking; close included), motes background=True", per["motes_background"], "s",
                peers={k: peer(v, "s", v / per["motes_background"], f"{k} / motes background") for k, v in per.items()
                       if k != "motes_background"},
                ratio=per["adios2_bp5_async"] / per["motes_background"],
                ratio_meaning="BP5 AsyncWrite / motes background", runs=period)
    return 0


if __name__ == "__main__":
    sys.exit(main())
