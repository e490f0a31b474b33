"""The options of the ``motes`` commands, defined once: :data:`OPTIONS` holds every option that
more than one command takes (its flags, type, metavar, default and help), and a command adds
those it takes by name with :func:`add_option`. Also the argument types, the help formatter
and :func:`add_command`, which makes a command's parser."""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from .. import _defaults


# --- argument types -------------------------------------------------------------------------

def particle_count(text: str) -> int:
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


def in_unit_interval(what: str, example: str = ""):
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


quality_arg = in_unit_interval("quality")
fraction_arg = in_unit_interval("fraction", ", e.g. 0.01 for 1%")


def int_at_least(minimum: int):
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


positive_int = int_at_least(1)
nonneg_int = int_at_least(0)


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number '{text}'") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got '{text}'")
    return v


def key_value(text: str) -> tuple:
    """COL=VALUE, as (COL, VALUE)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected COL=VALUE, got '{text}'")
    k, v = text.split("=", 1)
    k, v = k.strip(), v.strip()
    if not k:
        raise argparse.ArgumentTypeError(f"expected COL=VALUE, got '{text}'")
    return k, v


def attribute(text: str) -> tuple:
    """KEY=VALUE of --attr: VALUE as JSON when it parses (2.5, [1, 2], true, null), else as text."""
    key, value = key_value(text)
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    if isinstance(parsed, float) and not math.isfinite(parsed):
        parsed = value  # NaN/Infinity are not JSON values: keep the text
    return key, parsed


class _Once(argparse.Action):
    """Stores the value of an option that may be given once (argparse would keep the last)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            several = "; several steps: --steps, e.g. --steps 0,10" if "--steps" in parser._option_string_actions else ""
            parser.error(f"{option_string} is given once{several}")
        setattr(namespace, self.dest, values)


# --- the options ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    flags: Tuple[str, ...]
    settings: Dict[str, Any] = field(default_factory=dict)


STEPS_HELP = ("several steps instead of one: 'all'; START:STOP[:STRIDE], the steps whose index is in "
              "range(START, STOP, STRIDE) (STOP excluded, e.g. 0:100:10 = steps 0, 10, ..., 90 of those present; "
              "open ends: the first/last step); or a list 0,10,20 of steps that must exist; not with --step")

#: Every option more than one command takes: name -> flags and add_argument settings.
OPTIONS: Dict[str, Option] = {
    "dataset": Option(("dataset",), dict(metavar="DATASET", help="dataset directory")),
    "where": Option(("-w", "--where"), dict(
        metavar="EXPR", default=None,
        help="filter expression, e.g. \"energy > 1.3 and 10 < x < 20\" (and, or, not, parentheses, "
             "comparisons (chained: 1 < x < 2), arithmetic + - * / **, abs sqrt exp log log10 sin cos tan)")),
    "box": Option(("--box",), dict(nargs=6, type=float, metavar=("XMIN", "YMIN", "ZMIN", "XMAX", "YMAX", "ZMAX"),
                                   help="spatial box, bounds inclusive")),
    "quality": Option(("--quality",), dict(
        type=quality_arg, metavar="Q", default=None,
        help="level of detail in [0, 1], linear in tree levels so the particle count grows "
             "exponentially with Q: a spread-out sample of real particles (0: none, 1: every particle; "
             f"default: {_defaults.default('quality')})")),
    "quality_range": Option(("--quality-range",), dict(
        type=quality_arg, nargs=2, metavar=("Q0", "Q1"), default=None,
        help="only the particles that quality Q1 adds to quality Q0 (progressive refinement)")),
    "fraction": Option(("--fraction",), dict(
        type=fraction_arg, metavar="F", default=None,
        help="a preview: a share F in [0, 1] of the particles (e.g. 0.01 = 1%%), spread over the whole "
             "step, coarse levels first; a larger F only adds particles")),
    "step": Option(("--step",), dict(type=int, default=None, action=_Once,
                                     help="step index (default: the last step)")),
    "steps": Option(("--steps",), dict(metavar="SPEC", default=None, help=STEPS_HELP)),
    "species": Option(("--species",), dict(default=None, help="species name (needed when the step has several)")),
    "query_threads": Option(("--threads",), dict(type=nonneg_int, default=None,
                                                 help=_defaults.help_text("query_threads"))),
    "columns": Option(("--columns",), dict(metavar="A,B,C", default=None,
                                           help="comma-separated columns (default: all)")),
    "progress": Option(("--progress",), dict(action=argparse.BooleanOptionalAction, default=None,
                                             help="show progress bars on stderr (default: when stderr is a terminal)")),
    "attr": Option(("--attr",), dict(type=attribute, action="append", metavar="KEY=VALUE",
                                     help="a step attribute for every step written (repeatable); VALUE is JSON when it "
                                          "parses (2.5, [1, 2], true), else text")),
    "allow_duplicate": Option(("--allow-duplicate",), dict(
        action="store_true",
        help="write a step read from a file even when the dataset already holds one read from a file of the "
             "same name and content (refused by default: each step records its file's name and SHA-256)")),
    "time_from": Option(("--time-from",), dict(metavar="NAME", default=None,
                                               help=".npz input: the scalar that holds the step time (default: one "
                                                    "named time)")),
    "axes": Option(("--axes",), dict(metavar="C1,C2,C3", default=None,
                                     help="openPMD input: the position components on motes' axes x, y, z, in that "
                                          "order ('-' for an axis with none), e.g. x,y,t; default: the rule of "
                                          "docs/convert-openpmd.md (components named x, y, z; the code's table; "
                                          "the others in order)")),
}


def add_option(group, name: str, *, note: Optional[str] = None, repeatable: bool = False, **settings) -> None:
    """Adds option ``name`` of :data:`OPTIONS` to ``group`` (a parser or an argument group).
    ``note``: a sentence for this command, after the help; ``repeatable``: given several times,
    a list; ``settings``: what this command sets differently (a default, a help of its own)."""
    option = OPTIONS[name]
    kwargs = {**option.settings, **settings}
    if note:
        kwargs["help"] = f"{kwargs['help']}; {note}"
    if repeatable:
        kwargs["action"] = "append"
        kwargs["help"] = f"{kwargs['help']} (repeatable)"
    group.add_argument(*option.flags, **kwargs)


def add_selection(p, *, title: str = "selection", note: Optional[str] = None, previews: bool = True,
                  threads: bool = True, one_step: bool = True):
    """The selection options (--where, --box, --quality, --quality-range, --fraction, --step,
    --species, --threads) in a group ``title``; returns the group."""
    g = p.add_argument_group(title, note)
    add_option(g, "where")
    add_option(g, "box")
    q = g.add_mutually_exclusive_group()
    add_option(q, "quality")
    if previews:
        add_option(q, "quality_range")
    add_option(q, "fraction")
    if one_step:
        add_option(g, "step")
        add_option(g, "species")
    if threads:
        add_option(g, "query_threads")
    return g


# --- parsers --------------------------------------------------------------------------------

class Formatter(argparse.RawDescriptionHelpFormatter):
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


def numbers_may_be_negative(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser._negative_number_matcher = _NEGATIVE_NUMBER  # argparse's own hook for this
    return parser


def add_command(subs, name: str, help: str, description: str, epilog: str) -> argparse.ArgumentParser:
    """The parser of command ``name`` (``epilog``: its examples)."""
    return numbers_may_be_negative(subs.add_parser(name, help=help, description=description,
                                                   epilog="examples:\n" + epilog, formatter_class=Formatter))
