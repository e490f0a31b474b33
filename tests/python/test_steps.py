"""Queries and analyses across steps (motes.steps): every result equals the concatenation or
stack of single-step calls, and numpy on the raw columns; every form of steps=; errors."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from needs import need

import motes
from motes import steps as msteps
from motes import synth
from conftest import SMALL

# Steps 0, 5, ..., 25, a different particle count in each (one step very small).
STEPS = [0, 5, 10, 15, 20, 25]
SIZES = {0: 3000, 5: 2500, 10: 40, 15: 3500, 20: 2000, 25: 2800}

WHERES = [None, "energy > 0.5", "q < 0 and 40 < y < 60", "ux**2 + uy**2 > 0.01 or z < 5", "energy > 1e9"]


def f64(a):
    return a.astype(np.float64)


def mask_of(cols, where):
    """The WHERES by numpy on the raw columns (comparisons in float64, like the engine's)."""
    c = {k: f64(v) if v.dtype.kind == "f" else v for k, v in cols.items()}
    n = len(c["x"])
    return {None: np.ones(n, bool),
            "energy > 0.5": c["energy"] > 0.5,
            "q < 0 and 40 < y < 60": (c["q"] < 0) & (40 < c["y"]) & (c["y"] < 60),
            "ux**2 + uy**2 > 0.01 or z < 5": (c["ux"] ** 2 + c["uy"] ** 2 > 0.01) | (c["z"] < 5),
            "energy > 1e9": c["energy"] > 1e9}[where]


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """A dataset of several steps of vpic particles (ids), and the columns of each step."""
    path = tmp_path_factory.mktemp("steps") / "series.motes"
    data = {}
    for k in STEPS:
        data[k] = synth.vpic(SIZES[k], seed=100 + k, with_id=True)
        motes.write(path, data[k], step=k, time=0.25 * k, **SMALL)
    return motes.open(path), data


def by_id(table):
    order = np.argsort(table["id"], kind="stable")
    return {k: v[order] for k, v in table.items()}


# --- the spec -------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ([0, 10, 25], [0, 10, 25]),
    ((25, 0, 10, 0), [0, 10, 25]),  # step order, each once
    (np.array([15, 5]), [5, 15]),
    (range(0, 30, 10), [0, 10, 20]),
    (range(25, -1, -5), STEPS),
    ("all", STEPS),
    (" ALL ", STEPS),
    ("0:30:10", [0, 10, 20]),
    ("5:20:5", [5, 10, 15]),  # stop excluded
    ("::5", STEPS),
    ("10:", [10, 15, 20, 25]),
    (":10:5", [0, 5]),
    ("20:26", [20, 25]),  # a slice selects the steps present in it
    ("1:26:2", [5, 15, 25]),
    ("-100:12", [0, 5, 10]),
    ("0,10,21", None),  # a list: every step must exist
    ("0,10, 20", [0, 10, 20]),
    ("15", [15]),
    (slice(0, 30, 10), [0, 10, 20]),
    (slice(None, None, 5), STEPS),
])
def test_spec_forms(series, spec, expected):
    ds, _ = series
    if expected is None:
        with pytest.raises(motes.UsageError, match=r"no step 21 \(steps: 0, 5, 10, 15, 20, 25\)"):
            msteps.resolve(ds, spec)
        return
    assert msteps.resolve(ds, spec) == expected
    # the same steps through every analysis
    assert ds.count(steps=spec)["step"].tolist() == expected


@pytest.mark.parametrize("spec, message", [
    ([0, 3, 7], r"dataset has no steps 3, 7 \(steps: 0, 5, 10, 15, 20, 25\)"),
    ([99], r"dataset has no step 99 \(steps: 0, 5, 10, 15, 20, 25\)"),
    ("0:10:0", r"stride of '0:10:0' must be > 0"),
    ("::-5", r"must be > 0"),
    ("1:2:3:4", r"is not 'start:stop'"),
    ("a:5", r"invalid step index 'a'"),
    ("0,x", r"invalid step index 'x'"),
    ("", r"empty text"),
    ([], r"selects no step"),
    ("7:7", r"selects no step"),
    ("11:15", r"steps '11:15' selects no step \(steps: 0, 5, 10, 15, 20, 25\)"),
    (slice(26, None), r"steps '26::' selects no step"),
    (range(1, 5), r"no steps 1, 2, 3, 4 \("),
    (5, r"pass step=5 or steps=\[5\]"),
    (True, r"steps must be"),
    (2.5, r"steps must be"),
    ([0, 2.5], r"steps must be an integer"),
    (object(), r"steps must be .*got object"),
])
def test_spec_errors(series, spec, message):
    ds, _ = series
    for call in (lambda: ds.query(steps=spec), lambda: ds.count(steps=spec), lambda: ds.stats("x", steps=spec),
                 lambda: ds.histogram("x", steps=spec)):
        with pytest.raises(motes.UsageError, match=message):
            call()


