"""Where a conversion writes: a private staging folder next to the destination, the
recognition of what an existing destination is, and the atomic replacement of it.

* Staging folders are named ``.motes-convert-<host>-<pid>-<random>``; a conversion that
  was killed leaves one behind, and the next conversion into the same folder removes it
  (when its process is gone, or when it is more than a day old).
* ``--overwrite`` replaces only what is recognisably output of the same kind (a motes
  dataset for a motes destination, an HDF5 file for HDF5-based formats, a Parquet file
  for .parquet, ...); anything else is refused with a UsageError naming what is there.
* The replacement is atomic: a file with ``rename``; a directory with
  ``renameat2(RENAME_EXCHANGE)`` where the kernel has it (so the destination is at every
  instant the complete old or the complete new output), else rename-aside-then-rename.
* The staging folder is an implementation detail: inside :func:`shown_as`, :func:`shown`
  writes its paths as the destination's folder, for every warning and error.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import ctypes.util
import errno
import os
import shutil
import socket
import tempfile
import time
import zipfile
from typing import Iterator, Optional

from ..errors import UsageError
from ..leftovers import process_alive

PREFIX = ".motes-convert-"
STALE_SECONDS = 24 * 3600
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def staging_folder(parent: str) -> str:
    """A new private folder in ``parent`` (after removing stale ones of killed conversions)."""
    remove_stale(parent)
    return tempfile.mkdtemp(prefix=f"{PREFIX}{_host()}-{os.getpid()}-", dir=parent)


_SHOWN: contextvars.ContextVar = contextvars.ContextVar("motes_staging_shown", default=None)


@contextlib.contextmanager
def shown_as(staging: str, dst: str) -> Iterator[None]:
    """Inside, :func:`shown` writes paths under the staging folder as under the folder of
    ``dst``, as the caller named it (nothing for the current folder)."""
    token = _SHOWN.set((os.path.abspath(staging) + os.sep, os.path.join(os.path.dirname(dst), "")))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def shown(text):
    """``text`` with the staging folder of :func:`shown_as` replaced by the destination's
    folder (None stays None)."""
    mapping = _SHOWN.get()
    if text is None or mapping is None:
        return text
    return os.fspath(text).replace(*mapping)


def remove_stale(parent: str) -> list:
    """Removes the staging folders in ``parent`` left by conversions that died: those of
    this host whose process is gone, and any older than a day. Returns what it removed."""
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    host, now = _host(), time.time()
    for name in names:
        if not name.startswith(PREFIX):
            continue
        path = os.path.join(parent, name)
        try:
            age = now - os.lstat(path).st_mtime
        except OSError:
            continue
        rest = name[len(PREFIX):].rsplit("-", 2)  # host (may hold '-'), pid, random
        dead = False
        if len(rest) == 3 and rest[0] == host and rest[1].isdigit():
            dead = int(rest[1]) != os.getpid() and not process_alive(int(rest[1]))
        if dead or age > STALE_SECONDS:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _head(path: str, n: int = 1024) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def _is_hdf5(path: str) -> bool:
    # The superblock signature sits at 0, 512, 1024, 2048, ... (HDF5 user blocks).
    with open(path, "rb") as f:
        for at in (0, 512, 1024, 2048, 4096):
            f.seek(at)
            if f.read(8) == _HDF5_SIGNATURE:
                return True
    return False


def what_is(path: str, fmt: str) -> Optional[str]:
    """None when ``path`` is output of format ``fmt`` (so --overwrite may replace it), else a
    description of what it is, for the error message."""
    if os.path.islink(path):
        return "a symbolic link"
    if os.path.isdir(path):
        if fmt == "motes":
            from .._core import DatasetCore

            return None if DatasetCore.exists(path) else "a directory that is not a motes dataset (no manifest.json)"
        if fmt == "openpmd" and any(os.path.exists(os.path.join(path, m)) for m in ("md.idx", "md.0")):
            return None  # an ADIOS2 BP directory
        return "a directory"
    if not os.path.isfile(path):
        return "a special file"
    if fmt in ("openpmd", "h5part", "vtkhdf"):
        return None if _is_hdf5(path) else "a file that is not HDF5"
    if fmt == "parquet":
        return None if _head(path, 4) == b"PAR1" else "a file that is not Parquet"
    if fmt == "arrow":
        return None if _head(path, 6) == b"ARROW1" else "a file that is not an Arrow IPC file"
    if fmt == "npz":
        return None if zipfile.is_zipfile(path) else "a file that is not a .npz (zip) archive"
    if fmt == "csv":
        head = _head(path, 4096)
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as e:
            if e.start < len(head) - 4:  # not just a character cut at the end of the sample
                return "a binary file, not CSV"
        return None if b"\0" not in head else "a binary file, not CSV"
    return "a file of another kind"


def check_overwrite(path: str, fmt: str) -> None:
    """UsageError unless ``path`` is output of format ``fmt`` (what --overwrite may replace)."""
    problem = what_is(path, fmt)
    if problem:
        raise UsageError(f"{path} is {problem}; --overwrite replaces only {fmt} output, refusing to replace it")


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Atomically swaps two paths (Linux renameat2 RENAME_EXCHANGE); False when unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    e = ctypes.get_errno()
    if e in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(e, os.strerror(e), b)


def replace(new: str, target: str, staging: str) -> None:
    """Puts ``new`` (inside the staging folder) at ``target``, atomically where possible.
    A replaced old directory ends up inside ``staging`` (removed with it)."""
    if not os.path.lexists(target) or not os.path.isdir(new) or not os.path.isdir(target):
        os.replace(new, target)  # files (and a directory onto nothing): one atomic rename
        return
    if _exchange(new, target):  # now `new` holds the old output, inside staging
        return
    aside = os.path.join(staging, ".old")
    os.rename(target, aside)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(aside, target)
        raise
