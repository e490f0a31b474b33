"""What every generator of :mod:`motes.synth` shares: the checks of its arguments, the
optional id column, the chunked arithmetic, and the documentation of its parameters
(:func:`documented`)."""

from __future__ import annotations

import operator

import numpy as np

from ..errors import UsageError

#: The unit cube, ((x0, x1), (y0, y1), (z0, z1)): the domain of every generator but vpic.
UNIT = ((0.0, 1.0), (0.0, 1.0), (0.0, 1.0))

# Elements per chunk for the deterministic arithmetic.  Changing it never
# changes the results (all random numbers are drawn as whole arrays).
CHUNK = 1 << 16

# Second entropy word of the independent stream used for the "id" column.
ID_STREAM = 0x1D

TWO_PI = 2.0 * np.pi


def check_args(n, dtype):
    """Validate ``n`` and the position ``dtype``; return ``(n, dtype)``."""
    try:
        n = operator.index(n)
    except TypeError:
        raise UsageError(f"n must be an integer, got {type(n).__name__}") from None
    if n < 0:
        raise UsageError(f"n must be >= 0 (number of particles), got {n}")
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise UsageError(
            f"dtype must be float32 or float64 for positions, got {dt}"
        )
    return n, dt


def chunks(n):
    """Yield slices covering ``range(n)`` in blocks of ``CHUNK``."""
    for s in range(0, n, CHUNK):
        yield slice(s, min(n, s + CHUNK))


def below(hi, dt):
    """Largest value of dtype ``dt`` strictly below ``hi``."""
    return np.nextafter(dt.type(hi), dt.type(-np.inf))


def wrap(a, length, dt):
    """Wrap ``a`` periodically into ``[0, length)`` in place (chunked)."""
    L = dt.type(length)
    inv = dt.type(1.0 / length)
    lo, hi = dt.type(0.0), below(length, dt)
    for s in chunks(len(a)):
        c = a[s]
        c -= L * np.floor(c * inv)
        # rounding can land exactly on ``length`` or a hair below 0
        np.clip(c, lo, hi, out=c)
    return a


def uniform_pos(rng, n, length, dt):
    """Uniform positions in ``[0, length)`` of dtype ``dt``."""
    a = rng.random(n, dtype=dt)
    if length != 1.0:
        a *= dt.type(length)
        np.minimum(a, below(length, dt), out=a)
    return a


def shuffled_labels(rng, n, probs):
    """Exact multinomial component counts, as a shuffled uint8 label array."""
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    counts = rng.multinomial(n, probs)
    labels = np.repeat(np.arange(len(probs), dtype=np.uint8), counts)
    rng.shuffle(labels)
    return labels


def finish(cols, n, seed, with_id):
    """Append the optional id column and check the column invariants."""
    if with_id:
        ids = np.arange(n, dtype=np.uint64)
        np.random.default_rng((seed, ID_STREAM)).shuffle(ids)
        cols["id"] = ids
    for k, v in cols.items():
        if not v.flags.c_contiguous:  # pragma: no cover - defensive
            cols[k] = np.ascontiguousarray(v)
    return cols


def momenta(rng, n):
    """Three standard-normal float32 momentum columns."""
    return (
        rng.standard_normal(n, dtype=np.float32),
        rng.standard_normal(n, dtype=np.float32),
        rng.standard_normal(n, dtype=np.float32),
    )


def kinetic(ux, uy, uz):
    """``0.5 * (ux**2 + uy**2 + uz**2)`` in float32, computed chunk-wise."""
    e = np.empty(len(ux), dtype=np.float32)
    for s in chunks(len(ux)):
        a, b, c = ux[s], uy[s], uz[s]
        t = a * a
        t += b * b
        t += c * c
        np.multiply(t, np.float32(0.5), out=e[s])
    return e


def in_unit(a, dt):
    """float64 positions in [0, 1] as dt values in [0, 1) (rounding to dt can reach 1)."""
    t = np.dtype(dt).type
    out = a.astype(dt)
    np.clip(out, t(0), np.nextafter(t(1), t(0)), out=out)
    return out


PARAMETERS = """
    Parameters
    ----------
    n : int
        Number of particles (``>= 0``).
    seed : int, optional
        Seed for ``np.random.default_rng``.
    with_id : bool, optional
        Append a ``"id"`` column (``uint64`` permutation of ``0..n-1``) after the
        data columns.
    dtype : {np.float32, np.float64}, optional
        dtype of the position columns.
"""

RAISES = """
    Raises
    ------
    motes.UsageError (a ValueError)
        If ``n < 0`` or ``dtype`` is not float32/float64.
"""


def documented(generator):
    """A generator, its docstring completed with the parameters and errors they all share
    (placed before its ``Returns`` section, and at the end)."""
    if generator.__doc__ is None:  # python -OO
        return generator
    doc = generator.__doc__.rstrip() + "\n"
    at = doc.find("\n    Returns\n")
    doc = (doc[:at] + PARAMETERS + doc[at:]) if at >= 0 else doc + PARAMETERS
    generator.__doc__ = doc + RAISES + "    "
    return generator
