"""Error-bounded columns: every stored value within its bound of the given one, NaN and
infinities kept, queries, histograms and progressive reads exact on the stored values, the
bound recorded everywhere, bad bounds refused with a message naming the column."""

import numpy as np
import pytest

import motes
from motes.errors import UsageError
from conftest import SMALL

N = 60_000


def given_columns(pos_dtype):
    d = motes.synth.clustered(N, seed=5, with_id=True)
    for a in "xyz":
        d[a] = d[a].astype(pos_dtype)
    d["ux"][::101] = np.nan
    d["ux"][7] = np.inf
    d["ux"][8] = -np.inf
    return d


def bounds_for(d):
    b = {a: float(np.ptp(d[a])) * 2.0 ** -12 for a in "xyz"}
    finite = d["ux"][np.isfinite(d["ux"])]
    b["ux"] = 1e-3 * float(np.ptp(finite))
    b["mass"] = 1e-6
    return b


@pytest.fixture(scope="module", params=["f4", "f8"])
def lossy(request, tmp_path_factory):
    d = given_columns(request.param)
    bounds = bounds_for(d)
    path = tmp_path_factory.mktemp("lossy") / "d.motes"
    motes.write(path, d, index={"ux": "quantile"}, error_bounds=bounds, **SMALL)
    ds = motes.open(path)
    got = dict(ds.query())
    order = np.argsort(got["id"])
    stored = {k: v[order] for k, v in got.items()}
    assert np.array_equal(stored["id"], d["id"][np.argsort(d["id"])])
    given = {k: v[np.argsort(d["id"])] for k, v in d.items()}
    return given, stored, bounds, ds


def test_every_stored_value_is_within_its_bound(lossy):
    given, stored, bounds, _ = lossy
    for name, bound in bounds.items():
        g, s = given[name].astype(np.float64), stored[name].astype(np.float64)
        assert stored[name].dtype == given[name].dtype, name
        assert np.array_equal(np.isnan(g), np.isnan(s)), name
        inf = np.isinf(g)
        assert np.array_equal(g[inf], s[inf]), f"{name}: infinities must stay as they are"
        ok = np.isfinite(g)
        worst = float(np.max(np.abs(g[ok] - s[ok])))
        assert worst <= bound, f"{name}: off by {worst}, bound {bound}"
        assert not np.array_equal(g[ok], s[ok]), f"{name}: nothing moved to the grid"
    for name in set(given) - set(bounds):  # the other columns are exact
        assert given[name].tobytes() == stored[name].tobytes(), name


