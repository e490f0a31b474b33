#!/usr/bin/env python3
"""Writes the golden fixture of field file 1.1 with ``field-geometry`` (thetaMode fields,
docs/format.md §14.9) and manifest 1.5 (a field's ``geometry``) in
tests/golden/field_geometry/ (run once per format minor version, never to "fix" a failing
test).

One step holding two thetaMode fields: ``E`` (float64, components r, t, z, 3 modes: 5 mode
arrays each, cell-centred, imag "+", as FBPIC writes it) and ``rho`` (float32, scalar, 2
modes, node-centred, imag "-"), and a Cartesian field ``phi`` beside them (a 1.0 file).
``answers.json`` holds the SHA-256 of every read of ``queries.json`` (each component's modes at
every level, a box) and the geometry each reader reports, so the fixture stays small and pins every bit.

    python tests/golden/make_field_geometry.py
"""
import os

import numpy as np

import motes
import readback

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "field_geometry")


def fields():
    rng = np.random.default_rng(23)
    nz, nr = 40, 12
    e = rng.standard_normal((5, nr, nz, 3))
    rho = rng.standard_normal((3, nr + 1, nz - 3)).astype(np.float32)
    phi = rng.standard_normal((nr, nz)).astype(np.float32)
    return {"E": motes.Field(e, geometry="thetaMode", imag="+", origin=(-2e-5, 0.0), spacing=(5e-7, 1.25e-6),
                             centering="cell", components=("r", "t", "z"), unit="V/m"),
            "rho": motes.Field(rho, geometry="thetaMode", imag="-", origin=(-1.9e-5, 0.0), spacing=(5e-7, 1.25e-6)),
            "phi": motes.Field(phi, origin=(0, 0), spacing=(1, 1))}


def main():
    readback.clear(HERE)
    motes.write(os.path.join(HERE, "fields"), None, step=0, fields=fields(), sync=False)
    os.remove(os.path.join(HERE, "fields", ".lock"))  # the writer's lock file is not part of the fixture
    readback.write_answers(HERE)  # the reads of queries.json


if __name__ == "__main__":
    main()
