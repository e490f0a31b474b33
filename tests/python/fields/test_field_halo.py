"""Halo reads (StoredField.read_block): an MPI rank's block of the global grid with its
ghost zones filled from the file, wrapping around periodic axes and holding `fill` past
the others, checked against numpy's np.pad of the whole grid ('wrap' / 'constant') on
random 1-3-D grids, blocks, ghost widths and periodic flags, scalar and vector fields."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from motes.errors import UsageError
from motes.fields.file import open_field_file, write_field_file


def oracle(a, ndim, offset, count, widths, periodic, fill):
    """numpy's answer: the whole grid padded axis by axis ('wrap' along periodic axes,
    'constant' with `fill` along the others), then the block's window cut out."""
    padded = a
    for k in range(ndim):  # axis k (x, y, z) is array axis ndim - 1 - k
        pad = [(0, 0)] * a.ndim
        pad[ndim - 1 - k] = widths[k]
        padded = np.pad(padded, pad, mode="wrap") if periodic[k] else np.pad(padded, pad, mode="constant",
                                                                             constant_values=fill)
    index = []
    for k in reversed(range(ndim)):  # after padding, the window starts at offset (lo widths added and removed)
        index.append(slice(offset[k], offset[k] + count[k] + widths[k][0] + widths[k][1]))
    return padded[tuple(index)]


class Counting:
    """A StoredField whose `read` calls are counted (the pieces read_block asks for)."""

    def __init__(self, f):
        self.calls = []
        original = f.read

        def read(*args, **kwargs):
            self.calls.append(kwargs.get("index_box"))
            return original(*args, **kwargs)

        f.read = read


def write(tmp_path, a, components=None, name="f"):
    path = tmp_path / f"{name}.mfd"
    write_field_file(path, motes.Field(a, components=components), name=name, block_bits=6, sync=False)
    return open_field_file(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_read_block_matches_numpy_pad(tmp_path, data):
    ndim = data.draw(st.integers(1, 3), label="ndim")
    shape = tuple(data.draw(st.lists(st.integers(1, 12), min_size=ndim, max_size=ndim), label="shape"))
    ncomp = data.draw(st.sampled_from([None, 2, 3]), label="components")
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.uint8]), label="dtype")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    full = shape + ((ncomp,) if ncomp else ())
    a = rng.integers(1, 200, full).astype(dtype)  # never 0, so a fill of 0 is told apart from data
    f = write(tmp_path, a, ("x", "y", "z")[:ncomp] if ncomp else None)
    dims = f.dims
    offset = [data.draw(st.integers(0, n - 1)) for n in dims]
    count = [data.draw(st.integers(1, n - o)) for o, n in zip(offset, dims)]
    # Ghost widths up to beyond the grid's size (a wrap that goes round more than once).
    form = data.draw(st.sampled_from(["int", "per-axis", "pairs"]))
    if form == "int":
        g = data.draw(st.integers(0, 5))
        ghosts, widths = g, [(g, g)] * ndim
    elif form == "per-axis":
        ghosts = [data.draw(st.integers(0, 15)) for _ in range(ndim)]
        widths = [(g, g) for g in ghosts]
    else:
        ghosts = [(data.draw(st.integers(0, 15)), data.draw(st.integers(0, 15))) for _ in range(ndim)]
        widths = ghosts
    if data.draw(st.booleans()):
        periodic = data.draw(st.booleans())
        flags = [periodic] * ndim
    else:
        periodic = flags = [data.draw(st.booleans()) for _ in range(ndim)]
    fill = data.draw(st.sampled_from([0, 7, 250]))
    counter = Counting(f)
    got = f.read_block(offset, count, ghosts=ghosts, periodic=periodic, fill=fill)
    want = oracle(a, ndim, offset, count, widths, flags, fill)
    assert got.dtype == a.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # The part inside the grid is one read; every other read is a wrapped piece, each read once.
    boxes = [tuple(map(tuple, b)) for b in counter.calls]
    assert len(set(boxes)) == len(boxes)
    inside = tuple((max(o - w[0], 0), min(o + c + w[1], n)) for o, c, w, n in zip(offset, count, widths, dims))
    assert boxes[0] == (tuple(lo for lo, _ in inside), tuple(hi for _, hi in inside))
    if not any(flags):
        assert len(boxes) == 1
    # One component alone is the same block of that component.
    if ncomp:
        one = f.read_block(offset, count, ghosts=ghosts, periodic=periodic, fill=fill, component="y")
        np.testing.assert_array_equal(one, want[..., 1])