def test_step_and_steps(series):
    ds, _ = series
    for call in (lambda: ds.query(step=0, steps="all"), lambda: ds.count(step=0, steps=[0]),
                 lambda: ds.stats("x", step=0, steps="all"), lambda: ds.histogram("x", step=0, steps="all")):
        with pytest.raises(motes.UsageError, match=r"either step= or steps="):
            call()


# --- query ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", WHERES)
def test_query_equals_single_steps_and_numpy(series, where):
    ds, data = series
    t = ds.query(where, steps="all")
    assert list(t) == ["step"] + list(data[0])
    assert t["step"].dtype == np.int64
    # the oracle: the single-step queries, concatenated in step order
    singles = [ds.query(where, step=k) for k in STEPS]
    np.testing.assert_array_equal(t["step"], np.concatenate([np.full(len(s), k) for k, s in zip(STEPS, singles)]))
    for name in data[0]:
        np.testing.assert_array_equal(t[name], np.concatenate([s[name] for s in singles]))
        assert t[name].dtype == singles[0][name].dtype
    assert len(t) == sum(len(s) for s in singles)
    assert t.counters["points_tested"] == sum(s.counters["points_tested"] for s in singles)
    # numpy on the raw columns, step by step
    for k in STEPS:
        rows = by_id({n: v[t["step"] == k] for n, v in t.items() if n != "step"})
        m = mask_of(data[k], where)
        ref = by_id({n: v[m] for n, v in data[k].items()})
        for name in data[k]:
            np.testing.assert_array_equal(rows[name], ref[name])


def test_query_columns_box_quality_and_pandas(series):
    ds, data = series
    box = (20, 30, 0, 150, 70, 40)
    t = ds.query("energy > 0.3", box=box, columns=["id", "energy"], steps="5:26:10")
    assert list(t) == ["step", "id", "energy"]
    for k in (5, 15, 25):
        s = ds.query("energy > 0.3", box=box, columns=["id", "energy"], step=k)
        np.testing.assert_array_equal(t["id"][t["step"] == k], s["id"])
        c = data[k]
        m = (f64(c["energy"]) > 0.3)
        for a, lo, hi in zip("xyz", box[:3], box[3:]):
            m &= (f64(c[a]) >= lo) & (f64(c[a]) <= hi)
        assert sorted(s["id"].tolist()) == sorted(c["id"][m].tolist())
    assert set(t["step"].tolist()) <= {5, 15, 25}
    q = ds.query(quality=0.3, columns="id", steps=[0, 20])
    for k in (0, 20):
        np.testing.assert_array_equal(q["id"][q["step"] == k], ds.query(quality=0.3, columns="id", step=k)["id"])
    pd = need("pandas")
    df = t.to_pandas()
    assert list(df.columns) == ["step", "id", "energy"] and len(df) == len(t)
    assert isinstance(df, pd.DataFrame)


def test_query_batches_across_steps(series):
    ds, _ = series
    whole = ds.query("energy > 0.4", columns=["id", "x"], steps="all")
    parts = list(msteps.query_batches(ds, "all", where="energy > 0.4", columns=["id", "x"], batch_size=97))
    assert all(len(p) <= 97 and len(set(p["step"].tolist())) == 1 for p in parts)
    for name in ("step", "id", "x"):
        np.testing.assert_array_equal(np.concatenate([p[name] for p in parts]), whole[name])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(STEPS), min_size=1, max_size=8), st.floats(0.0, 2.0), st.sampled_from(["x", "energy", "uz"]))
