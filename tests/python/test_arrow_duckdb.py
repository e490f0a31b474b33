"""motes as an Arrow dataset (motes.arrow) and as a DuckDB table (motes.duckdb): every answer
equals what pyarrow's or DuckDB's own evaluation gives on the same rows in memory, for
random boxes, tails and boolean combinations; the filters motes answers exactly are pushed
into its planner (shown by the scanner, by EXPLAIN and by motes' counters), the others
are applied by the tool."""
import numpy as np
import pytest

import motes
import motes.arrow
import motes.duckdb
from motes import pushdown

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")
pads = pytest.importorskip("pyarrow.dataset")
duckdb = pytest.importorskip("duckdb")

N = 60_000


def particles(seed=5, nan=False):
    cols = motes.synth.vpic(N, seed=seed)
    rng = np.random.default_rng(seed)
    cols["id"] = (np.int64(1) << 53) - 100 + rng.permutation(N).astype(np.int64)  # past what a double holds
    cols["w"] = rng.random(N)  # f64
    if nan:
        cols["ux"][rng.integers(0, N, 50)] = np.nan
    return cols


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("arrow") / "p.motes"
    cols = particles()
    motes.write(path, cols, sync=False)
    return str(path), cols, pa.table(cols)


def by_id(table) -> dict:
    order = np.argsort(table.column("id").to_numpy())
    return {name: table.column(name).to_numpy()[order] for name in table.column_names}


def same_rows(got, want):
    assert got.num_rows == want.num_rows
    g, w = by_id(got), by_id(want)
    for name in w:
        assert g[name].tobytes() == w[name].tobytes(), name


def random_filters(cols, rng):
    f = pads.field
    x0, y0, z0 = (float(rng.uniform(cols[a].min(), cols[a].max())) for a in "xyz")
    e_t = float(np.quantile(cols["energy"], 1 - 10 ** rng.uniform(-3, -1)))
    u_t = float(np.quantile(cols["ux"], rng.uniform(0.0, 1.0)))
    v = np.float32(cols["x"][rng.integers(N)])  # a stored value: where float32 and double differ
    return [
        (f("x") >= x0) & (f("x") <= x0 + 20) & (f("y") >= y0) & (f("y") <= y0 + 15) & (f("z") > z0 - 10),
        f("energy") > e_t,
        f("energy") >= pa.scalar(np.float32(e_t)),
        f("x") == pa.scalar(v),
        f("x") < pa.scalar(v),
        ~(f("ux") > u_t) | (f("q") == 1),
        f("q").isin([-1.0, 3.0]),
        (f("id") > (1 << 53) - 50) & (f("w") < 0.5),  # integers beyond 2**53, exact
        (f("x") > x0) & (pc.abs(f("ux")) > abs(u_t)),  # half pushed, half left to pyarrow
        f("x") * 2 > 2 * x0,  # nothing pushed
        (f("energy") > e_t) & (f("energy") < e_t),  # empty
    ]


def test_arrow_dataset_answers_as_pyarrow(data):
    path, cols, table = data
    d = motes.arrow.dataset(path)
    assert d.schema.names == list(cols) and d.schema.field("id").type == pa.int64()
    rng = np.random.default_rng(11)
    for _ in range(4):
        for flt in random_filters(cols, rng):
            want = table.filter(flt)
            same_rows(d.to_table(filter=flt), want)
            got = d.to_table(columns=["id", "energy"], filter=flt)
            assert got.column_names == ["id", "energy"]
            same_rows(got, want.select(["id", "energy"]))
            assert d.count_rows(filter=flt) == want.num_rows
            assert sum(b.num_rows for b in d.to_batches(columns=["id"], filter=flt, batch_size=777)) == want.num_rows


