"""MPI ranks in the Python layer: the communicator handle the core takes, and failures agreed
between ranks (a rank that gave up before a collective call would leave the others waiting)."""

from __future__ import annotations

from typing import Any

from . import _core
from .errors import MotesError, UsageError


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
