"""Seeded, deterministic synthetic particle datasets.

Every generator of this package has the signature::

    NAME(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32)
        -> dict[str, np.ndarray]

and returns a ``dict`` mapping column name to a 1-D, C-contiguous numpy
array of length ``n``.  Columns appear in a fixed insertion order, which is
documented per generator.  Positions are always the columns ``"x"``,
``"y"`` and ``"z"`` and use ``dtype`` (``np.float32`` by default, or
``np.float64``); all other columns have the fixed dtype given in the
generator's documentation.

Determinism
    The data columns are drawn from ``np.random.default_rng(seed)`` in a
    fixed call order, so the same ``(generator, n, seed, dtype)`` always
    yields bit-identical arrays (for a given numpy version).  ``with_id=True``
    appends a column ``"id"`` (``np.uint64``) holding a random permutation
    of ``0 .. n-1``.  The ids come from a separate stream,
    ``np.random.default_rng((seed, 0x1D))``, so switching ``with_id`` on
    or off never changes the other columns.

Particle order
    Particles are stored in random order (component labels are shuffled),
    i.e. the data are *not* pre-sorted in space.  This is the hard case for
    any spatial index or compressor.

Performance
    All generators are vectorised.  Random numbers are drawn as whole arrays
    (in ``float32`` where the output is ``float32``); the deterministic
    arithmetic is then applied in cache-sized chunks, which avoids large
    ``float64`` temporaries.  Ten million particles take roughly 0.3 s
    (``uniform``), 1 s (``clustered``, ``vpic``) and 2 s (``wide``, which
    writes 1.2 GB) on one core; peak memory stays within ~1.5x the output
    size.

Density contrast
    :func:`density_contrast` gives the measure used to characterise the
    clustered datasets: bin the particles on a ``grid**3`` (default
    ``32**3``) grid spanning the dataset's domain (see :data:`BOUNDS`), and
    divide the *largest* cell count by the *mean count of the emptiest 10%
    of the non-empty cells*.  Empty cells are excluded so that the measure
    is finite; because every non-empty cell holds at least one particle the
    denominator is >= 1, which makes the measure conservative (it
    under-estimates the true density ratio when the sparse regions hold
    fewer than a handful of particles per cell).  ``clustered`` and ``vpic``
    reach >= 1000 by this measure at ``n = 2_000_000``.

Generators
    ``uniform``   uniform positions in the unit cube, normal momenta.
    ``clustered`` Gaussian blobs + filaments + 1% background in the unit cube.
    ``vpic``      VPIC-like magnetic-reconnection plasma (Harris current
                  sheet + plasmoids) in a 200 x 100 x 50 box.
    ``wide``      uniform positions plus 14 ``float64`` attributes.
    ``jets``      three jets shot into the unit box (the mini-app's).
    ``column``    a collapsing column along z in the unit box.

    One module per family (:mod:`.unit_cube`: uniform, clustered, wide;
    :mod:`.reconnection`: vpic; :mod:`.miniapp`: jets, column); what they
    share, parameter docs included, is :mod:`.generator`'s.
    :func:`harris_fields` (:mod:`.fields`) samples the grid fields of the
    vpic domain.

Examples
--------
>>> from motes import synth
>>> d = synth.generate("vpic", 1000, seed=3)
>>> list(d)
['x', 'y', 'z', 'ux', 'uy', 'uz', 'energy', 'q']
"""
from __future__ import annotations

import numpy as np

from ..errors import UsageError
from .fields import harris_fields
from .generator import UNIT
from .miniapp import column, jets
from .reconnection import VPIC_BOUNDS, vpic
from .unit_cube import clustered, uniform, wide

__all__ = [
    "uniform",
    "clustered",
    "vpic",
    "wide",
    "jets",
    "column",
    "generate",
    "density_contrast",
    "GENERATORS",
    "BOUNDS",
    "VPIC_BOUNDS",
    "harris_fields",
]

#: Half-open position domain ``[lo, hi)`` per axis for every generator.
BOUNDS = {
    "uniform": UNIT,
    "clustered": UNIT,
    "vpic": VPIC_BOUNDS,
    "wide": UNIT,
    "jets": UNIT,
    "column": UNIT,
}

#: Name -> generator function.
GENERATORS = {"uniform": uniform, "clustered": clustered, "vpic": vpic,
              "wide": wide, "jets": jets, "column": column}


def generate(kind: str, n: int, seed: int = 0, with_id: bool = False,
             dtype=np.float32) -> dict:
    """Generate a synthetic dataset by name.

    Parameters
    ----------
    kind : str
        One of ``"uniform"``, ``"clustered"``, ``"vpic"``, ``"wide"``, ``"jets"``, ``"column"``
        (the keys of :data:`GENERATORS`).
    n, seed, with_id, dtype
        Passed to the generator.

    Returns
    -------
    dict[str, numpy.ndarray]

    Raises
    ------
    motes.UsageError (a ValueError)
        If ``kind`` is unknown (the message lists the valid kinds) or
        ``n < 0``.
    """
    try:
        fn = GENERATORS[kind]
    except (KeyError, TypeError):
        raise UsageError(
            f"unknown synthetic dataset kind {kind!r}; valid kinds: "
            + ", ".join(sorted(GENERATORS))
        ) from None
    return fn(n, seed=seed, with_id=with_id, dtype=dtype)


def density_contrast(data, bounds=UNIT, grid: int = 32,
                     frac: float = 0.10) -> float:
    """Density contrast of a particle set on a regular grid.

    Bins the positions ``data["x"], data["y"], data["z"]`` onto ``grid**3``
    equal cells spanning ``bounds`` and returns::

        max(cell count) / mean(count of the emptiest `frac` of the
                               non-empty cells)

    i.e. the densest cell relative to the sparsest occupied regions.  Empty
    cells are excluded (the ratio would be infinite); at least one cell is
    used in the denominator.  Since an occupied cell holds >= 1 particle,
    the result never exceeds the maximum cell count and it under-estimates
    the true density ratio when sparse regions hold only ~1 particle per
    cell, i.e. the measure is conservative.

    Parameters
    ----------
    data : mapping
        Must contain 1-D arrays ``"x"``, ``"y"``, ``"z"``.
    bounds : sequence of 3 (lo, hi) pairs, optional
        Domain; defaults to the unit cube.  Use ``BOUNDS[kind]``.
    grid : int, optional
        Cells per axis (default 32).
    frac : float, optional
        Fraction of non-empty cells forming the denominator (default 0.10).

    Returns
    -------
    float
        The contrast (``nan`` if there are no particles).
    """
    n = len(data["x"])
    if n == 0:
        return float("nan")
    flat = np.zeros(n, dtype=np.int64)
    for key, (lo, hi) in zip(("x", "y", "z"), bounds):
        idx = ((np.asarray(data[key], dtype=np.float64) - lo)
               * (grid / (hi - lo))).astype(np.int64)
        np.clip(idx, 0, grid - 1, out=idx)
        flat *= grid
        flat += idx
    counts = np.bincount(flat, minlength=grid ** 3)
    occ = np.sort(counts[counts > 0])
    m = max(1, int(np.ceil(frac * len(occ))))
    return float(occ[-1] / occ[:m].mean())
