#!/usr/bin/env python3
"""Stored sizes on real simulation output, column by column: motes (default settings) against
HDF5 with gzip and with Blosc2, in one run.

Data sets (each a series of steps, every column in the code's own row order):

* ``pysco``: the 7 snapshots of bench/gen_pysco.py (128^3 dark-matter particles, z = 49 .. 0;
  x y z vx vy vz rho float32, id int64 = arange in pysco's order);
* ``fbpic``: the 4 electron dumps of bench/gen_fbpic.py (laser wakefield, 12.7k .. 173k
  electrons; x y z ux uy uz w float64, id uint64 from FBPIC's tracker);
* ``vpic``: one step of ``motes.synth.vpic(N, with_id=True)`` (N = 10M by default; x y z ux uy
  uz energy q float32 in the generator's random order, id uint64 shuffled with them), the
  data bench/compression.py measures (which leaves out the id).

Stores compared, per column (bytes summed over the steps) and in total (% of the raw bytes,
the sum of the columns' ``nbytes``):

* ``gzip``: HDF5 (h5py), one file per step, one dataset per column, chunks of 2^18 values
  (the whole column when shorter), shuffle + gzip level 4. Per column: the dataset's storage
  size; total: the files' sizes (HDF5 metadata included).
* ``blosc2``: the same files with the HDF5 Blosc2 filter of ``hdf5plugin``
  (``hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=SHUFFLE)``).
* ``motes``: ``motes.Writer`` with default settings, one ``write_step`` per step. The bytes of
  every particle file are attributed from its section table (docs/format.md section 4.3, read
  here, read only): per column the values (kind 3: for coded sections the blocks' stored
  sizes, from their block table), its quantile index (codes, kind 7, and edges, kind 6), its
  tail index (kinds 13-15) with its cover (kind 17 and the kind-16 values it lists), node
  ranges (kind 4) and bitmaps (kind 5); the block tables and checksums (kinds 8, 9) of each
  stream beside it; the id index (keys 10, rows 11, fences 12, with their block tables); the
  nodes (2), schema (1), derived quantities (18-23); header, section table and padding as the
  rest of the file. The sums are checked against ``File.sizes`` and ``column_info`` (motes'
  own figures). The dataset directory's total on disk (manifest included) is given too.

For the pysco snapshots the id column and id index are also given in bits per particle, next
to log2(N!)/N: the bits that any order of N distinct ids needs on average when the file order
is spatial and the ids tell nothing about it.

Usage (from the repository root; the data made first by the two generators)::

    .venv/bin/python bench/sizes.py                                  # all three, 10M VPIC
    .venv/bin/python bench/sizes.py --datasets pysco,fbpic --out /tmp/s.json
    .venv/bin/python bench/sizes.py --datasets vpic --vpic-n 2000000

The benchmark measures; it asserts only that its accounting adds up.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import shutil
import struct
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import du, figure, log, peer, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHUNK = 1 << 18
MB = 1e6

# ---------------------------------------------------------------------------------------------
# the data sets: each yields its steps as (step, time, columns, scalars)
# ---------------------------------------------------------------------------------------------

Step = Tuple[int, float, Dict[str, np.ndarray], Dict[str, Any]]


def _npz_steps(pattern: str, what: str) -> Iterator[Step]:
    files = sorted(glob.glob(pattern))
    if not files:
        raise SystemExit(f"no {what} data at {pattern}: make it first (see bench/sizes.py's docstring)")
    for path in files:
        with np.load(path) as d:
            cols = {k: d[k] for k in d.files if d[k].ndim == 1}
            scalars = {k: d[k].item() for k in d.files if d[k].ndim == 0}
        yield int(scalars["iteration"]), float(scalars["time"]), cols, scalars


def pysco_steps(data: str) -> Iterator[Step]:
    return _npz_steps(os.path.join(data, "pysco", "snap_*.npz"), "pysco")


def fbpic_steps(data: str) -> Iterator[Step]:
    return _npz_steps(os.path.join(data, "fbpic", "electrons_*.npz"), "FBPIC")


def vpic_steps(n: int, seed: int) -> Iterator[Step]:
    from motes import synth

    yield 0, 0.0, synth.vpic(n, seed=seed, with_id=True), {}


# ---------------------------------------------------------------------------------------------
# HDF5 peers
# ---------------------------------------------------------------------------------------------

def h5_peer(path: str, cols: Dict[str, np.ndarray], **filt) -> Tuple[Dict[str, int], int]:
    """One HDF5 file of the step: a dataset per column, chunks of 2^18 values. Returns the
    stored bytes of each dataset and the file's size."""
    import h5py

    with h5py.File(path, "w") as f:
        for name, a in cols.items():
            f.create_dataset(name, data=a, chunks=(max(1, min(len(a), CHUNK)),), **filt)
    per = {}
    with h5py.File(path, "r") as f:
        for name in cols:
            per[name] = int(f[name].id.get_storage_size())
    return per, os.path.getsize(path)


