#!/usr/bin/env python3
"""Rare values spread through a large structure: the tail index (particle format 2.2) next to
what answered `ux > t` before it and to the usual tools, in the same run, on the same data.

Usage (from the repository root)::

    python bench/tail.py                       # 10M particles -> bench/results/tail.json
    python bench/tail.py --n 2000000 --out /tmp/tail.json

Data: ``synth.vpic`` (8 float32 columns). Its momenta are thermal noise, so the 0.1 % of
particles with the largest ``ux`` are spread through the whole current sheet and the plasmoids
(94 % of the particles): no per-node index can prune them. Written by motes with its default
tail indexes, with ``tails=False`` (what motes did before: node pruning, quantile codes, scan),
with ``compression="none"`` (tail indexes, values read in place), and by h5py (one contiguous
dataset per column). Figures (hot page cache, medians):

* ``tail_query``: ``ux > t`` with t the 0.999 quantile, every column returned. Peers: motes
  without tail indexes, motes uncompressed, h5py + numpy (read every column, mask), numpy on
  the arrays in memory.
* ``tail_count``: ``count("ux > t")``, the same peers less numpy's copies.
* ``tail_size``: the tail indexes' stored bytes over the columns' raw bytes.
* ``write``: ``motes.write`` (not fsync'd) with and without tail indexes: what they cost a writer.

Targets (issue "Value indexes and time"): tail_query <= 0.3 ms; tail_size <= 2 % of the data.
The engines must agree on every answer (asserted); speed is not asserted.
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


def h5_query(path: str, names, t: float):
    import h5py

    with h5py.File(path, "r") as f:
        mask = f["ux"][:] > t
        return {n: f[n][:][mask] for n in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "tail.json"))
    args = ap.parse_args()
    import h5py

    import motes
    import motes.synth as synth

    with benchlib.run(args.out, ".tmp-tail-", repeat=args.repeat, n=args.n) as r:
        tmp, figs = r.scratch, r.figures
        cols = synth.vpic(args.n, seed=3)
        names = list(cols)
        t = float(np.quantile(cols["ux"], 0.999))
        where = f"ux > {t!r}"
        log(f"{args.n:,} particles, {where}: writing motes (tail indexes, and none) and h5py")
        with_tails, without = os.path.join(tmp, "tails.motes"), os.path.join(tmp, "none.motes")
        tw, _ = timed(lambda: motes.write(with_tails, cols, sync=False), 3, warmup=0,
                      before=lambda: benchlib.rmpath(with_tails))
        tn, _ = timed(lambda: motes.write(without, cols, sync=False, tails=False), 3, warmup=0,
                      before=lambda: benchlib.rmpath(without))
        raw = os.path.join(tmp, "raw.motes")  # values stored as they are: rows read in place, no block decoded
        motes.write(raw, cols, sync=False, compression="none")
        h5 = os.path.join(tmp, "data.h5")
        with h5py.File(h5, "w") as f:
            for k, v in cols.items():
                f.create_dataset(k, data=v)
        ds, ds_none = motes.open(with_tails), motes.open(without)
        mask = cols["ux"] > np.float32(t) if cols["ux"].dtype == np.float32 else cols["ux"] > t
        expect = int(mask.sum())

        def query(d):
            tab = d.query(where)
            return tab

        tq, tab = timed(lambda: query(ds), args.repeat)
        assert len(tab) == expect and tab.counters["tail_index_parts"] == 1, tab.counters
        assert np.array_equal(np.sort(tab["ux"]), np.sort(cols["ux"][mask]))
        tq_none, tab_none = timed(lambda: query(ds_none), args.repeat)
        assert len(tab_none) == expect
        ds_raw = motes.open(raw)
        tq_raw, tab_raw = timed(lambda: query(ds_raw), args.repeat)
        assert len(tab_raw) == expect
        th, got = timed(lambda: h5_query(h5, names, t), 7)
        assert len(got["ux"]) == expect
        tnp, _ = timed(lambda: {n: cols[n][cols["ux"] > t] for n in names}, 7)
        m = ms(tq["median"])
        log(f"tail_query: motes {m:.3f} ms ({expect:,} rows), without tail indexes {ms(tq_none['median']):.2f} ms, "
            f"h5py {ms(th['median']):.0f} ms, numpy in memory {ms(tnp['median']):.1f} ms")
        figs["tail_query"] = figure(
            "tail_query", f"`{where}` (0.1%, spread through the sheet), {len(names)} columns returned, hot", m, "ms",
            timing=tq, rows=expect, counters=tab.counters,
            peers={"motes without tail indexes (tails=False: quantile codes, scan)":
                   peer(ms(tq_none["median"]), "ms", ms(tq_none["median"]) / m, "peer / motes", timing_s=tq_none,
                        counters=tab_none.counters),
                   "motes, compression='none' (tail index on raw values, rows read in place)":
                   peer(ms(tq_raw["median"]), "ms", ms(tq_raw["median"]) / m, "peer / motes", timing_s=tq_raw),
                   "h5py + numpy (read every column, mask)": peer(ms(th["median"]), "ms", ms(th["median"]) / m, "peer / motes", timing_s=th),
                   "numpy on the arrays in memory (mask, take)": peer(ms(tnp["median"]), "ms", ms(tnp["median"]) / m, "peer / motes", timing_s=tnp)},
            target="<= 0.3 ms", met=m <= 0.3)
        tc, c = timed(lambda: ds.count(where), args.repeat)
        assert c == expect
        tc_none, c_none = timed(lambda: ds_none.count(where), args.repeat)
        assert c_none == expect
        tcn, _ = timed(lambda: int(np.count_nonzero(cols["ux"] > t)), 7)
        mc = ms(tc["median"])
        log(f"tail_count: motes {mc:.3f} ms, without tail indexes {ms(tc_none['median']):.2f} ms")
        figs["tail_count"] = figure(
            "tail_count", f"count(`{where}`), hot", mc, "ms", timing=tc,
            peers={"motes without tail indexes": peer(ms(tc_none["median"]), "ms", ms(tc_none["median"]) / mc, "peer / motes", timing_s=tc_none),
                   "numpy on the array in memory": peer(ms(tcn["median"]), "ms", ms(tcn["median"]) / mc, "peer / motes", timing_s=tcn)})
        f = ds.file(0)
        raw = sum(v.nbytes for v in cols.values())
        tail_bytes = f.sizes["tail_index_bytes"]
        share = tail_bytes / raw
        log(f"tail_size: {tail_bytes / 1e6:.2f} MB = {100 * share:.2f}% of the raw columns "
            f"({100 * tail_bytes / f.sizes['file_bytes']:.2f}% of the file)")
        figs["tail_size"] = figure(
            "tail_size", "tail indexes' stored bytes / the columns' raw bytes", 100 * share, "%",
            target="<= 2 %", met=share <= 0.02, tail_bytes=tail_bytes, raw_bytes=raw, file_bytes=f.sizes["file_bytes"],
            file_bytes_without=benchlib.du(without), tail_indexes=f.tail_indexes)
        mw = tw["median"]
        log(f"write: with tail indexes {mw:.2f} s, without {tn['median']:.2f} s")
        figs["write"] = figure(
            "write", f"motes.write of {args.n:,} particles (sync=False), with the default tail indexes", mw, "s", timing=tw,
            peers={"motes.write, tails=False": peer(tn["median"], "s", tn["median"] / mw, "peer / motes", timing_s=tn)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
