#!/usr/bin/env python3
"""A real cosmological N-body series from pysco (PySCo, Breton 2024: particle-mesh with a
multigrid Poisson solver), for benchmarks on the data a code writes rather than on synthetic
data: 128^3 = 2,097,152 dark-matter particles in a 100 Mpc/h box, 2LPT initial conditions at
z = 49 from a linear power spectrum computed with CAMB, then the run to z = 0 with snapshots at
z = 49 (the initial conditions, pysco's output_00000), 10, 5, 3, 2, 1 and 0: 7 snapshots.

pysco writes each snapshot itself (HDF5: ``position`` and ``velocity``, float32 (N, 3), and its
parameters as attributes) under ``OUT/run/output_NNNNN/``. This script then saves per snapshot
``OUT/snap_NNNNN.npz`` with, in pysco's own row order (the order its arrays have in the HDF5
file; pysco sorts its particles along a Morton curve every ``n_reorder`` steps):

* ``x y z``: positions in box units [0, 1), float32 as pysco gives them;
* ``vx vy vz``: velocities in pysco's box units, float32 as pysco gives them;
* ``rho``: pysco gives no per-particle density, so this is computed here: a cloud-in-cell
  (CIC) deposit of the particles on a periodic 128^3 grid, in units of the mean density
  (1 + delta), interpolated back to each particle with the same CIC weights; float32;
* ``id``: int64, the particle's row index in the snapshot (numpy.arange), as the brief asks.
  pysco itself stores no identity: the initial conditions are in Lagrangian lattice order, so
  while no reordering has happened the row index is the Lagrangian index; after a reorder it
  is not the same particle from snapshot to snapshot (``reordered`` says which snapshots);
* scalars: ``iteration`` (pysco's step count), ``time`` (its supercomoving time), ``aexp``,
  ``redshift``, ``boxlen`` (Mpc/h), ``H0``, ``Om_m``, ``Om_lambda``, ``mpart`` (kg),
  ``reordered`` (bool), ``code = "pysco"``.

Run it with the venv that holds pysco (``python3 -m venv /work/venvs/pysco &&
/work/venvs/pysco/bin/pip install pysco-nbody camb``)::

    /work/venvs/pysco/bin/python bench/gen_pysco.py --out /work/data/pysco          # skips if done
    /work/venvs/pysco/bin/python bench/gen_pysco.py --out /work/data/pysco --force  # runs again

``--npart-1d 64`` makes a small run for a quick check.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import generated, save_npz  # noqa: E402

Z_OUT = [10, 5, 3, 2, 1, 0]  # after the initial conditions at Z_START
Z_START = 49
BOXLEN = 100.0  # Mpc/h
# The cosmology of pysco's example (WMAP7-like, H0 = 72, Om_m = 0.25733), its power spectrum
# made with CAMB instead of read from the example's file.
H0, OMBH2, OM_M, NS, AS = 72.0, 0.02258, 0.25733, 0.963, 2.43e-9


def power_spectrum(path: str) -> None:
    """The linear matter power spectrum at z = 0 as pysco reads it: columns k [h/Mpc] and
    P(k) [(Mpc/h)^3]."""
    import camb

    h = H0 / 100.0
    omch2 = OM_M * h * h - OMBH2
    pars = camb.set_params(H0=H0, ombh2=OMBH2, omch2=omch2, ns=NS, As=AS, mnu=0.0, num_massive_neutrinos=0,
                           WantTransfer=True, kmax=50.0)
    pars.set_matter_power(redshifts=[0.0], kmax=50.0)
    pars.NonLinear = camb.model.NonLinear_none
    res = camb.get_results(pars)
    k, _, pk = res.get_matter_power_spectrum(minkh=1e-4, maxkh=40.0, npoints=2000)
    np.savetxt(path, np.c_[k, pk[0]], header=f"CAMB linear P(k) z=0, sigma8={res.get_sigma8_0():.4f}; k [h/Mpc] P [(Mpc/h)^3]")
    print(f"power spectrum: {path} (sigma8 = {res.get_sigma8_0():.4f})", flush=True)


def cic_density(pos: np.ndarray, n: int) -> np.ndarray:
    """Per-particle density (units of the mean) by a periodic CIC deposit on an n^3 grid,
    interpolated back with the same weights. ``pos`` in box units [0, 1), shape (N, 3)."""
    g = pos.astype(np.float64) * n - 0.5  # cell centres at (i + 0.5) / n
    i0 = np.floor(g).astype(np.int64)
    f = g - i0
    i0 %= n
    i1 = (i0 + 1) % n
    grid = np.zeros(n ** 3, dtype=np.float64)
    corners = []
    for cx in (0, 1):
        ix, wx = (i1[:, 0], f[:, 0]) if cx else (i0[:, 0], 1 - f[:, 0])
        for cy in (0, 1):
            iy, wy = (i1[:, 1], f[:, 1]) if cy else (i0[:, 1], 1 - f[:, 1])
            for cz in (0, 1):
                iz, wz = (i1[:, 2], f[:, 2]) if cz else (i0[:, 2], 1 - f[:, 2])
                idx = (ix * n + iy) * n + iz
                w = wx * wy * wz
                grid += np.bincount(idx, weights=w, minlength=n ** 3)
                corners.append((idx, w))
    grid *= n ** 3 / len(pos)  # mean 1
    rho = np.zeros(len(pos), dtype=np.float64)
    for idx, w in corners:
        rho += grid[idx] * w
    return rho.astype(np.float32)


def save_snapshot(h5path: str, out: str, index: int, reordered: bool, table: str) -> str:
    import h5py

    with h5py.File(h5path, "r") as f:
        pos = f["position"][...]
        vel = f["velocity"][...]
        a = dict(f.attrs)
    if "t" not in a:  # the initial conditions are written before pysco sets t: its own table's t(aexp)
        ev = np.loadtxt(table)
        a["t"] = float(np.interp(np.log(float(a["aexp"])), np.log(ev[:, 0]), ev[:, 2]))
    assert pos.dtype == np.float32 and vel.dtype == np.float32, (pos.dtype, vel.dtype)
    n1 = int(round(int(a["npart"]) ** (1 / 3)))
    cols = {"x": np.ascontiguousarray(pos[:, 0]), "y": np.ascontiguousarray(pos[:, 1]),
            "z": np.ascontiguousarray(pos[:, 2]), "vx": np.ascontiguousarray(vel[:, 0]),
            "vy": np.ascontiguousarray(vel[:, 1]), "vz": np.ascontiguousarray(vel[:, 2]),
            "rho": cic_density(pos, n1), "id": np.arange(len(pos), dtype=np.int64)}
    aexp = float(a["aexp"])
    scalars = {"iteration": np.int64(a.get("nsteps", 0)), "time": np.float64(a["t"]), "aexp": np.float64(aexp),
               "redshift": np.float64(1.0 / aexp - 1.0), "boxlen": np.float64(a["boxlen"]),
               "H0": np.float64(a["H0"]), "Om_m": np.float64(a["Om_m"]), "Om_lambda": np.float64(a["Om_lambda"]),
               "mpart": np.float64(a["mpart"]), "reordered": np.bool_(reordered), "code": np.str_("pysco")}
    return save_npz(os.path.join(out, f"snap_{index:05d}.npz"), **cols, **scalars)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="/work/data/pysco")
    p.add_argument("--force", action="store_true", help="run again even if the snapshots are there")
    p.add_argument("--npart-1d", type=int, default=128, help="particles per side (a power of 2)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--n-reorder", type=int, default=50, help="pysco's n_reorder (its example's value)")
    args = p.parse_args(argv)
    out = os.path.abspath(args.out)
    want = len(Z_OUT) + 1
    if generated(out, "snap_*.npz", want, "snapshots", args.force):
        return 0
    run = os.path.join(out, "run")
    os.makedirs(run)
    pk = os.path.join(out, "pk_camb_z0.dat")
    power_spectrum(pk)

    import pysco

    n1 = args.npart_1d
    ncoarse = int(round(np.log2(n1)))
    assert 2 ** ncoarse == n1, "--npart-1d must be a power of 2"
    param = {
        "nthreads": args.threads, "theory": "newton", "H0": H0, "Om_m": OM_M, "T_cmb": 2.726, "N_eff": 3.044,
        "w0": -1.0, "wa": 0.0, "boxlen": BOXLEN, "ncoarse": ncoarse, "npart": n1 ** 3, "z_start": Z_START,
        "seed": 42, "position_ICS": "center", "fixed_ICS": False, "paired_ICS": False, "dealiased_ICS": False,
        "power_spectrum_file": pk, "initial_conditions": "2LPT", "base": run + "/",
        "z_out": str(Z_OUT), "output_snapshot_format": "HDF5", "save_power_spectrum": "no",
        "integrator": "leapfrog", "n_reorder": args.n_reorder, "mass_scheme": "TSC", "Courant_factor": 1.0,
        "max_aexp_stepping": 10, "linear_newton_solver": "multigrid", "gradient_stencil_order": 5,
        "Npre": 2, "Npost": 1, "epsrel": 1e-2, "verbose": 1,
    }
    t0 = time.perf_counter()
    pysco.run(param)
    print(f"pysco: {n1}^3 particles, z = {Z_START} -> {Z_OUT[-1]} in {time.perf_counter() - t0:.1f} s", flush=True)

    snaps = sorted(glob.glob(os.path.join(run, "output_*", "particles_*.h5")))
    assert len(snaps) == want, snaps
    import h5py

    steps = []
    for h5 in snaps:
        with h5py.File(h5, "r") as f:
            steps.append(int(f.attrs.get("nsteps", 0)))
    for k, h5 in enumerate(snaps):
        reordered = steps[k] >= args.n_reorder  # pysco reorders after steps n_reorder, 2 n_reorder, ...
        path = save_snapshot(h5, out, k, reordered, os.path.join(run, "evolution_table_pysco.txt"))
        print(f"wrote {path} (from {h5}; step {steps[k]}{', after a Morton reorder' if reordered else ''})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
