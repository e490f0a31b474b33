"""HDF5-family conversions: H5Part read/write, generic HDF5 import, VTKHDF PolyData output."""


import numpy as np
import pytest

from needs import need

import motes

h5py = need("h5py")

from motes.convert import h5part, hdf5, vtkhdf  # noqa: E402
from motes.convert.base import Species, Step, chunked_arrays  # noqa: E402


def _columns(n, seed):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.random(n, dtype=np.float32),
        "y": rng.random(n, dtype=np.float32),
        "z": rng.random(n, dtype=np.float32),
        "px": rng.standard_normal(n),
        "id": np.arange(seed * 1000, seed * 1000 + n, dtype=np.int32),
    }


STEP_DATA = [(0, 0.25, _columns(50, 1)), (1, 0.75, _columns(70, 2))]


@pytest.fixture
def h5part_file(tmp_path):
    """An H5Part file as other tools write it: Step#N groups, TimeValue, 1-D datasets, a unit."""
    path = tmp_path / "in.h5part"
    with h5py.File(path, "w") as f:
        for n, t, cols in STEP_DATA:
            g = f.create_group(f"Step#{n}")
            g.attrs["TimeValue"] = np.float64(t)
            g.attrs["code"] = "pic3d"
            g.attrs["dt"] = 0.5
            g.attrs["grid"] = np.array([64, 64, 32], dtype=np.int64)
            for name, a in cols.items():
                g.create_dataset(name, data=a)
            g["px"].attrs["unit"] = "kg*m/s"
    return path


def _collect(steps):
    """Steps -> list of (index, time, attributes, {species: (columns, units, attributes, data)})."""
    out = []
    for st in steps:
        species = {}
        for name, sp in st.species.items():
            parts = list(sp.chunks())
            data = {c: (np.concatenate([p[c] for p in parts]) if parts else np.empty(0, dt))
                    for c, dt in sp.columns}
            for c, dt in sp.columns:
                assert data[c].dtype == dt, (c, data[c].dtype, dt)
                assert len(data[c]) == sp.count
            species[name] = (list(sp.columns), dict(sp.units), dict(sp.attributes), data)
        out.append((st.index, st.time, dict(st.attributes), species))
    return out


def _assert_same(a, b):
    assert len(a) == len(b)
    for (ia, ta, aa, sa), (ib, tb, ab, sb) in zip(a, b):
        assert ia == ib and ta == tb and aa == ab
        assert sa.keys() == sb.keys()
        for name in sa:
            cols_a, units_a, attrs_a, data_a = sa[name]
            cols_b, units_b, attrs_b, data_b = sb[name]
            assert cols_a == cols_b and units_a == units_b and attrs_a == attrs_b
            for c in data_a:
                assert data_a[c].dtype == data_b[c].dtype
                np.testing.assert_array_equal(data_a[c], data_b[c])


def _step(index, time, cols, *, species="electrons", chunk_rows=16, units=None, attributes=None, sp_attrs=None):
    n = len(next(iter(cols.values()))) if cols else 0
    sp = Species(species, [(k, v.dtype) for k, v in cols.items()], n, chunked_arrays(cols, n, chunk_rows),
                 units=units or {}, attributes=sp_attrs or {})
    return Step(index, time, attributes or {}, {species: sp})


# ---------------------------------------------------------------------------------------- H5Part


def test_h5part_read_foreign_file(h5part_file):
    steps = _collect(h5part.read(h5part_file, chunk_rows=16))
    assert [s[0] for s in steps] == [0, 1]
    assert [s[1] for s in steps] == [0.25, 0.75]
    index, time, attrs, species = steps[1]
    assert attrs == {"code": "pic3d", "dt": 0.5, "grid": [64, 64, 32]}
    assert list(species) == ["particles"]
    columns, units, sp_attrs, data = species["particles"]
    assert dict(columns) == {"x": np.float32, "y": np.float32, "z": np.float32, "px": np.float64, "id": np.int32}
    assert units == {"px": "kg*m/s"}
    for c, a in STEP_DATA[1][2].items():
        np.testing.assert_array_equal(data[c], a)


