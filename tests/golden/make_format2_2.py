#!/usr/bin/env python3
"""Writes the golden fixture of particle format 2.2 in tests/golden/format2_2/ (run once per
format minor version, never to "fix" a failing test).

One step of 5,000 particles with tail indexes (docs/format.md §4.16) on a float32 column
(``ux``, normal: two sides of about 0.5%), a float64 column (``e``, exponential: one long
side), an int32 column with heavy ties (``k``: its -5 and 5 held whole) and a uint8 column
(``u8``), and an int64 ``id`` column with its id index. ``answers.json`` holds the SHA-256
of the rows that thresholds in each tail, `in` lists and counts read back (the plans that
answer them are the planner's to choose, not pinned), so the fixture stays small and pins
every bit.

    python tests/golden/make_format2_2.py
"""
import hashlib
import json
import os
import shutil

import numpy as np

import motes

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format2_2")
# Thresholds inside the tails (answered by the tail indexes), one past them (the tree), `in`
# lists (the id index) and tests no index answers.
QUERIES = ["ux > 2.7", "ux <= -2.6", "2.75 < ux", "e >= 6", "e > 5.8 and x < 0.5", "e < 0.002", "k == -5", "k >= 5",
           "u8 > 253", "u8 == 0", "ux > 2.5", "id in (0, 7, 4999, -1, 123456)", "id in (3, 4, 5) or k == 5"]


def digest(a):
    a = np.asarray(a)
    return [str(a.dtype), int(a.size), hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()]


def particles():
    rng = np.random.default_rng(22)
    n = 5000
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "ux": rng.standard_normal(n).astype(np.float32),
            "e": rng.exponential(size=n), "k": rng.integers(-5, 6, n).astype(np.int32),
            "u8": rng.integers(0, 256, n).astype(np.uint8), "id": rng.permutation(n).astype(np.int64)}


def answers_of(root):
    ds = motes.open(os.path.join(root, "particles"))
    out = {"tail_indexes": ds.file().tail_indexes}
    for q in QUERIES:
        t = ds.query(q)
        out[q] = {"count": ds.count(q), **{c: digest(t[c]) for c in ("id", "ux", "e", "k", "u8")}}
    return out


def main():
    if os.path.exists(HERE):
        shutil.rmtree(HERE)
    motes.write(os.path.join(HERE, "particles"), particles(), sync=False)
    os.remove(os.path.join(HERE, "particles", ".lock"))  # the writer's lock file is not part of the fixture
    with open(os.path.join(HERE, "answers.json"), "w") as fh:
        json.dump(answers_of(HERE), fh, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
