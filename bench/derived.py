#!/usr/bin/env python3
"""A tail of a quantity the file does not store: the speed |u| = sqrt(ux**2 + uy**2 + uz**2),
answered through a derived quantity's tail index (particle format 2.4) next to the same file
without it (the tree and a scan of three columns), h5py + numpy and numpy in memory, in the
same run, on the same data.

Usage (from the repository root)::

    python bench/derived.py                    # 10M particles -> bench/results/derived.json
    python bench/derived.py --n 1000000 --out /tmp/derived.json

Data: ``synth.vpic`` (8 float32 columns; its momenta are thermal noise, so the fastest 0.1 %
are spread through the whole sheet). Written by motes with ``derived={"umag": ...}`` and
without (both with the default column tails and covers), and by h5py (one dataset per column).
Figures (medians):

* ``derived_tail``: ``sqrt(ux**2 + uy**2 + uz**2) > t`` (t: the 0.999 quantile), every
  column returned, hot. Peers: the file without the derived quantity, h5py + numpy (read the
  three momenta, compute, mask, read every column), numpy on the arrays in memory.
* ``derived_tail_cold``: the same, page cache evicted and decoded blocks dropped before each
  run (every peer's files), with the bytes read from storage.
* ``derived_size``: what the quantity adds to the file (its tail, cover and statistics) over
  the columns' raw bytes; ``derived_write``: the write with and without it (sync=False).

Target (issue "Core 3", item 5): the tail of a derived quantity read like a column's tail:
>= 10x h5py + numpy cold. The engines must agree on every answer (asserted); speed is not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import figure, log, ms, peer, perf, timed  # noqa: E402
from cold import evict, storage_bytes  # noqa: E402

UMAG = "sqrt(ux**2 + uy**2 + uz**2)"


def umag(ux, uy, uz):
    """The query language's arithmetic: float64, (ux² + uy²) + uz², then the root."""
    ux, uy, uz = (a.astype(np.float64) for a in (ux, uy, uz))
    return np.sqrt(ux * ux + uy * uy + uz * uz)


def h5_query(path: str, names, t: float):
    import h5py

    with h5py.File(path, "r") as f:
        mask = umag(f["ux"][:], f["uy"][:], f["uz"][:]) > t
        return {n: f[n][:][mask] for n in names}


def prime() -> None:
    """Touch and free 2 GiB: the VM hands idle memory back and the first hungry run pays for it."""
    a = np.ones(1 << 28)
    del a


def same(a, b, names) -> None:
    """The same rows (in any order), bit for bit."""
    order_a, order_b = (np.lexsort([np.asarray(t[n]) for n in names]) for t in (a, b))
    for n in names:
        assert np.array_equal(np.asarray(a[n])[order_a], np.asarray(b[n])[order_b]), n


