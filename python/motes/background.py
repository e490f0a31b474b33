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

A process forked while a writer has steps in flight (``os.fork``, multiprocessing's fork
start method) does not have the writer's threads: in the child, the writer's steps are the
parent's to write, ``close``/``flush`` and the exit return at once, and ``write_step`` raises
a :class:`UsageError`. A child that is to write starts with the 'spawn' or 'forkserver'
method, or is forked while no step is in flight (then it may open a writer of its own): a
fork made while motes' threads work may inherit a lock one of them held.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import os
import sys
import threading
import weakref
from typing import Any, Callable, List, Optional, Tuple

from . import _core
from .errors import UsageError

__all__ = ["BackgroundSteps"]

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


class BackgroundSteps:
    """The queue of a writer's steps: the core's BackgroundWriter, and one watcher thread that
    completes each step's future (steps finish in the order submitted)."""

    def __init__(self, core, max_pending: int):
        """``core``: the DatasetCore the steps are appended to; None for collective MPI writes."""
        self._bg = _core.BackgroundWriter(core, max_pending)
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
        return self._queued(step, lambda: self._bg.submit(step, time, attributes, payload, options, fields,
                                                         copy=not borrow, threads=threads),
                            to_result, (payload, fields) if borrow else None)

    def submit_parallel(self, comm: int, path: str, step: int, time: float, attributes, payload, options, fields,
                        blocks, borrow: bool) -> concurrent.futures.Future:
        """Queues a collective step (write_step_parallel's arguments, on ``comm``: a communicator
        of this queue alone); its future's result is None (every rank's future completes once
        the step is published)."""
        return self._queued(step, lambda: _core.submit_parallel(self._bg, comm, path, step, time, attributes, payload,
                                                                options, fields, blocks, copy=not borrow),
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

    def _queued(self, step: int, submit, to_result, borrowed) -> concurrent.futures.Future:
        self._check_process()
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_running_or_notify_cancel()
        ticket, copied = submit()
        future.step, future.bytes_copied = step, copied
        with self._wake:  # borrowed arrays stay referenced until the step is done
            self._waiting.append((ticket, future, to_result, borrowed))
            self._wake.notify()
        return future

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
