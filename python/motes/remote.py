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
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from . import _core
from .errors import UsageError

__all__ = ["SCHEMES", "is_remote", "core_path", "counters"]

#: The URL schemes motes reads remotely.
SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "http", "https")

_lock = threading.Lock()
_prefixes: Dict[str, str] = {}  # store URL -> the core's prefix for it
_ids = itertools.count(1)


def is_remote(path) -> bool:
    return isinstance(path, str) and urlsplit(path).scheme.lower() in SCHEMES and "://" in path


def _store(url: str):
    try:
        import obstore.store
    except ImportError:
        raise UsageError(f"reading '{url}' needs obstore: pip install 'motes[remote]' (or pip install obstore)") \
            from None
    options = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "") if url.startswith("s3") else ""
    if url.startswith("http://") or endpoint.startswith("http://"):
        options["allow_http"] = True
    try:
        return obstore.store.from_url(url, client_options=options or None)
    except Exception as e:  # noqa: BLE001 (obstore raises several kinds for a URL it cannot use)
        raise UsageError(f"cannot read '{url}': {e}") from None


def _functions(store):
    import obstore
    from obstore.exceptions import NotFoundError

    def size(key: str) -> Optional[int]:
        try:
            return int(obstore.head(store, key)["size"])
        except (NotFoundError, FileNotFoundError):
            return None

    def read(key: str, ranges: List[Tuple[int, int]]):
        if len(ranges) == 1:
            offset, length = ranges[0]
            return [obstore.get_range(store, key, start=offset, length=length)]
        return _in_loop(_gather(store, key, ranges))

    return size, read


#: Ranged GETs in flight at once for one call of the core (each range its own request: the
#: core coalesced them across its gap already). obstore's get_ranges sends at most 10.
PARALLEL = 64
_loop: Optional[asyncio.AbstractEventLoop] = None


def _in_loop(coroutine):
    """Runs ``coroutine`` in motes' own event loop (a daemon thread), from any thread: the
    caller may be a query thread, or a thread whose loop runs already (Jupyter)."""
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="motes-remote", daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coroutine, _loop).result()


async def _gather(store, key: str, ranges: List[Tuple[int, int]]):
    import obstore

    gate = asyncio.Semaphore(PARALLEL)

    async def one(offset: int, length: int):
        async with gate:
            return await obstore.get_range_async(store, key, start=offset, length=length)

    return await asyncio.gather(*(one(o, n) for o, n in ranges))


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
            size, read = _functions(_store(head))
            prefix = f"remote://{next(_ids)}/"
            _core.register_remote_store(prefix, size, read, head + "/")
            _prefixes[head] = prefix
    return prefix + name


def counters() -> Dict[str, int]:
    """Calls, ranges and bytes asked of remote stores by this process so far."""
    calls, ranges, nbytes = _core.remote_counters()
    return {"calls": calls, "ranges": ranges, "bytes": nbytes}
