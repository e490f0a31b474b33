"""Datasets in object stores and on web servers, read in place: ``motes.open("s3://bucket/run.motes")``,
``gs://``, ``az://`` and ``http(s)://host/run.motes`` (any server that answers HTTP range
requests). Read only.

The core reads every file of a remote dataset through one byte-range source: it plans each
query's reads (object, offset, length), coalesces them across gaps of 256 KiB itself (where
a request costs a round trip), and asks for all the ranges of an object at once; this module
sends them as concurrent ranged GETs (obstore's ``get_range_async``, up to PARALLEL at once)
and answers sizes with ``head``. A file's first read fetches its header and its end (the
directory and indexes) together; other misses fetch aligned blocks (kRemoteBlock); what was
fetched is kept with the open files, so a second query asks only for data. Credentials
and endpoints come from the environment as obstore reads them (``AWS_ACCESS_KEY_ID``,
``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``GOOGLE_SERVICE_ACCOUNT``, ``AZURE_STORAGE_...``);
plain ``http://`` endpoints are allowed (a test's server on 127.0.0.1, a site behind a proxy).
Nothing is logged.

A request gives up when it cannot connect within ``MOTES_REMOTE_CONNECT_TIMEOUT`` seconds or
gets no bytes for ``MOTES_REMOTE_READ_TIMEOUT`` seconds (its answer's head, or more of its
body), retries (a 5xx answer, a dropped connection) included: a server that stalls costs one
timeout, and the error (a StorageError) names the object, the byte range and the timeout.
Reads made inside :func:`bounded` (the server's queries) also stop at its deadline or when its
token is cancelled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import math
import os
import re
import threading
import time
from datetime import timedelta
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple
from urllib.parse import urlsplit

from . import _core
from .errors import CancelledError, StorageError, UsageError

__all__ = ["SCHEMES", "is_remote", "core_path", "counters", "timeouts", "bounded"]

#: The URL schemes motes reads remotely.
SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "http", "https")

_lock = threading.Lock()
_prefixes: Dict[str, str] = {}  # store URL -> the core's prefix for it
_ids = itertools.count(1)


def is_remote(path) -> bool:
    """Whether ``path`` is a URL of a scheme motes reads remotely (``SCHEMES``), told by its
    scheme alone, before any store is registered; the core's
    ``under_remote_prefix`` asks whether a path lies under a prefix registered for a store."""
    return isinstance(path, str) and urlsplit(path).scheme.lower() in SCHEMES and "://" in path


class Timeouts(NamedTuple):
    """Seconds a remote request may take to connect, and may wait for its next bytes."""

    connect: float
    read: float


#: The timeouts' environment variables and defaults.
TIMEOUTS = {"connect": ("MOTES_REMOTE_CONNECT_TIMEOUT", 5.0), "read": ("MOTES_REMOTE_READ_TIMEOUT", 30.0)}


def timeouts() -> Timeouts:
    """The timeouts of the stores made from now on: the environment's (TIMEOUTS), else the defaults."""
    values = {}
    for name, (variable, default) in TIMEOUTS.items():
        text = os.environ.get(variable, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            value = math.nan
        if not (0 < value < math.inf):
            raise UsageError(f"{variable}={text!r} is not a number of seconds > 0")
        values[name] = value
    return Timeouts(**values)


def _store(url: str):
    try:
        import obstore.store
    except ImportError:
        raise UsageError(f"reading '{url}' needs obstore: pip install 'motes[remote]' (or pip install obstore)") \
            from None
    limits = timeouts()
    # No bound on a request's whole time (a large range on a slow link takes what it takes): it
    # stops when no bytes come for the read timeout; retries stop when that much time has passed.
    options = {"connect_timeout": timedelta(seconds=limits.connect), "read_timeout": timedelta(seconds=limits.read),
               "timeout": timedelta(days=1)}
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "") if url.startswith("s3") else ""
    if url.startswith("http://") or endpoint.startswith("http://"):
        options["allow_http"] = True
    try:
        store = obstore.store.from_url(url, client_options=options,
                                       retry_config={"retry_timeout": timedelta(seconds=limits.read)})
    except Exception as e:  # noqa: BLE001 (obstore raises several kinds for a URL it cannot use)
        raise UsageError(f"cannot read '{url}': {e}") from None
    return store, limits


def _functions(store, limits: Timeouts):
    import obstore
    from obstore.exceptions import NotFoundError

    def size(key: str, deadline: Optional[float] = None, cancelled=None) -> Optional[int]:
        async def head():
            try:
                return int((await obstore.head_async(store, key))["size"])
            except (NotFoundError, FileNotFoundError):
                return None
            except Exception as e:  # noqa: BLE001 (obstore's errors, each a Rust error's text)
                raise StorageError(f"its size (HEAD): {_reason(e, limits)}") from None

        with _job(deadline, cancelled):
            return _wait(head(), "its size (HEAD)")

    def read(key: str, ranges: List[Tuple[int, int]], deadline: Optional[float] = None, cancelled=None):
        with _job(deadline, cancelled):
            return _wait(_gather(store, key, ranges, limits), _bytes(*ranges[0]) if len(ranges) == 1 else
                         f"{len(ranges)} ranges, {_bytes(*ranges[0])} first")

    return size, read


class _Cancelled:
    """The core's test of a job's token, as bounded() asks a CancelToken (``.cancelled``)."""

    def __init__(self, test):
        self._test = test

    @property
    def cancelled(self) -> bool:
        return bool(self._test())


