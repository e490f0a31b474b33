"""Tracking particles by id (Dataset.track, the id index of particle format 2.1): through
random steps where particles are lost, created and shuffled, in one file or in parts, with
unsigned, signed and 32-bit ids, with and without an id index, the answer equals a brute-force
join of the raw columns; an id held twice within a step is a FormatError naming it; ids of a
query at one step; fields sampled along the tracks; the index is checked by verify."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from format_util import PACKED_BLOCKS, written_version


def step_columns(rng, ids):
    n = len(ids)
    return {"x": rng.random(n).astype(np.float32) * 10, "y": rng.random(n).astype(np.float32),
            "z": rng.random(n).astype(np.float32), "energy": rng.standard_normal(n), "id": ids}


def brute(columns_by_step, ids, names):
    """The join by hand: for each step and id, its row's values (NaN where absent)."""
    out = {n: np.full((len(columns_by_step), len(ids)), np.nan) for n in names}
    present = np.zeros((len(columns_by_step), len(ids)), dtype=bool)
    for s, cols in enumerate(columns_by_step):
        where = {int(v): i for i, v in enumerate(cols["id"])}
        for j, i in enumerate(ids):
            if int(i) in where:
                present[s, j] = True
                for n in names:
                    out[n][s, j] = cols[n][where[int(i)]]
    return present, out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), dtype=st.sampled_from([np.uint64, np.int64, np.int32, np.uint32]),
       parts=st.sampled_from([1, 3]), index=st.booleans())
def test_tracks_equal_a_brute_force_join(tmp_path_factory, seed, dtype, parts, index):
    rng = np.random.default_rng(seed)
    path = tmp_path_factory.mktemp("track") / "run.motes"
    universe = (rng.permutation(20000) - (7000 if np.dtype(dtype).kind == "i" else 0)).astype(dtype)
    steps = []
    alive = universe[:6000]
    with motes.Writer(path, sync=False, ids=index) as w:
        for s in range(4):
            # Lose some, create some, shuffle: the file order is spatial anyway.
            keep = alive[rng.random(len(alive)) > 0.2]
            born = universe[6000 + 2000 * s: 6000 + 2000 * s + int(rng.integers(0, 2000))]
            alive = rng.permutation(np.concatenate([keep, born]))
            cols = step_columns(rng, alive)
            steps.append(cols)
            if parts == 1:
                w.write_step(s, cols)
            else:
                cut = np.array_split(np.arange(len(alive)), parts)
                w.write_step_chunks(s, {"particles": [{k: v[c] for k, v in cols.items()} for c in cut]})
    ds = motes.open(path)
    assert (ds.file(0).id_column == "id") == index
    asked = np.concatenate([rng.choice(universe, 300, replace=False), universe[:3]])
    asked = asked[np.unique(asked, return_index=True)[1]]  # distinct, first occurrences kept
    asked = rng.permutation(asked)
    t = ds.track(asked, columns=["x", "energy"])
    present, want = brute(steps, asked, ["x", "energy"])
    assert np.array_equal(t.present, present)
    for n in ("x", "energy"):
        np.testing.assert_array_equal(t.arrays[n], want[n])
    assert np.array_equal(t.ids, asked) and t.steps == [0, 1, 2, 3]
    table = t.table
    assert len(table) == int(present.sum())
    assert np.array_equal(table["step"], np.nonzero(present)[0])
    assert np.array_equal(table["id"], asked[np.nonzero(present)[1]])
    ds.verify()


def test_an_id_held_twice_is_named(tmp_path):
    rng = np.random.default_rng(1)
    ids = np.arange(1000, dtype=np.uint64)
    ids[500] = 7
    motes.write(tmp_path / "run.motes", step_columns(rng, ids), sync=False)
    ds = motes.open(tmp_path / "run.motes")
    with pytest.raises(motes.FormatError, match="held by two particles"):
        ds.track([7])
    assert ds.track([8]).present.all()  # the others are found


def test_ids_of_a_query_fields_along_tracks_and_errors(tmp_path):
    rng = np.random.default_rng(2)
    ids = np.arange(5000, dtype=np.uint64)
    bz = motes.Field(np.linspace(0, 1, 11 * 11 * 11).reshape(11, 11, 11), spacing=(1.0, 0.1, 0.1))
    for s in range(3):
        motes.write(tmp_path / "run.motes", step_columns(rng, rng.permutation(ids)), step=s, fields={"Bz": bz}, sync=False)
    ds = motes.open(tmp_path / "run.motes")
    hot = ds.query("energy > 2", step=1, columns=["id"])["id"]
    t = ds.track(where="energy > 2", at_step=1, columns=["x", "y", "z", "energy"], fields=["Bz"])
    assert np.array_equal(np.sort(t.ids), np.sort(hot)) and t.present.all()
    assert np.all(t.arrays["energy"][1] > 2)
    for s in range(3):
        want = ds.sample("Bz", t.arrays["x"][s], t.arrays["y"][s], t.arrays["z"][s], step=s)
        np.testing.assert_array_equal(t.arrays["field('Bz')"][s], want)
    assert ds.track([1, 2], steps=[2]).steps == [2]
    with pytest.raises(motes.UsageError, match="distinct"):
        ds.track([1, 1])
    with pytest.raises(motes.UsageError, match="negative"):
        ds.track([-1])
    with pytest.raises(motes.UsageError, match="not both"):
        ds.track([1], where="energy > 1")
    with pytest.raises(motes.UsageError, match="no step 9"):
        ds.track([1], steps=[9])
    assert ds.track([1], steps="1:3").steps == [1, 2]


