"""Checks of the arguments the Python API hands to the core, so that a bad value is a
``UsageError`` naming the argument, never a binding's ``TypeError`` ("incompatible function
arguments") or an overflow inside the core."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _core
from .errors import UsageError

INT64 = (-(1 << 63), (1 << 63) - 1)
UINT32 = (0, (1 << 32) - 1)
UINT64 = (0, (1 << 64) - 1)


def integer(name: str, value: Any, lo: int, hi: int) -> int:
    """An integer in [lo, hi] (numpy integers too; bools and floats are refused)."""
    if type(value) is int and lo <= value <= hi:  # the common case, without the ABC checks
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise UsageError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not lo <= v <= hi:
        raise UsageError(f"{name} must be in [{lo}, {hi}], got {v}")
    return v


def number(name: str, value: Any, *, finite: bool = True) -> float:
    """A real number (finite unless told)."""
    if type(value) is float and (not finite or math.isfinite(value)):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if finite and not math.isfinite(v):
        raise UsageError(f"{name} must be a finite number, got {v}")
    return v


def step(value: Any) -> int:
    return integer("step", value, *INT64)


def threads(value: Any) -> int:
    return integer("threads", value, *UINT32)


def cancel_token(value: Any) -> Any:
    """A motes.CancelToken."""
    if not isinstance(value, _core.CancelToken):
        raise UsageError(f"cancel must be a motes.CancelToken, got {type(value).__name__}")
    return value


def timeout(value: Any) -> float:
    """A time limit in seconds: a number > 0 (infinity: none)."""
    t = number("timeout", value, finite=False)
    if not t > 0:
        raise UsageError(f"timeout must be a number of seconds > 0, got {value!r}")
    return t


def text(name: str, value: Any) -> str:
    """A str the core can take: encodable as UTF-8 (no lone surrogates) and without NUL."""
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, got {type(value).__name__}")
    if value.isascii() and "\0" not in value:  # the common case: no surrogates possible
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = value[e.start:e.end].encode("utf-8", "surrogateescape")
        raise UsageError(f"{name} is not valid text: {bad!r} at position {e.start + 1} is not UTF-8") from None
    if "\0" in value:
        raise UsageError(f"{name} holds a NUL character at position {value.index(chr(0)) + 1}")
    return value


def names(name: str, value: Any) -> List[str]:
    """A list or tuple of column names."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise UsageError(f"{name} must be a list of column names, got {type(value).__name__}")
    return [text(name, v) for v in value]


def where(value: Optional[str]) -> str:
    return "" if value is None else text("the expression", value)


def path(value: Union[str, os.PathLike]) -> str:
    try:
        p = os.fspath(value)
    except TypeError:
        raise UsageError(f"a path must be a str or os.PathLike, got {type(value).__name__}") from None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    return text("the path", p)


def quality(value: Any) -> Tuple[float, float]:
    """quality=q (the range (0, q)) or (q0, q1) as two floats; their range is the core's
    check (``check_query_spec``: each in [0, 1], q0 <= q1)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise UsageError("quality must be a number or a (from, to) pair")
        return number("quality", value[0]), number("quality", value[1])
    return 0.0, number("quality", value)


def attributes(name: str, value: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """A mapping of attributes as a dict the core takes, checked by the core now (before
    anything is written, and on every rank of a parallel write): JSON values (dict with str
    keys, list, tuple, str, int, float but NaN and infinity, bool, None), nested at most as
    deep as the core allows. They cross into the core as Python objects, not as text."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError(f"{name} must be a mapping (a JSON object), got {type(value).__name__}")
    attrs = dict(value)
    _core.check_attributes(attrs, name)
    return attrs


def member(name: str, enum_type: Any, value: Any) -> Any:
    """A member of one of the core's enums (Compression, AggregationMethod), or its name."""
    if isinstance(value, enum_type):
        return value
    names = list(enum_type.__members__)
    if isinstance(value, str) and value in names:
        return enum_type[value]
    raise UsageError(f"{name} must be one of {', '.join(map(repr, names))}, got {value!r}")


def compression(value: Any) -> Any:
    """How values are stored: a name of the core's Compression ("lossless", "none")."""
    return member("compression", _core.Compression, value)


def error_bounds(value: Any) -> Dict[str, float]:
    """Column -> absolute error bound (finite, > 0)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError("error_bounds must map column names to numbers")
    out = {}
    for name, bound in value.items():
        b = number(f"error bound of column '{name}'", bound)
        if not (b > 0 and math.isfinite(b)):
            raise UsageError(f"error bound of column '{name}' must be a finite number > 0, got {bound!r}")
        out[str(name)] = b
    return out


def histogram_axes(x: Any, y: Any, bins: Any, range: Any):
    """The axes, bin counts and given ranges of a histogram's arguments (``Dataset.histogram``,
    its steps= form, ``motes.mpi``/``motes.dask``), checked: ``(axes, bins, ranges)``, each
    range a ``(min, max)`` of floats or None (the matching values' own)."""
    import numpy as np

    axes = [text("x", x)] if y is None else [text("x", x), text("y", y)]
    nbins = [bins] * len(axes) if np.isscalar(bins) else list(bins)
    if len(nbins) != len(axes):
        raise UsageError("bins must be an int or one int per axis")
    for n in nbins:
        if isinstance(n, bool) or not isinstance(n, (numbers.Integral, float)) or int(n) != n or n < 1:
            raise UsageError("bins must be positive integers")
    if range is None:
        ranges = [None] * len(axes)
    elif y is None:
        ranges = [range]
    else:
        ranges = list(range)
        if len(ranges) != 2:
            raise UsageError("range of a 2-D histogram is ((xmin, xmax), (ymin, ymax))")
    given = []
    for name, r in zip(axes, ranges):
        if r is not None:
            if len(r) != 2:
                raise UsageError(f"range for '{name}' must be (min, max)")
            r = float(r[0]), float(r[1])
            if r[0] > r[1]:
                raise UsageError(f"range for '{name}' has min > max")
            histogram_range(name, r[0], r[1])
        given.append(r)
    return axes, [int(n) for n in nbins], given


def histogram_range(name: str, lo: float, hi: float) -> None:
    """UsageError unless [lo, hi] can be cut into float64 bins: finite ends and a width that
    does not overflow float64 (numpy refuses such ranges too; (-1e308, 1e308) gave edges of
    inf and NaN). The core's histograms check the same before binning."""
    import math

    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise UsageError(f"range for '{name}' must be finite, got ({lo!r}, {hi!r})")
    if not math.isfinite(hi - lo):
        raise UsageError(f"range for '{name}' ({lo!r}, {hi!r}) is too wide: its width overflows float64; "
                         "give a narrower range")
