"""The endpoints about datasets, histograms and exports (docs/http-api.md) against the
Python API: the catalog, a species' description and quality ladder, histograms equal to
Dataset.histogram at the reported quality, exports equal to the query."""

from __future__ import annotations

import io

import numpy as np
import pytest

from needs import need

import motes

need("starlette")
need("uvicorn")
from motes.server import Config, Limits, create_app  # noqa: E402
from server_util import make_client, write_lattice, write_parted, write_vpic  # noqa: E402

API = "/api/v1"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    write_vpic(root / "run.motes", 30_000, steps=2)
    write_parted(root / "parts.motes")
    write_lattice(root / "other" / "run.motes")  # the same directory name: becomes run-2
    motes.Dataset(root / "run.motes").set_attributes({"code": "vpic", "note": "test"})
    paths = [str(root / "run.motes"), str(root / "parts.motes"), str(root / "other" / "run.motes")]
    app = create_app(Config(datasets=[(None, p) for p in paths], limits=Limits(max_export_rows=29_000)), opener=motes.open)
    with make_client(app) as client:
        yield client, {"run": motes.open(paths[0]), "parts": motes.open(paths[1]), "run-2": motes.open(paths[2])}


def get(client, url, status=200, **params):
    r = client.get(url, params=params)
    assert r.status_code == status, r.text
    return r


def test_health_and_catalog(served):
    client, dss = served
    assert get(client, API + "/health").json() == {"ok": True, "version": motes.__version__, "datasets": 3}
    listed = get(client, API + "/datasets").json()["datasets"]
    assert [d["name"] for d in listed] == ["run", "parts", "run-2"]
    for d in listed:
        ds = dss[d["name"]]
        assert d["steps"] == len(ds.steps)
        assert d["species"] == sorted({n for s in ds.steps for n in ds.species_names(s)})
        assert d["particles"] == sum(ds.count_total(s, n) for s in ds.steps for n in ds.species_names(s))


def test_dataset(served):
    client, dss = served
    d = get(client, API + "/datasets/run").json()
    ds = dss["run"]
    assert d["name"] == "run" and d["attributes"] == {"code": "vpic", "note": "test"}
    assert [s["index"] for s in d["steps"]] == ds.steps and [s["time"] for s in d["steps"]] == ds.times
    for s in d["steps"]:
        sp = s["species"]["particles"]
        lo, hi = ds.bounds(s["index"])
        assert sp["count"] == ds.count_total(s["index"]) and sp["bounds"] == {"min": list(lo), "max": list(hi)}


@pytest.mark.parametrize("name", ["run", "parts"])
def test_species_and_its_ladder(served, name):
    client, dss = served
    ds = dss[name]
    step = ds.steps[-1]
    d = get(client, f"{API}/datasets/{name}/steps/{step}/species/particles").json()
    assert (d["dataset"], d["step"], d["species"], d["count"]) == (name, step, "particles", ds.count_total(step))
    info = ds.describe(step)["files"][0]
    assert d["hierarchy"] == {k: info[k] for k in ("parts", "nodes", "levels", "leaf_size", "lod_count")}
    assert [c["name"] for c in d["columns"]] == [c.name for c in ds.schema(step)]
    for c, want in zip(d["columns"], info["columns"]):
        for key in ("dtype", "unit", "unit_label", "index", "error_bound", "min", "max", "nan_count"):
            assert c[key] == want[key], key
    q, counts = d["ladder"]["quality"], d["ladder"]["count"]
    assert q[0] == 0.0 and q[-1] == 1.0 and len(q) == d["hierarchy"]["levels"] + 1
    assert all(b > a for a, b in zip(q, q[1:]))
    for quality, count in zip(q, counts):  # what a read at each quality returns
        assert count == ds.count(quality=quality, step=step)
    assert counts[-1] == d["count"]


