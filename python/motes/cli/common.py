"""Shared pieces of the ``motes`` commands: errors, output formatting, argument types,
dataset and selection helpers, and the argparse building blocks every command uses."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import os
import sys
import warnings
from typing import Any, Dict, List, Optional, Sequence

from .. import _defaults
from ..errors import MotesError, NotFoundError, UsageError


class CliError(MotesError):
    """A user-facing error of a command, with its exit status (printed as ``motes: error: ...``)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status




def _out(*args: Any) -> None:
    print(*args, file=sys.stdout)


def _err(*args: Any) -> None:
    print(*args, file=sys.stderr)


def _require(module: str, extra: str, what: str):
    """Imports an optional dependency or raises a CliError telling how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise CliError(f"{what} needs the '{module.split('.')[0]}' package "
                       f"(pip install 'motes[{extra}]' or pip install {module.split('.')[0]})") from None


def _num(n: Any) -> str:
    """Integer with thousands separators."""
    return f"{int(n):,}"


def _bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024.0
    return f"{n:.3g} PiB"  # pragma: no cover


def _g(v: Any, digits: int = 6) -> str:
    """Compact number: integers as such, floats with ``digits`` significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(f):
        return "nan"
    return f"{f:.{digits}g}"


def _seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def _rate(n: float, seconds: float, unit: str) -> str:
    if seconds <= 0:
        return f"- {unit}/s"
    r = n / seconds
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= scale:
            return f"{r / scale:.3g} {prefix}{unit}/s"
    return f"{r:.3g} {unit}/s"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Optional[Sequence[str]] = None,
           indent: str = "") -> str:
    """Plain-text table; ``align`` holds '<' or '>' per column (default: right)."""
    align = list(align or [">"] * len(headers))
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]

    def line(cells):
        return indent + "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths)).rstrip()

    out = [line(headers), indent + "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def _count_arg(text: str) -> int:
    """Particle count: 100000, 100_000, 1e5, 100k, 2M, 1G."""
    t = text.strip().replace("_", "").replace(",", "")
    scale = 1
    if t and t[-1] in "kKmMgG":
        scale = {"k": 10**3, "m": 10**6, "g": 10**9}[t[-1].lower()]
        t = t[:-1]
    try:
        v = float(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid particle count '{text}' (e.g. 100000, 1e5, 100k, 2M)") from None
    if v < 0 or v != int(v):
        raise argparse.ArgumentTypeError(f"particle count must be a non-negative integer, got '{text}'")
    return int(v)


def _in_unit_interval(what: str, example: str = ""):
    """An argparse type: a number in [0, 1] (a quality, a fraction)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} '{text}' (a number in [0, 1]{example})") from None
        if not 0.0 <= v <= 1.0:
            raise argparse.ArgumentTypeError(f"{what} must be in [0, 1], got {text}")
        return v

    return parse


_quality_arg = _in_unit_interval("quality")
_fraction_arg = _in_unit_interval("fraction", ", e.g. 0.01 for 1%")


def _int_at_least(minimum: int):
    """An argparse type: an integer >= minimum."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer '{text}'") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {v}")
        return v

    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number '{text}'") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got '{text}'")
    return v


def _key_value(text: str) -> tuple:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected COL=VALUE, got '{text}'")
    k, v = text.split("=", 1)
    k, v = k.strip(), v.strip()
    if not k:
        raise argparse.ArgumentTypeError(f"expected COL=VALUE, got '{text}'")
    return k, v


@contextlib.contextmanager
def _warnings_to_stderr():
    """Warnings of motes (what a conversion left out, and why) as ``motes: warning: ...`` lines."""
    from ..convert.base import ConversionWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ConversionWarning):
            _err(f"motes: warning: {message}")
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", ConversionWarning)
        warnings.showwarning = show
        yield


def _attr_arg(text: str) -> tuple:
    """KEY=VALUE of --attr: VALUE as JSON when it parses (2.5, [1, 2], true, null), else as text."""
    key, value = _key_value(text)
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    if isinstance(parsed, float) and not math.isfinite(parsed):
        parsed = value  # NaN/Infinity are not JSON values: keep the text
    return key, parsed


def _progress(args) -> bool:
    """--progress / --no-progress; by default bars are shown when stderr is a terminal."""
    p = getattr(args, "progress", None)
    if p is None:
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False
    return bool(p)


def _open(path: str):
    """Opens a dataset, with a clear message for a missing path."""
    from ..dataset import open as open_dataset

    if not os.path.exists(path):
        raise NotFoundError(f"no such dataset: '{path}'", filename=path)
    if not os.path.isdir(path):
        raise CliError(f"'{path}' is not a motes dataset (a dataset is a directory)", 1)
    return open_dataset(path)


