"""motes convert: the framework, motes as source and sink, and the flat table formats."""

import json
import os

import numpy as np
import pytest

from needs import missing, need

import motes
from motes import convert, synth
from motes.cli import main as cli


def same_rows(got, want, exact_dtypes=True):
    og, ow = np.argsort(got["id"]), np.argsort(want["id"])
    assert set(got) == set(want)
    for k in want:
        a, b = np.asarray(got[k])[og], np.asarray(want[k])[ow]
        if exact_dtypes:
            assert a.dtype == b.dtype, k
        assert np.array_equal(a.astype(b.dtype), b), k


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    d = synth.vpic(60_000, seed=3, with_id=True)
    path = tmp_path_factory.mktemp("conv") / "src.motes"
    w = motes.Writer(path, sync=False)
    w.write_step(0, {"electrons": d, "ions": {k: v[:1000] for k, v in d.items()}}, time=0.5,
                 attributes={"dt": 0.25, "code": "synth"}, units={"x": "m", "energy": "MeV"})
    w.write_step(7, {"electrons": {k: v[::2] for k, v in d.items()}}, time=1.75)
    return d, str(path)


@pytest.mark.parametrize("ext", ["parquet", "arrow", "npz", "csv"])
def test_table_round_trip(tmp_path, source, ext):
    d, src = source
    out = tmp_path / f"e.{ext}"
    convert.convert(src, out, step=[0], species=["electrons"], chunk_rows=5000)
    back = tmp_path / "back.motes"
    convert.convert(out, back, chunk_rows=7000)
    ds = motes.open(back)
    same_rows(dict(ds.query()), d, exact_dtypes=ext != "csv")  # CSV keeps values, not dtypes
    assert ds.source().part_count == 1  # small enough to gather: one file, the best layout
    if ext in ("parquet", "arrow", "npz"):
        assert ds.steps == [0] and ds.times == [0.5]
        attributes = ds.step().attributes
        assert attributes.pop("motes_source")["file"] == f"e.{ext}"  # the file it came from
        assert attributes == {"dt": 0.25, "code": "synth"}
        assert ds.species_names() == ["electrons"]
    if ext in ("parquet", "arrow"):
        units = {c.name: c.unit for c in ds.schema()}
        assert units["x"] == "m" and units["energy"] == "MeV"


def test_motes_to_motes_keeps_steps_species_and_queries(tmp_path, source):
    d, src = source
    dst = tmp_path / "copy.motes"
    convert.convert(src, dst, chunk_rows=10_000)
    a, b = motes.open(src), motes.open(dst)
    assert a.steps == b.steps and a.times == b.times
    for st in a.steps:
        for sp in a.species_names(st):
            same_rows(dict(b.query(step=st, species=sp)), dict(a.query(step=st, species=sp)))
            assert b.count("energy > 0.05", step=st, species=sp) == a.count("energy > 0.05", step=st, species=sp)


def test_spatial_blocks_are_compact_and_partition_the_rows(tmp_path, source):
    d, src = source
    steps = list(convert.read(src, chunk_rows=4000, where="energy > 0.01", species=["electrons"], steps=[0]))
    sp = steps[0].species["electrons"]
    patches = sp.attributes["motes_patches"]
    chunks = list(sp.chunks())
    assert len(chunks) == len(patches) > 10
    mask = d["energy"] > np.float32(0.01)
    ids = np.concatenate([c["id"] for c in chunks])
    assert len(ids) == len(np.unique(ids)) == mask.sum() == sp.count
    for c, p in zip(chunks, patches):
        assert len(c["id"]) == p["numParticles"] <= 4000
        for a, axis in enumerate("xyz"):
            assert (c[axis] >= p["offset"][a]).all() and (c[axis] <= p["offset"][a] + p["extent"][a]).all()


def test_query_result_and_preview_export(tmp_path, source):
    d, src = source
    convert.convert(src, tmp_path / "hot.npz", step=[0], species=["electrons"],
                    read_options={"where": "energy > 0.05", "box": (50, 0, 0, 200, 100, 50), "columns": ["id", "x", "y", "z", "energy"]})
    z = np.load(tmp_path / "hot.npz")
    m = (d["energy"] > np.float32(0.05)) & (d["x"] >= 50)
    assert sorted(z["id"]) == sorted(d["id"][m])
    assert set(z.files) == {"id", "x", "y", "z", "energy", "__motes__"}
    convert.convert(src, tmp_path / "prev.parquet", step=[0], species=["electrons"], read_options={"quality": 0.5})
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "prev.parquet").num_rows == motes.open(src).count(quality=0.5, step=0,
                                                                                      species="electrons")


