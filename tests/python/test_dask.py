"""motes.dask: a dask.dataframe per part file, pruned by the index, and distributed
histograms; every result compared with the serial Dataset calls on the same data, under
dask's default scheduler and under a distributed.LocalCluster. Also the pruning of parts
(Dataset.plan, the planner motes.dask and motes.mpi share) against a brute-force count per
part."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from needs import need

import motes

dask = need("dask")
dd = need("dask.dataframe")
distributed = need("distributed")

import motes.dask  # noqa: E402

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
PER_PART = 3000
SLABS = 4  # the parts of a parted step: slabs along x


def columns(rng, n, x0, x1, first_id):
    e = rng.exponential(1.0, n)
    e[rng.random(n) < 0.02] = np.nan  # a few NaN energies: pruning must keep them in mind
    return {"x": rng.uniform(x0, x1, n), "y": rng.random(n), "z": rng.random(n).astype(np.float32),
            "energy": e, "id": np.arange(first_id, first_id + n, dtype=np.uint64),
            "q": rng.integers(-3, 4, n).astype(np.int8)}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Steps 0 and 1 written in parallel parts (x slabs), step 2 one file; returns the path
    and, per step, the list of its parts' columns (the input)."""
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("dask") / "run.motes"
    written = {}
    with motes.Writer(path, **SMALL) as w:
        for step in (0, 1):
            chunks = [columns(rng, PER_PART + 500 * k, k / SLABS, (k + 1) / SLABS, 100_000 * step + 10_000 * k)
                      for k in range(SLABS)]
            w.write_step_chunks(step, {"e": chunks}, time=float(step))
            written[step] = chunks
        one = columns(rng, 5000, 0.0, 1.0, 900_000)
        w.write_step(2, {"e": one}, time=2.0)
        written[2] = [one]
    return path, written


@pytest.fixture(scope="module", params=["default", "local-cluster"])
def scheduler(request):
    """Dask's default scheduler, or a two-worker LocalCluster (threads, for a light test)."""
    if request.param == "default":
        yield None
        return
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def by_id(frame, keys=("id",)):
    return frame.sort_values(list(keys), kind="stable").reset_index(drop=True)


def serial(ds, steps, with_step, **query):
    import pandas as pd

    frames = []
    for s in steps:
        f = ds.query(step=s, **query).to_pandas()
        if with_step:
            f.insert(0, "step", np.full(len(f), s, dtype=np.int64))
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def same_frame(got, want, keys):
    got, want = by_id(got, keys), by_id(want, keys)
    assert list(got.columns) == list(want.columns)
    assert dict(got.dtypes) == dict(want.dtypes)
    assert len(got) == len(want)
    for c in got.columns:
        np.testing.assert_array_equal(got[c].to_numpy(), want[c].to_numpy(), err_msg=c)


QUERIES = [
    dict(),
    dict(where="energy > 1.5"),
    dict(where="x > 0.6 and energy < 2"),
    dict(box=(0.1, 0.2, 0.0, 0.45, 0.9, 1.0)),
    dict(where="not (x < 0.3) or q == -3", box=(0.0, 0.0, 0.0, 0.8, 1.0, 1.0)),
    dict(where="x**2 + y**2 < 0.2", quality=0.5),
]


@pytest.mark.parametrize("query", QUERIES)
def test_read_equals_query_over_steps(data, scheduler, query):
    path, _ = data
    ds = motes.open(path)
    df = motes.dask.read(path, steps=[0, 1, 2], **query)
    assert df.npartitions <= 2 * SLABS + 1
    assert list(df.columns) == ["step", "x", "y", "z", "energy", "id", "q"]
    assert df.divisions == (None,) * (df.npartitions + 1)
    got = df.compute()
    same_frame(got, serial(ds, [0, 1, 2], True, **query), ("step", "id"))