def _species_of(ds, step: Optional[int], species: Optional[str]) -> str:
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


def _split_columns(text: Optional[str]) -> Optional[List[str]]:
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise UsageError("--columns needs at least one column name (e.g. --columns x,y,energy)")
    return cols


def _check_columns(ds, cols: Sequence[str], step: Optional[int], species: str, option: str) -> None:
    known = [c.name for c in ds.schema(step, species)]
    for c in cols:
        if c not in known:
            raise UsageError(f"unknown column '{c}' in {option} (columns: {', '.join(known)})")


def _quality(args):
    if getattr(args, "quality_range", None) is not None:
        q0, q1 = args.quality_range
        if q0 > q1:
            raise UsageError(f"--quality-range: Q0 must be <= Q1, got {q0} > {q1}")
        return (q0, q1)
    return getattr(args, "quality", None)  # None: the core's (every particle)


def _selection_kwargs(args, species: str) -> Dict[str, Any]:
    return dict(where=args.where, box=args.box, quality=_quality(args), fraction=getattr(args, "fraction", None),
                step=args.step, species=species, threads=args.threads)


def _describe_selection(args) -> str:
    parts = []
    if args.where:
        parts.append(f"where {args.where}")
    if args.box:
        b = args.box
        parts.append(f"box [{_g(b[0])}, {_g(b[3])}]x[{_g(b[1])}, {_g(b[4])}]x[{_g(b[2])}, {_g(b[5])}]")
    q = _quality(args)
    if q is not None:
        parts.append(f"quality {q[0]:g}..{q[1]:g}" if isinstance(q, tuple) else f"quality {q:g}")
    if getattr(args, "fraction", None) is not None:
        parts.append(f"fraction {args.fraction:g}")
    return ", ".join(parts)


def _output_kind(path: str, allowed: Sequence[str], option: str = "-o") -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in allowed:
        raise UsageError(f"{option} {path}: unsupported file type '.{ext}' (use " +
                         ", ".join("." + a for a in allowed) + ")")
    return ext



class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the layout of descriptions/epilogs; shows meaningful defaults."""

    def _get_help_string(self, action):
        h = action.help or ""
        d = action.default
        if ("default" in h or d is None or d is False or d is argparse.SUPPRESS or not action.option_strings
                or isinstance(d, list)):
            return h
        return h + " (default: %(default)s)"


# What argparse takes for a negative number rather than an option: by default only "-5" and
# "-.5" forms, so "--range -1e-3 1" or "--box -2.5e3 ..." would be refused.
_NEGATIVE_NUMBER = re.compile(r"^-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^-inf$")


def _numbers_may_be_negative(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser._negative_number_matcher = _NEGATIVE_NUMBER  # argparse's own hook for this
    return parser


def _sub(subs, name: str, help: str, description: str, epilog: str):
    return _numbers_may_be_negative(subs.add_parser(name, help=help, description=description,
                                                    epilog="examples:\n" + epilog, formatter_class=_Formatter))


def _add_selection(p) -> None:
    g = p.add_argument_group("selection")
    g.add_argument("-w", "--where", metavar="EXPR", default=None,
                   help="filter expression, e.g. \"energy > 1.3 and 10 < x < 20\" (and, or, not, parentheses, "
                        "comparisons (chained: 1 < x < 2), arithmetic + - * / **, abs sqrt exp log log10 sin cos tan)")
    g.add_argument("--box", nargs=6, type=float, metavar=("XMIN", "YMIN", "ZMIN", "XMAX", "YMAX", "ZMAX"),
                   help="spatial box, bounds inclusive")
    q = g.add_mutually_exclusive_group()
    q.add_argument("--quality", type=_quality_arg, metavar="Q", default=None,
                   help="level of detail in [0, 1], linear in tree levels so the particle count grows "
                        "exponentially with Q: a spread-out sample of real particles (0: none, 1: every particle; "
                        f"default: {_defaults.default('quality')})")
    q.add_argument("--quality-range", type=_quality_arg, nargs=2, metavar=("Q0", "Q1"), default=None,
                   help="only the particles that quality Q1 adds to quality Q0 (progressive refinement)")
    q.add_argument("--fraction", type=_fraction_arg, metavar="F", default=None,
                   help="a preview: a share F in [0, 1] of the particles (e.g. 0.01 = 1%%), spread over the whole "
                        "step, coarse levels first; a larger F only adds particles")
    g.add_argument("--step", type=int, default=None, help="step index (default: the last step)")
    g.add_argument("--species", default=None, help="species name (needed when the step has several)")
    g.add_argument("--threads", type=_nonneg_int, default=None, help=_defaults.help_text("query_threads"))


def _add_progress(g) -> None:
    g.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show progress bars on stderr (default: when stderr is a terminal)")