def test_h5part_round_trip_exact(h5part_file, tmp_path):
    first = _collect(h5part.read(h5part_file))
    out = tmp_path / "out.h5part"
    h5part.write(out, h5part.read(h5part_file, chunk_rows=13))
    _assert_same(first, _collect(h5part.read(out)))
    again = tmp_path / "again.h5part"
    h5part.write(again, h5part.read(out, chunk_rows=7))
    _assert_same(first, _collect(h5part.read(again)))


def test_h5part_round_trip_metadata(tmp_path):
    attrs = {"s": "text", "i": 3, "f": 2.5, "ints": [1, 2], "floats": [0.5, 1.5], "flag": True, "none": None,
             "nested": {"a": [1, {"b": 2}]}, "mixed": [1, "a"], "empty": [], "big": 1 << 70}
    cols = _columns(40, 3)
    steps = [_step(10, 1.0, cols, units={"px": "m/s", "x": "m"}, attributes=attrs, sp_attrs={"charge": -1.0}),
             _step(20, 2.0, _columns(5, 4))]
    path = tmp_path / "meta.h5part"
    h5part.write(path, steps)
    back = _collect(h5part.read(path))
    _assert_same(_collect(steps), back)
    assert back[0][2] == attrs and back[0][3]["electrons"][2] == {"charge": -1.0}
    # steps are numbered from 0 in the file, the motes index is kept
    with h5py.File(path) as f:
        assert sorted(f) == ["Step#0", "Step#1"]
        assert f["Step#1"].attrs["motes_step"] == 20
    assert [s.index for s in h5part.read(path, steps=[20])] == [20]
    with pytest.raises(motes.UsageError, match="no step 5"):
        h5part.read(path, steps=5)


def test_h5part_written_layout(tmp_path):
    path = tmp_path / "layout.h5part"
    cols = _columns(30, 5)
    h5part.write(path, [_step(7, 0.5, cols, units={"px": "kg*m/s"}), _step(8, 1.5, cols)])
    with h5py.File(path, "r") as f:
        assert set(f) == {"Step#0", "Step#1"}
        assert f.attrs["motes_species"] == "electrons"
        g = f["Step#0"]
        assert g.attrs["TimeValue"] == 0.5 and g.attrs["TimeValue"].dtype == np.float64
        assert g.attrs["motes_step"] == 7
        assert set(g) == {"x", "y", "z", "px", "id"}
        for name, a in cols.items():
            assert g[name].shape == (30,) and g[name].dtype == a.dtype
            np.testing.assert_array_equal(g[name][()], a)
        assert g["px"].attrs["unit"] == "kg*m/s"
        assert f["Step#1"].attrs["TimeValue"] == 1.5


def test_h5part_chunking(tmp_path):
    n = 10_000
    cols = _columns(n, 6)
    path = tmp_path / "big.h5part"
    h5part.write(path, [_step(0, 0.0, cols, chunk_rows=999)])
    (st,) = list(h5part.read(path, chunk_rows=1000))
    sp = st.species["electrons"]
    assert sp.count == n
    parts = list(sp.chunks())
    assert len(parts) >= 10 and all(len(p["x"]) <= 1000 for p in parts)
    for c, a in cols.items():
        np.testing.assert_array_equal(np.concatenate([p[c] for p in parts]), a)
    assert len(list(sp.chunks())) == len(parts)  # re-iterable


