"""How the ``motes`` commands print: to stdout and stderr, numbers, sizes, durations, rates
and plain-text tables."""

from __future__ import annotations

import math
import sys
from typing import Any, Optional, Sequence


def out(*args: Any) -> None:
    print(*args, file=sys.stdout)


def err(*args: Any) -> None:
    print(*args, file=sys.stderr)


def thousands(n: Any) -> str:
    """An integer with thousands separators: 1,234,567."""
    return f"{int(n):,}"


def significant(v: Any, digits: int = 6) -> str:
    """A compact number: integers as such, floats with ``digits`` significant digits, None as '-'."""
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


def byte_size(n: float) -> str:
    """A size in bytes: 100 B, 1.5 KiB, 3.2 GiB."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024.0
    return f"{n:.3g} PiB"  # pragma: no cover


def duration(s: float) -> str:
    """Seconds as us, ms or s."""
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def rate(n: float, seconds: float, unit: str) -> str:
    """``n`` ``unit`` per second, with a k, M or G prefix."""
    if seconds <= 0:
        return f"- {unit}/s"
    r = n / seconds
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= scale:
            return f"{r / scale:.3g} {prefix}{unit}/s"
    return f"{r:.3g} {unit}/s"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Optional[Sequence[str]] = None,
               indent: str = "") -> str:
    """Plain-text table; ``align`` holds '<' or '>' per column (default: right)."""
    align = list(align or [">"] * len(headers))
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]

    def line(cells):
        return indent + "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths)).rstrip()

    lines = [line(headers), indent + "  ".join("-" * w for w in widths)]
    lines.extend(line(r) for r in rows)
    return "\n".join(lines)
