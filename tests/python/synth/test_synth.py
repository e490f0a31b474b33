"""Tests for motes.synth (seeded synthetic particle datasets)."""

import numpy as np
import pytest

from motes import synth

KINDS = ("uniform", "clustered", "vpic", "wide", "jets", "column")

F4, F8, U8 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.uint64)

EXPECTED = {
    "uniform": [("x", F4), ("y", F4), ("z", F4), ("ux", F4), ("uy", F4),
                ("uz", F4), ("energy", F4)],
    "clustered": [("x", F4), ("y", F4), ("z", F4), ("ux", F4), ("uy", F4),
                  ("uz", F4), ("energy", F4), ("mass", F8)],
    "vpic": [("x", F4), ("y", F4), ("z", F4), ("ux", F4), ("uy", F4),
             ("uz", F4), ("energy", F4), ("q", F4)],
    "wide": [("x", F4), ("y", F4), ("z", F4)]
    + [(f"a{i}", F8) for i in range(14)],
    "jets": [("x", F4), ("y", F4), ("z", F4), ("ux", F4), ("uy", F4),
             ("uz", F4), ("energy", F4), ("jet", np.dtype(np.int8))],
    "column": [("x", F4), ("y", F4), ("z", F4), ("ux", F4), ("uy", F4),
               ("uz", F4), ("energy", F4), ("density", F4)],
}

N_SMALL = 20_000
N_BIG = 2_000_000


def _schema(d):
    return [(k, v.dtype) for k, v in d.items()]


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def big_clustered():
    return synth.clustered(N_BIG, seed=0)


@pytest.fixture(scope="module")
def big_vpic():
    return synth.vpic(N_BIG, seed=0)


# ---------------------------------------------------------------- schema
def test_registry():
    assert list(synth.GENERATORS) == list(KINDS)
    for k in KINDS:
        assert synth.GENERATORS[k] is getattr(synth, k)


