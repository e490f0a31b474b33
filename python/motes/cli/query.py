"""``motes query``: select particles by expression, box and quality; print or save them."""

from __future__ import annotations

import time

from ..errors import UsageError, storage_errors
from .common import (check_columns, describe_selection, open_dataset, output_kind, require, selected_steps,
                     selection_kwargs, species_of, split_columns)
from .options import add_command, add_option, add_selection, nonneg_int, positive_int
from .text import duration, out, significant, text_table, thousands


def _cell(v, kind: str) -> str:
    if kind in "iub":
        return str(int(v))
    return significant(v, 7)


def _empty_table(ds, names, step, species, steps=None):
    import numpy as np

    dtypes = {c.name: c.dtype for c in ds.schema(step if steps is None else steps[0], species)}
    from ..table import Table

    head = {} if steps is None else {"step": np.empty(0, dtype=np.int64)}
    return Table({**head, **{n: np.empty(0, dtype=dtypes[n]) for n in names}})


def _write_npz(ds, kw, names, path, limit) -> int:
    import numpy as np

    t = ds.query(columns=names, **kw)
    arrays = {k: (v[:limit] if limit is not None else v) for k, v in t.items()}
    with open(path, "wb") as fh:  # np.savez would append '.npz' to other names
        np.savez(fh, **arrays)
    return len(next(iter(arrays.values()))) if arrays else 0


def _batches(ds, kw, names, limit, batch_size):
    """query_batches (across steps with kw["steps"]: a step column first), cut at ``limit``
    rows; yields at least one (possibly empty) table."""
    rows = 0
    any_batch = False
    if kw.get("steps") is not None:
        from ..steps import query_batches

        batches = query_batches(ds, columns=names, batch_size=batch_size, **kw)
    else:
        batches = ds.query_batches(columns=names, batch_size=batch_size, **kw)
    for t in batches:
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
        yield _empty_table(ds, names, kw.get("step"), kw["species"], kw.get("steps"))


def _write_csv(ds, kw, names, path, limit, batch_size) -> int:
    import numpy as np

    try:
        import pandas as pd
    except ImportError:
        pd = None
    rows = 0
    with open(path, "w", newline="") as fh:
        first = True
        for t in _batches(ds, kw, names, limit, batch_size):
            if pd is not None:
                t.to_pandas().to_csv(fh, header=first, index=False)
            else:
                cols = list(t)  # names, after the step column of a query across steps
                if first:
                    fh.write(",".join(cols) + "\n")
                fmt = [("%d" if t[n].dtype.kind in "iu" else ("%.9g" if t[n].dtype.itemsize == 4 else "%.17g"))
                       for n in cols]
                if len(t):
                    np.savetxt(fh, np.column_stack([t[n].astype(object) for n in cols]), fmt=fmt, delimiter=",")
            first = False
            rows += len(t)
    return rows


def _write_parquet(ds, kw, names, path, limit, batch_size) -> int:
    pq = require("pyarrow.parquet", "arrow", "writing Parquet")
    rows = 0
    writer = None
    try:
        for t in _batches(ds, kw, names, limit, batch_size):
            at = t.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(path, at.schema)
            writer.write_table(at)
            rows += len(t)
    finally:
        if writer is not None:
            writer.close()
    return rows


def _print_across(ds, args, kw, names, ks, species) -> int:
    """The first --limit matching rows of the steps, a step column first, and the counts."""
    limit = 20 if args.limit is None else args.limit
    one = {k: v for k, v in kw.items() if k != "steps"}
    t0 = time.perf_counter()
    rows, total, all_count, counters = [], 0, 0, {}
    kinds = {c.name: c.dtype.kind for c in ds.schema(ks[0], species)}
    for k in ks:
        try:
            sel = ds.select(step=k, **one)
        except UsageError as e:
            raise UsageError(f"step {k}: {e}") from None
        n = int(sel.size)
        total += n
        all_count += ds.count_total(k, species)
        for key, v in sel.counters.items():
            counters[key] = counters.get(key, 0) + int(v)
        take = min(n, limit - len(rows))
        if take > 0:
            data = {c: sel.gather(c, 0, take) for c in names}
            rows.extend([str(k)] + [_cell(data[c][i], kinds.get(c, data[c].dtype.kind)) for c in names]
                        for i in range(take))
    dt = time.perf_counter() - t0
    if rows:
        out(text_table(["step"] + names, rows))
    what = describe_selection(args)
    msg = f"{thousands(total)} of {thousands(all_count)} particles match in {thousands(len(ks))} steps" + (f" ({what})" if what else "")
    msg += f", found in {duration(dt)}"
    if total > len(rows):
        msg += f"; showing the first {thousands(len(rows))} (use --limit N or -o FILE for more)"
    out(msg)
    if args.verbose:
        out("index: " + ", ".join(f"{k.replace('_', ' ')} {thousands(v)}" for k, v in counters.items()))
    return 0


