#!/usr/bin/env python3
"""IDX (motes.convert.idx) next to OpenVisus in the same run: writing and reading one
float32 field of 256^3 samples (64 MiB).

Usage (from the repository root)::

    python bench/idx.py                       # -> bench/results/idx.json, about 1-2 minutes
    python bench/idx.py --n 128 --out /tmp/idx.json

Data: a smooth field (a sum of sines) plus 1% noise, float32, C order (z, y, x). Files go
to a scratch directory ``bench/.tmp-idx-*`` (deleted at the end); every read is hot (the
files were just written). MB/s are of the field's raw bytes (64 MiB at n = 256), whatever
the compression (coarse and box reads: of the samples returned); medians of --repeat runs after one warm-up (writes: --write-repeat).

Figures (``figures[key]``: seconds and MB/s):

* ``write/<who>/<compression>/<layout>``: ours (``idx.write``, default 4 threads for the
  compression, bits_per_block 16) and OpenVisus' (``CreateIdx`` + ``db.write``, which writes
  raw row-major blocks, then ``compressDataset`` for zip, timed as a whole);
* ``read/<reader>/<writer>/<compression>/<layout>``: the whole field at full resolution by
  our reader and by OpenVisus' ``ds.read`` of files written by us and by OpenVisus;
* ``read_level1``, ``read_box``: ours, a coarse read (every 2nd sample per axis) and a
  64^3 box, beside OpenVisus' read of the same (``max_resolution`` of level 1).

Every read is checked against the input (bit-exact). Nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import finish, log, perf, start_meta, timed  # noqa: E402

import motes  # noqa: E402
from motes import _core  # noqa: E402
from motes.convert import idx  # noqa: E402

RESULTS = os.path.join(HERE, "results")


def field(n: int) -> np.ndarray:
    z, y, x = np.meshgrid(*(np.linspace(0, 6.0, n, dtype=np.float32),) * 3, indexing="ij")
    a = np.sin(x) * np.cos(1.3 * y) + 0.5 * np.sin(2.1 * z + x)
    a += 0.01 * np.random.default_rng(0).standard_normal(a.shape, dtype=np.float32)
    return np.ascontiguousarray(a, dtype=np.float32)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write-repeat", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(RESULTS, "idx.json"))
    args = ap.parse_args(argv)
    import OpenVisus as ov

    a = field(args.n)
    mb = a.nbytes / 1e6
    tmp = tempfile.mkdtemp(prefix=".tmp-idx-", dir=HERE)
    figs = {}
    started = perf()
    meta = start_meta(benchmark="idx", n=args.n)

    def record(key, timing, nbytes=None, **extra):
        m = mb if nbytes is None else nbytes / 1e6
        figs[key] = {"seconds": timing["median"], "MB_per_s": m / timing["median"], "timing_s": timing, **extra}
        log(f"{key}: {timing['median']:.3f} s, {m / timing['median']:.0f} MB/s")

    def size_of(folder):
        return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs)

    try:
        ours = {}
        for comp, layout, level in [("raw", "row-major", 1), ("zip", "row-major", 1), ("zip", "row-major", 6),
                                    ("lz4", "row-major", 1), ("raw", "hzorder", 1), ("zip", "hzorder", 1)]:
            path = os.path.join(tmp, f"ours-{comp}{level}-{layout}.idx")
            t, _ = timed(lambda: idx.write(path, [(0, {"rho": motes.Field(a)})], compression=comp, layout=layout,
                                           zip_level=level, overwrite=True), repeat=args.write_repeat)
            key = f"write/motes/{comp}{'' if comp != 'zip' else f'-level{level}'}/{layout}"
            record(key, t, bytes=size_of(path[:-4]))
            ours[(comp, level, layout)] = path

        theirs = {}
        for comp in ("raw", "zip"):
            path = os.path.join(tmp, f"ov-{comp}.idx")

            def ov_write():
                for p in (path, path[:-4]):
                    if os.path.isdir(p):
                        shutil.rmtree(p)
                    elif os.path.exists(p):
                        os.remove(p)
                db = ov.CreateIdx(url=path, dims=[args.n] * 3, fields=[ov.Field("rho", "float32")])
                db.write(a, field="rho")
                if comp != "raw":
                    db.compressDataset([comp])
            t, _ = timed(ov_write, repeat=args.write_repeat)
            record(f"write/openvisus/{comp}/row-major", t, bytes=size_of(path[:-4]),
                   bitmask=open(path).read().split("(bits)\n")[1].split()[0])
            theirs[comp] = path

        def check(got, want):
            if got.shape != want.shape or got.tobytes() != want.tobytes():
                raise AssertionError("a read differs from the input")

        for label, path in [("motes/raw/row-major", ours[("raw", 1, "row-major")]),
                            ("motes/zip/row-major", ours[("zip", 1, "row-major")]),
                            ("motes/lz4/row-major", ours[("lz4", 1, "row-major")]),
                            ("motes/raw/hzorder", ours[("raw", 1, "hzorder")]),
                            ("motes/zip/hzorder", ours[("zip", 1, "hzorder")]),
                            ("openvisus/raw/row-major", theirs["raw"]), ("openvisus/zip/row-major", theirs["zip"])]:
            ds = idx.read(path)
            t, got = timed(lambda: ds.read("rho"), repeat=args.repeat)
            check(got, a)
            record(f"read/motes/{label}", t)
            ods = ov.LoadDataset(path)
            t, got = timed(lambda: ods.read(field="rho"), repeat=args.repeat)
            check(got, a)
            record(f"read/openvisus/{label}", t)
            ds.close()

        path = ours[("zip", 1, "row-major")]
        ds, ods = idx.read(path), ov.LoadDataset(path)
        r1 = _core.hz_resolution_of_level(ds.bitmask, 1)
        t, got = timed(lambda: ds.read("rho", level=1), repeat=args.repeat)
        check(got, a[::2, ::2, ::2])
        record("read_level1/motes/zip/row-major", t, got.nbytes)
        t, got = timed(lambda: ods.read(field="rho", max_resolution=r1), repeat=args.repeat)
        check(got, a[::2, ::2, ::2])
        record("read_level1/openvisus/zip/row-major", t, got.nbytes)
        lo, hi = (args.n // 4,) * 3, (args.n // 4 + args.n // 4,) * 3
        sel = (slice(lo[0], hi[0]),) * 3
        t, got = timed(lambda: ds.read("rho", box=(lo, hi)), repeat=args.repeat)
        check(got, a[sel])
        record("read_box/motes/zip/row-major", t, got.nbytes, box=[lo, hi])
        t, got = timed(lambda: ods.read(field="rho", x=(lo[0], hi[0]), y=(lo[1], hi[1]), z=(lo[2], hi[2])),
                       repeat=args.repeat)
        check(got, a[sel])
        record("read_box/openvisus/zip/row-major", t, got.nbytes, box=[lo, hi])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta["field_bytes"] = a.nbytes
    finish(meta, {}, args.out, started, measurements=figs)  # seconds and MB/s of each read and write
    return 0


if __name__ == "__main__":
    sys.exit(main())
