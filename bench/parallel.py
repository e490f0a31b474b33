"""Parallel write and read bandwidth under MPI: motes next to its peers, same data, same run.

    python bench/parallel.py [--n 10000000] [--ranks 4 8 16] [--kinds uniform vpic]
                             [--out bench/results/parallel.json]

For each rank count the script starts ``mpirun -n P`` on itself (oversubscribed on
this 2-core machine). Every rank takes the particles of its cell of a rank grid
(a simulation's domain decomposition: counts are very unequal on clustered data)
and, one after the other, each peer writes the step durably (fsync) and reads it
back; times are the slowest rank's, median of --repeat runs, with the CPU time of all ranks
(user + system, all threads) per particle beside them:

* motes, adaptive aggregation (10 MB target files unless --target), the same with
  the aggregators spread evenly over the ranks instead of near their data
  (``local_aggregators=False``), and the AUG baseline: ``motes.write(..., comm=comm)``;
  reads: ``motes.read_partition`` with each rank's box (restart) and as even shares.
* file-per-process raw: each rank writes its columns into its own file (the
  least work any writer can do; the issue's reference rate).
* ADIOS2 BP5 file per process: pip's ``adios2`` is built without MPI, so each rank
  writes its own ``.bp`` (one array per column, every file fsync'd).
* HDF5 single shared file with h5py: h5py from PyPI is serial, so rank 0 gathers
  the columns and writes one dataset per column (how serial-HDF5 codes do it);
  reads: every rank reads its even slice of the shared file.

Reads run on a hot page cache (dropping caches needs privileges this machine lacks).

The main job's write (``--main-job``): step [2/7] of ``examples/main_job.py`` as it runs, i.e.
``mpirun --oversubscribe -n 4``, 10M ``synth.vpic(seed=42, with_id=True)`` particles (9
columns with ``id``) decomposed over the rank grid and scattered by the job's own code, the
grid fields as the ranks' slabs, one ``motes.write(path, local, step=0, comm=comm,
fields=...)`` (adaptive aggregation, fsync'd): its wall time, M particles/s, the report's
phases, and the CPU seconds of all ranks per particle. With ``--before DIR`` (a ``python``
folder holding another build of the package: ``motes/`` with its ``_core``), the rounds
alternate: the other build, then this one, each ``--repeat`` writes in a fresh ``mpirun``;
best and median of each side and the part files' SHA-256 (the same bytes on both sides
when a change must not alter them) -> ``bench/results/parallel_main_job.json``::

    python bench/parallel.py --main-job --before /tmp/before/python --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "results", "parallel.json")
sys.path.insert(0, HERE)


def driver(args):
    import benchlib

    started = time.perf_counter()
    meta = benchlib.start_meta(benchmark="parallel", n=args.n,
                               target="motes write >= 25% of the file-per-process raw write rate (4 ranks, VPIC-like "
                                      "clustered)")
    rows = []
    scratch = tempfile.mkdtemp(prefix="motes-par-", dir=args.scratch)
    try:
        for kind in args.kinds:
            cache = os.path.join(scratch, kind)  # one .npy per column, memory-mapped by the ranks
            import motes

            d = motes.synth.generate(kind, args.n, seed=1)
            os.makedirs(cache, exist_ok=True)
            for name, v in d.items():
                np.save(os.path.join(cache, name + ".npy"), v)
            with open(os.path.join(cache, "columns.json"), "w") as f:
                json.dump(list(d), f)
            del d
            for ranks in args.ranks:
                out = os.path.join(scratch, f"rows-{kind}-{ranks}.json")
                env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
                cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable, os.path.abspath(__file__),
                       "--worker", "--data", cache, "--kind", kind, "--scratch", scratch, "--rows", out,
                       "--repeat", str(args.repeat), "--target", str(args.target)]
                print(" ".join(cmd[:4]), f"... {kind} on {ranks} ranks", flush=True)
                subprocess.run(cmd, env=env, check=True)
                with open(out) as f:
                    rows.extend(json.load(f))
            shutil.rmtree(cache)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    benchlib.finish(meta, {}, args.out, started, rows=rows)


def worker(args):
    from mpi4py import MPI

    import motes

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    with open(os.path.join(args.data, "columns.json")) as f:
        names = json.load(f)
    src = {k: np.load(os.path.join(args.data, k + ".npy"), mmap_mode="r") for k in names}
    dims = MPI.Compute_dims(size, 3)
    lo = [float(src[a].min()) for a in "xyz"]
    hi = [float(src[a].max()) for a in "xyz"]
    # Cell edges in float64; a particle belongs to the cell whose [edge_i, edge_i+1) holds it,
    # so the inclusive box [edge_i, edge_i+1] of its rank always contains it.
    edges = [np.linspace(lo[k], hi[k], dims[k] + 1) for k in range(3)]
    idx = [np.clip(np.searchsorted(edges[k], np.asarray(src[a], dtype=np.float64), side="right") - 1, 0, dims[k] - 1)
           for k, a in enumerate("xyz")]
    owner = (idx[0] * dims[1] + idx[1]) * dims[2] + idx[2]
    mine = np.flatnonzero(owner == rank)
    del idx, owner
    cols = {k: np.ascontiguousarray(src[k][mine]) for k in names}
    local_bytes = sum(v.nbytes for v in cols.values())
    total_bytes = comm.allreduce(local_bytes)
    counts = comm.allgather(len(mine))
    # This rank's grid box (inclusive), for restart reads.
    i, rem = divmod(rank, dims[1] * dims[2])
    j, k = divmod(rem, dims[2])
    cell = (i, j, k)
    box = [float(edges[a][cell[a]]) for a in range(3)] + [float(edges[a][cell[a] + 1]) for a in range(3)]
    base = os.path.join(args.scratch, f"{args.kind}-{size}")

    from benchlib import adios2_write, cpu_seconds

    n_total = sum(counts)

    def timed(fn):
        times, cpus = [], []
        for rep in range(args.repeat):
            comm.Barrier()
            t, c = time.perf_counter(), cpu_seconds()
            info = fn(rep)
            c = cpu_seconds() - c
            comm.Barrier()
            times.append(comm.allreduce(time.perf_counter() - t, op=MPI.MAX))
            cpus.append(comm.allreduce(c, op=MPI.SUM))
        return statistics.median(times), times, info, statistics.median(cpus) / n_total * 1e9

    def fsync_path(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    results = {}

    # --- file per process, raw columns -------------------------------------------------------
    fpp_dir = base + "-fpp"
    if rank == 0:
        os.makedirs(fpp_dir, exist_ok=True)
    comm.Barrier()

    def fpp_write(rep):
        path = os.path.join(fpp_dir, f"rank{rank:05d}.bin")
        with open(path, "wb") as f:
            for v in cols.values():
                f.write(memoryview(v).cast("B"))
            f.flush()
            os.fsync(f.fileno())
        return None

    def fpp_read(rep):
        path = os.path.join(fpp_dir, f"rank{rank:05d}.bin")
        with open(path, "rb") as f:
            out = {k: np.fromfile(f, dtype=v.dtype, count=len(v)) for k, v in cols.items()}
        return sum(len(v) for v in out.values())

    results["fpp_write"] = timed(fpp_write)
    results["fpp_read"] = timed(fpp_read)

    # --- ADIOS2 BP5, file per process --------------------------------------------------------
    def adios2_fpp_write(rep):
        path = os.path.join(fpp_dir, f"rank{rank:05d}.bp")
        shutil.rmtree(path, ignore_errors=True)
        adios2_write(path, cols)
        return None

    results["adios2_fpp_write"] = timed(adios2_fpp_write)

    # --- HDF5 single shared file through rank 0 ------------------------------------------------
    import h5py

    h5_path = base + ".h5"

    def h5_write(rep):
        gathered = {k: comm.gather(v, root=0) for k, v in cols.items()}
        if rank == 0:
            with h5py.File(h5_path, "w") as f:
                g = f.create_group("Step#0")
                for k, parts in gathered.items():
                    g.create_dataset(k, data=np.concatenate(parts))
            fsync_path(h5_path)
        return None

    def h5_read(rep):
        n = sum(counts)
        a, b = n * rank // size, n * (rank + 1) // size
        with h5py.File(h5_path, "r") as f:
            out = {k: f["Step#0"][k][a:b] for k in names}
        return b - a

    results["hdf5_rank0_write"] = timed(h5_write)
    results["hdf5_slices_read"] = timed(h5_read)

    # --- motes ---------------------------------------------------------------------------------
    reports = {}
    for name, method, local in (("adaptive", "adaptive", True), ("spread", "adaptive", False), ("aug", "aug", None)):
        path = base + f"-{name}.motes"

        def motes_write(rep, method=method, path=path, local=local):
            if rank == 0 and os.path.exists(path):
                shutil.rmtree(path)
            comm.Barrier()
            with motes.Writer(path, comm=comm, aggregation=method, target_bytes=args.target, sync=True,
                              local_aggregators=local) as w:
                return w.write_step(0, cols)

        t = timed(motes_write)
        results[f"motes_{name}_write"] = t
        reports[name] = t[2]
    path = base + "-adaptive.motes"
    results["motes_restart_read"] = timed(lambda rep: len(motes.read_partition(path, comm, box=box)))
    results["motes_even_read"] = timed(lambda rep: len(motes.read_partition(path, comm)))
    # The restart read returns exactly this rank's particles.
    got = motes.read_partition(path, comm, box=box)
    assert len(got) >= len(mine), (len(got), len(mine))

    rows = []
    if rank == 0:
        fpp = results["fpp_write"][0]
        for name, (median, times, info, cpu_ns) in results.items():
            row = dict(kind=args.kind, ranks=size, n=sum(counts), data_bytes=total_bytes, peer=name,
                       seconds=median, runs=times, mb_per_s=total_bytes / median / 1e6,
                       cpu_ns_per_particle=cpu_ns, rank_count_max_over_mean=max(counts) / (sum(counts) / size))
            if name.endswith("_write"):
                row["ratio_to_fpp_write"] = fpp / median
            if name.endswith("_read"):
                row["ratio_to_fpp_read"] = results["fpp_read"][0] / median
            if name.startswith("motes_") and name.endswith("_write"):
                rep = reports[name.split("_")[1]]
                sp = rep["species"][0]
                row.update(parts=sp["parts"], balance=sp["balance"], moved_fraction=sp["moved"] / sp["count"],
                           phases={k: rep[k] for k in ("plan_seconds", "exchange_seconds", "write_seconds",
                                                        "commit_seconds", "total_seconds")})
            rows.append(row)
            print(f"  {args.kind:<9} P={size:<3} {name:<20} {median:7.3f} s  {row['mb_per_s']:8.1f} MB/s"
                  f"  {cpu_ns:6.0f} ns CPU/particle"
                  + (f"  moved {row['moved_fraction']:.2f}" if "moved_fraction" in row else "")
                  + (f"  x{row['ratio_to_fpp_write']:.2f} of FPP" if "ratio_to_fpp_write" in row else "")
                  + (f"  x{row['ratio_to_fpp_read']:.2f} of FPP" if "ratio_to_fpp_read" in row else ""), flush=True)
        with open(args.rows, "w") as f:
            json.dump(rows, f)
    comm.Barrier()
    if rank == 0:
        for p in (fpp_dir, base + "-adaptive.motes", base + "-spread.motes", base + "-aug.motes"):
            shutil.rmtree(p, ignore_errors=True)
        if os.path.exists(h5_path):
            os.remove(h5_path)


# --- the main job's write ---------------------------------------------------------------------

MAIN_JOB_SEED = 42


def cpu_pressure() -> float:
    """The share of the last 10 s in which some runnable task waited for a core (Linux PSI):
    the other work on the machine during a run."""
    try:
        with open("/proc/pressure/cpu") as f:
            return float(f.readline().split()[1].split("=")[1])
    except OSError:
        return float("nan")


def main_job_driver(args):
    import benchlib

    started = time.perf_counter()
    meta = benchlib.start_meta(benchmark="parallel_main_job", n=args.n, ranks=4, repeat=args.repeat,
                               rounds=args.rounds, before=args.before,
                               target="main job step [2/7], 4 ranks: >= 3.0 M particles/s (issue 43, 'Write 2')")
    scratch = tempfile.mkdtemp(prefix="motes-main-job-", dir=args.scratch)
    sides = ([("before", args.before)] if args.before else []) + [("after", None)]
    rows = []
    try:
        import motes

        cache = os.path.join(scratch, "data")
        os.makedirs(cache)
        d = motes.synth.vpic(args.n, seed=MAIN_JOB_SEED, with_id=True)
        for name, v in d.items():
            np.save(os.path.join(cache, name + ".npy"), v)
        with open(os.path.join(cache, "columns.json"), "w") as f:
            json.dump(list(d), f)
        del d
        for rnd in range(args.rounds):
            for side, pythonpath in sides:
                benchlib.touch_memory()
                out = os.path.join(scratch, f"rows-{side}-{rnd}.json")
                env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
                if pythonpath:
                    env["PYTHONPATH"] = os.pathsep.join([pythonpath] + [p for p in [env.get("PYTHONPATH")] if p])
                cmd = ["mpirun", "--oversubscribe", "-n", "4", sys.executable, os.path.abspath(__file__),
                       "--main-job-worker", "--data", cache, "--scratch", scratch, "--rows", out,
                       "--repeat", str(args.repeat)]
                subprocess.run(cmd, env=env, check=True)
                with open(out) as f:
                    for row in json.load(f):
                        rows.append(dict(row, side=side, round=rnd))
                        print(f"  round {rnd} {side:<6} {row['seconds']:6.2f} s  {row['m_particles_per_s']:5.2f} M/s  "
                              f"plan {row['plan_seconds']:.2f}  exchange {row['exchange_seconds']:.2f}  write "
                              f"{row['write_seconds']:.2f}  CPU {row['cpu_ns_per_particle']:4.0f} ns/particle  "
                              f"(CPU pressure {row['cpu_pressure_before']:.0f}%)", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = {}
    for side, _ in sides:
        mine = [r for r in rows if r["side"] == side]
        secs = [r["seconds"] for r in mine]
        cpus = [r["cpu_ns_per_particle"] for r in mine]
        summary[side] = dict(best_seconds=min(secs), median_seconds=statistics.median(secs),
                             best_m_particles_per_s=args.n / min(secs) / 1e6,
                             median_m_particles_per_s=args.n / statistics.median(secs) / 1e6,
                             best_cpu_ns_per_particle=min(cpus), median_cpu_ns_per_particle=statistics.median(cpus),
                             part_sha256=sorted({tuple(sorted(r["sha256"].items())) for r in mine}))
    if args.before:
        summary["same_part_files"] = summary["before"]["part_sha256"] == summary["after"]["part_sha256"]
        summary["best_speedup"] = summary["before"]["best_seconds"] / summary["after"]["best_seconds"]
        summary["median_speedup"] = summary["before"]["median_seconds"] / summary["after"]["median_seconds"]
    for side in summary:
        if isinstance(summary[side], dict):
            summary[side]["part_sha256"] = [dict(s) for s in summary[side]["part_sha256"]]
    print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk != "part_sha256"} if isinstance(v, dict) else v)
                      for k, v in summary.items()}, indent=1))
    benchlib.finish(meta, {}, args.out, started, rows=rows, summary_by_side=summary)


def main_job_worker(args):
    import hashlib

    from mpi4py import MPI

    import motes

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
    from main_job import decompose, field_blocks, scatter
    from benchlib import cpu_seconds

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    data = order = counts = edges = names = None
    if rank == 0:
        with open(os.path.join(args.data, "columns.json")) as f:
            data = {k: np.load(os.path.join(args.data, k + ".npy")) for k in json.load(f)}
        owner, edges = decompose(data, size)
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=size)
        names = [(k, v.dtype.str) for k, v in data.items()]
    local, counts, edges = scatter(comm, data, order, counts, edges, names)
    del data, order
    _, blocks = field_blocks(rank, size)
    path = os.path.join(args.scratch, "main-job.motes")
    rows = []
    for rep in range(args.repeat):
        if rank == 0:
            shutil.rmtree(path, ignore_errors=True)
        pressure = cpu_pressure()
        comm.Barrier()
        t, c = time.perf_counter(), cpu_seconds()
        report = motes.write(path, local, step=0, time=0.0, comm=comm, fields=blocks,
                             attributes={"source": "motes.synth.vpic", "seed": MAIN_JOB_SEED, "ranks": size})
        seconds, c = time.perf_counter() - t, cpu_seconds() - c
        cpu = comm.allreduce(c)
        seconds = comm.allreduce(seconds, op=MPI.MAX)
        if rank == 0:
            n = report["species"][0]["count"]
            sha = {}
            for root, _, files in os.walk(os.path.join(path, "steps")):
                for name in files:
                    with open(os.path.join(root, name), "rb") as f:
                        sha[os.path.relpath(os.path.join(root, name), path)] = hashlib.sha256(f.read()).hexdigest()
            rows.append(dict(rep=rep, n=n, ranks=size, seconds=seconds, m_particles_per_s=n / seconds / 1e6,
                             cpu_seconds_all_ranks=cpu, cpu_ns_per_particle=cpu / n * 1e9,
                             parts=report["species"][0]["parts"], file_bytes=report["file_bytes"],
                             cpu_pressure_before=pressure, loadavg=os.getloadavg()[0], sha256=sha,
                             **{k: report[k] for k in ("plan_seconds", "exchange_seconds", "write_seconds",
                                                       "commit_seconds", "total_seconds")}))
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)
        with open(args.rows, "w") as f:
            json.dump(rows, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--ranks", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--kinds", nargs="+", default=["uniform", "vpic"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", type=int, default=10_000_000, help="motes target bytes per file")
    ap.add_argument("--scratch", default=os.path.join(HERE, ".tmp-parallel"))
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--main-job", action="store_true", help="the main job's write (step [2/7]), see above")
    ap.add_argument("--before", help="--main-job: a python folder with another build of motes, run alternately")
    ap.add_argument("--rounds", type=int, default=3, help="--main-job: rounds (each side once per round)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--main-job-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--kind", help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.main_job and args.out == DEFAULT_OUT:
        args.out = os.path.join(HERE, "results", "parallel_main_job.json")
    if args.worker:
        worker(args)
    elif args.main_job_worker:
        main_job_worker(args)
    elif args.main_job:
        os.makedirs(args.scratch, exist_ok=True)
        main_job_driver(args)
    else:
        os.makedirs(args.scratch, exist_ok=True)
        driver(args)


if __name__ == "__main__":
    main()
