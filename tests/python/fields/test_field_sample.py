"""Fields sampled at points (CMFE): equal to scipy's linear RegularGridInterpolator on the
same grid (node-centred at the nodes, cell-centred at the cell centres, rectilinear at its
coordinates), fill outside, 1-, 2- and 3-D, every dtype converted exactly; on particles of
the same dataset."""

import numpy as np
import pytest

from needs import need

import motes
from motes import synth
from motes.field import Field
from motes.fields.file import open_field_file, write_field_file

scipy_interp = need("scipy.interpolate")


def reference(f: Field, pts, fill):
    axes = [f.axis(k) for k in range(f.ndim)]
    values = np.transpose(f.array.astype(np.float64), list(reversed(range(f.ndim))))  # (x, y, z) indexing
    r = scipy_interp.RegularGridInterpolator(axes, values, method="linear", bounds_error=False, fill_value=fill)
    return r(np.stack(pts, axis=-1))


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("centering", ["node", "cell"])
@pytest.mark.parametrize("rectilinear", [False, True])
def test_sampling_equals_scipy(tmp_path, ndim, centering, rectilinear):
    rng = np.random.default_rng(ndim)
    shape = (7, 9, 11)[3 - ndim:]
    a = rng.standard_normal(shape).astype(np.float32)
    if rectilinear:
        coords = [np.cumsum(rng.random(n) + 0.1) for n in reversed(shape)]
        f = Field(a, coords=coords)
    else:
        f = Field(a, origin=(1, -2, 3)[:ndim], spacing=(0.5, 0.25, 2)[:ndim], centering=centering)
    write_field_file(tmp_path / "s.mfd", f, name="s", sync=False)
    stored = open_field_file(tmp_path / "s.mfd")
    lo, hi = f.bounds()
    pts = [rng.uniform(l - 0.2 * (h - l + 1), h + 0.2 * (h - l + 1), 5000) for l, h in zip(lo, hi)]
    pts[0][:3] = [lo[0], hi[0], np.nan]  # the hull's ends are inside; NaN is outside
    got = stored.sample(*pts, fill=-99.0)
    want = reference(f, pts, -99.0)
    want[2] = -99.0
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert (got == -99.0).any() and (got != -99.0).any()


def test_vector_fields_need_a_component_and_datasets_sample_their_particles(tmp_path):
    e = np.random.default_rng(2).standard_normal((10, 12, 14, 3))
    fld = Field(e, origin=(0, 40, 0), spacing=(200 / 13, 20 / 11, 50 / 9), components=("x", "y", "z"))
    p = synth.vpic(20000, seed=3)
    motes.write(tmp_path / "r.motes", p, fields={"E": fld}, sync=False)
    ds = motes.open(tmp_path / "r.motes")
    with pytest.raises(motes.UsageError, match="pass component="):
        ds.sample("E", p["x"], p["y"], p["z"])
    got = ds.sample("E", p["x"], p["y"], p["z"], component="y", fill=0.0)
    comp = Field(np.ascontiguousarray(e[..., 1]), origin=fld.origin, spacing=fld.spacing)
    np.testing.assert_allclose(got, reference(comp, [p["x"], p["y"], p["z"]], 0.0), rtol=1e-12, atol=1e-12)
    with pytest.raises(motes.UsageError, match="give x, y, z"):
        ds.sample("E", p["x"], component="x")


def test_positions_of_any_shape_give_values_of_that_shape(tmp_path):
    """numpy's way: the positions broadcast together, the values come in their shape (a
    meshgrid plane gives a plane), each equal to sampling the flattened points."""
    rng = np.random.default_rng(7)
    f = Field(rng.standard_normal((6, 7, 8)).astype(np.float32), origin=(0, 0, 0), spacing=(1, 1, 1))
    motes.write(tmp_path / "r.motes", {k: rng.random(10) for k in "xyz"}, fields={"rho": f}, sync=False)
    ds = motes.open(tmp_path / "r.motes")
    xs, ys = np.linspace(-1, 8, 13), np.linspace(0, 6, 5)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    got = ds.sample("rho", X, Y, 2.5)
    assert got.shape == (13, 5)
    want = reference(f, [X.ravel(), Y.ravel(), np.full(X.size, 2.5)], np.nan).reshape(13, 5)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    col = ds.sample("rho", xs[:, None], ys[None, :], np.float32(2.5))  # broadcasting, as numpy does
    np.testing.assert_array_equal(col, got)
    one = ds.sample("rho", 1.5, 2, 3)
    assert one.shape == () and one == reference(f, [[1.5], [2], [3]], np.nan)[0]
    with pytest.raises(motes.UsageError, match=r"do not broadcast together \(x \(13,\), y \(5,\), z \(\)\)"):
        ds.sample("rho", xs, ys, 2.5)


@pytest.mark.parametrize("bad, dtype", [(["a", "b"], "<U1"), (np.array([b"1"]), "|S1"),
                                        (np.array([1, "x"], dtype=object), "object"), ([1 + 2j], "complex128")])
def test_positions_that_are_not_numbers_are_a_usage_error(tmp_path, bad, dtype):
    f = Field(np.zeros((4, 4, 4), np.float32))
    motes.write(tmp_path / "r.motes", {k: np.zeros(3) for k in "xyz"}, fields={"rho": f}, sync=False)
    ds = motes.open(tmp_path / "r.motes")
    with pytest.raises(motes.UsageError, match=f"y must be numbers.*dtype {dtype}"):
        ds.sample("rho", np.zeros(len(bad)), bad, np.zeros(len(bad)))