def test_meta_is_the_schema_and_columns(data, scheduler):
    path, _ = data
    ds = motes.open(path)
    df = motes.dask.read(path, columns=["id", "z", "q"], steps=1, where="energy > 0.5")
    assert list(df.columns) == ["id", "z", "q"]  # one step given as an index: no step column
    assert dict(df.dtypes) == {"id": np.dtype("u8"), "z": np.dtype("f4"), "q": np.dtype("i1")}
    assert df.npartitions == SLABS
    same_frame(df.compute(), serial(ds, [1], False, where="energy > 0.5", columns=["id", "z", "q"]), ("id",))
    every = motes.dask.read(path)  # steps=None: every step
    assert every.npartitions == 2 * SLABS + 1 and every.columns[0] == "step"
    assert sorted(every["step"].unique().compute()) == [0, 1, 2]


def test_column_projection_and_reductions(data, scheduler):
    path, written = data
    df = motes.dask.read(path, steps=[0, 1])
    # dask pushes the column selection into the reads
    got = df[["id", "energy"]].compute()
    assert list(got.columns) == ["id", "energy"] and len(got) == sum(len(c["id"]) for s in (0, 1) for c in written[s])
    want = np.nansum(np.concatenate([c["energy"] for s in (0, 1) for c in written[s]]))
    assert float(df["energy"].sum().compute()) == pytest.approx(want, rel=1e-12)
    assert len(df) == len(got)  # no column asked for at all
    per_step = df.groupby("step")["id"].count().compute().sort_index()
    assert per_step.to_dict() == {s: sum(len(c["id"]) for c in written[s]) for s in (0, 1)}


def test_pruning_leaves_out_parts_before_any_task(data, scheduler):
    path, _ = data
    ds = motes.open(path)
    # a box inside the second slab of the parted steps: one partition per parted step
    box = (0.3, 0.1, 0.1, 0.45, 0.9, 0.9)
    df = motes.dask.read(path, box=box, steps=[0, 1])
    assert df.npartitions == 2
    plan = ds.plan(box=box, steps=[0, 1])
    assert [(p.step, p.part) for p in plan.parts] == [(0, 1), (1, 1)] and plan.pruned == 2 * (SLABS - 1)
    same_frame(df.compute(), serial(ds, [0, 1], True, box=box), ("step", "id"))
    # `where` on positions and derived values prunes by the parts' column ranges
    for where, parts in [("x >= 0.76", 1), ("0.26 < x < 0.49", 1), ("2 * x - 1 > 0.05", 2), ("not (x < 0.5)", 2),
                         ("x > 0.9 or x < 0.1", 2), ("x > 2", 0)]:
        df = motes.dask.read(path, where=where, steps=0)
        assert df.npartitions == max(parts, 1), where
        assert len(ds.plan(where, step=0).parts) == parts, where
        same_frame(df.compute(), serial(ds, [0], False, where=where), ("id",))
    # nothing can match: an empty frame with the schema's dtypes
    empty = motes.dask.read(path, where="x > 2", steps=[0, 1])
    got = empty.compute()
    assert len(got) == 0 and dict(got.dtypes) == dict(empty.dtypes) and got.columns[0] == "step"


def test_nan_is_never_pruned_wrongly(data):
    """`not (energy < c)` holds for a NaN energy: parts with NaN energies are kept."""
    path, _ = data
    ds = motes.open(path)
    kept = ds.plan("not (energy < 1000)", step=0).parts
    assert len(kept) == SLABS and ds.count("not (energy < 1000)", step=0) > 0
    kept = ds.plan("energy != energy", step=0).parts  # only NaN satisfies it
    assert len(kept) == SLABS


ATOMS = ["x", "y", "energy", "q", "2 * x - y", "x ** 2", "abs(x - 0.5)", "sqrt(y)", "-x", "x / (y + 1)"]
OPS = ["<", "<=", ">", ">=", "==", "!="]


@st.composite
def expressions(draw, depth=2):
    if depth == 0 or draw(st.booleans()):
        value = draw(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, -3.0, 2.0]) | st.floats(-1, 2, allow_nan=False))
        return f"{draw(st.sampled_from(ATOMS))} {draw(st.sampled_from(OPS))} {value!r}"
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return f"not ({draw(expressions(depth - 1))})"
    return f"({draw(expressions(depth - 1))}) {kind} ({draw(expressions(depth - 1))})"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=expressions())
