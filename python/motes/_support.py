"""Helpers the writer and the dataset share: storage errors raised by methods, progress
bars for the core's callbacks, and failures agreed between MPI ranks."""

from __future__ import annotations

import functools
import os
from typing import Any, Dict

from . import _core
from .errors import MotesError, UsageError, storage_errors


def process_alive(pid: int) -> bool:
    """Whether a process of this pid runs on this host (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):  # not a pid this system can have
        return False
    return True


def storage_method(doing: str):
    """A method whose OSErrors (of the core, of the file system) surface as motes.StorageError
    (motes.NotFoundError for a missing file) naming the dataset: see motes.errors."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            with storage_errors(self.path, doing):
                return fn(self, *args, **kwargs)

        return wrapper

    return decorate


class Progress:
    """tqdm bars for the core's (stage, done, total) callbacks."""

    def __init__(self, enabled: bool, desc: str):
        self.enabled = enabled
        self.desc = desc
        self.bars: Dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm.auto import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=f"{self.desc}: {stage}", leave=False)
        bar.n = done
        bar.refresh()

    def callback(self):
        return self if self.enabled else None

    def close(self):
        for bar in self.bars.values():
            bar.close()


def comm_handle(comm: Any) -> int:
    if not getattr(_core, "has_mpi", False):
        raise UsageError("this motes was built without MPI: install an MPI library (e.g. libopenmpi-dev) and rebuild")
    try:
        return int(comm.py2f())
    except AttributeError:
        raise UsageError(f"comm must be an mpi4py communicator, got {type(comm).__name__}") from None


def on_every_rank(comm: Any, fn, stage: str):
    """Runs fn() on every rank of comm (None: serially). When it raises on any rank, every
    rank raises: a rank that gave up before a collective call would leave the others waiting."""
    if comm is None:
        return fn()
    result, error = None, None
    try:
        result = fn()
    except (MotesError, ValueError, TypeError, OSError) as e:
        error = e
    mine = None if error is None else (error_kind(error), f"{type(error).__name__}: {error}")
    failed = [(r, m) for r, m in enumerate(comm.allgather(mine)) if m is not None]
    if failed:
        listed = "; ".join(f"rank {r}: {m[1]}" for r, m in failed[:8])
        more = f"; and {len(failed) - 8} more ranks" if len(failed) > 8 else ""
        # Like the core's agreement: the class of the lowest failed rank's kind, on every rank.
        cls = {name: c for name, _status, c, _exit, _doc in _core.error_kinds}[failed[0][1][0]]
        raise cls(f"{stage} failed on {len(failed)} of {comm.size} ranks ({listed}{more})")
    return result


def error_kind(e: BaseException) -> str:
    """The error table's kind of an exception caught by on_every_rank."""
    if isinstance(e, MotesError):
        return getattr(e, "kind", "internal")
    if isinstance(e, FileNotFoundError):
        return "not_found"
    if isinstance(e, OSError):
        return "io"
    return "usage"  # ValueError, TypeError: the arguments
