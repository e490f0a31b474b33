#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.5 in tests/golden/format2_5/ (run once per
format minor version, never to "fix" a failing test).

One step of 5,000 particles whose coded blocks hold packed words (docs/format.md §4.12.2,
feature ``packed-blocks``): positions in frame-of-reference units, a charge ``q`` of two values
(a dictionary of whole words), ``uy`` crossing zero (dictionaries of its high parts), ``ux``
with a quantile index (layout 4: residuals in their bins' widths), ids and the id index. ``answers.json`` holds the SHA-256 of what the
reads of ``queries.json`` give back (whole columns through queries, and tracking, which reads
each value where it lies); the codecs are pinned by tests/python/test_golden.py.

    python tests/golden/make_format2_5.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_5")
INDEX = {"ux": "quantile"}


def particles():
    rng = np.random.default_rng(25)
    n = 5000
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "ux": rng.standard_normal(n).astype(np.float32),
            "uy": rng.standard_normal(n).astype(np.float32),
            "q": np.where(rng.random(n) < 0.5, -1.0, 1836.0).astype(np.float32),
            "k": rng.integers(-5, 6, n).astype(np.int32), "e": rng.exponential(size=n),
            "id": rng.permutation(n).astype(np.int64) * 7 - 1000}


def main():
    readback.clear(HERE)
    motes.write(os.path.join(HERE, "particles"), particles(), sync=False, index=INDEX)
    os.remove(os.path.join(HERE, "particles", ".lock"))  # the writer's lock file is not part of the fixture
    readback.write_answers(HERE)  # the reads of queries.json


if __name__ == "__main__":
    main()