def test_errors_name_the_problem_and_leave_nothing(tmp_path, source):
    d, src = source
    with pytest.raises(motes.UsageError, match="one species of one step"):
        convert.convert(src, tmp_path / "all.parquet")
    assert not os.path.exists(tmp_path / "all.parquet")
    assert [p for p in os.listdir(tmp_path) if p.startswith(".motes-convert")] == []
    with pytest.raises(motes.UsageError, match=r"src.motes: species .electrons.: missing position column\(s\) x, y, z"):
        convert.convert(src, tmp_path / "bad.motes", read_options={"columns": ["id", "energy"]})
    assert not os.path.exists(tmp_path / "bad.motes")
    with pytest.raises(motes.UsageError, match="cannot tell the format"):
        convert.convert(src, tmp_path / "out.xyz")
    with pytest.raises(motes.UsageError, match="choose with dst_format='openpmd' or dst_format='h5part'"):
        convert.convert(src, tmp_path / "out.h5")
    with pytest.raises(FileNotFoundError):
        convert.convert(tmp_path / "missing.parquet", tmp_path / "m.motes")
    (tmp_path / "exists.parquet").write_bytes(b"old")
    with pytest.raises(motes.UsageError, match="exists"):
        convert.convert(src, tmp_path / "exists.parquet", step=[7])
    assert (tmp_path / "exists.parquet").read_bytes() == b"old"
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(motes.FormatError, match="junk.parquet"):
        convert.convert(tmp_path / "junk.parquet", tmp_path / "j.motes")
    with pytest.raises(motes.UsageError, match="no step 3"):
        convert.convert(src, tmp_path / "s.parquet", step=[3])
    # Nulls: NaN in a float column (refused in a position), refused in an integer column;
    # strings are refused with the column named.
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1.0, None], "y": [0.0, 1.0], "z": [0.0, 1.0]}), tmp_path / "nulls.parquet")
    with pytest.raises(motes.UsageError, match="position column 'x' has a NaN or infinite value at row 1"):
        convert.convert(tmp_path / "nulls.parquet", tmp_path / "n.motes")
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [0.0, 1.0], "z": [0.0, 1.0], "id": [1, None]}),
                   tmp_path / "inulls.parquet")
    with pytest.raises(motes.UsageError, match=r"column 'id' \(int64\) has 1 missing values; motes has no nulls"):
        convert.convert(tmp_path / "inulls.parquet", tmp_path / "n.motes")
    assert not os.path.exists(tmp_path / "n.motes")
    pq.write_table(pa.table({"x": [1.0], "y": [0.0], "z": [0.0], "name": ["a"]}), tmp_path / "str.parquet")
    with pytest.raises(motes.UsageError, match="'name'"):
        convert.convert(tmp_path / "str.parquet", tmp_path / "s.motes")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".motes")]


def test_cli_convert(tmp_path, source, capsys):
    d, src = source
    dst = tmp_path / "hot.arrow"
    assert cli(["convert", src, str(dst), "--step", "0", "--species", "electrons", "--where", "energy > 0.05",
                "--columns", "id,x,y,z,energy", "--no-progress"]) == 0
    import pyarrow as pa

    t = pa.ipc.open_file(dst).read_all()
    assert t.num_rows == int((d["energy"] > np.float32(0.05)).sum())
    assert json.loads(t.schema.metadata[b"motes"])["species"] == "electrons"
    assert cli(["convert", src, str(dst), "--step", "7", "--no-progress"]) == 2
    assert "exists" in capsys.readouterr().err
    assert cli(["convert", str(dst), str(tmp_path / "x.motes"), "--where", "x > 1"]) == 2
    assert "select from a motes dataset" in capsys.readouterr().err


def test_convert_keeps_the_steps_queries_name(tmp_path, source, capsys):
    """step=/steps= (CLI --step/--steps) go through motes.steps.resolve, against the steps of a
    motes source and of any other source, as queries take them."""
    d, src = source
    steps = motes.open(src).steps  # [0, 7]
    convert.convert(src, tmp_path / "s.motes", steps="5:", species=["electrons"])
    assert motes.open(tmp_path / "s.motes").steps == [k for k in steps if k >= 5]
    convert.convert(src, tmp_path / "i.motes", steps="all", species=["ions"])  # 'all': the steps holding ions
    assert motes.open(tmp_path / "i.motes").steps == [0]
    h5 = tmp_path / "all.h5part"
    convert.convert(src, h5, species=["electrons"])
    assert cli(["convert", str(h5), str(tmp_path / "h.motes"), "--steps", "0:7", "--no-progress"]) == 0
    assert motes.open(tmp_path / "h.motes").steps == [0]
    assert motes.open(tmp_path / "h.motes").count(species="electrons") == len(d["x"])
    assert cli(["convert", str(h5), str(tmp_path / "h2.motes"), "--steps", "0,3", "--no-progress"]) == 2
    assert "no step 3 (steps: 0, 7)" in capsys.readouterr().err
    assert not (tmp_path / "h2.motes").exists()
    assert cli(["convert", src, str(tmp_path / "x.parquet"), "--step", "0", "--step", "7"]) == 2
    assert "--step is given once; several steps: --steps" in capsys.readouterr().err
    assert cli(["convert", src, str(tmp_path / "x.parquet"), "--step", "0", "--steps", "all"]) == 2
    assert "either --step or --steps" in capsys.readouterr().err  # the command line's spelling
    convert.convert(src, tmp_path / "one.parquet", step=7)  # one index, as queries take step=
    assert motes.open(tmp_path / "s.motes").count() == need("pyarrow.parquet").read_metadata(
        tmp_path / "one.parquet").num_rows


