"""Halo reads of :meth:`motes.fields.file.StoredField.read_block`: the arguments (per-axis
integers, ghost widths, periodic flags, the fill value) checked, and the pieces of a window
around a block inside and outside the grid (wrapped around a periodic axis)."""

from __future__ import annotations

import operator
from typing import Tuple

import numpy as np

from ..errors import UsageError

__all__ = ["axis_ints", "ghost_widths", "periodic_flags", "fill_value", "halo_pieces"]


def axis_ints(values, ndim: int, what: str) -> Tuple[int, ...]:
    """A sequence of ``ndim`` integers (x, y, z)."""
    try:
        out = tuple(operator.index(v) for v in values)
    except TypeError:
        raise UsageError(f"{what} must be {ndim} integers (x, y, z order), got {values!r}") from None
    if len(out) != ndim:
        raise UsageError(f"{what} must have one integer per axis of the {ndim}-D grid, got {values!r}")
    return out


def ghost_widths(ghosts, ndim: int) -> Tuple[Tuple[int, int], ...]:
    """Per axis (lo, hi) ghost widths from an int, or per axis an int or a (lo, hi) pair."""
    def width(v) -> int:
        if isinstance(v, bool):
            raise TypeError
        w = operator.index(v)
        if w < 0:
            raise UsageError(f"ghost widths must not be negative, got {ghosts!r}")
        return w
    try:
        if not isinstance(ghosts, (list, tuple, np.ndarray)):
            g = width(ghosts)
            return ((g, g),) * ndim
        if len(ghosts) != ndim:
            raise UsageError(f"ghosts must have one entry per axis of the {ndim}-D grid, got {ghosts!r}")
        out = []
        for v in ghosts:
            if isinstance(v, (list, tuple, np.ndarray)):
                if len(v) != 2:
                    raise UsageError(f"a ghost width pair is (lo, hi), got {v!r}")
                out.append((width(v[0]), width(v[1])))
            else:
                out.append((width(v),) * 2)
        return tuple(out)
    except TypeError:
        raise UsageError(f"ghosts must be an int or per axis an int or a (lo, hi) pair of ints, got {ghosts!r}") from None


def periodic_flags(periodic, ndim: int) -> Tuple[bool, ...]:
    if isinstance(periodic, (bool, np.bool_)):
        return (bool(periodic),) * ndim
    try:
        flags = tuple(periodic)
    except TypeError:
        raise UsageError(f"periodic must be a bool or one bool per axis, got {periodic!r}") from None
    if len(flags) != ndim or not all(isinstance(f, (bool, np.bool_)) for f in flags):
        raise UsageError(f"periodic must be a bool or one bool per axis of the {ndim}-D grid, got {periodic!r}")
    return tuple(bool(f) for f in flags)


def fill_value(fill, dtype: np.dtype):
    """`fill` as a value of `dtype`: any real number for a float field, an integer within
    range for an integer one."""
    value = np.asarray(fill)
    if value.shape != () or value.dtype.kind not in "biuf":
        raise UsageError(f"fill must be a number, got {fill!r}")
    if dtype.kind in "iu":
        if value.dtype.kind == "f" and not (np.isfinite(value) and value == np.floor(value)):
            raise UsageError(f"fill={fill!r} is not a value of the field's dtype {dtype}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise UsageError(f"fill={fill!r} is not a value of the field's dtype {dtype}")
        return int(value)
    return value.astype(dtype)


def halo_pieces(w0: int, w1: int, n: int, periodic: bool):
    """The window [w0, w1) of an axis of n samples as pieces (first in the window, first in
    the grid or None where the window leaves a non-periodic grid, length): the piece inside
    [0, n) first, then the others (wrapped around the grid when periodic)."""
    inside = (max(w0, 0), min(w1, n))
    pieces = [(inside[0] - w0, inside[0], inside[1] - inside[0])]
    for a, b in ((w0, inside[0]), (inside[1], w1)):
        if a >= b:
            continue
        if not periodic:
            pieces.append((a - w0, None, b - a))
            continue
        at = a
        while at < b:  # split at multiples of n: each piece is one run of the grid
            end = min(b, (at // n + 1) * n)
            pieces.append((at - w0, at % n, end - at))
            at = end
    return pieces