def test_pruning_keeps_every_part_with_matches(data, where):
    path, _ = data
    ds = motes.open(path)
    kept = {(p.step, p.part) for p in ds.plan(where, steps=[0, 1]).parts}
    src = {s: ds.source(s, "e") for s in (0, 1)}
    for s in (0, 1):
        for k in range(SLABS):
            part = motes._core.Collection.open(ds.file(s, "e", k).path)
            spec = motes._core.QuerySpec()
            spec.where = where
            if motes._core.count(part, spec) > 0:
                assert (s, k) in kept, (where, s, k)
        assert src[s].part_count == SLABS


def test_plan_estimates_the_rows_each_part_reads(data):
    """Without a box the rows are exact (a part's particles at the query's quality);
    with a box they are the tree's estimate: the levels inside it, at most the part's."""
    path, written = data
    ds = motes.open(path)
    plan = ds.plan(steps=[0, 1, 2])
    assert [(p.step, p.part) for p in plan.parts] == [(s, k) for s in (0, 1) for k in range(SLABS)] + [(2, 0)]
    for p in plan.parts:
        assert p.count == p.rows == len(written[p.step][p.part]["id"]) and p.levels is None
    assert plan.rows == sum(ds.count_total(s) for s in (0, 1, 2)) and plan.pruned == 0
    for q in (0.3, (0.2, 0.7)):  # a quality reads whole levels: exactly what the query returns
        got = ds.plan(quality=q, step=0)
        assert got.rows == ds.count(quality=q, step=0)
    assert ds.plan(fraction=0.25, step=1).rows == ds.count(fraction=0.25, step=1)
    box = (0.1, 0.2, 0.0, 0.6, 0.7, 1.0)
    inside = ds.plan(box=box, step=0, levels=True)
    assert [p.part for p in inside.parts] == [0, 1, 2] and inside.pruned == 1
    for p in inside.parts:
        assert 0 < p.rows <= p.count and p.levels.sum() == pytest.approx(p.rows)
        assert len(p.levels) == ds.file(0, "e", p.part).level_count
    assert inside.rows == pytest.approx(ds.count(box=box, step=0), rel=0.25)  # an estimate, near the truth
    assert ds.plan(quality=0.0, step=0).parts == []
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        ds.plan("nope > 1", step=0)


def test_histograms_of_expressions_equal_the_serial_ones(data, scheduler):
    """An axis or a weight may be a numeric expression over the columns, binned by the core
    in each part's task (dask) as in Dataset.histogram."""
    path, written = data
    ds = motes.open(path)
    for args in (dict(x="2 * x - energy", bins=12), dict(x="x", y="abs(y - 0.5)", bins=(6, 5), weights="energy * q")):
        for step in (0, 2):
            got = motes.dask.histogram(path, steps=step, where="q != 0", **args)
            want = ds.histogram(step=step, where="q != 0", **args)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
            for g, w in zip(got[1:], want[1:]):
                np.testing.assert_array_equal(g, w)
    # the 1-D one against numpy on the input
    cols = {k: np.concatenate([c[k] for c in written[0]]) for k in written[0][0]}
    m = cols["q"] != 0
    v = 2 * cols["x"][m] - cols["energy"][m]
    v = v[~np.isnan(v)]
    counts, edges = motes.dask.histogram(path, "2 * x - energy", bins=12, where="q != 0", steps=0)
    want, want_edges = np.histogram(v, bins=12)
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(edges, want_edges)


def test_errors_are_raised_before_any_task(data):
    path, _ = data
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        motes.dask.read(path, where="nope > 1")
    with pytest.raises(motes.UsageError, match="syntax error"):
        motes.dask.read(path, where="x >")
    with pytest.raises(motes.UsageError, match="unknown column"):
        motes.dask.read(path, columns=["x", "nope"])
    with pytest.raises(motes.UsageError, match="no step 7"):
        motes.dask.read(path, steps=[0, 7])
    with pytest.raises(motes.UsageError, match="box must be 6 numbers"):
        motes.dask.read(path, box=(0, 1))
    with pytest.raises(motes.UsageError, match="unknown column"):
        motes.dask.histogram(path, "nope")


