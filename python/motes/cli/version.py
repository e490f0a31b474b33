"""``motes version``."""

from __future__ import annotations

from .. import __version__
from .options import add_command
from .text import out


def cmd_version(args) -> int:
    import platform

    import numpy as np

    out(f"motes {__version__}")
    out(f"python {platform.python_version()}, numpy {np.__version__}")
    return 0


DESCRIPTION = """\
Prints the versions of motes, Python and numpy."""

EXAMPLES = """\
  motes version"""


def add_parser(subs) -> None:
    p = add_command(subs, "version", "print the version", DESCRIPTION, EXAMPLES)
    p.set_defaults(func=cmd_version)
