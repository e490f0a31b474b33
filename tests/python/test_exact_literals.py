"""Comparisons of a column with a number are exact over the whole int64/uint64 range: an
integer literal is compared as written, not rounded to float64 (docs/guide.md, "Exact
semantics"), on every path (scan, quantile codes, pruning, tail indexes); and histogram
ranges whose width overflows float64 are refused, as numpy refuses them."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import motes

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne}
U64 = [0, 1, 2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 2**63 - 2, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 3, 2**64 - 2,
       2**64 - 1]
I64 = [-2**63, -2**63 + 1, -2**53 - 1, -2**53, -1, 0, 2**53, 2**53 + 1, 2**63 - 2, 2**63 - 1]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(4)
    n = 6_000
    special_u = np.array(U64, dtype=np.uint64)
    special_i = np.array(I64, dtype=np.int64)
    u = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    u[:len(special_u) * 40] = np.tile(special_u, 40)
    i = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64, endpoint=True)
    i[:len(special_i) * 40] = np.tile(special_i, 40)
    f = (2.0**53 + rng.integers(-4, 5, n).astype(np.float64) * 2)  # doubles around 2^53
    cols = {"x": rng.random(n).astype(np.float32), "y": rng.random(n).astype(np.float32),
            "z": rng.random(n).astype(np.float32), "id": u, "big": i, "f": f,
            "k": rng.integers(-128, 127, n, endpoint=True).astype(np.int8), "row": np.arange(n, dtype=np.int32)}
    path = tmp_path_factory.mktemp("exact") / "exact.motes"
    motes.write(path, cols, leaf_size=32, lod_count=2, treelet_size=512, sync=False, index={"big": "quantile"})
    return cols, motes.open(path)


def rows(ds, where):
    return np.sort(ds.query(where, columns=["row"])["row"])


def oracle(values, op, literal):
    return np.array([r for r, v in enumerate(values.tolist()) if OPS[op](v, literal)], dtype=np.int32)


@pytest.mark.parametrize("column,literals", [
    ("id", U64 + [-1, 2**64, 2**64 + 1, 9007199254740993]),
    ("big", I64 + [-2**63 - 1, 2**63, 2**64 - 1, 2**64]),
    ("k", [-129, -128, -1, 0, 126, 127, 128, 300]),
])
def test_integer_literals_compare_exactly(data, column, literals):
    cols, ds = data
    for op, literal in itertools.product(OPS, literals):
        where = f"{column} {op} {literal}"
        assert np.array_equal(rows(ds, where), oracle(cols[column], op, literal)), where
        flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
        assert np.array_equal(rows(ds, f"{literal} {flipped} {column}"), oracle(cols[column], op, literal)), where


def test_the_issues_cases(data):
    cols, ds = data
    ids = cols["id"]
    assert ds.count("id == 9007199254740993") == int(np.sum(ids == np.uint64(2**53 + 1))) > 0
    assert ds.count("id == 9007199254740992") == int(np.sum(ids == np.uint64(2**53))) > 0
    assert ds.count("id == 18446744073709551615") == int(np.sum(ids == np.uint64(2**64 - 1))) > 0
    assert ds.count("id > 18446744073709551613") == int(np.sum(ids > np.uint64(2**64 - 3))) > 0
    assert ds.count("id >= 9223372036854775807") == int(np.sum(ids >= np.uint64(2**63 - 1))) > 0
    assert ds.query("id == 9007199254740993")["id"].tolist() == [2**53 + 1] * 40


def test_a_float_column_against_an_integer_literal_is_exact(data):
    cols, ds = data
    f = cols["f"]
    for op in OPS:
        for literal in (2**53 + 1, 2**53 + 2, 2**53 - 3):  # 2^53 + 1 is no double
            where = f"f {op} {literal}"
            want = np.array([r for r, v in enumerate(f.tolist()) if OPS[op](int(v), literal)], dtype=np.int32)
            assert np.array_equal(rows(ds, where), want), where
    # A literal with a point is a float64 (rounded as written): 9007199254740993.0 == 2^53.
    assert ds.count("f == 9007199254740993.0") == int(np.sum(f == 2.0**53))


def test_isin_writes_python_and_numpy_integers_exactly(data):
    """motes.isin of a Python list (ints past 2**53, numpy integer scalars, ints mixed with
    floats) writes each value exactly, never through float64, as it does an integer array."""
    cols, ds = data
    ids = cols["id"]
    asked = [2**64 - 1, 2**53 + 1]
    assert motes.isin("id", asked) == "id in (18446744073709551615, 9007199254740993)"
    for values in (asked, tuple(asked), [np.uint64(v) for v in asked], np.array(asked, np.uint64)):
        got = ds.query(motes.isin("id", values), columns=["id"])["id"]
        want = int(np.isin(ids, np.array(asked, np.uint64)).sum())  # a uint64 array: np.isin would round the list
        assert sorted(set(got.tolist())) == sorted(asked) and len(got) == want, values
    big = [np.int64(-2**63), -2**53 - 1, 2**63 - 1]
    assert ds.count(motes.isin("big", big)) == int(np.isin(cols["big"], np.array(big, np.int64)).sum()) > 0
    # A list mixing ints and floats keeps each as it is: 2.5 equals no integer, 2**53 + 1 only itself.
    assert motes.isin("id", [2**53 + 1, 2.5]) == "id in (9007199254740993, 2.5)"
    assert ds.count(motes.isin("id", [2**53 + 1, 2.5])) == int(np.sum(ids == np.uint64(2**53 + 1))) > 0
    assert motes.isin("f", [np.float32(0.1), 2.0**53]) == "f in (0.10000000149011612, 9007199254740992.0)"
    with pytest.raises(motes.UsageError, match="boolean"):
        motes.isin("id", [1, True])
    with pytest.raises(motes.UsageError, match="NaN"):
        motes.isin("f", [1, float("nan")])


def test_printed_expressions_keep_the_literal():
    from motes import _core

    for text in ("id == 9007199254740993", "id > 18446744073709551613", "x < -9223372036854775809"):
        printed = _core.parse_expression(text)
        literal = text.split()[-1]
        assert literal in printed, printed
        assert _core.parse_expression(printed) == printed


@pytest.mark.parametrize("rng", [(-1e308, 1e308), (-np.finfo(np.float64).max, np.finfo(np.float64).max)])
def test_a_histogram_range_whose_width_overflows_is_refused(data, rng):
    cols, ds = data
    with pytest.raises(ValueError), np.errstate(all="ignore"):
        np.histogram(cols["f"], bins=8, range=rng)  # numpy refuses it too
    with pytest.raises(motes.UsageError, match="too wide"):
        ds.histogram("f", bins=8, range=rng)
    with pytest.raises(motes.UsageError, match="too wide"):
        ds.histogram("f", "row", bins=8, range=((0, 1), rng))
    with pytest.raises(motes.UsageError, match="must be finite"):
        ds.histogram("f", bins=8, range=(0, np.inf))


def test_a_histogram_of_values_spanning_the_whole_float64_range_is_refused(tmp_path):
    v = np.array([-1e308, 0.0, 1e308])
    motes.write(tmp_path / "wide.motes", {"x": np.zeros(3, np.float32), "y": np.zeros(3, np.float32),
                                          "z": np.zeros(3, np.float32), "v": v}, sync=False)
    ds = motes.open(tmp_path / "wide.motes")
    with pytest.raises(motes.UsageError, match="too wide"):
        ds.histogram("v", bins=4)  # the default range, min to max: its width overflows
    counts, edges = ds.histogram("v", bins=4, range=(-1e307, 1e307))
    assert counts.tolist() == np.histogram(v, bins=4, range=(-1e307, 1e307))[0].tolist()
