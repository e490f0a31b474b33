"""The ``motes`` command: inspect, write, query, histogram and verify particle datasets.

Run ``motes --help`` or ``motes COMMAND --help``. Every command is also callable in-process::

    from motes.cli import main
    status = main(["query", "run.motes", "--where", "energy > 1.3", "--count"])

Exit status: 0 on success; on a motes error, the exit code of its kind in the core's error
table (``motes._core.error_kinds``, docs/guide.md#errors): 2 for usage errors (bad
arguments, unknown columns, malformed expressions), 1 for the others (missing or corrupted
files, failed checksums, I/O); 130 on Ctrl-C.

Heavy modules (numpy, pandas, pyarrow, matplotlib) are imported inside the commands that
need them, so ``motes --help`` stays fast. One module per command (``info``, ``write``,
``generate``, ``query``, ``hist``, ``track``, ``verify``, ``convert``, ``ingest``, ``version``,
``serve``, ``paraview-plugin``),
each with ``add_parser(subs)`` and the command's function; no command imports another. What
they share: :mod:`.options` (every option more than one command takes, defined once, and the
argument types), :mod:`.common` (datasets, steps, species and selections), :mod:`.text`
(printing) and :mod:`.writing` (the write of one step, for ``write`` and ``generate``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from .. import __version__
from .._core import error_kinds
from ..convert.spelling import command_line
from ..errors import MotesError, storage_error
from . import convert, generate, hist, info, ingest, paraview, query, serve, track, verify, version, write
from .common import CliError, warnings_to_stderr
from .options import Formatter, numbers_may_be_negative
from .text import err

__all__ = ["main", "build_parser", "CliError"]

# The exit status of each kind of error, from the core's error table.
EXIT_STATUS = {name: exit_code for name, _status, _cls, exit_code, _description in error_kinds}

# The order of the commands in ``motes --help``.
COMMANDS = (info, write, query, hist, track, verify, generate, version, convert, ingest, serve, paraview)


def _exit_status_help() -> str:
    """The exit statuses, from the error table: 'Exit status: 0 success; 1 format, io, ... errors; ...'."""
    kinds: dict = {}
    for name, status in EXIT_STATUS.items():
        kinds.setdefault(status, []).append(name.replace("_", " "))
    listed = "; ".join(f"{status} {', '.join(names)} errors" for status, names in sorted(kinds.items()))
    return f"Exit status: 0 success; {listed}; 130 interrupted."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="motes",
        formatter_class=Formatter,
        description="motes: parallel I/O, indexing and exploration of particle simulation data.\n\n"
                    "A dataset is a directory of steps; each step holds one file per particle species,\n"
                    "laid out in a spatial tree with levels of detail and indexes for fast queries.",
        epilog="examples:\n"
               "  motes generate vpic 1M run.motes --with-id      # a synthetic demo dataset\n"
               "  motes write run.motes particles.parquet --step 10 --time 2.5\n"
               "  motes info run.motes\n"
               "  motes query run.motes --where 'energy > 1.3' --columns x,y,z,energy -o hot.parquet\n"
               "  motes hist run.motes x y --bins 256 128 --log --plot xy.png\n"
               "  motes verify run.motes\n\n"
               "Run 'motes COMMAND --help' for the options of a command.\n" + _exit_status_help(),
    )
    numbers_may_be_negative(parser)
    parser.add_argument("--version", action="version", version=f"motes {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for command in COMMANDS:
        command.add_parser(subs)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``motes`` command line; returns the exit status (never raises for user errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as e:  # --help, --version, argument errors (argparse printed the message)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        with warnings_to_stderr(), command_line():  # messages spell options as the CLI takes them
            return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `motes query ... | head`
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0
    except KeyboardInterrupt:
        err("motes: interrupted")
        return 130
    except CliError as e:
        err(f"motes: error: {e}")
        return e.status
    except MotesError as e:
        err(f"motes: error: {e}")
        return EXIT_STATUS.get(getattr(e, "kind", None), EXIT_STATUS["internal"])
    except OSError as e:  # one the commands did not translate: said the same way (path: reason)
        error = storage_error(e)
        err(f"motes: error: {error}")
        return EXIT_STATUS.get(getattr(error, "kind", None), EXIT_STATUS["io"])

