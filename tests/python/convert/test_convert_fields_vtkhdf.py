"""VTKHDF ImageData export of grid fields (motes.convert.vtkhdf.image, vtkhdf.write(fields=)):
read back with VTK's vtkHDFReader, every value, the grid, point data vs cell data."""

import warnings

import numpy as np
import pytest
from hypothesis import given

from needs import need

import motes
from motes.field import Field

h5py = need("h5py")
need("vtkmodules.vtkIOHDF")

from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkIOHDF import vtkHDFReader  # noqa: E402

from field_util import SETTINGS, fields  # noqa: E402
from motes.convert import ConversionWarning, h5part, vtkhdf  # noqa: E402
from motes.convert.base import Species, Step, chunked_arrays  # noqa: E402

RNG = np.random.default_rng(8)
E = Field(RNG.standard_normal((7, 9, 12, 3)).astype(np.float32), origin=(1.0, 2.0, 3.0), spacing=(0.1, 0.2, 0.3),
          components=("x", "y", "z"), unit="V/m")
RHO = Field(RNG.standard_normal((6, 8, 11)), origin=(1.0, 2.0, 3.0), spacing=(0.1, 0.2, 0.3), centering="cell")


def _read(path, step=None):
    r = vtkHDFReader()
    r.SetFileName(str(path))
    r.UpdateInformation()
    if step is not None:
        r.SetStep(step)
    r.Update()
    return r, r.GetOutputDataObject(0)


def _values(data, name):
    a = data.GetArray(name)
    assert a is not None, name
    return vtk_to_numpy(a), a.GetNumberOfComponents()


def _check(image, name, f: Field):
    """The VTK array of field ``f``: point data for node-centred, cell data for cell-centred,
    x fastest, every value and the dtype as given."""
    cell = f.centering == "cell"
    data, other = (image.GetCellData(), image.GetPointData()) if cell else (image.GetPointData(), image.GetCellData())
    assert other.GetArray(name) is None
    values, ncomp = _values(data, name)
    assert ncomp == (len(f.components) if f.components else 1)
    assert values.dtype == f.array.dtype
    np.testing.assert_array_equal(values.reshape(f.array.shape), f.array)


def test_image_of_node_and_cell_fields(tmp_path):
    path = tmp_path / "e.vtkhdf"
    vtkhdf.write_image(path, {"E": E, "rho": RHO}, time=2.5)
    _, image = _read(path)
    assert image.IsA("vtkImageData")
    assert image.GetDimensions() == (12, 9, 7) and image.GetNumberOfCells() == 11 * 8 * 6
    assert image.GetOrigin() == (1.0, 2.0, 3.0) and image.GetSpacing() == (0.1, 0.2, 0.3)
    _check(image, "E", E)
    _check(image, "rho", RHO)
    # a cell's centre is where the cell-centred sample sits
    cell = image.GetCell(0)
    pts = np.array([cell.GetPoints().GetPoint(k) for k in range(cell.GetNumberOfPoints())])
    np.testing.assert_allclose(pts.mean(axis=0), [RHO.axis(k)[0] for k in range(3)], rtol=1e-12)
    with h5py.File(path) as f:
        r = f["VTKHDF"]
        assert r.attrs["Type"] == b"ImageData" and list(r.attrs["Version"]) == [2, 0]
        assert list(r.attrs["WholeExtent"]) == [0, 11, 0, 8, 0, 6]
        assert list(r.attrs["Direction"]) == [1, 0, 0, 0, 1, 0, 0, 0, 1]
        assert r["PointData/E"].shape == (7, 9, 12, 3) and r["CellData/rho"].shape == (6, 8, 11)
        assert r["PointData/E"].attrs["unit"] == "V/m" and "Steps" not in r
        assert list(f["motes/fields/E"].attrs["components"]) == ["x", "y", "z"] and f["motes/time"][0] == 2.5


@SETTINGS
@given(f=fields(uniform_only=True))
def test_random_fields_read_back_by_vtk(tmp_path_factory, f):
    path = tmp_path_factory.mktemp("vi") / "r.vtkhdf"
    vtkhdf.write_image(path, {"f": f})
    _, image = _read(path)
    extra = 1 if f.centering == "cell" else 0
    points = tuple(n + extra for n in f.dims) + (1,) * (3 - f.ndim)
    assert image.GetDimensions() == points
    assert image.GetOrigin() == tuple(f.origin) + (0.0,) * (3 - f.ndim)
    assert image.GetSpacing() == tuple(f.spacing) + (1.0,) * (3 - f.ndim)
    _check(image, "f", f)


