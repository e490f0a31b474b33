"""The mini-app's populations (examples/miniapp): jets shot into the unit box, and a
collapsing column."""

from __future__ import annotations

import numpy as np

from .generator import check_args, documented, finish, in_unit, kinetic, shuffled_labels


@documented
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
    n, dt = check_args(n, dtype)
    rng = np.random.default_rng(seed)
    nozzles = np.array([[0.0, 0.35, 0.4], [0.6, 0.0, 0.55], [0.45, 0.6, 1.0]])
    axes = np.array([[1.0, 0.15, 0.05], [-0.1, 1.0, 0.1], [0.05, -0.1, -1.0]])
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    labels = shuffled_labels(rng, n, np.array([0.40, 0.33, 0.25, 0.02]))
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
    cols = {"x": in_unit(pos[0], dt), "y": in_unit(pos[1], dt), "z": in_unit(pos[2], dt), "ux": ux, "uy": uy, "uz": uz,
            "energy": kinetic(ux, uy, uz), "jet": np.where(labels == 3, -1, labels).astype(np.int8)}
    return finish(cols, n, seed, with_id)


@documented
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
    n, dt = check_args(n, dtype)
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
    cols = {"x": in_unit(pos[0], dt), "y": in_unit(pos[1], dt), "z": in_unit(pos[2], dt), "ux": ux, "uy": uy, "uz": uz,
            "energy": kinetic(ux, uy, uz), "density": density.astype(np.float32)}
    return finish(cols, n, seed, with_id)