def test_interior_block_is_one_read_and_matches_slice(tmp_path):
    a = np.arange(10 * 12 * 14, dtype=np.float64).reshape(10, 12, 14)
    f = write(tmp_path, a)
    counter = Counting(f)
    got = f.read_block((3, 2, 4), (5, 6, 3), ghosts=2)
    np.testing.assert_array_equal(got, a[4 - 2:7 + 2, 2 - 2:8 + 2, 3 - 2:8 + 2])
    assert len(counter.calls) == 1
    # No ghosts: the block itself, whatever `periodic` says.
    np.testing.assert_array_equal(f.read_block((0, 0, 0), (14, 12, 10), periodic=True), a)


def test_periodic_corner_and_mixed_axes(tmp_path):
    a = np.arange(6 * 5, dtype=np.int32).reshape(6, 5) + 1  # (y, x)
    f = write(tmp_path, a)
    # The block at the grid's origin with one ghost layer: corners come from the opposite corner.
    got = f.read_block((0, 0), (2, 2), ghosts=1, periodic=True)
    assert got[0, 0] == a[-1, -1] and got[0, 1] == a[-1, 0] and got[1, 0] == a[0, -1]
    np.testing.assert_array_equal(got[1:3, 1:3], a[0:2, 0:2])
    # Periodic along x only: the rows past y are `fill`, x wraps.
    got = f.read_block((0, 4), (5, 2), ghosts=((1, 1), (0, 1)), periodic=(True, False), fill=-9)
    np.testing.assert_array_equal(got[:2, 1:6], a[4:6, :])
    np.testing.assert_array_equal(got[:2, 0], a[4:6, -1])
    np.testing.assert_array_equal(got[:2, 6], a[4:6, 0])
    assert (got[2] == -9).all()


def test_vector_field_components_last(tmp_path):
    rng = np.random.default_rng(3)
    e = rng.standard_normal((4, 7, 3)).astype(np.float32)  # (x, 7) samples, 3 components, 2-D
    f = write(tmp_path, e, ("x", "y", "z"), name="E")
    got = f.read_block((5, 1), (2, 2), ghosts=(2, 1), periodic=True)
    assert got.shape == (4, 6, 3)
    want = np.pad(e, ((1, 1), (2, 2), (0, 0)), mode="wrap")[1:5, 5:11]
    np.testing.assert_array_equal(got, want)


def test_usage_errors(tmp_path):
    f = write(tmp_path, np.zeros((4, 5, 6), np.float32) + 1)
    with pytest.raises(UsageError, match="negative"):
        f.read_block((0, 0, 0), (2, 2, 2), ghosts=-1)
    with pytest.raises(UsageError, match="negative"):
        f.read_block((0, 0, 0), (2, 2, 2), ghosts=((0, 1), (1, -2), (0, 0)))
    with pytest.raises(UsageError, match="one entry per axis"):
        f.read_block((0, 0, 0), (2, 2, 2), ghosts=(1, 1))
    with pytest.raises(UsageError, match="one integer per axis"):
        f.read_block((0, 0), (2, 2, 2))
    with pytest.raises(UsageError, match="one integer per axis"):
        f.read_block((0, 0, 0), (2, 2))
    with pytest.raises(UsageError, match="along x"):
        f.read_block((5, 0, 0), (2, 2, 2))  # x runs to 7 > 6
    with pytest.raises(UsageError, match="along z"):
        f.read_block((0, 0, -1), (2, 2, 2))
    with pytest.raises(UsageError, match="along y"):
        f.read_block((0, 0, 0), (2, 0, 2))  # an empty block
    with pytest.raises(UsageError, match="periodic"):
        f.read_block((0, 0, 0), (2, 2, 2), periodic=(True, False))
    with pytest.raises(UsageError, match="integers"):
        f.read_block((0.5, 0, 0), (2, 2, 2))
    with pytest.raises(UsageError, match="component"):
        f.read_block((0, 0, 0), (2, 2, 2), component="x")
    fi = write(tmp_path, np.ones((3, 3), np.int16), name="i")
    with pytest.raises(UsageError, match="fill"):
        fi.read_block((0, 0), (1, 1), ghosts=1, fill=float("nan"))
    with pytest.raises(UsageError, match="fill"):
        fi.read_block((0, 0), (1, 1), ghosts=1, fill=70000)
    with pytest.raises(UsageError, match="fill"):
        fi.read_block((0, 0), (1, 1), ghosts=1, fill="x")
    np.testing.assert_array_equal(fi.read_block((0, 0), (1, 1), ghosts=1, fill=-3.0),
                                  [[-3, -3, -3], [-3, 1, 1], [-3, 1, 1]])
