#!/usr/bin/env python3
"""Writes the format-1 golden fixtures in tests/golden/format1/ (run once, with motes 0.1.0).

The fixtures are files and datasets written by the first release (particle format 1.0,
manifest 1.1): a serial dataset of two steps and two species, a dataset written on three
MPI ranks (part files and a step index), and the Appendix B file of docs/format.md.
They are kept forever: every later motes must read them with identical answers
(tests/python/test_golden.py). ``answers.npz`` holds the arrays that
were written (``input*``) and what the first release read back (values in file order, query
results): the reads listed in ``queries.json``, done by tests/golden/readback.py.

    mpirun -n 3 python tests/golden/make_format1.py      # 3 ranks: the parallel dataset too
"""
import os
import shutil
import sys

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format1")


def inputs(rank=None):
    rng = np.random.default_rng(2024 if rank is None else 100 + rank)
    n = 3000 if rank is None else 1000 + 250 * rank
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    z = (rng.random(n) * 0.5).astype(np.float32)
    energy = (x * 2 + rng.normal(0, 0.1, n)).astype(np.float64)
    energy[::97] = np.nan
    return {
        "x": x, "y": y, "z": z,
        "ux": rng.normal(0, 1, n).astype(np.float32),
        "energy": energy,
        "id": np.arange(n, dtype=np.uint64) + (0 if rank is None else 10_000 * (rank + 1)),
        "q": rng.integers(-5, 6, n).astype(np.int16),
        "tag": rng.integers(0, 3, n).astype(np.uint8),
    }


def ions():
    rng = np.random.default_rng(7)
    n = 700
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "ux": rng.random(n).astype(np.float32)}


def main():
    try:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    except ImportError:
        comm = None
    rank = comm.Get_rank() if comm else 0
    if rank == 0:
        readback.clear(HERE)
        # Serial dataset: two steps, two species, a forced quantile index, units, attributes.
        serial = os.path.join(HERE, "serial")
        e = inputs()
        with motes.Writer(serial, leaf_size=64, lod_count=4, treelet_size=1024) as w:
            w.write_step(0, {"electrons": e, "ions": ions()}, time=0.5, attributes={"code": "golden"},
                         index={"ux": "quantile"}, units={"ux": "m/s"})
            w.write_step(3, {"electrons": {k: v[::2].copy() for k, v in e.items()}}, time=1.5)
        # Appendix B: three empty f32 columns, default parameters.
        motes.write(os.path.join(HERE, "appendix_b"), {a: np.zeros(0, np.float32) for a in "xyz"})
        shutil.copy(os.path.join(HERE, "appendix_b", "steps", "000000", "particles.mpf"), os.path.join(HERE, "appendix_b.mpf"))
        shutil.rmtree(os.path.join(HERE, "appendix_b"))
    if comm and comm.Get_size() > 1:
        comm.Barrier()
        motes.write(os.path.join(HERE, "parallel"), inputs(rank), species="electrons", comm=comm,
                    leaf_size=64, lod_count=4, target_bytes=40_000)
        comm.Barrier()
    if rank == 0:
        out = {}
        for k, v in inputs().items():
            out[f"input.{k}"] = v
        for k, v in ions().items():
            out[f"input_ions.{k}"] = v
        if comm and comm.Get_size() > 1:
            for r in range(comm.Get_size()):
                for k, v in inputs(r).items():
                    out[f"input_rank{r}.{k}"] = v
        out.update(readback.answers_of(HERE))  # the reads of queries.json (the parallel dataset's: 3 ranks)
        np.savez_compressed(os.path.join(HERE, "answers.npz"), **out)
        print("wrote", HERE, "with motes", motes.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
