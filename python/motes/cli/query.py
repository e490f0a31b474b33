"""``motes query``: select particles by expression, box and quality; print or save them."""

from __future__ import annotations

import time

from .._core import UsageError
from ..errors import storage_errors
from .common import (_add_selection, _check_columns, _describe_selection, _g, _nonneg_int, _num, _open, _out, _output_kind, _positive_int, _require, _seconds, _selection_kwargs, _species_of, _split_columns, _sub, _table)


def _cell(v, kind: str) -> str:
    if kind in "iub":
        return str(int(v))
    return _g(v, 7)


def _empty_table(ds, names, step, species):
    import numpy as np

    dtypes = {c.name: c.dtype for c in ds.schema(step, species)}
    from ..dataset import Table

    return Table({n: np.empty(0, dtype=dtypes[n]) for n in names})


def _write_npz(ds, kw, names, out, limit) -> int:
    import numpy as np

    t = ds.query(columns=names, **kw)
    arrays = {k: (v[:limit] if limit is not None else v) for k, v in t.items()}
    with open(out, "wb") as fh:  # np.savez would append '.npz' to other names
        np.savez(fh, **arrays)
    return len(next(iter(arrays.values()))) if arrays else 0


def _batches(ds, kw, names, limit, batch_size):
    """query_batches, cut at ``limit`` rows; yields at least one (possibly empty) table."""
    rows = 0
    any_batch = False
    for t in ds.query_batches(columns=names, batch_size=batch_size, **kw):
        if limit is not None and rows + len(t) > limit:
            t = type(t)({k: v[:limit - rows] for k, v in t.items()})
        if len(t) == 0 and any_batch:
            break
        any_batch = True
        rows += len(t)
        yield t
        if limit is not None and rows >= limit:
            break
    if not any_batch:
        yield _empty_table(ds, names, kw["step"], kw["species"])


def _write_csv(ds, kw, names, out, limit, batch_size) -> int:
    import numpy as np

    try:
        import pandas as pd
    except ImportError:
        pd = None
    rows = 0
    with open(out, "w", newline="") as fh:
        first = True
        for t in _batches(ds, kw, names, limit, batch_size):
            if pd is not None:
                t.to_pandas().to_csv(fh, header=first, index=False)
            else:
                if first:
                    fh.write(",".join(names) + "\n")
                fmt = [("%d" if t[n].dtype.kind in "iu" else ("%.9g" if t[n].dtype.itemsize == 4 else "%.17g"))
                       for n in names]
                if len(t):
                    np.savetxt(fh, np.column_stack([t[n].astype(object) for n in names]), fmt=fmt, delimiter=",")
            first = False
            rows += len(t)
    return rows


def _write_parquet(ds, kw, names, out, limit, batch_size) -> int:
    pq = _require("pyarrow.parquet", "arrow", "writing Parquet")
    rows = 0
    writer = None
    try:
        for t in _batches(ds, kw, names, limit, batch_size):
            at = t.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(out, at.schema)
            writer.write_table(at)
            rows += len(t)
    finally:
        if writer is not None:
            writer.close()
    return rows


def cmd_query(args) -> int:
    if args.count and args.output:
        raise UsageError("--count and -o cannot be combined")
    ds = _open(args.dataset)
    species = _species_of(ds, args.step, args.species)
    kw = _selection_kwargs(args, species)
    if args.count:
        _out(ds.count(**kw))
        return 0
    names = _split_columns(args.columns)
    if names is None:
        names = [c.name for c in ds.schema(args.step, species)]
    else:
        _check_columns(ds, names, args.step, species, "--columns")
    if args.output:
        kind = _output_kind(args.output, ("npz", "csv", "parquet", "pq"))
        t0 = time.perf_counter()
        with storage_errors(args.output, "cannot write"):
            if kind == "npz":
                rows = _write_npz(ds, kw, names, args.output, args.limit)
            elif kind == "csv":
                rows = _write_csv(ds, kw, names, args.output, args.limit, args.batch_size)
            else:
                rows = _write_parquet(ds, kw, names, args.output, args.limit, args.batch_size)
        dt = time.perf_counter() - t0
        _out(f"wrote {_num(rows)} rows x {len(names)} columns to {args.output} in {_seconds(dt)}")
        return 0

    limit = 20 if args.limit is None else args.limit
    t0 = time.perf_counter()
    sel = ds.select(**kw)
    total = int(sel.size)
    dt = time.perf_counter() - t0
    shown = min(limit, total)
    data = {c: sel.gather(c, 0, shown) for c in names}
    if shown:
        rows = [[_cell(data[c][i], data[c].dtype.kind) for c in names] for i in range(shown)]
        _out(_table(names, rows))
    all_count = ds.count_total(args.step, species)
    what = _describe_selection(args)
    msg = f"{_num(total)} of {_num(all_count)} particles match" + (f" ({what})" if what else "")
    msg += f", found in {_seconds(dt)}"
    if total > shown:
        msg += f"; showing the first {_num(shown)} (use --limit N or -o FILE for more)"
    _out(msg)
    if args.verbose:
        _out("index: " + ", ".join(f"{k.replace('_', ' ')} {_num(v)}" for k, v in sel.counters.items()))
    return 0


def add_parser(subs) -> None:
    p = _sub(subs, "query", "select particles by expression, box and quality",
             "Selects the particles matching an expression, a spatial box and a level of detail.\n"
             "Without -o, prints the first --limit rows and the number of matches; with -o, writes\n"
             "every match (or the first --limit) to a .npz, .csv or .parquet file (csv and parquet\n"
             "are written in batches, so memory stays bounded).",
             "  motes query run.motes --where 'energy > 1.3' --limit 10\n"
             "  motes query run.motes --where 'energy > 1.3' --count\n"
             "  motes query run.motes --box 0 40 0 100 60 50 --quality 0.1 -o slab.npz\n"
             "  motes query run.motes --where 'q < 0 and ux > 0.2' --columns id,x,y,z,ux -o fast.parquet\n"
             "  motes query run.motes --step 0 --species ions --quality-range 0.1 0.2 -o more.csv")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    _add_selection(p)
    g = p.add_argument_group("output")
    g.add_argument("--columns", metavar="A,B,C", default=None, help="comma-separated columns (default: all)")
    g.add_argument("-o", "--output", metavar="OUT", default=None, help="write to OUT.npz, OUT.csv or OUT.parquet")
    g.add_argument("--limit", type=_nonneg_int, default=None,
                   help="rows to print (default 20); with -o, the most rows to write (default: all)")
    g.add_argument("--count", action="store_true", help="print only the number of matching particles")
    g.add_argument("--batch-size", type=_positive_int, default=1 << 20,
                   help="rows per batch when writing csv/parquet")
    g.add_argument("-v", "--verbose", action="store_true", help="also print how much the indexes pruned")
    p.set_defaults(func=cmd_query)