def test_arrow_filters_are_pushed_where_exact(data):
    path, cols, _ = data
    d = motes.arrow.dataset(path)
    f = pads.field
    box = (f("x") >= 50) & (f("x") <= 60) & (f("y") < 40)
    s = d.scanner(columns=["x"], filter=box)
    assert s.where == "(x >= 50) and (x <= 60) and (y < 40)" and s.residual is None
    t = s.to_table()
    assert s.counters["parts_read"] == 1 and s.counters["nodes_pruned"] > 0
    assert t.num_rows == int(((cols["x"] >= 50) & (cols["x"] <= 60) & (cols["y"] < 40)).sum())
    half = d.scanner(filter=(f("x") > 50) & (pc.abs(f("ux")) > 0.1))
    assert half.where == "(x > 50)" and half.residual is not None
    assert d.scanner(filter=f("x") * 2 > 3).where is None
    # pyarrow compares these ids with 1.5 as float32s and refuses ids past 2**24: the term is
    # pushed, and pyarrow checks (and refuses) the rows motes returns, as it refuses the table.
    ids = d.scanner(filter=f("id") > 1.5)
    assert ids.where == "(id > 1.5)" and ids.residual is not None
    for run in (ids.to_table, lambda: pa.table(cols).filter(f("id") > 1.5)):
        with pytest.raises(pa.ArrowInvalid, match="not in range"):
            run()
    assert pushdown.arrow_filter(f("id") > float(1 << 60), {"id": (np.dtype(np.int64), False)}) == \
        ("(id > 1.152921504606847e+18)", False)
    assert pushdown.arrow_filter(f("x") > pa.scalar(np.float32(0.1)), {"x": (np.dtype(np.float32), False)}) == \
        ("(x > 0.10000000149011612)", True)


def test_arrow_head_fragments_and_stream(data):
    path, cols, table = data
    d = motes.arrow.dataset(path)
    assert d.head(10, columns=["x"]).num_rows == 10
    frags = list(d.get_fragments())
    assert len(frags) == 1 and frags[0].count == N
    assert frags[0].count_rows(filter=pads.field("q") == 1) == int((cols["q"] == 1).sum())
    assert list(d.get_fragments(filter=pads.field("x") > 1e9)) == []  # pruned from the index alone
    assert pa.table(d).num_rows == N  # the Arrow stream protocol: every row
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        d.to_table(columns=["nope"])


def test_arrow_pushes_is_in_and_comparisons_with_pyarrows_semantics(tmp_path):
    """pyarrow's is_in tells 0.0 from -0.0, matches NaN and casts its set to the column's type
    (float32(0.1) on a float32 column, inf for 1e300); its comparisons are IEEE. motes pushes
    each as pyarrow decides it (tests/python/test_pushdown_random.py tries thousands)."""
    e = np.array([-0.0, 0.0, np.float32(0.1), 0.5, np.nan, 1.0, np.inf, -2.5], np.float32)
    w = np.array([-0.0, 0.0, 0.1, float(np.float32(0.1)), np.nan, 1.0, np.inf, 2.0**53], np.float64)
    cols = {"x": np.arange(8, dtype=np.float32), "y": np.zeros(8, np.float32), "z": np.zeros(8, np.float32),
            "e": e, "w": w, "id": np.array([0, 1, 2**53, 2**53 + 1, 2**63, 2**64 - 1, 7, 8], np.uint64),
            "row": np.arange(8, dtype=np.int32)}
    motes.write(tmp_path / "edge.motes", cols, sync=False)
    d, table, f = motes.arrow.dataset(tmp_path / "edge.motes"), pa.table(cols), pads.field
    for flt, where, rows in [
        (f("w").isin([0.0]), "(w == 0 and 1 / w > 0)", [1]),
        (f("e").isin([-0.0]), "(e == 0 and 1 / e < 0)", [0]),
        (f("e").isin([0.0, -0.0]), "(e == 0)", [0, 1]),
        (f("w") == 0.0, "(w == 0.0)", [0, 1]),
        (f("e").isin([0.1, 0.5]), "(e in (0.10000000149011612, 0.5))", [2, 3]),
        (f("e") == 0.1, "(e == 0.1)", []),
        (f("w").isin([np.nan, 1.0]), "(w in (1.0) or w != w)", [4, 5]),
        (f("e").isin([1e300]), "(e in (inf))", [6]),
        (f("w") != np.nan, "(w != nan)", list(range(8))),
        (f("id").isin(pa.array([2**64 - 1, 2**53 + 1], pa.uint64())),
         "(id in (9007199254740993, 18446744073709551615))", [3, 5]),
    ]:
        s = d.scanner(columns=["row"], filter=flt)
        assert (s.where, s.residual) == (where, None), str(flt)
        got = sorted(s.to_table().column("row").to_pylist())
        assert got == table.filter(flt).column("row").to_pylist() == rows, str(flt)
    # A filter pyarrow refuses whatever the rows is refused, though motes would select no row.
    for flt in (f("e") == 16777217, (f("w") == 2**53 + 1) & (f("row") < 0)):
        with pytest.raises(pa.ArrowInvalid):
            table.filter(flt)
        with pytest.raises(pa.ArrowInvalid):
            d.to_table(filter=flt)