def test_queries_and_histograms_are_exact_on_the_stored_values(lossy):
    _, stored, bounds, ds = lossy
    lo = [float(np.quantile(stored[a], 0.2)) for a in "xyz"]
    hi = [float(np.quantile(stored[a], 0.7)) for a in "xyz"]
    # Bounds at stored values: the edges themselves must be in (inclusive box, >= and <).
    ux_edge = float(np.sort(stored["ux"][np.isfinite(stored["ux"])])[N // 3])
    cases = [
        (None, lo + hi),
        (f"ux >= {ux_edge!r}", None),
        (f"ux < {ux_edge!r} and energy > 0.2", lo[:2] + [-1e30] + hi[:2] + [1e30]),
        ("mass > 0", None),
    ]
    for where, box in cases:
        mask = np.ones(N, bool)
        if box is not None:
            for n, a in enumerate("xyz"):
                mask &= (stored[a] >= stored[a].dtype.type(box[n])) & (stored[a] <= stored[a].dtype.type(box[n + 3]))
        if where and where.startswith("ux >="):
            mask &= stored["ux"] >= np.float32(ux_edge)
        elif where and where.startswith("ux <"):
            mask &= (stored["ux"] < np.float32(ux_edge)) & (stored["energy"] > np.float32(0.2))
        elif where == "mass > 0":
            mask &= stored["mass"] > 0
        got = ds.query(where, box=box, columns=["id"])["id"]
        assert np.array_equal(np.sort(got), stored["id"][mask]), (where, box)
        assert ds.count(where, box=box) == int(mask.sum()), (where, box)
    finite = stored["ux"][np.isfinite(stored["ux"])]
    h, edges = ds.histogram("ux", bins=37, range=(float(finite.min()), float(finite.max())))
    assert np.array_equal(h, np.histogram(finite, bins=37, range=(float(finite.min()), float(finite.max())))[0])


def test_progressive_reads_union_to_the_stored_set(lossy):
    _, stored, _, ds = lossy
    parts = [ds.query(quality=(k / 5, (k + 1) / 5), columns=["id", "x", "ux"]) for k in range(5)]
    ids = np.concatenate([p["id"] for p in parts])
    assert len(ids) == N and len(np.unique(ids)) == N
    x = np.concatenate([p["x"] for p in parts])[np.argsort(ids)]
    assert x.tobytes() == stored["x"].tobytes()


def test_the_bound_is_recorded_and_the_column_coded_on_its_grid(lossy):
    _, _, bounds, ds = lossy
    cols = {c["name"]: c for c in ds.file().columns}
    for name, bound in bounds.items():
        assert cols[name]["error_bound"] == bound, name
    assert cols["energy"]["error_bound"] == 0
    assert cols["ux"]["codec"].startswith("grid"), cols["ux"]["codec"]
    want = {k: cols[k]["error_bound"] for k in bounds}
    assert {c.name: c.error_bound for c in ds.schema() if c.error_bound} == want  # the manifest
    described = ds.describe()["files"][0]["columns"]
    assert {c["name"]: c["error_bound"] for c in described if c["error_bound"]} == want


def test_bounded_columns_store_smaller_than_exact_ones(tmp_path):
    d = motes.synth.clustered(N, seed=9)
    motes.write(tmp_path / "exact.motes", d, **SMALL)
    motes.write(tmp_path / "bounded.motes", d, error_bounds={"ux": 1e-3 * float(np.ptp(d["ux"]))}, **SMALL)
    size = {k: {c["name"]: c["stored_bytes"] for c in motes.open(tmp_path / f"{k}.motes").file().columns}
            for k in ("exact", "bounded")}
    assert size["bounded"]["ux"] * 2 < size["exact"]["ux"], size
    assert size["bounded"]["uy"] == size["exact"]["uy"]


def test_uncompressed_bounded_columns_still_hold_the_bound(tmp_path):
    d = motes.synth.clustered(5000, seed=2, with_id=True)
    motes.write(tmp_path / "d.motes", d, compression="none", error_bounds={"energy": 0.01}, **SMALL)
    got = motes.open(tmp_path / "d.motes").query()
    o, g = np.argsort(got["id"]), np.argsort(d["id"])
    assert np.max(np.abs(got["energy"][o].astype(np.float64) - d["energy"][g])) <= 0.01


@pytest.mark.parametrize("bounds, needles", [
    ({"id": 1.0}, ["column 'id'", "float columns"]),
    ({"x": 1e-12}, ["column 'x'", "too small", "at least"]),
    ({"x": 0}, ["column 'x'", "> 0"]),
    ({"x": -1.0}, ["column 'x'", "> 0"]),
    ({"x": float("nan")}, ["column 'x'"]),
    ({"x": float("inf")}, ["column 'x'"]),
    ({"x": "small"}, ["column 'x'"]),
    ({"nope": 1.0}, ["unknown column 'nope'"]),
    ([("x", 1.0)], ["error_bounds must map"]),
])
def test_bad_bounds_are_refused_with_a_message_naming_the_column(tmp_path, bounds, needles):
    d = motes.synth.clustered(2000, seed=1, with_id=True)
    with pytest.raises(UsageError) as e:
        motes.write(tmp_path / "d.motes", d, error_bounds=bounds, **SMALL)
    for needle in needles:
        assert needle in str(e.value), (needle, str(e.value))
    assert not (tmp_path / "d.motes").exists() or not motes.open(tmp_path / "d.motes").steps