def test_h5part_round_trip_through_the_registry(tmp_path, source):
    d, src = source
    convert.convert(src, tmp_path / "e.h5part", species=["electrons"], chunk_rows=8000)
    import h5py

    with h5py.File(tmp_path / "e.h5part", "r") as f:  # the layout ParaView's H5Part reader expects
        assert sorted(f.keys()) == ["Step#0", "Step#1"]
        assert f["Step#0"].attrs["TimeValue"] == 0.5 and f["Step#1"].attrs["TimeValue"] == 1.75
        assert f["Step#0/x"].shape == (60_000,)
    back = tmp_path / "back.motes"
    assert cli(["convert", str(tmp_path / "e.h5part"), str(back), "--no-progress"]) == 0
    ds = motes.open(back)
    assert ds.steps == [0, 7] and ds.times == [0.5, 1.75]
    same_rows(dict(ds.query(step=0)), d)
    same_rows(dict(ds.query(step=7)), {k: v[::2] for k, v in d.items()})
    assert {c.name: c.unit for c in ds.schema(0)}["energy"] == "MeV"


def test_vtkhdf_preview_opens_in_vtk(tmp_path, source):
    d, src = source
    out = tmp_path / "preview.vtkhdf"
    convert.convert(src, out, species=["electrons"], read_options={"quality": 0.6})
    vtk_hdf = need("vtkmodules.vtkIOHDF")  # no rendering libraries needed
    r = vtk_hdf.vtkHDFReader()
    r.SetFileName(str(out))
    r.Update()
    assert r.GetNumberOfSteps() == 2
    ds = motes.open(src)
    assert r.GetOutput().GetNumberOfPoints() == ds.count(quality=0.6, step=0, species="electrons")
    assert r.GetOutput().GetPointData().GetArray("energy") is not None