def _job(deadline: Optional[float], cancelled):
    """The bounds the core gives a read: those of the query (or gather) it reads for, on
    whichever of its threads (the core's current cancellation)."""
    return bounded(deadline, None if cancelled is None else _Cancelled(cancelled))


def _bytes(offset: int, length: int) -> str:
    return f"bytes {offset}-{offset + length - 1}" if length else f"0 bytes at {offset}"


def _reason(e: Exception, limits: Timeouts) -> str:
    """What went wrong, in words, from an obstore error (whose text ends in the Rust error's
    debug dump)."""
    text = str(e)
    summary, _, debug = text.partition("\n\nDebug source:")
    connect = "kind: Connect" in debug
    if connect and ("TimedOut" in debug or "timed out" in debug):
        return f"no connection within {limits.connect:g} s (MOTES_REMOTE_CONNECT_TIMEOUT)"
    if connect:
        os_error = re.search(r'message: "([^"]*)"', debug)
        return "cannot connect" + (f" ({os_error[1]})" if os_error else "")
    if "kind: Timeout" in debug or "TimedOut" in debug:
        return f"no bytes came for {limits.read:g} s (MOTES_REMOTE_READ_TIMEOUT)"
    status = re.search(r"status code: (\d{3}[^:\n]*)", summary)
    if status:
        return f"the server answered {status[1].strip()}"
    summary = summary.strip().splitlines()[0] if summary.strip() else type(e).__name__
    return re.sub(r"^Generic \w+ error: ", "", summary)[:300]


#: Ranged GETs in flight at once for one call of the core (each range its own request: the
#: core coalesced them across its gap already). obstore's get_ranges sends at most 10.
PARALLEL = 64
_loop: Optional[asyncio.AbstractEventLoop] = None


async def _gather(store, key: str, ranges: List[Tuple[int, int]], limits: Timeouts):
    import obstore

    gate = asyncio.Semaphore(PARALLEL)

    async def one(offset: int, length: int):
        async with gate:
            try:
                return await obstore.get_range_async(store, key, start=offset, length=length)
            except Exception as e:  # noqa: BLE001 (obstore's errors, each a Rust error's text)
                raise StorageError(f"{_bytes(offset, length)}: {_reason(e, limits)}") from None

    tasks = [asyncio.ensure_future(one(o, n)) for o, n in ranges]
    try:
        return await asyncio.gather(*tasks)
    finally:
        for t in tasks:  # after a failure, the others are not waited for
            t.cancel()


# ---- a query's deadline and cancellation, for the reads it makes -----------------------------------
_bounds = threading.local()
#: Seconds between two looks at a bound's cancellation token while a read waits.
POLL = 0.05


@contextlib.contextmanager
def bounded(deadline: Optional[float] = None, cancel=None) -> Iterator[None]:
    """Remote reads made by this thread inside the block stop, raising CancelledError, at
    ``deadline`` (a ``time.monotonic()`` time) or once ``cancel`` (a CancelToken) is
    cancelled; blocks nest (the earlier deadline, any token). A query's own timeout= and
    cancel= bound its reads without it, on each of its threads (the core passes them to
    every read: :func:`_job`)."""
    outer = getattr(_bounds, "current", (None, ()))
    deadlines = [d for d in (outer[0], deadline) if d is not None]
    _bounds.current = (min(deadlines) if deadlines else None, outer[1] + ((cancel,) if cancel is not None else ()))
    try:
        yield
    finally:
        _bounds.current = outer


def _wait(coroutine, what: str):
    """Runs ``coroutine`` in motes' own event loop (a daemon thread), from any thread (the
    caller may be a query thread, or a thread whose loop runs already: Jupyter), and waits
    for it within this thread's bound (:func:`bounded`)."""
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="motes-remote", daemon=True).start()
    future = asyncio.run_coroutine_threadsafe(coroutine, _loop)
    deadline, tokens = getattr(_bounds, "current", (None, ()))
    while True:
        wait = POLL if tokens else None
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                future.cancel()
                raise CancelledError(f"{what}: the query was stopped at its deadline (it ran longer than its "
                                     "time limit) while waiting for the store")
            wait = left if wait is None else min(wait, left)
        try:
            return future.result(wait)
        except concurrent.futures.TimeoutError:
            if any(t.cancelled for t in tokens):
                future.cancel()
                raise CancelledError(f"{what}: the query was cancelled while waiting for the store") from None


def core_path(url: str) -> str:
    """The path the core opens for the dataset at ``url``: its store registered (once per
    folder holding datasets), the dataset's name under it."""
    text = url.rstrip("/")
    parts = urlsplit(text)
    head, _, name = text.rpartition("/")
    if not name or not parts.netloc or head.endswith(":/") or head.endswith(":"):
        raise UsageError(f"'{url}' does not name a dataset (scheme://bucket-or-host/.../name.motes)")
    with _lock:
        prefix = _prefixes.get(head)
        if prefix is None:
            size, read = _functions(*_store(head))
            prefix = f"remote://{next(_ids)}/"
            _core.register_remote_store(prefix, size, read, head + "/")
            _prefixes[head] = prefix
    return prefix + name


def counters() -> Dict[str, int]:
    """Calls, ranges and bytes asked of remote stores by this process so far."""
    calls, ranges, nbytes = _core.remote_counters()
    return {"calls": calls, "ranges": ranges, "bytes": nbytes}
