#!/usr/bin/env python3
"""A real beam-dynamics series from ImpactX (``pip install impactx-noacc``, the WarpX family's
code for beamlines): a 2 GeV electron bunch (Waterbag distribution, ImpactX's FODO example
beam) through a FODO-like cell of drifts and quadrupoles, with a ``BeamMonitor`` between the
elements. ImpactX itself writes the monitor, as openPMD HDF5 in ``OUT/diags/openPMD/monitor.h5``
(one group-based file, an iteration per monitor pass): ``position/{x,y,t}``,
``momentum/{x,y,t}``, ``spin/{x,y,z}``, ``qm``, ``weighting``, ``id`` (uint64), constant
``positionOffset/{x,y,t}`` (the reference particle), the iteration ``time`` being the path
length s in metres, and the reference particle's ``*_ref`` attributes on the species.

    .venv/bin/python bench/gen_impactx.py --out /tmp/impactx --particles 10000
    .venv/bin/python bench/gen_impactx.py --out /tmp/impactx --particles 100000 --cells 4

It prints the monitor file's path. ImpactX (AMReX) starts and ends once per process, so run
it as a script; tests do (``tests/python/convert/test_openpmd_layouts.py``)."""

from __future__ import annotations

import argparse
import os
import sys


def run(out: str, particles: int, cells: int, slices: int) -> str:
    """Runs ImpactX in ``out`` (its diags/ folder is written there); returns the monitor file."""
    from impactx import ImpactX, distribution, elements

    os.makedirs(out, exist_ok=True)
    os.chdir(out)  # ImpactX writes diags/ in the working directory
    sim = ImpactX()
    sim.particle_shape = 2
    sim.space_charge = False
    sim.slice_step_diagnostics = False
    sim.init_grids()
    ref = sim.particle_container().ref_particle()
    ref.set_charge_qe(-1.0).set_mass_MeV(0.510998950).set_kin_energy_MeV(2.0e3)
    beam = distribution.Waterbag(lambdaX=3.9984884770e-5, lambdaY=3.9984884770e-5, lambdaT=1.0e-3,
                                 lambdaPx=2.6623538760e-5, lambdaPy=2.6623538760e-5, lambdaPt=2.0e-3,
                                 muxpx=-0.846574929020762, muypy=0.846574929020762, mutpt=0.0)
    sim.add_particles(1.0e-9, beam, particles)
    monitor = elements.BeamMonitor("monitor", backend="h5")
    lattice = [monitor]
    for k in range(cells):
        lattice += [elements.Drift(name=f"drift{k}a", ds=0.25, nslice=slices), monitor,
                    elements.Quad(name=f"quad{k}f", ds=1.0, k=1.0, nslice=slices), monitor,
                    elements.Drift(name=f"drift{k}b", ds=0.5, nslice=slices), monitor,
                    elements.Quad(name=f"quad{k}d", ds=1.0, k=-1.0, nslice=slices), monitor]
    sim.lattice.extend(lattice)
    sim.track_particles()
    sim.finalize()
    return os.path.join(out, "diags", "openPMD", "monitor.h5")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder to run in (diags/ is written there)")
    p.add_argument("--particles", type=int, default=10_000, help="macro particles (default 10000)")
    p.add_argument("--cells", type=int, default=1, help="FODO cells: 4 monitor passes each, plus the first")
    p.add_argument("--slices", type=int, default=5, help="slices per element (default 5)")
    a = p.parse_args(argv)
    path = run(os.path.abspath(a.out), a.particles, a.cells, a.slices)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
