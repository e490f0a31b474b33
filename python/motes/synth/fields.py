"""Synthetic grid fields on the domain of :func:`motes.synth.vpic`: the magnetic field,
current density and plasma density of a Harris current sheet with a GEM-style X-line
perturbation, the configuration the vpic particles are drawn from (same sheet centre,
half-thickness and X-line).

    fields = motes.synth.harris_fields((128, 64, 32))    # {"B": ..., "J": ..., "rho": ...}
    motes.write("run.motes", motes.synth.vpic(n), fields=fields)
"""

from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

from ..errors import UsageError
from ..fields.model import Field
from .reconnection import SHEET_HALF_THICKNESS, SHEET_Y0, VPIC_BOUNDS, XLINE_X

__all__ = ["harris_fields"]


def harris_fields(dims: Sequence[int] = (128, 64, 32), *, b0: float = 1.0, guide: float = 0.1,
                  perturbation: float = 0.1, dtype=np.float32) -> Dict[str, Field]:
    """B (vector), J (vector, J = curl B) and rho (scalar) sampled on a node-centred grid of
    ``dims`` = (nx, ny, nz) samples spanning the vpic domain (its bounds included):

    * ``B = (b0 tanh((y - y0) / L), 0, guide) + curl(psi z)`` with the flux perturbation
      ``psi = perturbation · b0 · L · cos(2π (x - x_X) / Lx) · cos(π (y - y0) / Ly)``;
    * ``J``: the exact curl of B: ``J_z = -b0 / L · sech²((y - y0) / L) + ∇²psi`` terms;
    * ``rho = sech²((y - y0) / L) + 0.2`` (sheet plus background).

    Deterministic (no seed): the same dims give the same arrays."""
    dims = tuple(int(d) for d in dims)
    if len(dims) != 3 or min(dims) < 2:
        raise UsageError(f"dims must be 3 sample counts >= 2 (x, y, z), got {dims!r}")
    (x0, x1), (y0_, y1), (z0, z1) = VPIC_BOUNDS
    lx, ly = x1 - x0, y1 - y0_
    spacing = tuple((b[1] - b[0]) / (n - 1) for b, n in zip(VPIC_BOUNDS, dims))
    x = np.linspace(x0, x1, dims[0])[None, None, :]
    y = np.linspace(y0_, y1, dims[1])[None, :, None]
    s = (y - SHEET_Y0) / SHEET_HALF_THICKNESS
    sech2 = 1.0 / np.cosh(s) ** 2
    kx, ky = 2 * np.pi / lx, np.pi / ly
    psi0 = perturbation * b0 * SHEET_HALF_THICKNESS
    cx, sx = np.cos(kx * (x - XLINE_X)), np.sin(kx * (x - XLINE_X))
    cy, sy = np.cos(ky * (y - SHEET_Y0)), np.sin(ky * (y - SHEET_Y0))
    shape = (dims[2], dims[1], dims[0])
    # B = B_harris + (dpsi/dy, -dpsi/dx, 0); psi = psi0 cos(kx X) cos(ky Y)
    bx = b0 * np.tanh(s) - psi0 * ky * cx * sy
    by = psi0 * kx * sx * cy + 0 * y
    bz = np.full(shape, guide)
    # J = curl B (z-independent fields): Jx = dBz/dy = 0, Jy = -dBz/dx = 0, Jz = dBy/dx - dBx/dy
    jz = psi0 * kx * kx * cx * cy - b0 / SHEET_HALF_THICKNESS * sech2 + (-psi0 * ky * ky * cx * cy)
    zero = np.zeros(shape)
    b = np.stack([np.broadcast_to(v, shape) for v in (bx, by, bz)], axis=-1).astype(dtype)
    j = np.stack([zero, zero, np.broadcast_to(jz, shape)], axis=-1).astype(dtype)
    rho = np.broadcast_to(sech2 + 0.2, shape).astype(dtype)
    geometry = dict(origin=(x0, y0_, z0), spacing=spacing)
    return {"B": Field(b, components=("x", "y", "z"), unit="B0", **geometry),
            "J": Field(j, components=("x", "y", "z"), unit="B0/L", **geometry),
            "rho": Field(rho, unit="n0", **geometry)}
