"""``motes version``."""

from __future__ import annotations



from .. import __version__
from .common import (_out, _sub)


def cmd_version(args) -> int:
    import platform

    import numpy as np

    _out(f"motes {__version__}")
    _out(f"python {platform.python_version()}, numpy {np.__version__}")
    return 0


def add_parser(subs) -> None:
    p = _sub(subs, "version", "print the version", "Prints the versions of motes, Python and numpy.",
             "  motes version")
    p.set_defaults(func=cmd_version)
