"""Field files (docs/format.md §14): every level and random boxes read back exactly what
numpy striding gives, for 1-3-D grids of any size, every dtype, scalar and vector fields,
uniform and rectilinear, node and cell centred, coded and not; reads touch only the blocks
of their box; damaged files are refused with a FormatError, never a crash."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from motes.field import Field
from motes.fields.file import open_field_file, write_field_file

DTYPES = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def grid(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        z, y, x = np.meshgrid(*[np.linspace(0, 1, n) for n in (shape + (1, 1, 1))[:3]], indexing="ij")
        smooth = (np.sin(3 * x) * np.cos(2 * y) + z)[tuple(slice(0, n) for n in shape)].reshape(shape)
        return (smooth + 0.01 * rng.standard_normal(shape)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dtype)


def expected(a, ndim, level, lo, hi):
    """numpy's answer: every 2^level-th sample from 0, then the ones in [lo, hi) (x, y, z)."""
    s = 2 ** level
    sub = a[(slice(None, None, s),) * ndim]
    index = []
    for k in reversed(range(ndim)):  # array axes are (z, y, x)
        first = -(-lo[k] // s)
        last = -(-hi[k] // s)
        index.append(slice(first, last))
    return sub[tuple(index)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_grids_levels_and_boxes(tmp_path, data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 40), min_size=ndim, max_size=ndim)))
    dtype = data.draw(st.sampled_from(DTYPES))
    compression = data.draw(st.sampled_from(["lossless", "none"]))
    block_bits = data.draw(st.sampled_from([6, 8, 14]))
    a = grid(shape, dtype, data.draw(st.integers(0, 9)))
    path = tmp_path / "f.mfd"
    write_field_file(path, Field(a), name="f", compression=compression, block_bits=block_bits, sync=False)
    f = open_field_file(path)
    assert f.shape == shape and f.dtype == a.dtype and f.dims == tuple(reversed(shape))
    for level in range(f.levels + 2):
        got = f.read(level=level)
        np.testing.assert_array_equal(got, a[(slice(None, None, 2 ** level),) * ndim])
    for _ in range(5):
        dims = f.dims
        lo = [data.draw(st.integers(0, n - 1)) for n in dims]
        hi = [data.draw(st.integers(l + 1, n)) for l, n in zip(lo, dims)]
        level = data.draw(st.integers(0, f.levels))
        np.testing.assert_array_equal(f.read(index_box=(lo, hi), level=level), expected(a, ndim, level, lo, hi))


def test_vector_cell_centred_rectilinear_and_metadata(tmp_path):
    e = np.stack([grid((9, 10, 11), np.float32, k) for k in range(3)], axis=-1)
    fld = Field(e, origin=(1, 2, 3), spacing=(0.5, 0.25, 2), centering="cell", components=("x", "y", "z"),
                unit="V/m", attributes={"code": "test", "n": [1, 2]})
    info = write_field_file(tmp_path / "e.mfd", fld, name="E", sync=False)
    assert info["data_bytes"] == e.nbytes and len(info["ranges"]) == 3
    f = open_field_file(tmp_path / "e.mfd")
    assert (f.name, f.components, f.centering, f.unit, f.attributes) == ("E", ("x", "y", "z"), "cell", "V/m",
                                                                         {"code": "test", "n": [1, 2]})
    assert f.origin == (1, 2, 3) and f.spacing == (0.5, 0.25, 2) and f.shape == (9, 10, 11, 3)
    np.testing.assert_array_equal(f.read(), e)
    np.testing.assert_array_equal(f.read(component="y"), e[..., 1])
    for k in range(3):
        lo, hi = f.ranges[k]
        assert lo == e[..., k].min() and hi == e[..., k].max()
    # Positions: cell centres; a physical box keeps the samples whose centres it holds.
    np.testing.assert_allclose(f.axis(0), 1 + 0.5 * (np.arange(11) + 0.5))
    sub = f.read(box=(2.0, 2.0, 3.0, 3.5, 2.6, 9.0))
    xs, ys, zs = (f.axis(k) for k in range(3))
    mx, my, mz = (xs >= 2) & (xs <= 3.5), (ys >= 2) & (ys <= 2.6), (zs >= 3) & (zs <= 9)
    np.testing.assert_array_equal(sub, e[mz][:, my][:, :, mx])
    coarse = f.to_field(level=1)
    np.testing.assert_allclose(coarse.axis(0), f.axis(0)[::2])  # the kept samples stay where they are
    rect = Field(grid((5, 7), np.float64), coords=([0, 1, 3, 4, 8, 9, 20], [0, 0.5, 1, 2, 5]))
    write_field_file(tmp_path / "r.mfd", rect, name="rho", sync=False)
    r = open_field_file(tmp_path / "r.mfd")
    np.testing.assert_array_equal(r.coords[0], [0, 1, 3, 4, 8, 9, 20])
    np.testing.assert_array_equal(r.read(box=(2, 0, 0, 9, 1, 0)), rect.array[0:3, 2:6])
    np.testing.assert_array_equal(r.to_field(level=1).coords[0], [0, 3, 8, 20])


def test_a_coarse_read_touches_a_prefix_and_a_box_its_blocks(tmp_path):
    a = grid((64, 64, 64), np.float32)
    write_field_file(tmp_path / "b.mfd", Field(a), name="b", block_bits=10, sync=False)
    f = open_field_file(tmp_path / "b.mfd")
    total = 64 ** 3 // 2 ** 10
    assert len(f.blocks()) == total
    coarse = f.blocks(level=3)  # 8^3 samples: the first 512 HZ indexes, one block
    assert coarse == [0]
    small = f.blocks(index_box=((0, 0, 0), (8, 8, 8)))
    assert len(small) < total / 16
    np.testing.assert_array_equal(f.read(index_box=((0, 0, 0), (8, 8, 8))), a[:8, :8, :8])


def test_bad_arguments_name_the_problem(tmp_path):
    write_field_file(tmp_path / "g.mfd", Field(grid((4, 5), np.float32)), name="g", sync=False)
    f = open_field_file(tmp_path / "g.mfd")
    for kwargs, needle in [(dict(box=(10, 10, 0, 20, 20, 0)), "no sample lies"),
                           (dict(index_box=((3, 0), (3, 5))), "empty"),
                           (dict(level=-1), ">= 0"), (dict(component="x"), "no component"),
                           (dict(box=(0, 0, 0, 1, 1, 1), index_box=((0, 0), (1, 1))), "not both")]:
        with pytest.raises(motes.UsageError, match=needle):
            f.read(**kwargs)
    with pytest.raises(motes.UsageError, match="compression"):
        write_field_file(tmp_path / "h.mfd", Field(np.zeros(3)), compression="zip")
    with pytest.raises(motes.UsageError, match="field name"):
        write_field_file(tmp_path / "h.mfd", Field(np.zeros(3)), name="no/slash")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_files_are_format_errors(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("bad")
    write_field_file(d / "v.mfd", Field(grid((6, 7, 9), np.float64)), name="v", block_bits=6, sync=False)
    raw = bytearray((d / "v.mfd").read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    (d / "v.mfd").write_bytes(bytes(raw))
    try:
        f = open_field_file(d / "v.mfd")
        f.read(level=data.draw(st.integers(0, 4)))
        f.verify()
    except (motes.FormatError, motes.UsageError):
        pass
