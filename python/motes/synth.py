"""Seeded, deterministic synthetic particle datasets.

Every generator in this module has the signature::

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

Examples
--------
>>> from motes import synth
>>> d = synth.generate("vpic", 1000, seed=3)
>>> list(d)
['x', 'y', 'z', 'ux', 'uy', 'uz', 'energy', 'q']
"""

from __future__ import annotations

import operator

import numpy as np

from .errors import UsageError

__all__ = [
    "uniform",
    "clustered",
    "vpic",
    "wide",
    "generate",
    "density_contrast",
    "GENERATORS",
    "BOUNDS",
    "VPIC_BOUNDS",
    "harris_fields",
]

#: Domain of the ``vpic`` generator: ((x0, x1), (y0, y1), (z0, z1)).
VPIC_BOUNDS = ((0.0, 200.0), (0.0, 100.0), (0.0, 50.0))

_UNIT = ((0.0, 1.0), (0.0, 1.0), (0.0, 1.0))

#: Half-open position domain ``[lo, hi)`` per axis for every generator.
BOUNDS = {
    "uniform": _UNIT,
    "clustered": _UNIT,
    "vpic": VPIC_BOUNDS,
    "wide": _UNIT,
    "jets": _UNIT,
    "column": _UNIT,
}

# Elements per chunk for the deterministic arithmetic.  Changing it never
# changes the results (all random numbers are drawn as whole arrays).
_CHUNK = 1 << 16

# Second entropy word of the independent stream used for the "id" column.
_ID_STREAM = 0x1D

_TWO_PI = 2.0 * np.pi


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _check_args(n, dtype):
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


def _chunks(n):
    """Yield slices covering ``range(n)`` in blocks of ``_CHUNK``."""
    for s in range(0, n, _CHUNK):
        yield slice(s, min(n, s + _CHUNK))


def _below(hi, dt):
    """Largest value of dtype ``dt`` strictly below ``hi``."""
    return np.nextafter(dt.type(hi), dt.type(-np.inf))


def _wrap(a, length, dt):
    """Wrap ``a`` periodically into ``[0, length)`` in place (chunked)."""
    L = dt.type(length)
    inv = dt.type(1.0 / length)
    lo, hi = dt.type(0.0), _below(length, dt)
    for s in _chunks(len(a)):
        c = a[s]
        c -= L * np.floor(c * inv)
        # rounding can land exactly on ``length`` or a hair below 0
        np.clip(c, lo, hi, out=c)
    return a


def _uniform_pos(rng, n, length, dt):
    """Uniform positions in ``[0, length)`` of dtype ``dt``."""
    a = rng.random(n, dtype=dt)
    if length != 1.0:
        a *= dt.type(length)
        np.minimum(a, _below(length, dt), out=a)
    return a


def _shuffled_labels(rng, n, probs):
    """Exact multinomial component counts, as a shuffled uint8 label array."""
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    counts = rng.multinomial(n, probs)
    labels = np.repeat(np.arange(len(probs), dtype=np.uint8), counts)
    rng.shuffle(labels)
    return labels


def _finish(cols, n, seed, with_id):
    """Append the optional id column and check the column invariants."""
    if with_id:
        ids = np.arange(n, dtype=np.uint64)
        np.random.default_rng((seed, _ID_STREAM)).shuffle(ids)
        cols["id"] = ids
    for k, v in cols.items():
        if not v.flags.c_contiguous:  # pragma: no cover - defensive
            cols[k] = np.ascontiguousarray(v)
    return cols


def _momenta(rng, n):
    """Three standard-normal float32 momentum columns."""
    return (
        rng.standard_normal(n, dtype=np.float32),
        rng.standard_normal(n, dtype=np.float32),
        rng.standard_normal(n, dtype=np.float32),
    )


def _kinetic(ux, uy, uz):
    """``0.5 * (ux**2 + uy**2 + uz**2)`` in float32, computed chunk-wise."""
    e = np.empty(len(ux), dtype=np.float32)
    for s in _chunks(len(ux)):
        a, b, c = ux[s], uy[s], uz[s]
        t = a * a
        t += b * b
        t += c * c
        np.multiply(t, np.float32(0.5), out=e[s])
    return e


