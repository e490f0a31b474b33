#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.6 in tests/golden/format2_6/ (run once per
format minor version, never to "fix" a failing test).

One step of 6,000 clustered particles whose fine levels are stored region by region
(docs/format.md §5.4, feature ``regional-detail``): a coarse prefix of 1/16 of the points,
then regions of about 300 points. ``answers.json`` holds the SHA-256 of what the reads of
``queries.json`` give back (everything in file order, quality ranges that end in the coarse
prefix, cross it and lie past it, fractions that sample a fine level, boxes, a tail and
tracking); the detail level and region depth are pinned by tests/python/test_golden.py.

    python tests/golden/make_format2_6.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_6")
OPTIONS = dict(leaf_size=32, lod_count=4, prefix_share=1 / 16, region_points=300)


def particles():
    rng = np.random.default_rng(26)
    n = 6000
    centers = rng.random((5, 3))
    pos = (centers[rng.integers(0, 5, n)] + rng.normal(scale=0.08, size=(n, 3))).astype(np.float32)
    return {"x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2], "ux": rng.standard_normal(n).astype(np.float32),
            "e": rng.exponential(size=n), "id": rng.permutation(n).astype(np.int64)}


def main():
    readback.clear(HERE)
    motes.write(os.path.join(HERE, "particles"), particles(), sync=False, **OPTIONS)
    os.remove(os.path.join(HERE, "particles", ".lock"))  # the writer's lock file is not part of the fixture
    readback.write_answers(HERE)  # the reads of queries.json


if __name__ == "__main__":
    main()
