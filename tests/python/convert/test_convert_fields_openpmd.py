"""openPMD meshes <-> motes fields (motes.convert.openpmd.meshes through openpmd.read/write):
WarpX-like series written by openpmd-api in the test, both axis orders and dataOrder F;
round trips compared with openpmd-api, exports checked by the openPMD validator."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given

from needs import need

io = need("openpmd_api")
h5py = need("h5py")

import motes  # noqa: E402
from field_util import SETTINGS, assert_same_field, fields  # noqa: E402
from motes.convert import ConversionWarning, convert, h5part  # noqa: E402
from motes.convert import openpmd as op  # noqa: E402
from motes.convert.base import Species, Step, chunked_arrays, openpmd_unit, parse_openpmd_unit  # noqa: E402
from motes.field import Field  # noqa: E402

SCALAR = io.Mesh_Record_Component.SCALAR
VALIDATOR = os.path.join(os.path.dirname(sys.executable), "openPMD_check_h5")
D = io.Unit_Dimension
E_DIM = {D.L: 1, D.M: 1, D.T: -3, D.I: -1}
B_DIM = {D.M: 1, D.T: -2, D.I: -1}
RHO_DIM = {D.L: -3, D.T: 1, D.I: 1}
SIZES = {"x": 12, "y": 9, "z": 7}          # non-cubic: every axis mix-up shows
SPACING = {"x": 0.1, "y": 0.25, "z": 0.5}
OFFSET = {"x": -1.0, "y": 0.0, "z": 2.0}
ORDERS = [("C", "zyx"), ("C", "xyz"), ("F", "xyz")]


def _validate(path):
    r = subprocess.run([VALIDATOR, "-i", str(path)], capture_output=True, text=True, timeout=60)
    m = re.search(r"Result: (\d+) Errors and (\d+) Warnings", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1)), int(m.group(2)), r.stdout


def _mesh(it, name, labels, order, dim, positions, dtype, rng, data, scalar=False, unit_si=1.0):
    """A mesh record as WarpX writes it with openpmd-api; its arrays (dataset dims) into ``data``."""
    m = it.meshes[name]
    m.axis_labels = list(labels)
    m.data_order = order
    m.grid_spacing = [SPACING[a] for a in labels]
    m.grid_global_offset = [OFFSET[a] for a in labels]
    m.grid_unit_SI = 1e-6
    m.unit_dimension = dim
    m.set_attribute("fieldSmoothing", "none")
    shape = [SIZES[a] for a in (labels if order == "C" else labels[::-1])]
    for comp, pos in positions.items():
        a = rng.standard_normal(shape).astype(dtype)
        rc = m[SCALAR] if scalar else m[comp]
        rc.reset_dataset(io.Dataset(a.dtype, shape))
        rc.position = pos
        rc.unit_SI = unit_si
        rc.store_chunk(a)
        data[(name, comp)] = a
    return m


def warpx_like(path, order="C", labels="zyx", seed=0, staggered=False, n=200):
    """Iteration 10: 3-D E (node) and B (cell) vector meshes, rho (scalar, cell), electrons."""
    rng = np.random.default_rng(seed)
    s = io.Series(str(path), io.Access.create)
    s.author = "test"
    it = s.iterations[10]
    it.time, it.dt, it.time_unit_SI = 2.0, 0.5, 1e-15
    data = {}
    if staggered:   # Yee: each component half a cell along its own axis
        epos = {c: [0.5 if a == c else 0.0 for a in labels] for c in "xyz"}
    else:
        epos = {c: [0.0] * 3 for c in "xyz"}
    e = _mesh(it, "E", labels, order, E_DIM, epos, np.float32, rng, data)
    e.time_offset = 0.25
    _mesh(it, "B", labels, order, B_DIM, {c: [0.5] * 3 for c in "xyz"}, np.float64, rng, data, unit_si=2.0)
    _mesh(it, "rho", labels, order, RHO_DIM, {"": [0.5] * 3}, np.float64, rng, data, scalar=True)
    el = it.particles["electrons"]
    for c in "xyz":
        p = el["position"][c]
        p.reset_dataset(io.Dataset(np.dtype("float64"), [n]))
        p.store_chunk(rng.random(n))
        o = el["positionOffset"][c]
        o.reset_dataset(io.Dataset(np.dtype("float64"), [n]))
        o.make_constant(0.0)
    it.close()
    s.close()
    return data


def _zyx(a, order, labels):
    """A dataset array in (z, y, x) order."""
    lab_c = list(labels) if order == "C" else list(labels)[::-1]
    return np.transpose(a, [lab_c.index(x) for x in "zyx"])


@pytest.mark.parametrize("order, labels", ORDERS)
def test_read_warpx_like_meshes(tmp_path, order, labels):
    path = tmp_path / "w.h5"
    data = warpx_like(path, order, labels)
    (st,) = op.read(str(path))
    assert list(st.species) == ["electrons"] and st.species["electrons"].count == 200
    assert sorted(st.fields) == ["B", "E", "rho"]
    e, b, rho = st.fields["E"], st.fields["B"], st.fields["rho"]
    for f in (e, b, rho):
        assert f.shape == (7, 9, 12) and f.origin == (-1.0, 0.0, 2.0) and f.spacing == (0.1, 0.25, 0.5)
    assert e.components == ("x", "y", "z") and e.centering == "node" and e.array.dtype == np.float32
    assert b.centering == "cell" and rho.centering == "cell" and rho.components is None
    for k, c in enumerate("xyz"):
        np.testing.assert_array_equal(e.array[..., k], _zyx(data[("E", c)], order, labels))
        np.testing.assert_array_equal(b.array[..., k], _zyx(data[("B", c)], order, labels))
    np.testing.assert_array_equal(rho.array, _zyx(data[("rho", "")], order, labels))
    # the samples sit where openPMD puts them: gridGlobalOffset + (i + position) * gridSpacing
    np.testing.assert_allclose(b.axis(0), -1.0 + (np.arange(12) + 0.5) * 0.1)
    assert parse_openpmd_unit(e.unit) == (1.0, [1, 1, -3, -1, 0, 0, 0])
    assert parse_openpmd_unit(b.unit) == (2.0, [0, 1, -2, -1, 0, 0, 0])
    meta = e.attributes["openpmd"]
    assert meta["gridUnitSI"] == 1e-6 and meta["axisLabels"] == list(labels) and meta["dataOrder"] == order
    assert meta["timeOffset"] == {"value": 0.25, "dtype": "float64"}
    assert meta["attributes"]["fieldSmoothing"] == {"value": "none", "dtype": "string"}


def _everything(path):
    """What openpmd-api sees of the meshes of a series, for exact comparisons."""
    s = io.Series(str(path), io.Access.read_only)
    out = {}
    for i in s.iterations:
        for name, m in s.iterations[i].meshes.items():
            d = {k: (m.get_attribute(k), m.attribute_dtypes[k]) for k in m.attributes
                 if k not in ("position", "unitSI")}
            for cn, rc in m.items():
                d[cn] = {"shape": list(rc.shape), "dtype": rc.dtype, "position": list(rc.position),
                         "unitSI": rc.unit_SI, "constant": rc.constant}
                d[cn]["data"] = rc.get_attribute("value") if rc.constant else rc.load_chunk()
            out[(i, name)] = d
    s.flush()
    s.close()
    return out


def _assert_same(a, b, where=""):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{where}: {sorted(a)} != {sorted(b)}"
        for k in a:
            _assert_same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.mark.parametrize("staggered", [False, True], ids=["collocated", "staggered"])
@pytest.mark.parametrize("order, labels", ORDERS)
def test_round_trip_is_exact_and_valid(tmp_path, order, labels, staggered):
    src, out = tmp_path / "w.h5", tmp_path / "copy_%T.h5"
    warpx_like(src, order, labels, staggered=staggered)
    op.write(str(out), op.read(str(src)))
    copy = tmp_path / "copy_10.h5"
    _assert_same(_everything(src), _everything(copy))   # values, dims, dtypes, every attribute and its type
    errors, warnings_, text = _validate(copy)
    assert errors == 0 and warnings_ == 0, text


def test_staggered_components_are_fields_of_their_own(tmp_path):
    path = tmp_path / "yee.h5"
    data = warpx_like(path, "C", "zyx", staggered=True)
    (st,) = op.read(str(path))
    assert sorted(st.fields) == ["B", "E_x", "E_y", "E_z", "rho"]
    ex, ez = st.fields["E_x"], st.fields["E_z"]
    assert ex.components is None and ex.centering == "node"
    assert ex.origin == (-1.0 + 0.5 * 0.1, 0.0, 2.0) and ez.origin == (-1.0, 0.0, 2.0 + 0.5 * 0.5)
    np.testing.assert_array_equal(ez.array, data[("E", "z")])
    assert ex.attributes["openpmd"]["record"] == "E" and ex.attributes["openpmd"]["component"] == "x"


def test_lower_dimensional_meshes(tmp_path):
    """WarpX 2-D (x, z plane, dataOrder F), a 2-D (y, x) and a 1-D mesh."""
    path = tmp_path / "low.h5"
    rng = np.random.default_rng(3)
    data = {}
    s = io.Series(str(path), io.Access.create)
    it = s.iterations[0]
    _mesh(it, "Exz", "xz", "F", E_DIM, {c: [0.0, 0.0] for c in "xyz"}, np.float64, rng, data)
    _mesh(it, "nyx", "yx", "C", RHO_DIM, {"": [0.5, 0.5]}, np.float32, rng, data, scalar=True)
    _mesh(it, "line", "x", "C", RHO_DIM, {"": [0.0]}, np.int32, rng, data, scalar=True)
    it.close()
    s.close()
    (st,) = op.read(str(path))
    exz, nyx, line = st.fields["Exz"], st.fields["nyx"], st.fields["line"]
    assert exz.ndim == 3 and exz.shape == (7, 1, 12)        # x and z: a 3-D field with one sample along y
    assert exz.origin == (-1.0, 0.0, 2.0) and exz.spacing == (0.1, 1.0, 0.5)
    np.testing.assert_array_equal(exz.array[:, 0, :, 2], data[("Exz", "z")])
    assert nyx.ndim == 2 and nyx.shape == (9, 12) and nyx.centering == "cell" and nyx.spacing == (0.1, 0.25)
    np.testing.assert_array_equal(nyx.array, data[("nyx", "")])
    assert line.ndim == 1 and line.array.dtype == np.int32
    out = tmp_path / "low_copy.h5"
    op.write(str(out), op.read(str(path)))
    _assert_same(_everything(path), _everything(out))
    assert _validate(out)[0] == 0


@SETTINGS
@given(f=fields(uniform_only=True))
def test_random_fields_round_trip(tmp_path_factory, f):
    path = tmp_path_factory.mktemp("opf") / "r.h5"
    op.write(str(path), [Step(3, 1.0, {}, {}, {"f": f})])
    (st,) = op.read(str(path))
    (back,) = st.fields.values()
    if not f.unit:   # openPMD gives every record a unit: no unit comes back as unitSI 1, dimensionless
        assert back.unit == openpmd_unit(1.0, [0] * 7)
        back.unit = ""
    assert_same_field(f, back, attributes=False)
    assert set(back.attributes) == {"openpmd"}
    again = path.with_name("again.h5")                       # and once more, through the stored layout
    op.write(str(again), op.read(str(path)))
    assert_same_field(next(iter(op.read(str(path)))).fields["f"], next(iter(op.read(str(again)))).fields["f"])


def test_motes_fields_export_is_valid_openpmd(tmp_path):
    rng = np.random.default_rng(5)
    e = Field(rng.standard_normal((4, 5, 6, 3)), origin=(0.0, 1.0, 2.0), spacing=(0.5, 0.5, 1.0),
              components=("x", "y", "z"), unit=openpmd_unit(1.0, [1, 1, -3, -1, 0, 0, 0]),
              attributes={"solver": "PSATD", "passes": [1, 2]})
    n = Field(rng.random((4, 5, 6)).astype(np.float32), origin=(0.0, 1.0, 2.0), spacing=(0.5, 0.5, 1.0),
              centering="cell", unit="cm^-3")
    cols = {a: rng.random(10) for a in "xyz"}
    sp = Species("e", [(k, v.dtype) for k, v in cols.items()], 10, chunked_arrays(cols, 10, 4))
    path = tmp_path / "m_%T.h5"
    op.write(str(path), [Step(0, 0.0, {}, {"e": sp}, {"E": e, "n": n}), Step(1, 1.0, {}, {}, {"n": n})])
    for i in (0, 1):
        errors, warnings_, text = _validate(tmp_path / f"m_{i}.h5")
        assert errors == 0 and warnings_ == 0, text
    s = io.Series(str(path), io.Access.read_only)
    m = s.iterations[0].meshes["E"]
    assert m.axis_labels == ["z", "y", "x"] and m.data_order == "C" and m.grid_spacing == [1.0, 0.5, 0.5]
    assert m.grid_global_offset == [2.0, 1.0, 0.0] and m["y"].position == [0.0, 0.0, 0.0]
    assert m.unit_dimension == [1, 1, -3, -1, 0, 0, 0] and m["x"].shape == [4, 5, 6]
    nm = s.iterations[1].meshes["n"]
    assert nm.position == [0.5, 0.5, 0.5] and nm.get_attribute("motesUnit") == "cm^-3"
    s.close()
    (first, second) = op.read(str(path))
    back = first.fields["E"]
    assert_same_field(e, back, attributes=False)
    assert back.attributes["solver"] == "PSATD" and back.attributes["passes"] == [1, 2]
    assert second.fields["n"].unit == "cm^-3" and list(second.species) == []


def test_h5block_to_openpmd_with_convert(tmp_path):
    """motes.convert.convert carries fields from one format to another."""
    rho = Field(np.arange(60.0).reshape(3, 4, 5), origin=(1.0, 2.0, 3.0), spacing=(0.5, 0.25, 2.0), centering="cell")
    h5part.write(tmp_path / "f.h5part", [Step(7, 0.5, {}, {}, {"rho": rho})])
    convert(tmp_path / "f.h5part", tmp_path / "f.h5", dst_format="openpmd")
    assert _validate(tmp_path / "f.h5")[0] == 0
    (st,) = op.read(str(tmp_path / "f.h5"))
    back = st.fields["rho"]
    assert st.index == 7 and back.unit == openpmd_unit(1.0, [0] * 7)
    back.unit = ""
    assert_same_field(rho, back, attributes=False)


def test_constant_mesh_component(tmp_path):
    path = tmp_path / "c.h5"
    s = io.Series(str(path), io.Access.create)
    m = s.iterations[0].meshes["B"]
    m.axis_labels, m.grid_spacing, m.grid_global_offset = ["z", "y", "x"], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]
    for c, v in (("x", 0.0), ("y", 0.0), ("z", 3.5)):
        rc = m[c]
        rc.reset_dataset(io.Dataset(np.dtype("float64"), [2, 3, 4]))
        rc.position = [0.0, 0.0, 0.0]
        rc.make_constant(v)
    s.iterations[0].close()
    s.close()
    (st,) = op.read(str(path))
    b = st.fields["B"]
    np.testing.assert_array_equal(b.array[..., 2], np.full((2, 3, 4), 3.5))
    out = tmp_path / "c2.h5"
    op.write(str(out), op.read(str(path)))
    _assert_same(_everything(path), _everything(out))        # written back as constants


@pytest.mark.parametrize("geometry,labels,why", [
    ("cylindrical", ["r", "z"], r"geometry 'cylindrical' is neither cartesian nor thetaMode"),
    ("thetaMode", ["r", "x"], r"a thetaMode mesh's axisLabels must be r and z, got \['r', 'x'\]")])
def test_meshes_motes_cannot_hold_are_skipped_with_a_warning(tmp_path, geometry, labels, why):
    path = tmp_path / "other.h5"
    s = io.Series(str(path), io.Access.create)
    it = s.iterations[0]
    m = it.meshes["Er"]
    m.geometry = getattr(io.Geometry, geometry)
    m.geometry_parameters = "m=1;imag=+"
    m.axis_labels, m.grid_spacing, m.grid_global_offset = labels, [1.0, 1.0], [0.0, 0.0]
    rc = m[SCALAR]
    rc.reset_dataset(io.Dataset(np.dtype("float64"), [3, 4, 5]))
    rc.position = [0.0, 0.0]
    rc.store_chunk(np.zeros((3, 4, 5)))
    it.close()
    s.close()
    with pytest.warns(ConversionWarning, match=r"mesh 'Er': skipped: " + why):
        (st,) = op.read(str(path))
    assert dict(st.fields) == {}


def _damage(tmp_path, change):
    path = tmp_path / "bad.h5"
    warpx_like(path)
    with h5py.File(path, "r+") as f:
        change(f["data/10/meshes"])
    return path


@pytest.mark.parametrize("change, needle", [
    (lambda g: g["rho"].attrs.__setitem__("axisLabels", np.array([b"x"])),
     "mesh 'rho': axisLabels has 1 values (['x']) but the mesh is 3-D (shape [7, 9, 12])"),
    (lambda g: g["E"].attrs.__setitem__("gridSpacing", np.array([1.0, 1.0])),
     "mesh 'E': gridSpacing has 2 values ([1.0, 1.0]) but the mesh is 3-D"),
    (lambda g: g["B/y"].attrs.__setitem__("position", np.array([0.5, 0.5])),
     "mesh 'B', component 'y': position has 2 values"),
    (lambda g: g["E"].attrs.__setitem__("dataOrder", np.bytes_(b"X")), "mesh 'E': dataOrder must be 'C' or 'F'"),
    (lambda g: g["E"].attrs.__setitem__("gridSpacing", np.array([1.0, -1.0, 1.0])),
     "mesh 'E': spacing must be positive"),
    (lambda g: (g["E"].__delitem__("z"), g["E"].create_dataset("z", data=np.zeros((7, 9)), dtype=np.float32),
                g["E/z"].attrs.__setitem__("position", np.zeros(3)), g["E/z"].attrs.__setitem__("unitSI", 1.0)),
     "mesh 'E': components have different numbers of dims"),
])
def test_damaged_meshes_are_format_errors_naming_the_place(tmp_path, change, needle):
    path = _damage(tmp_path, change)
    with pytest.raises(motes.FormatError, match=re.escape(f"{path}: iteration 10, ") + ".*" + re.escape(needle)):
        list(op.read(str(path)))


def test_write_errors(tmp_path):
    rect = Field(np.zeros((2, 3)), coords=([0.0, 1.0, 2.0], [0.0, 1.0]))
    with pytest.raises(motes.UsageError, match="field 'r': is on a rectilinear grid"):
        op.write(str(tmp_path / "a.h5"), [Step(0, 0.0, {}, {}, {"r": rect})])
    part = Field(np.zeros((2, 3)), attributes={"openpmd": {"record": "E", "component": "x"}})
    with pytest.raises(motes.UsageError, match="field 'E_x': mesh 'E' is already given by field 'E'"):
        op.write(str(tmp_path / "b.h5"), [Step(0, 0.0, {}, {}, {"E": Field(np.zeros((2, 3))), "E_x": part})])
    with pytest.raises(motes.UsageError, match="field attributes are not JSON-serialisable"):
        op.write(str(tmp_path / "c.h5"), [Step(0, 0.0, {}, {}, {"f": Field(np.zeros(3), attributes={"s": {1}})})])