def test_id_index_size_and_explicit_column(tmp_path):
    rng = np.random.default_rng(3)
    n = 200_000
    cols = step_columns(rng, rng.permutation(n).astype(np.uint64))
    cols["pid"] = cols.pop("id").astype(np.int64)
    motes.write(tmp_path / "a.motes", cols, ids="pid", sync=False, tails=False)
    f = motes.open(tmp_path / "a.motes").file()
    assert f.id_column == "pid" and f.version == written_version(f, 1) == (2, 7)  # ids by their index
    assert f.required_features & PACKED_BLOCKS  # packed ids
    # The index of a random permutation: 4-byte positions and compressed sorted keys.
    index_bytes = f.sizes["index_bytes"]
    assert index_bytes < 4.5 * n + 200_000, index_bytes
    with pytest.raises(motes.UsageError, match="must be int32, uint32, int64 or uint64"):
        motes.write(tmp_path / "b.motes", cols, ids="energy", sync=False)
    with pytest.raises(motes.UsageError, match="not among the columns"):
        motes.write(tmp_path / "c.motes", cols, ids="nope", sync=False)
    motes.write(tmp_path / "d.motes", cols, sync=False, tails=False)  # no column named id: no index, a 2.0 file
    d = motes.open(tmp_path / "d.motes").file()
    assert d.version == written_version(d, 0)


def test_cli_track(tmp_path):
    import subprocess
    import sys

    rng = np.random.default_rng(4)
    ids = np.arange(3000, dtype=np.uint64)
    for s in range(2):
        motes.write(tmp_path / "run.motes", step_columns(rng, rng.permutation(ids)), step=s, sync=False)
    out = tmp_path / "t.csv"
    run = subprocess.run([sys.executable, "-m", "motes", "track", str(tmp_path / "run.motes"), "--ids", "3,7,99999",
                          "--columns", "x,energy", "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    import pandas as pd

    got = pd.read_csv(out)
    want = motes.open(tmp_path / "run.motes").track([3, 7, 99999], columns=["x", "energy"]).to_pandas()
    assert list(got.columns) == ["step", "id", "x", "energy"] and len(got) == 4
    np.testing.assert_allclose(got["energy"].to_numpy(), want["energy"].to_numpy())
    bad = subprocess.run([sys.executable, "-m", "motes", "track", str(tmp_path / "run.motes"), "--ids", "x"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--ids must be integers" in bad.stderr


def test_ids_of_2_63_and_more_are_found_and_bad_ids_are_named(tmp_path):
    """uint64 ids past 2^63 are ids like any other: asked for in a Python list (which numpy
    would make float64, losing them) they are found, against a brute-force join; ids no
    64-bit integer holds, or that are not integers, are a UsageError naming the value."""
    rng = np.random.default_rng(6)
    big = (np.uint64(1 << 63) + rng.permutation(4000).astype(np.uint64))
    ids = np.concatenate([big, np.arange(5, 1005, dtype=np.uint64)])
    cols = step_columns(rng, rng.permutation(ids))
    motes.write(tmp_path / "run.motes", cols, sync=False)
    ds = motes.open(tmp_path / "run.motes")
    asked = [2**63 + 1, 5, 2**63 + 3999, 2**64 - 1, 7]
    t = ds.track(asked, columns=["energy"])
    present, want = brute([cols], asked, ["energy"])
    assert present.tolist() == [[True, True, True, False, True]]
    assert np.array_equal(t.present, present)
    np.testing.assert_array_equal(t.arrays["energy"], want["energy"])
    assert t.ids.dtype == np.uint64 and [int(i) for i in t.ids] == asked
    assert ds.track(np.array(asked, dtype=np.uint64)).present.tolist() == present.tolist()
    for bad, needle in [([2**64, 5], "id 18446744073709551616 is outside the 64-bit integers"),
                        ([-(2**63) - 1], "id -9223372036854775809 is outside the 64-bit integers"),
                        ([-3, 5], "id -3 is negative: the id column 'id' is uint64"),
                        ([2**63 + 1, -5], "ids -5 and 9223372036854775809 cannot be ids of one column"),
                        ([1.5], "ids must be integers, got 1.5"), (["7"], "ids must be integers, got '7'"),
                        ([True], "ids must be integers, got True"),
                        (np.array(["7"]), "ids must be integers, got an array of dtype <U1")]:
        with pytest.raises(motes.UsageError, match=re.escape(needle)):
            ds.track(bad)
    assert ds.track([5.0, 2.0**63]).present.tolist() == [[True, True]]  # integral floats are ids
    signed = {**cols, "id": np.arange(len(ids), dtype=np.int64)}
    motes.write(tmp_path / "signed.motes", signed, sync=False)
    with pytest.raises(motes.UsageError, match=re.escape("id 9223372036854775809 is past 2^63 - 1: the id "
                                                         "column 'id' is int64")):
        motes.open(tmp_path / "signed.motes").track([2**63 + 1, 5])


def test_cli_track_ids_past_2_63(tmp_path):
    from motes.cli import main

    rng = np.random.default_rng(8)
    ids = np.uint64(1 << 63) + np.arange(100, dtype=np.uint64)
    motes.write(tmp_path / "run.motes", step_columns(rng, ids), sync=False)
    out = tmp_path / "t.npz"
    assert main(["track", str(tmp_path / "run.motes"), "--ids", f"{2**63 + 1},5", "-o", str(out)]) == 0
    got = np.load(out)
    assert got["ids"].tolist() == [2**63 + 1, 5] and got["present"].tolist() == [[True, False]]
    assert main(["track", str(tmp_path / "run.motes"), "--ids", str(2**64)]) == 2
