#!/usr/bin/env python3
"""Grid fields written in parallel: every MPI rank holds a block of one global float32 grid
(slabs of a rank grid, ghost zones of 1), and the field is written, fsync'd, by

* motes: the blocks routed by HZ index to aggregators that write the field's part files
  (``Writer(comm=).write_step(fields={"rho": FieldBlock(...)})``), lossless (the default: every
  block coded) and with ``compression="none"`` (the samples stored as they are, like the peers);
* HDF5 through rank 0: the blocks gathered to rank 0 (mpi4py), which writes one h5py dataset;
* raw file per process: each rank writes its block's bytes to a file of its own (the upper
  bound of what the disk takes; not a usable layout).

Usage (from the repository root)::

    python bench/fields_parallel.py                    # 384^3, 2/4/8 ranks -> bench/results/fields_parallel.json
    python bench/fields_parallel.py --n 256 --ranks 2 4

Ranks oversubscribe this 2-core machine (mpirun --oversubscribe); figures are MB/s of grid
samples (wall time of the slowest rank, between barriers, medians of ``--repeat``), and the
largest rank's peak RSS in the motes write. Nothing is asserted; the JSON records everything.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def worker(args) -> None:
    import resource

    import numpy as np
    from mpi4py import MPI

    import motes
    from motes.field import FieldBlock

    comm = MPI.COMM_WORLD
    n = args.n
    split = MPI.Compute_dims(comm.size, 3)
    coords = np.unravel_index(comm.rank, split)
    lo, hi = [], []
    for k in range(3):
        edges = np.linspace(0, n, split[k] + 1).astype(int)
        lo.append(int(edges[coords[k]]))
        hi.append(int(edges[coords[k] + 1]))
    g = [(min(1, lo[k]), min(1, n - hi[k])) for k in range(3)]
    shape = tuple(hi[k] - lo[k] + g[k][0] + g[k][1] for k in (2, 1, 0))
    z, y, x = np.meshgrid(*[np.arange(lo[k] - g[k][0], hi[k] + g[k][1], dtype=np.float32) for k in (2, 1, 0)],
                          indexing="ij")
    block = (np.sin(x * 0.05) + np.cos(y * 0.03) * z * 1e-3).astype(np.float32)
    assert block.shape == shape
    interior = block[g[2][0]:shape[0] - g[2][1], g[1][0]:shape[1] - g[1][1], g[0][0]:shape[2] - g[0][1]]
    nbytes = n ** 3 * 4
    out = {}

    def timed(fn, label):
        runs = []
        for r in range(args.repeat):
            comm.Barrier()
            t0 = time.perf_counter()
            fn(r)
            comm.Barrier()
            runs.append(time.perf_counter() - t0)
        out[label] = {"median_s": float(np.median(runs)), "runs_s": runs, "mb_s": nbytes / float(np.median(runs)) / 1e6}

    def motes_write(r, compression="lossless"):
        path = os.path.join(args.dir, f"m{r}.motes")
        w = motes.Writer(path, comm=comm, sync=True, compression=compression)
        rep = w.write_step(0, None, fields={"rho": FieldBlock(block, offset=lo, dims=(n, n, n), ghosts=g)})
        out["parts"] = rep["fields"][0]["parts"]
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(path)

    def h5_rank0(r):
        import h5py

        parts = comm.gather((lo, np.ascontiguousarray(interior)), root=0)
        if comm.rank == 0:
            whole = np.empty((n, n, n), np.float32)
            for (l, a) in parts:
                whole[l[2]:l[2] + a.shape[0], l[1]:l[1] + a.shape[1], l[0]:l[0] + a.shape[2]] = a
            path = os.path.join(args.dir, f"h{r}.h5")
            with h5py.File(path, "w") as f:
                f.create_dataset("rho", data=whole)
                f.flush()
                os.fsync(f.id.get_vfd_handle())
            os.remove(path)

    def raw_per_process(r):
        path = os.path.join(args.dir, f"raw{r}.{comm.rank}")
        with open(path, "wb") as f:
            f.write(np.ascontiguousarray(interior).tobytes())
            f.flush()
            os.fsync(f.fileno())
        comm.Barrier()
        os.remove(path)

    timed(motes_write, "motes aggregated")
    rss = comm.gather(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, root=0)
    timed(lambda r: motes_write(r, "none"), "motes aggregated, compression='none'")
    timed(h5_rank0, "HDF5 through rank 0")
    timed(raw_per_process, "raw file per process")
    if comm.rank == 0:
        out["max_rss_bytes_after_motes"] = max(rss)
        with open(args.result, "w") as f:
            json.dump(out, f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=384)
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "fields_parallel.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    import benchlib
    from benchlib import figure, log, peer

    started = time.perf_counter()
    meta = benchlib.start_meta(n=args.n, repeat=args.repeat)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    figs = {}
    for ranks in args.ranks:
        tmp = tempfile.mkdtemp(prefix=".tmp-fpar-", dir=HERE)
        result = os.path.join(tmp, "result.json")
        try:
            subprocess.run(["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable, os.path.abspath(__file__),
                            "--worker", "--n", str(args.n), "--repeat", str(args.repeat), "--dir", tmp,
                            "--result", result], env=env, check=True)
            with open(result) as f:
                r = json.load(f)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        m = r["motes aggregated"]["mb_s"]
        log(f"{ranks} ranks: motes {m:.0f} MB/s ({r['parts']} parts), HDF5 via rank 0 "
            f"{r['HDF5 through rank 0']['mb_s']:.0f} MB/s, raw per process {r['raw file per process']['mb_s']:.0f} MB/s")
        figs[f"write_{ranks}_ranks"] = figure(
            f"write_{ranks}_ranks", f"{args.n}^3 float32 field from {ranks} ranks' blocks, fsync'd, MB/s of samples", m,
            "MB/s", timing=r["motes aggregated"],
            peers={k: peer(r[k]["mb_s"], "MB/s", m / r[k]["mb_s"], "motes / peer", timing_s=r[k])
                   for k in ("motes aggregated, compression='none'", "HDF5 through rank 0", "raw file per process")},
            parts=r["parts"], max_rss_bytes=r["max_rss_bytes_after_motes"])
    benchlib.finish(meta, figs, args.out, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
