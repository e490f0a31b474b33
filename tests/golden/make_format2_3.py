#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.3 in tests/golden/format2_3/ (run once per
format minor version, never to "fix" a failing test).

One step of 5,000 particles (the columns of format 2.2's fixture, drawn afresh) whose tail
indexes are covered (docs/format.md §4.17): beside each tail (about 25 entries per side), the
outermost 0.2% of the values on each side (the default: 10 entries) carry every other column.
``answers.json`` holds the SHA-256 of the rows that the queries of ``queries.json``
read back (thresholds inside each cover, at its edge and past it, and their counts); the
section kinds and the cover of each tail are pinned by tests/python/test_golden.py.

    python tests/golden/make_format2_3.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_3")


def particles():
    rng = np.random.default_rng(23)
    n = 5000
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "ux": rng.standard_normal(n).astype(np.float32),
            "e": rng.exponential(size=n), "k": rng.integers(-5, 6, n).astype(np.int32),
            "u8": rng.integers(0, 256, n).astype(np.uint8), "id": rng.permutation(n).astype(np.int64)}


def main():
    readback.clear(HERE)
    motes.write(os.path.join(HERE, "particles"), particles(), sync=False)
    os.remove(os.path.join(HERE, "particles", ".lock"))  # the writer's lock file is not part of the fixture
    readback.write_answers(HERE)  # the reads of queries.json


if __name__ == "__main__":
    main()
