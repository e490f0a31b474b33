"""fraction=: a share of the particles, asked for directly. Exactly round(f * N) per file,
spread over the whole step, nested (a larger fraction only adds particles), and filters,
analyses and exports apply to that share exactly as numpy would."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import motes
from motes import synth
from motes.cli import main

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
N = 60_000


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    d = synth.uniform(N, seed=4, with_id=True)
    p = tmp_path_factory.mktemp("f") / "u.motes"
    motes.write(p, d, **SMALL)
    return d, motes.open(p)


@pytest.fixture(scope="module")
def parted(tmp_path_factory):
    d = synth.clustered(N, seed=5, with_id=True)
    p = tmp_path_factory.mktemp("f") / "p.motes"
    chunks = [{k: v[i::3] for k, v in d.items()} for i in range(3)]
    motes.Writer(p, **SMALL).write_step_chunks(0, {"particles": chunks})
    return d, motes.open(p), [len(c["id"]) for c in chunks]


def ids(ds, **kw):
    return set(ds.query(columns=["id"], **kw)["id"].tolist())


@pytest.mark.parametrize("f", [0.0, 1e-5, 0.001, 0.013, 0.25, 0.5, 0.777, 1.0])
def test_exact_count(uniform, f):
    _, ds = uniform
    assert ds.count(fraction=f) == int(np.floor(f * N + 0.5))
    assert len(ds.query(fraction=f)["x"]) == ds.count(fraction=f)


def test_whole_and_nested(uniform):
    d, ds = uniform
    assert ids(ds, fraction=1.0) == set(d["id"].tolist())
    previous = set()
    for f in (0.001, 0.01, 0.05, 0.2, 0.6, 1.0):
        now = ids(ds, fraction=f)
        assert previous <= now
        previous = now


def test_spread_over_the_whole_step(uniform):
    d, ds = uniform
    for f in (0.002, 0.01, 0.1):
        t = ds.query(fraction=f)
        for a in "xyz":
            span = t[a].max() - t[a].min()
            assert span >= 0.9 * (d[a].max() - d[a].min()), (f, a)


def test_parts(parted):
    d, ds, sizes = parted
    f = 0.0137
    assert ds.count(fraction=f) == sum(int(np.floor(f * n + 0.5)) for n in sizes)
    assert ids(ds, fraction=0.01) <= ids(ds, fraction=0.03) <= ids(ds, fraction=1.0) == set(d["id"].tolist())


def test_filters_and_analyses_apply_to_the_share(uniform):
    d, ds = uniform
    f = 0.07
    sample = ds.query(fraction=f)
    mask = (sample["energy"] > 0.5) & (sample["x"] < 0.6)
    got = ds.query("energy > 0.5 and x < 0.6", fraction=f)
    assert sorted(got["id"].tolist()) == sorted(sample["id"][mask].tolist())
    box = (0.1, 0.2, 0.0, 0.7, 0.9, 0.5)
    inbox = np.all([(sample[a] >= box[k]) & (sample[a] <= box[k + 3]) for k, a in enumerate("xyz")], axis=0)
    assert ds.count(box=box, fraction=f) == int(inbox.sum())
    s = ds.stats("energy", fraction=f)
    assert s["count"] == len(sample["x"]) and s["sum"] == pytest.approx(sample["energy"].astype(np.float64).sum())
    counts, edges = ds.histogram("energy", bins=20, fraction=f)
    ref, _ = np.histogram(sample["energy"].astype(np.float64), bins=20, range=(edges[0], edges[-1]))
    assert np.array_equal(counts, ref)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1))
def test_any_fractions(uniform, a, b):
    _, ds = uniform
    lo, hi = min(a, b), max(a, b)
    small, big = ids(ds, fraction=lo), ids(ds, fraction=hi)
    assert len(small) == int(np.floor(lo * N + 0.5)) and small <= big


def test_bad_fractions(uniform):
    _, ds = uniform
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(motes.UsageError, match="fraction"):
            ds.count(fraction=bad)
    with pytest.raises(motes.UsageError, match="either a fraction or a quality, not both"):
        ds.count(fraction=0.1, quality=0.5)


def test_cli(uniform, tmp_path, capsys):
    _, ds = uniform
    assert main(["query", ds.path, "--fraction", "0.01", "--count"]) == 0
    assert int(capsys.readouterr().out) == 600
    assert main(["hist", ds.path, "x", "--fraction", "0.1", "--bins", "4"]) == 0
    assert "6,000 particles" in capsys.readouterr().out
    assert main(["query", ds.path, "--fraction", "0.1", "--quality", "0.5", "--count"]) == 2
    assert main(["convert", ds.path, str(tmp_path / "p.npz"), "--fraction", "0.02", "--chunk-rows", "300",
                 "--no-progress"]) == 0
    with np.load(tmp_path / "p.npz") as z:
        assert sorted(z["id"].tolist()) == sorted(ids(ds, fraction=0.02))


def test_repr_lists_species_of_every_step(tmp_path):
    p = tmp_path / "s.motes"
    x = np.zeros(10)
    motes.write(p, {"x": x, "y": x, "z": x}, step=0, species="ions", **SMALL)
    motes.write(p, {"x": x, "y": x, "z": x}, step=1, species="electrons", **SMALL)
    assert "['electrons', 'ions']" in repr(motes.open(p))
