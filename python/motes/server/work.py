"""Running a request's heavy steps (queries, gathers, histograms, estimates, encodings) in
worker threads, at most ``--workers`` at once, and stopping them: when the client
disconnects, its query's token is cancelled; past ``--query-timeout`` its deadline stops
it. The C++ core checks both between chunks of work and raises CancelledError; a remote
dataset's reads made in the step's thread stop too (motes.remote.bounded)."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Optional

import anyio
import anyio.to_thread

from .. import remote
from .._core import CancelToken
from ..errors import CancelledError, MotesError
from .errors import HTTPError, of_motes_error


class Job:
    """The work of one request. ``query()`` gives the keyword arguments that tie a query of
    the Python API to it (token, time left, threads)."""

    def __init__(self, limiter: anyio.CapacityLimiter, timeout: float, threads: int,
                 after_work: Callable[[], None] = lambda: None):
        self.limiter, self.timeout, self.threads, self.after_work = limiter, timeout, threads, after_work
        self.token = CancelToken()
        self.deadline: Optional[float] = None  # set when its first step starts running
        self.disconnected = False

    def query(self, limited: bool = True) -> Dict[str, Any]:
        """cancel=, threads= and (unless not ``limited``) timeout= for the Python API."""
        out: Dict[str, Any] = {"cancel": self.token, "threads": self.threads}
        if limited:
            out["timeout"] = self.time_left()
        return out

    def time_left(self) -> float:
        left = self.deadline - time.monotonic() if self.deadline is not None else self.timeout
        if left <= 0:
            raise self.timeout_error()
        return left

    def timeout_error(self) -> HTTPError:
        return HTTPError(408, "timeout", f"the query ran longer than the limit of {self.timeout:g} s "
                                         "(--query-timeout) and was stopped; ask for less (fewer cells, a lower "
                                         "quality or budget, a narrower box)")

    async def run(self, fn: Callable[..., Any], *args: Any, limited: bool = True) -> Any:
        """fn(*args) in a worker thread, its remote reads bounded by the job's token and (when
        ``limited``) its deadline; motes errors become HTTP errors (a stopped query: 408 past
        the deadline, 499 when the client left; also when the stop reached a remote read, which
        the core reports as a storage error)."""
        def start():
            if self.deadline is None:
                self.deadline = time.monotonic() + self.timeout
            with remote.bounded(self.deadline if limited else None, self.token):
                return fn(*args)

        try:
            return await anyio.to_thread.run_sync(start, limiter=self.limiter)
        except CancelledError:
            raise self.stopped() from None
        except MotesError as e:
            if self.token.cancelled or (limited and self.deadline is not None and time.monotonic() >= self.deadline):
                raise self.stopped() from None
            raise of_motes_error(e) from None
        finally:
            self.after_work()

    async def light(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args), a short piece of I/O for the request (a manifest, opening a species), in
        a thread of its own rather than a query worker; its remote reads stop when the client
        leaves or after --query-timeout seconds (a store that stalls: 408)."""
        deadline = time.monotonic() + self.timeout

        def start():
            with remote.bounded(deadline, self.token):
                return fn(*args)

        try:
            return await anyio.to_thread.run_sync(start)
        except MotesError:
            if self.disconnected or self.token.cancelled:
                raise self.stopped() from None
            if time.monotonic() >= deadline:
                raise HTTPError(408, "timeout", f"reading the dataset took longer than the limit of {self.timeout:g} s "
                                                "(--query-timeout) and was stopped: its store does not answer") from None
            raise

    def stopped(self) -> HTTPError:
        if self.disconnected or self.token.cancelled:
            return HTTPError(499, "cancelled", "the client disconnected: the query was stopped")
        return self.timeout_error()

    def leave(self) -> None:
        """The client is gone: stop what runs for it."""
        self.disconnected = True
        self.token.cancel()


async def watch_disconnect(receive, job: Job) -> None:
    """Reads the request's ASGI channel until the client disconnects, then stops its job.
    (A GET has no body: the only other message is its empty http.request.)"""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            job.leave()
            return
