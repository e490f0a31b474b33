"""The grid-field endpoints (docs/http-api.md, "Grid fields"): the list and description of
a step's fields against the manifest and StoredField, samples of any box at any level equal
to StoredField.read (the oracle) value for value, the level a budget picks, Arrow, ETags,
and the errors of bad requests."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from needs import need

import motes

need("starlette")
need("uvicorn")
from motes.server import Config, Limits, create_app  # noqa: E402
from server_util import DTYPES, lattice_data, make_client  # noqa: E402

API = "/api/v1"
STEP = API + "/datasets/grid/steps/3"
F = STEP + "/fields"


def grids():
    rng = np.random.default_rng(5)
    shape = (11, 20, 37)  # (z, y, x): no axis a power of two
    rho = rng.standard_normal(shape)  # float64
    rho[0, 0, 5] = np.nan
    e = rng.standard_normal(shape + (3,)).astype(np.float32)
    coords = [np.cumsum(rng.random(n) + 0.1) - 2.0 for n in (9, 6, 5)]
    return {
        "rho": motes.Field(rho, origin=(-1.0, 0.5, 2.0), spacing=(0.25, 0.5, 0.125), unit="C/m^3"),
        "E": motes.Field(e, origin=(0.0, 0.0, 0.0), spacing=(1.0, 1.0, 1.0), components=("x", "y", "z"),
                         unit="V/m", centering="cell"),
        "T": motes.Field(rng.random((5, 6, 9)).astype(np.float32), coords=coords),
        "psi": motes.Field(rng.random((13, 21)).astype(np.float32), spacing=(0.5, 0.5)),
        "n": motes.Field(rng.integers(-5, 5, (4, 4, 4)).astype(np.int32)),
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    path = tmp_path_factory.mktemp("fields") / "grid.motes"
    motes.write(path, lattice_data(2_000, 1), step=3, time=0.25, fields=grids())
    motes.write(path, None, step=4, time=0.5, fields={"rho": grids()["rho"]})
    app = create_app(Config(datasets=[(None, str(path))]), opener=motes.open)
    with make_client(app) as client:
        yield client, motes.open(path)


@pytest.fixture(scope="module")
def limited(served):
    _, ds = served
    with make_client(create_app(Config(datasets=[(None, ds.path)], limits=Limits(max_points=20_000)), opener=motes.open)) as client:
        yield client


def get(client, url, status=200, **params):
    r = client.get(url, params=params)
    assert r.status_code == status, r.text
    return r


def error(client, url, status, **params):
    r = get(client, url, status, **params)
    err = r.json()["error"]
    assert err["status"] == status and err["message"]
    return err


def parse(body: bytes):
    """A frame as docs/http-api.md describes it (magic, version, header, 8-aligned columns of
    `rows` values, zero padding, nothing after the last)."""
    assert body[:8] == b"MOTESFRM"
    version, h = struct.unpack("<II", body[8:16])
    assert version == 1
    header = json.loads(body[16:16 + h].decode())
    end, cols = 16 + h, {}
    for c in sorted(header["columns"], key=lambda c: c["offset"]):
        assert c["offset"] % 8 == 0 and body[end:c["offset"]] == b"\0" * (c["offset"] - end)
        dt = np.dtype(DTYPES[c["dtype"]])
        assert c["bytes"] == header["rows"] * dt.itemsize
        cols[c["name"]] = np.frombuffer(body, dtype=dt, count=header["rows"], offset=c["offset"])
        end = c["offset"] + c["bytes"]
    assert len(body) == end
    assert "cells" not in header
    return header, cols


def samples(client, name, status=200, **params):
    return parse(get(client, f"{F}/{name}/samples", status, **params).content)


def lattice_positions(sf, lo, hi, level):
    """Per axis, the positions of the samples a read of [lo, hi) at this level keeps (every
    2^level-th sample counted from sample 0)."""
    s = 2 ** level
    return [sf.axis(k)[-(-lo[k] // s) * s:hi[k]:s] for k in range(sf.ndim)]


def test_list(served):
    client, ds = served
    d = get(client, F).json()
    assert (d["dataset"], d["step"], d["time"]) == ("grid", 3, 0.25)
    assert [f["name"] for f in d["fields"]] == ds.field_names(3)
    for f in d["fields"]:
        sf = ds.field(f["name"], 3)
        assert f["dims"] == list(sf.dims) and f["ndim"] == sf.ndim
        assert f["dtype"] == {"float64": "f64", "float32": "f32", "int32": "i32"}[str(sf.dtype)]
        assert f["components"] == (list(sf.components) if sf.components else None)
    assert [f["name"] for f in get(client, API + "/datasets/grid/steps/4/fields").json()["fields"]] == ["rho"]


@pytest.mark.parametrize("name", ["rho", "E", "T", "psi", "n"])
def test_describe(served, name):
    client, ds = served
    sf = ds.field(name, 3)
    d = get(client, f"{F}/{name}").json()
    assert (d["field"], d["dims"], d["levels"], d["ndim"]) == (name, list(sf.dims), sf.levels, sf.ndim)
    assert d["components"] == (list(sf.components) if sf.components else None)
    assert (d["centering"], d["unit"]) == (sf.centering, sf.unit)
    if sf.coords is None:
        assert d["origin"] == list(sf.origin) and d["spacing"] == list(sf.spacing) and "coords" not in d
    else:
        assert d["coords"] == [[float(v) for v in c] for c in sf.coords]  # binary64, exactly
        assert "origin" not in d
    assert d["bounds"] == {"min": [float(sf.axis(k)[0]) for k in range(sf.ndim)],
                           "max": [float(sf.axis(k)[-1]) for k in range(sf.ndim)]}
    assert [(r["min"], r["max"]) for r in d["ranges"]] == [tuple(map(float, r)) for r in sf.ranges]
    names = list(sf.components) if sf.components else [None]
    assert [r["component"] for r in d["ranges"]] == names
    for k, dims in enumerate(d["level_dims"]):  # what a read of the whole grid at level k holds
        a = sf.read(level=k, component=sf.components[0] if sf.components else None)
        assert list(reversed(a.shape)) == dims
    assert d["level_dims"][-1] == [1] * sf.ndim


def check_samples(header, cols, sf, lo, hi, level, component=None):
    want = sf.read(index_box=(lo, hi), level=level, component=component)
    names = [component] if component else list(sf.components) if sf.components else [sf.name]
    assert list(cols) == names
    for k, n in enumerate(names):
        w = want[..., k] if sf.components and component is None else want
        assert header["dims"] == list(reversed(w.shape))
        assert header["rows"] == w.size
        np.testing.assert_array_equal(cols[n], w.astype(np.float32).ravel())  # NaN where NaN
    assert header["level"] == level and header["stride"] == 2 ** level
    pos = lattice_positions(sf, lo, hi, level)
    assert header["dims"] == [len(p) for p in pos]
    assert header["origin"] == [float(p[0]) if len(p) else None for p in pos]
    assert header["first"] == [-(-a // 2 ** level) * 2 ** level for a in lo]
    for k, p in enumerate(pos):
        if len(p):
            assert p[0] == sf.axis(k)[header["first"][k]]
    if sf.coords is None:
        for k, p in enumerate(pos):
            if len(p) > 1:
                assert np.allclose(np.diff(p), header["step"][k], rtol=1e-12, atol=0)
            assert header["step"][k] == sf.spacing[k] * 2 ** level
    else:
        assert header["step"] is None
        assert header["positions"] == [[float(v) for v in p] for p in pos]


@pytest.mark.parametrize("name,component", [("rho", None), ("E", "y"), ("E", None), ("T", None), ("n", None)])
def test_samples_equal_stored_field_read(served, name, component):
    client, ds = served
    sf = ds.field(name, 3)
    rng = np.random.default_rng(len(name))
    for level in range(sf.levels + 1):
        boxes = [((0, 0, 0), tuple(sf.dims))]
        for _ in range(3):
            a = [int(rng.integers(0, d)) for d in sf.dims]
            b = [int(rng.integers(x + 1, d + 1)) for x, d in zip(a, sf.dims)]
            boxes.append((tuple(a), tuple(b)))
        for lo, hi in boxes:
            params = {"level": level, "index_box": ",".join(map(str, lo + hi))}
            if component:
                params["component"] = component
            header, cols = samples(client, name, **params)
            assert header["field"] == name and header["index_box"] == {"lo": list(lo), "hi": list(hi)}
            check_samples(header, cols, sf, lo, hi, level, component)


def test_native_dtype_is_exact(served):
    client, ds = served
    for name in ("rho", "n"):
        sf = ds.field(name, 3)
        header, cols = samples(client, name, level=1, dtype="native")
        want = sf.read(level=1)
        assert cols[name].dtype == want.dtype
        np.testing.assert_array_equal(cols[name], want.ravel())


def test_box_in_positions(served):
    client, ds = served
    sf = ds.field("rho", 3)
    box = (1.3, 2.0, 2.2, 4.9, 7.75, 3.2)  # inclusive; a bound on a sample (y = 2.0, 7.75)
    lo, hi = sf.index_box_of(box)
    for level in range(4):
        header, cols = samples(client, "rho", box=",".join(map(repr, box)), level=level)
        np.testing.assert_array_equal(cols["rho"], sf.read(box=box, level=level).astype(np.float32).ravel())
        assert header["index_box"] == {"lo": list(lo), "hi": list(hi)}
        check_samples(header, cols, sf, lo, hi, level)
    # a 2-D field takes 4 numbers
    sf2 = ds.field("psi", 3)
    header, cols = samples(client, "psi", box="1,1,6,4", level=1)
    np.testing.assert_array_equal(cols["psi"], sf2.read(box=(1, 1, 0, 6, 4, 0), level=1).ravel())


def test_budget_picks_the_finest_level_that_fits(served):
    client, ds = served
    sf = ds.field("rho", 3)
    boxes = [((0, 0, 0), tuple(sf.dims)), ((3, 0, 5), (37, 20, 6)), ((5, 7, 1), (30, 19, 10))]
    for lo, hi in boxes:
        sizes = [sf.read(index_box=(lo, hi), level=k).size for k in range(sf.levels + 1)]
        for budget in (1, 2, 7, 50, 64, 100, 1000, sizes[0] - 1, sizes[0], 10**6):
            header, cols = samples(client, "rho", budget=budget, index_box=",".join(map(str, lo + hi)))
            k = header["level"]
            assert header["rows"] == sizes[k] <= budget or (k == sf.levels and sizes[k] <= 1)
            assert k == 0 or sizes[k - 1] > budget, (lo, hi, budget, sizes)
            check_samples(header, cols, sf, lo, hi, k)


def test_a_box_missing_the_coarse_lattice_has_no_sample(served):
    client, ds = served
    sf = ds.field("rho", 3)
    header, cols = samples(client, "rho", index_box="3,3,3,5,5,5", level=3)
    assert header["rows"] == 0 and cols["rho"].size == 0 and sf.read(index_box=((3, 3, 3), (5, 5, 5)), level=3).size == 0


def test_arrow(served):
    pa = need("pyarrow")
    client, ds = served
    sf = ds.field("E", 3)
    r = get(client, f"{F}/E/samples", format="arrow", level=1)
    assert r.headers["content-type"] == "application/vnd.apache.arrow.stream"
    batch = pa.ipc.open_stream(r.content).read_all()
    assert batch.column_names == ["x", "y", "z"]
    want = sf.read(level=1)
    for k, n in enumerate("xyz"):
        np.testing.assert_array_equal(batch.column(n).to_numpy(), want[..., k].astype(np.float32).ravel())
    meta = {k.decode(): json.loads(v) for k, v in batch.schema.metadata.items()}
    assert meta["level"] == 1 and meta["dims"] == list(reversed(want.shape[:3])) and "cells" not in meta


def test_etag_and_304(served):
    client, _ = served
    for url, params in [(F, {}), (F + "/rho", {}), (F + "/rho/samples", {"level": "2"})]:
        r = get(client, url, **params)
        tag = r.headers["etag"]
        assert tag.startswith('W/"') and r.headers["cache-control"].startswith("private")
        again = client.get(url, params=params, headers={"If-None-Match": tag})
        assert again.status_code == 304 and not again.content
    a = get(client, F + "/rho/samples", level=2).headers["etag"]
    b = get(client, F + "/rho/samples", level=3).headers["etag"]
    c = get(client, API + "/datasets/grid/steps/4/fields/rho/samples", level=2).headers["etag"]
    assert len({a, b, c}) == 3


def test_errors(served):
    client, _ = served
    assert error(client, API + "/datasets/nope/steps/3/fields", 404)["kind"] == "not_found"
    assert "no step 9" in error(client, API + "/datasets/grid/steps/9/fields", 404)["message"]
    assert "step" in error(client, API + "/datasets/grid/steps/x/fields/rho", 400)["message"]
    m = error(client, F + "/Bz", 404)["message"]
    assert "no field 'Bz'" in m and "rho" in m
    error(client, F + "/Bz/samples", 404)
    m = error(client, F + "/E/samples", 422, component="w")["message"]
    assert "no component 'w'" in m and "x, y, z" in m
    assert "scalar" in error(client, F + "/rho/samples", 422, component="x")["message"]
    assert "levels 0 to" in error(client, F + "/rho/samples", 422, level=99)["message"]
    assert "at least 0" in error(client, F + "/rho/samples", 400, level=-1)["message"]
    assert "not an integer" in error(client, F + "/rho/samples", 400, level="1.5")["message"]
    assert "at least 1" in error(client, F + "/rho/samples", 400, budget=0)["message"]
    assert "not both" in error(client, F + "/rho/samples", 400, level=1, budget=10)["message"]
    assert "not both" in error(client, F + "/rho/samples", 400, box="0,0,0,1,1,1", index_box="0,0,0,1,1,1")["message"]
    assert "6 comma-separated integers" in error(client, F + "/rho/samples", 400, index_box="0,0,0,1,1")["message"]
    assert "4 comma-separated integers" in error(client, F + "/psi/samples", 400, index_box="0,0,0,1,1,1")["message"]
    assert "not an integer" in error(client, F + "/rho/samples", 400, index_box="0,0,0,1,1,1.0")["message"]
    assert "along x" in error(client, F + "/rho/samples", 422, index_box="5,0,0,5,1,1")["message"]
    assert "along z" in error(client, F + "/rho/samples", 422, index_box="0,0,0,1,1,12")["message"]
    assert "6 comma-separated numbers" in error(client, F + "/rho/samples", 400, box="0,0,0")["message"]
    assert "not a finite number" in error(client, F + "/rho/samples", 400, box="0,0,0,1,1,1e999")["message"]
    assert "empty" in error(client, F + "/rho/samples", 422, box="2,0,0,1,1,3")["message"]
    assert "no sample lies" in error(client, F + "/rho/samples", 422, box="100,0,0,200,9,9")["message"]
    assert "dtype" in error(client, F + "/rho/samples", 400, dtype="f64")["message"]
    assert "format" in error(client, F + "/rho/samples", 400, format="csv")["message"]
    assert "unknown parameter 'where'" in error(client, F + "/rho/samples", 400, where="x > 1")["message"]
    assert "unknown parameter" in error(client, F + "/rho", 400, level=1)["message"]
    assert "unknown parameter" in error(client, F, 400, level=1)["message"]


def test_samples_are_bounded_by_max_points(limited):
    # over --max-points (20,000 here): 37 x 20 x 11 x 3 components at level 0
    err = error(limited, F + "/E/samples", 413)
    assert err["kind"] == "too_large" and "--max-points" in err["message"] and "24,420" in err["message"]
    assert error(limited, F + "/E/samples", 413, budget=10**6)["kind"] == "too_large"  # a budget over the limit too
    samples(limited, "E", level=1)  # a coarser level fits
    samples(limited, "E", component="x")  # one component fits
