#!/usr/bin/env python3
"""SQL over motes with DuckDB (``motes.duckdb.register``) against DuckDB's ``read_parquet`` on
the same columns as a Parquet file in motes' order, same run.

Usage (from the repository root)::

    python bench/duckdb_scan.py                  # 10M particles -> bench/results/duckdb_scan.json
    python bench/duckdb_scan.py --n 1000000 --out /tmp/duckdb_scan.json

Data: ``synth.vpic`` (8 float32 columns) written by motes (defaults); the Parquet file holds
the same rows in motes' file order (so its row groups are as spatially coherent as motes'
treelets, and DuckDB's min/max pruning of row groups works as well as it can), written by
pyarrow in its smallest form for these floats (zstd over byte-stream-split pages, no
dictionary: 228 MB at 10M where pyarrow's defaults make 383 MB, motes 221 MB) and row
groups of 122,880 rows (DuckDB's own default). Queries: a 1 % box
``SELECT count(*), avg(energy) ... WHERE x BETWEEN .. AND y BETWEEN .. AND z BETWEEN ..``
and a 0.1 % tail ``SELECT count(*), avg(ux) ... WHERE energy > t``. Warm: files in the page
cache (motes' decoded blocks dropped before each run: only its index stays, as after an
open); cold: every file evicted and the decoded blocks dropped; sides alternate within each
round. Bytes read from storage are /proc/self/io's. The benchmark measures; it asserts only
that both sides give the same answers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import f32, figure, log, peer  # noqa: E402
from cold import evict, one_percent_box, storage_bytes  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "duckdb_scan.json"))
    args = ap.parse_args()
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    import motes
    import motes.duckdb

    with benchlib.run(args.out, ".tmp-duckdb-", repeat=args.repeat, n=args.n, duckdb=duckdb.__version__,
                      pushes_filters=motes.duckdb.pushes_filters()) as r:
        cols = motes.synth.vpic(args.n, seed=7)
        path, parquet = os.path.join(r.scratch, "p.motes"), os.path.join(r.scratch, "p.parquet")
        motes.write(path, cols, sync=True)
        box = one_percent_box(cols)
        e_t = f32(float(np.quantile(cols["energy"], 1 - 0.001)))
        del cols
        ordered = motes.open(path).query()  # file order
        pq.write_table(ordered.to_arrow(), parquet, compression="zstd", use_dictionary=False,
                       use_byte_stream_split=True, row_group_size=122_880)
        del ordered
        sizes = {"motes_mb": benchlib.du(path) / 1e6, "parquet_mb": os.path.getsize(parquet) / 1e6}
        log(f"{args.n:,} particles: motes {sizes['motes_mb']:.1f} MB, Parquet {sizes['parquet_mb']:.1f} MB")
        con = duckdb.connect()
        con.execute("SET threads TO 2")
        src = motes.duckdb.register(con, "m", path)
        queries = {
            "box": (f"SELECT count(*), avg(energy) FROM {{t}} WHERE x BETWEEN {box[0]!r} AND {box[3]!r} "
                    f"AND y BETWEEN {box[1]!r} AND {box[4]!r} AND z BETWEEN {box[2]!r} AND {box[5]!r}"),
            "tail": f"SELECT count(*), avg(ux) FROM {{t}} WHERE energy > {e_t!r}",
        }
        tables = {"motes": "m", "parquet": f"read_parquet('{parquet}')"}
        for name, sql in queries.items():
            for kind in ("warm", "cold"):
                answers, read = {}, {}

                def empty(_which, k=kind):
                    motes._core.clear_block_cache()
                    if k == "cold":
                        evict([path, parquet])

                def side(which, q=sql):
                    def fn():
                        b0 = storage_bytes()
                        out = con.sql(q.format(t=tables[which])).fetchall()
                        read[which] = storage_bytes() - b0
                        return out
                    return fn

                runs = benchlib.alternated({w: side(w) for w in tables}, repeat=args.repeat, warmup=1, before=empty,
                                           after=lambda w, out: answers.__setitem__(w, out))
                (mc, ma), (pc_, pa_) = answers["motes"][0], answers["parquet"][0]
                assert mc == pc_ and abs(ma - pa_) <= 1e-9 * max(1.0, abs(pa_)), (name, answers)
                m, p = statistics.median(runs["motes"]), statistics.median(runs["parquet"])
                fig = f"{name}_{kind}"
                r.figures[fig] = figure(
                    fig, f"DuckDB, {kind}: {queries[name].format(t='<table>')} ({mc:,} rows match, "
                    f"{args.n:,} particles); motes.duckdb.register against read_parquet of the same columns in "
                    "motes' order", benchlib.ms(m), "ms",
                    peers={"read_parquet": peer(benchlib.ms(p), "ms", p / m, "parquet time / motes time",
                                                read_mb=read["parquet"] / 1e6, runs_s=runs["parquet"])},
                    ratio=p / m, ratio_meaning="read_parquet time / motes time", target=">= 5x faster",
                    met=p / m >= 5, read_mb=read["motes"] / 1e6, runs_s=runs["motes"], rows=mc,
                    pushed=list(src.filters), motes_counters=dict(src.last), **sizes)
                log(f"{fig}: motes {benchlib.ms(m):.1f} ms ({read['motes'] / 1e6:.1f} MB read, pushed "
                    f"{src.filters}), read_parquet {benchlib.ms(p):.1f} ms ({read['parquet'] / 1e6:.1f} MB): "
                    f"{p / m:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