def cmd_query(args) -> int:
    if args.count and args.output:
        raise UsageError("--count and -o cannot be combined")
    ds = open_dataset(args.dataset)
    ks, first = selected_steps(ds, args)
    species = species_of(ds, first, args.species)
    kw = selection_kwargs(args, species)
    if ks is not None:
        del kw["step"]
        kw["steps"] = ks
    if args.count:
        if ks is None:
            out(ds.count(**kw))
        else:
            series = ds.count(**kw)
            out(text_table(["step", "time", "count"], [[str(s), significant(t), str(c)] for s, t, c in
                                                    zip(series["step"], series["time"], series["count"])]))
        return 0
    names = split_columns(args.columns)
    if names is None:
        names = [c.name for c in ds.schema(first, species)]
    else:
        for k in ([first] if ks is None else ks):
            check_columns(ds, names, k, species, "--columns" if ks is None else f"--columns (step {k})")
    if args.output:
        kind = output_kind(args.output, ("npz", "csv", "parquet", "pq"))
        t0 = time.perf_counter()
        with storage_errors(args.output, "cannot write"):
            if kind == "npz":
                rows = _write_npz(ds, kw, names, args.output, args.limit)
            elif kind == "csv":
                rows = _write_csv(ds, kw, names, args.output, args.limit, args.batch_size)
            else:
                rows = _write_parquet(ds, kw, names, args.output, args.limit, args.batch_size)
        dt = time.perf_counter() - t0
        across = "" if ks is None else f" (with the step column, {thousands(len(ks))} steps)"
        out(f"wrote {thousands(rows)} rows x {len(names)} columns{across} to {args.output} in {duration(dt)}")
        return 0

    if ks is not None:
        return _print_across(ds, args, kw, names, ks, species)
    limit = 20 if args.limit is None else args.limit
    t0 = time.perf_counter()
    sel = ds.select(**kw)
    total = int(sel.size)
    dt = time.perf_counter() - t0
    shown = min(limit, total)
    data = {c: sel.gather(c, 0, shown) for c in names}
    if shown:
        rows = [[_cell(data[c][i], data[c].dtype.kind) for c in names] for i in range(shown)]
        out(text_table(names, rows))
    all_count = ds.count_total(args.step, species)
    what = describe_selection(args)
    msg = f"{thousands(total)} of {thousands(all_count)} particles match" + (f" ({what})" if what else "")
    msg += f", found in {duration(dt)}"
    if total > shown:
        msg += f"; showing the first {thousands(shown)} (use --limit N or -o FILE for more)"
    out(msg)
    if args.verbose:
        out("index: " + ", ".join(f"{k.replace('_', ' ')} {thousands(v)}" for k, v in sel.counters.items()))
    return 0


DESCRIPTION = """\
Selects the particles matching an expression, a spatial box and a level of detail.
Without -o, prints the first --limit rows and the number of matches; with -o, writes
every match (or the first --limit) to a .npz, .csv or .parquet file (csv and parquet
are written in batches, so memory stays bounded). With --steps, the same query over
several steps: a step column comes first, the rows of each step in step order, and
--count prints one count per step (step, time, count)."""

EXAMPLES = """\
  motes query run.motes --where 'energy > 1.3' --limit 10
  motes query run.motes --where 'energy > 1.3' --count
  motes query run.motes --box 0 40 0 100 60 50 --quality 0.1 -o slab.npz
  motes query run.motes --where 'q < 0 and ux > 0.2' --columns id,x,y,z,ux -o fast.parquet
  motes query run.motes --step 0 --species ions --quality-range 0.1 0.2 -o more.csv
  motes query run.motes --steps all --where 'energy > 1.3' --count
  motes query run.motes --steps 0:100:10 --where 'energy > 1.3' --columns id,energy -o hot.parquet"""


def add_parser(subs) -> None:
    p = add_command(subs, "query", "select particles by expression, box and quality", DESCRIPTION, EXAMPLES)
    add_option(p, "dataset")
    add_option(add_selection(p), "steps")
    g = p.add_argument_group("output")
    add_option(g, "columns")
    g.add_argument("-o", "--output", metavar="OUT", default=None, help="write to OUT.npz, OUT.csv or OUT.parquet")
    g.add_argument("--limit", type=nonneg_int, default=None,
                   help="rows to print (default 20); with -o, the most rows to write (default: all)")
    g.add_argument("--count", action="store_true", help="print only the number of matching particles")
    g.add_argument("--batch-size", type=positive_int, default=1 << 20,
                   help="rows per batch when writing csv/parquet")
    g.add_argument("-v", "--verbose", action="store_true", help="also print how much the indexes pruned")
    p.set_defaults(func=cmd_query)