HISTOGRAMS = [
    dict(x="energy", bins=32),
    dict(x="energy", bins=16, where="x > 0.4", box=(0.0, 0.0, 0.0, 0.7, 1.0, 1.0)),
    dict(x="x", y="y", bins=(12, 7), where="q >= 0"),
    dict(x="x", y="energy", bins=8, range=((0.0, 1.0), (0.0, 3.0)), where="energy > 0.2"),
    dict(x="y", bins=10, weights="energy", where="energy > 0"),
    dict(x="energy", bins=5, where="x > 2"),  # nothing matches
]


@pytest.mark.parametrize("args", HISTOGRAMS)
def test_histogram_equals_the_serial_one(data, scheduler, args):
    path, _ = data
    ds = motes.open(path)
    for step in (0, 2):
        got = motes.dask.histogram(path, steps=step, **args)
        want = ds.histogram(step=step, **args)
        assert len(got) == len(want)
        assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
        if "weights" in args:
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        else:
            np.testing.assert_array_equal(got[0], want[0])
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_array_equal(g, w)


def test_histogram_over_several_steps(data, scheduler):
    """Per step over one common range, as Dataset.histogram(steps=) returns it."""
    path, _ = data
    ds = motes.open(path)
    counts, edges, steps = motes.dask.histogram(path, "energy", bins=24, steps="all", where="x < 0.8")
    assert list(steps) == [0, 1, 2] and counts.shape == (3, 24) and counts.dtype == np.int64
    lo = min(ds.stats("energy", "x < 0.8", step=s)["min"] for s in (0, 1, 2))
    hi = max(ds.stats("energy", "x < 0.8", step=s)["max"] for s in (0, 1, 2))
    assert (edges[0], edges[-1]) == (lo, hi)
    for i, s in enumerate(steps):
        want, want_edges = ds.histogram("energy", bins=24, range=(lo, hi), where="x < 0.8", step=s)
        np.testing.assert_array_equal(counts[i], want)
        np.testing.assert_array_equal(edges, want_edges)
        assert counts[i].sum() == ds.count("x < 0.8 and energy == energy", step=s)
    # 2-D, a step with every part pruned (zeros), a given range
    counts, xe, ye, steps = motes.dask.histogram(path, "x", "y", bins=(5, 4), range=((0, 1), (0, 1)), steps=[1, 2],
                                                 box=(0.0, 0.0, 0.0, 0.2, 1.0, 1.0), where="q > 0")
    assert counts.shape == (2, 5, 4) and list(steps) == [1, 2]
    for i, s in enumerate(steps):
        np.testing.assert_array_equal(counts[i], ds.histogram("x", "y", bins=(5, 4), range=((0, 1), (0, 1)), step=s,
                                                              box=(0.0, 0.0, 0.0, 0.2, 1.0, 1.0), where="q > 0")[0])


def test_steps_forms(data):
    path, _ = data
    for steps, want in [("all", [0, 1, 2]), (None, [0, 1, 2]), ("0:2", [0, 1]), ("1:", [1, 2]), ("::2", [0, 2]),
                        (range(0, 3, 2), [0, 2]), ([2, 0, 2], [0, 2]), ("1,2", [1, 2]), (np.array([1]), [1]),
                        (slice(1, None), [1, 2])]:
        df = motes.dask.read(path, steps=steps, columns=["id"])
        assert df.columns[0] == "step", steps
        assert sorted(df["step"].unique().compute()) == want, steps
    for bad, needle in [("0:3:0", "stride"), ("x", "invalid step"), ([], "selects no step"), (True, "steps must be"),
                        ([5], "no step 5"), ("7:9", "selects no step")]:
        with pytest.raises(motes.UsageError, match=needle):
            motes.dask.read(path, steps=bad)
