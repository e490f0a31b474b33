"""VPIC-like particles of a magnetic-reconnection simulation (:func:`vpic`), and the sheet they
are drawn from: the Harris current sheet and X-line that :func:`motes.synth.harris_fields`
samples on a grid."""

from __future__ import annotations

import numpy as np

from .generator import (TWO_PI, below, check_args, chunks, documented, finish, momenta, shuffled_labels, uniform_pos,
                        wrap)

#: Domain of the ``vpic`` generator: ((x0, x1), (y0, y1), (z0, z1)).
VPIC_BOUNDS = ((0.0, 200.0), (0.0, 100.0), (0.0, 50.0))

_V_LX, _V_LY, _V_LZ = (b[1] for b in VPIC_BOUNDS)
#: The current sheet: its centre in y, its Harris half-thickness L, and the x of the X-line
#: (the centre of the energetic band).
SHEET_Y0 = 0.5 * _V_LY
SHEET_HALF_THICKNESS = 2.0
XLINE_X = 80.0
# The particles: plasmoids, and the share of each population.
_V_NPLASMOID = 5
_V_FRAC_SHEET = 0.60
_V_FRAC_PLASMOID = 0.34
_V_FRAC_BACKGROUND = 0.06
_V_VTH_E = 0.10               # electron thermal momentum (units of c)
_V_VTH_I = 0.04               # ion thermal momentum


@documented
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

    Returns
    -------
    dict[str, numpy.ndarray]
        Exactly the columns ``x, y, z, ux, uy, uz, energy, q`` in this order
        (positions ``dtype``, the rest float32), plus ``id`` if requested.
    """
    n, dt = check_args(n, dtype)
    rng = np.random.default_rng(seed)
    pl = _Plasmoids(rng)
    # Every random draw, in this order (the generator's output depends on it).
    labels = shuffled_labels(rng, n, pl.probs)
    x = uniform_pos(rng, n, _V_LX, dt)
    y = rng.random(n, dtype=dt)  # the inverse CDF of the sheet's or the background's y
    z = uniform_pos(rng, n, _V_LZ, dt)
    pl_idx = np.flatnonzero(labels >= 2)
    g = [rng.standard_normal(len(pl_idx), dtype=dt) for _ in range(3)]
    q = rng.random(n, dtype=np.float32)
    ux, uy, uz = momenta(rng, n)
    noise = rng.standard_normal(n, dtype=np.float32)

    _place(x, y, z, labels, pl_idx, g, pl, dt)
    del g, pl_idx
    energy = np.empty(n, dtype=np.float32)
    for s in chunks(n):
        xs, ys, zs = (a[s].astype(np.float32, copy=False) for a in (x, y, z))
        _charge_and_flow(xs, ys, q[s], ux[s], uy[s], uz[s])
        _energy(xs, ys, zs, noise[s], pl, out=energy[s])
    del noise

    cols = {"x": x, "y": y, "z": z, "ux": ux, "uy": uy, "uz": uz,
            "energy": energy, "q": q}
    return finish(cols, n, seed, with_id)


class _Plasmoids:
    """The plasmoids' centres, widths and weights (drawn first), and the label probabilities:
    0 sheet, 1 background, 2.. plasmoids."""

    def __init__(self, rng):
        K = _V_NPLASMOID
        self.cx = (np.arange(K) + 0.5) * (_V_LX / K) + rng.uniform(-8.0, 8.0, K)
        self.cy = SHEET_Y0 + rng.normal(0.0, 0.3, K)
        self.cz = rng.uniform(0.0, _V_LZ, K)
        self.sx = rng.uniform(3.0, 6.0, K)
        self.sy = rng.uniform(0.8, 1.5, K)
        self.sz = rng.uniform(3.0, 8.0, K)
        w = rng.uniform(0.5, 1.5, K)
        w *= _V_FRAC_PLASMOID / w.sum()
        self.probs = np.concatenate([[_V_FRAC_SHEET, _V_FRAC_BACKGROUND], w])
        f32 = np.float32
        self.cx32, self.cy32, self.cz32 = (a.astype(f32) for a in (self.cx, self.cy, self.cz))
        # 1 / (2 s): the Gaussian heating's scale per axis
        self.isx, self.isy, self.isz = (f32(1.0) / (f32(2.0) * a.astype(f32)) for a in (self.sx, self.sy, self.sz))


def _place(x, y, z, labels, pl_idx, g, pl, dt):
    """Positions: the sheet's y by the inverse CDF of sech^2 (the background's uniform), the
    plasmoids' Gaussian clumps, wrapped in x and z and clipped in y."""
    one = below(1.0, dt)
    for s in chunks(len(y)):
        u = y[s]
        bgm = labels[s] == 1
        # Harris sheet: y = Y0 + L * atanh(2u - 1)  (inverse CDF of sech^2)
        t = u * dt.type(2.0)
        t -= dt.type(1.0)
        np.clip(t, -one, one, out=t)
        np.arctanh(t, out=t)
        t *= dt.type(SHEET_HALF_THICKNESS)
        t += dt.type(SHEET_Y0)
        np.copyto(t, u * dt.type(_V_LY), where=bgm)
        y[s] = t
    lp = labels[pl_idx] - 2
    x[pl_idx] = (pl.cx[lp].astype(dt) + pl.sx[lp].astype(dt) * g[0])
    y[pl_idx] = (pl.cy[lp].astype(dt) + pl.sy[lp].astype(dt) * g[1])
    z[pl_idx] = (pl.cz[lp].astype(dt) + pl.sz[lp].astype(dt) * g[2])
    wrap(x, _V_LX, dt)
    wrap(z, _V_LZ, dt)
    np.clip(y, dt.type(0.0), below(_V_LY, dt), out=y)


