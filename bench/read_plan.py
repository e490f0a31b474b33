#!/usr/bin/env python3
"""The read plan's gap, measured: how far apart two byte ranges may lie for a plan to read
through the gap rather than ask for both apart (io/byte_source.hpp, kReadGap; the one value a
query's plan, a selection's gathers and a bulk read use). Cold queries at each gap, same
files, same run.

Usage (from the repository root)::

    python bench/read_plan.py                       # 16M particles -> bench/results/read_plan.json
    python bench/read_plan.py --n 4000000 --out /tmp/read_plan.json

Data: ``synth.vpic`` written by motes (defaults). Queries, every column returned, page cache
evicted and decoded blocks dropped before each run: a 1 % box (257,000 rows at 16M: runs
in every level of the subtrees it crosses, about 20 % of each column's blocks), the 0.1 %
``ux`` tail without its cover (the file written with ``covering=False``: 16,000 rows
gathered over every block) and with it. For each gap (``MOTES_READ_GAP_KB``): median time,
bytes read from storage (/proc/self/io), and the requests and bytes the plans asked for.
The figure is the gap with the least total time over the three queries; it measures, and
asserts only that every gap answers the same rows.
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
from benchlib import figure, log, perf  # noqa: E402
from cold import evict, one_percent_box, storage_bytes  # noqa: E402

GAPS_KB = [0, 4, 16, 64, 256, 1024, 4096]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "read_plan.json"))
    args = ap.parse_args()
    import motes
    import motes.synth as synth

    with benchlib.run(args.out, ".tmp-read-plan-", repeat=args.repeat, n=args.n) as r:
        tmp, figs = r.scratch, r.figures
        cols = synth.vpic(args.n, seed=3)
        box = one_percent_box(cols)
        t = float(np.quantile(cols["ux"], 0.999))
        covered, plain = os.path.join(tmp, "covered.motes"), os.path.join(tmp, "plain.motes")
        motes.write(covered, cols, sync=False)
        motes.write(plain, cols, sync=False, covering=False)
        del cols
        queries = {"box": (covered, {"box": box}),
                   "ux_tail_gathered": (plain, {"where": f"ux > {t!r}"}),
                   "ux_tail_covered": (covered, {"where": f"ux > {t!r}"})}
        rows = []
        counts = {}
        for gap in GAPS_KB:
            os.environ["MOTES_READ_GAP_KB"] = str(gap)
            row = {"gap_kb": gap}
            for name, (path, q) in queries.items():
                times, read = [], 0
                for _ in range(args.repeat):
                    motes._core.clear_block_cache()
                    evict([covered, plain])
                    b0, t0 = storage_bytes(), perf()
                    tab = motes.open(path).query(**q)
                    times.append(perf() - t0)
                    read = storage_bytes() - b0
                    n = len(tab)
                    assert counts.setdefault(name, n) == n, (name, gap, n)
                    planned = (tab.counters["read_requests"], tab.counters["read_bytes"])
                    del tab
                row[name] = {"ms": 1e3 * statistics.median(times), "read_mb": read / 1e6, "requests": planned[0],
                             "planned_mb": planned[1] / 1e6, "runs_s": times}
            row["total_ms"] = sum(row[k]["ms"] for k in queries)
            rows.append(row)
            log(f"gap {gap:5d} KiB: " + ", ".join(f"{k} {row[k]['ms']:.1f} ms ({row[k]['requests']} req, "
                                                  f"{row[k]['planned_mb']:.1f} MB planned, {row[k]['read_mb']:.1f} MB read)"
                                                  for k in queries))
        os.environ.pop("MOTES_READ_GAP_KB", None)
        best = min(rows, key=lambda w: w["total_ms"])
        figs["read_gap"] = figure(
            "read_gap", "the gap with the least total cold time over a 1 % box and the ux tail gathered and covered "
            f"({args.n:,} particles, every column)", best["gap_kb"], "KiB",
            peers={f"gap {w['gap_kb']} KiB": benchlib.peer(w["total_ms"], "ms", w["total_ms"] / best["total_ms"],
                                                           "total time / the best's") for w in rows},
            rows=counts)
        r.sections["sweep"] = rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
