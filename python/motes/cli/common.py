"""What the ``motes`` commands share about datasets and selections: the command error,
optional dependencies, warnings, progress bars, opening a dataset, choosing its steps,
species and columns, and the selection given by the options of :mod:`.options`."""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence

from ..errors import MotesError, NotFoundError, UsageError
from .text import err, significant


class CliError(MotesError):
    """A user-facing error of a command, with its exit status (printed as ``motes: error: ...``)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def require(module: str, extra: str, what: str):
    """Imports an optional dependency or raises a CliError telling how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise CliError(f"{what} needs the '{module.split('.')[0]}' package "
                       f"(pip install 'motes[{extra}]' or pip install {module.split('.')[0]})") from None


@contextlib.contextmanager
def warnings_to_stderr():
    """Warnings of motes (what a conversion left out, and why) as ``motes: warning: ...`` lines."""
    from ..convert.base import ConversionWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ConversionWarning):
            err(f"motes: warning: {message}")
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", ConversionWarning)
        warnings.showwarning = show
        yield


def show_progress(args) -> bool:
    """--progress / --no-progress; by default bars are shown when stderr is a terminal."""
    import sys

    p = getattr(args, "progress", None)
    if p is None:
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False
    return bool(p)


def open_dataset(path: str):
    """Opens a dataset, with a clear message for a missing path."""
    from ..dataset import open as open_path
    from ..remote import is_remote

    if is_remote(path):  # an object store or a web server: its errors name the URL
        return open_path(path)
    if not os.path.exists(path):
        raise NotFoundError(f"no such dataset: '{path}'", filename=path)
    if not os.path.isdir(path):
        raise CliError(f"'{path}' is not a motes dataset (a dataset is a directory)", 1)
    return open_path(path)


def selected_steps(ds, args):
    """The steps of --steps (None without it; resolved by motes.steps.resolve), and the step
    whose schema and species stand for them: --step, or the first of --steps."""
    if args.steps is None:
        return None, args.step
    if args.step is not None:
        raise UsageError("--step and --steps cannot be combined")
    from ..steps import resolve

    ks = resolve(ds, args.steps, args.species)
    return ks, ks[0]


def species_of(ds, step: Optional[int], species: Optional[str]) -> str:
    """Resolves --species (the only species of the step when not given)."""
    st = ds.step(step)
    names = list(st.species)
    if species is None:
        if len(names) == 1:
            return names[0]
        if not names:
            raise UsageError(f"step {st.index} has no species")
        raise UsageError(f"step {st.index} has several species ({', '.join(names)}): choose one with --species")
    if species not in st.species:
        raise UsageError(f"step {st.index} has no species '{species}' (species: {', '.join(names)})")
    return species


def split_columns(text: Optional[str]) -> Optional[List[str]]:
    """The names of --columns A,B,C (None without it)."""
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise UsageError("--columns needs at least one column name (e.g. --columns x,y,energy)")
    return cols


def check_columns(ds, cols: Sequence[str], step: Optional[int], species: str, option: str) -> None:
    known = [c.name for c in ds.schema(step, species)]
    for c in cols:
        if c not in known:
            raise UsageError(f"unknown column '{c}' in {option} (columns: {', '.join(known)})")


def quality(args):
    """--quality Q, or the (Q0, Q1) of --quality-range; None: the core's (every particle)."""
    if getattr(args, "quality_range", None) is not None:
        q0, q1 = args.quality_range
        if q0 > q1:
            raise UsageError(f"--quality-range: Q0 must be <= Q1, got {q0} > {q1}")
        return (q0, q1)
    return getattr(args, "quality", None)


def selection_kwargs(args, species: str) -> Dict[str, Any]:
    """The selection options as keywords of Dataset.query and the analyses."""
    return dict(where=args.where, box=args.box, quality=quality(args), fraction=getattr(args, "fraction", None),
                step=args.step, species=species, threads=args.threads)


def describe_selection(args) -> str:
    parts = []
    if args.where:
        parts.append(f"where {args.where}")
    if args.box:
        b = [significant(v) for v in args.box]
        parts.append(f"box [{b[0]}, {b[3]}]x[{b[1]}, {b[4]}]x[{b[2]}, {b[5]}]")
    q = quality(args)
    if q is not None:
        parts.append(f"quality {q[0]:g}..{q[1]:g}" if isinstance(q, tuple) else f"quality {q:g}")
    if getattr(args, "fraction", None) is not None:
        parts.append(f"fraction {args.fraction:g}")
    return ", ".join(parts)


def output_kind(path: str, allowed: Sequence[str], option: str = "-o") -> str:
    """The file type of an output path (its extension), one of ``allowed``."""
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in allowed:
        raise UsageError(f"{option} {path}: unsupported file type '.{ext}' (use " +
                         ", ".join("." + a for a in allowed) + ")")
    return ext
