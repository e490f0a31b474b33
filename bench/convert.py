"""Conversion throughput: H5Part and openPMD files of 10M particles into motes and back,
next to h5py's raw read of the same file, in the same run.

    python bench/convert.py [--n 10000000] [--repeat 3] [--out bench/results/convert.json]

Inputs are written by the other libraries themselves: the H5Part file with h5py (groups
Step#0, datasets x, y, z, ... as ParaView expects), the openPMD file with openpmd-api
(group-based, position + positionOffset + momentum + weighting). Measured per format,
median of --repeat runs, hot page cache:

* ``h5py_read``: every dataset read whole into numpy (the reference rate);
* ``import``: ``motes.convert.convert(src, "x.motes")`` end to end (read + layout +
  index + durable write);
* ``export``: ``motes.convert.convert("x.motes", dst)`` end to end (query in spatial
  blocks + write; openPMD with particle patches);
* ``import_64MiB_limit``: the import with a 64 MiB memory limit, i.e. the external
  spatial sort into part files that steps larger than memory take.

Rates are raw column bytes per second; ratios are motes rate / h5py read rate.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

import benchlib

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(fn, repeat, before=None):
    times = []
    for _ in range(repeat):
        if before:
            before()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scratch", default=os.path.join(HERE, ".tmp-convert"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "convert.json"))
    args = ap.parse_args()

    import h5py
    import openpmd_api as io

    import motes
    from motes import convert, synth

    started = time.perf_counter()
    meta = benchlib.start_meta(benchmark="convert", n=args.n, target=">= 50% of h5py's raw read rate end to end")
    os.makedirs(args.scratch, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="run-", dir=args.scratch)
    rows = []
    try:
        d = synth.vpic(args.n, seed=1, with_id=False)
        raw = sum(v.nbytes for v in d.values())
        # H5Part, as h5py writes it.
        h5part = os.path.join(tmp, "in.h5part")
        with h5py.File(h5part, "w") as f:
            g = f.create_group("Step#0")
            g.attrs["TimeValue"] = 0.0
            for k, v in d.items():
                g.create_dataset(k, data=v)
        # openPMD, as openpmd-api writes it.
        opmd = os.path.join(tmp, "in.h5")
        s = io.Series(opmd, io.Access.create)
        it = s.iterations[0]
        e = it.particles["electrons"]
        for comp in "xyz":
            rc = e["position"][comp]
            rc.reset_dataset(io.Dataset(d[comp].dtype, d[comp].shape))
            rc.store_chunk(d[comp])
            off = e["positionOffset"][comp]
            off.reset_dataset(io.Dataset(np.dtype("float32"), d[comp].shape))
            off.make_constant(0.0)
            m = e["momentum"][comp]
            arr = d["u" + comp]
            m.reset_dataset(io.Dataset(arr.dtype, arr.shape))
            m.store_chunk(arr)
        for name in ("energy", "q"):
            rc = e[name][io.Mesh_Record_Component.SCALAR]
            rc.reset_dataset(io.Dataset(d[name].dtype, d[name].shape))
            rc.store_chunk(d[name])
        s.flush()
        s.close()
        del d

        def h5py_read(path):
            with h5py.File(path, "r") as f:
                def visit(name, obj):
                    if isinstance(obj, h5py.Dataset) and obj.shape and obj.shape[0] == args.n:
                        obj[...]
                f.visititems(visit)

        for fmt, src, dst_name, to in (("h5part", h5part, "out.h5part", "h5part"), ("openpmd", opmd, "out.h5", "openpmd")):
            ref, ref_runs = timed(lambda: h5py_read(src), args.repeat)
            mds = os.path.join(tmp, f"{fmt}.motes")
            imp, imp_runs = timed(lambda: convert.convert(src, mds, overwrite=True), args.repeat,
                                  before=lambda: shutil.rmtree(mds, ignore_errors=True))
            dst = os.path.join(tmp, dst_name)
            exp, exp_runs = timed(lambda: convert.convert(mds, dst, dst_format=to, overwrite=True), args.repeat)
            assert motes.open(mds).count() == args.n
            # The same import with a 64 MiB memory limit: external spatial sort into part files.
            bnd, bnd_runs = timed(lambda: convert.convert(src, mds, overwrite=True,
                                                          write_options={"memory_limit": 64 << 20}), args.repeat)
            parts = motes.open(mds).source().part_count
            for name, secs, runs in (("h5py_read", ref, ref_runs), ("import", imp, imp_runs), ("export", exp, exp_runs),
                                     (f"import_64MiB_limit ({parts} parts)", bnd, bnd_runs)):
                row = dict(format=fmt, what=name, seconds=secs, runs=runs, mb_per_s=raw / secs / 1e6,
                           ratio_to_h5py_read=ref / secs)
                rows.append(row)
                print(f"{fmt:<8} {name:<10} {secs:7.3f} s  {row['mb_per_s']:8.1f} MB/s  x{row['ratio_to_h5py_read']:.2f} "
                      "of h5py read", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta["raw_bytes"] = raw
    benchlib.finish(meta, {}, args.out, started, rows=rows)


if __name__ == "__main__":
    main()