def test_random_steps_and_thresholds(series, chosen, threshold, col):
    ds, data = series
    where = f"{col} > {threshold!r}" if col != "x" else f"x < {threshold * 100!r}"
    t = ds.query(where, columns=["id"], steps=chosen)
    c = ds.count(where, steps=chosen)
    ks = sorted(set(chosen))
    assert c["step"].tolist() == ks
    for i, k in enumerate(ks):
        v = f64(data[k][col])
        m = v > threshold if col != "x" else v < threshold * 100
        assert c["count"][i] == m.sum() == ds.count(where, step=k)
        assert sorted(t["id"][t["step"] == k].tolist()) == sorted(data[k]["id"][m].tolist())


# --- count and stats ------------------------------------------------------------------------------
@pytest.mark.parametrize("where", WHERES)
def test_count_and_stats_series(series, where):
    ds, data = series
    c = ds.count(where, steps=range(0, 30, 5))
    assert list(c) == ["step", "time", "count"]
    assert c["step"].tolist() == STEPS and c["count"].dtype == np.int64
    np.testing.assert_array_equal(c["time"], [0.25 * k for k in STEPS])
    assert c["count"].tolist() == [ds.count(where, step=k) for k in STEPS]
    assert c["count"].tolist() == [int(mask_of(data[k], where).sum()) for k in STEPS]

    s = ds.stats("energy", where=where, steps="all")
    assert list(s) == ["step", "time"] + list(ds.stats("energy", step=0))
    for i, k in enumerate(STEPS):
        one = ds.stats("energy", where=where, step=k)
        for key, v in one.items():
            if v is None:
                assert np.isnan(s[key][i])
            else:
                assert s[key][i] == v
        vals = f64(data[k]["energy"][mask_of(data[k], where)])
        assert s["count"][i] == len(vals)
        if len(vals):
            assert s["min"][i] == vals.min() and s["max"][i] == vals.max()
            assert s["sum"][i] == pytest.approx(vals.sum(), rel=1e-12)
    assert s["count"].dtype == np.int64 and s["min"].dtype == np.float64
    df = s.to_pandas()
    assert df.shape == (len(STEPS), 8)


# --- histograms -----------------------------------------------------------------------------------
@pytest.mark.parametrize("where", WHERES)
def test_histogram_1d_common_range(series, where):
    ds, data = series
    counts, edges, ks = ds.histogram("energy", bins=17, where=where, steps="all")
    assert counts.shape == (len(STEPS), 17) and counts.dtype == np.int64
    assert ks.tolist() == STEPS and ks.dtype == np.int64
    selected = [f64(data[k]["energy"][mask_of(data[k], where)]) for k in STEPS]
    allv = np.concatenate(selected)
    if len(allv):
        assert (edges[0], edges[-1]) == (allv.min(), allv.max())  # the range over every step
    else:
        assert (edges[0], edges[-1]) == (0.0, 1.0)
    for i, k in enumerate(STEPS):
        one, one_edges = ds.histogram("energy", bins=17, where=where, range=(edges[0], edges[-1]), step=k)
        np.testing.assert_array_equal(counts[i], one)
        np.testing.assert_array_equal(edges, one_edges)
        ref, _ = np.histogram(selected[i], bins=17, range=(edges[0], edges[-1]))
        np.testing.assert_array_equal(counts[i], ref)


def test_histogram_given_range_weights_and_2d(series):
    ds, data = series
    counts, edges, ks = ds.histogram("ux", bins=9, range=(-0.2, 0.2), weights="energy", steps=[5, 20])
    assert counts.shape == (2, 9) and counts.dtype == np.float64
    for i, k in enumerate((5, 20)):
        ref, ref_edges = np.histogram(f64(data[k]["ux"]), bins=9, range=(-0.2, 0.2), weights=f64(data[k]["energy"]))
        np.testing.assert_allclose(counts[i], ref, rtol=1e-12)
        np.testing.assert_array_equal(edges, ref_edges)

    where = "q > 0"
    c2, xe, ye, ks = ds.histogram("x", "y", bins=(8, 5), where=where, range=(None, (40, 60)), steps="0:30:5")
    assert c2.shape == (len(STEPS), 8, 5) and ks.tolist() == STEPS
    xs = np.concatenate([f64(data[k]["x"][mask_of(data[k], None) & (f64(data[k]["q"]) > 0)]) for k in STEPS])
    assert (xe[0], xe[-1]) == (xs.min(), xs.max()) and (ye[0], ye[-1]) == (40, 60)
    for i, k in enumerate(STEPS):
        m = f64(data[k]["q"]) > 0
        one = ds.histogram("x", "y", bins=(8, 5), where=where, range=((xe[0], xe[-1]), (40, 60)), step=k)
        np.testing.assert_array_equal(c2[i], one[0])
        ref, _, _ = np.histogram2d(f64(data[k]["x"][m]), f64(data[k]["y"][m]), bins=(8, 5),
                                   range=((xe[0], xe[-1]), (40, 60)))
        np.testing.assert_array_equal(c2[i], ref)


