"""Aggregation balance at scale, by simulation: the adaptive plan vs the AUG baseline.

    python bench/aggregation.py [--n 10000000] [--out bench/results/aggregation.json]

Virtual ranks form a regular grid over the particles' bounds (64 to 100,000 ranks);
each rank summarises its particles as the MPI writer's ranks do (count, bounds, an
adaptive octree histogram capped at a tenth of a file), and one plan is built from
all summaries. Reported per distribution, rank count, target size and method: files,
file-size sd/mean and max/mean, the share of particles that cross the network to
their aggregator (moved_fraction; RANKS_PER_NODE consecutive ranks share a node) beside
the least any placement could move (least_moved_fraction: each file on its largest
holder, no caps; with fewer files than ranks most particles must move), and
the time to build the plan (one core). "adaptive" places each file on the rank holding
most of its particles (within a cap per rank and per node); "adaptive-spread" is the
same plan with aggregators spread evenly over the ranks, as before; "aug" the baseline.
"""

import argparse
import os
import time

import numpy as np

import benchlib
from motes import _core, synth

# 8 ranks hold 4 files' worth each at 10 MB (the regime of large runs, where a rank holds more
# than a file); then 64, 1,536, 24,576, 100,000 ranks, fewer files than ranks.
GRIDS = [(2, 2, 2), (4, 4, 4), (16, 12, 8), (32, 32, 24), (50, 50, 40)]
TARGETS = [10_000_000, 64 << 20]
BYTES_PER_PARTICLE = 32  # 8 float32 columns
RANKS_PER_NODE = 32
METHODS = (("adaptive", "adaptive", True), ("adaptive-spread", "adaptive", False), ("aug", "aug", None))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000, help="particles (default 10M)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "aggregation.json"))
    args = ap.parse_args()
    started = time.perf_counter()
    meta = benchlib.start_meta(benchmark="aggregation", n=args.n, seed=args.seed, bytes_per_particle=BYTES_PER_PARTICLE,
                               ranks_per_node=RANKS_PER_NODE)

    rows = []
    for kind in ("clustered", "vpic", "jets", "column"):
        t = time.perf_counter()
        data = synth.generate(kind, args.n, seed=args.seed)
        print(f"{kind}: {args.n:,} particles generated in {time.perf_counter() - t:.1f} s")
        for grid in GRIDS:
            for target in TARGETS:
                for method, core_method, local in METHODS:
                    r = _core.simulate_aggregation(data["x"], data["y"], data["z"], list(grid), core_method,
                                                   BYTES_PER_PARTICLE, target, local=local,
                                                   ranks_per_node=RANKS_PER_NODE)
                    row = dict(distribution=kind, ranks=int(np.prod(grid)), grid=list(grid), target_bytes=target,
                               method=method, **{k: r[k] for k in ("files", "atoms", "sd_over_mean", "max_over_mean",
                                                                  "mean_bytes", "max_bytes", "moved_fraction",
                                                                  "least_moved_fraction",
                                                                  "plan_seconds", "summarize_seconds")})
                    rows.append(row)
                    print(f"  {row['ranks']:>7,} ranks  target {target / 1e6:6.1f} MB  {method:<15}  files {row['files']:>6,}"
                          f"  sd/mean {row['sd_over_mean']:6.3f}  max/mean {row['max_over_mean']:7.2f}"
                          f"  moved {row['moved_fraction']:5.2f} (least {row['least_moved_fraction']:4.2f})"
                          f"  plan {row['plan_seconds'] * 1e3:8.2f} ms")
    benchlib.finish(meta, {}, args.out, started, rows=rows,
                    targets=dict(sd_over_mean="<= 0.25 (adaptive)", max_over_mean="<= 1.5 (adaptive)",
                                 plan_seconds_100k_ranks="<= 0.5 s"))


if __name__ == "__main__":
    main()