@pytest.fixture(scope="module")
def con(data):
    path, cols, table = data
    c = duckdb.connect()
    src = motes.duckdb.register(c, "p", path)
    c.register("mem", table)
    return c, src


def test_duckdb_answers_as_duckdb_in_memory(con, data):
    c, src = con
    _, cols, _ = data
    rng = np.random.default_rng(3)
    for _ in range(6):
        x0, y0 = (float(rng.uniform(cols[a].min(), cols[a].max())) for a in "xy")
        e_t = float(np.quantile(cols["energy"], 0.999))
        for where in (f"x BETWEEN {x0} AND {x0 + 25} AND y < {y0}",
                      f"energy > {e_t}",
                      f"energy > {e_t} AND abs(uy) > 0.05",
                      f"NOT (x > {x0}) OR q IN (-1, 3)",
                      f"id > {(1 << 53) - 60} AND w < 0.3"):
            q = "SELECT count(*), min(id), max(id), avg(energy), min(x), max(w) FROM {} WHERE " + where
            assert c.sql(q.format("p")).fetchall() == c.sql(q.format("mem")).fetchall(), where


def test_duckdb_pushes_filters_and_projection(con, data):
    c, src = con
    _, cols, _ = data
    if not motes.duckdb.pushes_filters():
        pytest.skip("this DuckDB hands no filters to Arrow scan sources")
    plan = c.sql("EXPLAIN SELECT avg(ux) FROM p WHERE x BETWEEN 10 AND 30 AND abs(uy) > 0.1").fetchall()[0][1]
    scan = plan[plan.index("PYTHON_ARROW_SCAN"):]
    assert '"x" >= 10' in scan and '"x" <= 30' in scan and "abs" not in scan  # pushed, and not
    got = c.sql("SELECT count(*) FROM p WHERE x BETWEEN 10 AND 30 AND y < 20").fetchall()[0][0]
    assert got == int(((cols["x"] >= 10) & (cols["x"] <= 30) & (cols["y"] < 20)).sum())
    assert src.filters == ["((x >= 10.0) and (x <= 30.0))", "(y < 20.0)"]
    assert src.last["parts_read"] == 1 and src.last["nodes_pruned"] > 0


def test_duckdb_leaves_nan_columns_to_itself(tmp_path):
    """DuckDB orders NaN above every number where motes compares it false: a filter on a
    column holding NaN is DuckDB's, and the answers still agree."""
    cols = particles(seed=8, nan=True)
    path = tmp_path / "nan.motes"
    motes.write(path, cols, sync=False)
    c = duckdb.connect()
    src = motes.duckdb.register(c, "p", str(path))
    c.register("mem", pa.table(cols))
    for where in ("ux > 0.1", "NOT (ux < 0.2)", "ux != 0", "x > 50 AND ux > 0"):
        q = "SELECT count(*), min(id), max(id) FROM {} WHERE " + where
        assert c.sql(q.format("p")).fetchall() == c.sql(q.format("mem")).fetchall(), where
    if motes.duckdb.pushes_filters():
        c.sql("SELECT count(*) FROM p WHERE ux > 0.1 AND x > 50").fetchall()
        assert src.filters == ["(x > 50.0)"]


