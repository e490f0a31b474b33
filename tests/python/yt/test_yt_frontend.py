"""motes' yt frontend (motes.yt): yt.load of a dataset gives the same fields, regions, spheres
and whole-domain data as yt.load_particles on the same arrays; a small sphere reads only the
cells of the grid yt sees that it touches; time series; a projection plot is drawn."""
import os
import pathlib
import sys

import numpy as np
import pytest
from needs import need

import motes

yt = need("yt")
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
    monkeypatch.setattr(motes.yt.particles, "CELL_PARTICLES", 5000)  # 4 x 4 x 4 cells at this size (120,000: one cell by default)


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
    assert len(ds.index.data_files) == 64
    ref = reference(cols, ds)
    rng = np.random.default_rng(2)
    left, width = ds.domain_left_edge.d, ds.domain_right_edge.d - ds.domain_left_edge.d
    for _ in range(12):  # small spheres across the cells' faces and corners
        c = left + width * (rng.integers(1, 4, 3) / 4 + rng.uniform(-0.02, 0.02, 3))
        r = float(rng.uniform(0.5, 4))
        assert np.array_equal(ids(ds.sphere(c, r), "particles"), ids(ref.sphere(c, r), "io"))
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
    left, width = ds.domain_left_edge.d, ds.domain_right_edge.d - ds.domain_left_edge.d
    for cell, r, most in (((1, 1, 1), 4.0, 1), ((2, 2, 1), 0.08 * float(width.min()), 8)):  # 8: at a corner
        c = left + width * (np.array(cell) + 0.5) / 4 if most == 1 else left + width * np.array(cell) / 4
        ds.cells_read.clear()
        n = len(ds.sphere(c, r)["particles", "energy"])
        d2 = (cols["x"] - c[0]) ** 2 + (cols["y"] - c[1]) ** 2 + (cols["z"] - c[2]) ** 2
        assert n == int((d2 <= r * r).sum()) > 0
        assert 1 <= len(set(ds.cells_read)) <= most < len(ds.index.data_files)


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

    project = tomllib.loads((pathlib.Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["yt.frontends"] == {"motes": "motes.yt"}


def test_a_mass_column_is_yts_particle_mass(tmp_path):
    cols = motes.synth.uniform(5000, seed=2)
    cols["mass"] = np.linspace(1.0, 2.0, 5000, dtype=np.float32)
    motes.write(tmp_path / "m.motes", cols, sync=False)
    ds = yt.load(str(tmp_path / "m.motes"))
    c = np.array([0.4, 0.5, 0.6])
    got = np.sort(ds.sphere(c, (0.2, "code_length"))["all", "particle_mass"].d)
    inside = ((cols["x"] - c[0]) ** 2 + (cols["y"] - c[1]) ** 2 + (cols["z"] - c[2]) ** 2) <= 0.2 ** 2
    assert np.array_equal(got, np.sort(cols["mass"][inside]).astype("f8"))


@pytest.mark.parametrize("centering", ["node", "cell"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_grid_fields_are_a_yt_uniform_grid(tmp_path, level, centering):
    """motes.yt.grid: every uniform 3-D field of a step, read at a level, sample for sample at
    the positions of yt's cells; regions select the cells whose centres they hold."""
    rng = np.random.default_rng(level)
    rho = rng.random((12, 10, 7)).astype("f4")  # (z, y, x)
    e = rng.random((12, 10, 7, 3))
    origin, spacing = (1.0, -2.0, 0.5), (0.5, 0.25, 0.1)
    geo = dict(origin=origin, spacing=spacing, centering=centering)
    motes.write(tmp_path / "g.motes", motes.synth.uniform(100), sync=False,
                fields={"rho": motes.Field(rho, unit="g/cm**3", **geo),
                        "E": motes.Field(e, components=("x", "y", "z"), **geo),
                        "flat": motes.Field(rng.random((5, 6)), origin=(0, 0), spacing=(1, 1))})
    g = motes.yt.grid(str(tmp_path / "g.motes"), level=level)
    s = 1 << level
    assert tuple(g.domain_dimensions) == tuple(-(-d // s) for d in (7, 10, 12))
    assert sorted(f for _, f in g.field_list) == ["E_x", "E_y", "E_z", "rho"]
    ad = g.all_data()
    shift = 0.5 if centering == "cell" else 0.0
    idx = [np.rint((ad["index", a].d - origin[k]) / spacing[k] - shift).astype(int) for k, a in enumerate("xyz")]
    for k in range(3):
        assert np.all(idx[k] % s == 0)
    assert str(ad["stream", "rho"].units) == "g/cm**3"
    assert np.array_equal(ad["stream", "rho"].d, rho[idx[2], idx[1], idx[0]].astype("f8"))
    assert np.array_equal(ad["stream", "E_y"].d, e[idx[2], idx[1], idx[0], 1])
    lo, hi = np.array([1.6, -1.4, 0.72]), np.array([2.9, -0.6, 1.28])  # no cell centre on a face
    centres = [ad["index", a].d for a in "xyz"]
    inside = np.all([(centres[k] >= lo[k]) & (centres[k] <= hi[k]) for k in range(3)], axis=0)
    assert np.array_equal(np.sort(g.region((lo + hi) / 2, lo, hi)["stream", "rho"].d),
                          np.sort(ad["stream", "rho"].d[inside]))


def test_grid_refuses_what_yt_grids_cannot_hold(tmp_path):
    motes.write(tmp_path / "g.motes", motes.synth.uniform(100), sync=False,
                fields={"flat": motes.Field(np.ones((5, 6)), origin=(0, 0), spacing=(1, 1)),
                        "a": motes.Field(np.ones((3, 4, 5)), origin=(0, 0, 0), spacing=(1, 1, 1)),
                        "b": motes.Field(np.ones((3, 4, 6)), origin=(0, 0, 0), spacing=(1, 1, 1))})
    with pytest.raises(motes.UsageError, match="'flat' is not on a uniform 3-D Cartesian grid"):
        motes.yt.grid(str(tmp_path / "g.motes"), fields=["flat"])
    with pytest.raises(motes.UsageError, match="'b' is on another grid than 'a'"):
        motes.yt.grid(str(tmp_path / "g.motes"), fields=["a", "b"])
    with pytest.raises(motes.UsageError, match="levels 0 to"):
        motes.yt.grid(str(tmp_path / "g.motes"), fields=["a"], level=9)
    assert [f for _, f in motes.yt.grid(str(tmp_path / "g.motes")).field_list] == ["a"]
    motes.write(tmp_path / "p.motes", motes.synth.uniform(100), sync=False)
    with pytest.raises(motes.UsageError, match="no uniform 3-D Cartesian grid field"):
        motes.yt.grid(str(tmp_path / "p.motes"))