def test_time_series(tmp_path):
    steps = []
    for i in range(3):
        e = Field(E.array + i, origin=E.origin, spacing=E.spacing, components=E.components)
        r = Field(RHO.array * i, origin=RHO.origin, spacing=RHO.spacing, centering="cell")
        steps.append(Step(10 * i, 0.5 * i, {"n": i}, {}, {"E": e, "rho": r}))
    path = tmp_path / "t.vtkhdf"
    vtkhdf.write(path, steps, fields=True)
    reader, _ = _read(path)
    assert reader.GetNumberOfSteps() == 3
    for i in range(3):
        _, image = _read(path, step=i)
        _check(image, "E", steps[i].fields["E"])
        _check(image, "rho", steps[i].fields["rho"])
    with h5py.File(path) as f:
        assert list(f["VTKHDF/Steps/Values"]) == [0.0, 0.5, 1.0]
        assert list(f["VTKHDF/Steps/PointDataOffsets/E"]) == [0, 1, 2]
        assert list(f["VTKHDF/Steps/CellDataOffsets/rho"]) == [0, 1, 2]
        assert list(f["motes/step_index"]) == [0, 10, 20]
    # one field of several, chosen by name
    vtkhdf.write(tmp_path / "rho.vtkhdf", steps, fields="rho")
    with h5py.File(tmp_path / "rho.vtkhdf") as f:
        assert list(f["VTKHDF/PointData"]) == [] and list(f["VTKHDF/CellData"]) == ["rho"]


def test_fields_from_an_h5block_file(tmp_path):
    """H5Part/H5Block -> VTKHDF: a source's LazyFields are read one at a time."""
    src = tmp_path / "s.h5part"
    h5part.write(src, [Step(0, 0.0, {}, {}, {"E": E, "rho": RHO})])
    vtkhdf.write(tmp_path / "s.vtkhdf", h5part.read(src), fields=True)
    _, image = _read(tmp_path / "s.vtkhdf")
    _check(image, "E", E)
    _check(image, "rho", RHO)


def _particles(n=5):
    cols = {a: RNG.random(n) for a in "xyz"}
    return {"e": Species("e", [(k, v.dtype) for k, v in cols.items()], n, chunked_arrays(cols, n, 2))}