def test_histogram_single_value_range(series):
    ds, data = series
    # one particle in all the steps: the range is (v - 0.5, v + 0.5) like a single step's
    v = float(np.max(f64(data[15]["energy"])))
    counts, edges, _ = ds.histogram("energy", bins=4, where=f"energy >= {v!r}", steps=[0, 15])
    assert (edges[0], edges[-1]) == (v - 0.5, v + 0.5)
    assert counts.sum() == 1 and counts[1].sum() == 1


# --- timeouts, columns and species across steps ---------------------------------------------------
def test_timeout_holds_for_all_steps(series):
    ds, _ = series
    t = ds.query("energy > 0.5", steps="all", timeout=60)
    assert len(t) == len(ds.query("energy > 0.5", steps="all"))
    with pytest.raises(motes.UsageError, match="timeout"):
        ds.count(steps="all", timeout=0)


@pytest.fixture(scope="module")
def changing(tmp_path_factory):
    """Step 3 lacks column 'q'; step 4 holds two species; step 5 holds only ions."""
    path = tmp_path_factory.mktemp("steps") / "changing.motes"
    cols = {k: synth.vpic(500, seed=k) for k in range(6)}
    for k in (0, 1, 2):
        motes.write(path, cols[k], step=k, time=k)
    motes.write(path, {n: v for n, v in cols[3].items() if n != "q"}, step=3, time=3)
    with motes.Writer(path) as w:
        w.write_step(4, {"particles": cols[4], "ions": cols[5]}, time=4)
        w.write_step(5, {"ions": cols[5]}, time=5)
    return motes.open(path), cols


def test_missing_column_names_step_and_column(changing):
    ds, _ = changing
    for call in (lambda: ds.query(columns=["x", "q"], steps="0:4"), lambda: ds.stats("q", steps=[0, 3]),
                 lambda: ds.histogram("x", "q", steps="0:4"), lambda: ds.histogram("x", weights="q", steps="0:4")):
        with pytest.raises(motes.UsageError, match=r"step 3 has no column 'q' \(columns: x, y, z, ux, uy, uz, energy\)"):
            call()
    # the default columns are those of the first step: q is among them
    with pytest.raises(motes.UsageError, match=r"step 3 has no column 'q'"):
        ds.query(steps=[2, 3])
    with pytest.raises(motes.UsageError, match=r"step 3: unknown column 'q' in expression"):
        ds.count("q > 0", steps="0:4")
    # steps without q are fine when q is not asked for
    t = ds.query(columns=["x"], steps="0:4")
    assert sorted(set(t["step"].tolist())) == [0, 1, 2, 3]


def test_species_across_steps(changing):
    ds, cols = changing
    with pytest.raises(motes.UsageError, match=r"step 4 has several species"):
        ds.count(steps="all")
    with pytest.raises(motes.UsageError, match=r"step 5 has no species 'particles'"):
        ds.count(species="particles", steps=[4, 5])
    # "all" with a species: the steps holding it
    ions = ds.count(species="ions", steps="all")
    assert ions["step"].tolist() == [4, 5] and ions["count"].tolist() == [500, 500]
    parts = ds.count(species="particles", steps="all")
    assert parts["step"].tolist() == [0, 1, 2, 3, 4]
    t = ds.query(columns=["x"], species="ions", steps="4:6")
    np.testing.assert_array_equal(np.sort(t["x"][t["step"] == 5]), np.sort(cols[5]["x"]))
