"""The automatic quantile index is chosen once per series (the first step decides; later
steps and parts follow), and the planner prices both plans: the tree, when it prunes a
coded column's tail well, or a scan of the codes when it cannot. Results are exact either way."""

import numpy as np
import pytest

import motes

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
# The index budget (5% of the raw column bytes) has room for the codes of both noisy columns
# when the particles carry a few more columns and no tail indexes, with leaves of the default size.
SERIES = dict(sync=False, tails=False)


def particles(n, seed, v_noisy):
    rng = np.random.default_rng(seed)
    x, y, z = rng.random((3, n))
    v = rng.normal(size=n) if v_noisy else np.sin(6 * x) + y  # unrelated to space / smooth in space
    smooth = {f"s{k}": x + k * y for k in range(4)}  # payload that follows space
    return {"x": x, "y": y, "z": z, "v": v, "w": rng.normal(size=n).astype(np.float32), **smooth}


def kinds(ds, step, species=None):
    return {c.name: c.index for c in ds.schema(step, species)}


def test_first_step_decides_for_the_series(tmp_path):
    p = tmp_path / "s.motes"
    with motes.Writer(p, **SERIES) as w:
        w.write_step(0, particles(40_000, 0, v_noisy=True))
        w.write_step(1, particles(40_000, 1, v_noisy=False))   # alone, v would get no index
        w.write_step(2, particles(40_000, 2, v_noisy=False), index={"v": "none"})  # explicit wins
    ds = motes.open(p)
    assert kinds(ds, 0)["v"] == "quantile" and kinds(ds, 1)["v"] == "quantile" and kinds(ds, 2)["v"] == "none"
    assert kinds(ds, 1)["w"] == kinds(ds, 0)["w"] == "quantile"
    q = tmp_path / "t.motes"
    with motes.Writer(q, **SERIES) as w:
        w.write_step(5, particles(40_000, 0, v_noisy=False))
        w.write_step(6, particles(40_000, 1, v_noisy=True))    # alone, v would get an index
        w.write_step(3, particles(40_000, 2, v_noisy=True))    # before the first: follows the next one
    ds = motes.open(q)
    assert [kinds(ds, s)["v"] for s in (3, 5, 6)] == ["none", "none", "none"]
    motes.write(tmp_path / "alone.motes", particles(40_000, 1, v_noisy=True), **SERIES)
    assert kinds(motes.open(tmp_path / "alone.motes"), None)["v"] == "quantile"


def test_parts_of_a_step_follow_its_first_part(tmp_path):
    p = tmp_path / "p.motes"
    chunks = [particles(30_000, 0, v_noisy=True), particles(30_000, 1, v_noisy=False)]
    motes.Writer(p, **SERIES).write_step_chunks(0, {"particles": chunks})
    src = motes.open(p).source()
    assert [src.part(k).columns[3]["index"] for k in range(2)] == ["quantile", "quantile"]


@pytest.fixture(scope="module")
def halos(tmp_path_factory):
    """Velocities that vary inside every leaf (so v gets quantile codes) but whose tail sits
    in a few fast halos (so the tree prunes it)."""
    n, rng = 200_000, np.random.default_rng(7)
    centers, bulk = rng.random((150, 3)), rng.normal(0, 1.0, 150)
    h = rng.integers(0, 150, n)
    pos = centers[h] + rng.normal(0, 0.01, (n, 3))
    d = {"x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2], "v": (bulk[h] + rng.normal(0, 0.6, n)).astype(np.float32),
         "noise": rng.normal(size=n).astype(np.float32)}
    p = tmp_path_factory.mktemp("h") / "h.motes"
    motes.write(p, d, index={"v": "quantile", "noise": "quantile"}, **SMALL)
    return d, motes.open(p)


def test_planner_takes_the_tree_for_a_tail_it_prunes(halos):
    d, ds = halos
    t = float(np.quantile(d["v"], 0.999))
    sel = ds.select(f"v > {t}")
    assert sel.size == int((d["v"] > np.float32(t)).sum())
    assert not sel.counters["scanned"] and sel.counters["points_tested"] < len(d["v"]) // 8


def test_planner_scans_codes_when_the_tree_cannot_prune(halos):
    d, ds = halos
    t = float(np.quantile(d["noise"], 0.9))  # about 6 points of every 64-point leaf
    sel = ds.select(f"noise > {t}")
    assert sel.size == int((d["noise"] > np.float32(t)).sum())
    assert sel.counters["scanned"]


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99, 0.9999])
def test_both_plans_are_exact(halos, q):
    d, ds = halos
    for col in ("v", "noise"):
        t = float(np.quantile(d[col], q))
        got = np.sort(ds.query(f"{col} > {t}", columns=[col])[col])
        want = np.sort(d[col][d[col] > np.float32(t)])
        np.testing.assert_array_equal(got, want)
