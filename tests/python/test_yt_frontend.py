"""motes' yt frontend (motes.yt): yt.load of a dataset gives the same fields, regions, spheres
and whole-domain data as yt.load_particles on the same arrays; a small sphere reads only the
cells of the grid yt sees that it touches; time series; a projection plot is drawn."""
import os
import pathlib
import sys

import numpy as np
import pytest

import motes

yt = pytest.importorskip("yt")
import motes.yt  # noqa: E402  (registers the frontend, as yt's entry point does)

N = 120_000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    yt.set_log_level(40)
    path = tmp_path_factory.mktemp("yt") / "p.motes"
    cols = motes.synth.vpic(N, seed=9)
    cols["id"] = np.arange(N, dtype=np.int64)
    motes.write(path, cols, sync=False, units={"x": "cm", "y": "cm", "z": "cm", "energy": "erg"})
    return str(path), cols


@pytest.fixture
def small_cells(monkeypatch):
    monkeypatch.setattr(motes.yt, "CELL_PARTICLES", 5000)  # 3 x 3 x 3 cells at this size


def reference(cols, ds):
    """yt's own in-memory particles of the same arrays, in the same domain."""
    arrays = {("io", f"particle_position_{a}"): (cols[a].astype("f8"), "code_length") for a in "xyz"}
    arrays["io", "particle_mass"] = (np.ones(N), "g")
    arrays["io", "energy"] = (cols["energy"].astype("f8"), "erg")
    arrays["io", "particle_index"] = (cols["id"].astype("f8"), "")
    bbox = np.array([ds.domain_left_edge.d, ds.domain_right_edge.d]).T
    return yt.load_particles(arrays, bbox=bbox, length_unit=1.0, periodicity=(False, False, False))


def ids(obj, ptype):
    return np.sort(np.asarray(obj[ptype, "particle_index" if ptype == "io" else "id"].d, dtype=np.int64))


def test_yt_loads_the_dataset_with_its_fields(data):
    path, cols = data
    ds = yt.load(path)
    assert isinstance(ds, motes.yt.MotesDataset) and ds.particle_types == ("particles",)
    ad = ds.all_data()
    assert np.array_equal(ids(ad, "particles"), np.arange(N))
    order = np.argsort(np.asarray(ad["particles", "id"].d))
    for name in ("x", "energy", "ux"):
        assert np.array_equal(np.asarray(ad["particles", name].d)[order], cols[name].astype("f8")), name
    assert str(ad["particles", "energy"].units) == "erg"
    assert np.allclose(ad["particles", "particle_position"].d[order], np.column_stack([cols[a] for a in "xyz"]))
    assert not os.path.exists(path + ".ewah")  # yt's index is not cached beside the data


def test_regions_and_spheres_equal_yt_in_memory(data, small_cells):
    path, cols = data
    ds = yt.load(path)
    assert len(ds.index.data_files) == 27
    ref = reference(cols, ds)
    rng = np.random.default_rng(2)
    for _ in range(6):
        c = rng.uniform(ds.domain_left_edge.d, ds.domain_right_edge.d)
        r = float(rng.uniform(2, 25))
        got, want = ds.sphere(c, r), ref.sphere(c, r)
        assert np.array_equal(ids(got, "particles"), ids(want, "io"))
        lo = np.maximum(c - rng.uniform(1, 30, 3), ds.domain_left_edge.d)  # yt refuses regions past
        hi = np.minimum(c + rng.uniform(1, 30, 3), ds.domain_right_edge.d)  # a non-periodic domain
        got, want = ds.region(c, lo, hi), ref.region(c, lo, hi)
        assert np.array_equal(ids(got, "particles"), ids(want, "io"))
        assert np.isclose(got["particles", "energy"].sum().d, want["io", "energy"].sum().d)


def test_a_small_sphere_reads_only_the_cells_it_touches(data, small_cells):
    path, cols = data
    ds = yt.load(path)
    ds.index  # noqa: B018  (the index is built before the count starts)
    ds.cells_read.clear()
    sp = ds.sphere([100.0, 50.0, 25.0], 4.0)
    n = len(sp["particles", "energy"])
    d2 = (cols["x"] - 100.0) ** 2 + (cols["y"] - 50.0) ** 2 + (cols["z"] - 25.0) ** 2
    assert n == int((d2 <= 16.0).sum()) > 0
    assert 1 <= len(set(ds.cells_read)) <= 2 < len(ds.index.data_files)


def test_time_series_and_steps(tmp_path):
    path = tmp_path / "series.motes"
    with motes.Writer(path, sync=False) as w:
        for k, s in enumerate((0, 5, 10)):
            w.write_step(s, motes.synth.vpic(20_000, seed=k), time=0.5 * s)
    ts = motes.yt.series(str(path))
    assert [float(d.current_time.d) for d in ts] == [0.0, 2.5, 5.0]
    assert [d.step for d in ts] == [0, 5, 10]
    assert yt.load(str(path), step=5).step == 5 and yt.load(str(path)).step == 10
    assert len(yt.load(str(path), step=0).all_data()["particles", "x"]) == 20_000


def test_projection_plot(data, tmp_path):
    path, _ = data
    ds = yt.load(path)
    plot = yt.ParticleProjectionPlot(ds, "z", ("particles", "energy"))
    out = plot.save(str(tmp_path / "proj.png"))[0]
    from PIL import Image

    rgb = np.asarray(Image.open(out).convert("RGB"))
    assert rgb.shape[0] > 200 and len(np.unique(rgb.reshape(-1, 3), axis=0)) > 50  # a picture, not a blank


def test_the_entry_point_is_declared():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11's")
    import tomllib

    project = tomllib.loads((pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["yt.frontends"] == {"motes": "motes.yt"}
