"""field('name'[, 'component']) in the query language: the field sampled at each particle's
position (trilinear, NaN outside the grid), in where of every query and analysis; answers
equal numpy on the values Dataset.sample gives."""

import numpy as np
import pytest

import motes
from motes import synth


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("fq") / "run.motes"
    p = synth.vpic(60_000, seed=4)
    motes.write(path, p, fields=synth.harris_fields((48, 40, 12)), sync=False)
    motes.write(path, synth.vpic(1000, seed=5), step=1, sync=False)  # a step without fields
    ds = motes.open(path)
    xyz = (p["x"], p["y"], p["z"])
    samples = {"jz": ds.sample("J", *xyz, step=0, component="z"), "bx": ds.sample("B", *xyz, step=0, component="x"),
               "rho": ds.sample("rho", *xyz, step=0)}
    return ds, p, samples


@pytest.mark.parametrize("where, mask", [
    ("field('J', 'z') < -0.2", lambda p, s: s["jz"] < -0.2),
    ("field('rho') > 0.5 and energy > 0.1", lambda p, s: (s["rho"] > 0.5) & (p["energy"] > 0.1)),
    ("abs(field('B', 'x')) < 0.3 or ux > 0.2", lambda p, s: (np.abs(s["bx"]) < 0.3) | (p["ux"] > np.float32(0.2))),
    ("field('B', 'x') * field('rho') > 0.1", lambda p, s: s["bx"] * s["rho"] > 0.1),
    ("not (field('rho') >= 0.3)", lambda p, s: ~(s["rho"] >= 0.3)),
])
def test_queries_and_analyses_with_fields_equal_numpy(run, where, mask):
    ds, p, s = run
    m = mask(p, s)
    assert m.any() and not m.all()
    assert ds.count(where, step=0) == int(m.sum())
    got = ds.query(where, columns=["energy"], step=0)["energy"]
    np.testing.assert_array_equal(np.sort(got), np.sort(p["energy"][m]))
    st = ds.stats("energy", where=where, step=0)
    assert st["count"] == int(m.sum()) and st["max"] == float(p["energy"][m].max())
    counts, edges = ds.histogram("energy", bins=16, range=(0, 2), where=where, step=0)
    want, _ = np.histogram(p["energy"][m].astype(np.float64), bins=16, range=(0, 2))
    np.testing.assert_array_equal(counts, want)


def test_field_errors_name_the_problem(run):
    ds, _, _ = run
    for where, needle in [("field('Bq') > 0", "no field 'Bq'"), ("field(Bq) > 0", "quoted field name"),
                          ("field('B') > 0", "pass component="), ("field('B', 'w') > 0", "no component 'w'"),
                          ("field('rho' > 0", "expected ')'"), ("field('rho) > 0", "unterminated"),
                          ("abs(field( \"','Ex\")) > 0", "is not a field name"),  # a libFuzzer find: it printed
                          ("field('rho', 'a b') > 0", "is not a component name")]:  # as text that read back otherwise
        with pytest.raises(motes.UsageError) as e:
            ds.count(where, step=0)
        assert needle in str(e.value), (where, str(e.value))
    with pytest.raises(motes.UsageError, match="no field 'rho'"):
        ds.count("field('rho') > 0", step=1)
    assert motes.parse_expression("field('E', 'x') > 1") == "(field('E', 'x') > 1)"


def test_fields_as_histogram_axes_and_output_columns(run):
    ds, p, s = run
    where = "energy > 0.05"
    m = p["energy"] > np.float32(0.05)
    counts, xe, ye = ds.histogram("energy", "field('J', 'z')", bins=(8, 12), where=where, step=0)
    v = s["jz"][m]
    want, wxe, wye = np.histogram2d(p["energy"][m].astype(np.float64), v, bins=[8, 12],
                                    range=[(float(p["energy"][m].min()), float(p["energy"][m].max())),
                                           (float(np.nanmin(v)), float(np.nanmax(v)))])
    np.testing.assert_array_equal(counts, want.astype(np.int64))
    np.testing.assert_array_equal(ye, wye)
    c1, e1 = ds.histogram("field('rho')", bins=10, range=(0, 1.5), weights="energy", step=0)
    w1, _ = np.histogram(s["rho"], bins=10, range=(0, 1.5), weights=p["energy"].astype(np.float64))
    np.testing.assert_allclose(c1, w1)
    t = ds.query("field('rho') > 0.4", columns=["energy", "x", "y", "z", "field('B', 'x')"], step=0)
    mm = s["rho"] > 0.4
    np.testing.assert_array_equal(np.sort(t["energy"]), np.sort(p["energy"][mm]))
    np.testing.assert_array_equal(t["field('B', 'x')"], ds.sample("B", t["x"], t["y"], t["z"], step=0, component="x"))
    assert list(t) == ["energy", "x", "y", "z", "field('B', 'x')"]
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        ds.query(columns=["nope", "field('rho')"], step=0)


def test_field_and_expression_axes_take_the_default_range_of_their_values(run):
    """Binned by the core over the range of the sampled values (NaN outside the grid not
    counted), as numpy bins them; the same in a histogram across steps, in stats, and with
    an expression of fields and columns."""
    ds, p, s = run
    rho = s["rho"]
    valid = rho[~np.isnan(rho)]
    counts, edges = ds.histogram("field('rho')", bins=9, step=0)
    want, want_edges = np.histogram(valid, bins=9)
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(edges, want_edges)
    st = ds.stats("field('rho')", step=0)
    assert (st["count"], st["valid"], st["min"], st["max"]) == (len(rho), len(valid), valid.min(), valid.max())
    across, across_edges, steps = ds.histogram("field('rho')", bins=9, steps=[0])
    np.testing.assert_array_equal(across[0], want)
    np.testing.assert_array_equal(across_edges, want_edges)
    assert list(steps) == [0]
    v = s["bx"] * 2 - p["energy"].astype(np.float64)
    counts, edges = ds.histogram("field('B', 'x') * 2 - energy", bins=11, where="ux > 0", step=0)
    m = (p["ux"] > 0) & ~np.isnan(v)
    want, want_edges = np.histogram(v[m], bins=11)
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(edges, want_edges)
    with pytest.raises(motes.UsageError, match="no field 'rho'"):
        ds.histogram("field('rho')", step=1)
    with pytest.raises(motes.UsageError, match="is a condition, not a number"):
        ds.histogram("energy > 1", step=0)
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        ds.histogram("nope * 2", step=0)