@pytest.mark.parametrize("kind", KINDS)
def test_columns_dtypes_lengths(kind):
    d = synth.generate(kind, N_SMALL, seed=3)
    assert _schema(d) == EXPECTED[kind]
    for k, v in d.items():
        assert v.ndim == 1, k
        assert len(v) == N_SMALL, k
        assert v.flags.c_contiguous, k
    # the generator function and generate() agree
    d2 = synth.GENERATORS[kind](N_SMALL, seed=3)
    assert _schema(d2) == EXPECTED[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_with_id(kind):
    d = synth.generate(kind, N_SMALL, seed=5, with_id=True)
    assert _schema(d) == EXPECTED[kind] + [("id", U8)]
    ids = d["id"]
    assert ids.flags.c_contiguous and len(ids) == N_SMALL
    assert np.array_equal(np.sort(ids), np.arange(N_SMALL, dtype=np.uint64))
    assert not np.array_equal(ids, np.arange(N_SMALL, dtype=np.uint64))
    # ids are seeded, and switching them on does not change the data
    again = synth.generate(kind, N_SMALL, seed=5, with_id=True)
    assert np.array_equal(ids, again["id"])
    other = synth.generate(kind, N_SMALL, seed=6, with_id=True)
    assert not np.array_equal(ids, other["id"])
    plain = synth.generate(kind, N_SMALL, seed=5)
    for k in plain:
        assert np.array_equal(plain[k], d[k]), k


@pytest.mark.parametrize("kind", KINDS)
def test_float64_positions(kind):
    d = synth.GENERATORS[kind](1000, seed=1, dtype=np.float64)
    exp = [(k, F8 if k in "xyz" else t) for k, t in EXPECTED[kind]]
    assert _schema(d) == exp


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_identical(kind):
    a = synth.generate(kind, N_SMALL, seed=11)
    b = synth.generate(kind, N_SMALL, seed=11)
    assert list(a) == list(b)
    for k in a:
        assert np.array_equal(a[k], b[k]), k


@pytest.mark.parametrize("kind", KINDS)
def test_different_seed_differs(kind):
    a = synth.generate(kind, N_SMALL, seed=11)
    b = synth.generate(kind, N_SMALL, seed=12)
    for k in ("x", "y", "z", "energy" if "energy" in a else "a0"):
        assert not np.array_equal(a[k], b[k]), k


# ---------------------------------------------------------------- edge cases
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("with_id", [False, True])
def test_zero_particles(kind, with_id):
    d = synth.generate(kind, 0, with_id=with_id)
    exp = EXPECTED[kind] + ([("id", U8)] if with_id else [])
    assert _schema(d) == exp
    for v in d.values():
        assert v.shape == (0,)


@pytest.mark.parametrize("kind", KINDS)
def test_negative_n(kind):
    with pytest.raises(ValueError, match="n must be >= 0"):
        synth.generate(kind, -1)
    with pytest.raises(ValueError, match="n must be >= 0"):
        synth.GENERATORS[kind](-5, seed=1)


def test_unknown_kind():
    with pytest.raises(ValueError) as ei:
        synth.generate("nope", 10)
    msg = str(ei.value)
    assert "nope" in msg
    for k in KINDS:
        assert k in msg


def test_bad_dtype():
    with pytest.raises(ValueError, match="dtype"):
        synth.uniform(10, dtype=np.int32)


# ---------------------------------------------------------------- contents
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_positions_in_bounds(kind, dtype):
    d = synth.GENERATORS[kind](200_000, seed=2, dtype=dtype)
    for axis, (lo, hi) in zip("xyz", synth.BOUNDS[kind]):
        v = d[axis]
        assert np.all(np.isfinite(v)), axis
        assert v.min() >= lo, axis
        assert v.max() < hi, axis


def test_vpic_bounds_not_cube():
    assert synth.BOUNDS["vpic"] == ((0.0, 200.0), (0.0, 100.0), (0.0, 50.0))


def test_uniform_energy():
    d = synth.uniform(N_SMALL, seed=4)
    e = 0.5 * (d["ux"].astype(np.float64) ** 2 + d["uy"] ** 2.0
               + d["uz"] ** 2.0)
    np.testing.assert_allclose(d["energy"], e, rtol=1e-5)


def test_clustered_attributes():
    d = synth.clustered(N_SMALL, seed=4)
    assert np.all(d["mass"] > 0)
    e = 0.5 * (d["ux"].astype(np.float64) ** 2 + d["uy"] ** 2.0
               + d["uz"] ** 2.0)
    np.testing.assert_allclose(d["energy"], e, rtol=1e-5)


def test_vpic_charge():
    q = synth.vpic(N_SMALL, seed=4)["q"]
    vals, counts = np.unique(q, return_counts=True)
    assert vals.tolist() == [-1.0, 1.0]
    assert abs(counts[0] - counts[1]) < 0.05 * N_SMALL


def test_wide_attributes():
    d = synth.wide(N_SMALL, seed=4)
    for i in range(14):
        assert np.all(np.isfinite(d[f"a{i}"]))
    x, y, z = (d[k].astype(F8) for k in "xyz")
    np.testing.assert_allclose(d["a1"], x + y + z, rtol=1e-12)
    np.testing.assert_allclose(d["a11"], x * y * z, rtol=1e-12)


# ---------------------------------------------------------------- clustering
# density_contrast: 32^3 grid over the domain; max cell count divided by the
# mean count of the emptiest 10% of non-empty cells (conservative: the
# denominator is >= 1).
def test_density_contrast_uniform_is_low():
    d = synth.uniform(N_BIG // 4, seed=0)
    c = synth.density_contrast(d, synth.BOUNDS["uniform"])
    assert 1.0 <= c < 5.0


def test_clustered_density_contrast(big_clustered):
    c = synth.density_contrast(big_clustered, synth.BOUNDS["clustered"])
    assert c >= 1000.0


def test_vpic_density_contrast(big_vpic):
    c = synth.density_contrast(big_vpic, synth.BOUNDS["vpic"])
    assert c >= 1000.0


def test_vpic_energy_spatially_compact(big_vpic):
    d = big_vpic
    e = d["energy"]
    sel = e > np.quantile(e, 0.999)
    assert 0.0009 * N_BIG <= sel.sum() <= 0.0011 * N_BIG
    (x0, x1), (y0, y1), _ = synth.BOUNDS["vpic"]
    assert np.ptp(d["y"][sel]) < 0.05 * (y1 - y0)
    assert np.ptp(d["x"][sel]) < 0.25 * (x1 - x0)


def test_vpic_momentum_spatially_random(big_vpic):
    d = big_vpic
    ux = d["ux"]
    sel = ux > np.quantile(ux, 0.999)
    (x0, x1), (y0, y1), _ = synth.BOUNDS["vpic"]
    assert np.ptp(d["x"][sel]) > 0.8 * (x1 - x0)
    assert np.ptp(d["y"][sel]) > 0.8 * (y1 - y0)


def test_vpic_energy_smooth(big_vpic):
    """Energy is a smooth field: particles close in space have close energy."""
    d = big_vpic
    m = 200_000
    x = d["x"][:m].astype(F8)
    y = d["y"][:m].astype(F8)
    z = d["z"][:m].astype(F8)
    e = d["energy"][:m].astype(F8)
    # sort into fine cells; neighbours in that order are spatially close
    key = (np.floor(x / 2.0) * 1e6 + np.floor(y / 0.5) * 1e3
           + np.floor(z / 2.0))
    o = np.argsort(key, kind="stable")
    same = np.diff(key[o]) == 0
    de = np.abs(np.diff(e[o]))[same]
    rel = de / e[o][1:][same]
    assert np.median(rel) < 0.05
    # whereas randomly paired particles differ a lot more
    rnd = np.abs(e[1:] - e[:-1]) / e[1:]
    assert np.median(rnd) > 3 * np.median(rel)


@pytest.mark.parametrize("kind", ["jets", "column"])
def test_scale_distributions_are_strongly_nonuniform(kind):
    d = synth.generate(kind, 400_000, seed=2)
    assert synth.density_contrast(d) > 1000
    assert np.allclose(d["energy"], 0.5 * (d["ux"] ** 2 + d["uy"] ** 2 + d["uz"] ** 2), rtol=1e-5)


def test_jets_labels_and_direction():
    d = synth.jets(200_000, seed=4)
    assert set(np.unique(d["jet"])) == {-1, 0, 1, 2}
    assert d["ux"][d["jet"] == 0].mean() > 0.8  # the x-wall jet points along +x
    assert d["uz"][d["jet"] == 2].mean() < -0.8  # the top jet points down
