"""``motes ingest``: an openPMD stream (ADIOS2 SST, a BP4/BP5 file being written) into a
motes dataset, step by step, while the simulation runs (:func:`motes.ingest`, motes/transit.py)."""

from __future__ import annotations

import signal
import sys
import threading

from .common import show_progress
from .options import add_command, add_option, positive_int
from .text import err, out

DESCRIPTION = """\
Reads an openPMD stream step by step and writes each step into a motes dataset with a
background writer: readers (motes.follow, motes serve, the Python API) see each step indexed
as soon as it is committed. SOURCE is an ADIOS2 SST stream (name.sst: the producer's contact
file name.sst.sst is looked for in the working directory), a BP4/BP5 file still being written,
or a variable-based file. Each producer step is released as soon as its arrays are copied.

Backpressure: by default the ingest blocks (every step is written; the producer's own queue
fills while motes writes); --on-backlog skip writes no step that meets a full queue, and
--every K one step in K. Every step not written is named on stderr and listed in the
dataset's manifest (motes info). A restarted ingest continues after the last step the dataset
holds. Ctrl-C or SIGTERM ends it between steps, every step taken committed whole; so does a
producer that ends its stream or disappears."""

EXAMPLES = """\
  motes ingest sim.sst run.motes                       # wait for the producer, write every step
  motes ingest sim.sst run.motes --every 10            # one step in ten
  motes ingest diags/data.bp5 run.motes --timeout 600  # a BP5 file being written
  motes ingest monitor.sst beam.motes --axes x,y,t     # position components on x, y, z"""


def cmd_ingest(args) -> int:
    from ..transit import ingest

    stop = threading.Event()

    def on_signal(signum, frame):  # between steps: no step is torn
        if stop.is_set():
            raise KeyboardInterrupt
        err(f"motes ingest: {signal.Signals(signum).name}: ending after the steps taken are committed "
            "(again to stop at once)")
        stop.set()

    import logging

    named = logging.StreamHandler(sys.stderr)  # the steps not written, named as they go
    named.setFormatter(logging.Formatter("motes ingest: %(message)s"))
    logger = logging.getLogger("motes.ingest")
    logger.addHandler(named)
    logger.setLevel(logging.INFO)
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    bar = None
    if show_progress(args):
        from tqdm.auto import tqdm

        bar = tqdm(desc=f"{args.source} -> {args.dataset}", unit=" steps", file=sys.stderr)

    def progress(report) -> None:
        if bar is None:
            return
        bar.n = len(report.written) + len(report.skipped)
        rate = report.particles / report.seconds if report.seconds > 0 else 0.0
        lag = report.lag_seconds[-1] if report.lag_seconds else 0.0
        bar.set_postfix_str(f"{rate / 1e6:.2f} M particles/s, lag {lag * 1000:.0f} ms, "
                            f"{len(report.skipped)} skipped", refresh=True)

    try:
        report = ingest(args.source, args.dataset, every=args.every, on_backlog=args.on_backlog,
                        timeout=args.timeout, axes=args.axes.split(",") if args.axes else None,
                        species=[args.species] if args.species else None, max_pending=args.max_pending,
                        nice=args.nice, stop=stop, progress=progress, leaf_size=args.leaf_size, threads=args.threads)
    finally:
        logger.removeHandler(named)
        for s, handler in previous.items():
            signal.signal(s, handler)
        if bar is not None:
            bar.close()
    lags = sorted(report.lag_seconds)
    lag = (f", commit {1000 * lags[len(lags) // 2]:.0f} ms after receipt (median), "
           f"{1000 * lags[min(len(lags) - 1, int(0.99 * len(lags)))]:.0f} ms (p99)") if lags else ""
    out(f"ingested {args.source} -> {args.dataset}: {len(report.written)} steps written, "
        f"{len(report.skipped)} skipped, {len(report.already)} already there; {report.particles:,} particles "
        f"in {report.seconds:.1f} s{lag}; {report.ended}")
    return 1 if report.broken else 0


def _default(name: str):
    """The default of motes.ingest's keyword argument ``name``: the command's, written once there."""
    from ..transit import ingest

    return ingest.__kwdefaults__[name]


def add_parser(subs) -> None:
    from ..background import ON_BACKLOG

    every, max_pending, timeout, nice, backlog = (_default(n) for n in ("every", "max_pending", "timeout", "nice",
                                                                         "on_backlog"))
    p = add_command(subs, "ingest", "write an openPMD stream (ADIOS2 SST, a BP file being written) into a dataset "
                                    "as it runs", DESCRIPTION, EXAMPLES)
    p.add_argument("source", metavar="SOURCE", help="openPMD stream: name.sst (ADIOS2 SST), a .bp4/.bp5 file")
    p.add_argument("dataset", metavar="DATASET", help="motes dataset to write (created when absent)")
    p.add_argument("--every", type=positive_int, default=every, metavar="K",
                   help=f"write one step in K; the others are listed as skipped (default {every})")
    p.add_argument("--on-backlog", choices=ON_BACKLOG, default=backlog,
                   help=f"a step that meets a full queue: block (lossless) or skip (listed as skipped); default "
                        f"{backlog}")
    p.add_argument("--max-pending", type=positive_int, default=max_pending, metavar="N",
                   help=f"steps queued or being written at most (default {max_pending}; each holds a copy of its "
                        "arrays)")
    p.add_argument("--timeout", type=float, default=timeout, metavar="SECONDS",
                   help=f"how long to wait for the producer to open the stream (default {timeout:g})")
    p.add_argument("--nice", type=int, default=nice, choices=range(20), metavar="N",
                   help=f"run motes' writer threads N nicer than the process, 0-19 (default {nice}): a simulation on "
                        "the same cores keeps them")
    add_option(p, "axes")
    p.add_argument("--species", default=None, help="ingest only this species")
    p.add_argument("--leaf-size", type=positive_int, default=None, help="particles per leaf of the files written")
    add_option(p, "query_threads", help="threads motes writes with (default or 0: every core; fewer leave cores to "
                                        "the simulation)")
    add_option(p, "progress")
    p.set_defaults(func=cmd_ingest)
