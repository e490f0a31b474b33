"""In transit: an openPMD stream into a motes dataset, step by step, while the simulation runs
(:func:`motes.ingest`, ``motes ingest SOURCE DATASET``).

The source is read linearly (:func:`motes.convert.openpmd.stream`): an ADIOS2 SST stream, a
BP4/BP5 file still being written, or a variable-based file. Each step's arrays are copied
into memory and the producer's step ended at once, on a reader thread, so the producer never
waits for motes' layout; the step then goes to a background :class:`motes.Writer`, which
publishes it indexed: :func:`motes.follow`, ``motes serve`` and every reader see it as soon as
it is committed.

* **Backpressure** is a choice: ``on_backlog="block"`` (the default, lossless: the reader
  stops taking steps while ``max_pending`` are being written, and the producer's own queue
  fills), or ``"skip"`` (a step that meets a full queue is not written); ``every=K`` writes
  one step in K. Every step not written is named in the log and listed in the dataset's
  manifest (:attr:`motes.Dataset.skipped`, with reason ``"backlog"`` or ``"every"``).
* **Priority**: the writer's threads run nicer than the process (``nice``, 10 by default), so
  a simulation on the same node is not slowed by the ingest's layout and compression.
* **Memory**: the process's malloc keeps what it frees for the next step
  (``_core.keep_freed_memory``), so each step reuses the pages of the one before instead of
  faulting in about a hundred megabytes anew; page faults of one process slowed the producer
  beside it by hundreds of milliseconds a step (bench/README.md, "``ingest.py``").
* **Restartable**: steps up to the last one the dataset holds (written or listed as
  skipped) are passed over, so a restarted ingest continues after it.
* **Stopping**: ``stop`` (a ``threading.Event``; the command sets it on SIGINT or SIGTERM)
  ends the ingest between steps: the steps taken are committed whole, none is torn. A
  producer that ends its stream, or disappears, ends it too, everything before committed.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import threading
import time as _time
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

from . import _args, _core
from .errors import MotesError
from .writer import Writer

__all__ = ["ingest", "IngestReport"]

log = logging.getLogger("motes.ingest")


@dataclasses.dataclass
class IngestReport:
    """What an ingest did: the steps written, those not written and why (``skipped``:
    (index, reason)), those passed over because the dataset held them already (a restart),
    the particles written, the seconds, why it ended (``ended``: "the producer ended the
    stream", "stopped", or the error that broke the stream off, ``broken`` then True), and
    each written step's lag from its receipt to its commit (``lag_seconds``)."""

    written: List[int] = dataclasses.field(default_factory=list)
    skipped: List[Tuple[int, str]] = dataclasses.field(default_factory=list)
    already: List[int] = dataclasses.field(default_factory=list)
    particles: int = 0
    seconds: float = 0.0
    ended: str = ""
    lag_seconds: List[float] = dataclasses.field(default_factory=list)  # receipt -> committed, per step written
    broken: bool = False  # the stream ended with an error, not by the producer closing it


_END = object()  # the reader thread's last item: the stream ended


def _last_decided(path: str) -> Optional[int]:
    """The last step a dataset holds or lists as skipped (None: no dataset, or none)."""
    if not (os.path.isdir(path) and _core.DatasetCore.exists(path)):
        return None
    core = _core.DatasetCore.open(path)
    decided = [int(s["index"]) for s in core.steps] + [int(k["index"]) for k in core.skipped]
    return max(decided) if decided else None


def _reader(steps, out: "queue.Queue", stop: threading.Event) -> None:
    """Takes the stream's steps (each read into memory, the producer's step ended) into ``out``;
    then _END, or the exception that ended the stream."""
    try:
        for st in steps:
            received = _time.monotonic()
            while not stop.is_set():
                try:
                    out.put((st, received), timeout=0.2)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
        out.put(_END)
    except BaseException as e:  # noqa: BLE001 - handed to the ingest, which raises or reports it
        out.put(e)


def ingest(source: str, dataset: str, *, every: int = 1, on_backlog: str = "block", timeout: float = 60.0,
           axes: Optional[Sequence[str]] = None, species: Optional[Sequence[str]] = None, max_pending: int = 2,
           nice: int = 10, stop: Optional[threading.Event] = None, progress: Optional[Callable[[IngestReport], None]] = None,
           **write_options: Any) -> IngestReport:
    """Reads the openPMD stream ``source`` step by step and writes each step into the motes
    dataset ``dataset`` (created when absent) with a background writer; returns an
    :class:`IngestReport` once the producer ends the stream or ``stop`` is set.

    ``every``: write one step in ``every`` (the others are listed as skipped, reason
    "every"); ``on_backlog``: "block" (default) or "skip" (see :class:`motes.Writer`);
    ``max_pending``: steps queued or being written at most. ``nice``: how much nicer than the
    process motes' writer threads run (0-19, Linux): a producer on the same cores keeps them,
    and the ingest writes with what is left (the thread that copies each step out of the
    stream keeps the process's priority, so the producer is released as soon as it can be).
    ``timeout``: seconds to wait for the producer to open the stream. ``axes``, ``species``:
    as for converting openPMD (docs/convert-openpmd.md). ``progress`` is called with the
    report after every step.
    ``write_options`` go to :class:`motes.Writer` (``leaf_size``, ``compression``, ...)."""
    from .background import BacklogWarning, check_on_backlog
    from .convert.motes_format import for_motes, gather, step_attributes
    from .convert.openpmd.reader import stream

    # checked before the wait for the producer
    every = _args.integer("every", every, 1, 1 << 30)
    nice = _args.integer("nice", nice, 0, 19)
    check_on_backlog(on_backlog)
    _core.keep_freed_memory()  # each step's arrays reuse the last one's pages: no fresh faults while the producer runs
    dataset = os.fspath(dataset)
    stop = stop if stop is not None else threading.Event()
    report = IngestReport()
    last = _last_decided(dataset)
    steps = stream(os.fspath(source), timeout=timeout, species=list(species) if species else None, axes=axes)
    taken: "queue.Queue" = queue.Queue(maxsize=1)  # one step read ahead: the producer goes on meanwhile
    reader = threading.Thread(target=_reader, args=(steps, taken, stop), name="motes-ingest-reader", daemon=True)
    t0 = _time.monotonic()
    reader.start()
    pending: List[Tuple[Any, int, float, int]] = []  # (future, step, received, particles)
    ordinal = 0

    def settle(block: bool) -> None:
        """Reports the steps done, oldest first (all of them when ``block``)."""
        while pending and (block or pending[0][0].done()):
            future, index, received, n = pending.pop(0)
            result = future.result()  # a step's error ends the ingest here
            if getattr(result, "skipped", False):
                report.skipped.append((index, result.reason))
                if result.reason == "backlog":
                    log.warning("step %d not written: it came while %d steps were being written (on_backlog='skip'); "
                                "listed in the manifest's skipped steps", index, max_pending)
                else:
                    log.info("step %d not written: one step in %d is (every=%d); listed in the manifest's skipped "
                             "steps", index, every, every)
            else:
                report.written.append(index)
                report.particles += n
                report.lag_seconds.append(_time.monotonic() - received)
            report.seconds = _time.monotonic() - t0
            if progress is not None:
                progress(report)

    with warnings.catch_warnings(), Writer(dataset, background=True, borrow=True, max_pending=max_pending,
                                           on_backlog=on_backlog, nice=nice, **write_options) as w:
        # A producer faster than motes is what the backpressure is for: the report's lag and
        # skipped steps say it (the writer's log, motes.background, still does too).
        warnings.simplefilter("ignore", BacklogWarning)
        try:
            while True:
                try:
                    item = taken.get(timeout=0.2)
                except queue.Empty:
                    settle(False)
                    if stop.is_set():
                        report.ended = "stopped"
                        break
                    continue
                if item is _END:
                    report.ended = "the producer ended the stream"
                    break
                if isinstance(item, BaseException):
                    if not isinstance(item, MotesError):
                        raise item
                    report.broken = True
                    if ordinal or report.already:
                        report.ended = f"the stream broke off (the producer disappeared?): {item}"
                        log.error("%s; every step before it is committed", item)
                    else:
                        report.ended = f"no step came: {item}"
                        log.error("%s", item)
                    break
                st, received = item
                if last is not None and st.index <= last:
                    report.already.append(st.index)
                    log.info("step %d: the dataset holds it already (continuing after step %d)", st.index, last)
                    continue
                ordinal += 1
                if (ordinal - 1) % every:
                    pending.append((w.skip_step(st.index, time=st.time, reason="every"), st.index, received, 0))
                else:
                    sp = {name: for_motes(s) for name, s in st.species.items()}
                    columns = {name: gather(s) for name, s in sp.items()}
                    n = sum(s.count for s in sp.values())
                    future = w.write_step(st.index, columns or None, time=st.time, attributes=step_attributes(st),
                                          units={name: s.units or {} for name, s in sp.items()},
                                          fields={name: st.fields[name] for name in st.fields} or None)
                    pending.append((future, st.index, received, n))
                settle(False)
                if stop.is_set():
                    report.ended = "stopped"
                    break
        finally:
            stop.set()  # the reader thread takes no more steps
            w.flush()
            settle(True)
    report.seconds = _time.monotonic() - t0
    return report
