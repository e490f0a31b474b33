"""thetaMode fields (FBPIC, WarpX RZ) against openPMD-viewer on files FBPIC wrote itself
(tests/fixtures/fbpic/, made by make_fbpic.py beside it): ``motes convert`` keeps every
mesh's modes bit for bit; the field reconstructed at any (r, θ, z) (``sample``, ``field()``
in queries, the Cartesian resampling, the server's slice) equals openPMD-viewer's
``get_field(..., theta=...)`` at its grid points and its linear interpolation between them;
exporting back to openPMD gives the same meshes; errors name what cannot apply."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from needs import need

h5py = need("h5py")
need("openpmd_api")
viewer = need("openpmd_viewer")
from scipy.interpolate import RegularGridInterpolator  # noqa: E402

import motes  # noqa: E402
from motes.convert import ConversionWarning, convert  # noqa: E402
from motes.errors import UsageError  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "fbpic", "data00000008.h5")
IT = 8
MESHES = {"E": ("r", "t", "z"), "B": ("r", "t", "z"), "J": ("r", "t", "z"), "rho": (None,)}
THETAS = (0.0, 0.7, 2.3, -1.9, math.pi)
VALIDATOR = os.path.join(os.path.dirname(sys.executable), "openPMD_check_h5")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """FBPIC's file as a series folder, its conversion, and openPMD-viewer on it."""
    root = tmp_path_factory.mktemp("fbpic")
    (root / "hdf5").mkdir()
    src = root / "hdf5" / os.path.basename(FIXTURE)
    shutil.copyfile(FIXTURE, src)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        convert(str(root / "hdf5" / "data%T.h5"), str(root / "run.motes"))
    skipped = [str(w.message) for w in caught if issubclass(w.category, ConversionWarning)]
    assert not skipped, skipped   # every mesh imported (before thetaMode: "skipped: geometry 'thetaMode' ...")
    ts = viewer.OpenPMDTimeSeries(str(root / "hdf5"), backend="h5py", check_all_files=False)
    return {"root": root, "src": src, "ds": motes.open(root / "run.motes"), "ts": ts}


def _slice(ts, name, comp, theta):
    """openPMD-viewer's plane through the axis at angle theta: values (2 Nr, Nz), r (2 Nr), z."""
    f, info = ts.get_field(name, coord=comp, iteration=IT, theta=theta, m="all")
    assert info.axes == {0: "r", 1: "z"}
    return f, info.r, info.z


def _scale(a):
    return float(np.nanmax(np.abs(a))) or 1.0


def test_every_mesh_is_imported_with_its_modes_bit_for_bit(run):
    ds = run["ds"]
    assert sorted(ds.field_names(IT)) == sorted(MESHES)
    with h5py.File(run["src"]) as h:
        for name, comps in MESHES.items():
            rec = h[f"data/{IT}/fields/{name}"]
            f = ds.field(name, IT)
            assert f.geometry == "thetaMode" and f.modes == 2 and f.imag == "+"
            assert f.axis_names == ("z", "r") and f.centering == "cell"     # position (0.5, 0.5)
            dr, dz = rec.attrs["gridSpacing"]
            r0, z0 = rec.attrs["gridGlobalOffset"]
            assert f.spacing == (dz, dr) and f.origin == (z0, r0)
            for c in comps:
                stored = (rec if c is None else rec[c])[()]
                got = f.read(component=c)
                assert got.dtype == stored.dtype and got.shape == stored.shape == (3, 16, 32)
                assert np.array_equal(got, stored), (name, c)
            if comps != (None,):
                assert np.array_equal(f.read(), np.stack([rec[c][()] for c in comps], axis=-1))
    # a level and a box read the modes' lattice, as a Cartesian grid's
    e = ds.field("E", IT)
    with h5py.File(run["src"]) as h:
        er = h[f"data/{IT}/fields/E/r"][()]
    assert np.array_equal(e.read(level=1, component="r"), er[:, ::2, ::2])
    assert np.array_equal(e.read(index_box=((4, 2), (20, 9)), component="r"), er[:, 2:9, 4:20])


@pytest.mark.parametrize("name,comp", [("rho", None), ("E", "x"), ("E", "y"), ("E", "z"), ("E", "r"), ("E", "t"),
                                       ("B", "x"), ("B", "y"), ("J", "t")])
