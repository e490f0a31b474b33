"""Background writes (``motes.Writer(..., background=True)``): the steps of a writer written on
a thread of the core, in the order given, while the caller goes on computing.

``write_step`` checks the step, copies its arrays (or borrows them: ``borrow=True``), queues
it and returns a :class:`concurrent.futures.Future`; the layout, indexes, compression and I/O
run on background threads. A step is *acknowledged* when its future completes: it is then
published in the manifest (synced when the writer syncs), so a crash loses only steps whose
futures had not completed, and never a part of one. At most ``max_pending`` steps are queued
or being written: ``write_step`` waits for room rather than letting memory grow. A step's
error is set on its future and raised again by the next ``write_step``, ``flush`` or
``close``. Borrowed arrays must not change until the step's future completes. Steps still
in flight when the interpreter exits are written first, as a file's buffer is flushed.

When steps come faster than they are written the queue reaches ``max_pending``, and the writer
follows the policy it was given (``on_backlog``): ``"block"`` (the default: ``write_step``
waits for room, every step is written) or ``"skip"`` (a step submitted while the queue is full
is not written: its future's result is a :class:`SkippedStep`, and it is listed in the
dataset's manifest, ``Dataset.skipped``, once the steps before it are done). Either way the
writer warns once per backlog (a :class:`BacklogWarning`, and the ``motes.background`` log)
with the rates: steps submitted and written per second, and a step's write time. A backlog
ends when the writer has caught up: a step finds it idle for at least a step's write time.

A process forked while a writer has steps in flight (``os.fork``, multiprocessing's fork
start method) does not have the writer's threads: in the child, the writer's steps are the
parent's to write, ``close``/``flush`` and the exit return at once, and ``write_step`` raises
a :class:`UsageError`. A child that is to write starts with the 'spawn' or 'forkserver'
method, or is forked while no step is in flight (then it may open a writer of its own): a
fork made while motes' threads work may inherit a lock one of them held.
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import dataclasses
import logging
import os
import sys
import threading
import time as _time
import warnings
import weakref
from typing import Any, Callable, ClassVar, List, Optional, Tuple

from . import _core
from .errors import UsageError

__all__ = ["BackgroundSteps", "BacklogWarning", "SkippedStep", "ON_BACKLOG", "check_on_backlog"]

#: The policies of a background writer whose queue is full (``Writer(on_backlog=...)``).
ON_BACKLOG = ("block", "skip")


def check_on_backlog(value: Any) -> str:
    """``value`` if it is one of ON_BACKLOG, else a UsageError naming them."""
    if not isinstance(value, str) or value not in ON_BACKLOG:
        raise UsageError(f"on_backlog must be one of {', '.join(map(repr, ON_BACKLOG))}, got {value!r}")
    return value

log = logging.getLogger("motes.background")
log.addHandler(logging.NullHandler())  # the warning is shown once, by warnings, unless logging is set up


class BacklogWarning(UserWarning):
    """Steps come to a background writer faster than it writes them: its queue is full, and
    it blocks the caller or skips steps (``on_backlog``). Issued once per backlog, with the
    rates."""


@dataclasses.dataclass(frozen=True)
class SkippedStep:
    """A step given to a background writer and not written: the result of its future, and an
    entry of :attr:`motes.Dataset.skipped` (the manifest's list of skipped steps). ``reason``
    is ``"backlog"`` when it was submitted, with ``on_backlog="skip"``, while ``max_pending``
    steps were in flight; else the one given to :meth:`motes.Writer.skip_step` (``motes
    ingest --every K`` gives ``"every"``)."""

    index: int
    time: float
    reason: str
    skipped: ClassVar[bool] = True  # a written step's result (a list of summaries) has none

_OPEN: "weakref.WeakSet[BackgroundSteps]" = weakref.WeakSet()
#: In a forked child: the parent's writers, never destroyed here (their core object would
#: wait for a writer thread that this process does not have).
_ORPHANS: list = []


def _after_fork_in_child() -> None:
    """The child of a fork has none of the writers' threads: each writer open in the parent
    is left to the parent (its steps are written there), unusable here."""
    orphans = list(_OPEN)
    for steps in orphans:
        steps._orphan()
    _OPEN.clear()
    if orphans:  # kept on purpose until the child ends: nanobind is not to call them leaks
        _core.set_leak_warnings(False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_at_exit() -> None:
    """Writes what open background writers still hold before the interpreter goes."""
    for steps in list(_OPEN):
        try:
            steps.close()
        except BaseException as e:  # noqa: BLE001 (nobody is left to raise it to)
            print(f"motes: a background step failed before exit: {type(e).__name__}: {e}", file=sys.stderr)


def _caller_level() -> int:
    """The stacklevel of warnings.warn, called from this module, that names the first frame
    outside the motes package (the caller's write_step)."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class BackgroundSteps:
    """The queue of a writer's steps: the core's BackgroundWriter, and one watcher thread that
    completes each step's future (steps finish in the order submitted)."""

    def __init__(self, core, max_pending: int, on_backlog: str = "block", path: str = "", nice: int = 0):
        """``core``: the DatasetCore the steps are appended to; None for collective MPI writes.
        ``on_backlog``: "block" or "skip" (ON_BACKLOG); ``path`` names the dataset in warnings;
        ``nice``: how much nicer than the process the writer's threads run (0-19, Linux)."""
        check_on_backlog(on_backlog)
        self._bg = _core.BackgroundWriter(core, max_pending, skip=on_backlog == "skip", nice=nice)
        self._on_backlog, self._max_pending, self._path = on_backlog, max_pending, path
        self._collective = core is None  # MPI: skipping is not offered (every rank would have to agree)
        # The last submits: (monotonic time, steps written then), for the rates of a warning.
        self._recent: "collections.deque[Tuple[float, int]]" = collections.deque(maxlen=16)
        self._backlogged = False  # in a backlog, warned already
        self._first: Optional[float] = None  # when the first step was submitted
        self._lock = threading.Lock()
        self._waiting: List[Tuple[int, concurrent.futures.Future, Callable[[Any], Any], Any]] = []
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._pid = os.getpid()  # the process whose threads write the steps
        self._watcher = threading.Thread(target=self._watch, name="motes-background-steps", daemon=True)
        self._watcher.start()
        _OPEN.add(self)

    def submit(self, step: int, time: float, attributes, payload, options, fields, borrow: bool,
               to_result: Callable[[Any], Any], threads: int = 0) -> concurrent.futures.Future:
        """Queues a step (the core's append_step arguments); its future's result is
        ``to_result((summaries, field summaries))``."""
        return self._queued(step, time, lambda: self._bg.submit(step, time, attributes, payload, options, fields,
                                                               copy=not borrow, threads=threads),
                            to_result, (payload, fields) if borrow else None)

    def skip(self, step: int, time: float, reason: str, sync: bool) -> concurrent.futures.Future:
        """Queues a step not written, listed in the manifest with ``reason`` in its turn; its
        future's result is a SkippedStep."""
        if self._collective:
            raise UsageError("a collective (comm=) background writer skips no step: every rank would have to skip it")
        return self._queued(step, time, lambda: (self._bg.skip(step, time, reason, sync), 0, True), None, None,
                            policy=True)

    def submit_parallel(self, comm: int, path: str, step: int, time: float, attributes, payload, options, fields,
                        blocks, borrow: bool) -> concurrent.futures.Future:
        """Queues a collective step (write_step_parallel's arguments, on ``comm``: a communicator
        of this queue alone); its future's result is None (every rank's future completes once
        the step is published)."""
        return self._queued(step, time,
                            lambda: (*_core.submit_parallel(self._bg, comm, path, step, time, attributes, payload,
                                                            options, fields, blocks, copy=not borrow), False),
                            lambda outcome: None, (payload, fields, blocks) if borrow else None)

    def _orphan(self) -> None:
        """In a forked child: the writer is the parent's. Its core object and locks (which the
        parent's threads may have held at the fork) are never used or destroyed here."""
        _ORPHANS.append(self._bg)
        self._closed = True

    def _check_process(self) -> None:
        if self._pid != os.getpid():
            raise UsageError(f"this background writer belongs to process {self._pid}, of which process {os.getpid()} "
                             "is a fork: its writer thread is the parent's, and its steps are written there. "
                             "To write from another process, start it with multiprocessing's 'spawn' or "
                             "'forkserver' method (a fork made while motes' threads work may inherit their locks "
                             "held), or fork when no step is in flight and open a new motes.Writer in the child")

    def _queued(self, step: int, time: float, submit, to_result, borrowed,
                policy: bool = False) -> concurrent.futures.Future:
        """Queues a step through ``submit``; ``policy``: a step the caller skips (no backlog)."""
        self._check_process()
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_running_or_notify_cancel()
        pace, full = self._bg.pace, self._bg.full
        self._recent.append((_time.monotonic(), pace["written"]))
        if self._first is None:
            self._first = self._recent[-1][0]
        if policy:
            pass  # a skip the caller chose: no backlog to tell
        elif full and self._on_backlog == "block":
            self._backlog(pace)  # before waiting for room: the caller learns why it waits
        elif not full and self._backlogged and 0 < pace["idle_seconds"] >= pace["last_step_seconds"]:
            self._backlogged = False  # the writer caught up, with a step's time to spare
        ticket, copied, skipped = submit()
        if skipped:
            to_result, borrowed = (lambda outcome: SkippedStep(step, time, outcome["skipped"])), None
        future.step, future.bytes_copied, future.skipped = step, copied, skipped
        with self._wake:  # borrowed arrays stay referenced until the step is done
            self._waiting.append((ticket, future, to_result, borrowed))
            self._wake.notify()
        if skipped and not policy:
            self._backlog(pace)  # after the future is kept: warnings turned into errors lose nothing
        return future

    def _backlog(self, pace: dict) -> None:
        """A step met a full queue: warns, once per backlog, with the rates."""
        if self._backlogged:
            return
        self._backlogged = True
        (t0, written0), (t1, written1) = self._recent[0], self._recent[-1]
        span = t1 - t0
        if span > 0:
            rates = (f"{(len(self._recent) - 1) / span:.3g} steps/s submitted, {(written1 - written0) / span:.3g} "
                     f"steps/s written over the last {span:.3g} s")
        else:
            rates = "steps submitted faster than the clock tells apart"
        if pace["written"]:
            took = f"a step takes {pace['last_step_seconds']:.3g} s to write"
        else:
            took = f"no step is written yet (the first was given {t1 - self._first:.3g} s ago)"
        n = self._max_pending
        queue = f"{n} step is" if n == 1 else f"{n} steps are"
        if self._on_backlog == "block":
            policy = (f"on_backlog='block': write_step waits while {queue} queued or being written (max_pending), "
                      "so every step is written and the caller is held")
            if not self._collective:
                policy += (". To go on without waiting, pass on_backlog='skip': a step submitted while the queue is "
                           "full is then not written, and is listed in the dataset's manifest (Dataset.skipped, "
                           "motes info)")
        else:
            policy = (f"on_backlog='skip': a step submitted while {queue} queued or being written (max_pending) "
                      "is not written; each is listed in the dataset's manifest (Dataset.skipped, motes info). "
                      "To write every step, pass on_backlog='block' (write_step then waits for room)")
        message = (f"motes: steps come to the background writer of '{self._path}' faster than it writes them: "
                   f"{rates}; {took}. {policy}; a larger max_pending absorbs bursts (each queued step holds a "
                   "copy of its arrays). Warned once per backlog.")
        log.warning(message)
        warnings.warn(BacklogWarning(message), stacklevel=_caller_level())

    def _watch(self) -> None:
        while True:
            with self._wake:
                while not self._waiting and not self._closed:
                    self._wake.wait()
                if not self._waiting:
                    return
                ticket, future, to_result, _ = self._waiting[0]
            self._bg.wait(ticket)
            try:
                result = to_result(self._bg.result(ticket))
            except BaseException as e:  # noqa: BLE001 (the step's error belongs to its future)
                future.set_exception(e)
            else:
                future.set_result(result)
            with self._wake:
                self._waiting.pop(0)
                self._wake.notify_all()

    @property
    def pending(self) -> int:
        return 0 if self._pid != os.getpid() else self._bg.pending

    @property
    def last_written(self) -> Optional[int]:
        self._check_process()
        return self._bg.last_written

    def flush(self) -> None:
        """Waits for every step and its future; raises the first error not yet raised. In a
        forked child, returns at once (the steps are the parent's)."""
        if self._pid != os.getpid():
            return
        try:
            self._bg.flush()
        finally:
            with self._wake:
                while self._waiting:
                    self._wake.wait()

    def close(self) -> None:
        _OPEN.discard(self)
        if self._pid != os.getpid():
            return  # a forked child: the parent writes its steps and stops its threads
        try:
            self.flush()
        finally:
            with self._wake:
                self._closed = True
                self._wake.notify_all()
            self._watcher.join()
