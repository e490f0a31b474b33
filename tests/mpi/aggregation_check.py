"""Where the parallel writer's part files are written, run under mpirun by tests/python/test_mpi.py.

    mpirun -n P python tests/mpi/aggregation_check.py DIR

Rank r holds the particles of slab (P - 1 - r) of the box [0, P) x [0, 1) x [0, 1)
(unit slabs along x, the box's longest axis, where the plan cuts; ranks in the reverse
of space order), the same number on every rank. With files of one rank's
data each, or a third of it, every file's particles are on one rank: with local
aggregators no particle moves; spread evenly over the ranks, most do. Both read back
exactly. A failed check raises on rank 0, which aborts the job.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from mpi4py import MPI

import motes

PER_RANK = 30_000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    size, rank = comm.size, comm.rank
    rng = np.random.default_rng(5 + rank)
    slab = size - 1 - rank
    mine = {"x": (slab + rng.random(PER_RANK)).astype(np.float32),
            "y": rng.random(PER_RANK, dtype=np.float32), "z": rng.random(PER_RANK, dtype=np.float32),
            "ux": rng.normal(size=PER_RANK).astype(np.float32),
            "id": np.arange(rank * PER_RANK, (rank + 1) * PER_RANK, dtype=np.uint64)}
    mine["x"] = np.minimum(mine["x"], np.nextafter(np.float32(slab + 1), np.float32(0)))
    rank_bytes = PER_RANK * sum(v.itemsize for v in mine.values())
    everything = comm.gather(mine, root=0)
    for local, per_rank in ((True, 1), (True, 3), (False, 1)):
        path = os.path.join(args.dir, f"local{int(local)}-{per_rank}.motes")
        with motes.Writer(path, comm=comm, target_bytes=rank_bytes // per_rank, sync=False,
                          local_aggregators=local) as w:
            sp = w.write_step(0, mine)["species"][0]
        if rank != 0:
            continue
        assert sp["parts"] == size * per_rank, sp
        if local:
            assert sp["moved"] == 0, sp
        elif size > 2:
            assert sp["moved"] >= PER_RANK * (size - 2), sp  # the slabs reversed: all but the middle ones move
        want = {k: np.concatenate([e[k] for e in everything]) for k in mine}
        got = motes.open(path).query()
        order = np.argsort(got["id"])
        for k, v in want.items():
            assert np.array_equal(np.asarray(got[k])[order], v), (path, k)
        print(f"{path}: {sp['parts']} parts, {sp['moved']} particles moved", flush=True)
    comm.Barrier()
    if rank == 0:
        print("aggregation checks passed", flush=True)


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        import traceback

        traceback.print_exc()
        MPI.COMM_WORLD.Abort(1)
