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
The figure is the gap whose times, each over that query's best time at any gap, have the
least geometric mean (the whole-column gather, ten times slower than the others, does not
decide alone); every gap runs in turn within each round. It measures, and asserts only that
every gap answers the same rows.
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
        counts = {}
        # Every gap in turn within each round (the machine's speed drifts over minutes: a gap's
        # runs all in one minute would measure the minute).
        runs = {g: {k: {"times": [], "read": 0, "planned": (0, 0)} for k in queries} for g in GAPS_KB}
        for _ in range(args.repeat):
            for gap in GAPS_KB:
                os.environ["MOTES_READ_GAP_KB"] = str(gap)
                for name, (path, q) in queries.items():
                    motes._core.clear_block_cache()
                    evict([covered, plain])
                    b0, t0 = storage_bytes(), perf()
                    tab = motes.open(path).query(**q)
                    cell = runs[gap][name]
                    cell["times"].append(perf() - t0)
                    cell["read"] = storage_bytes() - b0
                    n = len(tab)
                    assert counts.setdefault(name, n) == n, (name, gap, n)
                    cell["planned"] = (tab.counters["read_requests"], tab.counters["read_bytes"])
                    del tab
        os.environ.pop("MOTES_READ_GAP_KB", None)
        rows = []
        for gap in GAPS_KB:
            row = {"gap_kb": gap}
            for name in queries:
                cell = runs[gap][name]
                row[name] = {"ms": 1e3 * statistics.median(cell["times"]), "read_mb": cell["read"] / 1e6,
                             "requests": cell["planned"][0], "planned_mb": cell["planned"][1] / 1e6,
                             "runs_s": cell["times"]}
            rows.append(row)
        # Each query's time at a gap over its best time at any gap; a gap's score is their geometric
        # mean, so that the slowest query (a whole-column gather) does not decide alone.
        best_ms = {k: min(w[k]["ms"] for w in rows) for k in queries}
        for row in rows:
            row["score"] = float(np.exp(np.mean([np.log(row[k]["ms"] / best_ms[k]) for k in queries])))
            row["total_ms"] = sum(row[k]["ms"] for k in queries)
            log(f"gap {row['gap_kb']:5d} KiB: score {row['score']:.3f}; " + ", ".join(
                f"{k} {row[k]['ms']:.1f} ms ({row[k]['requests']} req, {row[k]['planned_mb']:.1f} MB planned, "
                f"{row[k]['read_mb']:.1f} MB read)" for k in queries))
        best = min(rows, key=lambda w: w["score"])
        figs["read_gap"] = figure(
            "read_gap", "the gap with the least geometric mean, over a 1 % box and the ux tail gathered and covered, "
            "of each query's cold time over its best at any gap "
            f"({args.n:,} particles, every column)", best["gap_kb"], "KiB",
            peers={f"gap {w['gap_kb']} KiB": benchlib.peer(w["score"], "x", w["score"] / best["score"],
                                                           "score / the best's", total_ms=w["total_ms"],
                                                           **{f"{k}_ms": w[k]["ms"] for k in queries})
                   for w in rows},
            rows=counts)
        r.sections["sweep"] = rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
