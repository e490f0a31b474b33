"""The parameters of a request, read strictly: each known to the endpoint, given once,
numbers in decimal (finite, ASCII, of bounded length), integers in one spelling only (no
sign but a minus, no leading zeros, no ``-0``: one resource, one URL, one ETag), lists
comma-separated; anything else is a 400 naming the parameter. The token is no parameter of
any endpoint (the guard checked it)."""

from __future__ import annotations

import math
import re
from typing import Iterable, List, Optional, Sequence, Tuple

from .errors import bad_request

_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z", re.ASCII)
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)\Z", re.ASCII)
#: The longest number and integer a parameter may spell (a binary64 needs at most 24
#: characters in its shortest form; an int64 at most 20).
MAX_NUMBER_CHARS = 40
MAX_INTEGER_CHARS = 20
_INT64 = (-(1 << 63), (1 << 63) - 1)


def number(name: str, text: str) -> float:
    """A finite decimal number (``1e-3``, ``0.1``, ``-5``) in ASCII digits; no NaN, infinity,
    ``0x``, spaces."""
    if len(text) > MAX_NUMBER_CHARS or not _NUMBER.match(text):
        raise bad_request(f"{name}: '{_shown(text)}' is not a number (decimal, such as 0.5, -2 or 1e-3, "
                          f"in ASCII digits, at most {MAX_NUMBER_CHARS} characters)")
    v = float(text)
    if not math.isfinite(v):
        raise bad_request(f"{name}: '{_shown(text)}' is not a finite number")
    return v


def integer(name: str, text: str) -> int:
    """An integer in its one spelling: ASCII digits without leading zeros, a minus for
    negatives (not ``-0``, no ``+``), within int64."""
    if len(text) > MAX_INTEGER_CHARS or not _INTEGER.match(text) or text == "-0":
        raise bad_request(f"{name}: '{_shown(text)}' is not an integer (ASCII digits without a sign or leading "
                          "zeros, such as 0, 7 or -3)")
    v = int(text)
    if not _INT64[0] <= v <= _INT64[1]:
        raise bad_request(f"{name}: {text} is out of range (a 64-bit integer)")
    return v


def numbers(name: str, text: str, count: int) -> Tuple[float, ...]:
    """``count`` comma-separated numbers."""
    items = text.split(",")
    if len(items) != count:
        raise bad_request(f"{name} must be {count} comma-separated numbers, got {len(items)}: '{_shown(text)}'")
    return tuple(number(name, t) for t in items)


def _shown(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class Params:
    """The query parameters of a request, checked against the names an endpoint takes."""

    def __init__(self, items: Iterable[Tuple[str, str]], allowed: Sequence[str]):
        self._values = {}
        for name, value in items:
            if name == "token":
                continue
            if name not in allowed:
                known = ", ".join(allowed) if allowed else "none"
                raise bad_request(f"unknown parameter '{_shown(name, 40)}' (parameters of this endpoint: {known})")
            if name in self._values:
                raise bad_request(f"parameter '{name}' is given more than once")
            self._values[name] = value

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def text(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self._values.get(name, default)

    def choice(self, name: str, allowed: Sequence[str]) -> str:
        """One of `allowed` (the first when the parameter is absent)."""
        value = self._values.get(name, allowed[0])
        if value not in allowed:
            names = " or ".join(f"'{a}'" for a in allowed)
            raise bad_request(f"{name} must be {names}, got '{_shown(value, 40)}'")
        return value

    def number(self, name: str, default: Optional[float] = None) -> Optional[float]:
        return number(name, self._values[name]) if name in self._values else default

    def integer(self, name: str, default: Optional[int] = None, minimum: Optional[int] = None) -> Optional[int]:
        if name not in self._values:
            return default
        v = integer(name, self._values[name])
        if minimum is not None and v < minimum:
            raise bad_request(f"{name} must be at least {minimum}, got {v}")
        return v

    def numbers(self, name: str, count: int) -> Optional[Tuple[float, ...]]:
        return numbers(name, self._values[name], count) if name in self._values else None

    def names(self, name: str) -> Optional[List[str]]:
        """A comma-separated list of names (columns), each once."""
        if name not in self._values:
            return None
        items = self._values[name].split(",")
        if any(not n for n in items):
            raise bad_request(f"{name}: an empty name in '{_shown(self._values[name])}'")
        if len(set(items)) != len(items):
            raise bad_request(f"{name}: a name is given twice in '{_shown(self._values[name])}'")
        return items

    def normalised(self) -> str:
        """The parameters in a canonical order: what an ETag covers."""
        return "&".join(f"{k}={v}" for k, v in sorted(self._values.items()))
