"""``motes hist``: 1-D and 2-D histograms, as text, PNG plots, .npz or .csv."""

from __future__ import annotations

import contextlib
import os
import time
from typing import List

from .._defaults import HISTOGRAM_BINS, HISTOGRAM_BINS_2D
from ..errors import UsageError, storage_errors
from .common import (check_columns, describe_selection, open_dataset, output_kind, require, selected_steps,
                     selection_kwargs, species_of)
from .options import add_command, add_option, add_selection, positive_int
from .text import duration, out, significant, text_table, thousands


def _axis_label(ds, name: str, step, species) -> str:
    for c in ds.schema(step, species):
        if c.name == name and c.unit_label:
            return f"{name} [{c.unit_label}]"
    return name


def _text_bars(counts, edges, log: bool, max_rows: int = 20, width: int = 40) -> List[str]:
    import numpy as np

    n = len(counts)
    group = max(1, -(-n // max_rows))
    starts = np.arange(0, n, group)
    sums = np.add.reduceat(np.asarray(counts, dtype=np.float64), starts)
    lo = edges[starts]
    hi = edges[np.minimum(starts + group, n)]
    vals = np.log10(1.0 + np.maximum(sums, 0)) if log else np.maximum(sums, 0)
    top = vals.max() if len(vals) and vals.max() > 0 else 1.0
    integer = np.issubdtype(np.asarray(counts).dtype, np.integer)
    labels = [f"[{significant(a, 4)}, {significant(b, 4)}{']' if i == len(starts) - 1 else ')'}" for i, (a, b) in enumerate(zip(lo, hi))]
    values = [thousands(s) if integer else significant(s, 4) for s in sums]
    lw, vw = max(map(len, labels)), max(map(len, values))
    out = []
    for lab, val, v in zip(labels, values, vals):
        bar = "#" * int(round(width * v / top))
        if v > 0 and not bar:
            bar = "."
        out.append(f"  {lab:>{lw}} {val:>{vw}} {bar}")
    if group > 1:
        out.append(f"  ({group} bins per row{', log scale' if log else ''})")
    elif log:
        out.append("  (log scale)")
    return out


@contextlib.contextmanager
def _figure(args, title: str, size):
    """A matplotlib figure and its axes, titled and written to --plot when the block ends
    without error; closed in any case."""
    require("matplotlib", "plot", "--plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    try:
        yield fig, ax
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        with storage_errors(args.plot, "cannot write the plot"):
            fig.savefig(args.plot, dpi=args.dpi)
    finally:
        plt.close(fig)


def _mesh(fig, ax, args, xedges, yedges, c) -> None:
    """Counts ``c`` (rows along y) as a colour mesh with its colour bar (log with --log)."""
    import numpy as np
    from matplotlib.colors import LogNorm

    c = np.asarray(c, dtype=np.float64)
    norm = None
    if args.log:
        c = np.ma.masked_less_equal(c, 0)
        if c.count():
            norm = LogNorm(vmin=float(c.min()), vmax=float(c.max()))
    mesh = ax.pcolormesh(xedges, yedges, c, norm=norm, shading="flat", cmap="viridis")
    what = f"sum of {args.weights}" if args.weights else "count"
    fig.colorbar(mesh, ax=ax, label=what + (" (log)" if args.log else ""))


def _plot(args, ds, species, counts, edges, title: str) -> None:
    import numpy as np

    with _figure(args, title, (7, 5) if len(edges) == 1 else (7, 5.6)) as (fig, ax):
        if len(edges) == 1:
            if args.log:
                ax.stairs(counts, edges[0], baseline=None, color="C0")
                if np.any(np.asarray(counts) > 0):
                    ax.set_yscale("log")
            else:
                ax.stairs(counts, edges[0], fill=True, alpha=0.35)
                ax.stairs(counts, edges[0], color="C0")
            ax.set_xlabel(_axis_label(ds, args.x, args.step, species))
            ax.set_ylabel(f"sum of {args.weights}" if args.weights else "count")
        else:
            _mesh(fig, ax, args, edges[0], edges[1], np.asarray(counts).T)  # pcolormesh wants (ny, nx)
            ax.set_xlabel(_axis_label(ds, args.x, args.step, species))
            ax.set_ylabel(_axis_label(ds, args.y, args.step, species))


def _save_npz(path: str, args, counts, edges, **more) -> None:
    """-o FILE.npz: the counts, the edges, the axes and the filter (and ``more``: the steps)."""
    import numpy as np

    arrays = {"counts": counts, **more, "x": np.array(args.x), "where": np.array(args.where or "")}
    if len(edges) == 1:
        arrays["edges"] = edges[0]
    else:
        arrays.update(xedges=edges[0], yedges=edges[1], y=np.array(args.y))
    if args.weights:
        arrays["weights"] = np.array(args.weights)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _save_hist(path: str, args, counts, edges) -> None:
    import numpy as np

    kind = output_kind(path, ("npz", "csv"))
    if kind == "npz":
        _save_npz(path, args, counts, edges)
        return
    value = "sum" if args.weights else "count"
    vfmt = "%.17g" if args.weights else "%d"
    if len(edges) == 1:
        e = edges[0]
        table = np.column_stack([e[:-1], e[1:], counts])
        np.savetxt(path, table, delimiter=",", header=f"{args.x}_lo,{args.x}_hi,{value}", comments="",
                   fmt=["%.17g", "%.17g", vfmt])
    else:
        xe, ye = edges
        ix, iy = np.meshgrid(np.arange(len(xe) - 1), np.arange(len(ye) - 1), indexing="ij")
        ix, iy = ix.ravel(), iy.ravel()
        table = np.column_stack([xe[ix], xe[ix + 1], ye[iy], ye[iy + 1], np.asarray(counts).ravel()])
        np.savetxt(path, table, delimiter=",", comments="",
                   header=f"{args.x}_lo,{args.x}_hi,{args.y}_lo,{args.y}_hi,{value}",
                   fmt=["%.17g"] * 4 + [vfmt])


def _plot_steps(args, ds, species, counts, edges, steps, title: str) -> None:
    """1-D histograms across steps as an image: X across, one row per step."""
    import numpy as np

    with _figure(args, title, (7, 5.6)) as (fig, ax):
        rows = np.arange(len(steps) + 1) - 0.5  # row i is step steps[i]
        _mesh(fig, ax, args, edges[0], rows, counts)
        ticks = np.unique(np.linspace(0, len(steps) - 1, min(len(steps), 10)).round().astype(int))
        ax.set_yticks(ticks, [str(steps[i]) for i in ticks])
        ax.set_xlabel(_axis_label(ds, args.x, steps[0], species))
        ax.set_ylabel("step")


def _save_hist_steps(path: str, args, counts, edges, steps, times) -> None:
    """-o with --steps: npz (counts of shape (n_steps, ...), steps, times, edges) or csv
    (a step column first, then the single-step csv's columns)."""
    import numpy as np

    kind = output_kind(path, ("npz", "csv"))
    if kind == "npz":
        _save_npz(path, args, counts, edges, steps=steps, times=times)
        return
    value = "sum" if args.weights else "count"
    vfmt = "%.17g" if args.weights else "%d"
    cells = [np.arange(n - 1) for n in map(len, edges)]
    grid = np.meshgrid(np.arange(len(steps)), *cells, indexing="ij")
    i, bins = grid[0].ravel(), [g.ravel() for g in grid[1:]]
    table = [steps[i]]
    header = ["step"]
    for name, e, b in zip([args.x] + ([args.y] if len(edges) == 2 else []), edges, bins):
        table += [e[b], e[b + 1]]
        header += [f"{name}_lo", f"{name}_hi"]
    table.append(np.asarray(counts).ravel())
    np.savetxt(path, np.column_stack(table), delimiter=",", header=",".join(header + [value]), comments="",
               fmt=["%d"] + ["%.17g"] * (len(header) - 1) + [vfmt])


def _report_steps(args, ds, species, res, dt, what) -> None:
    import numpy as np

    two_d = args.y is not None
    counts, edges, steps = res[0], list(res[1:-1]), res[-1]
    axes = " x ".join(f"{name} {len(e) - 1} bins [{significant(e[0])}, {significant(e[-1])}]" for name, e in
                      zip([args.x] + ([args.y] if two_d else []), edges))
    out(f"histograms of {axes} in {thousands(len(steps))} steps" + (f", {what}" if what else "") + f"  ({duration(dt)})")
    rows = []
    for k, c in zip(steps, counts):
        total = significant(c.sum()) if args.weights else thousands(c.sum())
        row = [str(k), significant(ds.step(int(k)).time), total, thousands(np.count_nonzero(c))]
        if np.count_nonzero(c):
            idx = np.unravel_index(int(np.argmax(c)), c.shape)
            row.append(", ".join(f"[{significant(e[j], 4)}, {significant(e[j + 1], 4)})" for e, j in zip(edges, idx)))
        else:
            row.append("-")
        rows.append(row)
    total = "total " + (f"(sum of {args.weights})" if args.weights else "particles")
    out(text_table(["step", "time", total, "non-empty bins", "peak bin"], rows, align=[">", ">", ">", ">", "<"],
                indent="  "))
    if args.plot:
        if two_d:
            raise UsageError("--plot with --steps draws 1-D histograms (one row per step): drop Y, or use --step")
        title = f"{os.path.basename(os.path.normpath(ds.path))}, steps {steps[0]}..{steps[-1]}, {species}"
        if what:
            title += "\n" + what
        _plot_steps(args, ds, species, counts, edges, list(steps), title)
        out(f"wrote plot {args.plot}")
    if args.output:
        times = np.asarray([ds.step(int(k)).time for k in steps], dtype=np.float64)
        with storage_errors(args.output, "cannot write"):
            _save_hist_steps(args.output, args, counts, edges, steps, times)
        out(f"wrote {args.output}")


def cmd_hist(args) -> int:
    import numpy as np

    if args.plot:
        output_kind(args.plot, ("png",), option="--plot")
    if args.output:
        output_kind(args.output, ("npz", "csv"))
    two_d = args.y is not None
    bins = args.bins if args.bins is not None else ([HISTOGRAM_BINS] if not two_d else [HISTOGRAM_BINS_2D])
    if len(bins) > 2 or (len(bins) == 2 and not two_d):
        raise UsageError("--bins takes one number, or two (NX NY) for a 2-D histogram")
    if args.yrange is not None and not two_d:
        raise UsageError("--yrange needs a second column Y (2-D histogram)")
    if args.plot and two_d and args.steps is not None:
        raise UsageError("--plot with --steps draws 1-D histograms (one row per step): drop Y, or use --step")
    ds = open_dataset(args.dataset)
    ks, first = selected_steps(ds, args)
    species = species_of(ds, first, args.species)
    cols = [args.x] + ([args.y] if two_d else []) + ([args.weights] if args.weights else [])
    for k in ([first] if ks is None else ks):
        check_columns(ds, cols, k, species, "the histogram columns" + ("" if ks is None else f" (step {k})"))
    kw = selection_kwargs(args, species)
    if ks is not None:
        del kw["step"]
        kw["steps"] = ks
    if two_d:
        nb = (bins[0], bins[-1])
        rng = None if args.range is None and args.yrange is None else (args.range, args.yrange)
    else:
        nb = bins[0]
        rng = args.range
    t0 = time.perf_counter()
    res = ds.histogram(args.x, args.y, bins=nb, range=rng, weights=args.weights, **kw)
    dt = time.perf_counter() - t0
    if ks is not None:
        _report_steps(args, ds, species, res, dt, describe_selection(args))
        return 0
    counts, edges = res[0], list(res[1:])
    total = counts.sum()
    nonempty = int(np.count_nonzero(counts))
    what = describe_selection(args)
    axes = " x ".join(f"{name} {len(e) - 1} bins [{significant(e[0])}, {significant(e[-1])}]" for name, e in
                      zip([args.x] + ([args.y] if two_d else []), edges))
    out(f"histogram of {axes}" + (f", {what}" if what else "") + f"  ({duration(dt)})")
    if args.weights:
        out(f"  total {significant(total)} (sum of {args.weights}), non-empty bins {thousands(nonempty)} of {thousands(counts.size)}")
    else:
        out(f"  total {thousands(total)} particles, non-empty bins {thousands(nonempty)} of {thousands(counts.size)}")
    if two_d:
        if nonempty:
            i, j = np.unravel_index(int(np.argmax(counts)), counts.shape)
            peak = significant(counts[i, j]) if args.weights else thousands(counts[i, j])
            out(f"  peak {peak} at {args.x} [{significant(edges[0][i])}, {significant(edges[0][i + 1])}), "
                 f"{args.y} [{significant(edges[1][j])}, {significant(edges[1][j + 1])})")
    else:
        for line in _text_bars(counts, edges[0], args.log):
            out(line)
    if args.plot:
        title = f"{os.path.basename(os.path.normpath(ds.path))}, step {ds.step(args.step).index}, {species}"
        if what:
            title += "\n" + what
        _plot(args, ds, species, counts, edges, title)
        out(f"wrote plot {args.plot}")
    if args.output:
        with storage_errors(args.output, "cannot write"):
            _save_hist(args.output, args, counts, edges)
        out(f"wrote {args.output}")
    return 0


DESCRIPTION = """\
Histograms column X (or X against Y) over the selected particles, computed while
traversing the file (nothing is copied). Prints the total, the number of non-empty
bins and, in 1-D, a text bar chart; --plot writes a PNG (needs matplotlib), -o saves
the counts and bin edges. Ranges default to the min/max of the selected values; like
numpy.histogram, bins are half-open except the last, which includes its right edge.
With --steps, one histogram per step over one common range (default: the min/max over
all those steps), printed as a table per step; --plot (1-D) draws them as an image, one
row per step; -o saves counts of shape (steps, bins...), the steps, their times and the
edges (.npz), or a step column before the bins (.csv)."""

EXAMPLES = """\
  motes hist run.motes energy --bins 100 --log
  motes hist run.motes energy --where 'q < 0' --range 0 2 --plot energy.png -o energy.npz
  motes hist run.motes x y --bins 256 128 --log --plot xy.png
  motes hist run.motes x uz --weights energy --box 60 45 0 100 55 50 -o xuz.csv
  motes hist run.motes energy --steps all --range 0 2 --log --plot energy_steps.png -o energy_steps.npz"""


def add_parser(subs) -> None:
    p = add_command(subs, "hist", "1-D or 2-D histogram of the selected particles", DESCRIPTION, EXAMPLES)
    add_option(p, "dataset")
    p.add_argument("x", metavar="X", help="column on the x axis")
    p.add_argument("y", metavar="Y", nargs="?", default=None, help="column on the y axis (2-D histogram)")
    g = p.add_argument_group("binning")
    g.add_argument("--bins", type=positive_int, nargs="+", metavar="N", default=None,
                   help=f"number of bins: N, or NX NY in 2-D (default: {HISTOGRAM_BINS} in 1-D, "
                        f"{HISTOGRAM_BINS_2D} per axis in 2-D)")
    g.add_argument("--range", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="range of X (default: min/max of the selected values)")
    g.add_argument("--yrange", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="range of Y (default: min/max of the selected values)")
    g.add_argument("--weights", metavar="COL", default=None, help="sum this column instead of counting")
    add_option(add_selection(p), "steps")
    g = p.add_argument_group("output")
    g.add_argument("--plot", metavar="OUT.png", default=None, help="write a PNG plot (needs matplotlib)")
    g.add_argument("--log", action="store_true", help="logarithmic count scale (plot and text chart)")
    g.add_argument("--dpi", type=positive_int, default=120, help="resolution of the plot")
    g.add_argument("-o", "--output", metavar="OUT", default=None,
                   help="save counts and edges to OUT.npz (counts, edges | xedges, yedges) or OUT.csv")
    p.set_defaults(func=cmd_hist)
