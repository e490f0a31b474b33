"""The files a conversion reads, checked before they are opened: regular files only (opening
a FIFO blocks until a writer comes, a device such as /dev/zero never ends), and the paths
a file names (IDX block files, HDF5 external links and storage) confined to the folder of
the file that names them, after resolving symbolic links. A crafted header must not make
``motes convert`` read files outside the dataset it was given into its output.

    check_regular(path, "source file")                  # before a library opens it by name
    fd = open_regular(path, "IDX block file", FormatError)   # opened without blocking, then checked
    real = confined(folder, path, "block file")          # the real path, or FormatError
"""

from __future__ import annotations

import os
import stat
from typing import Optional, Type

from ..errors import FormatError, MotesError

__all__ = ["kind_of", "check_regular", "open_regular", "confined", "inside"]

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


def kind_of(mode: int) -> str:
    """What a file of this st_mode is, in words ("a FIFO", ...; "a regular file")."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def check_regular(path: str, what: str, error: Type[MotesError] = FormatError) -> Optional[os.stat_result]:
    """The stat of ``path`` (links followed) when it is a regular file; ``error`` naming it
    and what it is otherwise. For files a library opens by name (h5py, zipfile): a FIFO
    would block the open. A missing file is left to the opener (NotFoundError there)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: the {what} is {kind_of(st.st_mode)}, not a regular file")
    return st


def open_regular(path: str, what: str, error: Type[MotesError] = FormatError, follow: bool = True) -> int:
    """A read-only descriptor of ``path``, opened without blocking (O_NONBLOCK: a FIFO does
    not wait for a writer) and refused unless it is a regular file (``error`` naming it).
    ``follow=False`` refuses a symbolic link as the last component (O_NOFOLLOW)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: the {what} is {kind_of(st.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def inside(folder: str, path: str) -> bool:
    """Whether ``path``, its links resolved, is ``folder`` (links resolved) or under it."""
    root = os.path.realpath(folder)
    real = os.path.realpath(path)
    return os.path.commonpath([root, real]) == root


def confined(folder: str, path: str, what: str) -> str:
    """The real path of ``path`` (symbolic links resolved, in every component) when it lies
    under ``folder`` (its links resolved too); FormatError naming both otherwise."""
    root = os.path.realpath(folder)
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        shown = path if real == os.path.normpath(path) else f"{path} (which resolves to {real})"
        raise FormatError(f"the {what} {shown} is outside the folder {root}: motes reads only files under "
                          f"the folder of the file that names them")
    return real