def test_h5part_species(tmp_path):
    a, b = _columns(10, 7), _columns(12, 8)
    two = Step(0, 0.0, {}, {"electrons": _step(0, 0, a).species["electrons"],
                            "ions": _step(0, 0, b, species="ions").species["ions"]})
    path = tmp_path / "sp.h5part"
    with pytest.raises(motes.UsageError, match="electrons, ions.*species="):
        h5part.write(path, [two])
    assert not path.exists()
    h5part.write(path, [two], species="ions")
    (st,) = h5part.read(path)
    assert list(st.species) == ["ions"] and st.species["ions"].count == 12
    with pytest.raises(motes.UsageError, match="no species 'electrons'.*holds species 'ions'"):
        h5part.read(path, species="electrons")
    with pytest.raises(motes.UsageError, match="no species 'x'"):
        h5part.read(path, species=["ions", "x"])
    assert list(next(h5part.read(path, species=["ions"])).species) == ["ions"]
    # a file that names no species: the default name, or the one asked for
    unnamed = tmp_path / "unnamed.h5part"
    with h5py.File(unnamed, "w") as f:
        f.create_group("Step#0")["x"] = np.zeros(2)
    assert list(next(h5part.read(unnamed)).species) == ["particles"]
    assert list(next(h5part.read(unnamed, species="dust")).species) == ["dust"]


def test_h5part_bool_and_bigendian_columns(tmp_path):
    path = tmp_path / "types.h5part"
    with h5py.File(path, "w") as f:
        g = f.create_group("Step#0")
        g.create_dataset("x", data=np.arange(5, dtype=">f8"))
        g.create_dataset("alive", data=np.array([True, False, True, True, False]))
    (st,) = h5part.read(path)
    sp = st.species["particles"]
    assert dict(sp.columns) == {"x": np.float64, "alive": np.uint8}
    (chunk,) = list(sp.chunks())
    assert chunk["x"].dtype == np.dtype("f8") and chunk["x"].dtype.isnative
    np.testing.assert_array_equal(chunk["alive"], [1, 0, 1, 1, 0])
    assert st.time == 0.0  # no TimeValue: the step index


def test_h5part_errors(tmp_path):
    missing = tmp_path / "missing.h5part"
    with pytest.raises(motes.NotFoundError, match="missing.h5part: no such file"):
        h5part.read(missing)
    text = tmp_path / "text.h5part"
    text.write_text("not hdf5")
    with pytest.raises(motes.FormatError, match="not an HDF5 file"):
        h5part.read(text)

    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f.create_dataset("x", data=np.zeros(3))
    with pytest.raises(motes.FormatError, match=r"plain\.h5.*not an H5Part file"):
        h5part.read(plain)

    unequal = tmp_path / "unequal.h5part"
    with h5py.File(unequal, "w") as f:
        g = f.create_group("Step#0")
        g["x"] = np.zeros(4)
        g["y"] = np.zeros(5)
    with pytest.raises(motes.FormatError, match=r"Step#0.*unequal lengths \(x: 4, y: 5\)"):
        h5part.read(unequal)

    twod = tmp_path / "twod.h5part"
    with h5py.File(twod, "w") as f:
        g = f.create_group("Step#0")
        g["x"] = np.zeros(4)
        g["pos"] = np.zeros((4, 3))
    with pytest.raises(motes.FormatError, match=r"Step#0.*'pos' is not 1-D \(shape \(4, 3\)\)"):
        h5part.read(twod)

    cplx = tmp_path / "complex.h5part"
    with h5py.File(cplx, "w") as f:
        g = f.create_group("Step#0")
        g["x"] = np.zeros(4)
        g["phase"] = np.zeros(4, dtype=np.complex64)
    with pytest.raises(motes.UsageError, match=r"Step#0.*'phase'.*unsupported dtype complex64"):
        h5part.read(cplx)

    strings = tmp_path / "strings.h5part"
    with h5py.File(strings, "w") as f:
        g = f.create_group("Step#0")
        g["x"] = np.zeros(2)
        g["name"] = np.array([b"ab", b"cd"])
    with pytest.raises(motes.UsageError, match=r"'name' holds strings"):
        h5part.read(strings)

    with pytest.raises(motes.UsageError, match="chunk_rows"):
        h5part.read(unequal, chunk_rows=0)


