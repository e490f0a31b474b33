"""Following a dataset that is still being written: :meth:`Dataset.refresh`,
:meth:`Dataset.wait_for_step` and :func:`motes.follow` (in
motes.dataset: this module takes the dataset as an argument and never imports it).

A writer publishes a step by replacing the manifest atomically (a new file renamed over the
old one) once every file of the step is written, so a reader sees a step whole or not at
all. A reader learns of a new manifest from inotify where the kernel has it (an event on the
dataset's directory when a file is renamed into it), else by polling the manifest's identity
(inode, size, modification time) every ``poll`` seconds, then re-reads it. A remote dataset
(an object store, a web server) is polled by fetching its manifest again, at most every
REMOTE_POLL seconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import select
import time
from typing import Optional

from . import _args
from .errors import UsageError

__all__ = ["ManifestWatch", "manifest_identity", "wait_until", "wait_for_step"]

_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_IN_CLOSE_WRITE, _IN_MOVED_TO, _IN_CREATE = 0x8, 0x80, 0x100
_MANIFEST = "manifest.json"
#: The shortest interval between two fetches of a remote dataset's manifest (seconds).
REMOTE_POLL = 0.5
#: The longest single wait for a change (seconds): a longer timeout (1e308, say) waits in
#: such slices, as select() and sleep() take no longer one.
_LONGEST_WAIT = 3600.0


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1, libc.inotify_add_watch  # noqa: B018 (Linux only)
        return libc
    except (OSError, AttributeError):
        return None


class ManifestWatch:
    """Tells when a dataset's manifest may have changed: :meth:`wait` returns at the next
    change (inotify) or after ``poll`` seconds (without inotify), at the latest at the timeout."""

    def __init__(self, path: str, poll: float = 0.05):
        self.path, self.poll = path, float(poll)
        self.fd: Optional[int] = None
        libc = _libc() if os.path.isdir(path) else None  # a URL: polling
        if libc is not None:
            fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
            if fd >= 0:
                if libc.inotify_add_watch(fd, os.fsencode(path), _IN_MOVED_TO | _IN_CLOSE_WRITE | _IN_CREATE) >= 0:
                    self.fd = fd
                else:
                    os.close(fd)

    @property
    def kind(self) -> str:
        return "inotify" if self.fd is not None else "polling"

    def wait(self, timeout: Optional[float]) -> None:
        """Returns when the directory changed, after ``poll`` seconds without inotify, or after
        ``timeout`` seconds (None: no limit)."""
        if self.fd is None:
            time.sleep(self.poll if timeout is None else max(0.0, min(self.poll, timeout)))
            return
        # poll, not select: a process with 1,024 files open gets descriptors select cannot take.
        watch = select.poll()
        watch.register(self.fd, select.POLLIN)
        if watch.poll(None if timeout is None else max(0, math.ceil(timeout * 1000))):
            try:
                while os.read(self.fd, 1 << 16):  # drain the events
                    pass
            except BlockingIOError:
                pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self):
        self.close()


def manifest_identity(path: str):
    """What changes when a manifest is replaced: (inode, size, modification time)."""
    try:
        st = os.stat(os.path.join(path, _MANIFEST))
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def wait_until(ds, ready, timeout: Optional[float], poll: float, what: str):
    """Refreshes ``ds`` at each change of its manifest until ``ready()`` returns something
    other than None, and returns it; TimeoutError naming ``what`` after ``timeout`` seconds."""
    if timeout is not None and not _args.number("timeout", timeout, finite=False) >= 0:
        raise UsageError(f"timeout must be >= 0 seconds or None, got {timeout}")
    if timeout is not None and timeout == float("inf"):
        timeout = None  # no limit
    found = ready()
    if found is not None:
        return found
    deadline = None if timeout is None else time.monotonic() + timeout
    remote = getattr(ds, "remote", False)
    # a remote manifest is fetched again at each look: at most twice a second
    watch = ManifestWatch(ds.path, max(poll, REMOTE_POLL) if remote else poll)  # before the identity is read
    try:
        seen = None
        while True:
            now = object() if remote else manifest_identity(ds.path)
            if now != seen:
                seen = now
                ds.refresh()
                found = ready()
                if found is not None:
                    return found
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"{what} in '{ds.path}' within {timeout:g} s")
            watch.wait(_LONGEST_WAIT if left is None else min(left, _LONGEST_WAIT))
    finally:
        watch.close()


def wait_for_step(ds, after: Optional[int], timeout: Optional[float], poll: float):
    """:meth:`Dataset.wait_for_step`."""
    if after is None:
        after = max(ds.steps) if ds.steps else None
    else:
        after = _args.step(after)
    return wait_until(ds, lambda: next((s for s in ds.step_entries if after is None or s.index > after), None),
                      timeout, poll, "no step" + ("" if after is None else f" after {after}"))


def follow_steps(ds, start: Optional[int], timeout: Optional[float], poll: float):
    """:func:`motes.follow` over the open dataset ``ds``: its steps from index ``start`` on
    (None: all), then each new one, until none arrives for ``timeout`` seconds."""
    done = set()

    def fresh():
        new = [s for s in ds.step_entries if s.index not in done and (start is None or s.index >= start)]
        return new or None

    while True:
        try:
            new = wait_until(ds, fresh, timeout, poll, "no new step")
        except TimeoutError:
            return
        for s in new:
            done.add(s.index)
            yield s
