#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.7 in tests/golden/format2_7/ (run once per
format minor version, never to "fix" a failing test).

One step of 8,500 clustered particles (three blocks of the id index, the last one short) whose
id column is stored only as its id index (docs/format.md §4.15, feature ``ids-by-index``):
int64 ids, a permutation of 10,000 .. 18,499 with a run of consecutive ids in spatial order (a
linear unit of zero-bit keys) and the rest scattered. ``answers.json`` holds the SHA-256 of
what the reads of ``queries.json`` give back (everything in file order, progressive prefixes,
a box, filters on the ids and tracking); tests/python/test_golden.py pins the version, the
feature and that the file has no data section for its id column.

    python tests/golden/make_format2_7.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_7")


def particles():
    rng = np.random.default_rng(27)
    n = 8500
    centers = rng.random((4, 3))
    pos = (centers[rng.integers(0, 4, n)] + rng.normal(scale=0.07, size=(n, 3))).astype(np.float32)
    ids = 10_000 + rng.permutation(n).astype(np.int64)
    # the particles nearest the first centre get consecutive ids in x order: runs of ids in the file's order
    near = np.argsort(np.linalg.norm(pos - centers[0], axis=1))[:2000]
    near = near[np.argsort(pos[near, 0])]
    ids[near] = np.sort(ids[near])
    return {"x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2], "ux": rng.standard_normal(n).astype(np.float32),
            "e": rng.exponential(size=n), "id": ids}


def main():
    readback.clear(HERE)
    motes.write(os.path.join(HERE, "particles"), particles(), sync=False)
    os.remove(os.path.join(HERE, "particles", ".lock"))  # the writer's lock file is not part of the fixture
    readback.write_answers(HERE)  # the reads of queries.json


if __name__ == "__main__":
    main()
