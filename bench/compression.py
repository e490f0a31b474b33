#!/usr/bin/env python3
"""Compression benchmark: motes' stored sizes and decoding speed next to general codecs on
the same columns, in the same (motes file) order, in one run.

Usage (from the repository root)::

    python bench/compression.py                 # 10M VPIC-like particles
    python bench/compression.py --n 2000000     # quicker

Figures (bench/README.md explains each):

1. ``size``       default dataset size (index, quantile codes and levels of detail included) / raw
                  column bytes; peers: the same file uncompressed, Blosc2 on the columns
2. ``columns``    lossless ratio per column: motes vs Blosc2 (shuffle + zstd clevel 1, 1 MiB
                  blocks), Blosc2 bitshuffle, zstd, lz4, ZFP reversible, on the same values in
                  the same order
3. ``decode``     decoding inside reads: values per second of one thread, decoded-block cache
                  off (every block decoded), vs Blosc2 and zstd decompression of the same column
3b. ``progressive`` quality 0.1 -> 1.0, every column, fresh open, decoded-block cache emptied:
                  the lossless file's rate against the uncompressed file's, runs alternating
                  (peers: five runs of each in turn; the default threads)
4. ``write``      write rate, fsync'd, lossless vs uncompressed, same data
5. ``positions``  positions with a 2^-17-of-box bound: bits per particle, bound held on every
                  value; peers SZ3 (pysz) and ZFP (zfpy) at the same bound, same order
6. ``lossy``      an attribute (ux) at 1e-4 x its range: ratio vs SZ3 and ZFP, bound held

The benchmark measures; it asserts only correctness (equal values, bounds held), never speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from typing import Dict


# numpy's OpenBLAS threads spin-wait after any call and take a core from every engine measured
# here (none of them uses BLAS): one thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import alternated, figure, log, peer, progression, run, timed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
MiB = 1 << 20


def blosc2_bytes(a: np.ndarray, filt, clevel: int = 1) -> int:
    import blosc2

    cp = {"codec": blosc2.Codec.ZSTD, "clevel": clevel, "filters": [filt], "typesize": a.itemsize,
          "blocksize": MiB, "nthreads": 1}
    total = 0
    step = MiB // a.itemsize * 4  # chunks of 4 MiB of 1 MiB blocks
    for s in range(0, len(a), step):
        total += len(blosc2.compress2(np.ascontiguousarray(a[s:s + step]), **cp))
    return total


def chunked_bytes(a: np.ndarray, compress) -> int:
    step = MiB // a.itemsize
    return sum(len(compress(a[s:s + step].tobytes())) for s in range(0, len(a), step))


def zfp_lossless_bytes(a: np.ndarray) -> int:
    import zfpy

    return len(zfpy.compress_numpy(np.ascontiguousarray(a)))  # reversible (lossless) mode


def sz3_bytes(a: np.ndarray, bound: float):
    from pysz import sz, szConfig, szErrorBoundMode

    cfg = szConfig()
    cfg.errorBoundMode = szErrorBoundMode.ABS
    cfg.absErrorBound = bound
    comp, ratio = sz.compress(np.ascontiguousarray(a), cfg)
    back, _ = sz.decompress(comp, a.dtype, a.shape)
    return len(comp), float(np.max(np.abs(back.astype(np.float64) - a.astype(np.float64))))


def zfp_accuracy_bytes(a: np.ndarray, bound: float):
    import zfpy

    comp = zfpy.compress_numpy(np.ascontiguousarray(a), tolerance=bound)
    back = zfpy.decompress_numpy(comp)
    return len(comp), float(np.max(np.abs(back.astype(np.float64) - a.astype(np.float64))))


def duckdb_alp(a: np.ndarray):
    """DuckDB's own storage of the column (ALP, or ALP-RD where ALP does not pay: DuckDB picks
    per segment; the float codec of DuckDB since 0.10). Returns (bytes on disk: the blocks the
    column takes, 256 KiB each; the codec's ratio: values over bytes in the segments that fill
    their block, or over the blocks used when none does; the codecs chosen)."""
    import tempfile

    import duckdb
    import pyarrow as pa

    with tempfile.TemporaryDirectory() as d:
        used = []
        for data in (a[:0], a):
            con = duckdb.connect(os.path.join(d, f"{len(used)}.duckdb"))
            con.register("src", pa.table({"v": data}))
            con.execute("CREATE TABLE t AS SELECT v FROM src")
            con.execute("CHECKPOINT")
            size, blocks = con.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
            used.append(size * blocks)
            segs = con.execute("SELECT row_group_id, segment_id, count, compression, block_id, block_offset "
                               "FROM pragma_storage_info('t') WHERE segment_type <> 'VALIDITY' "
                               "ORDER BY row_group_id, segment_id").fetchall()
            con.close()
    codecs = sorted({s[3] for s in segs})
    last = {}
    for rg, sid, *_ in segs:
        last[rg] = max(last.get(rg, -1), sid)
    full = [s for s in segs if s[1] < last[s[0]] and s[5] == 0]  # a segment followed by another: its block is full
    if full:
        ratio = sum(s[2] for s in full) * a.itemsize / (len(full) * size)
    else:
        ratio = a.nbytes / (len({s[4] for s in segs}) * size)
    return used[1] - used[0], ratio, codecs


class Bench:
    def __init__(self, args, tmp: str):
        self.args, self.tmp = args, tmp
        self.figures: Dict[str, dict] = {}

    def generate(self):
        from motes import synth

        self.cols = synth.vpic(self.args.n, seed=self.args.seed, with_id=True)
        self.raw = sum(v.nbytes for k, v in self.cols.items() if k != "id")
        self.data = {k: v for k, v in self.cols.items() if k != "id"}
        log(f"generated {self.args.n:,} VPIC-like particles ({self.raw / 1e6:.0f} MB in 8 columns)")

    def write(self, name: str, with_id: bool = False, **kw) -> str:
        import motes

        p = os.path.join(self.tmp, f"{name}.motes")
        shutil.rmtree(p, ignore_errors=True)
        motes.write(p, self.cols if with_id else self.data, sync=True, **kw)
        return p

    def fig_size_and_columns(self):
        import lz4.block
        import motes
        import zstandard

        import blosc2

        lossless, none = self.write("lossless"), self.write("none", compression="none")
        f = motes.open(lossless).file()
        s, s0 = f.sizes, motes.open(none).file().sizes
        size = 100.0 * s["file_bytes"] / self.raw
        # The peers code the same values in the same (file) order.
        order = {c: f.read_column(c) for c in self.data}
        blosc_cols = {c: blosc2_bytes(v, blosc2.Filter.SHUFFLE) for c, v in order.items()}
        overhead_none = s0["file_bytes"] - s0["data_bytes"]  # index, codes, padding of the uncompressed file
        blosc_total = sum(blosc_cols.values())
        self.figures["size"] = figure(
            "size", "default dataset size (lossless; index, quantile codes and levels of detail included) / raw "
            "column bytes", size, "% of raw", peers={
                "uncompressed": peer(100.0 * s0["file_bytes"] / self.raw, "% of raw", None, "compression='none'"),
                "blosc2_columns_only": peer(100.0 * blosc_total / self.raw, "% of raw", None,
                                            "Blosc2 shuffle+zstd clevel 1, 1 MiB blocks, columns in file order"),
                "blosc2_with_index": peer(100.0 * (blosc_total + overhead_none) / self.raw, "% of raw",
                                          (blosc_total + overhead_none) / s["file_bytes"],
                                          "Blosc2 columns + motes' uncompressed index and codes / motes file"),
            }, ratio=size / 72.0, ratio_meaning="size / target (72%)", target="<= 72% of raw", met=size <= 72.0,
            sizes=s)
        log(f"figure 1 (size): {size:.1f}% of raw (uncompressed {100.0 * s0['file_bytes'] / self.raw:.1f}%, "
            f"Blosc2 columns {100.0 * blosc_total / self.raw:.1f}%)")
        z1 = zstandard.ZstdCompressor(level=1)
        per = {}
        met = True
        info = {c["name"]: c for c in f.columns}
        for c, v in order.items():
            ours = v.nbytes / info[c]["stored_bytes"]
            b = v.nbytes / blosc_cols[c]
            peers = {
                "blosc2_shuffle_zstd1": peer(b, "x", ours / b, "motes ratio / peer ratio"),
                "blosc2_bitshuffle_zstd1": peer(v.nbytes / blosc2_bytes(v, blosc2.Filter.BITSHUFFLE), "x", None, ""),
                "zstd1": peer(v.nbytes / chunked_bytes(v, z1.compress), "x", None, "1 MiB chunks"),
                "lz4": peer(v.nbytes / chunked_bytes(v, lambda x: lz4.block.compress(x, store_size=False)), "x", None,
                            "1 MiB chunks"),
                "zfp_reversible": peer(v.nbytes / zfp_lossless_bytes(v), "x", None, "whole column"),
            }
            disk, alp, alp_codecs = duckdb_alp(v)
            peers["duckdb_alp"] = peer(alp, "x", ours / alp, "motes ratio / peer ratio",
                                       note="DuckDB's float codec (" + "/".join(alp_codecs) + ") on its own storage: "
                                       "values over the bytes of the segments that fill a 256 KiB block",
                                       on_disk=v.nbytes / disk)
            if v.dtype == np.float32:
                met &= ours >= b
            per[c] = {"motes": ours, "codec": info[c]["codec"], "peers": peers}
            log(f"  {c:7s} motes {ours:.3f}x ({info[c]['codec']}), Blosc2 {b:.3f}x, DuckDB {'/'.join(alp_codecs)} "
                f"{alp:.3f}x ({v.nbytes / disk:.3f}x on disk)")
        x = per["x"]
        self.figures["columns"] = figure(
            "columns", "lossless ratio per column in motes' file order (x shown; every column under 'columns')",
            x["motes"], "x", peers=x["peers"], ratio=x["peers"]["blosc2_shuffle_zstd1"]["ratio"],
            ratio_meaning="motes / Blosc2 shuffle+zstd1", target=">= Blosc2 shuffle+zstd clevel 1 on every float32 "
            "column", met=met, columns=per)
        self.lossless, self.none = lossless, none
        self.order = order

    def fig_decode(self):
        import blosc2
        import motes
        import zstandard

        f = motes.open(self.lossless).file()
        before = motes._core.block_cache_bytes()
        motes._core.set_block_cache_bytes(0)  # every read decodes
        try:
            per = {}
            total_bytes = total_s = 0.0
            for c, v in self.order.items():
                t, back = timed(lambda: f.read_column(c), repeat=self.args.repeat)
                assert back.tobytes() == v.tobytes()
                per[c] = v.nbytes / t["median"] / 1e9
                total_bytes += v.nbytes
                total_s += t["median"]
        finally:
            motes._core.set_block_cache_bytes(before)
        gbs = total_bytes / total_s / 1e9
        x = self.order["x"]
        cb = blosc2.compress2(x, codec=blosc2.Codec.ZSTD, clevel=1, filters=[blosc2.Filter.SHUFFLE], typesize=4,
                              blocksize=MiB, nthreads=1)
        tb, _ = timed(lambda: blosc2.decompress2(cb, nthreads=1), repeat=self.args.repeat)
        zc = zstandard.ZstdCompressor(level=1).compress(x.tobytes())
        zd = zstandard.ZstdDecompressor()
        tz, _ = timed(lambda: zd.decompress(zc), repeat=self.args.repeat)
        self.figures["decode"] = figure(
            "decode", "values decoded per second by one thread reading whole columns (decoded-block cache off)",
            gbs, "GB/s", peers={
                "blosc2_x": peer(x.nbytes / tb["median"] / 1e9, "GB/s", gbs / (x.nbytes / tb["median"] / 1e9),
                                 "motes (all columns) / Blosc2 on x, nthreads=1"),
                "zstd1_x": peer(x.nbytes / tz["median"] / 1e9, "GB/s", None, "zstd level 1 on x, one frame"),
            }, ratio=gbs / 4.0, ratio_meaning="value / target (4 GB/s)", target=">= 4 GB/s per core",
            met=gbs >= 4.0, columns=per)
        log(f"figure 3 (decode): {gbs:.2f} GB/s over all columns, one thread; per column {per}")

    def fig_progressive(self):
        # The lossless file against the uncompressed one, one thread, runs alternating (the
        # figure: this VM's speed drifts in phases of seconds, so five runs of one file and then
        # five of the other compare two phases as much as two files; that measure, the figure
        # before 2026-11-29 06:20, is a peer), and alternating on the default threads.
        paths = (("lossless", self.lossless), ("none", self.none))
        rate = {}
        for name, path in paths:
            t, rows = timed(lambda: progression(path, self.data), repeat=self.args.repeat)
            assert rows == self.args.n
            rate[(name, "blocks")] = self.args.n / t["median"] / 1e3  # points per ms

        def all_rows(name, rows):
            assert rows == self.args.n, name

        for threads in (1, None):
            runs = alternated({name: (lambda path=path, threads=threads: progression(path, self.data, threads=threads))
                               for name, path in paths}, self.args.repeat, warmup=1, after=all_rows)
            for name, _ in paths:
                rate[(name, threads)] = self.args.n / statistics.median(runs[name]) / 1e3
        share = {k: rate[("lossless", k)] / rate[("none", k)] for k in ("blocks", 1, None)}
        self.figures["progressive"] = figure(
            "progressive", "progressive read 0.1 -> 1.0, every column, one thread, fresh open and decoded-block cache "
            "emptied each run, runs alternating with the uncompressed file's: lossless rate", rate[("lossless", 1)],
            "points/ms",
            peers={"uncompressed": peer(rate[("none", 1)], "points/ms", share[1],
                                        "lossless rate / uncompressed rate, one thread, runs alternating"),
                   "lossless, five runs then the uncompressed file's five": peer(
                       rate[("lossless", "blocks")], "points/ms", share["blocks"],
                       "lossless rate / uncompressed rate, one thread, five runs of each in turn (the figure before "
                       "2026-11-29 06:20)"),
                   "lossless, default threads, runs alternating": peer(
                       rate[("lossless", None)], "points/ms", share[None],
                       "lossless rate / uncompressed rate, both on the default threads, runs alternating")},
            ratio=share[1], ratio_meaning="lossless rate / uncompressed rate", target=">= 60% of the uncompressed rate",
            met=share[1] >= 0.6)
        log(f"figure 3b (progressive, fresh open): runs alternating, one thread: lossless {rate[('lossless', 1)]:,.0f} "
            f"points/ms, uncompressed {rate[('none', 1)]:,.0f} ({100 * share[1]:.0f}%); default threads "
            f"{100 * share[None]:.0f}%; five runs of each in turn {100 * share['blocks']:.0f}%")

    def fig_write(self):
        runs = alternated({kind: (lambda kind=kind: self.write("w-" + kind, compression=kind))
                           for kind in ("lossless", "none")}, self.args.write_repeat)
        med = {k: float(np.median(v)) for k, v in runs.items()}
        rate = {k: self.args.n / v / 1e6 for k, v in med.items()}
        self.figures["write"] = figure(
            "write", "motes.write rate, fsync'd, lossless (default)", rate["lossless"], "M particles/s",
            peers={"uncompressed": peer(rate["none"], "M particles/s", rate["lossless"] / rate["none"],
                                        "lossless rate / uncompressed rate")},
            ratio=rate["lossless"] / 7.7, ratio_meaning="rate / 7.7 M/s (first release)",
            target="not lower than 7.7 M particles/s", met=rate["lossless"] >= 7.7, seconds=runs)
        log(f"figure 4 (write): lossless {rate['lossless']:.2f} M/s, uncompressed {rate['none']:.2f} M/s")

    def fig_lossy(self):
        import motes

        n = self.args.n
        extent = {a: float(np.ptp(self.data[a])) for a in "xyz"}
        bounds = {a: extent[a] * 2.0 ** -17 for a in "xyz"}
        urange = float(np.ptp(self.data["ux"]))
        bounds["ux"] = 1e-4 * urange
        p = self.write("lossy", with_id=True, error_bounds=bounds)  # ids join stored rows to given ones
        f = motes.open(p).file()
        info = {c["name"]: c for c in f.columns}
        # Bound held on every value: join the stored rows to the given ones by id.
        ds = motes.open(p)
        got = ds.query(columns=["id", "x", "y", "z", "ux"])
        pos = np.argsort(self.cols["id"])[np.searchsorted(np.sort(self.cols["id"]), got["id"])]
        worst = {k: float(np.max(np.abs(got[k].astype(np.float64) - self.cols[k][pos].astype(np.float64))))
                 for k in bounds}
        held = all(worst[k] <= bounds[k] for k in bounds)
        assert held, (worst, bounds)
        bits = sum(info[a]["stored_bytes"] for a in "xyz") * 8 / n
        order = {a: f.read_column(a) for a in ("x", "y", "z", "ux")}  # the file order, lossy values
        sz_bits = zfp_bits = 0.0
        sz_err, zfp_err = {}, {}
        for a in "xyz":
            b, sz_err[a] = sz3_bytes(self.order[a], bounds[a])
            sz_bits += b * 8 / n
            b, zfp_err[a] = zfp_accuracy_bytes(self.order[a], bounds[a])
            zfp_bits += b * 8 / n
        self.figures["positions"] = figure(
            "positions", "x, y, z with an absolute bound of 2^-17 of the box extent: stored bits per particle, "
            "every value within its bound", bits, "bits/particle", peers={
                "sz3": peer(sz_bits, "bits/particle", bits / sz_bits, "motes / SZ3 (same order, same bounds)",
                            max_error=sz_err),
                "zfp_accuracy": peer(zfp_bits, "bits/particle", bits / zfp_bits, "motes / ZFP fixed accuracy",
                                     max_error=zfp_err),
            }, ratio=bits / 28.0, ratio_meaning="bits / target (28)", target="<= 28 bits per particle, bound held",
            met=bits <= 28.0 and held, max_error=worst, bounds=bounds, codecs={a: info[a]["codec"] for a in "xyz"})
        log(f"figure 5 (positions): {bits:.1f} bits/particle (SZ3 {sz_bits:.1f}, ZFP {zfp_bits:.1f}); max errors "
            f"{worst}")
        ratio = self.data["ux"].nbytes / info["ux"]["stored_bytes"]
        b, e_sz = sz3_bytes(self.order["ux"], bounds["ux"])
        b2, e_zfp = zfp_accuracy_bytes(self.order["ux"], bounds["ux"])
        sz_ratio, zfp_ratio = self.data["ux"].nbytes / b, self.data["ux"].nbytes / b2
        self.figures["lossy"] = figure(
            "lossy", "ux with an absolute bound of 1e-4 x its range: compression ratio, bound held on every value",
            ratio, "x", peers={
                "sz3": peer(sz_ratio, "x", ratio / sz_ratio, "motes / SZ3", max_error=e_sz),
                "zfp_accuracy": peer(zfp_ratio, "x", ratio / zfp_ratio, "motes / ZFP", max_error=e_zfp),
            }, ratio=ratio / sz_ratio, ratio_meaning="motes / SZ3", target=">= SZ3 on the same sorted column",
            met=ratio >= sz_ratio and held, bound=bounds["ux"], max_error=worst["ux"], codec=info["ux"]["codec"],
            # The quantile codes are the column's index, stored whatever the compression; the
            # grid_quantile predictor also reads them. Value and codes together, for honesty:
            codes_bytes=info["ux"].get("codes_stored_bytes", 0),
            ratio_with_codes=self.data["ux"].nbytes / (info["ux"]["stored_bytes"] + info["ux"].get("codes_stored_bytes", 0)))
        log(f"figure 6 (lossy ux): {ratio:.2f}x (SZ3 {sz_ratio:.2f}x, ZFP {zfp_ratio:.2f}x); with its index codes "
            f"{self.figures['lossy']['ratio_with_codes']:.2f}x")
        del order


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write-repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(RESULTS, "compression.json"))
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args(argv)
    with run(args.out, ".tmp-compression-", args.tmp, benchmark="compression", n=args.n) as r:
        b = Bench(args, r.scratch)
        r.figures = b.figures
        b.generate()
        b.fig_size_and_columns()
        b.fig_decode()
        b.fig_progressive()
        b.fig_write()
        b.fig_lossy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
