"""Points over HTTP (docs/http-api.md, "Points"): half-open cells that tile a box return
each particle exactly once (particles on shared faces included), chained quality ranges
over cells split between requests add up to the query with no duplicate, budgets, the
frame byte by byte, float32 with an origin, Arrow, and species of several part files."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from needs import need

import motes

need("starlette")
need("uvicorn")
from motes.server import Config, Limits, create_app  # noqa: E402
from server_util import cells_param, in_cell, parse_frame, make_client, write_lattice, write_parted  # noqa: E402

SP = "/api/v1/datasets/{ds}/steps/0/species/particles"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("points")
    data = {"lat": write_lattice(root / "lat.motes"), "parts": write_parted(root / "parts.motes")}
    datasets = [("lat", str(root / "lat.motes")), ("parts", str(root / "parts.motes"))]
    try:
        from mpi4py import MPI

        mpi_data = write_parted_mpi(root / "mpi.motes", MPI)
        data["mpi"] = mpi_data
        datasets.append(("mpi", str(root / "mpi.motes")))
    except ImportError:
        pass
    app = create_app(Config(datasets=datasets, workers=2), opener=motes.open)
    with make_client(app) as client:
        yield client, data, {name: motes.open(path) for name, path in datasets}


def write_parted_mpi(path, MPI):
    """Several part files from one rank: a parallel write with a small target size."""
    from server_util import lattice_data

    data = lattice_data(20_000, 5)
    motes.write(path, data, comm=MPI.COMM_SELF, target_bytes=100_000, leaf_size=64, lod_count=4, sync=False)
    assert motes.open(path).source().part_count > 1
    return data


def names(served):
    return [n for n in ("lat", "parts", "mpi") if n in served[1]]


def species(client, name):
    r = client.get(SP.format(ds=name))
    assert r.status_code == 200, r.text
    return r.json()


def points(client, name, **params):
    r = client.get(SP.format(ds=name) + "/points", params=params)
    assert r.status_code == 200, r.text
    return parse_frame(r.content)


def tiling(rng, lo, hi, count, planes):
    """A random tiling of [lo, hi] into ``count`` boxes, cut mostly on lattice planes."""
    boxes = [(list(lo), list(hi))]
    while len(boxes) < count:
        b_lo, b_hi = boxes.pop(int(rng.integers(len(boxes))))
        a = int(rng.integers(3))
        inside = [p for p in planes[a] if b_lo[a] < p < b_hi[a]]
        cut = float(rng.choice(inside)) if inside and rng.random() < 0.8 else float(rng.uniform(b_lo[a], b_hi[a]))
        left_hi, right_lo = list(b_hi), list(b_lo)
        left_hi[a] = right_lo[a] = cut
        boxes += [(b_lo, left_hi), (right_lo, b_hi)]
    return boxes


def lattice_planes(hi, spacing=0.25):
    return [list(np.arange(0.0, h + spacing, spacing)) for h in hi]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_tilings_return_each_particle_once(served, seed):
    client, data, _ = served
    rng = np.random.default_rng(seed)
    for name in names(served):
        sp = species(client, name)
        lo, hi = sp["bounds"]["min"], sp["bounds"]["max"]
        outer_hi = [h + (0.5 if seed == 2 else 0.0) for h in hi]  # reaching past the bounds, or not
        boxes = tiling(rng, lo, outer_hi, int(rng.integers(5, 40)), lattice_planes(hi))
        header, cols = points(client, name, cells=cells_param([(b_lo, b_hi, 0.0) for b_lo, b_hi in boxes]),
                              to="1", columns="id,x,y,z")
        ids = cols["id"]
        assert len(ids) == len(data[name]["id"]) and np.array_equal(np.sort(ids), np.sort(data[name]["id"]))
        start = 0
        for (b_lo, b_hi), cell in zip(boxes, header["cells"]):
            mine = ids[start:start + cell["rows"]]
            start += cell["rows"]
            want = data[name]["id"][in_cell(data[name], b_lo, b_hi, hi)]
            assert np.array_equal(np.sort(mine), np.sort(want)), (b_lo, b_hi)


def test_particles_on_faces_go_to_the_cell_above(served):
    client, data, _ = served
    d = data["lat"]
    sp = species(client, "lat")
    hi = sp["bounds"]["max"]
    on_face = int(np.sum(d["x"] == 1.0))
    assert on_face > 10  # the data put particles on the plane x = 1
    below = ([0.0, 0.0, 0.0], [1.0, hi[1], hi[2]], 0.0)
    above = ([1.0, 0.0, 0.0], [hi[0], hi[1], hi[2]], 0.0)
    header, cols = points(client, "lat", cells=cells_param([below, above]), to="1", columns="x")
    first = cols["x"][:header["cells"][0]["rows"]]
    second = cols["x"][header["cells"][0]["rows"]:]
    assert (first < 1.0).all() and (second >= 1.0).all() and int(np.sum(second == 1.0)) == on_face
    # An upper bound at the species' maximum is inclusive: the particles at the top are in.
    top = int(np.sum(d["x"] == np.float32(hi[0])))
    assert top > 0 and int(np.sum(second == np.float32(hi[0]))) == top


def test_chained_quality_ranges_over_split_cells_add_up(served):
    client, data, dss = served
    rng = np.random.default_rng(7)
    for name in names(served):
        sp = species(client, name)
        ladder = sp["ladder"]["quality"]
        lo, hi = sp["bounds"]["min"], sp["bounds"]["max"]
        a, b = ladder[len(ladder) // 3], 0.61  # one on the ladder, one not
        got = []
        # Round 1: the whole box to a.
        _, cols = points(client, name, cells=cells_param([(lo, hi, 0.0)]), to=repr(a), columns="id")
        got.append(cols["id"])
        # Round 2: eight children that inherit a, to b.
        mid = [(l + h) / 2 for l, h in zip(lo, hi)]
        children = []
        for k in range(8):
            c_lo = [lo[i] if not (k >> i) & 1 else mid[i] for i in range(3)]
            c_hi = [mid[i] if not (k >> i) & 1 else hi[i] for i in range(3)]
            children.append((c_lo, c_hi))
        _, cols = points(client, name, cells=cells_param([(c, d, a) for c, d in children]), to=repr(b), columns="id")
        got.append(cols["id"])
        after_b = np.concatenate(got)
        want_b = dss[name].query(quality=b, columns=["id"])["id"]
        assert len(after_b) == len(np.unique(after_b)) and np.array_equal(np.sort(after_b), np.sort(want_b))
        # Round 3: some children split again (grandchildren inherit b), the others as they are, to 1.
        cells = []
        for c_lo, c_hi in children:
            if rng.random() < 0.5:
                for g_lo, g_hi in tiling(rng, c_lo, c_hi, 3, lattice_planes(hi)):
                    cells.append((g_lo, g_hi, b))
            else:
                cells.append((c_lo, c_hi, b))
        _, cols = points(client, name, cells=cells_param(cells), to="1", columns="id")
        got.append(cols["id"])
        ids = np.concatenate(got)
        assert len(ids) == len(np.unique(ids)) == len(data[name]["id"])
        assert np.array_equal(np.sort(ids), np.sort(data[name]["id"]))


def test_a_cell_at_its_target_returns_nothing(served):
    client, _, _ = served
    sp = species(client, "lat")
    lo, hi = sp["bounds"]["min"], sp["bounds"]["max"]
    header, cols = points(client, "lat", cells=cells_param([(lo, hi, 0.5), (lo, hi, 0.0)]), to="0.5", columns="id")
    assert header["cells"][0]["rows"] == 0 and header["cells"][1]["rows"] == header["rows"] > 0


def test_where_filters_the_cells(served):
    client, data, _ = served
    d = data["lat"]
    sp = species(client, "lat")
    lo, hi = sp["bounds"]["min"], sp["bounds"]["max"]
    boxes = tiling(np.random.default_rng(3), lo, hi, 12, lattice_planes(hi))
    _, cols = points(client, "lat", cells=cells_param([(a, b, 0.0) for a, b in boxes]), to="1", columns="id",
                     where="energy > 0.5 and kind != 0")
    want = d["id"][(d["energy"] > 0.5) & (d["kind"] != 0)]
    assert np.array_equal(np.sort(cols["id"]), np.sort(want))


def test_budgets(served):
    client, data, dss = served
    for name in names(served):
        sp = species(client, name)
        ladder = sp["ladder"]
        lo, hi = sp["bounds"]["min"], sp["bounds"]["max"]
        mid = [(l + h) / 2 for l, h in zip(lo, hi)]
        previous = 0.0
        for budget in (0, 50, 500, 2000, 8000, 10 ** 9):
            cells = [(lo, mid, 0.0), (mid, hi, 0.0)]
            header, cols = points(client, name, cells=cells_param(cells), budget=str(budget), columns="id,x,y,z")
            to, est = header["to"], header["estimate"]
            assert to in ladder["quality"] and to >= previous
            first_step = ladder["quality"][1]
            assert est <= budget or to == first_step, (budget, to, est)  # within budget, or forced progress
            previous = to
            want = dss[name].query(quality=to, columns=["id", "x", "y", "z"])
            expected = sum(int(in_cell(want, a, b, hi).sum()) for a, b, _ in cells)
            assert header["rows"] == expected
        assert previous == 1.0  # a budget over everything reads everything
        # Cells already at a quality: the estimate counts only what they add.
        q0 = ladder["quality"][-3]
        header, _ = points(client, name, cells=cells_param([(lo, hi, q0)]), budget="0", columns="id")
        assert header["to"] == ladder["quality"][-2]
        header, _ = points(client, name, cells=cells_param([(lo, hi, 1.0)]), budget="100", columns="id")
        assert header["rows"] == 0 and header["to"] == 1.0


def test_budget_estimates_follow_the_tree(served):
    """Over the whole box the estimate is exact: the ladder's count."""
    client, _, _ = served
    for name in names(served):
        ladder = species(client, name)["ladder"]
        for k in (2, len(ladder["count"]) // 2):
            header, _ = points(client, name, budget=str(ladder["count"][k]), columns="id")
            assert header["estimate"] == ladder["count"][k] == header["rows"]
            assert header["to"] == ladder["quality"][k]


def test_frame_dtypes_and_origin(served):
    client, data, dss = served
    d = data["lat"]
    header, cols = points(client, "lat", to="1", columns="x,ux,id,kind,energy")
    assert [c["dtype"] for c in header["columns"]] == ["f32", "f64", "u64", "i16", "f32"]
    assert "origin" not in header and header["to"] == 1.0 and header["query_ms"] >= 0
    order = np.argsort(cols["id"])
    for name in ("x", "ux", "kind", "energy"):
        assert np.array_equal(cols[name][order], d[name][np.sort(cols["id"])])
    origin = (1.5, -2.0, 0.25)
    header, f = points(client, "lat", to="1", columns="x,y,z,ux,id", dtype="f32", origin=",".join(map(repr, origin)))
    assert header["origin"] == list(origin) and all(c["dtype"] == "f32" for c in header["columns"])
    ids = cols["id"]  # the same order as the first request: one cell, the same query
    for a, o in zip("xyz", origin):
        assert np.array_equal(f[a], (d[a][ids].astype(np.float64) - o).astype(np.float32))
    assert np.array_equal(f["ux"], d["ux"][ids].astype(np.float32))
    assert np.array_equal(f["id"], d["id"][ids].astype(np.float32))
    header, f = points(client, "lat", to="1", columns="x", dtype="f32")  # origin: the bounds' minimum
    lo = species(client, "lat")["bounds"]["min"]
    assert header["origin"] == lo
    assert np.array_equal(f["x"], (d["x"][ids].astype(np.float64) - lo[0]).astype(np.float32))


def test_frames_parse_with_the_servers_parser_too(served):
    from motes.server.frames import parse

    client, _, _ = served
    r = client.get(SP.format(ds="lat") + "/points", params={"budget": "3000", "dtype": "f32"})
    header, cols = parse_frame(r.content)
    header2, cols2 = parse(r.content)
    assert header == header2 and all(np.array_equal(cols[k], cols2[k]) for k in cols)


def test_arrow(served):
    pa = need("pyarrow")
    client, _, _ = served
    sp = species(client, "parts")
    lo, hi = sp["bounds"]["min"], sp["bounds"]["max"]
    mid = [(l + h) / 2 for l, h in zip(lo, hi)]
    params = dict(cells=cells_param([(lo, mid, 0.0), (mid, hi, 0.2)]), to="0.8", columns="id,x,kind")
    header, cols = points(client, "parts", **params)
    r = client.get(SP.format(ds="parts") + "/points", params={**params, "format": "arrow"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/vnd.apache.arrow.stream"
    table = pa.ipc.open_stream(io.BytesIO(r.content)).read_all()
    assert table.column_names == ["id", "x", "kind"] and table.num_rows == header["rows"]
    for name in cols:
        assert np.array_equal(table.column(name).to_numpy(), cols[name])
    meta = {k.decode(): json.loads(v) for k, v in table.schema.metadata.items()}
    assert meta["to"] == 0.8 and meta["cells"] == header["cells"] and meta["query_ms"] >= 0


def test_too_many_points_is_413(tmp_path):
    write_lattice(tmp_path / "l.motes", n=5000)
    app = create_app(Config(datasets=[(None, str(tmp_path / "l.motes"))], limits=Limits(max_points=1000)), opener=motes.open)
    with make_client(app) as client:
        r = client.get(SP.format(ds="l") + "/points", params={"to": "1"})
        assert r.status_code == 413
        err = r.json()["error"]
        assert err["kind"] == "too_large" and "5,000" in err["message"] and "--max-points" in err["message"]
        assert client.get(SP.format(ds="l") + "/points", params={"budget": "500"}).status_code == 200
