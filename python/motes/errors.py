"""The exceptions of motes. Every one derives from :class:`MotesError`:

* :class:`UsageError` (also a ``ValueError``): a bad argument, an unknown column, a
  malformed expression, input motes cannot store; the command line exits with status 2;
* :class:`FormatError` (also a ``ValueError``): a file that is not what it should be
  (damaged, truncated, failed checksum, not the format its name says); status 1;
* :class:`StorageError` (also an ``OSError``): the operating system refused an I/O
  operation (permission denied, disk full, ...); its message names the path, and
  ``errno``, ``strerror`` and ``filename`` are those of the failure; status 1;
* :class:`NotFoundError`, a :class:`StorageError` that is also a ``FileNotFoundError``:
  the file or dataset does not exist;
* :class:`DatasetReplacedError`: a dataset was deleted and written again (or its published
  steps changed) since a handle read it; open it again to read the new run;
* :class:`CancelledError`: a query stopped before it finished, by the ``CancelToken`` or
  the ``timeout`` it was given.

So ``except motes.MotesError`` catches whatever motes raises on purpose, and
``except OSError`` still catches every I/O failure.

The classes are the core's (``motes._core``), made from its one table of error kinds
(``_core.error_kinds``: class, C status, exit status); the Python layer raises the storage
errors for the ``OSError`` of the libraries it calls with :func:`storage_errors`.
"""

from __future__ import annotations

import atexit
import contextlib
import errno as _errno
import functools
import os
from typing import Iterator, Optional, Union

from ._core import (CancelledError, DatasetReplacedError, FormatError, InternalError, MotesError, NotFoundError,
                    OutOfMemoryError, StorageError, UsageError)

__all__ = ["MotesError", "UsageError", "FormatError", "StorageError", "NotFoundError", "OutOfMemoryError",
           "InternalError", "CancelledError", "DatasetReplacedError", "storage_error", "storage_errors"]




PathLike = Union[str, "os.PathLike[str]"]


def storage_error(e: OSError, path: Optional[PathLike] = None, doing: str = "") -> MotesError:
    """The motes error for an ``OSError`` met while ``doing`` something with ``path``: the
    error itself when it is already a motes error, else a :class:`NotFoundError` (file not
    found) or :class:`StorageError` whose message names the path and says what failed,
    keeping ``errno``, ``strerror`` and the file name of the original."""
    if isinstance(e, MotesError):
        return e
    where = os.fspath(path) if path is not None else (os.fspath(e.filename) if e.filename is not None else "")
    reason = e.strerror or str(e) or type(e).__name__
    if e.filename is not None and os.fspath(e.filename) != where:
        reason = f"{reason}: '{os.fspath(e.filename)}'"
    text = str(e)
    if e.strerror is None and where and where in text:
        message = text  # a message (the core's, say) that already names the path
    else:
        head = f"{where}: " if where else ""
        message = f"{head}{doing} ({reason})" if doing else f"{head}{reason}"
    cls = NotFoundError if isinstance(e, FileNotFoundError) or e.errno == _errno.ENOENT else StorageError
    filename = os.fspath(e.filename) if e.filename is not None else (where or None)
    return cls(message, errno=e.errno if e.errno is not None else (_errno.ENOENT if cls is NotFoundError else None),
               strerror=e.strerror, filename=filename)


@contextlib.contextmanager
def storage_errors(path: Optional[PathLike] = None, doing: str = "") -> Iterator[None]:
    """Raises the ``OSError`` of the block as a motes error (see :func:`storage_error`)."""
    try:
        yield
    except MotesError:
        raise
    except OSError as e:
        raise storage_error(e, path, doing) from e


def storage_method(doing: str):
    """A decorator: the method's OSErrors (of the core, of the file system) surface as
    :class:`StorageError` (:class:`NotFoundError` for a missing file) naming the dataset
    (``self.path``) and ``doing``, as :func:`storage_errors` raises them."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            with storage_errors(self.path, doing):
                return fn(self, *args, **kwargs)

        return wrapper

    return decorate


@atexit.register
def _drop_last_error() -> None:
    """A script that ends on an uncaught error keeps it in ``sys.last_value`` (3.12:
    ``sys.last_exc``) with its traceback, whose frames hold what the script had open (a
    Dataset, a query's QuerySpec) until the interpreter clears ``sys`` among the last of its
    modules: nanobind, torn down before, would then report those objects as leaked. The
    error has been printed by then; it is dropped at exit, before the modules go."""
    import gc
    import sys

    for name in ("last_exc", "last_value", "last_traceback", "last_type"):
        if getattr(sys, name, None) is not None:
            setattr(sys, name, None)
    gc.collect()