def test_unknown_names_are_404(served):
    client, _ = served
    for url, needle in ((API + "/datasets/nope", "no dataset 'nope'"),
                        (API + "/datasets/run/steps/7/species/particles", "no step 7"),
                        (API + "/datasets/run/steps/0/species/ions/points", "no species 'ions'"),
                        (API + "/datasets/run/steps/0/species", "no such path"),
                        (API + "/v2", "no such path")):
        err = get(client, url, 404).json()["error"]
        assert err["status"] == 404 and err["kind"] == "not_found" and needle in err["message"], err
    err = get(client, API + "/datasets/run/steps/x1/species/particles", 400).json()["error"]
    assert "step: 'x1' is not an integer" in err["message"]


# ---- histograms ----------------------------------------------------------------------------

H = API + "/datasets/{}/steps/{}/species/particles/histogram"


@pytest.mark.parametrize("name", ["run", "parts"])
def test_histograms_equal_the_python_api_at_the_reported_quality(served, name):
    client, dss = served
    ds = dss[name]
    step = ds.steps[-1]
    lo, hi = ds.bounds(step)
    box = [lo[0], lo[1], lo[2], (lo[0] + hi[0]) / 2, hi[1], (lo[2] + hi[2]) / 2]
    x, y = ("ux", "uy") if name == "run" else ("energy", "ux")
    cases = [dict(x=x), dict(x=x, bins="10", range="-0.25,0.5", where=f"{y} > 0"),
             dict(x=x, y=y, bins="16", ybins="8", box=",".join(map(repr, box)), budget="3000"),
             dict(x=x, y=y, quality="0.5", range="-1,1", yrange="-0.5,0.75"),
             dict(x=x, quality="1")]
    for params in cases:
        d = get(client, H.format(name, step), **params).json()
        q = d["quality"]
        xr = tuple(d["x"]["range"])
        if "y" in params:
            yr = tuple(d["y"]["range"])
            want = ds.histogram(x, y, bins=(d["x"]["bins"], d["y"]["bins"]), range=(xr, yr), where=params.get("where"),
                                box=box if "box" in params else None, quality=q, step=step)[0]
        else:
            want = ds.histogram(x, bins=d["x"]["bins"], range=xr, where=params.get("where"), quality=q, step=step)[0]
        assert np.array_equal(np.array(d["counts"]), want), params
        assert d["total"] == int(want.sum()) and d["exact"] == (q == 1.0) and d["query_ms"] >= 0
        if "range" not in params:  # the column's range in the step
            col = next(c for c in ds.describe(step)["files"][0]["columns"] if c["name"] == x)
            assert xr == (col["min"], col["max"])
        if "quality" in params:
            assert q == float(params["quality"])


def test_histogram_budgets_pick_the_quality(served):
    client, dss = served
    ds = dss["run"]
    ladder = get(client, f"{API}/datasets/run/steps/1/species/particles").json()["ladder"]
    for budget in (0, 100, 5000, 10 ** 9):
        q = get(client, H.format("run", 1), x="energy", budget=str(budget)).json()["quality"]
        k = ladder["quality"].index(q)
        assert ladder["count"][k] <= budget or k == 1  # over the whole species the estimate is exact
        assert k == len(ladder["count"]) - 1 or ladder["count"][k + 1] > budget
    # The default budget reads at most 2,000,000 particles: here, everything.
    assert get(client, H.format("run", 1), x="energy").json()["quality"] == 1.0
    assert ds.count_total(1) < 2_000_000


def test_histogram_errors(served):
    client, _ = served
    url = H.format("run", 0)
    for params, status, needle in ((dict(), 400, "x is missing"), (dict(x="nope"), 422, "unknown column 'nope'"),
                                   (dict(x="ux", bins="0"), 400, "bins must be at least 1"),
                                   (dict(x="ux", bins="ten"), 400, "not an integer"),
                                   (dict(x="ux", range="1"), 400, "2 comma-separated numbers"),
                                   (dict(x="ux", range="2,1"), 422, "empty"),
                                   (dict(x="ux", ybins="4"), 400, "need y"),
                                   (dict(x="ux", quality="2"), 422, "quality must be a quality in (0, 1]"),
                                   (dict(x="ux", quality="0.5", budget="10"), 400, "not both"),
                                   (dict(x="ux", where="ux >"), 422, "ends where a value is expected"),
                                   (dict(x="ux", bins="5000"), 413, "--max-bins"),
                                   (dict(x="ux", y="uy", bins="2000", ybins="2000"), 413, "--max-bins-2d")):
        err = get(client, url, status, **params).json()["error"]
        assert needle in err["message"], (params, err)