def test_polars_scans_the_arrow_dataset_with_its_filter_pushed(data, monkeypatch):
    pl = pytest.importorskip("polars")
    path, cols, table = data
    d = motes.arrow.dataset(path)
    scans = []
    real = motes.arrow.Dataset.scanner

    def spy(self, *args, **kwargs):
        s = real(self, *args, **kwargs)
        scans.append(s)
        return s

    monkeypatch.setattr(motes.arrow.Dataset, "scanner", spy)
    got = (pl.scan_pyarrow_dataset(d).filter((pl.col("energy") > 1.3) & (pl.col("x") < 100))
           .select(pl.len(), pl.col("id").min().alias("lo"), pl.col("id").max().alias("hi")).collect())
    m = (cols["energy"] > np.float32(1.3)) & (cols["x"] < 100)
    assert got.row(0) == (int(m.sum()), int(cols["id"][m].min()), int(cols["id"][m].max()))
    assert scans and scans[-1].where is not None and "energy >" in scans[-1].where and "x < 100" in scans[-1].where


def test_duckdb_steps_table_has_a_step_column_and_reads_only_the_steps_asked(tmp_path):
    path = tmp_path / "series.motes"
    steps = {}
    with motes.Writer(path, sync=False) as w:
        for k, s in enumerate((0, 10, 20)):
            cols = particles(seed=20 + k)
            w.write_step(s, cols, time=0.1 * k)
            steps[s] = cols
    mem = pa.concat_tables([pa.table({"step": np.full(N, s, np.int64), **cols}) for s, cols in steps.items()])
    c = duckdb.connect()
    src = motes.duckdb.register(c, "series", str(path), steps="all")
    c.register("mem", mem)
    assert c.sql("SELECT count(*) FROM series").fetchall() == [(3 * N,)]
    for where in ("step >= 10 AND energy > 3", "step IN (0, 20) AND x BETWEEN 20 AND 60", "x < 30 OR step = 10",
                  "NOT (step = 10) AND y > 50"):
        q = "SELECT step, count(*), min(id), max(energy) FROM {} WHERE " + where + " GROUP BY step ORDER BY step"
        assert c.sql(q.format("series")).fetchall() == c.sql(q.format("mem")).fetchall(), where
    if motes.duckdb.pushes_filters():
        c.sql("SELECT count(*) FROM series WHERE step >= 10 AND energy > 3").fetchall()
        assert src.steps_read == [10, 20] and src.filters == ["(energy > 3.0)"]
        assert src.last["parts_read"] == 2
    with pytest.raises(motes.UsageError, match="either step= or steps="):
        motes.duckdb.register(c, "bad", str(path), step=0, steps="all")


def test_duckdb_steps_table_refuses_a_stored_step_column(tmp_path):
    """A stored column named step would be hidden by the table's step column: register(steps=)
    says so (as ds.query(steps=) does), and one step registers with its own step column."""
    path = tmp_path / "stepcol.motes"
    with motes.Writer(path, sync=False) as w:
        for s in (0, 10):
            cols = particles(seed=30 + s)
            cols["step"] = np.full(N, 7 + s, np.int64)
            w.write_step(s, cols)
    c = duckdb.connect()
    with pytest.raises(motes.UsageError, match="column 'step' would be hidden by the step column"):
        motes.duckdb.register(c, "series", str(path), steps="all")
    with pytest.raises(motes.UsageError, match="column 'step' would be hidden by the step column"):
        motes.open(path).query(steps="all")
    motes.duckdb.register(c, "one", str(path), step=10)
    assert c.sql("SELECT min(step), count(*) FROM one WHERE step = 17").fetchall() == [(17, N)]
