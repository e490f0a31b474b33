"""Fine levels stored region by region (format 2.6, docs/format.md section 5.4): the same data
written with every prefix share answers every read as numpy does, and as the level-major file;
a subtree below the detail level is one run of positions; the feature and version are set."""

import numpy as np
import pytest

import motes
from format_util import REGIONAL_DETAIL

N = 40_000
SHARES = (1.0, 1 / 8, 1 / 64)
REGION_POINTS = {1.0: 65536, 1 / 8: 2000, 1 / 64: 40}  # 40: a region per node at the detail level


def columns(seed=11):
    rng = np.random.default_rng(seed)
    # clustered positions: the tree is deeper where particles crowd
    centers = rng.random((12, 3))
    pick = rng.integers(0, 12, N)
    pos = (centers[pick] + rng.normal(scale=0.05, size=(N, 3))).astype(np.float32)
    return {"x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2],
            "e": rng.lognormal(size=N).astype(np.float32), "q": rng.normal(size=N),
            "id": rng.permutation(N).astype(np.int64)}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    cols = columns()
    root = tmp_path_factory.mktemp("regional")
    out = {}
    for share in SHARES:
        for compression in ("lossless", "none"):
            p = root / f"{share:g}-{compression}.motes"
            motes.write(p, cols, leaf_size=32, lod_count=4, sync=False, prefix_share=share,
                        region_points=REGION_POINTS[share], compression=compression)
            out[share, compression] = motes.open(p)
    return cols, out


def ids_of(t):
    return np.sort(np.asarray(t["id"]))


def test_the_share_sets_the_detail_level_feature_and_version(written):
    _, dss = written
    for (share, _), ds in dss.items():
        f = ds.source(0, "particles").part(0)
        L = len(f.level_starts) - 1
        if share == 1.0:
            assert f.detail_level == 0 and not ds.file().required_features & REGIONAL_DETAIL
            assert f.level_positions(0, L) == [(0, N)]
            continue
        d = f.detail_level
        assert 0 < d < L and ds.file().required_features & REGIONAL_DETAIL and ds.file().version >= (2, 6)
        assert f.level_starts[d] >= share * N > f.level_starts[d - 1]  # the first level holding the share
        assert f.level_positions(0, d) == [(0, int(f.level_starts[d]))]  # the coarse prefix: one range
        assert 0 < f.region_depth <= d and (f.region_depth == d) == (share == 1 / 64)
        assert len(f.level_positions(d, d + 1)) > 8  # a range per region after it
        assert f.level_positions(0, L) == [(0, N)]
        for level in range(L):  # each level's ranges hold its points
            parts = f.level_positions(level, level + 1)
            assert sum(e - b for b, e in parts) == f.level_starts[level + 1] - f.level_starts[level]


@pytest.mark.parametrize("compression", ["lossless", "none"])
def test_queries_equal_numpy_and_the_level_major_file(written, compression):
    cols, dss = written
    rng = np.random.default_rng(2)
    for k in range(12):
        lo = rng.random(3) * 0.9 - 0.05
        hi = lo + rng.random(3) * 0.4
        box = [*lo, *hi]
        inside = np.ones(N, bool)
        for a, name in enumerate("xyz"):
            inside &= (cols[name] >= np.float32(lo[a])) & (cols[name] <= np.float32(hi[a]))
        t = float(np.quantile(cols["e"], rng.random()))
        want_box = np.sort(cols["id"][inside])
        want_both = np.sort(cols["id"][inside & (cols["e"] > np.float32(t))])
        for share in SHARES:
            ds = dss[share, compression]
            got = ds.query(box=box)
            assert np.array_equal(ids_of(got), want_box), (share, k)
            row_of_id = np.argsort(cols["id"])  # every column read at the same rows
            assert np.array_equal(np.asarray(got["e"])[np.argsort(np.asarray(got["id"]))],
                                  cols["e"][row_of_id[want_box]])
            assert np.array_equal(ids_of(ds.query(box=box, where=f"e > {t!r}")), want_both), (share, k)
            assert ds.count(box=box) == len(want_box)
    for share in SHARES:  # a tail (its index) and an id lookup
        ds = dss[share, compression]
        t = float(np.quantile(cols["e"], 0.999))
        assert np.array_equal(ids_of(ds.query(where=f"e > {t!r}")), np.sort(cols["id"][cols["e"] > np.float32(t)]))
        want = cols["id"][::997]
        assert np.array_equal(ids_of(ds.query(where=f"id in ({', '.join(map(str, want))})")), np.sort(want))


def test_levels_qualities_and_fractions_read_the_same_rows(written):
    _, dss = written
    base = dss[1.0, "lossless"]
    for share in SHARES[1:]:
        ds = dss[share, "lossless"]
        for q in [(0.0, 0.2), (0.0, 0.6), (0.3, 0.8), (0.55, 1.0), (0.9, 1.0)]:
            assert np.array_equal(ids_of(ds.query(quality=q)), ids_of(base.query(quality=q))), (share, q)
            assert np.array_equal(ids_of(ds.query(quality=q, box=[0.2, 0.2, 0.2, 0.7, 0.7, 0.7])),
                                  ids_of(base.query(quality=q, box=[0.2, 0.2, 0.2, 0.7, 0.7, 0.7]))), (share, q)
        for fraction in (0.001, 0.01, 0.07, 0.3, 0.77):
            got = ids_of(ds.query(fraction=fraction))
            assert len(got) == round(fraction * N) and np.array_equal(got, ids_of(base.query(fraction=fraction)))
            got = ids_of(ds.query(fraction=fraction, where="e > 1"))
            assert np.array_equal(got, ids_of(base.query(fraction=fraction, where="e > 1"))), (share, fraction)


def test_progressive_slices_union_to_everything_once(written):
    _, dss = written
    for share in SHARES:
        ds = dss[share, "lossless"]
        seen = np.concatenate([np.asarray(ds.query(quality=(k / 10, (k + 1) / 10))["id"]) for k in range(10)])
        assert len(seen) == N and np.array_equal(np.sort(seen), np.arange(N))
