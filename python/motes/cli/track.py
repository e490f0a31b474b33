"""``motes track``: where particles are in each step, by id (through the files' id index)."""

from __future__ import annotations

import time

from ..errors import UsageError
from .common import open_dataset, output_kind, split_columns
from .options import add_command, add_option
from .text import duration, out, significant


def _ids(text: str):
    """The ids of --ids as Python ints: Dataset.track checks their range and picks the dtype."""
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise UsageError(f"--ids must be integers separated by commas (e.g. --ids 17,42,99), got {text!r}") from None
    if not values:
        raise UsageError("--ids needs at least one id")
    return values


def cmd_track(args) -> int:
    ds = open_dataset(args.dataset)
    if (args.ids is None) == (args.where is None):
        raise UsageError("give --ids or --where (with --at-step), one of them")
    t0 = time.perf_counter()
    t = ds.track(None if args.ids is None else _ids(args.ids), where=args.where, at_step=args.at_step,
                 steps=args.steps, columns=split_columns(args.columns), species=args.species)
    dt = time.perf_counter() - t0
    table = t.table
    if args.output:
        kind = output_kind(args.output, ("csv", "parquet", "npz"))
        if kind == "npz":
            import numpy as np

            with open(args.output, "wb") as fh:
                np.savez(fh, ids=t.ids, steps=np.asarray(t.steps), present=t.present, **t.arrays)
        elif kind == "csv":
            table.to_pandas().to_csv(args.output, index=False)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table.to_arrow(), args.output)
        out(f"{len(t.ids)} ids through {len(t.steps)} steps: {len(table)} rows written to {args.output} "
             f"in {duration(dt)}")
        return 0
    names = list(table)
    out("  ".join(f"{n:>12}" for n in names))
    for i in range(min(len(table), args.limit)):
        out("  ".join(f"{(str(int(table[n][i])) if table[n].dtype.kind in 'iub' else significant(table[n][i], 7)):>12}"
                       for n in names))
    if len(table) > args.limit:
        out(f"... {len(table) - args.limit} more rows (--limit, or -o FILE)")
    lost = int((~t.present).sum())
    out(f"{len(t.ids)} ids through {len(t.steps)} steps: {len(table)} rows, {lost} (step, id) pairs absent, "
         f"in {duration(dt)}")
    return 0


DESCRIPTION = """\
Finds particles by id in every step (or --steps) through each file's id index
(files without one are searched by reading their id column) and prints one row per
step and particle found, or writes them (-o .csv, .parquet: the long table;
.npz: ids, steps, present and one (steps x ids) array per column, NaN where absent).
The ids come from --ids, or from a query (--where) at one step (--at-step)."""

EXAMPLES = """\
  motes track run.motes --ids 17,42,99 --columns x,y,energy
  motes track run.motes --where 'energy > 2' --at-step 0 -o hot.parquet
  motes track run.motes --ids 5 --steps 0:100:10"""


def add_parser(subs) -> None:
    p = add_command(subs, "track", "follow particles by id through the steps", DESCRIPTION, EXAMPLES)
    add_option(p, "dataset")
    p.add_argument("--ids", help="ids separated by commas")
    add_option(p, "where", note="the particles tracked are those matching it at --at-step")
    p.add_argument("--at-step", type=int, dest="at_step", help="the step of --where (default: the last)")
    add_option(p, "steps", help="steps to look at (default: all): 'all'; START:STOP[:STRIDE], the steps whose index "
                                "is in range(START, STOP, STRIDE); or a list 0,5,9 of steps that must exist")
    add_option(p, "columns", help="columns to report (default: all)")
    add_option(p, "species")
    p.add_argument("-o", "--output", help="write to FILE (.csv, .parquet, .npz) instead of printing")
    p.add_argument("--limit", type=int, default=50, help="rows to print (default 50)")
    p.set_defaults(func=cmd_track)
