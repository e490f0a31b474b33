#!/usr/bin/env python3
"""Writing from a running simulation: ImpactX (``pip install impactx-noacc``) tracks an
electron bunch through FODO cells, and a ``Programmable`` element between the magnets hands
the bunch to motes at each pass. ``motes.Writer(background=True)`` copies the arrays and
returns at once: the layout, the indexes and the files are made on motes' thread while the
beam moves on, and each pass is published, indexed, as soon as it is written. A reader in
another process (``motes.follow``, ``motes serve``) sees each pass then.

    .venv/bin/python examples/impactx_live.py --out /tmp/beam.motes --particles 100000 --cells 4

It prints how long each hand-over held the simulation and, at the end, what the dataset
holds. Positions go on motes' axes as ImpactX's own openPMD output goes (docs/
convert-openpmd.md): x, y, and t (the longitudinal position, m) on z; every step's time is
the reference particle's path length s (m), and its attributes keep the reference particle.
"""

import argparse
import os
import shutil
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="beam.motes", help="dataset to write (replaced)")
    p.add_argument("--particles", type=int, default=100_000)
    p.add_argument("--cells", type=int, default=2, help="FODO cells (4 passes handed over each)")
    a = p.parse_args(argv)

    import numpy as np
    from impactx import ImpactX, distribution, elements

    import motes

    shutil.rmtree(a.out, ignore_errors=True)
    sim = ImpactX()
    sim.particle_shape = 2
    sim.space_charge = False
    sim.slice_step_diagnostics = False
    sim.init_grids()
    ref = sim.particle_container().ref_particle()
    ref.set_charge_qe(-1.0).set_mass_MeV(0.510998950).set_kin_energy_MeV(2.0e3)
    sim.add_particles(1.0e-9, distribution.Waterbag(
        lambdaX=3.9984884770e-5, lambdaY=3.9984884770e-5, lambdaT=1.0e-3, lambdaPx=2.6623538760e-5,
        lambdaPy=2.6623538760e-5, lambdaPt=2.0e-3, muxpx=-0.846574929020762, muypy=0.846574929020762,
        mutpt=0.0), a.particles)

    # borrow: the arrays below are ours; nice: motes' threads yield the cores to ImpactX's
    writer = motes.Writer(a.out, background=True, borrow=True, nice=10)
    held = []

    def hand_over(pc, step, period=None):
        """Called by ImpactX at each pass: the bunch's columns to motes, in the background."""
        t0 = time.perf_counter()
        df = pc.to_df(local=True)  # a copy of the particles (pandas), ours to lend to the writer
        r = pc.ref_particle()
        columns = {"x": df["position_x"].to_numpy(), "y": df["position_y"].to_numpy(),
                   "z": df["position_t"].to_numpy(),  # t on motes' z axis, as ImpactX's openPMD imports
                   "momentum_x": df["momentum_x"].to_numpy(), "momentum_y": df["momentum_y"].to_numpy(),
                   "momentum_t": df["momentum_t"].to_numpy(), "qm": df["qm"].to_numpy(),
                   "weighting": df["weighting"].to_numpy(), "id": df["idcpu"].to_numpy().astype(np.uint64)}
        reference = {"s": r.s, "t": r.t, "x": r.x, "y": r.y, "gamma": r.gamma, "beta_gamma": r.beta_gamma}
        writer.write_step(step, {"beam": columns}, time=r.s,
                          attributes={"time_quantity": "path length s of the reference particle", "time_unit": "m",
                                      "reference_particle": {"beam": reference}},
                          units={"beam": {"x": "m", "y": "m", "z": "m"}})
        held.append(time.perf_counter() - t0)

    hook = elements.Programmable(name="motes")
    hook.push = hand_over
    lattice = [hook]
    for k in range(a.cells):
        lattice += [elements.Drift(name=f"d{k}a", ds=0.25, nslice=5), hook,
                    elements.Quad(name=f"q{k}f", ds=1.0, k=1.0, nslice=5), hook,
                    elements.Drift(name=f"d{k}b", ds=0.5, nslice=5), hook,
                    elements.Quad(name=f"q{k}d", ds=1.0, k=-1.0, nslice=5), hook]
    sim.lattice.extend(lattice)
    t0 = time.perf_counter()
    sim.track_particles()
    tracked = time.perf_counter() - t0
    sim.finalize()
    writer.close()  # waits for the passes still being written

    ds = motes.open(a.out)
    print(f"{len(ds.steps)} passes of {a.particles:,} particles in {tracked:.2f} s of tracking; each hand-over "
          f"held ImpactX {1000 * min(held):.1f}-{1000 * max(held):.1f} ms (median {1000 * sorted(held)[len(held) // 2]:.1f})")
    last = ds.steps[-1]
    core = ds.query("abs(z) < 1e-4", step=last, columns=["id", "z"])
    print(f"step {last} (s = {ds.times[-1]:.2f} m): {len(core):,} particles within 0.1 mm of the reference in t; "
          f"{os.path.abspath(a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