def test_the_field_at_the_slice_grid_points_is_openpmd_viewers(run, name, comp):
    f = run["ds"].field(name, IT)
    for theta in THETAS:
        want, r, z = _slice(run["ts"], name, comp, theta)
        rr, zz = np.meshgrid(r, z, indexing="ij")       # negative r: the point at theta + pi
        got = f.sample(rr * np.cos(theta), rr * np.sin(theta), zz, component=comp).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * _scale(want), err_msg=f"{name} {comp} {theta}")


@pytest.mark.parametrize("name,comp", [("rho", None), ("E", "x"), ("E", "y"), ("E", "z"), ("B", "x"), ("J", "y")])
def test_between_grid_points_and_across_the_axis_it_is_the_slices_linear_interpolation(run, name, comp):
    """Random (r, θ, z) in the samples' hull and between the axis and the first radius: the
    viewer's plane at θ interpolated linearly (its r from -r_max to r_max spans the axis)."""
    f = run["ds"].field(name, IT)
    rng = np.random.default_rng(7)
    for theta in rng.uniform(-math.pi, math.pi, 4):
        want_plane, r, z = _slice(run["ts"], name, comp, theta)
        rs = np.concatenate([rng.uniform(0, r[-1], 300), rng.uniform(0, r[len(r) // 2], 40)])   # 40 inside r0
        zs = rng.uniform(z[0], z[-1], rs.size)
        want = RegularGridInterpolator((r, z), want_plane)(np.stack([rs, zs], axis=-1))
        got = f.sample(rs * np.cos(theta), rs * np.sin(theta), zs, component=comp)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * _scale(want_plane))


def test_r_and_t_near_the_axis_are_those_of_the_interpolated_x_and_y(run):
    """Between the axis and the first radius r and t flip sign across it (they point the
    other way there): they are the interpolated x and y turned by θ, not the plane of r."""
    f = run["ds"].field("E", IT)
    rng = np.random.default_rng(8)
    theta = 0.9
    (px, r, z), (py, _, _) = _slice(run["ts"], "E", "x", theta), _slice(run["ts"], "E", "y", theta)
    rs, zs = rng.uniform(0, r[len(r) // 2], 50), rng.uniform(z[0], z[-1], 50)
    at = np.stack([rs, zs], axis=-1)
    ex, ey = RegularGridInterpolator((r, z), px)(at), RegularGridInterpolator((r, z), py)(at)
    x, y = rs * math.cos(theta), rs * math.sin(theta)
    scale = _scale(px) + _scale(py)
    np.testing.assert_allclose(f.sample(x, y, zs, component="r"), math.cos(theta) * ex + math.sin(theta) * ey,
                               rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(f.sample(x, y, zs, component="t"), -math.sin(theta) * ex + math.cos(theta) * ey,
                               rtol=0, atol=1e-11 * scale)
    # outside the last radius and the z range: NaN, as a Cartesian field outside its hull
    outside = f.sample([r[-1] * 1.01, 0.0], [0.0, 0.0], [0.0, z[-1] + 1e-6], component="x")
    assert np.isnan(outside).all()


def test_at_the_particles_sample_queries_and_histograms_reconstruct_the_field(run):
    ds = run["ds"]
    t = ds.query(step=IT, columns=["x", "y", "z", "field('E', 'x')", "field('rho')"])
    x, y, z = (np.asarray(t[c], dtype=np.float64) for c in "xyz")
    assert x.size == 512
    ex = ds.sample("E", x, y, z, step=IT, component="x")
    assert np.array_equal(np.asarray(t["field('E', 'x')"]), ex)
    assert np.array_equal(np.asarray(t["field('rho')"]), ds.sample("rho", x, y, z, step=IT))
    assert ds.count("field('E', 'x') > 0", step=IT) == int(np.sum(ex > 0))
    # the oracle at 40 of them: openPMD-viewer's plane through each particle, interpolated
    rng = np.random.default_rng(9)
    for i in rng.choice(x.size, 40, replace=False):
        theta, r = math.atan2(y[i], x[i]), math.hypot(x[i], y[i])
        for name, comp, got in (("E", "x", ex[i]), ("rho", None, t["field('rho')"][i])):
            plane, rs, zs = _slice(run["ts"], name, comp, theta)
            want = RegularGridInterpolator((rs, zs), plane)([[r, z[i]]])[0]
            assert abs(got - want) <= 1e-11 * _scale(plane), (name, i, got, want)
    counts, _ = ds.histogram("field('E', 'x')", bins=8, range=(-1e12, 1e12), step=IT)
    assert counts.sum() == int(np.sum((ex >= -1e12) & (ex <= 1e12)))


def test_the_cartesian_resampling_is_openpmd_viewers_3d_reconstruction(run):
    """get_field(theta=None) on its x = y = ±r grid, where both interpolate between the two
    radii around r: from dr to the last radius and where r/dr has a fractional part <= 1/2.
    (openPMD-viewer's construct_3d_from_circ takes the first radius' value below dr,
    extrapolates past the last radius, and when the fractional part of r/dr is above 1/2
    extrapolates from the two radii below r instead: its index is one too small there.)"""
    e = run["ds"].field("E", IT)
    view = e.cartesian()
    for comp in ("x", "y", "z"):
        want, info = run["ts"].get_field("E", coord=comp, iteration=IT, theta=None)
        assert view.dims == (len(info.x), len(info.y), len(info.z))
        np.testing.assert_allclose(view.axis(0), info.x, rtol=0, atol=1e-18)
        np.testing.assert_allclose(view.axis(2), info.z, rtol=0, atol=1e-18)
        got = np.transpose(view.read(component=comp), (2, 1, 0))     # (z, y, x) -> the viewer's (x, y, z)
        r = np.hypot(info.x[:, None], info.y[None, :])
        u = r / e.spacing[1]
        inside = (r >= e.spacing[1]) & (r <= e.axis(1)[-1]) & (u - np.floor(u) <= 0.5)
        np.testing.assert_allclose(got[inside], want[inside], rtol=0, atol=1e-12 * _scale(want))
        assert np.isnan(got[r > e.axis(1)[-1] * (1 + 1e-9)]).all()
    # another resolution: every sample is the field at its point
    fine = e.cartesian(dims=(9, 7, 20))
    a = fine.read(component="z", level=1)
    px, py, pz = (fine.axis(k)[::2] for k in range(3))
    zz, yy, xx = np.meshgrid(pz, py, px, indexing="ij")
    assert np.array_equal(a, e.sample(xx.ravel(), yy.ravel(), zz.ravel(), component="z").reshape(a.shape),
                          equal_nan=True)
    fld = fine.to_field(level=1)
    assert fld.geometry == "cartesian" and fld.components == ("r", "t", "z", "x", "y")
    assert "openpmd" not in fld.attributes
    assert fld.spacing == tuple(2 * h for h in fine.spacing)


def test_the_server_hands_the_viewer_a_cartesian_grid(run):
    need("starlette")
    pa = need("pyarrow")
    from motes.server import Config, create_app
    from server_util import make_client

    base = f"/api/v1/datasets/run/steps/{IT}/fields"
    app = create_app(Config(datasets=[("run", str(run["root"] / "run.motes"))]), opener=motes.open)
    with make_client(app) as client:
        listing = client.get(base).json()["fields"]
        e = next(f for f in listing if f["name"] == "E")
        assert e["ndim"] == 3 and e["dims"] == [32, 32, 32] and e["geometry"] == "thetaMode"
        info = client.get(base + "/E").json()
        assert info["geometry"] == "thetaMode" and info["stored"]["modes"] == 2 and info["stored"]["axes"] == ["z", "r"]
        assert info["components"] == ["r", "t", "z", "x", "y"]
        # the viewer's plane perpendicular to y through y = +dr/2 (index 16), component x
        r = client.get(base + "/E/samples", params={"index_box": "0,16,0,32,17,32", "component": "x",
                                                     "dtype": "native", "format": "arrow"})
        assert r.status_code == 200, r.text
        table = pa.ipc.open_stream(r.content).read_all()
        plane = table.column("x").to_numpy().reshape(32, 32)             # (z, x): x fastest
    want, vinfo = run["ts"].get_field("E", coord="x", iteration=IT, theta=None)
    u = np.hypot(vinfo.x, vinfo.y[16]) / run["ds"].field("E", IT).spacing[1]
    inside = (u >= 1) & (u - np.floor(u) <= 0.5) & (u <= 15.5)      # where the viewer's 3-D interpolates
    np.testing.assert_allclose(plane.T[inside], want[inside, 16, :], rtol=0, atol=1e-12 * _scale(want))


def test_export_gives_the_same_thetamode_meshes_back(run, tmp_path):
    out = tmp_path / "back_%T.h5"
    convert(str(run["root"] / "run.motes"), str(out))
    back = tmp_path / f"back_{IT}.h5"
    with h5py.File(run["src"]) as a, h5py.File(back) as b:
        assert a.attrs["meshesPath"] == b.attrs["meshesPath"] == b"fields/"
        for name, comps in MESHES.items():
            ra, rb = a[f"data/{IT}/fields/{name}"], b[f"data/{IT}/fields/{name}"]
            for key in ("geometry", "geometryParameters", "axisLabels", "dataOrder", "gridSpacing",
                        "gridGlobalOffset", "gridUnitSI", "unitDimension", "timeOffset"):
                assert np.array_equal(np.asarray(ra.attrs[key]), np.asarray(rb.attrs[key])), (name, key)
            for c in comps:
                ca, cb = (ra, rb) if c is None else (ra[c], rb[c])
                assert ca.dtype == cb.dtype and np.array_equal(ca[()], cb[()]), (name, c)
                for key in ("position", "unitSI"):
                    assert np.array_equal(ca.attrs[key], cb.attrs[key]), (name, c, key)
    r = subprocess.run([VALIDATOR, "-i", str(back)], capture_output=True, text=True, timeout=60)
    assert re.search(r"Result: 0 Errors", r.stdout), r.stdout
    # and openPMD-viewer reads the export as the original
    ts = viewer.OpenPMDTimeSeries(str(tmp_path), backend="h5py", check_all_files=False)
    for theta in (0.3, -2.0):
        a, _, _ = _slice(run["ts"], "E", "y", theta)
        b, _, _ = _slice(ts, "E", "y", theta)
        assert np.array_equal(a, b)


def _theta_series(path, labels, imag, rng):
    """A thetaMode mesh written with openpmd-api: axisLabels ``labels``, geometryParameters
    imag ``imag``, 3 modes, node-centred; returns its (5, Nr, Nz) array."""
    io = need("openpmd_api")
    s = io.Series(str(path), io.Access.create)
    it = s.iterations[0]
    m = it.meshes["rho"]
    m.geometry = io.Geometry.thetaMode
    m.geometry_parameters = f"m=3;imag={imag}"
    m.axis_labels = list(labels)
    nr, nz = 7, 10
    m.grid_spacing = [0.5 if a == "r" else 0.25 for a in labels]
    m.grid_global_offset = [0.0 if a == "r" else -1.0 for a in labels]
    m.grid_unit_SI = 1.0
    modes = rng.standard_normal((5, nr, nz))
    stored = modes if list(labels) == ["r", "z"] else np.ascontiguousarray(np.transpose(modes, (0, 2, 1)))
    rc = m[io.Mesh_Record_Component.SCALAR]
    rc.reset_dataset(io.Dataset(stored.dtype, list(stored.shape)))
    rc.position = [0.0, 0.0]
    rc.unit_SI = 1.0
    rc.store_chunk(stored)
    it.close()
    s.close()
    return modes


@pytest.mark.parametrize("labels,imag", [(("z", "r"), "+"), (("r", "z"), "-")])
def test_other_axis_order_and_imag_minus(tmp_path, labels, imag):
    """(z, r) datasets are transposed to (modes, r, z) and back; imag "-" flips the sin terms:
    F(θ) is openPMD-viewer's (which reads every file as imag "+") at -θ."""
    src = tmp_path / "in" / "theta_0.h5"
    src.parent.mkdir()
    modes = _theta_series(src, labels, imag, np.random.default_rng(3))
    convert(str(src), str(tmp_path / "t.motes"))
    f = motes.open(tmp_path / "t.motes").field("rho", 0)
    assert f.imag == imag and f.modes == 3 and f.centering == "node"
    assert np.array_equal(f.read(), modes)
    ts = viewer.OpenPMDTimeSeries(str(src.parent), backend="h5py", check_all_files=False)
    sign = 1 if imag == "+" else -1
    for theta in (0.4, 2.0):
        want, info = ts.get_field("rho", iteration=0, theta=sign * theta, m="all")
        planes = want if info.axes[0] == "r" else want.T
        rr, zz = np.meshgrid(info.r, info.z, indexing="ij")
        got = f.sample(rr * math.cos(theta), rr * math.sin(theta), zz).reshape(rr.shape)
        off = info.r != 0       # (on the axis θ is 0: below)
        np.testing.assert_allclose(got[off], planes[off], rtol=0, atol=1e-12 * _scale(planes))
    # On the axis (this node-centred grid has a sample there) θ is 0, as in openPMD-viewer's
    # 3-D reconstruction: its plane at θ = 0.
    want, info = ts.get_field("rho", iteration=0, theta=0.0, m="all")
    planes = want if info.axes[0] == "r" else want.T
    axis = planes[np.flatnonzero(info.r == 0)[-1]]
    np.testing.assert_allclose(f.sample(np.zeros_like(info.z), np.zeros_like(info.z), info.z), axis,
                               rtol=0, atol=1e-12 * _scale(planes))
    (tmp_path / "out").mkdir()
    convert(str(tmp_path / "t.motes"), str(tmp_path / "out" / "back_%T.h5"))
    with h5py.File(src) as a, h5py.File(tmp_path / "out" / "back_0.h5") as b:
        ra, rb = a["data/0/meshes/rho"], b["data/0/meshes/rho"]
        for key in ("geometry", "geometryParameters", "axisLabels", "gridSpacing", "gridGlobalOffset", "position"):
            assert np.array_equal(np.asarray(ra.attrs[key]), np.asarray(rb.attrs[key])), key
        assert np.array_equal(ra[()], rb[()])


def test_written_and_read_without_openpmd(tmp_path):
    """motes.Field(..., geometry="thetaMode") written by motes.write reads back as it was, and
    a write of the same field as a to_field() copy is the same file."""
    rng = np.random.default_rng(4)
    e = motes.Field(rng.standard_normal((3, 6, 9, 3)).astype(np.float32), geometry="thetaMode", origin=(-1.0, 0.0),
                    spacing=(0.25, 0.5), centering="cell", components=("r", "t", "z"), unit="V/m")
    motes.write(tmp_path / "a.motes", None, step=0, fields={"E": e})
    f = motes.open(tmp_path / "a.motes").field("E", 0)
    assert f.shape == (3, 6, 9, 3) and np.array_equal(f.read(), e.array)
    assert f.sample_components == ("r", "t", "z", "x", "y")
    g = f.to_field()
    assert g.geometry == "thetaMode" and g.imag == "+" and np.array_equal(g.array, e.array)
    info = motes.open(tmp_path / "a.motes").describe()
    assert info["steps"][0]["fields"]["E"]["geometry"] == "thetaMode"
    (fi,) = info["field_files"]
    assert fi["geometry"] == "thetaMode" and fi["modes"] == 2


def test_what_cannot_apply_says_so(run, tmp_path):
    e = run["ds"].field("E", IT)
    with pytest.raises(UsageError, match=r"x and y of a thetaMode field are reconstructed"):
        e.read(component="x")
    with pytest.raises(UsageError, match=r"thetaMode field: give x, y and z"):
        e.sample([0.0], [0.0], component="z")
    with pytest.raises(UsageError, match=r"has no component 'w'"):
        e.sample([0.0], [0.0], [0.0], component="w")
    with pytest.raises(UsageError, match=r"thetaMode field .*read_block .* takes Cartesian grids"):
        e.read_block((0, 0), (4, 4))
    with pytest.raises(UsageError, match=r"Cartesian grid already"):
        _cartesian_field(tmp_path).cartesian()
    with pytest.raises(UsageError, match=r"thetaMode field .*H5Block takes Cartesian grids"):
        convert(str(run["root"] / "run.motes"), str(tmp_path / "out.h5part"), dst_format="h5part")
    with pytest.raises(UsageError, match=r"first axis holds 2 \* modes - 1"):
        motes.Field(np.zeros((2, 4, 4)), geometry="thetaMode")
    with pytest.raises(UsageError, match=r"r >= 0"):
        motes.Field(np.zeros((3, 4, 4)), geometry="thetaMode", origin=(0, -1))


def _cartesian_field(tmp_path):
    motes.write(tmp_path / "c.motes", None, step=0, fields={"phi": motes.Field(np.zeros((4, 5)))})
    return motes.open(tmp_path / "c.motes").field("phi", 0)