# --------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------
def uniform(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """Uniformly distributed particles in the unit cube.

    Parameters
    ----------
    n : int
        Number of particles (``>= 0``).
    seed : int, optional
        Seed for ``np.random.default_rng``.
    with_id : bool, optional
        Append a ``"id"`` column (``uint64`` permutation of ``0..n-1``).
    dtype : {np.float32, np.float64}, optional
        dtype of the position columns.

    Returns
    -------
    dict[str, numpy.ndarray]
        Columns, in order:

        ``x, y, z`` (``dtype``)
            i.i.d. uniform in ``[0, 1)``.
        ``ux, uy, uz`` (float32)
            i.i.d. standard normal momenta.
        ``energy`` (float32)
            ``0.5 * (ux**2 + uy**2 + uz**2)``.
        ``id`` (uint64, only if ``with_id``)

    Raises
    ------
    motes.UsageError (a ValueError)
        If ``n < 0`` or ``dtype`` is not float32/float64.
    """
    n, dt = _check_args(n, dtype)
    rng = np.random.default_rng(seed)
    x = rng.random(n, dtype=dt)
    y = rng.random(n, dtype=dt)
    z = rng.random(n, dtype=dt)
    ux, uy, uz = _momenta(rng, n)
    cols = {"x": x, "y": y, "z": z, "ux": ux, "uy": uy, "uz": uz,
            "energy": _kinetic(ux, uy, uz)}
    return _finish(cols, n, seed, with_id)


# clustered layout
_CL_BLOBS = 64
_CL_FILAMENTS = 16
_CL_FRAC_BLOBS = 0.69
_CL_FRAC_FILAMENTS = 0.30
_CL_FRAC_BACKGROUND = 0.01


def clustered(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """Strongly clustered particles: blobs, filaments and a thin background.

    The particles are a mixture, inside the periodic unit cube ``[0, 1)^3``,
    of

    * **64 Gaussian blobs** holding 69% of the particles.  Blob ``k``
      (``k = 1..64``) has weight ``w_k ~ k**-1.5`` (times a log-normal
      jitter, sigma 0.3) and isotropic width
      ``sigma_k = 0.03 * (w_k / w_max)**(1/3)`` (a mass-size relation: heavy
      blobs are large, light blobs are compact, ~0.003 .. 0.03).  Centres are
      uniform in the cube.
    * **16 filaments** holding 30%: straight segments from a uniform random
      start point, in a uniform random direction, of length U(0.1, 0.4);
      particles are uniform along the segment with Gaussian transverse
      thickness sigma U(0.002, 0.006); filament weights U(0.5, 1.5).
    * **a uniform background** holding 1%.

    Positions are wrapped periodically into ``[0, 1)``.  Component membership
    is drawn as exact multinomial counts and the particles are shuffled, so
    the storage order is random.  By :func:`density_contrast` (32^3 grid, max
    cell / mean of the emptiest 10% non-empty cells) the contrast is far
    above 1000 for ``n = 2_000_000``.

    Parameters
    ----------
    n : int
        Number of particles (``>= 0``).
    seed : int, optional
        Seed for ``np.random.default_rng``.
    with_id : bool, optional
        Append a ``"id"`` column (``uint64`` permutation of ``0..n-1``).
    dtype : {np.float32, np.float64}, optional
        dtype of the position columns.

    Returns
    -------
    dict[str, numpy.ndarray]
        Columns, in order:

        ``x, y, z`` (``dtype``)
            positions in ``[0, 1)``.
        ``ux, uy, uz`` (float32)
            i.i.d. standard normal momenta (not correlated with position).
        ``energy`` (float32)
            ``0.5 * (ux**2 + uy**2 + uz**2)``.
        ``mass`` (float64)
            log-normal, ``exp(N(0, 0.5**2))``.
        ``id`` (uint64, only if ``with_id``)

    Raises
    ------
    motes.UsageError (a ValueError)
        If ``n < 0`` or ``dtype`` is not float32/float64.
    """
    n, dt = _check_args(n, dtype)
    rng = np.random.default_rng(seed)
    nb, nf = _CL_BLOBS, _CL_FILAMENTS
    ncomp = nb + nf + 1

    # --- component parameters (small, float64) ---------------------------
    k = np.arange(1, nb + 1, dtype=np.float64)
    w_blob = k ** -1.5 * rng.lognormal(0.0, 0.3, nb)
    sig_blob = 0.03 * (w_blob / w_blob.max()) ** (1.0 / 3.0)
    c_blob = rng.random((nb, 3))
    w_blob *= _CL_FRAC_BLOBS / w_blob.sum()

    w_fil = rng.uniform(0.5, 1.5, nf)
    w_fil *= _CL_FRAC_FILAMENTS / w_fil.sum()
    start = rng.random((nf, 3))
    direc = rng.standard_normal((nf, 3))
    direc /= np.linalg.norm(direc, axis=1, keepdims=True)
    direc *= rng.uniform(0.1, 0.4, nf)[:, None]
    sig_fil = rng.uniform(0.002, 0.006, nf)

    probs = np.concatenate([w_blob, w_fil, [_CL_FRAC_BACKGROUND]])
    # per-component lookup tables: centre/start, direction, width
    ctab = np.zeros((3, ncomp), dtype=dt)
    dtab = np.zeros((3, ncomp), dtype=dt)
    stab = np.zeros(ncomp, dtype=dt)
    ctab[:, :nb] = c_blob.T
    ctab[:, nb:nb + nf] = start.T
    dtab[:, nb:nb + nf] = direc.T
    stab[:nb] = sig_blob
    stab[nb:nb + nf] = sig_fil

    # --- random draws (whole arrays) --------------------------------------
    labels = _shuffled_labels(rng, n, probs)
    pos = [rng.standard_normal(n, dtype=dt) for _ in range(3)]
    fil_idx = np.flatnonzero((labels >= nb) & (labels < nb + nf))
    t_fil = rng.random(len(fil_idx), dtype=dt)
    bg_idx = np.flatnonzero(labels == nb + nf)
    bg = [rng.random(len(bg_idx), dtype=dt) for _ in range(3)]

    # --- positions: centre + width * normal (+ t * direction) -------------
    for s in _chunks(n):
        lab = labels[s]
        sg = stab[lab]
        for a in range(3):
            p = pos[a][s]
            p *= sg
            p += ctab[a][lab]
    lf = labels[fil_idx]
    for a in range(3):
        pos[a][fil_idx] += dtab[a][lf] * t_fil
        pos[a][bg_idx] = bg[a]
        _wrap(pos[a], 1.0, dt)
    x, y, z = pos

    ux, uy, uz = _momenta(rng, n)
    energy = _kinetic(ux, uy, uz)
    mass = rng.lognormal(0.0, 0.5, n)
    cols = {"x": x, "y": y, "z": z, "ux": ux, "uy": uy, "uz": uz,
            "energy": energy, "mass": mass}
    return _finish(cols, n, seed, with_id)


# vpic layout
_V_LX, _V_LY, _V_LZ = (b[1] for b in VPIC_BOUNDS)
_V_Y0 = 0.5 * _V_LY           # current-sheet centre
_V_HALF = 2.0                 # Harris half-thickness L
_V_NPLASMOID = 5
_V_FRAC_SHEET = 0.60
_V_FRAC_PLASMOID = 0.34
_V_FRAC_BACKGROUND = 0.06
_V_XLINE = 80.0               # X-line / energetic band centre in x
_V_VTH_E = 0.10               # electron thermal momentum (units of c)
_V_VTH_I = 0.04               # ion thermal momentum


def vpic(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """VPIC-like particles from a magnetic-reconnection simulation.

    Domain ``x in [0, 200)``, ``y in [0, 100)``, ``z in [0, 50)`` (see
    :data:`VPIC_BOUNDS`), periodic in x and z.  The particle density is

    * a **Harris current sheet** (60% of particles): x, z uniform, y drawn
      from ``sech^2((y - 50) / L)`` with half-thickness ``L = 2``;
    * **5 plasmoids** (34%): Gaussian clumps centred on the sheet at
      ``x ~ 20, 60, 100, 140, 180`` (+-8 jitter), ``y ~ 50``, z uniform,
      with widths ``sx ~ U(3, 6)``, ``sy ~ U(0.8, 1.5)``, ``sz ~ U(3, 8)``
      and random relative weights;
    * a **uniform background** (6%).

    The density contrast by :func:`density_contrast` exceeds 1000 at
    ``n = 2_000_000``.  Storage order is random.

    Attributes:

    * ``q`` - charge: half the particles (random) are electrons, ``-1.0``,
      half are ions, ``+1.0``.
    * ``ux, uy, uz`` - momenta: thermal normal noise, independent per
      particle (spatially random), with ``vth = 0.10`` for electrons and
      ``0.04`` for ions, plus a small smooth bulk flow: outflow
      ``ux ~ 0.02 tanh((x - 80) / 15) sech^2((y - 50) / 3)``, inflow
      ``uy ~ -0.01 tanh((y - 50) / 5) exp(-((x - 80) / 40)^2)`` and the
      current-carrying drift ``uz ~ -0.02 q sech^2((y - 50) / L)``.  The
      bulk flow is a fraction of ``vth`` so the extremes of ``ux`` are
      spread over the whole domain.
    * ``energy`` - a *spatially coherent* field (it is not the kinetic
      energy of ``u``): a smooth function of position, namely a weak
      sinusoidal background (0.02 .. 0.08), sheet heating
      ``0.25 sech^2((y - 50) / 4)``, Gaussian heating of 0.3 at each
      plasmoid, and an **energetic sheet**
      ``3 exp(-((y - 50) / 0.3)^2 - ((x - 80) / 10)^4)`` (a thin layer
      ``|y - 50| < ~0.5`` in the band ``x ~ 70..90`` at the X-line), times
      ``(1 + 0.01 N(0, 1))`` noise.  The energetic sheet peaks well above
      the rest of the field (max ~1), so a threshold ``energy > t`` that
      keeps ~0.1% of the particles selects a compact slab around
      ``y = 50``, ``x = 80``.

    Parameters
    ----------
    n : int
        Number of particles (``>= 0``).
    seed : int, optional
        Seed for ``np.random.default_rng``.
    with_id : bool, optional
        Append a ``"id"`` column (``uint64`` permutation of ``0..n-1``)
        after the 8 data columns.
    dtype : {np.float32, np.float64}, optional
        dtype of the position columns (float32 gives the 8-float32 layout).

    Returns
    -------
    dict[str, numpy.ndarray]
        Exactly the columns ``x, y, z, ux, uy, uz, energy, q`` in this order
        (positions ``dtype``, the rest float32), plus ``id`` if requested.

    Raises
    ------
    motes.UsageError (a ValueError)
        If ``n < 0`` or ``dtype`` is not float32/float64.
    """
    n, dt = _check_args(n, dtype)
    rng = np.random.default_rng(seed)
    f32 = np.float32
    LX, LY, LZ, Y0 = _V_LX, _V_LY, _V_LZ, _V_Y0
    K = _V_NPLASMOID

    # --- plasmoid parameters ------------------------------------------------
    pcx = (np.arange(K) + 0.5) * (LX / K) + rng.uniform(-8.0, 8.0, K)
    pcy = Y0 + rng.normal(0.0, 0.3, K)
    pcz = rng.uniform(0.0, LZ, K)
    psx = rng.uniform(3.0, 6.0, K)
    psy = rng.uniform(0.8, 1.5, K)
    psz = rng.uniform(3.0, 8.0, K)
    pw = rng.uniform(0.5, 1.5, K)
    pw *= _V_FRAC_PLASMOID / pw.sum()
    # labels: 0 sheet, 1 background, 2.. plasmoids
    probs = np.concatenate([[_V_FRAC_SHEET, _V_FRAC_BACKGROUND], pw])

    # --- random draws ---------------------------------------------------------
    labels = _shuffled_labels(rng, n, probs)
    x = _uniform_pos(rng, n, LX, dt)
    uy_rand = rng.random(n, dtype=dt)          # sheet (sech^2) / background y
    z = _uniform_pos(rng, n, LZ, dt)
    pl_idx = np.flatnonzero(labels >= 2)
    g = [rng.standard_normal(len(pl_idx), dtype=dt) for _ in range(3)]
    q = rng.random(n, dtype=f32)
    ux, uy, uz = _momenta(rng, n)
    noise = rng.standard_normal(n, dtype=f32)

    # --- positions ------------------------------------------------------------
    y = uy_rand
    one = _below(1.0, dt)
    for s in _chunks(n):
        u = y[s]
        bgm = labels[s] == 1
        # Harris sheet: y = Y0 + L * atanh(2u - 1)  (inverse CDF of sech^2)
        t = u * dt.type(2.0)
        t -= dt.type(1.0)
        np.clip(t, -one, one, out=t)
        np.arctanh(t, out=t)
        t *= dt.type(_V_HALF)
        t += dt.type(Y0)
        np.copyto(t, u * dt.type(LY), where=bgm)
        y[s] = t
    lp = labels[pl_idx] - 2
    x[pl_idx] = (pcx[lp].astype(dt) + psx[lp].astype(dt) * g[0])
    y[pl_idx] = (pcy[lp].astype(dt) + psy[lp].astype(dt) * g[1])
    z[pl_idx] = (pcz[lp].astype(dt) + psz[lp].astype(dt) * g[2])
    del g, pl_idx, lp
    _wrap(x, LX, dt)
    _wrap(z, LZ, dt)
    np.clip(y, dt.type(0.0), _below(LY, dt), out=y)

    # --- charge, momenta, energy (chunked, float32) ----------------------------
    pcx32, pcy32, pcz32 = (a.astype(f32) for a in (pcx, pcy, pcz))
    pisx, pisy, pisz = (f32(1.0) / (f32(2.0) * a.astype(f32))
                        for a in (psx, psy, psz))
    energy = np.empty(n, dtype=f32)
    k1x, k2y, k2z = (f32(_TWO_PI * 3 / LX), f32(_TWO_PI * 2 / LY),
                     f32(_TWO_PI * 2 / LZ))
    for s in _chunks(n):
        xs = x[s].astype(f32, copy=False)
        ys = y[s].astype(f32, copy=False)
        zs = z[s].astype(f32, copy=False)
        dy = ys - f32(Y0)

        # charge: -1 (electron) / +1 (ion)
        qs = q[s]
        ele = qs < f32(0.5)
        qs[...] = np.where(ele, f32(-1.0), f32(1.0))
        vth = np.where(ele, f32(_V_VTH_E), f32(_V_VTH_I))

        # smooth bulk flow + thermal noise
        c = np.cosh(dy * f32(1.0 / 3.0))
        sech2_3 = f32(1.0) / (c * c)
        c = np.cosh(dy * f32(1.0 / _V_HALF))
        sech2_L = f32(1.0) / (c * c)
        dxl = xs - f32(_V_XLINE)
        a = ux[s]
        a *= vth
        a += f32(0.02) * np.tanh(dxl * f32(1.0 / 15.0)) * sech2_3
        a = uy[s]
        a *= vth
        gx = dxl * f32(1.0 / 40.0)
        a -= f32(0.01) * np.tanh(dy * f32(0.2)) * np.exp(-(gx * gx))
        a = uz[s]
        a *= vth
        a -= f32(0.02) * qs * sech2_L

        # energy: smooth field of position
        e = np.sin(xs * k1x)
        e += np.sin(ys * k2y + f32(1.3))
        e += np.cos(zs * k2z + f32(0.4))
        e *= f32(0.01)
        e += f32(0.05)
        c = np.cosh(dy * f32(0.25))
        e += f32(0.25) / (c * c)
        for i in range(K):
            ddx = xs - pcx32[i]                 # periodic distance in x
            ddx -= f32(LX) * np.rint(ddx * f32(1.0 / LX))
            ddx *= pisx[i]
            ddz = zs - pcz32[i]                 # periodic distance in z
            ddz -= f32(LZ) * np.rint(ddz * f32(1.0 / LZ))
            ddz *= pisz[i]
            ddy = (ys - pcy32[i]) * pisy[i]
            r2 = ddx * ddx
            r2 += ddy * ddy
            r2 += ddz * ddz
            np.negative(r2, out=r2)
            np.exp(r2, out=r2)
            r2 *= f32(0.3)
            e += r2
        # energetic sheet at the X-line
        ty = dy * f32(1.0 / 0.3)
        tx = dxl * f32(0.1)
        tx *= tx
        r2 = ty * ty
        r2 += tx * tx
        np.negative(r2, out=r2)
        np.exp(r2, out=r2)
        e += f32(3.0) * r2
        # tiny multiplicative noise
        nz = noise[s]
        nz *= f32(0.01)
        nz += f32(1.0)
        np.multiply(e, nz, out=energy[s])
    del noise

    cols = {"x": x, "y": y, "z": z, "ux": ux, "uy": uy, "uz": uz,
            "energy": energy, "q": q}
    return _finish(cols, n, seed, with_id)


def wide(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """Uniform positions with 14 float64 attributes (a "wide" table).

    Mirrors the uniform benchmark of particle I/O papers: 3 coordinates
    plus many attribute columns, some compressible (smooth in space) and
    some incompressible (noise).

    Parameters
    ----------
    n : int
        Number of particles (``>= 0``).
    seed : int, optional
        Seed for ``np.random.default_rng``.
    with_id : bool, optional
        Append a ``"id"`` column (``uint64`` permutation of ``0..n-1``).
    dtype : {np.float32, np.float64}, optional
        dtype of the position columns.

    Returns
    -------
    dict[str, numpy.ndarray]
        ``x, y, z`` (``dtype``), i.i.d. uniform in ``[0, 1)``, followed by
        ``a0 .. a13`` (all float64), where (with ``x, y, z`` the position)

        ======  ==================================================  ========
        column  definition                                          kind
        ======  ==================================================  ========
        a0      ``sin(2 pi x) cos(2 pi y)``                         smooth
        a1      ``x + y + z``                                       smooth
        a2      ``exp(-8 r^2)``, r = distance to cube centre        smooth
        a3      ``N(0, 1)``                                         noise
        a4      ``U(0, 1)``                                         noise
        a5      ``cos(2 pi z) + 0.01 N(0, 1)``                      smooth+
        a6      ``exp(N(0, 1))`` (log-normal)                       noise
        a7      ``floor(8 x) + 8 floor(8 y)`` (integer valued)      steps
        a8      ``r``, distance to cube centre                      smooth
        a9      ``sin(16 pi z)``                                    smooth
        a10     ``Exp(1)``                                          noise
        a11     ``x y z``                                           smooth
        a12     ``1e5 + 1e3 x`` (large offset, small range)         smooth
        a13     ``N(0, 1) * (0.1 + y)`` (noise, smooth envelope)    noise
        ======  ==================================================  ========

        plus ``id`` if requested.

    Raises
    ------
    motes.UsageError (a ValueError)
        If ``n < 0`` or ``dtype`` is not float32/float64.
    """
    n, dt = _check_args(n, dtype)
    rng = np.random.default_rng(seed)
    x = rng.random(n, dtype=dt)
    y = rng.random(n, dtype=dt)
    z = rng.random(n, dtype=dt)
    cols = {"x": x, "y": y, "z": z}
    a = {f"a{i}": None for i in range(14)}
    a["a3"] = rng.standard_normal(n)
    a["a4"] = rng.random(n)
    noise5 = rng.standard_normal(n)
    a["a6"] = rng.lognormal(0.0, 1.0, n)
    a["a10"] = rng.exponential(1.0, n)
    a["a13"] = rng.standard_normal(n)
    for key in ("a0", "a1", "a2", "a7", "a8", "a9", "a11", "a12"):
        a[key] = np.empty(n, dtype=np.float64)
    a5 = noise5
    tp = _TWO_PI
    for s in _chunks(n):
        xs = x[s].astype(np.float64)
        ys = y[s].astype(np.float64)
        zs = z[s].astype(np.float64)
        np.multiply(np.sin(tp * xs), np.cos(tp * ys), out=a["a0"][s])
        np.add(xs + ys, zs, out=a["a1"][s])
        dx, dy_, dz = xs - 0.5, ys - 0.5, zs - 0.5
        r2 = dx * dx + dy_ * dy_ + dz * dz
        np.exp(-8.0 * r2, out=a["a2"][s])
        t = a5[s]
        t *= 0.01
        t += np.cos(tp * zs)
        a["a7"][s] = np.floor(8.0 * xs) + 8.0 * np.floor(8.0 * ys)
        np.sqrt(r2, out=a["a8"][s])
        np.sin(8.0 * tp * zs, out=a["a9"][s])
        np.multiply(xs * ys, zs, out=a["a11"][s])
        np.multiply(xs, 1e3, out=a["a12"][s])
        a["a12"][s] += 1e5
        a["a13"][s] *= 0.1 + ys
    a["a5"] = a5
    cols.update(a)
    return _finish(cols, n, seed, with_id)


#: Name -> generator function.
def _in_unit(a, dt):
    """float64 positions in [0, 1] as dt values in [0, 1) (rounding to dt can reach 1)."""
    t = np.dtype(dt).type
    out = a.astype(dt)
    np.clip(out, t(0), np.nextafter(t(1), t(0)), out=out)
    return out


def jets(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """Particles injected by jets into the unit box (the mini-app's population).

    Three nozzles on the walls ``x = 0``, ``y = 0`` and ``z = 1`` shoot cones
    (half-angle ~6 degrees) into ``[0, 1)^3``. Particles are spread along each
    jet with a density that falls off with distance from the nozzle (older
    particles have spread and left), the cone widening linearly; 2% are a
    uniform background. Momenta point along the jet (speed N(1, 0.1)) with a
    small thermal spread, so ``energy`` is high near the nozzles' axes.

    Columns: ``x, y, z`` (``dtype``), ``ux, uy, uz`` (float32), ``energy``
    (float32), ``jet`` (int8: 0, 1, 2, or -1 for the background), and ``id``
    (uint64) with ``with_id``.
    """
    n, dt = _check_args(n, dtype)
    rng = np.random.default_rng(seed)
    nozzles = np.array([[0.0, 0.35, 0.4], [0.6, 0.0, 0.55], [0.45, 0.6, 1.0]])
    axes = np.array([[1.0, 0.15, 0.05], [-0.1, 1.0, 0.1], [0.05, -0.1, -1.0]])
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    labels = _shuffled_labels(rng, n, np.array([0.40, 0.33, 0.25, 0.02]))
    t = rng.exponential(0.25, n).clip(0.0, 0.95)  # distance travelled from the nozzle
    width = 0.004 + 0.1 * t                       # the cone widens downstream
    pos = np.empty((3, n), dtype=np.float64)
    vel = np.empty((3, n), dtype=np.float64)
    speed = rng.normal(1.0, 0.1, n)
    for j in range(3):
        m = labels == j
        k = int(m.sum())
        # two unit vectors across the jet
        a = axes[j]
        e1 = np.cross(a, [0.0, 0.0, 1.0] if abs(a[2]) < 0.9 else [1.0, 0.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(a, e1)
        r1, r2 = rng.standard_normal(k), rng.standard_normal(k)
        off = (r1[:, None] * e1 + r2[:, None] * e2) * width[m][:, None]
        pos[:, m] = (nozzles[j] + t[m][:, None] * a + off).T
        vel[:, m] = (speed[m][:, None] * a + 0.5 * off).T
    bg = labels == 3
    pos[:, bg] = rng.random((3, int(bg.sum())))
    vel[:, bg] = rng.standard_normal((3, int(bg.sum()))) * 0.05
    np.clip(pos, 0.0, np.nextafter(1.0, 0.0), out=pos)
    vel += rng.standard_normal((3, n)) * 0.02
    ux, uy, uz = (v.astype(np.float32) for v in vel)
    cols = {"x": _in_unit(pos[0], dt), "y": _in_unit(pos[1], dt), "z": _in_unit(pos[2], dt), "ux": ux, "uy": uy, "uz": uz,
            "energy": _kinetic(ux, uy, uz), "jet": np.where(labels == 3, -1, labels).astype(np.int8)}
    return _finish(cols, n, seed, with_id)


def column(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """A collapsing column: a dense, thin cylinder along z with infalling gas.

    90% of the particles form a column along z at (0.5, 0.5) whose radial
    profile is a Gaussian core (sigma 0.01) plus an r^-2 envelope out to 0.3;
    their density also rises towards the mid-plane ``z = 0.5`` (a sech^2 profile
    of width 0.15). 10% are a uniform background. Radial momenta point inwards,
    faster close to the axis, so the column keeps collapsing.

    Columns: ``x, y, z`` (``dtype``), ``ux, uy, uz`` (float32), ``energy``
    (float32), ``density`` (float32, the model density at the particle), and
    ``id`` (uint64) with ``with_id``.
    """
    n, dt = _check_args(n, dtype)
    rng = np.random.default_rng(seed)
    core = rng.random(n) < 0.9
    k = int(core.sum())
    # radius: half Gaussian core, half r^-2 envelope (uniform in log r)
    in_core = rng.random(k) < 0.5
    r = np.where(in_core, np.abs(rng.standard_normal(k)) * 0.01, np.exp(rng.uniform(np.log(0.01), np.log(0.3), k)))
    phi = rng.uniform(0.0, 2.0 * np.pi, k)
    zc = 0.5 + 0.15 * np.arctanh(rng.uniform(-0.999, 0.999, k)) / 2.0  # sech^2 profile around the mid-plane
    pos = np.empty((3, n), dtype=np.float64)
    pos[0, core] = 0.5 + r * np.cos(phi)
    pos[1, core] = 0.5 + r * np.sin(phi)
    pos[2, core] = zc
    pos[:, ~core] = rng.random((3, n - k))
    np.clip(pos, 0.0, np.nextafter(1.0, 0.0), out=pos)
    vin = np.zeros((3, n))
    infall = 0.05 / np.sqrt(r + 0.01)
    vin[0, core] = -infall * np.cos(phi)
    vin[1, core] = -infall * np.sin(phi)
    vin += rng.standard_normal((3, n)) * 0.03
    ux, uy, uz = (v.astype(np.float32) for v in vin)
    rr = np.hypot(pos[0] - 0.5, pos[1] - 0.5)
    density = (np.exp(-0.5 * (rr / 0.01) ** 2) + 1e-4 / (rr * rr + 1e-4)) / np.cosh((pos[2] - 0.5) / 0.15) ** 2
    cols = {"x": _in_unit(pos[0], dt), "y": _in_unit(pos[1], dt), "z": _in_unit(pos[2], dt), "ux": ux, "uy": uy, "uz": uz,
            "energy": _kinetic(ux, uy, uz), "density": density.astype(np.float32)}
    return _finish(cols, n, seed, with_id)


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


def density_contrast(data, bounds=_UNIT, grid: int = 32,
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


from .synth_fields import harris_fields  # noqa: E402  (the grid fields of the vpic domain)
