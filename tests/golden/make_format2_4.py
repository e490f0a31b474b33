#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.4 in tests/golden/format2_4/ (run once per
format minor version, never to "fix" a failing test).

One step of 5,000 particles with two derived quantities (docs/format.md §4.18): ``speed =
sqrt(ux**2 + uy**2)`` (float32 columns) and ``w = e * k`` (float64 times int32, ties), each with
its statistics, its tail index (about 25 entries per side) and the cover of its outermost 10
entries per side. ``answers.json`` holds the SHA-256 of what the queries of ``queries.json``
read back (the quantities as ``File.derived`` gives them; tests of each expression inside its
cover, past it and in the middle); the section kinds are pinned by tests/python/test_golden.py.

    python tests/golden/make_format2_4.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_4")
DERIVED = {"speed": "sqrt(ux**2 + uy**2)", "w": "e * k"}


def particles():
    rng = np.random.default_rng(24)
    n = 5000
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "ux": rng.standard_normal(n).astype(np.float32),
            "uy": rng.standard_normal(n).astype(np.float32), "e": rng.exponential(size=n),
            "k": rng.integers(-5, 6, n).astype(np.int32), "id": rng.permutation(n).astype(np.int64)}


def main():
    readback.clear(HERE)
    motes.write(os.path.join(HERE, "particles"), particles(), sync=False, derived=DERIVED)
    os.remove(os.path.join(HERE, "particles", ".lock"))  # the writer's lock file is not part of the fixture
    readback.write_answers(HERE)  # the reads of queries.json


if __name__ == "__main__":
    main()
