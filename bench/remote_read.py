#!/usr/bin/env python3
"""Remote reads: a 1 % box, a 0.1 % tail and a 1 % preview over HTTP range requests, at 0, 20
and 50 ms of added latency per request, motes (``motes.open("http://...")``) against a Zarr
v3 sharded copy read through obstore and an HDF5 copy read by h5py on fsspec, in one run.

Usage (from the repository root)::

    python bench/remote_read.py                    # 4M particles -> bench/results/remote_read.json
    python bench/remote_read.py --n 1000000 --delays 0,20 --out /tmp/remote.json

The three copies (the same rows, in motes' file order: spatially sorted, which helps the
peers' reads of a box as much as it can) lie in one folder served by Debian's nginx on
127.0.0.1, behind a proxy that waits the latency before forwarding each request and counts
requests and bytes. Zarr: one array per column, chunks of 65,536 rows in shards of 1,048,576
(zstd), opened with ``zarr.storage.ObjectStore`` over obstore's ``HTTPStore``. HDF5: one
contiguous dataset per column, opened with ``h5py.File(fsspec.open(url))`` (fsspec's
read-ahead cache). Neither peer has an index, so they do what a user of them does: read the
positions (box) or the energy (tail) whole, keep the rows that match, then read the other
columns where those rows lie (Zarr: ``get_coordinate_selection``, the chunks holding them;
HDF5: the span from the first to the last); a preview reads every 100th row. motes plans the
query from its index and reads the ranges at once. Every run opens the data afresh (motes'
decoded blocks dropped). Answers are checked equal (rows and the sum of energy). The
benchmark measures; it records requests, bytes and wall time per query, side and latency.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.modules.setdefault("numcodecs.zfpy", None)  # numcodecs cannot parse zfpy's "1.0.1.post0" version

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python"))
from benchlib import figure, log, peer, run, touch_memory  # noqa: E402

COLUMNS = ["x", "y", "z", "ux", "uy", "uz", "energy", "id"]
CHUNK, SHARD = 1 << 16, 1 << 20


def write_copies(folder: str, n: int):
    import h5py
    import zarr

    import motes

    cols = motes.synth.vpic(n, seed=4, with_id=True)
    motes.write(os.path.join(folder, "run.motes"), cols, sync=True)
    t = motes.open(os.path.join(folder, "run.motes")).query()  # motes' file order
    ordered = {c: np.ascontiguousarray(t[c]) for c in COLUMNS}
    g = zarr.open_group(zarr.storage.LocalStore(os.path.join(folder, "run.zarr")), mode="w", zarr_format=3)
    for c, a in ordered.items():
        arr = g.create_array(c, shape=a.shape, dtype=a.dtype, chunks=(CHUNK,), shards=(SHARD,),
                             compressors=zarr.codecs.ZstdCodec(level=3))
        arr[:] = a
    with h5py.File(os.path.join(folder, "run.h5"), "w") as f:
        for c, a in ordered.items():
            f.create_dataset(c, data=a)
    return ordered


class Motes:
    name = "motes"

    def __init__(self, url):
        self.url = url + "/run.motes"

    def run(self, query, box, threshold):
        import motes

        motes._core.clear_block_cache()
        ds = motes.open(self.url)
        if query == "box":
            t = ds.query(box=box)
        elif query == "tail":
            t = ds.query(f"energy > {threshold!r}")
        else:
            t = ds.query(fraction=0.01)
        return len(t), float(np.asarray(t["energy"], dtype=np.float64).sum())


class Peer:
    """Zarr or HDF5: the matching rows found by reading whole columns, then the other columns."""

    def columns(self):
        raise NotImplementedError

    def run(self, query, box, threshold):
        c = self.columns()
        if query == "preview":
            energy = np.asarray(c["energy"][::100])
            for name in COLUMNS:
                if name != "energy":
                    np.asarray(c[name][::100])
            return len(energy), float(energy.astype(np.float64).sum())
        if query == "box":
            x, y, z = (np.asarray(c[a][:]) for a in "xyz")
            keep = ((x >= box[0]) & (x <= box[3]) & (y >= box[1]) & (y <= box[4]) & (z >= box[2]) & (z <= box[5]))
        else:
            keep = np.asarray(c["energy"][:]) > threshold
        rows = np.flatnonzero(keep)
        energy = self.take(c, "energy", rows)
        for name in COLUMNS:
            if name != "energy":
                self.take(c, name, rows)
        return len(rows), float(energy.astype(np.float64).sum())


class Zarr(Peer):
    name = "zarr"

    def __init__(self, url):
        self.url = url

    def columns(self):
        import obstore.store
        import zarr

        store = obstore.store.HTTPStore.from_url(self.url + "/run.zarr", client_options={"allow_http": True})
        g = zarr.open_group(zarr.storage.ObjectStore(store, read_only=True), mode="r")
        return {c: g[c] for c in COLUMNS}

    @staticmethod
    def take(c, name, rows):
        return np.asarray(c[name].get_coordinate_selection(rows)) if len(rows) else np.empty(0)


class Hdf5(Peer):
    name = "h5py_fsspec"

    def __init__(self, url):
        self.url = url
        self.file = None

    def columns(self):
        import fsspec
        import h5py

        if self.file is not None:
            self.file.close()
        self.file = h5py.File(fsspec.open(self.url + "/run.h5", "rb").open(), "r")
        return {c: self.file[c] for c in COLUMNS}

    @staticmethod
    def take(c, name, rows):
        if not len(rows):
            return np.empty(0)
        return np.asarray(c[name][rows[0]: rows[-1] + 1])[rows - rows[0]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--delays", default="0,20,50", help="added latency per request, ms (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "remote_read.json"))
    args = ap.parse_args()
    import motes.remote
    from cold import one_percent_box
    from remote_util import LatencyProxy, Nginx

    delays = [float(d) for d in args.delays.split(",")]
    with run(args.out, ".tmp-remote-", n=args.n, delays_ms=delays, repeat=args.repeat) as r:
        www = os.path.join(r.scratch, "www")
        os.makedirs(www)
        ordered = write_copies(www, args.n)
        box = one_percent_box(ordered)
        threshold = float(np.quantile(ordered["energy"], 0.999))
        sizes = {k: sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(www, k)) for f in fs)
                 if os.path.isdir(os.path.join(www, k)) else os.path.getsize(os.path.join(www, k))
                 for k in ("run.motes", "run.zarr", "run.h5")}
        del ordered
        nginx = Nginx(www)
        rows = []
        try:
            for delay in delays:
                proxy = LatencyProxy(nginx.url, delay / 1e3)
                sides = [Motes(proxy.url), Zarr(proxy.url), Hdf5(proxy.url)]
                try:
                    for query in ("box", "tail", "preview"):
                        answers, runs = {}, {s.name: [] for s in sides}
                        for _ in range(args.repeat):
                            for side in sides:
                                touch_memory(0.5)
                                req0, bytes0, calls0 = proxy.requests, proxy.bytes, motes.remote.counters()["calls"]
                                t0 = time.perf_counter()
                                got = side.run(query, box, threshold)
                                wall = time.perf_counter() - t0
                                runs[side.name].append({"s": wall, "requests": proxy.requests - req0,
                                                        "bytes": proxy.bytes - bytes0,
                                                        "round_trips": (motes.remote.counters()["calls"] - calls0)
                                                        if side.name == "motes" else None})
                                answers[side.name] = got
                        if query != "preview":
                            assert answers["zarr"][0] == answers["h5py_fsspec"][0] == answers["motes"][0], answers
                            assert np.isclose(answers["zarr"][1], answers["motes"][1], rtol=1e-9), answers
                        for name, rs in runs.items():
                            row = {"delay_ms": delay, "query": query, "side": name,
                                   "s": statistics.median(x["s"] for x in rs),
                                   "requests": statistics.median(x["requests"] for x in rs),
                                   "bytes": statistics.median(x["bytes"] for x in rs),
                                   "round_trips": rs[-1]["round_trips"], "rows": answers[name][0]}
                            rows.append(row)
                            log(f"{delay:g} ms {query} {name}: {row['s'] * 1e3:.0f} ms, {row['requests']:.0f} requests, "
                                f"{row['bytes'] / 1e6:.1f} MB" + (f", {row['round_trips']} round trips"
                                                                  if row["round_trips"] is not None else ""))
                finally:
                    for s in sides:
                        if isinstance(s, Hdf5) and s.file is not None:
                            s.file.close()
                    proxy.stop()
        finally:
            nginx.stop()
        r.sections["rows"] = rows
        r.meta["file_bytes"] = sizes
        pick = {(x["delay_ms"], x["query"], x["side"]): x for x in rows}
        for delay in delays:
            for query in ("box", "tail", "preview"):
                m = pick[delay, query, "motes"]
                z, h = pick[delay, query, "zarr"], pick[delay, query, "h5py_fsspec"]
                worst = min(z["s"], h["s"]) / m["s"]
                r.figures[f"{query}_{delay:g}ms"] = figure(
                    f"{query}_{delay:g}ms", f"{query} of {args.n:,} particles over HTTP at {delay:g} ms per request: "
                    f"wall time (motes {m['requests']:.0f} requests in {m['round_trips']} round trips, "
                    f"{m['bytes'] / 1e6:.1f} MB)", m["s"], "s",
                    peers={"zarr": peer(z["s"], "s", z["s"] / m["s"], "zarr / motes", requests=z["requests"],
                                        bytes=z["bytes"]),
                           "h5py_fsspec": peer(h["s"], "s", h["s"] / m["s"], "h5py / motes", requests=h["requests"],
                                               bytes=h["bytes"])},
                    ratio=worst, ratio_meaning="the faster peer / motes",
                    target=">= 5x faster than both, <= 4 round trips" if delay == 20 else "",
                    met=(worst >= 5 and (m["round_trips"] or 0) <= 4) if delay == 20 else None,
                    requests=m["requests"], bytes=m["bytes"], round_trips=m["round_trips"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
