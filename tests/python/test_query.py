"""Queries equal a numpy brute force on the same data; progressive reads partition the data."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from conftest import ids_of

OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}


def brute(data, fn):
    cols = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in data.items()}
    return np.sort(data["id"][fn(cols)])


@st.composite
def predicates(draw, data, depth=0):
    """A random expression string and the numpy function computing it."""
    names = [k for k in data if k != "id"]
    kind = draw(st.sampled_from(["cmp", "cmp", "chain", "arith"] + (["and", "or", "not"] if depth < 3 else [])))
    if kind in ("cmp", "chain", "arith"):
        col = draw(st.sampled_from(names))
        v = data[col]
        q = draw(st.floats(0, 1))
        t = float(np.quantile(v, q)) if draw(st.booleans()) else float(v[draw(st.integers(0, len(v) - 1))])
        if kind == "cmp":
            op = draw(st.sampled_from(sorted(OPS)))
            if draw(st.booleans()):
                return f"{col} {op} {t!r}", lambda c, op=op, col=col, t=t: OPS[op](c[col], t)
            return f"{t!r} {op} {col}", lambda c, op=op, col=col, t=t: OPS[op](t, c[col])
        if kind == "chain":
            t2 = float(np.quantile(v, min(1.0, q + draw(st.floats(0, 0.3)))))
            return f"{t!r} <= {col} < {t2!r}", lambda c, col=col, t=t, t2=t2: (t <= c[col]) & (c[col] < t2)
        col2 = draw(st.sampled_from(names))
        t = float(np.quantile(data[col].astype(np.float64) ** 2 + data[col2].astype(np.float64), q))
        return (f"{col}**2 + {col2} > {t!r}",
                lambda c, col=col, col2=col2, t=t: c[col] ** 2 + c[col2] > t)
    if kind == "not":
        s, f = draw(predicates(data, depth + 1))
        return f"not ({s})", lambda c, f=f: ~f(c)
    (s1, f1), (s2, f2) = draw(predicates(data, depth + 1)), draw(predicates(data, depth + 1))
    if kind == "and":
        return f"({s1}) and ({s2})", lambda c, f1=f1, f2=f2: f1(c) & f2(c)
    return f"({s1}) or ({s2})", lambda c, f1=f1, f2=f2: f1(c) | f2(c)


@st.composite
def boxes(draw):
    lo = [draw(st.floats(-0.1, 1.0)) for _ in range(3)]
    hi = [l + draw(st.floats(0, 0.8)) for l in lo]
    return lo + hi


def in_box(c, b):
    return ((c["x"] >= b[0]) & (c["x"] <= b[3]) & (c["y"] >= b[1]) & (c["y"] <= b[4])
            & (c["z"] >= b[2]) & (c["z"] <= b[5]))


@pytest.mark.parametrize("which", ["uniform_ds", "clustered_ds", "wide_ds"])
def test_random_queries_equal_brute_force(which, request):
    data, ds = request.getfixturevalue(which)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(pred=predicates(data), box=st.one_of(st.none(), boxes()))
    def check(pred, box):
        text, fn = pred
        got = ids_of(ds.query(text, box=box, columns=["id"]))
        want = brute(data, (lambda c: fn(c) & in_box(c, box)) if box else fn)
        assert np.array_equal(got, want), text
        assert ds.count(text, box=box) == len(want)

    check()


def test_all_columns_round_trip_exactly(clustered_ds):
    data, ds = clustered_ds
    t = ds.query()
    order = np.argsort(t["id"])
    for name, values in data.items():
        assert t[name].dtype == values.dtype
        assert np.array_equal(t[name][order], values[np.argsort(data["id"])]), name


def test_column_selection_returns_only_those(uniform_ds):
    data, ds = uniform_ds
    t = ds.query("energy > 1", columns=["energy", "id"])
    assert list(t) == ["energy", "id"]
    assert np.all(t["energy"] > 1)
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        ds.query(columns=["nope"])


@pytest.mark.parametrize("where", [None, "energy > 0.2", "x < 100"])
def test_progressive_reads_union_to_full_set_without_duplicates(vpic_ds, where):
    data, ds = vpic_ds
    full = ids_of(ds.query(where, columns=["id"]))
    seen = []
    previous = 0
    for k in range(10):
        part = ds.query(where, quality=(k / 10, (k + 1) / 10), columns=["id"])["id"]
        seen.append(part)
        prefix = ds.count(where, quality=(k + 1) / 10)
        assert prefix >= previous  # grows monotonically
        previous = prefix
        assert prefix == sum(len(s) for s in seen)
    union = np.concatenate(seen)
    assert len(np.unique(union)) == len(union), "a particle came back twice"
    assert np.array_equal(np.sort(union), full)


def test_low_quality_is_a_spread_sample(vpic_ds):
    data, ds = vpic_ds
    prev = ds.query(quality=0.5, columns=["x", "y"])
    assert 0 < len(prev["x"]) < len(data["x"]) / 4
    # the preview covers the domain like the data does
    assert prev["x"].min() < np.quantile(data["x"], 0.05) and prev["x"].max() > np.quantile(data["x"], 0.95)
    assert ds.count(quality=0) == 0
    counts = [ds.count(quality=q / 10) for q in range(11)]
    assert counts == sorted(counts) and counts[-1] == len(data["x"])


def test_batches_cover_the_result(clustered_ds):
    data, ds = clustered_ds
    batches = list(ds.query_batches("energy > 0.01", columns=["id"], batch_size=1000))
    assert all(len(b["id"]) <= 1000 for b in batches)
    got = np.sort(np.concatenate([b["id"] for b in batches]))
    assert np.array_equal(got, ids_of(ds.query("energy > 0.01", columns=["id"])))


def test_pandas_and_arrow(uniform_ds):
    data, ds = uniform_ds
    t = ds.query("x < 0.1", columns=["x", "id"])
    df = t.to_pandas()
    assert list(df.columns) == ["x", "id"] and len(df) == len(t["x"])
    tbl = t.to_arrow()
    assert tbl.num_rows == len(t["x"]) and tbl.column_names == ["x", "id"]


def test_noise_attribute_is_pruned_by_quantile_index(vpic_ds, tmp_path):
    # The fixture's 60,000 particles in leaves of 64 leave no room in the index budget for
    # automatic quantile codes (tests/python/test_index_budget.py): asked for here.
    from conftest import SMALL

    data, _ = vpic_ds
    motes.write(tmp_path / "q.motes", data, index={"ux": "quantile"}, **SMALL)
    ds = motes.open(tmp_path / "q.motes")
    schema = {c.name: c.index for c in ds.schema()}
    assert schema["ux"] == "quantile" and schema["energy"] == "none"
    t = float(np.quantile(data["ux"], 0.999))
    sel = ds.select(f"ux > {t!r}")
    assert np.array_equal(np.sort(sel.gather("id", 0, sel.size)), brute(data, lambda c: c["ux"] > t))


def test_query_errors_are_clear(uniform_ds):
    data, ds = uniform_ds
    with pytest.raises(motes.UsageError, match="unknown column 'bogus'"):
        ds.query("bogus > 1")
    with pytest.raises(motes.UsageError, match="syntax error at position"):
        ds.query("x >> 1")
    with pytest.raises(motes.UsageError, match="quality"):
        ds.query(quality=1.5)
    with pytest.raises(motes.UsageError, match="box"):
        ds.query(box=[0, 0, 0, 1])
    with pytest.raises(motes.UsageError, match="no step 7"):
        ds.query(step=7)


def test_concurrent_queries_from_python_threads(clustered_ds):
    from concurrent.futures import ThreadPoolExecutor

    data, ds = clustered_ds
    wheres = ["energy > 0.5", "x < 0.3 and y > 0.2", "ux > 1.5", "mass > 1"] * 4
    want = [ds.count(w) for w in wheres]
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda w: len(ds.query(w, columns=["id"])), wheres))
    assert got == want


def test_queries_work_in_a_forked_child(clustered_ds):
    import multiprocessing as mp

    data, ds = clustered_ds
    want = ds.count("energy > 0.5")  # the parent's thread pool exists before the fork
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply(_count_in_child, (ds.path, "energy > 0.5"))
    assert got == want


def _count_in_child(path, where):
    return motes.open(path).count(where)


def test_result_arrays_own_their_memory(clustered_ds):
    """Results up to 1 MiB per column live in the slab of the decoded blocks: each array keeps
    its values, writeable, after the table, the dataset and later queries are gone."""
    import gc

    data, ds = clustered_ds
    where = "energy > 0.5"
    kept = [ds.query(where) for _ in range(3)]  # the slots of the first results are not reused
    arrays = {name: kept[0][name] for name in data}
    copies = {name: np.array(a, copy=True) for name, a in arrays.items()}
    for name, a in arrays.items():
        assert 0 < a.nbytes <= 1 << 20 and a.flags.writeable and a.flags.c_contiguous, name
    del kept
    for _ in range(3):
        ds.query(where)
        ds.query("x < 0.3")
    gc.collect()
    for name, a in arrays.items():
        assert np.array_equal(a, copies[name]), name
    arrays["energy"][:] = -1.0  # the array's own memory: no other result sees it
    assert np.all(ds.query(where)["energy"] > 0.5)
    order = np.argsort(arrays["id"])
    want = data["energy"] > 0.5
    assert np.array_equal(arrays["id"][order], np.sort(data["id"][want]))
