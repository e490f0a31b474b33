"""Analyses computed while traversing equal numpy on the selected data."""

import numpy as np
import pytest

import motes


def f64(data):
    return {k: v.astype(np.float64) for k, v in data.items()}


@pytest.mark.parametrize("where,box", [(None, None), ("energy > 0.3", None), ("ux > 0", [50, 0, 0, 150, 100, 50])])
def test_histograms_equal_numpy(vpic_ds, where, box):
    data, ds = vpic_ds
    c = f64(data)
    mask = np.ones(len(c["x"]), bool)
    if where == "energy > 0.3":
        mask &= c["energy"] > 0.3
    if where == "ux > 0":
        mask &= c["ux"] > 0
    if box:
        mask &= (c["x"] >= box[0]) & (c["x"] <= box[3]) & (c["y"] >= box[1]) & (c["y"] <= box[4]) \
            & (c["z"] >= box[2]) & (c["z"] <= box[5])
    h, edges = ds.histogram("energy", bins=37, where=where, box=box)
    want, want_edges = np.histogram(c["energy"][mask], bins=37)
    assert np.array_equal(h, want) and np.array_equal(edges, want_edges)
    h2, xe, ye = ds.histogram("ux", "uy", bins=(16, 9), range=((-0.3, 0.3), (-0.2, 0.25)), where=where, box=box)
    want2, wx, wy = np.histogram2d(c["ux"][mask], c["uy"][mask], bins=(16, 9), range=((-0.3, 0.3), (-0.2, 0.25)))
    assert np.array_equal(h2, want2.astype(np.int64)) and np.array_equal(xe, wx) and np.array_equal(ye, wy)
    hw, _ = ds.histogram("x", bins=20, range=(0, 200), weights="energy", where=where, box=box)
    ww, _ = np.histogram(c["x"][mask], bins=20, range=(0, 200), weights=c["energy"][mask])
    np.testing.assert_allclose(hw, ww, rtol=1e-9)


def test_count_and_stats(vpic_ds):
    data, ds = vpic_ds
    c = f64(data)
    m = c["y"] > 55
    s = ds.stats("energy", where="y > 55")
    assert s["count"] == m.sum() == s["valid"] == ds.count("y > 55")
    assert s["min"] == c["energy"][m].min() and s["max"] == c["energy"][m].max()
    assert s["mean"] == pytest.approx(c["energy"][m].mean(), rel=1e-12)
    empty = ds.stats("energy", where="y > 1e9")
    assert empty["count"] == 0 and empty["min"] is None


def test_histogram_errors(vpic_ds):
    _, ds = vpic_ds
    with pytest.raises(motes.UsageError, match="bins"):
        ds.histogram("x", bins=0)
    with pytest.raises(motes.UsageError, match="unknown column"):
        ds.histogram("nope")
    with pytest.raises(motes.UsageError, match="min > max"):
        ds.histogram("x", range=(3, 1))


def test_weighted_histograms_are_reproducible(vpic_ds):
    _, ds = vpic_ds
    runs = {ds.histogram("x", "y", bins=8, weights="energy", where="ux > 0")[0].tobytes() for _ in range(8)}
    assert len(runs) == 1
