"""Particles in the unit cube: uniform, strongly clustered, and a wide table of attributes."""

from __future__ import annotations

import numpy as np

from .generator import TWO_PI, check_args, chunks, documented, finish, kinetic, momenta, shuffled_labels, wrap


@documented
def uniform(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """Uniformly distributed particles in the unit cube.

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
    """
    n, dt = check_args(n, dtype)
    rng = np.random.default_rng(seed)
    x = rng.random(n, dtype=dt)
    y = rng.random(n, dtype=dt)
    z = rng.random(n, dtype=dt)
    ux, uy, uz = momenta(rng, n)
    cols = {"x": x, "y": y, "z": z, "ux": ux, "uy": uy, "uz": uz,
            "energy": kinetic(ux, uy, uz)}
    return finish(cols, n, seed, with_id)



# clustered layout
_CL_BLOBS = 64
_CL_FILAMENTS = 16
_CL_FRAC_BLOBS = 0.69
_CL_FRAC_FILAMENTS = 0.30
_CL_FRAC_BACKGROUND = 0.01


@documented
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
    """
    n, dt = check_args(n, dtype)
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
    labels = shuffled_labels(rng, n, probs)
    pos = [rng.standard_normal(n, dtype=dt) for _ in range(3)]
    fil_idx = np.flatnonzero((labels >= nb) & (labels < nb + nf))
    t_fil = rng.random(len(fil_idx), dtype=dt)
    bg_idx = np.flatnonzero(labels == nb + nf)
    bg = [rng.random(len(bg_idx), dtype=dt) for _ in range(3)]

    # --- positions: centre + width * normal (+ t * direction) -------------
    for s in chunks(n):
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
        wrap(pos[a], 1.0, dt)
    x, y, z = pos

    ux, uy, uz = momenta(rng, n)
    energy = kinetic(ux, uy, uz)
    mass = rng.lognormal(0.0, 0.5, n)
    cols = {"x": x, "y": y, "z": z, "ux": ux, "uy": uy, "uz": uz,
            "energy": energy, "mass": mass}
    return finish(cols, n, seed, with_id)


@documented
def wide(n: int, seed: int = 0, with_id: bool = False, dtype=np.float32):
    """Uniform positions with 14 float64 attributes (a "wide" table).

    Mirrors the uniform benchmark of particle I/O papers: 3 coordinates
    plus many attribute columns, some compressible (smooth in space) and
    some incompressible (noise).

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
    """
    n, dt = check_args(n, dtype)
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
    tp = TWO_PI
    for s in chunks(n):
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
    return finish(cols, n, seed, with_id)
