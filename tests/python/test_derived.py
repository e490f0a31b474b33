"""Derived quantities (format 2.4): named expressions over the columns that the writer indexes
with a tail (and its cover) and summarises without storing their values. A query testing the
same expression against a constant in its tail is answered through that index and equals
numpy's float64 evaluation of the expression, row for row and bit for bit; every other query
of the expression answers as it did without the index."""
import json

import numpy as np
import pytest

import motes
from motes.cli import main
from tail_util import by_file_order, cold_equals_hot
from format_util import written_version

N = 50_000
VMAG = "sqrt(vx**2 + vy**2 + vz**2)"


def columns(seed, n=N):
    rng = np.random.default_rng(seed)
    vx = rng.standard_normal(n).astype(np.float32)
    vx[rng.choice(n, 20, replace=False)] = np.nan  # NaN is in no tail and passes no test
    return {
        "x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
        "z": rng.random(n, dtype=np.float32),
        "vx": vx, "vy": rng.standard_normal(n).astype(np.float32), "vz": rng.standard_normal(n).astype(np.float32),
        "m": rng.lognormal(0, 1, n),                           # float64
        "k": rng.integers(-50, 50, n).astype(np.int32),       # ties
        "id": rng.permutation(n).astype(np.int64),
    }


def f64(cols, name):
    return cols[name].astype(np.float64)


# The expressions, and numpy's float64 evaluation of each (what the query language computes).
EXPRESSIONS = {
    "vmag": (VMAG, lambda c: np.sqrt(f64(c, "vx") ** 2 + f64(c, "vy") ** 2 + f64(c, "vz") ** 2)),
    "ek": ("0.5 * m * (vx**2 + vy**2)", lambda c: 0.5 * f64(c, "m") * (f64(c, "vx") ** 2 + f64(c, "vy") ** 2)),
    "km": ("k * 3 - m", lambda c: f64(c, "k") * 3 - f64(c, "m")),
}


def lit(v):
    return repr(float(v))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    cols = columns(3)
    base = tmp_path_factory.mktemp("derived")
    derived = {name: text for name, (text, _) in EXPRESSIONS.items()}
    motes.write(base / "derived.motes", cols, sync=False, derived=derived)
    motes.write(base / "plain.motes", cols, sync=False)
    return cols, motes.open(base / "derived.motes"), motes.open(base / "plain.motes")


def test_the_writer_records_each_quantity_with_its_statistics(written):
    cols, ds, plain = written
    f = ds.file(0)
    assert f.version == written_version(f, 4) and plain.file(0).version == written_version(plain.file(0), 3)
    assert set(f.derived) == set(EXPRESSIONS) and plain.file(0).derived == {}
    for name, (text, oracle) in EXPRESSIONS.items():
        d = f.derived[name]
        v = oracle(cols)
        assert d["nan_count"] == int(np.isnan(v).sum())
        assert d["min"] == np.nanmin(v) and d["max"] == np.nanmax(v)
        assert d["expression"].replace("(", "").replace(")", "").replace(" ", "") == \
            text.replace("(", "").replace(")", "").replace(" ", "")  # printed in full
        tail = d["tail"]
        assert tail["low_count"] > 0 and tail["high_count"] > 0
        assert tail["cover"]["columns"] == list(cols)  # every column stored exactly
    assert set(f.tail_indexes) == {"vx", "vy", "vz", "m", "k"}  # the columns' own, unchanged
    ds.verify()