def gzip_filter() -> Dict[str, Any]:
    return {"compression": "gzip", "compression_opts": 4, "shuffle": True}


def blosc2_filter() -> Dict[str, Any]:
    import hdf5plugin

    return dict(hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))


# ---------------------------------------------------------------------------------------------
# motes: the bytes of a particle file by section (docs/format.md section 4.3), read only
# ---------------------------------------------------------------------------------------------

KIND = {1: "schema", 2: "nodes", 3: "column data", 4: "node ranges", 5: "bitmaps", 6: "quantile edges",
        7: "quantile codes", 8: "block checksums", 9: "block table", 10: "id keys", 11: "id rows",
        12: "id fences", 13: "tail values", 14: "tail rows", 15: "tail bounds", 16: "tail cover values",
        17: "tail cover", 18: "derived", 19: "derived tail values", 20: "derived tail rows",
        21: "derived tail bounds", 22: "derived tail cover values", 23: "derived tail cover"}
NO_COLUMN = 0xFFFFFFFF


def _section_bytes(f, sec: Dict[str, int]) -> bytes:
    """The bytes of a raw (0) or zstd (1) metadata section."""
    f.seek(sec["offset"])
    b = f.read(sec["length"])
    if sec["storage"] == 1:
        import zstandard

        b = zstandard.ZstdDecompressor().decompress(b)
    elif sec["storage"] != 0:
        raise ValueError(f"section of kind {sec['kind']} has storage {sec['storage']}: not metadata")
    return b


def _schema_names(b: bytes) -> List[str]:
    names, p = [], 0
    while p < len(b):
        _dtype, _index, name_len, unit_len, _bound = struct.unpack_from("<BBHId", b, p)
        names.append(b[p + 16:p + 16 + name_len].decode())
        p += 16 + name_len + unit_len
    return names


def mpf_breakdown(path: str) -> Dict[str, Any]:
    """Every stored byte of a particle file, attributed (see the module's docstring)."""
    with open(path, "rb") as f:
        head = f.read(256)
        if head[:8] != b"MOTESPRT":
            raise ValueError(f"{path}: not a motes particle file")
        major, minor = struct.unpack_from("<HH", head, 8)
        if major != 2:
            raise ValueError(f"{path}: format {major}.{minor}; this reads format 2")
        file_size, table_at, count, entry = struct.unpack_from("<QQII", head, 24)
        n = struct.unpack_from("<Q", head, 56)[0]
        f.seek(table_at)
        tb = f.read(count * entry)
        secs = []
        for i in range(count):
            kind, storage, _z, column, offset, length, _ck = struct.unpack_from("<HBBIQQQ", tb, i * entry)
            secs.append({"kind": kind, "storage": storage, "column": column, "offset": offset, "length": length})
        names = _schema_names(_section_bytes(f, next(s for s in secs if s["kind"] == 1)))
        stored = [s["length"] for s in secs]
        for s in secs:  # a coded section's bytes are its blocks', which its block table gives
            if s["kind"] == 9:
                t = _section_bytes(f, s)
                blocks = np.frombuffer(t, dtype=np.dtype([("offset", "<u8"), ("stored", "<u4"), ("zero", "<u4"),
                                                          ("checksum", "<u8")]))
                target = secs[s["column"]]
                assert target["storage"] == 2, (path, s, target)
                stored[s["column"]] = int(blocks["stored"].sum())
        cover_of = {}  # kind-16 section index -> the tailed column whose cover lists it
        for s in secs:
            if s["kind"] == 17:
                b = _section_bytes(f, s)
                m = struct.unpack_from("<I", b, 16)[0]
                for j in struct.unpack_from(f"<{m}I", b, 24):
                    cover_of[j] = s["column"]
    cols: Dict[str, Dict[str, int]] = {c: {} for c in names}
    other: Dict[str, int] = {}

    def add(bucket: Dict[str, int], key: str, v: int) -> None:
        bucket[key] = bucket.get(key, 0) + v

    def place(i: int) -> Tuple[Dict[str, int], str]:
        """Where the bytes of section i go: (bucket, key)."""
        s = secs[i]
        k, c = s["kind"], s["column"]
        if k in (8, 9):  # a stream's block checksums or block table: beside the stream
            bucket, key = place(c)
            return bucket, key + "_table"
        if k == 1:
            return other, "schema"
        if k == 2:
            return other, "nodes"
        if k in (10, 11, 12):
            return other, {10: "id_keys", 11: "id_rows", 12: "id_fences"}[k]
        if k in (18, 19, 20, 21, 22, 23):
            return other, "derived"
        if k == 16:
            return cols[names[cover_of[i]]], "tail_cover"
        key = {3: "values", 4: "node_ranges", 5: "bitmaps", 6: "codes_edges", 7: "codes", 13: "tail",
               14: "tail", 15: "tail", 17: "tail_cover"}[k]
        return cols[names[c]], key

    for i in range(len(secs)):
        bucket, key = place(i)
        add(bucket, key, stored[i])
    accounted = sum(stored)
    other["header_table_padding"] = file_size - accounted
    assert other["header_table_padding"] >= 256 + 32 * count, (path, other)
    return {"path": path, "count": int(n), "version": f"{major}.{minor}", "file_bytes": file_size,
            "columns": cols, "other": other}


