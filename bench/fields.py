#!/usr/bin/env python3
"""Grid fields: motes' HZ-ordered field files next to h5py (contiguous and chunked 64^3),
OpenVisus (IDX) and numpy, in the same run, on one float32 field.

Usage (from the repository root)::

    python bench/fields.py                      # 512^3 float32 -> bench/results/fields.json
    python bench/fields.py --n 256 --out /tmp/fields.json

Data: a smooth field plus noise (a sum of sines, 1% noise), float32, ``n^3`` samples. Files
go to a scratch directory ``bench/.tmp-fields-*`` (deleted at the end). Figures (hot page
cache, medians; the write figures include fdatasync):

* ``write_zfp``: motes with ``tolerance`` = 1e-3 of the range (ZFP blocks) vs zfpy on the whole
  array at the same tolerance: MB/s, size ratio to raw, largest error, read MB/s.
* ``write``: motes (lossless; and ``compression="none"``) vs h5py contiguous and chunked
  (64^3, no filter) vs OpenVisus ``CreateIdx`` + ``write`` (raw), MB/s of samples.
* ``read``: the whole field into a numpy array: motes vs h5py (both layouts) vs OpenVisus.
* ``preview``: the field at level 3 (every 8th sample per axis): motes (bytes read: the
  blocks it touches) vs h5py strided reads ``[::8, ::8, ::8]`` of both layouts.
* ``box``: a 64^3 sub-box at full resolution: motes (and the blocks' bytes) vs h5py chunked.
* ``cmfe``: the field sampled trilinearly at 10M points (spatially sorted, as a motes
  step's particles are; and in random order) vs a vectorised numpy gather.

Targets (issue "Fields"): write >= 500 MB/s raw per core (>= 150 MB/s coded); read >= 1 GB/s
per core; preview <= 2% of the bytes and <= 20 ms; 64^3 box <= 2x its bytes and <= 10 ms;
CMFE >= 50 M particles/s per core. Nothing is asserted; the JSON records everything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import figure, log, peer, timed  # noqa: E402


def smooth_field(n: int) -> np.ndarray:
    g = np.linspace(0, 4 * np.pi, n, dtype=np.float32)
    a = (np.sin(g)[None, None, :] + np.cos(g)[None, :, None] * np.sin(0.5 * g)[:, None, None]).astype(np.float32)
    a += np.random.default_rng(0).standard_normal(a.shape, dtype=np.float32) * 0.01
    return a


def mbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6


def trilinear_numpy(a: np.ndarray, x, y, z):
    """The vectorised numpy peer: the 8 corners gathered with fancy indexing."""
    n = np.array(a.shape[::-1]) - 1
    ix, iy, iz = (np.minimum(np.floor(c).astype(np.int64), m - 1) for c, m in zip((x, y, z), n))
    tx, ty, tz = x - ix, y - iy, z - iz
    c = a.astype(np.float64, copy=False)
    c00 = c[iz, iy, ix] * (1 - tx) + c[iz, iy, ix + 1] * tx
    c10 = c[iz, iy + 1, ix] * (1 - tx) + c[iz, iy + 1, ix + 1] * tx
    c01 = c[iz + 1, iy, ix] * (1 - tx) + c[iz + 1, iy, ix + 1] * tx
    c11 = c[iz + 1, iy + 1, ix] * (1 - tx) + c[iz + 1, iy + 1, ix + 1] * tx
    return (c00 * (1 - ty) + c10 * ty) * (1 - tz) + (c01 * (1 - ty) + c11 * ty) * tz


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=512, help="samples per axis")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--points", type=int, default=10_000_000, help="CMFE points")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "fields.json"))
    args = ap.parse_args()
    import h5py

    from motes.field import Field
    from motes.fields.file import open_field_file, write_field_file

    n, repeat = args.n, args.repeat
    a = smooth_field(n)
    nbytes = a.nbytes
    with benchlib.run(args.out, ".tmp-fields-", n=n, repeat=repeat) as r:
        tmp, figs = r.scratch, r.figures
        paths = {k: os.path.join(tmp, k) for k in ("coded.mfd", "raw.mfd", "contig.h5", "chunked.h5")}

        def h5_write(path, chunks):
            with h5py.File(path, "w") as f:
                f.create_dataset("rho", data=a, chunks=chunks)
                f.flush()
                os.fsync(f.id.get_vfd_handle())

        writes = {}
        t, info = timed(lambda: write_field_file(paths["coded.mfd"], Field(a), name="rho"), repeat, warmup=0)
        writes["motes (lossless)"] = (t, info["stored_bytes"])
        t, info_raw = timed(lambda: write_field_file(paths["raw.mfd"], Field(a), name="rho", compression="none"),
                            repeat, warmup=0)
        writes["motes (none)"] = (t, info_raw["stored_bytes"])
        t, _ = timed(lambda: h5_write(paths["contig.h5"], None), repeat, warmup=0)
        writes["h5py contiguous"] = (t, nbytes)
        t, _ = timed(lambda: h5_write(paths["chunked.h5"], (64, 64, 64)), repeat, warmup=0)
        writes["h5py chunked 64^3"] = (t, nbytes)
        try:
            import OpenVisus as ov

            def ov_write():
                path = os.path.join(tmp, f"ov{time.perf_counter_ns()}", "rho.idx")
                db = ov.CreateIdx(url=path, dims=[n, n, n], fields=[ov.Field("rho", "float32")])
                db.write(a)
                return path
            t, ov_path = timed(ov_write, 1, warmup=0)
            writes["OpenVisus CreateIdx + write (raw)"] = (t, nbytes)
        except ImportError:
            ov_path = None
        for k, (t, stored) in writes.items():
            log(f"write {k}: {mbps(nbytes, t['median']):.0f} MB/s ({t['median']:.2f} s, stored {stored / 1e6:.0f} MB)")
        main_t = writes["motes (lossless)"][0]
        figs["write"] = figure(
            "write", f"{n}^3 float32 written and fdatasync'd, MB/s of samples", mbps(nbytes, main_t["median"]), "MB/s",
            timing=main_t, peers={k: peer(mbps(nbytes, t["median"]), "MB/s",
                                          mbps(nbytes, main_t["median"]) / mbps(nbytes, t["median"]),
                                          "motes / peer", timing_s=t, stored_bytes=stored)
                                  for k, (t, stored) in writes.items() if k != "motes (lossless)"},
            target=">= 500 MB/s raw per core, >= 150 MB/s coded",
            met=(mbps(nbytes, writes["motes (none)"][0]["median"]) / (os.cpu_count() or 1) >= 500
                 and mbps(nbytes, main_t["median"]) >= 150),
            stored_bytes=info["stored_bytes"], threads=os.cpu_count())

        # Stored within a tolerance (ZFP fixed accuracy on each block's lattice box) next to
        # zfpy compressing the whole array at the same tolerance.
        tol = 1e-3 * float(a.max() - a.min())
        zpath = os.path.join(tmp, "zfp.mfd")
        tz, zinfo = timed(lambda: write_field_file(zpath, Field(a, tolerance=tol), name="rho"), repeat, warmup=0)
        zf = open_field_file(zpath)
        tzr, zgot = timed(lambda: zf.read(), repeat)
        zerr = float(np.max(np.abs(zgot - a)))
        peers = {}
        try:
            import zfpy

            tp, packed = timed(lambda: zfpy.compress_numpy(a, tolerance=tol), repeat, warmup=0)
            tpr, unpacked = timed(lambda: zfpy.decompress_numpy(packed), repeat)
            peers["zfpy, whole array"] = peer(mbps(nbytes, tp["median"]), "MB/s",
                                             mbps(nbytes, tz["median"]) / mbps(nbytes, tp["median"]), "motes / peer",
                                             timing_s=tp, ratio_raw=nbytes / len(packed),
                                             read_mb_s=mbps(nbytes, tpr["median"]),
                                             max_error=float(np.max(np.abs(unpacked - a))))
        except ImportError:
            pass
        log(f"zfp: write {mbps(nbytes, tz['median']):.0f} MB/s, {nbytes / zinfo['stored_bytes']:.1f}x smaller than raw, "
            f"max error {zerr:.3g} (tolerance {tol:.3g}), read {mbps(nbytes, tzr['median']):.0f} MB/s")
        figs["write_zfp"] = figure(
            "write_zfp", f"{n}^3 float32 stored within 1e-3 of its range (ZFP blocks), fsync'd, MB/s of samples",
            mbps(nbytes, tz["median"]), "MB/s", timing=tz, peers=peers, target=">= 150 MB/s coded",
            met=mbps(nbytes, tz["median"]) >= 150, ratio_raw=nbytes / zinfo["stored_bytes"], zfp_blocks=zinfo["zfp_blocks"],
            max_error=zerr, tolerance=tol, read_mb_s=mbps(nbytes, tzr["median"]))

        coded, raw = open_field_file(paths["coded.mfd"]), open_field_file(paths["raw.mfd"])
        reads = {}
        t, got = timed(lambda: coded.read(), repeat)
        assert np.array_equal(got, a)
        reads["motes (lossless)"] = t
        reads["motes (none)"] = timed(lambda: raw.read(), repeat)[0]
        for name, key in (("h5py contiguous", "contig.h5"), ("h5py chunked 64^3", "chunked.h5")):
            with h5py.File(paths[key], "r") as f:
                reads[name] = timed(lambda: f["rho"][...], repeat)[0]
        if ov_path:
            d = ov.LoadDataset(ov_path)
            reads["OpenVisus read"] = timed(lambda: d.read(field="rho"), 1)[0]
        for k, t in reads.items():
            log(f"read {k}: {mbps(nbytes, t['median']):.0f} MB/s")
        main_t = reads["motes (lossless)"]
        figs["read"] = figure(
            "read", "the whole field into numpy (hot), MB/s", mbps(nbytes, main_t["median"]), "MB/s", timing=main_t,
            peers={k: peer(mbps(nbytes, t["median"]), "MB/s", t["median"] and main_t["median"] and
                           t["median"] / main_t["median"], "motes speed / peer speed", timing_s=t)
                   for k, t in reads.items() if k != "motes (lossless)"},
            target=">= 1 GB/s per core", met=mbps(nbytes, main_t["median"]) / (os.cpu_count() or 1) >= 1000)

        t, got = timed(lambda: coded.read(level=3), max(repeat, 10))
        assert np.array_equal(got, a[::8, ::8, ::8])
        blocks = coded.blocks(level=3)
        per_block = 2 ** coded._f.block_bits * 4
        preview_bytes = len(blocks) * per_block
        peers = {}
        for name, key in (("h5py contiguous [::8, ::8, ::8]", "contig.h5"), ("h5py chunked [::8, ::8, ::8]", "chunked.h5")):
            with h5py.File(paths[key], "r") as f:
                pt = timed(lambda: f["rho"][::8, ::8, ::8], 3)[0]
            peers[name] = peer(pt["median"] * 1e3, "ms", pt["median"] / t["median"], "peer time / motes time",
                               timing_s=pt)
        log(f"preview: {t['median'] * 1e3:.2f} ms, {len(blocks)} blocks ({100 * preview_bytes / nbytes:.2f}% of the "
            f"samples' bytes)")
        figs["preview"] = figure(
            "preview", "level 3 (every 8th sample per axis) of the whole field, hot", t["median"] * 1e3, "ms",
            timing=t, peers=peers, target="<= 2% of the bytes, <= 20 ms",
            met=preview_bytes <= 0.02 * nbytes and t["median"] <= 0.02, blocks=len(blocks),
            bytes_touched=preview_bytes, fraction_of_bytes=preview_bytes / nbytes)

        lo, hi = (n // 4,) * 3, (n // 4 + 64,) * 3
        t, got = timed(lambda: coded.read(index_box=(lo, hi)), max(repeat, 10))
        assert np.array_equal(got, a[lo[2]:hi[2], lo[1]:hi[1], lo[0]:hi[0]])
        box_blocks = coded.blocks(index_box=(lo, hi))
        box_bytes = len(box_blocks) * per_block
        with h5py.File(paths["chunked.h5"], "r") as f:
            pt = timed(lambda: f["rho"][lo[2]:hi[2], lo[1]:hi[1], lo[0]:hi[0]], 10)[0]
        log(f"box 64^3: {t['median'] * 1e3:.2f} ms, {len(box_blocks)} blocks ({box_bytes / 64 ** 3 / 4:.2f}x its "
            f"bytes); h5py chunked {pt['median'] * 1e3:.2f} ms")
        figs["box"] = figure(
            "box", "a 64^3 sub-box at full resolution, hot", t["median"] * 1e3, "ms", timing=t,
            peers={"h5py chunked 64^3 (aligned with the box)": peer(pt["median"] * 1e3, "ms",
                                                                    pt["median"] / t["median"],
                                                                    "peer time / motes time", timing_s=pt)},
            target="<= 2x its bytes, <= 10 ms", met=box_bytes <= 2 * 64 ** 3 * 4 and t["median"] <= 0.01,
            blocks=len(box_blocks), bytes_touched=box_bytes)

        rng = np.random.default_rng(1)
        m = args.points
        x, y, z = (rng.random(m) * (n - 1) for _ in range(3))
        cell = ((np.floor(z / 8) * (n // 8 + 1) + np.floor(y / 8)) * (n // 8 + 1) + np.floor(x / 8))
        order = np.argsort(cell, kind="stable")
        xs, ys, zs = x[order], y[order], z[order]
        coded.sample(xs[:10], ys[:10], zs[:10])  # reads the grid once (kept)
        t_sorted, v = timed(lambda: coded.sample(xs, ys, zs), repeat)
        t_random, _ = timed(lambda: coded.sample(x, y, z), repeat)
        k = 1_000_000
        tn, ref = timed(lambda: trilinear_numpy(a, xs[:k], ys[:k], zs[:k]), 3)
        np.testing.assert_allclose(v[:k], ref, rtol=1e-9, atol=1e-9)
        rate = m / t_sorted["median"] / 1e6
        log(f"cmfe: {rate:.1f} M points/s sorted, {m / t_random['median'] / 1e6:.1f} M/s random; numpy "
            f"{k / tn['median'] / 1e6:.1f} M/s")
        figs["cmfe"] = figure(
            "cmfe", f"trilinear samples of the {n}^3 field at {m:,} points in 8^3-cell order (as a motes step's "
            "particles), all threads", rate, "M points/s", timing=t_sorted,
            peers={"motes, random order": peer(m / t_random["median"] / 1e6, "M points/s", None, "", timing_s=t_random),
                   "numpy vectorised gather (1M points, sorted)": peer(k / tn["median"] / 1e6, "M points/s",
                                                                       rate / (k / tn["median"] / 1e6),
                                                                       "motes / numpy", timing_s=tn)},
            target=">= 50 M points/s per core", met=rate / (os.cpu_count() or 1) >= 50)
    return 0


if __name__ == "__main__":
    sys.exit(main())
