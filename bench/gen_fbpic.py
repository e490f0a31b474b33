#!/usr/bin/env python3
"""A real plasma PIC series from FBPIC (spectral quasi-cylindrical PIC): the laser-wakefield
example of FBPIC's documentation (docs/source/example_input/lwfa_script.py: 800 x 50 (z, r)
cells, 2 azimuthal modes, a0 = 4, w0 = 5 um, ctau = 5 um laser, n_e = 4e18 cm^-3 plasma with a
linear ramp, a moving window at c), shrunk to run in a few minutes on one CPU core:

* the run is short (3 x 161 steps instead of 1,800), so the plasma begins 2.2 um inside the box's
  right edge (``p_zmin = 27.8 um``, ramp 10 um instead of 40) and the laser starts at
  ``z0 = 20 um`` instead of 15 (its front reaches the plasma after ~8 um, then drives a wake
  for ~16 um);
* 8 particles per cell (``p_nz = 2, p_nr = 1, p_nt = 4``; the example has 16) out to
  ``p_rmax = 14.4 um`` (the example: 18 um);
* no ``select`` on the particle diagnostic (the example writes only electrons with uz > 1):
  every electron is written, with its id (``track``), at iterations 0, 161, 322 and 483.

The plasma enters the box as the window moves, so the electrons grow from ~13k to ~174k over
the 4 dumps (FBPIC injects them ahead of the box's edge as it moves). FBPIC writes them itself as openPMD HDF5, ``OUT/hdf5/data%08d.h5``; this script then
saves per dump ``OUT/electrons_%08d.npz`` with the electrons' columns in FBPIC's own row order
(the order of the HDF5 datasets), as FBPIC writes them: ``x y z`` (position, metres),
``ux uy uz`` (FBPIC's ``momentum`` record: u * m_e * c in kg m/s, unitSI 1; divide by m_e c for
the dimensionless u FBPIC uses inside), ``w`` (weighting), all float64, and ``id`` (uint64, as
FBPIC's tracker writes it); scalars ``iteration``, ``time`` (s), ``code = "fbpic"``.

Run it with a venv that holds FBPIC (``python3 -m venv /work/venvs/pysco &&
/work/venvs/pysco/bin/pip install fbpic``; numba compiles FBPIC's kernels on the first run)::

    /work/venvs/pysco/bin/python bench/gen_fbpic.py --out /work/data/fbpic          # skips if done
    /work/venvs/pysco/bin/python bench/gen_fbpic.py --out /work/data/fbpic --force  # runs again
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # one core, as the brief for this data set says
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("FBPIC_DISABLE_THREADING", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import generated, save_npz  # noqa: E402

DUMPS = 4
PERIOD = 161  # steps between dumps: dumps at 0, 161, 322, 483


def run(out: str, period: int) -> None:
    from scipy.constants import c, e, m_e
    from fbpic.lpa_utils.laser import add_laser
    from fbpic.main import Simulation
    from fbpic.openpmd_diag import ParticleDiagnostic

    # The box, as in the example
    Nz, zmax, zmin = 800, 30.e-6, -10.e-6
    Nr, rmax, Nm = 50, 20.e-6, 2
    dt = (zmax - zmin) / Nz / c
    # The plasma (shrunk: see the docstring)
    p_zmin, p_zmax, p_rmax = 27.8e-6, 500.e-6, 14.4e-6
    n_e = 4.e18 * 1.e6
    p_nz, p_nr, p_nt = 2, 1, 4
    ramp_start, ramp_length = 27.8e-6, 10.e-6
    # The laser
    a0, w0, ctau, z0 = 4., 5.e-6, 5.e-6, 20.e-6

    def dens_func(z, r):
        n = np.ones_like(z)
        n = np.where(z < ramp_start + ramp_length, (z - ramp_start) / ramp_length, n)
        n = np.where(z < ramp_start, 0., n)
        return n

    np.random.seed(0)
    sim = Simulation(Nz, zmax, Nr, rmax, Nm, dt, zmin=zmin, boundaries={"z": "open", "r": "reflective"},
                     n_order=-1, use_cuda=False, verbose_level=1)
    elec = sim.add_new_species(q=-e, m=m_e, n=n_e, dens_func=dens_func, p_zmin=p_zmin, p_zmax=p_zmax,
                               p_rmax=p_rmax, p_nz=p_nz, p_nr=p_nr, p_nt=p_nt)
    add_laser(sim, a0, w0, ctau, z0)
    elec.track(sim.comm)
    sim.set_moving_window(v=c)
    sim.diags = [ParticleDiagnostic(period, {"electrons": elec}, comm=sim.comm, write_dir=out,
                                    particle_data=["position", "momentum", "weighting"])]
    t0 = time.perf_counter()
    sim.step((DUMPS - 1) * period + 1, show_progress=False)
    print(f"fbpic: {(DUMPS - 1) * period + 1} steps in {time.perf_counter() - t0:.1f} s", flush=True)


def save_dump(h5path: str, out: str) -> str:
    import h5py

    with h5py.File(h5path, "r") as f:
        (it_name, it), = f["data"].items()
        sp = it["particles/electrons"]
        cols = {}
        for name, path in (("x", "position/x"), ("y", "position/y"), ("z", "position/z"),
                           ("ux", "momentum/x"), ("uy", "momentum/y"), ("uz", "momentum/z"),
                           ("w", "weighting"), ("id", "id")):
            if path in sp and isinstance(sp[path], h5py.Dataset):
                cols[name] = sp[path][...]
        scalars = {"iteration": np.int64(int(it_name)),
                   "time": np.float64(float(it.attrs["time"]) * float(it.attrs["timeUnitSI"])),
                   "code": np.str_("fbpic")}
    return save_npz(os.path.join(out, f"electrons_{int(it_name):08d}.npz"), **cols, **scalars)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="/work/data/fbpic")
    p.add_argument("--force", action="store_true", help="run again even if the dumps are there")
    p.add_argument("--period", type=int, default=PERIOD, help="steps between the 4 dumps")
    args = p.parse_args(argv)
    out = os.path.abspath(args.out)
    if generated(out, "electrons_*.npz", DUMPS, "dumps", args.force):
        return 0
    os.makedirs(out)
    run(out, args.period)
    files = sorted(glob.glob(os.path.join(out, "hdf5", "data*.h5")))
    assert len(files) == DUMPS, files
    for h5 in files:
        path = save_dump(h5, out)
        with np.load(path) as d:
            print(f"wrote {path} (from {h5}; iteration {int(d['iteration'])}, {len(d['x']):,} electrons, "
                  f"columns {[k for k in d.files if d[k].ndim == 1]})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
