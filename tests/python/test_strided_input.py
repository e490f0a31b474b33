"""Columns are read by their real strides: broadcast (zero-stride) values, reversed and
stepped views, fields of structured arrays (aligned, packed, big-endian). Each stored
value must equal the caller's value for the same particle (matched through an id column)."""

import numpy as np
import pytest

import motes

N = 20_000
SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def _by_id(table):
    order = np.argsort(table["id"])
    return {k: v[order] for k, v in table.items()}


def _check(path, columns):
    motes.write(path, columns, **SMALL)
    ds = motes.open(path)
    got = _by_id(ds.query())
    want_order = np.argsort(np.asarray(columns["id"]))
    for name, values in columns.items():
        want = np.asarray(values)[want_order]
        assert got[name].dtype == want.dtype.newbyteorder("=") or (want.dtype == np.bool_ and got[name].dtype == np.uint8)
        np.testing.assert_array_equal(got[name], want.astype(got[name].dtype), err_msg=name)
    ds.verify()


def _base(rng, n=N):
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "id": np.arange(n, dtype=np.uint64)}


def test_broadcast_column_is_stored_as_the_value(tmp_path):
    rng = np.random.default_rng(1)
    cols = _base(rng)
    cols["w"] = np.broadcast_to(np.float32(7.0), (N,))
    cols["k"] = np.broadcast_to(np.int16(-3), (N,))
    assert cols["w"].strides == (0,)
    _check(tmp_path / "b.motes", cols)


def test_large_broadcast_column_does_not_read_past_the_value(tmp_path):
    # Read as contiguous, a zero-stride column of 4M doubles reads 32 MB past one double.
    n = 4_000_000
    x = np.linspace(0, 1, n)
    cols = {"x": x, "y": np.broadcast_to(0.5, (n,)), "z": np.broadcast_to(0.25, (n,)),
            "w": np.broadcast_to(7.0, (n,))}
    motes.write(tmp_path / "big.motes", cols, sync=False)
    ds = motes.open(tmp_path / "big.motes")
    for c in ("y", "z", "w"):
        s = ds.stats(c)
        assert s["min"] == s["max"] == float(cols[c][0]) and s["count"] == n


def test_reversed_and_stepped_views(tmp_path):
    rng = np.random.default_rng(2)
    big = rng.random(3 * N)
    cols = {"x": big[::3], "y": big[::-3], "z": big[1::3][::-1], "id": np.arange(N, dtype=np.uint64)[::-1],
            "e": rng.normal(size=2 * N).astype(np.float32)[::2]}
    assert cols["y"].strides[0] < 0
    _check(tmp_path / "r.motes", cols)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("order", ["<", ">"])
def test_structured_array_fields(tmp_path, packed, order):
    rng = np.random.default_rng(3)
    dt = np.dtype([("x", order + "f8"), ("flag", "?"), ("y", order + "f8"), ("z", order + "f4"),
                   ("q", order + "i2"), ("id", order + "u8")], align=not packed)
    rec = np.zeros(N, dtype=dt)
    for name in ("x", "y", "z"):
        rec[name] = rng.random(N)
    rec["q"] = rng.integers(-100, 100, N)
    rec["flag"] = rng.random(N) > 0.5
    rec["id"] = rng.permutation(N)
    _check(tmp_path / "s.motes", {name: rec[name] for name in dt.names})


def test_unaligned_view(tmp_path):
    rng = np.random.default_rng(4)
    buf = np.zeros(N * 8 + 1, np.uint8)
    u = np.frombuffer(buf.data, dtype="f8", count=N, offset=1)
    u[:] = rng.random(N)
    assert not u.flags.aligned
    cols = _base(rng)
    cols["u"] = u
    _check(tmp_path / "u.motes", cols)


def test_structured_array_itself_is_refused_with_a_clear_error(tmp_path):
    rec = np.zeros(10, dtype=[("a", "f8"), ("b", "f8")])
    cols = _base(np.random.default_rng(5), 10)
    cols["rec"] = rec
    with pytest.raises(motes.UsageError, match="column 'rec' has unsupported dtype"):
        motes.write(tmp_path / "bad.motes", cols, **SMALL)
