"""H5Block grid fields in H5Part files (motes.convert.h5part.h5block through h5part.read/write):
the exact layout H5hut uses, checked with h5py; exact round trips; damaged files named."""

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from needs import need

import motes
from motes.field import Field

h5py = need("h5py")

from field_util import SETTINGS, assert_same_field, fields  # noqa: E402
from motes.convert import h5part  # noqa: E402
from motes.convert.base import LazyFields, Species, Step, chunked_arrays  # noqa: E402

RNG = np.random.default_rng(4)
E = Field(RNG.standard_normal((7, 9, 12, 3)).astype(np.float32), origin=(1.0, 2.0, 3.0), spacing=(0.1, 0.2, 0.3),
          components=("x", "y", "z"), unit="V/m")
RHO = Field(RNG.standard_normal((7, 9, 12)), origin=(1.0, 2.0, 3.0), spacing=(0.1, 0.2, 0.3), centering="cell",
            unit="C/m^3", attributes={"species": "electrons", "moments": [0, 1], "meta": {"a": [1, "b"]}})
PLANE = Field(np.arange(20, dtype=np.int32).reshape(4, 5), origin=(-1.0, 0.5), spacing=(0.25, 2.0))
LINE = Field(np.linspace(0, 1, 6), coords=([0.0, 0.1, 0.3, 0.7, 1.5, 3.1],), centering="cell")


def _step(index=3, time=0.5, fields=None, n=0):
    species = {}
    if n:
        cols = {a: RNG.random(n) for a in "xyz"}
        species["electrons"] = Species("electrons", [(k, v.dtype) for k, v in cols.items()], n,
                                       chunked_arrays(cols, n, 7))
    return Step(index, time, {}, species, dict(fields or {}))