def test_h5part_write_errors(tmp_path):
    path = tmp_path / "bad.h5part"
    cols = {"x": np.zeros(3), "c": np.zeros(3, dtype=np.complex128)}
    with pytest.raises(motes.UsageError, match="'c' has unsupported dtype complex128"):
        h5part.write(path, [_step(0, 0.0, cols)])
    assert not path.exists()
    with pytest.raises(motes.UsageError, match="reserved"):
        h5part.write(path, [_step(0, 0.0, {"x": np.zeros(3)}, attributes={"TimeValue": 1.0})])
    with pytest.raises(motes.UsageError, match="no steps"):
        h5part.write(path, [])


# ------------------------------------------------------------------------------------ generic HDF5


@pytest.fixture
def generic_file(tmp_path):
    path = tmp_path / "sim.h5"
    rng = np.random.default_rng(9)
    with h5py.File(path, "w") as f:
        g = f.create_group("data/electrons")
        g.attrs["time"] = 3.5
        g["pos_x"] = rng.random(20)
        g["pos_y"] = rng.random(20)
        g["pos_z"] = rng.random(20)
        g["E"] = rng.random(20).astype(np.float32)
        g["E"].attrs["unit"] = "MeV"
        g["pos"] = rng.random((20, 3))
        g["label"] = np.array([b"a"] * 20)
        g["box"] = np.zeros((2, 2))
        h = f.create_group("short")
        h["a"] = np.zeros(3)
        h["b"] = np.zeros(4)
    return path


def test_hdf5_mapping(generic_file):
    mapping = {"x": "pos_x", "y": "pos_y", "z": "pos_z", "energy": "E"}
    (st,) = hdf5.read(generic_file, group="/data/electrons", columns=mapping, species="electrons",
                      time=3.5, step=12, chunk_rows=6)
    assert (st.index, st.time, st.attributes) == (12, 3.5, {"time": 3.5})
    sp = st.species["electrons"]
    assert sp.column_names() == ["x", "y", "z", "energy"] and sp.count == 20
    assert sp.units == {"energy": "MeV"}
    parts = list(sp.chunks())
    assert len(parts) == 4
    with h5py.File(generic_file) as f:
        g = f["data/electrons"]
        for col, ds in mapping.items():
            got = np.concatenate([p[col] for p in parts])
            assert got.dtype == g[ds].dtype
            np.testing.assert_array_equal(got, g[ds][()])
        pos = g["pos"][()]
    (st,) = hdf5.read(generic_file, group="data/electrons", columns={"x": "pos[0]", "z": "pos[2]"})
    (chunk,) = list(st.species["particles"].chunks())
    np.testing.assert_array_equal(chunk["x"], pos[:, 0])
    np.testing.assert_array_equal(chunk["z"], pos[:, 2])


def test_hdf5_auto_columns_and_position_split(generic_file):
    with pytest.warns(UserWarning, match=r"skipped.*box \(shape \(2, 2\)\).*label"):
        (st,) = hdf5.read(generic_file, group="/data/electrons")
    sp = st.species["particles"]
    assert sorted(sp.column_names()) == sorted(["E", "pos_x", "pos_y", "pos_z", "x", "y", "z"])
    (chunk,) = list(sp.chunks())
    with h5py.File(generic_file) as f:
        pos = f["data/electrons/pos"][()]
    for k, axis in enumerate("xyz"):
        np.testing.assert_array_equal(chunk[axis], pos[:, k])


