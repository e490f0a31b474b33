#!/usr/bin/env python3
"""The file order's trade-off: how much of the tree stays a level-major coarse prefix
(``prefix_share``), the fine levels after it stored region by region (docs/format.md
section 5.4), measured on the same data written with each share, in one run.

Usage (from the repository root)::

    python bench/layout.py                           # 16M VPIC-like particles, five layouts
    python bench/layout.py --n 4000000 --configs 1:65536,0.015625:65536

For each layout (a share and ``region_points``, the particles per region): the file's size,
its detail level, region depth and regions; cold (page cache evicted,
decoded-block cache emptied; open + query + every column): a 1 % box, and previews of
1 % and 10 % of the particles (``fraction=``); warm: a viewer's progression (quality 0.1 ->
1.0 in ten slices, every column, fresh open, decoded-block cache emptied). Share 1 is the
level-major order of every file before format 2.6. The benchmark measures; it asserts only
that every share returns the same rows.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
from typing import Dict, List

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import du, figure, log, peer, perf, progression, run, touch_memory  # noqa: E402
from cold import evict, one_percent_box, storage_bytes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def share_name(c) -> str:
    s, points = c
    return "level_major" if s >= 1 else f"share_1_{round(1 / s)}_regions_{points}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16_000_000)
    ap.add_argument("--configs", default="1:65536,0.015625:1,0.015625:16384,0.015625:65536,0.0625:65536",
                    help="comma-separated prefix_share:region_points")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(RESULTS, "layout.json"))
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args(argv)
    shares = [(float(v.split(":")[0]), int(v.split(":")[1])) for v in args.configs.split(",")]

    import motes
    from motes import synth

    with run(args.out, ".tmp-layout-", args.tmp, benchmark="layout", n=args.n, shares=shares,
             repeat=args.repeat) as r:
        cols = synth.vpic(args.n, seed=0)
        names = list(cols)
        box = one_percent_box(cols)
        inside = ((cols["x"] >= box[0]) & (cols["x"] <= box[3]) & (cols["y"] >= box[1]) & (cols["y"] <= box[4])
                  & (cols["z"] >= box[2]) & (cols["z"] <= box[5]))
        box_rows = int(inside.sum())
        returned_mb = sum(cols[c][inside].nbytes for c in names) / 1e6
        paths = {}
        for s in shares:
            p = os.path.join(r.scratch, f"{share_name(s)}.motes")
            t0 = perf()
            motes.write(p, cols, sync=True, prefix_share=s[0], region_points=s[1])
            paths[s] = p
            log(f"wrote {share_name(s)} in {perf() - t0:.1f} s: {du(p) / 1e6:.1f} MB")
        del cols, inside
        gc.collect()

        def cold(path, **q):
            motes._core.clear_block_cache()
            evict(list(paths.values()))
            touch_memory()
            b0, t0 = storage_bytes(), perf()
            ds = motes.open(path)
            t = ds.query(columns=names, **q)
            n = len(t)
            c = t.counters
            del ds
            return perf() - t0, (storage_bytes() - b0) / 1e6, n, c["read_requests"], c["read_bytes"] / 1e6

        rows_of: Dict[str, List[int]] = {}
        results = {}
        for s in shares:
            ds = motes.open(paths[s])
            f = ds.source(0, "particles").part(0)
            L = len(f.level_starts) - 1
            D = f.detail_level
            regions = len(f.level_positions(D, D + 1)) if D else 1
            R = f.region_depth
            prefix = int(f.level_starts[D]) if D else args.n
            del ds, f
            res = {"bytes": du(paths[s]), "detail_level": D, "region_depth": R, "levels": L, "regions": regions,
                   "prefix_points": prefix}
            for key, q in (("box", dict(box=box)), ("preview_1", dict(fraction=0.01)), ("preview_10", dict(fraction=0.1))):
                runs = [cold(paths[s], **q) for _ in range(args.repeat)]
                rows_of.setdefault(key, []).append(runs[0][2])
                res[key] = {"ms": statistics.median(x[0] for x in runs) * 1e3,
                            "read_mb": statistics.median(x[1] for x in runs), "rows": runs[0][2],
                            "planned_requests": runs[0][3], "planned_mb": runs[0][4]}
            touch_memory()
            prog = []
            for _ in range(args.repeat):
                t0 = perf()
                assert progression(paths[s], names) == args.n
                prog.append(perf() - t0)
            res["progressive_ms"] = statistics.median(prog) * 1e3
            results[s] = res
            log(f"{share_name(s)}: D={D} of {L} levels, R={R}, {regions} regions, prefix {prefix:,} points, "
                f"{res['bytes'] / 1e6:.1f} MB; box {res['box']['ms']:.1f} ms {res['box']['read_mb']:.1f} MB read "
                f"({res['box']['planned_requests']} requests, {res['box']['planned_mb']:.1f} MB planned); "
                f"preview 1% {res['preview_1']['ms']:.1f} ms {res['preview_1']['read_mb']:.1f} MB; "
                f"preview 10% {res['preview_10']['ms']:.1f} ms {res['preview_10']['read_mb']:.1f} MB; "
                f"progressive {res['progressive_ms']:.0f} ms")
        for key, rows in rows_of.items():
            assert len(set(rows)) == 1, (key, rows)

        base = results[shares[0]]
        for s in shares:
            res = results[s]
            for key in ("box", "preview_1", "preview_10"):
                name = f"{key}_{share_name(s)}"
                r.figures[name] = figure(
                    name, f"cold: open + {key.replace('_', ' ')}{'%' if key != 'box' else ''} with every column, "
                    f"prefix_share {s[0]:g}, region_points {s[1]} (D = {res['detail_level']}, R = {res['region_depth']}, "
                    f"{res['regions']} regions), {args.n:,} particles; "
                    f"the box returns {box_rows:,} rows, {returned_mb:.1f} MB",
                    res[key]["ms"], "ms",
                    peers={share_name(shares[0]): peer(base[key]["ms"], "ms", base[key]["ms"] / res[key]["ms"],
                                                       "first share's time / this time", read_mb=base[key]["read_mb"])},
                    ratio=res[key]["read_mb"] / returned_mb if key == "box" else None,
                    ratio_meaning="bytes read / bytes returned" if key == "box" else "",
                    read_mb=res[key]["read_mb"], planned_requests=res[key]["planned_requests"],
                    planned_mb=res[key]["planned_mb"])
            name = f"progressive_{share_name(s)}"
            r.figures[name] = figure(
                name, f"warm: quality 0.1 -> 1.0 in ten slices, every column, one thread, fresh open, "
                f"prefix_share {s[0]:g}, region_points {s[1]}",
                res["progressive_ms"], "ms",
                peers={share_name(shares[0]): peer(base["progressive_ms"], "ms", base["progressive_ms"] / res["progressive_ms"],
                                                   "first share's time / this time")},
                file_mb=res["bytes"] / 1e6)
        r.sections["shares"] = {share_name(s): v for s, v in results.items()}
        r.sections["box"] = {"box": box, "rows": box_rows, "returned_mb": returned_mb}
    return 0


if __name__ == "__main__":
    sys.exit(main())