def _sum_into(total: Dict[str, Any], part: Dict[str, Any]) -> None:
    for k, v in part.items():
        if isinstance(v, dict):
            _sum_into(total.setdefault(k, {}), v)
        else:
            total[k] = total.get(k, 0) + v


# ---------------------------------------------------------------------------------------------
# one data set
# ---------------------------------------------------------------------------------------------

def _json_attrs(scalars: Dict[str, Any]) -> Dict[str, Any]:
    return {k: (v if isinstance(v, (bool, int, float, str)) else str(v)) for k, v in scalars.items()}


def measure(name: str, steps: Iterator[Step], scratch: str) -> Dict[str, Any]:
    import motes

    ds_path = os.path.join(scratch, f"{name}.motes")
    h5dir = os.path.join(scratch, f"{name}-h5")
    os.makedirs(h5dir)
    raw: Dict[str, int] = {}
    dtypes: Dict[str, str] = {}
    gz: Dict[str, int] = {}
    bl: Dict[str, int] = {}
    gz_files = bl_files = 0
    motes_sum: Dict[str, Any] = {}
    per_step = []
    checks = []
    t_motes = t_gz = t_bl = 0.0
    with motes.Writer(ds_path) as w:
        for step, t, cols, scalars in steps:
            n = len(cols["x"])
            log(f"{name}: step {step} ({n:,} particles, columns {list(cols)})")
            for c, a in cols.items():
                raw[c] = raw.get(c, 0) + a.nbytes
                dtypes[c] = a.dtype.name
            t0 = time.perf_counter()
            g, gf = h5_peer(os.path.join(h5dir, f"gzip_{step:08d}.h5"), cols, **gzip_filter())
            t_gz += time.perf_counter() - t0
            t0 = time.perf_counter()
            b, bf = h5_peer(os.path.join(h5dir, f"blosc2_{step:08d}.h5"), cols, **blosc2_filter())
            t_bl += time.perf_counter() - t0
            gz_files += gf
            bl_files += bf
            for c in cols:
                gz[c] = gz.get(c, 0) + g[c]
                bl[c] = bl.get(c, 0) + b[c]
            t0 = time.perf_counter()
            w.write_step(step, cols, time=t, attributes=_json_attrs(scalars))
            t_motes += time.perf_counter() - t0
            per_step.append({"step": step, "time": t, "count": n, "gzip": g, "blosc2": b,
                             "gzip_file_bytes": gf, "blosc2_file_bytes": bf})
            del cols
    ds = motes.open(ds_path)
    for k, step in enumerate(ds.steps):
        src = ds.source(step, "particles")
        bd_step: Dict[str, Any] = {}
        for p in range(src.part_count):
            f = src.part(p)
            bd = mpf_breakdown(f.path)
            # motes' own figures, against the section table's
            s = f.sizes
            info = {c["name"]: c for c in f.column_info(True)}
            data = sum(v.get("values", 0) for v in bd["columns"].values())
            assert bd["file_bytes"] == s["file_bytes"], (bd["file_bytes"], s)
            assert data == s["data_bytes"], (data, s)
            for c, v in bd["columns"].items():
                assert v.get("values", 0) == info[c]["stored_bytes"], (c, v, info[c])
                assert v.get("codes", 0) == info[c].get("codes_stored_bytes", 0), (c, v, info[c])
            checks.append({"path": f.path, "version": bd["version"], "sizes": dict(s),
                           "required_features": int(f.required_features),
                           "codecs": {c: {k: info[c][k] for k in ("codec", "codes_codec", "index") if k in info[c]}
                                      for c in info}})
            _sum_into(bd_step, {"file_bytes": bd["file_bytes"], "columns": bd["columns"], "other": bd["other"]})
        per_step[k]["motes"] = bd_step
        _sum_into(motes_sum, bd_step)
    dir_bytes = du(ds_path)
    mpf_bytes = motes_sum["file_bytes"]
    raw_total = sum(raw.values())
    columns = {}
    for c in raw:
        m = motes_sum["columns"].get(c, {})
        columns[c] = {"dtype": dtypes[c], "raw_bytes": raw[c], "gzip_bytes": gz[c], "blosc2_bytes": bl[c],
                      "motes": m,
                      "motes_values_bytes": m.get("values", 0),
                      "motes_codes_bytes": m.get("codes", 0) + m.get("codes_table", 0) + m.get("codes_edges", 0),
                      "motes_tail_bytes": sum(m.get(k, 0) for k in ("tail", "tail_table", "tail_cover",
                                                                    "tail_cover_table")),
                      "motes_tree_bytes": m.get("node_ranges", 0) + m.get("bitmaps", 0)}
    o = motes_sum["other"]
    id_index = {k: o.get(k, 0) + o.get(k + "_table", 0) for k in ("id_keys", "id_rows", "id_fences")}
    tables = sum(v for m in motes_sum["columns"].values() for k, v in m.items()
                 if k in ("values_table",))
    totals = {
        "raw_bytes": raw_total,
        "gzip": {"columns_bytes": sum(gz.values()), "file_bytes": gz_files, "percent_of_raw": 100.0 * gz_files / raw_total},
        "blosc2": {"columns_bytes": sum(bl.values()), "file_bytes": bl_files,
                   "percent_of_raw": 100.0 * bl_files / raw_total},
        "motes": {
            "values_bytes": sum(c["motes_values_bytes"] for c in columns.values()),
            "values_tables_bytes": tables,
            "codes_bytes": sum(c["motes_codes_bytes"] for c in columns.values()),
            "tail_bytes": sum(c["motes_tail_bytes"] for c in columns.values()),
            "node_ranges_bytes": sum(m.get("node_ranges", 0) for m in motes_sum["columns"].values()),
            "bitmaps_bytes": sum(m.get("bitmaps", 0) for m in motes_sum["columns"].values()),
            "nodes_bytes": o.get("nodes", 0),
            "id_index_bytes": sum(id_index.values()), "id_index": id_index,
            "schema_bytes": o.get("schema", 0), "derived_bytes": o.get("derived", 0) + o.get("derived_table", 0),
            "header_table_padding_bytes": o.get("header_table_padding", 0),
            "mpf_bytes": mpf_bytes, "dir_bytes": dir_bytes,
            "percent_of_raw": 100.0 * dir_bytes / raw_total,
        },
        "seconds": {"gzip": t_gz, "blosc2": t_bl, "motes": t_motes},
    }
    parts = totals["motes"]
    summed = (parts["values_bytes"] + parts["values_tables_bytes"] + parts["codes_bytes"] + parts["tail_bytes"]
              + parts["node_ranges_bytes"] + parts["bitmaps_bytes"] + parts["nodes_bytes"] + parts["id_index_bytes"]
              + parts["schema_bytes"] + parts["derived_bytes"] + parts["header_table_padding_bytes"])
    assert summed == mpf_bytes, (summed, mpf_bytes, motes_sum)
    # the id column and its index in bits per particle, step by step
    id_bits = []
    if "id" in raw:
        for st in per_step:
            n = st["count"]
            m = st["motes"]
            mo = m["other"]
            mc = m["columns"].get("id", {})
            col = mc.get("values", 0) + mc.get("values_table", 0)
            keys = mo.get("id_keys", 0) + mo.get("id_keys_table", 0)
            rows = mo.get("id_rows", 0) + mo.get("id_rows_table", 0)
            fences = mo.get("id_fences", 0)
            id_bits.append({"step": st["step"], "count": n, "log2_n_factorial_per_n": math.lgamma(n + 1) / math.log(2) / n,
                            "motes_column_bits": 8.0 * col / n, "motes_keys_bits": 8.0 * keys / n,
                            "motes_rows_bits": 8.0 * rows / n, "motes_fences_bits": 8.0 * fences / n,
                            "motes_id_total_bits": 8.0 * (col + keys + rows + fences) / n,
                            "motes_id_with_tree_bits": 8.0 * (col + keys + rows + fences + mc.get("node_ranges", 0)
                                                              + mc.get("bitmaps", 0) + sum(mc.get(k, 0) for k in (
                                                                  "tail", "tail_table", "tail_cover", "tail_cover_table",
                                                                  "codes", "codes_table", "codes_edges"))) / n,
                            "gzip_bits": 8.0 * st["gzip"]["id"] / n, "blosc2_bits": 8.0 * st["blosc2"]["id"] / n})
    return {"steps": [{k: v for k, v in st.items()} for st in per_step], "columns": columns, "totals": totals,
            "id_bits": id_bits, "files": checks,
            "motes_settings": "motes.Writer(path) defaults, one write_step per step (step = the code's iteration)",
            "gzip_settings": "h5py: one file per step, a dataset per column, chunks 2^18 values, shuffle + gzip 4",
            "blosc2_settings": "h5py + hdf5plugin.Blosc2(cname='zstd', clevel=5, filters=SHUFFLE), chunks 2^18 values"}


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------

