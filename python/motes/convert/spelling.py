"""How a message names an option: the way its reader gives it. A Python caller of
:func:`motes.convert.convert` passes ``read_options={'time_from': NAME}``; a user of the
``motes`` command types ``--time-from NAME``. The command line runs its commands inside
:func:`command_line`; messages (warnings and errors) spell options with :func:`option`::

    option("allow_duplicate=True", "--allow-duplicate")   # the first in Python, the second in the CLI
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

__all__ = ["command_line", "on_command_line", "option"]

_CLI = contextvars.ContextVar("motes_command_line", default=False)


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Messages raised inside are read on the command line: :func:`option` gives the CLI form."""
    token = _CLI.set(True)
    try:
        yield
    finally:
        _CLI.reset(token)


def on_command_line() -> bool:
    """Whether the code runs for the ``motes`` command (inside :func:`command_line`)."""
    return _CLI.get()


def option(python: str, cli: str) -> str:
    """``cli`` inside :func:`command_line`, else ``python``."""
    return cli if _CLI.get() else python
