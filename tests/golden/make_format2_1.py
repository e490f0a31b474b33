#!/usr/bin/env python3
"""Writes the golden fixtures of particle format 2.1, field file 1.1 and manifest 1.4 in
tests/golden/format2_1/ (run once per format minor version, never to "fix" a failing test).

* ``particles/``: one step whose int64 ``id`` column (negative ids too) has an id index
  (particle format 2.1, docs/format.md §4.15), two blocks of 4096 keys.
* ``fields/``: a field written in two parts by two MPI ranks (field file 1.1 with
  ``field-parts``, manifest 1.4 ``parts``, §14.7) and a field stored within a tolerance
  (ZFP blocks, ``zfp-blocks``, §14.8).

``answers.json`` holds the SHA-256 of what this version read back (the reads of
``queries.json``: tracks, field reads at every level) so the fixtures stay small and pin every bit.

    mpirun -n 2 python tests/golden/make_format2_1.py     # (as root: --allow-run-as-root --oversubscribe)
"""
import os

import numpy as np

import motes
import readback
from motes.field import Field, FieldBlock

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_1")


def particles():
    rng = np.random.default_rng(21)
    n = 6000
    return {"x": rng.random(n, dtype=np.float32) * 8, "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "energy": rng.standard_normal(n),
            "id": (rng.permutation(n) - 1000).astype(np.int64)}


def grid():
    z, y, x = np.meshgrid(np.arange(12), np.arange(20), np.arange(70), indexing="ij")
    return (np.sin(0.2 * x) + 0.1 * y - 0.05 * z).astype(np.float32)


def main():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    assert comm.size == 2, "run with mpirun -n 2"
    if comm.rank == 0:
        readback.clear(HERE)
    comm.Barrier()
    a = grid()
    half = a.shape[2] // 2
    lo = (0, 0, 0) if comm.rank == 0 else (half, 0, 0)
    block = a[:, :, :half] if comm.rank == 0 else a[:, :, half:]
    w = motes.Writer(os.path.join(HERE, "fields"), comm=comm, target_bytes=a.nbytes // 2, sync=False)
    w.write_step(0, None, fields={"rho": FieldBlock(block, offset=lo, dims=a.shape[::-1], spacing=(0.5, 1, 2)),
                                  "rhoz": Field(a, tolerance=1e-3) if comm.rank == 0 else None})
    comm.Barrier()
    if comm.rank == 0:
        motes.write(os.path.join(HERE, "particles"), particles(), sync=False)
        ds = motes.open(os.path.join(HERE, "fields"))
        assert ds.step(0).fields["rho"]["parts"] == 2 and ds.field("rhoz").tolerance == 1e-3
        readback.write_answers(HERE)  # the reads of queries.json
        for d in ("fields", "particles"):  # the writers' lock files are not part of the fixtures
            os.remove(os.path.join(HERE, d, ".lock"))


if __name__ == "__main__":
    main()