def _charge_and_flow(xs, ys, qs, ux, uy, uz):
    """One chunk, in place: the charge (-1 electron / +1 ion from a uniform draw) and the
    momenta (thermal noise scaled by the species' vth, plus the smooth bulk flow)."""
    f32 = np.float32
    dy = ys - f32(SHEET_Y0)
    ele = qs < f32(0.5)
    qs[...] = np.where(ele, f32(-1.0), f32(1.0))
    vth = np.where(ele, f32(_V_VTH_E), f32(_V_VTH_I))
    c = np.cosh(dy * f32(1.0 / 3.0))
    sech2_3 = f32(1.0) / (c * c)
    c = np.cosh(dy * f32(1.0 / SHEET_HALF_THICKNESS))
    sech2_L = f32(1.0) / (c * c)
    dxl = xs - f32(XLINE_X)
    ux *= vth
    ux += f32(0.02) * np.tanh(dxl * f32(1.0 / 15.0)) * sech2_3
    uy *= vth
    gx = dxl * f32(1.0 / 40.0)
    uy -= f32(0.01) * np.tanh(dy * f32(0.2)) * np.exp(-(gx * gx))
    uz *= vth
    uz -= f32(0.02) * qs * sech2_L


def _energy(xs, ys, zs, nz, pl, out):
    """One chunk of the energy field: background, sheet heating, the plasmoids' Gaussian
    heating, the energetic sheet at the X-line, times (1 + 0.01 noise); `nz` is overwritten."""
    f32 = np.float32
    dy = ys - f32(SHEET_Y0)
    k1x, k2y, k2z = (f32(TWO_PI * 3 / _V_LX), f32(TWO_PI * 2 / _V_LY), f32(TWO_PI * 2 / _V_LZ))
    e = np.sin(xs * k1x)
    e += np.sin(ys * k2y + f32(1.3))
    e += np.cos(zs * k2z + f32(0.4))
    e *= f32(0.01)
    e += f32(0.05)
    c = np.cosh(dy * f32(0.25))
    e += f32(0.25) / (c * c)
    for i in range(_V_NPLASMOID):
        ddx = xs - pl.cx32[i]                 # periodic distance in x
        ddx -= f32(_V_LX) * np.rint(ddx * f32(1.0 / _V_LX))
        ddx *= pl.isx[i]
        ddz = zs - pl.cz32[i]                 # periodic distance in z
        ddz -= f32(_V_LZ) * np.rint(ddz * f32(1.0 / _V_LZ))
        ddz *= pl.isz[i]
        ddy = (ys - pl.cy32[i]) * pl.isy[i]
        r2 = ddx * ddx
        r2 += ddy * ddy
        r2 += ddz * ddz
        np.negative(r2, out=r2)
        np.exp(r2, out=r2)
        r2 *= f32(0.3)
        e += r2
    # energetic sheet at the X-line
    ty = dy * f32(1.0 / 0.3)
    tx = (xs - f32(XLINE_X)) * f32(0.1)
    tx *= tx
    r2 = ty * ty
    r2 += tx * tx
    np.negative(r2, out=r2)
    np.exp(r2, out=r2)
    e += f32(3.0) * r2
    nz *= f32(0.01)
    nz += f32(1.0)
    np.multiply(e, nz, out=out)
