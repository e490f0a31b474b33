#!/usr/bin/env python3
"""Writing from a running simulation: FBPIC (``pip install fbpic``) drives a laser wakefield
in a plasma (the laser-wakefield example of FBPIC's documentation, on a smaller box), and a
diagnostic of motes' own hands the electrons to motes every ``--period`` iterations.
``motes.Writer(background=True)`` copies the arrays and returns at once: the layout, the
indexes and the files are made on motes' threads, nicer than FBPIC's (``nice``), while the
plasma moves on, and each dump is published, indexed, as soon as it is written. A reader in
another process (``motes.follow``, ``motes serve``) sees each dump then.

    .venv/bin/python examples/fbpic_live.py --out /tmp/lwfa.motes
    .venv/bin/python examples/fbpic_live.py --out /tmp/lwfa.motes --openpmd /tmp/lwfa-h5  # and FBPIC's own output

The columns are those ``motes convert`` makes of FBPIC's own openPMD output
(docs/convert-openpmd.md), with the same values: ``x y z`` (m), ``momentum_x/_y/_z`` (u m c,
kg m/s, as FBPIC writes them), ``weighting`` and ``id``; each step's time is the iteration's
time (s). With ``--openpmd DIR`` FBPIC's ParticleDiagnostic writes the same iterations into
DIR as well, so the two can be compared (the tests do, bit for bit). It prints how long each
hand-over held FBPIC and, at the end, what the dataset holds.
"""

import argparse
import os
import shutil
import sys
import time

os.environ.setdefault("FBPIC_DISABLE_THREADING", "1")  # FBPIC on one core; motes writes on the others
os.environ.setdefault("NUMBA_NUM_THREADS", "1")


class MotesDiagnostic:
    """An FBPIC diagnostic (FBPIC calls ``write(iteration)`` on each of ``sim.diags`` every
    iteration, after the fields are gathered onto the particles): every ``period`` iterations
    the species' particles go to a background motes writer, as FBPIC's ParticleDiagnostic
    would write them."""

    def __init__(self, writer, period, species, dt):
        self.writer, self.period, self.species, self.dt = writer, period, species, dt
        self.held = []  # seconds FBPIC waited at each hand-over

    def write(self, iteration):
        if iteration % self.period:
            return
        from scipy.constants import c

        t0 = time.perf_counter()
        step = {}
        for name, sp in self.species.items():
            scale = sp.m * c  # FBPIC keeps u = gamma v / c; its openPMD output is u m c (kg m/s)
            step[name] = {"x": sp.x, "y": sp.y, "z": sp.z,  # FBPIC's arrays: the writer copies them
                          "momentum_x": sp.ux * scale, "momentum_y": sp.uy * scale, "momentum_z": sp.uz * scale,
                          "weighting": sp.w, "id": sp.tracker.id}
        units = {name: {"x": "m", "y": "m", "z": "m", "momentum_x": "kg*m/s", "momentum_y": "kg*m/s",
                        "momentum_z": "kg*m/s"} for name in step}
        self.writer.write_step(iteration, step, time=iteration * self.dt, units=units)
        self.held.append(time.perf_counter() - t0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="lwfa.motes", help="dataset to write (replaced)")
    p.add_argument("--iterations", type=int, default=400, help="PIC iterations to run")
    p.add_argument("--period", type=int, default=100, help="iterations between dumps")
    p.add_argument("--nz", type=int, default=400, help="cells along z (the documentation's example: 800)")
    p.add_argument("--nr", type=int, default=50, help="cells along r")
    p.add_argument("--openpmd", default=None, metavar="DIR", help="FBPIC's own openPMD output of the same dumps, too")
    a = p.parse_args(argv)

    import numpy as np
    from scipy.constants import c, e, m_e
    from fbpic.lpa_utils.laser import add_laser
    from fbpic.main import Simulation

    import motes

    shutil.rmtree(a.out, ignore_errors=True)
    # The box, the plasma and the laser of FBPIC's laser-wakefield example, the box shorter
    zmin, zmax, rmax, nm = -10.e-6, 10.e-6 + 20.e-6 * a.nz / 800, 20.e-6, 2
    dt = (zmax - zmin) / a.nz / c
    p_zmin, ramp = zmax - 2.2e-6, 10.e-6  # the plasma starts just inside the box, the laser reaches it soon

    def density(z, r):
        n = np.ones_like(z)
        n = np.where(z < p_zmin + ramp, (z - p_zmin) / ramp, n)
        return np.where(z < p_zmin, 0., n)

    np.random.seed(0)
    sim = Simulation(a.nz, zmax, a.nr, rmax, nm, dt, zmin=zmin, boundaries={"z": "open", "r": "reflective"},
                     n_order=-1, use_cuda=False, verbose_level=0)
    electrons = sim.add_new_species(q=-e, m=m_e, n=4.e24, dens_func=density, p_zmin=p_zmin, p_zmax=500.e-6,
                                    p_rmax=14.4e-6, p_nz=2, p_nr=1, p_nt=4)
    add_laser(sim, 4., 5.e-6, 5.e-6, zmax - 10.e-6)
    electrons.track(sim.comm)  # ids, so a particle can be followed from dump to dump
    sim.set_moving_window(v=c)

    # nice: motes' threads yield the cores to FBPIC's; write_step holds FBPIC only for the copy
    writer = motes.Writer(a.out, background=True, nice=10)
    live = MotesDiagnostic(writer, a.period, {"electrons": electrons}, dt)
    sim.diags = [live]
    if a.openpmd:
        from fbpic.openpmd_diag import ParticleDiagnostic

        shutil.rmtree(a.openpmd, ignore_errors=True)
        sim.diags.append(ParticleDiagnostic(a.period, {"electrons": electrons}, comm=sim.comm, write_dir=a.openpmd,
                                            particle_data=["position", "momentum", "weighting"]))
    t0 = time.perf_counter()
    sim.step(a.iterations + 1, show_progress=False)
    ran = time.perf_counter() - t0
    writer.close()  # waits for the dumps still being written

    ds = motes.open(a.out)
    held = sorted(live.held)
    print(f"{len(ds.steps)} dumps in {ran:.2f} s of FBPIC ({a.iterations} iterations); each hand-over held FBPIC "
          f"{1000 * held[0]:.1f}-{1000 * held[-1]:.1f} ms (median {1000 * held[len(held) // 2]:.1f})")
    last = ds.steps[-1]
    forward = ds.count(f"momentum_z > {m_e * c!r}", step=last, species="electrons")  # u_z > 1: pushed by the wake
    print(f"iteration {last} (t = {ds.times[-1] * 1e15:.1f} fs): {ds.count(step=last, species='electrons'):,} "
          f"electrons, {forward:,} with u_z > 1; {os.path.abspath(a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
