#!/usr/bin/env python3
"""Tracking particles by id: motes' id index (Dataset.track) next to the two ways tools do it
today, in the same run, on the same steps:

* openPMD-viewer's ParticleTracker style: read the whole id array of the step (h5py), argsort
  it, merge the ids asked for with searchsorted, then read the columns and take those rows;
* yt style: read the id array, ``np.isin`` against the ids asked for, take the rows.

Usage (from the repository root)::

    python bench/track.py                         # -> bench/results/track.json
    python bench/track.py --big 4000000 --steps 20 --per-step 200000 --out /tmp/track.json

Data: ``synth.vpic`` particles with a u64 ``id`` column (a random permutation, so ids are
scattered through the spatial layout), written by motes (with the id index) and by h5py
(one dataset per column, contiguous). Figures (hot page cache, medians):

* ``one_step``: 500 ids through one ``--big``-particle step (16M by default), every column.
* ``many_steps``: 1,000 ids through ``--steps`` steps of ``--per-step`` particles (100 of 1M),
  every column (the peers run on the first 10 steps and are scaled: they cost the same per step);
  also motes on the same steps written with ``compression="none"``.
* ``index_size``: bytes per particle of the id index (the file with the index minus without).

Targets (issue "Value indexes and time"): one_step <= 1 ms; many_steps <= 100 ms; index size
<= 4.5 bytes per particle. Nothing is asserted; the JSON records everything.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import figure, log, ms, peer, timed  # noqa: E402


def columns(n: int, seed: int):
    import motes.synth as synth

    c = synth.vpic(n, seed=seed)
    c["id"] = np.random.default_rng(seed).permutation(n).astype(np.uint64)
    return c


def h5_step(path: str, cols) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        for k, v in cols.items():
            f.create_dataset(k, data=v)


def viewer_style(path: str, ids: np.ndarray, names):
    """Read the id array, argsort, merge; then read each column and take the rows."""
    import h5py

    with h5py.File(path, "r") as f:
        all_ids = f["id"][:]
        order = np.argsort(all_ids, kind="stable")
        at = np.searchsorted(all_ids, ids, sorter=order)
        at = np.minimum(at, len(all_ids) - 1)
        rows = order[at]
        found = all_ids[rows] == ids
        return {n: f[n][:][rows[found]] for n in names}, found


def yt_style(path: str, ids: np.ndarray, names):
    """Read the id array, np.isin, take the rows (in file order)."""
    import h5py

    with h5py.File(path, "r") as f:
        mask = np.isin(f["id"][:], ids)
        return {n: f[n][:][mask] for n in names}, mask


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big", type=int, default=16_000_000, help="particles of the one-step figure")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--per-step", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "track.json"))
    args = ap.parse_args()
    import motes

    rng = np.random.default_rng(7)
    with benchlib.run(args.out, ".tmp-track-", repeat=args.repeat) as r:
        tmp, figs = r.scratch, r.figures
        # --- one big step ---------------------------------------------------------------------
        log(f"writing one step of {args.big:,} particles (motes with and without the id index, h5py)")
        cols = columns(args.big, 1)
        names = list(cols)
        big = os.path.join(tmp, "big.motes")
        motes.write(big, cols, sync=False)
        motes.write(os.path.join(tmp, "big-noindex.motes"), cols, sync=False, ids=False)
        h5 = os.path.join(tmp, "big.h5")
        h5_step(h5, cols)
        ids = rng.choice(args.big, 500, replace=False).astype(np.uint64)
        ds = motes.open(big)
        t, tr = timed(lambda: ds.track(ids, columns=names), args.repeat)
        for n in names:  # the answer, against the input
            pos = np.argsort(cols["id"])[np.searchsorted(cols["id"], ids, sorter=np.argsort(cols["id"]))]
            assert np.array_equal(tr.values[n][0], cols[n][pos]), n
        tv, (got, _) = timed(lambda: viewer_style(h5, ids, names), max(1, args.repeat // 2))
        ty, _ = timed(lambda: yt_style(h5, ids, names), max(1, args.repeat // 2))
        m = ms(t["median"])
        log(f"one step: motes {m:.3f} ms, viewer-style {ms(tv['median']):.0f} ms, yt-style {ms(ty['median']):.0f} ms")
        figs["one_step"] = figure(
            "one_step", f"500 ids through one {args.big:,}-particle step, {len(names)} columns, hot", m, "ms", timing=t,
            peers={"openPMD-viewer style (read ids, argsort, merge)": peer(ms(tv["median"]), "ms", ms(tv["median"]) / m, "peer / motes", timing_s=tv),
                   "yt style (np.isin)": peer(ms(ty["median"]), "ms", ms(ty["median"]) / m, "peer / motes", timing_s=ty)},
            target="<= 1 ms", met=m <= 1.0)
        with_index = benchlib.du(big)
        without = benchlib.du(os.path.join(tmp, "big-noindex.motes"))
        per = (with_index - without) / args.big
        log(f"id index: {per:.2f} bytes per particle")
        figs["index_size"] = figure("index_size", "bytes per particle of the id index (file with it minus without)",
                                    per, "B/particle", target="<= 4.5 B/particle", met=per <= 4.5,
                                    file_bytes_with=with_index, file_bytes_without=without,
                                    raw_column_bytes_per_particle=sum(v.itemsize for v in cols.values()))
        del cols, ds, tr, got
        # --- many steps ----------------------------------------------------------------------
        log(f"writing {args.steps} steps of {args.per_step:,} particles (lossless, and compression='none')")
        many = os.path.join(tmp, "many.motes")
        many_raw = os.path.join(tmp, "many-raw.motes")
        h5s = []
        with motes.Writer(many, sync=False) as w, motes.Writer(many_raw, sync=False, compression="none") as wr:
            for s in range(args.steps):
                c = columns(args.per_step, 100 + s)
                w.write_step(s, c)
                wr.write_step(s, c)
                if s < 10:
                    h5s.append(os.path.join(tmp, f"s{s}.h5"))
                    h5_step(h5s[-1], c)
        names = list(c)
        ids = rng.choice(args.per_step, 1000, replace=False).astype(np.uint64)
        ds = motes.open(many)
        t, tr = timed(lambda: ds.track(ids, columns=names), args.repeat)
        assert tr.present.all()
        # The same steps stored as they are (compression="none"): a row is read in place, no
        # block of 16384 values decoded for it (and no id index: the id column is searched).
        ds_raw = motes.open(many_raw)
        t_raw, tr_raw = timed(lambda: ds_raw.track(ids, columns=names), args.repeat)
        assert np.array_equal(tr_raw.present, tr.present)
        tv, _ = timed(lambda: [viewer_style(p, ids, names) for p in h5s], 1)
        ty, _ = timed(lambda: [yt_style(p, ids, names) for p in h5s], 1)
        scale = args.steps / len(h5s)
        m = ms(t["median"])
        pv, py = ms(tv["median"]) * scale, ms(ty["median"]) * scale
        log(f"many steps: motes {m:.1f} ms; viewer-style {pv:.0f} ms, yt-style {py:.0f} ms (scaled from {len(h5s)} steps)")
        figs["many_steps"] = figure(
            "many_steps", f"1,000 ids through {args.steps} steps of {args.per_step:,} particles, {len(names)} columns, hot",
            m, "ms", timing=t,
            peers={"motes, compression='none' (no id index: the id column searched)": peer(ms(t_raw["median"]), "ms", ms(t_raw["median"]) / m, "peer / motes", timing_s=t_raw),
                   "openPMD-viewer style": peer(pv, "ms", pv / m, "peer / motes", measured_steps=len(h5s), timing_s=tv),
                   "yt style (np.isin)": peer(py, "ms", py / m, "peer / motes", measured_steps=len(h5s), timing_s=ty)},
            target="<= 100 ms", met=m <= 100.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