def test_hdf5_errors(generic_file, tmp_path):
    with pytest.raises(motes.UsageError, match=r"sim\.h5: no group '/nope'"):
        hdf5.read(generic_file, group="/nope")
    with pytest.raises(motes.UsageError, match=r"sim\.h5:/short: datasets have unequal lengths \(a: 3, b: 4\)"):
        hdf5.read(generic_file, group="/short")
    with pytest.raises(motes.UsageError, match=r"/data/electrons: no dataset 'energy' \(mapped to column 'e'\)"):
        hdf5.read(generic_file, group="/data/electrons", columns={"e": "energy"})
    with pytest.raises(motes.UsageError, match=r"'pos'.*not 1-D.*pos\[k\]"):
        hdf5.read(generic_file, group="/data/electrons", columns={"x": "pos"})
    with pytest.raises(motes.UsageError, match=r"'label' .*holds strings"):
        hdf5.read(generic_file, group="/data/electrons", columns={"l": "label"})
    with pytest.raises(motes.UsageError, match="maps nothing"):
        hdf5.read(generic_file, group="/data/electrons", columns={})
    with pytest.raises(motes.UsageError, match="nothing to import"):
        hdf5.read(generic_file, group="/data")
    clash = tmp_path / "clash.h5"
    with h5py.File(clash, "w") as f:
        f["x"] = np.zeros(3)
        f["position"] = np.zeros((3, 3))
    with pytest.raises(motes.UsageError, match="x come from more than one dataset"):
        hdf5.read(clash)


# ------------------------------------------------------------------------------------------ VTKHDF


def _vtk_steps():
    return [_step(5, 0.5, _columns(40, 11), units={"px": "kg*m/s"}, chunk_rows=9),
            _step(6, 1.5, _columns(25, 12), chunk_rows=9),
            _step(7, 2.5, _columns(0, 13))]


def test_vtkhdf_structure(tmp_path):
    path = tmp_path / "p.vtkhdf"
    steps = _vtk_steps()
    vtkhdf.write(path, steps)
    counts = [40, 25, 0]
    offsets = [0, 40, 65]
    with h5py.File(path) as f:
        root = f["VTKHDF"]
        assert list(root.attrs["Version"]) == [2, 0]
        tid = root.attrs.get_id("Type").get_type()
        assert not tid.is_variable_str() and tid.get_cset() == h5py.h5t.CSET_ASCII
        assert root.attrs["Type"] == b"PolyData"
        np.testing.assert_array_equal(root["NumberOfPoints"][()], counts)
        assert root["Points"].shape == (65, 3) and root["Points"].dtype == np.float32
        assert root["Points"].maxshape == (None, 3)
        v = root["Vertices"]
        np.testing.assert_array_equal(v["NumberOfCells"][()], counts)
        np.testing.assert_array_equal(v["NumberOfConnectivityIds"][()], counts)
        np.testing.assert_array_equal(v["Offsets"][()], np.concatenate([np.arange(n + 1) for n in counts]))
        np.testing.assert_array_equal(v["Connectivity"][()], np.concatenate([np.arange(n) for n in counts]))
        for t in ("Lines", "Polygons", "Strips"):
            np.testing.assert_array_equal(root[t]["NumberOfCells"][()], [0, 0, 0])
            np.testing.assert_array_equal(root[t]["NumberOfConnectivityIds"][()], [0, 0, 0])
            np.testing.assert_array_equal(root[t]["Offsets"][()], [0, 0, 0])
            assert root[t]["Connectivity"].shape == (0,)
        assert set(root["PointData"]) == {"px", "id"}
        assert root["PointData/px"].attrs["unit"] == "kg*m/s"
        data = [_collect([s])[0][3]["electrons"][3] for s in steps]
        np.testing.assert_array_equal(root["PointData/id"][()], np.concatenate([d["id"] for d in data]))
        np.testing.assert_array_equal(root["Points"][:, 1], np.concatenate([d["y"] for d in data]))
        s = root["Steps"]
        assert s.attrs["NSteps"] == 3
        np.testing.assert_array_equal(s["Values"][()], [0.5, 1.5, 2.5])
        np.testing.assert_array_equal(s["PartOffsets"][()], [0, 1, 2])
        np.testing.assert_array_equal(s["NumberOfParts"][()], [1, 1, 1])
        np.testing.assert_array_equal(s["PointOffsets"][()], offsets)
        expected = np.zeros((3, 4), dtype=np.int64)
        expected[:, 0] = offsets
        np.testing.assert_array_equal(s["CellOffsets"][()], expected)
        np.testing.assert_array_equal(s["ConnectivityIdOffsets"][()], expected)
        for name in ("px", "id"):
            np.testing.assert_array_equal(s["PointDataOffsets"][name][()], offsets)
        np.testing.assert_array_equal(f["motes/step_index"][()], [5, 6, 7])


