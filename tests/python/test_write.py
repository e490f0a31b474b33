"""Writing: every dtype round-trips, bad input is refused clearly, crashes never corrupt earlier steps."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import motes
from conftest import SMALL

DTYPES = ["f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]


def positions(n, rng, dtype="f4"):
    return {a: rng.random(n).astype(dtype) for a in "xyz"}


@pytest.mark.parametrize("pos_dtype", ["f4", "f8"])
def test_every_dtype_round_trips_bit_exactly(tmp_path, pos_dtype):
    rng = np.random.default_rng(3)
    n = 5000
    cols = positions(n, rng, pos_dtype)
    for d in DTYPES:
        info = np.iinfo(d) if np.dtype(d).kind in "iu" else np.finfo(d)
        cols[f"c_{d}"] = rng.integers(info.min, info.max, n, dtype=d, endpoint=True) if np.dtype(d).kind in "iu" \
            else (rng.standard_normal(n) * 1e30).astype(d)
    cols["c_f4"][::97] = np.nan
    cols["c_f8"][5] = np.inf
    cols["row"] = np.arange(n, dtype=np.uint64)
    motes.write(tmp_path / "d.motes", cols, **SMALL)
    t = motes.open(tmp_path / "d.motes").query()
    order = np.argsort(t["row"])
    for name, values in cols.items():
        assert t[name].dtype == values.dtype, name
        assert t[name][order].tobytes() == values.tobytes(), name


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 3000), seed=st.integers(0, 2**32 - 1), leaf=st.sampled_from([8, 16, 64, 512]))
def test_random_sizes_and_layout_options(tmp_path_factory, n, seed, leaf):
    rng = np.random.default_rng(seed)
    cols = positions(n, rng, "f8")
    if n:
        cols["x"][: n // 2] = 0.5  # many duplicates
    cols["id"] = rng.permutation(n).astype(np.uint64)
    path = tmp_path_factory.mktemp("r") / "r.motes"
    motes.write(path, cols, leaf_size=leaf, lod_count=min(4, leaf // 2), treelet_size=max(leaf, 256), sync=False)
    ds = motes.open(path)
    assert np.array_equal(np.sort(ds.query(columns=["id"])["id"]), np.sort(cols["id"]))
    parts = [ds.query(quality=(k / 4, (k + 1) / 4), columns=["id"])["id"] for k in range(4)]
    union = np.concatenate(parts)
    assert len(union) == n and len(np.unique(union)) == n


def test_steps_species_attributes_and_units(tmp_path):
    rng = np.random.default_rng(0)
    with motes.Writer(tmp_path / "run.motes", sync=False) as w:
        w.write_step(0, {"electrons": positions(100, rng), "ions": positions(50, rng)}, time=0.0,
                     attributes={"dt": 0.1, "comment": "first"}, units={"x": "m"})
        w.write_step(10, positions(70, rng), time=1.0, species_name="electrons")
    ds = motes.open(tmp_path / "run.motes")
    assert ds.steps == [0, 10] and ds.times == [0.0, 1.0]
    assert ds.step(0).attributes == {"dt": 0.1, "comment": "first"}
    assert sorted(ds.species_names(0)) == ["electrons", "ions"]
    assert ds.count(step=0, species="ions") == 50
    assert ds.count(species="electrons") == 70  # default: the last step
    assert {c.name: c.unit for c in ds.schema(0, "electrons")}["x"] == "m"
    with pytest.raises(motes.UsageError, match="several species"):
        ds.query(step=0)
    with pytest.raises(motes.UsageError, match="already exists"):
        motes.write(tmp_path / "run.motes", positions(5, rng), step=10, sync=False)


@pytest.mark.parametrize("bad,match", [
    ({"x": np.zeros(3), "y": np.zeros(3)}, "'z' is missing"),
    ({"x": np.zeros(3), "y": np.zeros(3), "z": np.zeros(4)}, "different lengths"),
    ({"x": np.array([0, np.nan, 1.0]), "y": np.zeros(3), "z": np.zeros(3)}, "NaN or infinite value at row 1"),
    ({"x": np.zeros(3), "y": np.zeros(3), "z": np.zeros(3), "a b": np.zeros(3)}, "not an identifier"),
    ({"x": np.zeros(3), "y": np.zeros(3), "z": np.zeros(3), "s": np.array(["a", "b", "c"])}, "unsupported dtype"),
    ({"x": np.zeros((3, 2)), "y": np.zeros(3), "z": np.zeros(3)}, "must be 1-D"),
    ({"x": np.zeros(3, np.int32), "y": np.zeros(3), "z": np.zeros(3)}, "must be f32 or f64"),
    ({"x": np.zeros(3), "y": np.zeros(3), "z": np.zeros(3), "nan": np.zeros(3)}, "reserved word"),
])
def test_bad_input_is_refused_and_writes_nothing(tmp_path, bad, match):
    rng = np.random.default_rng(1)
    motes.write(tmp_path / "d.motes", positions(10, rng), step=0, sync=False)
    with pytest.raises(motes.UsageError, match=match):
        motes.write(tmp_path / "d.motes", bad, step=1, sync=False)
    ds = motes.open(tmp_path / "d.motes")
    assert ds.steps == [0] and ds.count() == 10
    leftovers = [p for p in (tmp_path / "d.motes").rglob("*") if ".tmp-" in p.name]
    assert not leftovers


def test_write_killed_midway_leaves_earlier_steps_intact(tmp_path):
    path = tmp_path / "crash.motes"
    script = textwrap.dedent(f"""
        import os, numpy as np, motes
        rng = np.random.default_rng(0)
        cols = {{a: rng.random(200_000).astype("f4") for a in "xyz"}}
        cols["e"] = rng.random(200_000)
        motes.write({str(path)!r}, cols, step=0)
        def die(stage, done, total):
            if stage == "columns" and done >= 1:
                os._exit(17)   # the process dies in the middle of writing step 1
        core = motes._core.DatasetCore.open({str(path)!r})
        core.append_step(1, 1.0, {{}}, [("particles", motes.writer._column_tuples(cols, None, None))],
                            progress=die)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 17, r.stderr
    ds = motes.open(path)
    assert ds.steps == [0]
    assert ds.count() == 200_000
    ds.verify()
    # the interrupted step can be written again
    motes.write(path, {a: np.zeros(3, "f4") for a in "xyz"}, step=1, sync=False)
    assert motes.open(path).steps == [0, 1]