def test_particles_and_fields_go_to_separate_files(tmp_path):
    step = Step(0, 0.0, {}, _particles(), {"rho": RHO})
    with pytest.warns(ConversionWarning, match=r"hold fields \(rho\), which this VTKHDF file leaves out"):
        vtkhdf.write(tmp_path / "p.vtkhdf", [step])
    with h5py.File(tmp_path / "p.vtkhdf") as f:
        assert f["VTKHDF"].attrs["Type"] == b"PolyData" and f["VTKHDF/Points"].shape == (5, 3)
    with pytest.warns(ConversionWarning, match=r"hold particles \(e\), which this VTKHDF file leaves out"):
        vtkhdf.write(tmp_path / "f.vtkhdf", [step], fields=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vtkhdf.write(tmp_path / "q.vtkhdf", [Step(0, 0.0, {}, _particles(), {})])   # particles only: silent


@pytest.mark.parametrize("step_fields, options, needle", [
    ({"c": Field(np.zeros((2, 3)), coords=([0, 1, 2], [0, 1]))}, {},
     "field 'c' is on a rectilinear grid (coords); a VTKHDF ImageData needs a uniform one"),
    ({"a": RHO, "b": Field(np.zeros((6, 8, 11)), origin=(1.0, 2.0, 3.0), spacing=(0.1, 0.2, 0.3))}, {},
     "field 'b' lies on another grid"),
    ({"a.b": RHO}, {}, "field name 'a.b' cannot be a VTKHDF array name"),
    ({"rho": RHO}, {"fields": ["E"]}, "no field 'E' (fields: rho)"),
    ({}, {}, "no fields to write"),
    ({"rho": RHO}, {"fields": 3}, "fields must be True"),
    ({"rho": RHO}, {"species": "e"}, "species= and fields= exclude each other"),
])
def test_errors(tmp_path, step_fields, options, needle):
    options.setdefault("fields", True)
    with pytest.raises(motes.UsageError, match=needle.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        vtkhdf.write(tmp_path / "x.vtkhdf", [Step(0, 0.0, {}, {}, step_fields)], **options)
    assert not (tmp_path / "x.vtkhdf").exists()


def test_series_must_keep_its_arrays(tmp_path):
    other = Field(RHO.array.astype(np.float32), origin=RHO.origin, spacing=RHO.spacing, centering="cell")
    steps = [Step(0, 0.0, {}, {}, {"rho": RHO}), Step(1, 1.0, {}, {}, {"rho": other})]
    with pytest.raises(motes.UsageError, match="field 'rho' is cell-centred float32 here but cell-centred float64"):
        vtkhdf.write(tmp_path / "x.vtkhdf", steps, fields=True)
    steps = [Step(0, 0.0, {}, {}, {"rho": RHO}), Step(1, 1.0, {}, {}, {"rho": RHO, "E": E})]
    with pytest.raises(motes.UsageError, match="step 1: fields rho, E differ from the first step's"):
        vtkhdf.write(tmp_path / "y.vtkhdf", steps, fields=True)


def test_the_command_line_writes_fields_with_fields_and_says_so_in_its_own_words(tmp_path, capsys):
    """`motes convert run.motes out.vtkhdf` warns about the fields it leaves out naming the
    destination (never the private staging folder) and the CLI option, --fields, which exists
    and writes them; thetaMode fields, which no VTKHDF image holds, are not offered --fields.
    Python callers read the Python spelling (write_options=...), which works as said."""
    from motes.cli import main
    from motes.convert import convert

    src = tmp_path / "run.motes"
    rng = np.random.default_rng(2)
    motes.write(src, {a: rng.random(50) for a in "xyz"}, step=0, fields={"rho": RHO, "E": E})
    out = tmp_path / "p.vtkhdf"
    assert main(["convert", str(src), str(out)]) == 0
    err = capsys.readouterr().err
    assert f"motes: warning: {out}: the steps hold fields (" in err and "rho" in err, err
    assert "write them to a second file with --fields" in err and ".motes-convert" not in err, err
    assert "fields=True" not in err and "write_options" not in err
    assert main(["convert", str(src), str(tmp_path / "f.vtkhdf"), "--fields"]) == 0
    err = capsys.readouterr().err
    assert f"{tmp_path / 'f.vtkhdf'}: the steps hold particles (particles)" in err and "without --fields" in err
    _, image = _read(tmp_path / "f.vtkhdf")
    _check(image, "rho", RHO)
    _check(image, "E", E)
    assert main(["convert", str(src), str(tmp_path / "rho.vtkhdf"), "--fields", "rho"]) == 0
    with h5py.File(tmp_path / "rho.vtkhdf") as f:
        assert list(f["VTKHDF/PointData"]) == [] and list(f["VTKHDF/CellData"]) == ["rho"]
    assert main(["convert", str(src), str(tmp_path / "x.parquet"), "--fields"]) == 2
    assert "--fields applies to VTKHDF exports" in capsys.readouterr().err
    # Python: the spelling that works
    with pytest.warns(ConversionWarning, match=r"with write_options=\{'fields': True\}") as caught:
        convert(src, tmp_path / "q.vtkhdf")
    assert all(".motes-convert" not in str(w.message) for w in caught)
    with pytest.warns(ConversionWarning, match=r"without write_options\['fields'\]"):
        convert(src, tmp_path / "g.vtkhdf", write_options={"fields": True})
    _, image = _read(tmp_path / "g.vtkhdf")
    _check(image, "rho", RHO)

    # a thetaMode field: no VTKHDF image holds it; the warning says what does
    theta = tmp_path / "theta.motes"
    modes = Field(rng.standard_normal((3, 4, 6)), geometry="thetaMode", origin=(0.0, 0.0), spacing=(0.5, 0.25),
                  centering="cell", imag="+")
    motes.write(theta, {a: rng.random(50) for a in "xyz"}, step=0, fields={"Er": modes, "rho": RHO})
    assert main(["convert", str(theta), str(tmp_path / "t.vtkhdf")]) == 0
    err = capsys.readouterr().err
    assert "write rho to a second file with --fields rho" in err, err
    assert "not Er (thetaMode)" in err and ".cartesian().to_field()" in err and "write_image" in err, err