def table(name: str, r: Dict[str, Any]) -> str:
    cols, tot = r["columns"], r["totals"]
    raw = tot["raw_bytes"]
    head = ["column", "dtype", "raw MB", "gzip4 MB", "%", "blosc2 MB", "%", "motes val MB", "%",
            "codes MB", "tail MB", "ranges+bmp MB"]
    rows = []
    for c, v in cols.items():
        rows.append([c, v["dtype"], f"{v['raw_bytes'] / MB:.2f}", f"{v['gzip_bytes'] / MB:.2f}",
                     f"{100 * v['gzip_bytes'] / v['raw_bytes']:.1f}", f"{v['blosc2_bytes'] / MB:.2f}",
                     f"{100 * v['blosc2_bytes'] / v['raw_bytes']:.1f}", f"{v['motes_values_bytes'] / MB:.2f}",
                     f"{100 * v['motes_values_bytes'] / v['raw_bytes']:.1f}", f"{v['motes_codes_bytes'] / MB:.2f}",
                     f"{v['motes_tail_bytes'] / MB:.2f}", f"{v['motes_tree_bytes'] / MB:.2f}"])
    m = tot["motes"]
    rows.append(["columns", "", f"{raw / MB:.2f}", f"{tot['gzip']['columns_bytes'] / MB:.2f}",
                 f"{100 * tot['gzip']['columns_bytes'] / raw:.1f}", f"{tot['blosc2']['columns_bytes'] / MB:.2f}",
                 f"{100 * tot['blosc2']['columns_bytes'] / raw:.1f}", f"{m['values_bytes'] / MB:.2f}",
                 f"{100 * m['values_bytes'] / raw:.1f}", f"{m['codes_bytes'] / MB:.2f}", f"{m['tail_bytes'] / MB:.2f}",
                 f"{(m['node_ranges_bytes'] + m['bitmaps_bytes']) / MB:.2f}"])
    rows.append(["files", "", "", f"{tot['gzip']['file_bytes'] / MB:.2f}", f"{tot['gzip']['percent_of_raw']:.1f}",
                 f"{tot['blosc2']['file_bytes'] / MB:.2f}", f"{tot['blosc2']['percent_of_raw']:.1f}",
                 f"{m['dir_bytes'] / MB:.2f}", f"{m['percent_of_raw']:.1f}", "", "", ""])
    w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    lines = [f"{name}: {len(r['steps'])} steps, {sum(s['count'] for s in r['steps']):,} particles in all, "
             f"raw {raw / MB:.1f} MB"]
    lines += ["  ".join(x.rjust(w[i]) if i > 1 else x.ljust(w[i]) for i, x in enumerate(row)) for row in [head] + rows]
    lines.insert(2, "  ".join("-" * x for x in w))
    idx = m["id_index"]
    lines.append(f"  motes other parts: id index {m['id_index_bytes'] / MB:.2f} MB (keys {idx['id_keys'] / MB:.2f}, "
                 f"rows {idx['id_rows'] / MB:.2f}, fences {idx['id_fences'] / MB:.3f}); nodes {m['nodes_bytes'] / MB:.3f}; "
                 f"values' block tables {m['values_tables_bytes'] / MB:.3f}; schema {m['schema_bytes'] / 1e3:.1f} kB; "
                 f"header+table+padding {m['header_table_padding_bytes'] / MB:.3f}; .mpf files {m['mpf_bytes'] / MB:.2f} MB; "
                 f"directory {m['dir_bytes'] / MB:.2f} MB = {m['percent_of_raw']:.1f}% of raw")
    if len(r["steps"]) > 1:
        lines.append("  per step, % of the step's raw bytes (files; motes: its .mpf, and its columns' values alone):")
        for st in r["steps"]:
            sr = sum(v * st["count"] for v in (np.dtype(c["dtype"]).itemsize for c in cols.values()))
            vals = sum(v.get("values", 0) for v in st["motes"]["columns"].values())
            lines.append(f"    step {st['step']:>5} {st['count']:>10,}: gzip4 {100 * st['gzip_file_bytes'] / sr:5.1f}  "
                         f"blosc2 {100 * st['blosc2_file_bytes'] / sr:5.1f}  motes {100 * st['motes']['file_bytes'] / sr:5.1f}"
                         f" (values {100 * vals / sr:5.1f})")
    if r["id_bits"]:
        lines.append("  id in bits per particle (motes: id column + index keys + rows + fences; peers: the id dataset):")
        lines.append("    step       N   log2(N!)/N   motes  (column  keys  rows  fences)   gzip4  blosc2")
        for b in r["id_bits"]:
            lines.append(f"    {b['step']:>4} {b['count']:>9,}   {b['log2_n_factorial_per_n']:8.2f}   "
                         f"{b['motes_id_total_bits']:6.2f}  ({b['motes_column_bits']:6.2f} {b['motes_keys_bits']:5.2f} "
                         f"{b['motes_rows_bits']:5.2f} {b['motes_fences_bits']:6.3f})   {b['gzip_bits']:6.2f}  "
                         f"{b['blosc2_bits']:6.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="pysco,fbpic,vpic")
    p.add_argument("--vpic-n", type=int, default=10_000_000)
    p.add_argument("--seed", type=int, default=0, help="the VPIC-like generator's seed")
    p.add_argument("--data", default="/work/data")
    p.add_argument("--scratch", default=None, help="where the files are written (default: a folder in --data)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "sizes.json"))
    args = p.parse_args(argv)
    names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    for s in names:
        if s not in ("pysco", "fbpic", "vpic"):
            p.error(f"unknown data set {s!r}")
    import h5py
    import hdf5plugin

    results: Dict[str, Any] = {}
    with run(args.out, "sizes-", scratch_dir=args.scratch or args.data, datasets=names, vpic_n=args.vpic_n,
             seed=args.seed, data=args.data, h5py=h5py.__version__, hdf5=h5py.version.hdf5_version,
             hdf5plugin=hdf5plugin.version, chunk_values=CHUNK) as r:
        for s in names:
            steps = {"pysco": lambda: pysco_steps(args.data), "fbpic": lambda: fbpic_steps(args.data),
                     "vpic": lambda: vpic_steps(args.vpic_n, args.seed)}[s]()
            scratch = os.path.join(r.scratch, s)
            os.makedirs(scratch)
            results[s] = measure(s, steps, scratch)
            shutil.rmtree(scratch)
            print(table(s, results[s]), flush=True)
            tot = results[s]["totals"]
            r.figures[s] = figure(
                s, f"{s}: motes dataset directory (default settings, indexes included) / raw column bytes",
                tot["motes"]["percent_of_raw"], "% of raw",
                peers={"gzip4_shuffle": peer(tot["gzip"]["percent_of_raw"], "% of raw",
                                             tot["motes"]["dir_bytes"] / tot["gzip"]["file_bytes"],
                                             "motes / peer bytes"),
                       "blosc2_zstd5_shuffle": peer(tot["blosc2"]["percent_of_raw"], "% of raw",
                                                    tot["motes"]["dir_bytes"] / tot["blosc2"]["file_bytes"],
                                                    "motes / peer bytes")})
        r.sections["datasets"] = results
        r.sections["tables"] = {s: table(s, results[s]) for s in names}
    return 0


if __name__ == "__main__":
    sys.exit(main())
