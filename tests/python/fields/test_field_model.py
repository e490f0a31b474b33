"""motes.Field: the in-memory grid field every writer, reader and converter shares
(python/motes/field.py): geometry in (x, y, z) order, arrays in (z, y, x) C order."""

import re

import numpy as np
import pytest

import motes
from motes.field import Field


def test_uniform_node_and_cell_positions():
    f = Field(np.zeros((4, 5, 6), np.float32), origin=(1, 2, 3), spacing=(0.5, 0.25, 2))
    assert f.ndim == 3 and f.shape == (4, 5, 6) and f.dims == (6, 5, 4)
    np.testing.assert_array_equal(f.axis(0), 1 + 0.5 * np.arange(6))
    assert f.bounds() == ((1.0, 2.0, 3.0), (3.5, 3.0, 9.0))
    c = Field(np.zeros((4, 5, 6)), origin=(0, 0, 0), spacing=(1, 1, 1), centering="cell")
    np.testing.assert_array_equal(c.axis(2), np.arange(4) + 0.5)


def test_vector_rectilinear_and_lower_dimensions():
    v = Field(np.zeros((3, 4, 2), np.float64), components=("x", "y"), coords=([0, 1, 3, 7], [0, 0.5, 2]))
    assert v.ndim == 2 and v.shape == (3, 4) and not v.uniform
    np.testing.assert_array_equal(v.axis(0), [0, 1, 3, 7])
    line = Field(np.arange(10, dtype=np.int32))
    assert line.ndim == 1 and line.origin == (0.0,) and line.spacing == (1.0,)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(array=np.zeros((2, 2, 2)), spacing=(1, 1)), "3 numbers"),
    (dict(array=np.zeros((2, 2, 2)), spacing=(1, 0, 1)), "positive"),
    (dict(array=np.zeros((2, 2, 2)), origin=(0, np.nan, 0)), "finite"),
    (dict(array=np.zeros((2, 2, 2)), centering="edge"), "centering"),
    (dict(array=np.zeros((2, 2, 2, 2, 2))), "1-, 2- or 3-D"),
    (dict(array=np.zeros((2, 0, 2))), "no samples"),
    (dict(array=np.zeros((2, 2), np.complex64)), "dtype"),
    (dict(array=np.zeros((2, 2, 3)), components=("x", "y")), "last axis of 2"),
    (dict(array=np.zeros((2, 2, 2)), components=("x", "x")), "distinct"),
    (dict(array=np.zeros((2, 3)), coords=([0, 1, 2], [1, 1])), "increasing"),
    (dict(array=np.zeros((2, 3)), coords=([0, 1], [0, 1])), "3 values"),
    (dict(array=np.zeros((2, 3)), coords=([0, 1, 2], [0, 1]), origin=(0, 0)), "not both"),
])
def test_bad_fields_are_refused_by_name(kwargs, needle):
    with pytest.raises(motes.UsageError, match=needle):
        Field(**kwargs)


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">i2", ">u4", ">i8", "?"])
def test_fields_take_the_dtypes_particle_columns_take(tmp_path, dtype):
    """Big-endian arrays (HDF5, FITS) and booleans: what a particle column accepts, a field
    accepts, converted the same way (motes.dtypes.stored_array), and reads back equal."""
    from motes.dtypes import column_array

    rng = np.random.default_rng(4)
    a = (rng.random((3, 4, 5)) * 100).astype(dtype)
    f = Field(a, components=None)
    want = column_array("c", a.ravel())  # what a particle column of these values becomes
    assert f.array.dtype == want.dtype and f.array.dtype.isnative
    np.testing.assert_array_equal(f.array.ravel(), want)
    motes.write(tmp_path / "r.motes", None, fields={"f": f}, sync=False)
    got = motes.open(tmp_path / "r.motes").field("f").read()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, a.astype(want.dtype))


@pytest.mark.parametrize("bad", [np.zeros((2, 2), "U3"), np.zeros((2, 2), [("a", "f4"), ("b", "f4")]),
                                 np.zeros((2, 2), ">c8"), np.zeros((2, 2), object)])
def test_fields_refuse_what_particle_columns_refuse(bad):
    with pytest.raises(motes.UsageError, match=f"a field has unsupported dtype {re.escape(str(bad.dtype))}"):
        Field(bad)


def test_a_field_and_a_block_share_one_geometry():
    """Field and FieldBlock declare their geometry once (field.Grid): the same names, the same
    defaults, and a block's geometry is checked as a Field's."""
    from dataclasses import fields

    from motes.field import FieldBlock, Grid

    shared = [(f.name, f.default) for f in fields(Grid)]
    assert [(f.name, f.default) for f in fields(motes.Field)][:len(shared)] == shared
    assert [(f.name, f.default) for f in fields(FieldBlock)][:len(shared)] == shared
    block = FieldBlock(np.zeros((2, 3)), offset=(0, 0), dims=(3, 4), spacing=(0.5, 2), unit="T")
    assert motes.Field(np.zeros((4, 3)), **block.grid_keywords()).spacing == (0.5, 2.0)
    with pytest.raises(motes.UsageError, match="offset= .* and dims="):
        FieldBlock(np.zeros((2, 3)), (0, 0), (3, 4))  # positionally: offset and dims come after the geometry
