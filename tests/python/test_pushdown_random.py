"""Random filters through every tool that pushes filters into motes, against the tool's own
evaluation of the same filter on the same rows in memory: pyarrow (a ``motes.arrow``
dataset against ``Table.filter``), Polars (``scan_pyarrow_dataset`` of the motes dataset
against the same scan of an in-memory pyarrow dataset) and DuckDB (a registered motes table
against a registered Arrow table). The filters are comparisons and IN lists (ints, floats,
-0.0, NaN, infinities, constants past 2**53 and 2**63, typed value sets) on int8, int64,
uint64, float32 and float64 columns holding those edge values, under AND, OR and NOT."""

from __future__ import annotations

import math

import numpy as np
import pytest

import motes
import motes.arrow
import motes.duckdb
from needs import need

pa = need("pyarrow")
pads = need("pyarrow.dataset")
duckdb = need("duckdb")
pl = need("polars")

N = 1500
EDGE = {
    "f": [-0.0, 0.0, np.nan, 0.1, 0.5, 1.0, -1.0, np.inf, -np.inf, 16777216.0, 16777218.0, 1e-45, 3.4e38, -2.5, 1.5],
    "d": [-0.0, 0.0, np.nan, 0.1, 0.5, 1.0, 2.0**53, 2.0**53 + 2, 5e-324, 1e300, np.inf, -np.inf, -2.5,
          float(np.float32(0.1))],
    "g": [-0.0, 0.0, 0.1, 0.5, 1.0, 2.0**53, -2.5, 1.5, float(np.float32(0.1))],  # no NaN: DuckDB's filters are pushed
    "h": [-0.0, 0.0, 0.1, 0.5, 1.0, 16777216.0, -2.5, 1.5],
    "i": [0, 1, -1, 2, 3, 5, 2**53, 2**53 + 1, 2**63 - 1, -2**63, 16777217, 300],
    "u": [0, 1, 2, 3, 5, 2**53, 2**53 + 1, 2**64 - 1, 2**63, 16777217],
    "v": [0, 1, 2, 3, 5, 300, 65535, 16777215, 16777216],  # pyarrow casts these to float32 when it compares
    "k": [0, 1, -1, 2, 5, 127, -128],
}
DTYPES = {"f": np.float32, "d": np.float64, "g": np.float64, "h": np.float32, "i": np.int64, "u": np.uint64,
          "v": np.uint64, "k": np.int8}
# How often a leaf is on each column: pyarrow refuses most filters on i and u (the casts of
# their values to float64 or int64 fail), and any filter holding such a leaf.
WEIGHTS = {"f": 0.16, "d": 0.16, "g": 0.14, "h": 0.14, "i": 0.05, "u": 0.05, "v": 0.15, "k": 0.15}
CONSTANTS = [0, 1, -1, 2, 3, 5, 127, 128, -129, 300, -0.0, 0.0, 0.1, 0.5, 1.0, 1.5, -2.5, math.nan, math.inf,
             -math.inf, 2**53, 2**53 + 1, 2.0**53, 2**63, 2**64 - 1, -2**63, 16777216, 16777217, 16777218, 1e300,
             1e-50, 3.4e38, 1e-45, float(np.float32(0.1))]