def test_not_a_dataset(tmp_path):
    with pytest.raises(motes.UsageError, match="not a motes dataset"):
        motes.open(tmp_path)
    (tmp_path / "junk").write_text("x")
    with pytest.raises(motes.UsageError, match="non-empty directory"):
        motes.write(tmp_path, {a: np.zeros(3) for a in "xyz"})


def test_first_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(motes.UsageError, match="'z' is missing"):
        motes.write(tmp_path / "new.motes", {"x": np.zeros(3), "y": np.zeros(3)})
    assert not (tmp_path / "new.motes").exists()


def test_explicit_quantile_index_where_impossible_is_refused(tmp_path):
    cols = {a: np.random.default_rng(0).random(100) for a in "xyz"}
    cols["tag"] = np.zeros(100, np.uint8)
    with pytest.raises(motes.UsageError, match="cannot have a quantile index"):
        motes.write(tmp_path / "q.motes", cols, index={"x": "quantile"})
    with pytest.raises(motes.UsageError, match="cannot have a quantile index"):
        motes.write(tmp_path / "q.motes", cols, index={"tag": "quantile"})
    with pytest.raises(motes.UsageError, match="must be 'auto', 'none' or 'quantile'"):
        motes.write(tmp_path / "q.motes", cols, index={"tag": "fast"})


def test_missing_dataset_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such dataset"):
        motes.open(tmp_path / "nope.motes")