def test_layout_is_h5hut_s(tmp_path):
    path = tmp_path / "f.h5part"
    h5part.write(path, [_step(fields={"E": E, "rho": RHO, "plane": PLANE, "line": LINE}, n=10)])
    with h5py.File(path) as f:
        g = f["Step#0"]
        assert sorted(g) == ["Block", "x", "y", "z"] and g["x"].shape == (10,)
        b = g["Block"]
        assert list(b) == ["E", "rho", "plane", "line"]          # creation order kept
        e = b["E"]
        assert sorted(e) == ["0", "1", "2"]
        for k in range(3):
            ds = e[str(k)]
            assert ds.shape == (7, 9, 12) and ds.dtype == np.float32      # (k, j, i) = (z, y, x)
            np.testing.assert_array_equal(ds[()], E.array[..., k])
        assert e.attrs["__Origin__"].dtype == np.float64
        np.testing.assert_array_equal(e.attrs["__Origin__"], [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(e.attrs["__Spacing__"], [0.1, 0.2, 0.3])
        assert list(e.attrs["motes_components"]) == ["x", "y", "z"] and e.attrs["unit"] == "V/m"
        assert "motes_centering" not in e.attrs and "motes_ndim" not in e.attrs
        r = b["rho"]
        assert list(r) == ["0"] and r["0"].dtype == np.float64 and r["0"].shape == (7, 9, 12)
        # cell-centred: __Origin__ is the first sample (H5hut readers place it right), the corner kept apart
        np.testing.assert_array_equal(r.attrs["__Origin__"], [1.05, 2.1, 3.15])
        np.testing.assert_array_equal(r.attrs["motes_origin"], [1.0, 2.0, 3.0])
        assert r.attrs["motes_centering"] == "cell" and r.attrs["species"] == "electrons"
        np.testing.assert_array_equal(r.attrs["moments"], [0, 1])
        p = b["plane"]
        assert p["0"].shape == (1, 4, 5) and p["0"].dtype == np.int32 and p.attrs["motes_ndim"] == 2
        np.testing.assert_array_equal(p.attrs["__Origin__"], [-1.0, 0.5, 0.0])
        np.testing.assert_array_equal(p.attrs["__Spacing__"], [0.25, 2.0, 1.0])
        line = b["line"]
        assert line["0"].shape == (1, 1, 6) and line.attrs["motes_ndim"] == 1
        np.testing.assert_array_equal(line.attrs["__X_Coordinates__"], LINE.coords[0])
        np.testing.assert_array_equal(line.attrs["__Y_Coordinates__"], [0.0])
        np.testing.assert_array_equal(line.attrs["__Z_Coordinates__"], [0.0])
        assert "__Origin__" not in line.attrs


def test_round_trip_with_particles(tmp_path):
    path = tmp_path / "f.h5part"
    given_fields = {"E": E, "rho": RHO, "plane": PLANE, "line": LINE}
    h5part.write(path, [_step(fields=given_fields, n=10), _step(index=4, time=1.0, n=5)])
    first, second = h5part.read(path)
    assert isinstance(first.fields, LazyFields) and list(first.fields) == list(given_fields)
    for name, f in given_fields.items():
        assert_same_field(f, first.fields[name])
    assert list(first.species) == ["electrons"] and first.species["electrons"].count == 10
    assert dict(second.fields) == {}
    # through a second file: the same again
    again = tmp_path / "g.h5part"
    h5part.write(again, h5part.read(path))
    assert_same_field(RHO, next(iter(h5part.read(again))).fields["rho"])


@SETTINGS
@given(f=fields(), compression=st.sampled_from(["none", "gzip"]))
def test_random_fields_round_trip_exactly(tmp_path_factory, f, compression):
    path = tmp_path_factory.mktemp("hb") / "r.h5part"
    h5part.write(path, [_step(fields={"f": f})], compression=compression)
    (back,) = h5part.read(path)
    assert back.species == {}                      # a step of fields only holds no species
    assert_same_field(f, back.fields["f"])


def test_foreign_h5hut_file(tmp_path):
    """What H5hut writes (no motes attributes): 3-D node-centred fields, vector components 0, 1, 2."""
    path = tmp_path / "h5hut.h5part"
    b = RNG.standard_normal((3, 5, 4, 6))
    with h5py.File(path, "w") as f:
        g = f.create_group("Step#0")
        g["x"] = g["y"] = g["z"] = np.arange(4.0)
        blk = g.create_group("Block/B")
        for k in range(3):
            blk[str(k)] = b[k]
        blk.attrs["__Origin__"] = np.array([0.0, 0.0, -2.0])
        blk.attrs["__Spacing__"] = np.array([0.5, 0.5, 1.0])
        blk.attrs["solver"] = "Yee"
        blk2 = g.create_group("Block/T")
        blk2["0"] = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
        blk2.attrs["__X_Coordinates__"] = np.array([0.0, 1.0, 2.0, 4.0])
        blk2.attrs["__Y_Coordinates__"] = np.array([0.0, 1.0, 3.0])
        blk2.attrs["__Z_Coordinates__"] = np.array([5.0, 6.0])
    (st_,) = h5part.read(path)
    assert list(st_.species) == ["particles"] and st_.species["particles"].count == 4
    bf = st_.fields["B"]
    assert bf.components == ("x", "y", "z") and bf.centering == "node" and bf.shape == (5, 4, 6)
    assert bf.origin == (0.0, 0.0, -2.0) and bf.spacing == (0.5, 0.5, 1.0) and bf.attributes == {"solver": "Yee"}
    np.testing.assert_array_equal(bf.array, np.moveaxis(b, 0, -1))
    t = st_.fields["T"]
    assert t.components is None and not t.uniform and t.array.dtype == np.int64
    np.testing.assert_array_equal(t.axis(2), [5.0, 6.0])


def _damaged(tmp_path, build):
    path = tmp_path / "bad.h5part"
    with h5py.File(path, "w") as f:
        blk = f.create_group("Step#0/Block/E")
        blk.attrs["__Origin__"] = np.zeros(3)
        blk.attrs["__Spacing__"] = np.ones(3)
        for k in range(3):
            blk[str(k)] = np.zeros((2, 3, 4))
        build(blk)
    return path


@pytest.mark.parametrize("build, needle", [
    (lambda g: (g.__delitem__("1"), g.__delitem__("2"), g.__delitem__("0"),
                g.create_dataset("0", data=np.zeros((3, 4)))),
     "dataset '0' has dims (3, 4); H5Block datasets are 3-D"),
    (lambda g: g.attrs.__delitem__("__Spacing__"), "no grid geometry: attribute __Spacing__ missing"),
    (lambda g: (g.__delitem__("2"), g.create_dataset("2", data=np.zeros((2, 3, 5)))),
     "component datasets have different dims ('0': (2, 3, 4), '2': (2, 3, 5))"),
    (lambda g: g.attrs.__setitem__("__Origin__", np.zeros(2)), "attribute __Origin__ must have 3 values"),
    (lambda g: g.attrs.__setitem__("__Spacing__", np.array([1.0, 0.0, 1.0])), "spacing must be positive"),
    (lambda g: g.__delitem__("1"), "H5Block expects '0'"),
    (lambda g: g.attrs.__setitem__("motes_ndim", 2), "must have dims of 1 on the missing axes"),
    (lambda g: g.attrs.__setitem__("motes_centering", "edge"), "motes_centering must be 'node' or 'cell'"),
    (lambda g: g.attrs.__setitem__("motes_components", ["a", "b"]), "names 2 components, the field has 3"),
    (lambda g: (g.attrs.__setitem__("motes_centering", "cell"), g.attrs.__setitem__("motes_origin", np.ones(3))),
     "does not lie half a spacing before __Origin__"),
    (lambda g: (g.attrs.__delitem__("__Origin__"), g.attrs.__setitem__("__X_Coordinates__", np.arange(4.0)),
                g.attrs.__setitem__("__Y_Coordinates__", np.arange(3.0)),
                g.attrs.__setitem__("__Z_Coordinates__", np.arange(3.0))),
     "__Z_Coordinates__ has 3 values, the field has 2 samples along z"),
])
def test_damaged_fields_are_format_errors_naming_the_place(tmp_path, build, needle):
    path = _damaged(tmp_path, build)
    with pytest.raises(motes.FormatError, match=re.escape(f"{path}: Step#0/Block/E: ") + ".*" + re.escape(needle)):
        h5part.read(path)


def test_write_errors(tmp_path):
    with pytest.raises(motes.UsageError, match="field name 'a/b' cannot be an HDF5 group name"):
        h5part.write(tmp_path / "a.h5part", [_step(fields={"a/b": E})])
    with pytest.raises(motes.UsageError, match="must be motes.Field objects"):
        h5part.write(tmp_path / "b.h5part", [_step(fields={"E": np.zeros((2, 2, 2))})])
    with pytest.raises(motes.UsageError, match="attribute name 'unit' is reserved"):
        h5part.write(tmp_path / "c.h5part", [_step(fields={"E": Field(np.zeros(3), attributes={"unit": "m"})})])
    cols = {"x": np.zeros(2), "y": np.zeros(2), "z": np.zeros(2), "Block": np.zeros(2)}
    sp = Species("e", [(k, v.dtype) for k, v in cols.items()], 2, chunked_arrays(cols, 2, 2))
    with pytest.raises(motes.UsageError, match="column 'Block' clashes with the group of the step's H5Block fields"):
        h5part.write(tmp_path / "d.h5part", [Step(0, 0.0, {}, {"e": sp}, {"E": E})])
    assert not list(tmp_path.iterdir())            # nothing left behind