def thresholds(v):
    """Tests of a derived quantity's values `v` in its tails (inside the cover, past it) and
    in its middle (no index: the tree and the evaluator)."""
    s = np.sort(v[~np.isnan(v)])
    out = []
    for rank in (0, 7, 60, 220):
        out += [(">", s[-rank - 1]), (">=", s[-rank - 1]), ("<", s[rank]), ("<=", s[rank])]
    out += [("==", s[-3]), ("==", s[2]), (">", s[len(s) // 2]), ("<", s[len(s) // 3])]
    return out


OPS = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal, "==": np.equal}
FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "==": "=="}


def test_tests_of_the_expression_equal_numpy_bit_for_bit(written):
    cols, ds, plain = written
    through_index = 0
    for name, (text, oracle) in EXPRESSIONS.items():
        v = oracle(cols)
        for op, c in thresholds(v):
            mask = OPS[op](v, c)
            for where in (f"{text} {op} {lit(c)}", f"{lit(c)} {FLIP[op]} {text}"):
                t = ds.query(where)
                assert len(t) == int(mask.sum()), where
                rows = by_file_order(t, cols, mask)
                for col in cols:
                    assert np.array_equal(np.asarray(t[col]).view(np.uint8), cols[col][rows].view(np.uint8)), (where, col)
                assert np.array_equal(np.asarray(plain.query(where)["id"]), np.asarray(t["id"])), where
                through_index += t.counters["tail_index_parts"]
    assert through_index >= 3 * 2 * 12  # every tail threshold of every quantity, both spellings


def test_the_tail_is_used_for_the_same_expression_only(written):
    cols, ds, plain = written
    v = EXPRESSIONS["vmag"][1](cols)
    c = lit(np.sort(v[~np.isnan(v)])[-30])
    for where in (f"sqrt(vx ** 2+vy**2 + vz**2) >= {c}", f"sqrt((vx**2 + vy**2) + vz**2) >= {c}"):  # printed alike
        t = ds.query(where)
        assert t.counters["tail_index_parts"] == 1 and t.counters["covered_parts"] == 1 and len(t) == 30
    for where in (f"sqrt(vx**2 + (vy**2 + vz**2)) >= {c}", f"sqrt(vy**2 + vx**2 + vz**2) >= {c}"):  # other trees
        t = ds.query(where)
        assert t.counters["tail_index_parts"] == 0
        assert abs(len(t) - 30) <= 1  # another summation order may round the edge differently
    # Conjuncts: the tail names the candidates, the rest is tested.
    where = f"{VMAG} >= {c} and x < 0.5"
    t = ds.query(where)
    mask = (v >= float(c)) & (cols["x"] < 0.5)
    assert t.counters["tail_index_parts"] == 1 and t.counters["covered_parts"] == 0
    by_file_order(t, cols, mask)
    box = ds.query(f"{VMAG} >= {c}", box=((0, 0, 0), (0.5, 1, 1)))
    by_file_order(box, cols, (v >= float(c)) & (cols["x"] >= 0) & (cols["x"] <= 0.5))


def test_cold_and_in_parts(written, tmp_path):
    cols, ds, plain = written
    v = EXPRESSIONS["ek"][1](cols)
    where = f"0.5 * m * (vx**2 + vy**2) >= {lit(np.sort(v[~np.isnan(v)])[-50])}"
    one_file = cold_equals_hot(ds, where, cols)
    cut = np.array_split(np.arange(N), 3)
    with motes.Writer(tmp_path / "parts.motes", sync=False, derived={"ek": EXPRESSIONS["ek"][0]}) as w:
        w.write_step_chunks(0, {"particles": [{k: a[c] for k, a in cols.items()} for c in cut]})
    parts = motes.open(tmp_path / "parts.motes")
    t = parts.query(where)
    assert t.counters["tail_index_parts"] >= 1
    assert np.array_equal(np.sort(np.asarray(t["id"])), np.sort(np.asarray(one_file["id"])))
    parts.verify()


def test_bad_declarations_are_named(tmp_path):
    cols = columns(1, 2_000)
    cols["b"] = np.random.default_rng(0).random(2_000)
    for derived, message in [
        ({"vmag": "sqrt(vx**2 + nope)"}, "nope"),
        ({"vx": "vy * 2"}, "name of a column"),
        ({"and": "vy * 2"}, "reserved word"),
        ({"2v": "vy * 2"}, "not an identifier"),
        ({"c": "vx > 1"}, "condition|numeric"),
        ({"c": "b * 2"}, "error bound"),
        ({"c": "vx +"}, "position"),
        ("vx * 2", "must map names to expressions"),
    ]:
        with pytest.raises(motes.UsageError, match=message):
            motes.write(tmp_path / "bad.motes", cols, sync=False, derived=derived, error_bounds={"b": 1e-3})
    assert not (tmp_path / "bad.motes" / "steps").exists() or not any((tmp_path / "bad.motes" / "steps").iterdir())
    # Lossless files only, as every tail index: compression="none" stores none.
    motes.write(tmp_path / "raw.motes", cols, sync=False, derived={"c": "vx * 2"}, compression="none")
    assert motes.open(tmp_path / "raw.motes").file(0).derived == {}


def test_motes_info_shows_each_quantity_over_the_parts(tmp_path, capsys):
    cols = columns(6, 9_000)
    cut = np.array_split(np.arange(9_000), 3)
    with motes.Writer(tmp_path / "parts.motes", sync=False, derived={"vmag": VMAG}) as w:
        w.write_step_chunks(0, {"particles": [{k: a[c] for k, a in cols.items()} for c in cut]})
    v = EXPRESSIONS["vmag"][1](cols)
    capsys.readouterr()
    assert main(["info", str(tmp_path / "parts.motes"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["files"][0]["derived"]["vmag"]
    assert d["min"] == np.nanmin(v) and d["max"] == np.nanmax(v) and d["nan_count"] == int(np.isnan(v).sum())
    assert main(["info", str(tmp_path / "parts.motes")]) == 0
    assert "derived  vmag = sqrt(" in capsys.readouterr().out


def test_a_quantity_is_named_in_queries_and_analyses(written):
    """`vmag > t` is `sqrt(vx**2 + vy**2 + vz**2) > t`: answered through the same tail, with the
    same rows; histograms and counts take the name too."""
    cols, ds, plain = written
    v = EXPRESSIONS["vmag"][1](cols)
    c = lit(np.sort(v[~np.isnan(v)])[-40])
    by_name, by_text = ds.query(f"vmag >= {c}"), ds.query(f"{VMAG} >= {c}")
    assert len(by_name) == 40 and by_name.counters["covered_parts"] == 1
    for col in cols:
        assert np.array_equal(np.asarray(by_name[col]), np.asarray(by_text[col])), col
    assert ds.count(f"vmag >= {c} and x < 0.5") == int(((v >= float(c)) & (cols["x"] < 0.5)).sum())
    counts, edges = ds.histogram("ek", bins=16)
    want, _ = np.histogram(EXPRESSIONS["ek"][1](cols), bins=edges)
    assert np.array_equal(counts, want)
    with pytest.raises(motes.UsageError, match="unknown column 'vmag'"):
        plain.query("vmag > 1")  # a file without the quantity
    with pytest.raises(motes.UsageError, match=r"unknown column 'vmeg'.*derived quantities: (\w+, ){2}\w+\)"):
        ds.query("vmeg > 1")  # the file's quantities are named with its columns