# ---- exports --------------------------------------------------------------------------------

E = API + "/datasets/{}/steps/{}/species/particles/export"


@pytest.mark.parametrize("name", ["run", "parts"])
@pytest.mark.parametrize("form", ["csv", "parquet"])
def test_exports_equal_the_query(served, name, form):
    pq = need("pyarrow.parquet")
    import pyarrow.csv as pcsv

    client, dss = served
    ds = dss[name]
    step = ds.steps[-1]
    for params in (dict(columns="x,y,energy", where="energy > 0.2"), dict(quality="0.6"),
                   dict(where="energy > 1e9")):  # no row: a header, or an empty file with the schema
        r = get(client, E.format(name, step), format=form, **params)
        assert r.headers["content-disposition"] == f'attachment; filename="{name}-step{step}-particles.{form}"'
        cols = params["columns"].split(",") if "columns" in params else [c.name for c in ds.schema(step)]
        want = ds.query(params.get("where"), quality=float(params["quality"]) if "quality" in params else None,
                        columns=cols, step=step)
        schema = {c.name: c.dtype for c in ds.schema(step)}
        if form == "csv":
            import pyarrow as pa

            types = {c: pa.from_numpy_dtype(schema[c]) for c in cols}
            got = pcsv.read_csv(io.BytesIO(r.content), convert_options=pcsv.ConvertOptions(column_types=types))
        else:
            got = pq.read_table(io.BytesIO(r.content))
        assert got.column_names == cols and got.num_rows == len(want)
        for c in cols:
            assert np.array_equal(got.column(c).to_numpy(), want[c]), c


def test_export_limits_and_errors(served):
    client, dss = served
    assert dss["run"].count_total(0) > 29_000
    err = get(client, E.format("run", 0), 413, format="csv").json()["error"]
    assert "--max-export-rows" in err["message"] and err["kind"] == "too_large"
    assert get(client, E.format("run", 0), 200, format="csv", quality="0.5").status_code == 200
    assert "format must be 'csv' or 'parquet'" in get(client, E.format("run", 0), 400).json()["error"]["message"]
    assert "unknown column" in get(client, E.format("run", 0), 422, format="csv", columns="x,q2").text


def test_nan_and_infinities_are_null(tmp_path):
    data = {"x": np.array([0.0, 1.0, 2.0]), "y": np.zeros(3), "z": np.zeros(3), "v": np.array([np.nan] * 3)}
    motes.write(tmp_path / "n.motes", data, sync=False)
    with make_client(create_app(Config(datasets=[(None, str(tmp_path / "n.motes"))]), opener=motes.open)) as client:
        d = get(client, f"{API}/datasets/n/steps/0/species/particles").json()
        v = next(c for c in d["columns"] if c["name"] == "v")
        assert v["min"] is None and v["max"] is None and v["nan_count"] == 3
        h = get(client, H.format("n", 0), x="v").json()  # no valid value: the range [0, 1]
        assert h["x"]["range"] == [0.0, 1.0] and h["total"] == 0


def test_warm_opens_the_last_step_and_survives_a_damaged_dataset(tmp_path):
    from motes.server.registry import Registry

    write_vpic(tmp_path / "a.motes", 5_000, steps=2)
    write_vpic(tmp_path / "b.motes", 5_000)
    reg = Registry([(None, str(tmp_path / "b.motes")), (None, str(tmp_path / "a.motes"))], motes.open)
    first = next((tmp_path / "b.motes").rglob("*.mpf"))
    first.write_bytes(b"not a particle file")  # b's species cannot be opened: warm goes on to a
    reg.warm()
    assert {(k[0], k[2], k[3]) for k in reg._species} == {("a", 1, "particles")}  # the last step: where the viewer opens
    with pytest.raises(motes.MotesError):
        reg.species("b", "0", "particles")  # the request that meets it reports it