def test_stats_are_deterministic(clustered_ds):
    _, ds = clustered_ds
    sums = {ds.stats("mass", where="x > 0.1")["sum"] for _ in range(10)}
    assert len(sums) == 1


def test_automatic_quantile_codes_stay_within_the_index_budget(tmp_path):
    """The file's indexes (tree, ranges, bitmaps, quantile codes, tails, covers) within 5% of
    the values as numbers: with no tail indexes to pay for, a few of the noise columns get
    quantile codes (tests/python/test_index_budget.py has the rest)."""
    from motes._sizes import INDEX_ROLES

    rng = np.random.default_rng(4)
    n = 200_000
    cols = {a: rng.random(n).astype("f4") for a in "xyz"}
    for k in range(8):  # every attribute is spatially random noise
        cols[f"n{k}"] = rng.standard_normal(n).astype("f4")
    summary = motes.write(tmp_path / "noise.motes", cols, sync=False, tails=False)[0]
    chosen = [c["name"] for c in summary["columns"] if c["index"] == "quantile"]
    f = motes.open(tmp_path / "noise.motes").file()
    assert 0 < len(chosen) < 8
    index = sum(b for role, _, _, b in f.section_sizes() if role in INDEX_ROLES)
    assert index <= 0.05 * f.sizes["raw_data_bytes"]  # the budget counts the values as numbers
    # an explicit request is always honoured, budget or not
    summary = motes.write(tmp_path / "all.motes", cols, sync=False, index={f"n{k}": "quantile" for k in range(8)})[0]
    assert sum(c["index"] == "quantile" for c in summary["columns"]) == 8


def test_dataset_attributes_round_trip(tmp_path):
    motes.write(tmp_path / "a.motes", {a: np.zeros(4, "f4") for a in "xyz"}, sync=False)
    ds = motes.open(tmp_path / "a.motes")
    assert ds.attributes == {}
    ds.set_attributes({"code": "vpic", "deck": {"nx": 64}})
    assert motes.open(tmp_path / "a.motes").attributes == {"code": "vpic", "deck": {"nx": 64}}
    with pytest.raises(motes.UsageError, match="JSON-serialisable"):
        ds.set_attributes({"bad": object()})
    assert motes.open(tmp_path / "a.motes").steps == [0]


@pytest.mark.parametrize("order", ["random", "cells"])
def test_row_stage_writes_the_same_file(tmp_path, order):
    # The row stage (the columns copied side by side where rows are far from spatial order,
    # by default from 1 GiB of columns on) at any size here: the file must be the one written
    # without it, and read back exactly, for random rows (staged) and cell-sorted ones (not).
    from motes import _core
    rng = np.random.default_rng(9)
    n = 100_000
    cols = {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "e": rng.standard_normal(n),
            "kind": rng.integers(0, 3, n).astype(np.uint8), "id": np.arange(n, dtype=np.int64)}
    if order == "cells":
        cell = (cols["x"] * 16).astype(int) + 16 * ((cols["y"] * 16).astype(int) + 16 * (cols["z"] * 16).astype(int))
        keep = np.argsort(cell, kind="stable")
        cols = {k: v[keep] for k, v in cols.items()}
    files = []
    for stage in (True, False):
        o = _core.WriteOptions()
        o.sync, o.stage_rows, o.stage_min_bytes = False, stage, 0
        path = str(tmp_path / f"{order}-{stage}.mpf")
        _core.write_file(path, [(k, v, "auto", "", 0.0) for k, v in cols.items()], o)
        files.append(open(path, "rb").read())
    assert files[0] == files[1]
    assert _core.File.open(str(tmp_path / f"{order}-True.mpf"), True).count == n  # every checksum verified
    with motes.Writer(tmp_path / "d.motes", sync=False, stage_rows=True) as w:  # the public option
        w.write_step(0, cols)
    got = motes.open(tmp_path / "d.motes").query()
    back = np.argsort(got["id"])
    for k, v in cols.items():
        np.testing.assert_array_equal(got[k][back], v[np.argsort(cols["id"])])