def cold(figs, paths, where, t, names, repeat, expect) -> None:
    import motes

    runs = {"derived": [], "plain": [], "h5py": []}
    read = dict.fromkeys(runs, 0)
    fns = {"derived": lambda: motes.open(paths["derived"]).query(where),
           "plain": lambda: motes.open(paths["plain"]).query(where),
           "h5py": lambda: h5_query(paths["h5"], names, t)}
    for _ in range(repeat):
        for name, fn in fns.items():
            prime()
            motes._core.clear_block_cache()
            evict(list(paths.values()))
            b0, t0 = storage_bytes(), perf()
            out = fn()
            runs[name].append(perf() - t0)
            read[name] = storage_bytes() - b0
            assert len(out["x"]) == expect, name
    m, p, h = (statistics.median(runs[k]) for k in ("derived", "plain", "h5py"))
    log(f"derived_tail_cold: derived {m * 1e3:.1f} ms ({read['derived'] / 1e6:.1f} MB), without {p * 1e3:.1f} ms "
        f"({read['plain'] / 1e6:.1f} MB), h5py {h * 1e3:.1f} ms ({read['h5py'] / 1e6:.1f} MB): {h / m:.1f}x h5py")
    figs["derived_tail_cold"] = figure(
        "derived_tail_cold", f"cold: open + `{where}` + every column, page cache evicted and decoded blocks dropped "
        "before each run; read_mb: bytes read from storage (/proc/self/io)", m * 1e3, "ms",
        peers={"motes without the derived quantity": peer(p * 1e3, "ms", p / m, "peer / motes",
                                                          read_mb=read["plain"] / 1e6),
               "h5py + numpy": peer(h * 1e3, "ms", h / m, "peer / motes", read_mb=read["h5py"] / 1e6)},
        ratio=h / m, ratio_meaning="h5py time / motes time", target=">= 10x faster than h5py + numpy",
        met=h / m >= 10, read_mb=read["derived"] / 1e6, runs_s=runs, rows=expect)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--cold-repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "derived.json"))
    args = ap.parse_args()
    import h5py

    import motes
    import motes.synth as synth

    with benchlib.run(args.out, ".tmp-derived-", repeat=args.repeat, n=args.n) as r:
        tmp, figs = r.scratch, r.figures
        cols = synth.vpic(args.n, seed=3)
        names = list(cols)
        v = umag(cols["ux"], cols["uy"], cols["uz"])
        t = float(np.quantile(v, 0.999))
        where = f"{UMAG} > {t!r}"
        expect = int((v > t).sum())
        paths = {"derived": os.path.join(tmp, "derived.motes"), "plain": os.path.join(tmp, "plain.motes"),
                 "h5": os.path.join(tmp, "data.h5")}
        log(f"{args.n:,} particles, {where}: {expect:,} rows; writing motes with and without the derived quantity, h5py")
        prime()
        tw, _ = timed(lambda: motes.write(paths["derived"], cols, sync=False, derived={"umag": UMAG}), 2, warmup=0,
                      before=lambda: benchlib.rmpath(paths["derived"]))
        tp, _ = timed(lambda: motes.write(paths["plain"], cols, sync=False), 2, warmup=0,
                      before=lambda: benchlib.rmpath(paths["plain"]))
        with h5py.File(paths["h5"], "w") as f:
            for k, a in cols.items():
                f.create_dataset(k, data=a)
        ds, plain = motes.open(paths["derived"]), motes.open(paths["plain"])
        prime()
        tq, tab = timed(lambda: ds.query(where), args.repeat)
        assert len(tab) == expect and tab.counters["tail_index_parts"] == 1 and tab.counters["covered_parts"] == 1, \
            tab.counters
        tq_plain, tab_plain = timed(lambda: plain.query(where), max(3, args.repeat // 4))
        same(tab, tab_plain, names)
        th, got = timed(lambda: h5_query(paths["h5"], names, t), 5)
        same(tab, got, names)
        def in_memory():
            mask = umag(cols["ux"], cols["uy"], cols["uz"]) > t
            return {n: cols[n][mask] for n in names}

        tnp, _ = timed(in_memory, 5)
        m = ms(tq["median"])
        log(f"derived_tail: {m:.3f} ms, without {ms(tq_plain['median']):.1f} ms, h5py {ms(th['median']):.0f} ms, "
            f"numpy in memory {ms(tnp['median']):.0f} ms")
        figs["derived_tail"] = figure(
            "derived_tail", f"`{where}` (0.1%), {len(names)} columns returned, hot", m, "ms", timing=tq, rows=expect,
            counters=tab.counters,
            peers={"motes without the derived quantity (the tree, three columns tested)":
                   peer(ms(tq_plain["median"]), "ms", ms(tq_plain["median"]) / m, "peer / motes", timing_s=tq_plain,
                        counters=tab_plain.counters),
                   "h5py + numpy (three columns read, computed, masked; every column read)":
                   peer(ms(th["median"]), "ms", ms(th["median"]) / m, "peer / motes", timing_s=th),
                   "numpy on the arrays in memory": peer(ms(tnp["median"]), "ms", ms(tnp["median"]) / m, "peer / motes",
                                                         timing_s=tnp)})
        cold(figs, paths, where, t, names, args.cold_repeat, expect)
        raw = sum(a.nbytes for a in cols.values())
        added = benchlib.du(paths["derived"]) - benchlib.du(paths["plain"])
        d = ds.file(0).derived["umag"]
        log(f"derived_size: +{added / 1e6:.2f} MB = {100 * added / raw:.2f}% of the raw columns; write "
            f"{tw['median']:.2f} s with, {tp['median']:.2f} s without")
        figs["derived_size"] = figure(
            "derived_size", "bytes the derived quantity adds to the file (tail, cover, statistics) / the columns' raw "
            "bytes", 100 * added / raw, "%", added_bytes=added, raw_bytes=raw, tail=d["tail"])
        figs["derived_write"] = figure(
            "derived_write", f"motes.write of {args.n:,} particles (sync=False) with the derived quantity",
            tw["median"], "s", timing=tw,
            peers={"motes.write without it": peer(tp["median"], "s", tp["median"] / tw["median"], "peer / motes",
                                                  timing_s=tp)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