def test_big_imports_are_sorted_into_spatial_parts(tmp_path, source):
    d, src = source
    convert.convert(src, tmp_path / "e.parquet", step=[0], species=["electrons"], chunk_rows=5000)
    back = tmp_path / "back.motes"
    # A memory limit far below the data (60k rows x 36 bytes) forces the external spatial sort.
    convert.convert(tmp_path / "e.parquet", back, chunk_rows=5000, write_options={"memory_limit": 200_000})
    ds = motes.open(back)
    src_ = ds.source()
    assert src_.part_count >= 20
    same_rows(dict(ds.query()), d)
    # The parts are spatially disjoint k-d cells: a small box opens few of them.
    sel = ds.select(box=(90, 45, 0, 100, 55, 50))
    assert sel.counters["parts_pruned"] >= src_.part_count // 2
    mask = (d["x"] >= 90) & (d["x"] <= 100) & (d["y"] >= 45) & (d["y"] <= 55)
    assert sel.size == int(mask.sum())
    assert not any(p.endswith(".spill") for p in os.listdir(tmp_path))


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_DTYPES = ["f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]


@settings(max_examples=int(os.environ.get("MOTES_HYPOTHESIS_EXAMPLES", 25)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 3000), extra=st.lists(st.sampled_from(_DTYPES), max_size=4),
       pos=st.sampled_from(["f4", "f8"]), fmt=st.sampled_from(["parquet", "arrow", "npz", "h5part", "openpmd"]),
       chunk=st.integers(1, 1500), seed=st.integers(0, 2**31 - 1))
def test_random_schemas_round_trip_exactly(tmp_path_factory, n, extra, pos, fmt, chunk, seed):
    rng = np.random.default_rng(seed)
    cols = {a: rng.uniform(-1e3, 1e3, n).astype(pos) for a in "xyz"}
    for i, dt in enumerate(extra):
        info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
        cols[f"c{i}"] = (rng.integers(info.min, info.max, n, dtype=dt, endpoint=True) if info
                         else rng.standard_normal(n).astype(dt))
    cols["id"] = np.arange(n, dtype=np.uint64)
    tmp = tmp_path_factory.mktemp("rt")
    motes.write(tmp / "a.motes", cols, time=0.25, sync=False)
    middle = tmp / ("t.h5" if fmt == "openpmd" else f"t.{fmt}")
    convert.convert(tmp / "a.motes", middle, dst_format=fmt, chunk_rows=chunk)
    convert.convert(middle, tmp / "b.motes", chunk_rows=chunk)
    got = dict(motes.open(tmp / "b.motes").query())
    if n:
        same_rows(got, cols)
    else:
        assert all(len(v) == 0 for v in got.values()) and set(got) == set(cols)
    assert motes.open(tmp / "b.motes").times == [0.25]


EMPTY_MIDDLES = {"parquet": "t.parquet", "arrow": "t.arrow", "npz": "t.npz", "h5part": "t.h5part",
                 "openpmd": "t.h5", "openpmd-adios2": "t_%T.bp", "csv": "t.csv"}


@pytest.mark.parametrize("fmt", sorted(EMPTY_MIDDLES))
def test_empty_species_round_trips_every_column(tmp_path, fmt):
    """0 rows through every format that motes reads back: the same columns with the same
    dtypes and units, no rows. (Found by test_random_schemas_round_trip_exactly: openpmd-api
    stores an empty dataset as a constant of shape [0], and the import dropped it.)"""
    if fmt.startswith("openpmd"):
        io = need("openpmd_api")
        if fmt == "openpmd-adios2" and not io.variants.get("adios2"):
            missing("openpmd-api was built without ADIOS2 (its pip wheels have it)")
    cols = {"x": np.zeros(0, "f4"), "y": np.zeros(0, "f4"), "z": np.zeros(0, "f4"), "id": np.zeros(0, "u8"),
            "w": np.zeros(0, "f8"), "q": np.zeros(0, "i2"), "momentum_x": np.zeros(0, "f4"),
            "momentum_y": np.zeros(0, "f4")}
    from motes.convert.base import openpmd_unit
    units = {**{a: openpmd_unit(1e-6, [1, 0, 0, 0, 0, 0, 0]) for a in "xyz"}, "w": "kg"}
    motes.write(tmp_path / "a.motes", cols, time=0.25, units=units, sync=False)
    middle = tmp_path / EMPTY_MIDDLES[fmt]
    convert.convert(tmp_path / "a.motes", middle, dst_format=fmt.split("-")[0])
    convert.convert(middle, tmp_path / "b.motes")
    ds = motes.open(tmp_path / "b.motes")
    if fmt == "csv":  # values only, and there are none: the columns come back as float64
        assert [(c.name, c.dtype) for c in ds.schema()] == [(k, np.float64) for k in cols]
        assert ds.count_total() == 0 and all(len(v) == 0 for v in ds.query().values())
        return
    assert {c.name: c.dtype for c in ds.schema()} == {k: v.dtype for k, v in cols.items()}
    assert {c.name: c.unit for c in ds.schema() if c.name in units} == units  # openPMD gives every column one
    got = ds.query()
    assert {k: (v.dtype, len(v)) for k, v in got.items()} == {k: (v.dtype, 0) for k, v in cols.items()}
    assert ds.times == [0.25] and ds.count_total() == 0
    if fmt == "openpmd":  # the file is valid openPMD, and a second round trip changes nothing
        import subprocess
        import sys
        checker = os.path.join(os.path.dirname(sys.executable), "openPMD_check_h5")
        if os.path.exists(checker):
            r = subprocess.run([checker, "-i", str(middle)], capture_output=True, text=True)
            assert r.returncode == 0 and "0 Errors" in r.stdout, r.stdout + r.stderr
        convert.convert(tmp_path / "b.motes", tmp_path / "t2.h5", dst_format="openpmd")
        convert.convert(tmp_path / "t2.h5", tmp_path / "c.motes")
        assert motes.open(tmp_path / "c.motes").schema() == ds.schema()


def test_empty_species_to_vtkhdf(tmp_path):
    """VTKHDF (write-only): 0 rows make a valid file of 0 points with every column."""
    h5py = need("h5py")
    cols = {"x": np.zeros(0, "f4"), "y": np.zeros(0, "f4"), "z": np.zeros(0, "f4"), "id": np.zeros(0, "u8")}
    motes.write(tmp_path / "a.motes", cols, sync=False)
    convert.convert(tmp_path / "a.motes", tmp_path / "t.vtkhdf")
    with h5py.File(tmp_path / "t.vtkhdf") as f:
        assert int(np.sum(f["VTKHDF/NumberOfPoints"][()])) == 0
        assert f["VTKHDF/PointData/id"].shape == (0,) and f["VTKHDF/PointData/id"].dtype == np.uint64
