#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.2 in tests/golden/format2_2/ (run once per
format minor version, never to "fix" a failing test).

One step of 5,000 particles with tail indexes (docs/format.md §4.16) on a float32 column
(``ux``, normal: two sides of about 0.5%), a float64 column (``e``, exponential: one long
side), an int32 column with heavy ties (``k``: its -5 and 5 held whole) and a uint8 column
(``u8``), and an int64 ``id`` column with its id index. ``answers.json`` holds the SHA-256
of the rows that the queries of ``queries.json`` (thresholds in each tail and one past them, `in`
lists, tests no index answers) and their counts read back (the plans that
answer them are the planner's to choose, not pinned), so the fixture stays small and pins
every bit.

    python tests/golden/make_format2_2.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_2")


def particles():
    rng = np.random.default_rng(22)
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