def columns(rng):
    cols = {a: rng.uniform(0, 100, N).astype(np.float32) for a in "xyz"}
    for name, dtype in DTYPES.items():
        edge = np.array(EDGE[name], dtype=dtype)
        if np.dtype(dtype).kind == "f":
            rest = rng.choice(edge[np.isfinite(edge)], N) + rng.integers(-3, 4, N) * (rng.random(N) < 0.3)
        else:
            rest = rng.choice(edge, N)
        c = np.asarray(rest, dtype=dtype)
        c[rng.integers(0, N, N // 2)] = rng.choice(edge, N // 2)
        cols[name] = c
    cols["row"] = np.arange(N, dtype=np.int32)
    return cols


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    cols = columns(np.random.default_rng(42))
    path = tmp_path_factory.mktemp("pushdown") / "edge.motes"
    motes.write(path, cols, leaf_size=64, sync=False)
    return str(path), cols, pa.table(cols)


# --- random filters, each as pyarrow, Polars and SQL ------------------------------------------

def constant(rng, name, cols):
    if rng.random() < 0.3:
        v = cols[name][rng.integers(N)]
        return float(v) if isinstance(v, np.floating) else int(v)
    return CONSTANTS[rng.integers(len(CONSTANTS))]


def sql(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return f"'{v}'::DOUBLE"
    return repr(v)


def arrow_scalar(v, rng):
    """A constant as pyarrow gets it: inferred, or typed (float32 or an integer type)."""
    if isinstance(v, int) and v >= 2**63:
        return pa.scalar(v, pa.uint64())
    if isinstance(v, float) and rng.random() < 0.2:
        with np.errstate(over="ignore"):
            return pa.scalar(np.float32(v))
    return v


def value_set(values, rng):
    """The Arrow array an is_in gets: inferred from the list, or of one chosen type."""
    types = [None, pa.float64(), pa.float32(), pa.int64(), pa.uint64(), pa.int8()]
    for _ in range(3):
        t = types[rng.integers(len(types))]
        try:
            return pa.array(values, type=t) if t is not None else pa.array(values)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            continue
    return None


OPS = ["==", "!=", "<", "<=", ">", ">="]


def leaf(rng, cols):
    name = rng.choice(list(WEIGHTS), p=list(WEIGHTS.values()))
    if rng.random() < 0.6:
        op, v = OPS[rng.integers(len(OPS))], constant(rng, name, cols)
        a = eval(f"pads.field(name) {op} c", {"pads": pads, "name": name, "c": arrow_scalar(v, rng)})
        p = polars(lambda: eval(f"pl.col(name) {op} v", {"pl": pl, "name": name, "v": v}))
        return a, p, f"{name} {op.replace('==', '=')} {sql(v)}"
    values = [constant(rng, name, cols) for _ in range(rng.integers(1, 5))]
    vs = value_set(values, rng)
    if vs is None:
        return leaf(rng, cols)
    listed = ", ".join(map(sql, values))
    return pads.field(name).isin(vs), polars(lambda: pl.col(name).is_in(values)), f"{name} IN ({listed})"


def polars(build):
    try:
        return build()
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):  # Polars refuses a list mixing types
        return None


def both(p1, p2, join):
    return None if p1 is None or p2 is None else join(p1, p2)


def random_filter(rng, cols, depth=0):
    r = rng.random()
    if depth >= 3 or r < 0.45:
        return leaf(rng, cols)
    if r < 0.6:
        a, p, s = random_filter(rng, cols, depth + 1)
        return ~a, None if p is None else ~p, f"NOT ({s})"
    (a1, p1, s1), (a2, p2, s2) = random_filter(rng, cols, depth + 1), random_filter(rng, cols, depth + 1)
    if r < 0.8:
        return a1 & a2, both(p1, p2, lambda x, y: x & y), f"({s1}) AND ({s2})"
    return a1 | a2, both(p1, p2, lambda x, y: x | y), f"({s1}) OR ({s2})"


def filters(seed, n, cols):
    rng = np.random.default_rng(seed)
    return [random_filter(rng, cols) for _ in range(n)]


def rows_or_error(run):
    try:
        return sorted(run())
    except Exception as e:  # the tool refuses the filter (a cast it cannot do)
        return type(e)


# --- the tests -------------------------------------------------------------------------------

def test_pyarrow_answers_random_filters_as_pyarrow(data):
    path, cols, table = data
    d = motes.arrow.dataset(path)
    counts = {"compared": 0, "exact": 0, "checked or partial": 0, "refused by pyarrow": 0}
    for a, _, _ in filters(1, 2000, cols):
        want = rows_or_error(lambda: table.filter(a).column("row").to_pylist())
        if not isinstance(want, list):
            counts["refused by pyarrow"] += 1
            continue
        s = d.scanner(columns=["row"], filter=a)
        got = sorted(s.to_table().column("row").to_pylist())
        assert got == want, (str(a), s.where)
        assert d.count_rows(filter=a) == len(want)
        counts["compared"] += 1
        counts["exact" if s.residual is None else "checked or partial"] += 1
    # Most filters are answered by motes alone: the comparison is not vacuous.
    assert counts["compared"] > 1200 and counts["exact"] > counts["compared"] // 2, counts


def test_polars_answers_random_filters_as_over_pyarrow(data):
    path, cols, table = data
    mine, theirs = pl.scan_pyarrow_dataset(motes.arrow.dataset(path)), pl.scan_pyarrow_dataset(pads.dataset(table))
    compared = 0
    for _, p, _ in filters(2, 700, cols):
        if p is None:
            continue
        want = rows_or_error(lambda: theirs.filter(p).select("row").collect()["row"].to_list())
        if not isinstance(want, list):
            continue
        assert rows_or_error(lambda: mine.filter(p).select("row").collect()["row"].to_list()) == want, str(p)
        compared += 1
    assert compared > 400


def test_duckdb_answers_random_filters_as_duckdb(data):
    path, cols, table = data
    con = duckdb.connect()
    src = motes.duckdb.register(con, "p", path)
    con.register("mem", table)
    compared = pushed = 0
    for _, _, s in filters(3, 700, cols):
        q = "SELECT row FROM {} WHERE " + s
        want = rows_or_error(lambda: [r for (r,) in con.sql(q.format("mem")).fetchall()])
        if not isinstance(want, list):
            continue
        assert rows_or_error(lambda: [r for (r,) in con.sql(q.format("p")).fetchall()]) == want, s
        compared += 1
        pushed += bool(src.filters)
    assert compared > 500
    if motes.duckdb.pushes_filters():
        assert pushed > compared // 3