def test_vtkhdf_static_and_errors(tmp_path):
    path = tmp_path / "one.vtkhdf"
    vtkhdf.write(path, [_step(0, 0.0, {"x": np.arange(4.0), "y": np.ones(4), "m": np.ones(4, np.uint16)})])
    with h5py.File(path) as f:
        assert "Steps" not in f["VTKHDF"]
        assert f["VTKHDF/Points"].dtype == np.float64
        np.testing.assert_array_equal(f["VTKHDF/Points"][:, 2], 0)  # no z column: z = 0
    bad = tmp_path / "bad.vtkhdf"
    with pytest.raises(motes.UsageError, match="no column y"):
        vtkhdf.write(bad, [_step(0, 0.0, {"x": np.zeros(2)})])
    assert not bad.exists()
    with pytest.raises(motes.UsageError, match="differ from the first step"):
        vtkhdf.write(bad, [_step(0, 0.0, _columns(3, 1)), _step(1, 1.0, {"x": np.zeros(2), "y": np.zeros(2)})])
    with pytest.raises(motes.UsageError, match="'a.b'"):
        vtkhdf.write(bad, [_step(0, 0.0, {"x": np.zeros(2), "y": np.zeros(2), "a.b": np.zeros(2)})])
    two = Step(0, 0.0, {}, {"e": _step(0, 0, _columns(2, 1)).species["electrons"],
                            "i": _step(0, 0, _columns(2, 2)).species["electrons"]})
    with pytest.raises(motes.UsageError, match="species="):
        vtkhdf.write(bad, [two])


def test_vtkhdf_read_back_with_vtk(tmp_path):
    # Only the modules the checks need: no rendering libraries (X11, OpenGL) on a server.
    vtk_to_numpy = need("vtkmodules.util.numpy_support").vtk_to_numpy
    vtkStreamingDemandDrivenPipeline = need("vtkmodules.vtkCommonExecutionModel").vtkStreamingDemandDrivenPipeline
    vtkHDFReader = need("vtkmodules.vtkIOHDF").vtkHDFReader
    path = tmp_path / "p.vtkhdf"
    steps = _vtk_steps()
    vtkhdf.write(path, steps)
    data = [_collect([s])[0][3]["electrons"][3] for s in steps]
    reader = vtkHDFReader()
    reader.SetFileName(str(path))
    reader.UpdateInformation()
    assert reader.GetNumberOfSteps() == 3
    times = reader.GetOutputInformation(0).Get(vtkStreamingDemandDrivenPipeline.TIME_STEPS())
    assert list(times) == [0.5, 1.5, 2.5]
    for i, d in enumerate(data):
        reader.SetStep(i)
        reader.Update()
        out = reader.GetOutput()
        n = len(d["x"])
        assert out.GetNumberOfPoints() == n and out.GetNumberOfVerts() == n
        if n:
            pts = vtk_to_numpy(out.GetPoints().GetData())
            np.testing.assert_array_equal(pts, np.stack([d["x"], d["y"], d["z"]], axis=1))
            np.testing.assert_array_equal(vtk_to_numpy(out.GetPointData().GetArray("px")), d["px"])
            np.testing.assert_array_equal(vtk_to_numpy(out.GetPointData().GetArray("id")), d["id"])
            assert out.GetCell(n - 1).GetPointId(0) == n - 1

    static = tmp_path / "s.vtkhdf"
    vtkhdf.write(static, steps[:1])
    reader = vtkHDFReader()
    reader.SetFileName(str(static))
    reader.Update()
    assert reader.GetOutput().GetNumberOfPoints() == 40 and reader.GetOutput().GetNumberOfVerts() == 40
