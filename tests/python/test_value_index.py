"""Value indexes in queries: `x in (...)` in the expression language (answered through the
id index when the column has one), and the tail index of particle format 2.2 (a threshold
selecting a tail answered from the index). Every answer equals numpy on the same arrays,
whatever the plan; the plan the counters report is the one expected."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from format_util import written_version

N = 40_000


def columns(rng, n=N, id_dtype=np.int64):
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "ux": rng.standard_normal(n).astype(np.float32),
            "e": rng.exponential(size=n),  # float64, one long tail
            "k": rng.integers(-5, 6, n).astype(np.int32),  # few distinct values: ties
            "w": np.where(rng.random(n) < 0.5, 0.0, 1.0).astype(np.float32),  # two values only
            "id": (rng.permutation(n) + (2**60 if np.dtype(id_dtype).kind == "u" else -1000)).astype(id_dtype),
            "row": np.arange(n, dtype=np.int64)}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(11)
    cols = columns(rng)
    path = tmp_path_factory.mktemp("vi") / "run.motes"
    motes.write(path, cols, sync=False)
    return cols, motes.open(path)


def rows_of(table):
    return np.sort(np.asarray(table["row"]))


def numpy_rows(cols, mask):
    return np.sort(cols["row"][mask])


# -- the expression language ------------------------------------------------------------------

@pytest.mark.parametrize("text, shown", [
    ("id in (3, 1, 2, 3)", "(id in (1, 2, 3))"),
    ("id in [1152921504606846977, -9223372036854775808]", "(id in (-9223372036854775808, 1152921504606846977))"),
    ("ux not in (0.5, -inf,)", "not ((ux in (-inf, 0.5)))"),
    ("x + 1 in (2) and k in ()", "(((x + 1) in (2)) and (k in ()))"),
])
def test_in_lists_parse_exactly(text, shown):
    assert motes.parse_expression(text) == shown
    assert motes.parse_expression(shown) == shown  # the text reads back the same


@pytest.mark.parametrize("text, message", [
    ("id in 3", "expected '(' or '['"),
    ("id in (1, x)", "expected a number in the list"),
    ("id in (1 2)", "expected ',' or ')'"),
    ("id in [1, 2)", "expected ',' or ']'"),
    ("(x < 1) in (1)", "'in' needs numbers"),
    ("x[1] > 0", "unexpected '['"),
    ("[1] > 0", "brackets hold the list"),
    ("in > 0", "expected a value, got 'in'"),
])
def test_bad_in_lists_name_the_problem(text, message):
    with pytest.raises(motes.UsageError, match=re.escape(message)):
        motes.parse_expression(text)


def test_isin_writes_exact_lists():
    ids = np.array([2**63 + 5, 7], dtype=np.uint64)
    assert motes.isin("id", ids) == "id in (9223372036854775813, 7)"
    assert motes.parse_expression(motes.isin("ux", [0.1, -2.5])) == "(ux in (-2.5, 0.1))"
    with pytest.raises(motes.UsageError, match="NaN"):
        motes.isin("ux", [np.nan])


# -- `in` through the id index and without it --------------------------------------------------

@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), dtype=st.sampled_from([np.int64, np.uint64, np.int32, np.uint32]),
       index=st.booleans(), extra=st.sampled_from(["", " and ux > 0", " and not (x < 0.3)"]))
def test_in_equals_numpy_isin(tmp_path_factory, seed, dtype, index, extra):
    rng = np.random.default_rng(seed)
    n = 6000
    cols = columns(rng, n, dtype)
    cols["id"][:3] = cols["id"][3]  # an id held four times: a query returns every holder
    path = tmp_path_factory.mktemp("in") / "run.motes"
    motes.write(path, cols, sync=False, ids=index)
    ds = motes.open(path)
    asked = np.concatenate([rng.choice(cols["id"], 40), cols["id"][:1]])
    absent = [int(cols["id"].max()) + 1, int(cols["id"].min()) - 1, 2**64 - 1, -(2**63)]  # ids no particle holds
    where = motes.isin("id", asked)[:-1] + ", " + ", ".join(map(str, absent)) + ")" + extra
    expect = np.isin(cols["id"], asked)
    if "ux" in extra:
        expect &= cols["ux"] > 0
    if "x <" in extra:
        expect &= ~(cols["x"] < np.float32(0.3))
    t = ds.query(where)
    assert np.array_equal(rows_of(t), numpy_rows(cols, expect))
    assert ds.count(where) == int(expect.sum())
    assert t.counters["id_index_parts"] == (1 if index else 0)


def test_in_on_values_and_expressions(data):
    cols, ds = data
    for where, mask in [("k in (-5, 5, 7)", np.isin(cols["k"], [-5, 5])),
                        ("k not in (0, 1)", ~np.isin(cols["k"], [0, 1])),
                        ("k * 2 in (4, -10)", np.isin(cols["k"] * 2, [4, -10])),
                        (motes.isin("ux", cols["ux"][:5]), np.isin(cols["ux"], cols["ux"][:5])),
                        ("w in (1)", cols["w"] == 1), ("k in (0.5)", np.zeros(N, bool)), ("k in ()", np.zeros(N, bool))]:
        assert np.array_equal(rows_of(ds.query(where)), numpy_rows(cols, mask)), where


# -- the tail index -----------------------------------------------------------------------------

def test_writer_builds_tail_indexes(data, tmp_path):
    cols, ds = data
    f = ds.file(0)
    assert f.version == written_version(f, 3)  # covering tails (test_tail_cover.py)
    tails = f.tail_indexes
    assert set(tails) == {"ux", "e", "k", "row"}  # not x, y, z, the id column, nor w (two values)
    for name in ("ux", "e", "row"):  # about 0.5% each side; k's ties at -5 and 5 are held whole
        assert 0.006 * N < tails[name]["low_count"] + tails[name]["high_count"] < 0.014 * N, name
    assert tails["k"]["low_count"] == np.sum(cols["k"] == -5) and tails["k"]["high_count"] == np.sum(cols["k"] == 5)
    assert f.sizes["tail_index_bytes"] < 0.02 * f.sizes["file_bytes"] * 2  # small files: fixed costs weigh more
    motes.write(tmp_path / "plain.motes", cols, sync=False, covering=False)
    plain = motes.open(tmp_path / "plain.motes").file(0)
    assert plain.version == written_version(plain, 2)
    motes.write(tmp_path / "none.motes", cols, sync=False, tails=False)
    none = motes.open(tmp_path / "none.motes").file(0)
    assert none.version == written_version(none, 1)
    assert motes.open(tmp_path / "none.motes").file(0).tail_indexes == {}
    motes.write(tmp_path / "some.motes", cols, sync=False, tails=["e"], ids=False)
    assert set(motes.open(tmp_path / "some.motes").file(0).tail_indexes) == {"e"}
    motes.write(tmp_path / "wide.motes", cols, sync=False, tails=0.05)
    assert motes.open(tmp_path / "wide.motes").file(0).tail_indexes["ux"]["high_count"] > 0.03 * N
    for bad, message in [(0.5, "tail fraction"), (["nope"], "'nope' is not among the columns"), ("e", "list of column names")]:
        with pytest.raises(motes.UsageError, match=message):
            motes.write(tmp_path / "bad.motes", cols, sync=False, tails=bad)


FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}  # t OP' x  ==  x OP t
OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(column=st.sampled_from(["ux", "e", "k"]), op=st.sampled_from(list(OPS)), q=st.floats(0, 1),
       flipped=st.booleans(), extra=st.sampled_from(["", " and x < 0.5"]))
def test_tail_thresholds_equal_numpy(data, column, op, q, flipped, extra):
    cols, ds = data
    v = cols[column]
    # Thresholds in the tails mostly, exact values (ties), and between values.
    t = float(np.quantile(v, [q * 0.01, 1 - q * 0.01, q][int(q * 1000) % 3]))
    if int(q * 7919) % 2:
        t = float(v[int(q * (N - 1))])
    text = f"{t!r} {FLIP[op]} {column}" if flipped else f"{column} {op} {t!r}"
    mask = OPS[op](v.astype(np.float64), t)
    if extra:
        mask &= cols["x"] < np.float32(0.5)
    table = ds.query(text + extra)
    assert np.array_equal(rows_of(table), numpy_rows(cols, mask)), text
    assert ds.count(text + extra) == int(mask.sum())


def test_a_tail_threshold_is_planned_through_the_index(data):
    cols, ds = data
    t = float(np.quantile(cols["ux"], 0.999))
    table = ds.query(f"ux > {t!r}")
    c = table.counters
    assert c["tail_index_parts"] == 1 and c["index_rows"] == len(table) and c["points_tested"] == 0
    assert np.array_equal(rows_of(table), numpy_rows(cols, cols["ux"] > t))
    # Past the tail, or a test the index cannot answer: the tree or the scan, same answers.
    for where, mask in [("ux > 0", cols["ux"] > 0), (f"ux != {t!r}", cols["ux"] != np.float32(t))]:
        table = ds.query(where)
        assert table.counters["tail_index_parts"] == 0
        assert np.array_equal(rows_of(table), numpy_rows(cols, mask))


def test_tail_queries_at_lower_quality_and_fractions(data):
    cols, ds = data
    t = float(np.quantile(cols["e"], 0.998))
    full = set(rows_of(ds.query(f"e > {t!r}")))
    for quality in (0.3, 0.7):
        part = ds.query(f"e > {t!r}", quality=quality)
        assert set(rows_of(part)) <= full
        assert set(rows_of(part)) == set(rows_of(ds.query(f"e > {t!r} and e == e", quality=quality)))
    assert set(rows_of(ds.query(f"e > {t!r}", fraction=0.5))) <= full


def test_heavy_ties_and_constant_columns(tmp_path):
    rng = np.random.default_rng(3)
    n = 30_000
    cols = {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n),
            "zeros": np.where(rng.random(n) < 0.4, 0.0, rng.random(n)),  # 40% at the minimum
            "c": np.full(n, 7, np.int16), "u8": rng.integers(0, 256, n).astype(np.uint8),
            "big": np.where(rng.random(n) < 0.3, np.iinfo(np.int64).max, rng.integers(0, 10, n)).astype(np.int64),
            "withnan": np.where(rng.random(n) < 0.1, np.nan, rng.standard_normal(n)), "row": np.arange(n)}
    motes.write(tmp_path / "t.motes", cols, sync=False)
    ds = motes.open(tmp_path / "t.motes")
    assert "c" not in ds.file(0).tail_indexes
    for where, mask in [("zeros <= 0", cols["zeros"] <= 0), ("zeros > 0.999", cols["zeros"] > 0.999),
                        ("u8 >= 255", cols["u8"] >= 255), ("u8 < 1", cols["u8"] < 1),
                        ("big in (9223372036854775807)", cols["big"] == np.iinfo(np.int64).max),  # exact: an in-list
                        ("big >= 9.2e18", cols["big"] >= 9.2e18),
                        ("big < 1", cols["big"] < 1), ("withnan > 2.5", cols["withnan"] > 2.5), ("withnan < -2.5", cols["withnan"] < -2.5)]:
        assert np.array_equal(rows_of(ds.query(where)), numpy_rows(cols, mask)), where
    ds.verify()


def test_verify_checks_the_tail_index(tmp_path):
    rng = np.random.default_rng(4)
    cols = columns(rng, 20_000)
    motes.write(tmp_path / "v.motes", cols, sync=False)
    ds = motes.open(tmp_path / "v.motes")
    ds.verify()
    # Damage a byte inside one tail index's values: verify names it.
    import glob
    import struct
    path = glob.glob(str(tmp_path / "v.motes" / "steps" / "*" / "*.mpf"))[0]
    data = bytearray(open(path, "rb").read())
    table_at, count = struct.unpack_from("<QI", data, 32)
    entries = [struct.unpack_from("<HBBIQQQ", data, table_at + 32 * i) for i in range(count)]
    tail = [e for e in entries if e[0] == 13]  # kind, storage, _, column, offset, length, checksum
    assert tail
    _, _, _, _, offset, length, _ = tail[0]
    data[offset + length // 2] ^= 0x40
    open(path, "wb").write(bytes(data))
    with pytest.raises(motes.FormatError, match="tail index"):
        motes.open(tmp_path / "v.motes").verify()


def test_value_indexes_in_part_files(tmp_path):
    """Each part file of a step has its own id and tail indexes; a query over the parts
    equals numpy over the whole step."""
    rng = np.random.default_rng(8)
    cols = columns(rng, 30_000)
    cut = np.array_split(rng.permutation(30_000), 3)
    with motes.Writer(tmp_path / "p.motes", sync=False) as w:
        w.write_step_chunks(0, {"particles": [{k: v[c] for k, v in cols.items()} for c in cut]})
    ds = motes.open(tmp_path / "p.motes")
    t = float(np.quantile(cols["e"], 0.999))
    ids = rng.choice(cols["id"], 50, replace=False)
    for where, mask, counter in [(f"e > {t!r}", cols["e"] > t, "tail_index_parts"),
                                 (motes.isin("id", ids), np.isin(cols["id"], ids), "id_index_parts")]:
        table = ds.query(where)
        assert np.array_equal(rows_of(table), numpy_rows(cols, mask)), where
        assert table.counters[counter] == table.counters["parts_read"] == 3


def test_tail_of_an_error_bounded_column_holds_the_stored_values(tmp_path):
    """A column stored within an error bound gets a tail index of its stored values: a
    threshold query equals numpy on the values read back."""
    rng = np.random.default_rng(9)
    cols = columns(rng, 20_000)
    motes.write(tmp_path / "lossy.motes", cols, sync=False, error_bounds={"e": 1e-3})
    ds = motes.open(tmp_path / "lossy.motes")
    stored = ds.query(columns=["e", "row"])
    t = float(np.quantile(stored["e"], 0.999))
    table = ds.query(f"e > {t!r}")
    assert table.counters["tail_index_parts"] == 1
    assert np.array_equal(rows_of(table), np.sort(stored["row"][stored["e"] > t]))
    ds.verify()
