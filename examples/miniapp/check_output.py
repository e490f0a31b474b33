"""Checks a dataset written by the jets mini-apps (run by ctest after them).

    python examples/miniapp/check_output.py DIR EXPECTED_STEPS

EXPECTED_STEPS is a comma-separated list of step indexes ("5,10,15,20"; a single
one as "5,"), or else a number of steps. For every step: particles are present, their ids are unique,
positions lie in the unit box, energy is 0.5 |u|^2, and the indexed query
"energy > 0.5" returns exactly what a numpy brute force over all particles does.
"""

import sys

import numpy as np

import motes

WHERE = "energy > 0.5"


def fail(message):
    print(f"check_output: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check_step(ds, step):
    everything = ds.query(step=step)
    n = len(everything)
    if n == 0:
        fail(f"step {step} holds no particles")
    if ds.count(step=step) != n:
        fail(f"step {step}: count() says {ds.count(step=step)}, query() returned {n}")
    missing = {"x", "y", "z", "ux", "uy", "uz", "energy", "id", "jet"} - set(everything)
    if missing:
        fail(f"step {step}: columns {sorted(missing)} are missing (has {sorted(everything)})")
    ids = everything["id"]
    if len(np.unique(ids)) != n:
        fail(f"step {step}: {n - len(np.unique(ids))} duplicate ids")
    for axis in "xyz":
        v = everything[axis]
        if not (np.all(v >= 0) and np.all(v <= 1)):
            fail(f"step {step}: {axis} leaves the unit box ({v.min()} .. {v.max()})")
    u2 = sum(everything[c].astype(np.float64) ** 2 for c in ("ux", "uy", "uz"))
    if not np.allclose(everything["energy"], 0.5 * u2, rtol=1e-5, atol=1e-7):
        fail(f"step {step}: energy is not 0.5 |u|^2")

    # The query through the indexes against a brute force over the same particles;
    # rows may come back in another order, so both sides are compared sorted by id.
    mask = everything["energy"] > 0.5
    got = ds.query(WHERE, step=step)
    if len(got) != int(mask.sum()) or ds.count(WHERE, step=step) != int(mask.sum()):
        fail(f"step {step}: '{WHERE}' gives {len(got)} rows, brute force {int(mask.sum())}")
    order_got = np.argsort(got["id"], kind="stable")
    order_want = np.argsort(ids[mask], kind="stable")
    for name, column in everything.items():
        if not np.array_equal(got[name][order_got], column[mask][order_want]):
            fail(f"step {step}: column '{name}' of '{WHERE}' differs from the brute force")
    if "density" in ds.field_names(step):  # the Fortran mini-app: particles per cell, from every rank's slab
        check_density(ds, step, everything)
    return n, int(mask.sum())


def check_density(ds, step, p):
    """The density field equals numpy's count of the particles per cell, binned as jets.f90
    bins them (float32 products, truncation, a particle counted in its rank's slab)."""
    f = ds.field("density", step)
    nx, ny, nz = f.dims
    ranks = ds.step(step).attributes["ranks"]
    x, y, z = (p[a].astype(np.float32) for a in "xyz")
    owner = np.minimum(ranks - 1, (x * np.float32(ranks)).astype(np.int64))
    lo = owner * (nx // ranks)
    ci = np.clip((x * np.float32(nx)).astype(np.int64), lo, lo + nx // ranks - 1)
    cj = np.minimum((y * np.float32(ny)).astype(np.int64), ny - 1)
    ck = np.minimum((z * np.float32(nz)).astype(np.int64), nz - 1)
    want = np.zeros((nz, ny, nx), np.float32)
    np.add.at(want, (ck, cj, ci), 1)
    got = f.read()
    if not np.array_equal(got, want):
        fail(f"step {step}: the density field differs from numpy's count in {int((got != want).sum())} cells")
    if f.centering != "cell" or f.unit != "particles per cell":
        fail(f"step {step}: the density field's metadata is {f.centering!r}, {f.unit!r}")


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    path, expected = sys.argv[1], sys.argv[2]
    ds = motes.open(path)
    if "," in expected:
        want = [int(s) for s in expected.split(",") if s]
        if ds.steps != want:
            fail(f"steps are {ds.steps}, expected {want}")
    elif len(ds.steps) != int(expected):
        fail(f"{len(ds.steps)} steps ({ds.steps}), expected {expected}")
    for step in ds.steps:
        if "dt" not in ds.step(step).attributes:
            fail(f"step {step}: attributes {ds.step(step).attributes} lack 'dt'")
        n, hot = check_step(ds, step)
        print(f"step {step:5d}: {n:8d} particles, {hot:8d} with {WHERE}: ok")
    print(f"check_output: {path}: {len(ds.steps)} steps ok")


if __name__ == "__main__":
    main()
