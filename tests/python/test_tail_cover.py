"""Covering tail indexes (format 2.3): beside a tail index, the other columns' values at the
rows of its outermost entries. A tail query inside the cover reads its columns from there,
and answers exactly what the same file without a cover and numpy answer: the same rows,
in the same (file) order, bit for bit, in one file or in parts, hot or cold."""
import numpy as np
import pytest

import motes
from motes import _core
from tail_util import by_file_order, cold_equals_hot
from format_util import written_version

N = 60_000


def columns(seed, n=N):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
        "z": rng.random(n, dtype=np.float32),
        "ux": rng.standard_normal(n).astype(np.float32),
        "e": rng.lognormal(0, 1.5, n),                                    # f64, heavy tail
        "k": rng.integers(-1000, 1000, n).astype(np.int32),
        "q": rng.integers(0, 256, n).astype(np.uint8),
        "h": rng.random(n).astype(np.float32),
        "id": rng.permutation(n).astype(np.int64),
    }


def lit(v):
    """A literal the query parser reads as exactly this value."""
    return repr(int(v)) if np.issubdtype(np.asarray(v).dtype, np.integer) else repr(float(v))


def tails_of(cols):
    """Thresholds inside the default cover (outermost 0.2% per side), at its edge, and past it
    (inside the 0.5% tail only)."""
    out = []
    for name in ("ux", "e", "k"):
        v = np.sort(cols[name])
        for rank in (3, 40, int(0.0015 * len(v)), int(0.004 * len(v))):
            out.append((f"{name} > {lit(v[-rank - 1])}", cols[name] > v[-rank - 1]))
            out.append((f"{name} <= {lit(v[rank])}", cols[name] <= v[rank]))
    out.append((f"k == {int(np.sort(cols['k'])[-2])}", cols["k"] == np.sort(cols["k"])[-2]))
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    cols = columns(11)
    base = tmp_path_factory.mktemp("cover")
    motes.write(base / "covered.motes", cols, sync=False)
    motes.write(base / "plain.motes", cols, sync=False, covering=False)
    return cols, motes.open(base / "covered.motes"), motes.open(base / "plain.motes")


def test_the_writer_covers_the_outermost_entries_of_every_tail(written):
    cols, covered, plain = written
    f = covered.file(0)
    assert f.version == written_version(f, 3) and plain.file(0).version == written_version(plain.file(0), 2)
    tails = f.tail_indexes
    assert set(tails) == {"ux", "e", "k", "q", "h"}
    for name, t in tails.items():
        cover = t["cover"]
        assert cover["columns"] == [c for c in cols if c != name]  # every other column, stored exactly
        assert cover["low"] == min(t["low_count"], int(np.ceil(0.002 * N)))
        assert cover["high"] == min(t["high_count"], int(np.ceil(0.002 * N)))
    assert all("cover" not in t for t in plain.file(0).tail_indexes.values())
    grown = f.sizes["file_bytes"] / plain.file(0).sizes["file_bytes"] - 1
    assert 0 < grown < 0.06, grown  # a few percent (about 2% on large files: bench/tail.py)
    covered.verify()


def test_tail_queries_read_the_cover_and_equal_numpy(written):
    cols, covered, plain = written
    hits = 0
    for where, mask in tails_of(cols):
        a, b = covered.query(where), plain.query(where)
        assert len(a) == int(mask.sum()), where
        rows = by_file_order(a, cols, mask)
        for name in cols:  # same rows, same order, bit for bit, every column
            assert np.array_equal(np.asarray(a[name]), np.asarray(b[name])), (where, name)
            assert np.array_equal(np.asarray(a[name]).view(np.uint8), cols[name][rows].view(np.uint8)), (where, name)
        assert b.counters["covered_parts"] == 0
        hits += a.counters["covered_parts"]
        if a.counters["covered_parts"]:
            assert a.counters["tail_index_parts"] == 1 and a.counters["points_tested"] == 0
    assert hits >= 10  # most thresholds fall inside the cover; those past it gather as before


def test_a_partial_gather_and_batches_read_the_cover_too(written):
    cols, covered, plain = written
    v = np.sort(cols["e"])
    where = f"e >= {lit(v[-100])}"
    sel = covered.select(where)
    assert sel.counters["covered_parts"] == 1 and sel.size == 100
    whole = plain.query(where)
    for a, b in [(0, 100), (17, 18), (40, 77), (99, 100)]:
        got = sel.gather_columns(["ux", "id", "e"], a, b)
        for name, g in zip(["ux", "id", "e"], got):
            assert np.array_equal(g, np.asarray(whole[name])[a:b]), (a, b, name)
    batches = list(covered.query_batches(where, batch_size=7, columns=["k", "e"]))
    assert np.array_equal(np.concatenate([t["k"] for t in batches]), np.asarray(whole["k"]))


def test_cold_answers_equal_hot_ones(written):
    cols, covered, plain = written
    where = next(w for w, _ in tails_of(cols) if covered.query(w).counters["covered_parts"])
    cold_equals_hot(covered, where, cols)


def test_chosen_columns_and_shares(tmp_path):
    cols = columns(5, 20_000)
    cols["b"] = np.random.default_rng(2).random(20_000)
    motes.write(tmp_path / "some.motes", cols, sync=False, covering=["ux", "id"], error_bounds={"b": 1e-3})
    ds = motes.open(tmp_path / "some.motes")
    tails = ds.file(0).tail_indexes
    assert tails["e"]["cover"]["columns"] == ["ux", "id"] and tails["ux"]["cover"]["columns"] == ["id"]
    v = np.sort(cols["e"])
    where, mask = f"e > {lit(v[-10])}", cols["e"] > v[-10]
    t = ds.query(where)
    assert t.counters["covered_parts"] == 1
    rows = by_file_order(t, cols, mask)
    for name in cols:  # covered columns from the cover, the rest (b: within its bound) gathered
        if name == "b":
            assert np.all(np.abs(np.asarray(t[name]) - cols[name][rows]) <= 1e-3)
        else:
            assert np.array_equal(np.asarray(t[name]), cols[name][rows]), name
    # By default a column within an error bound is not covered: the others are.
    motes.write(tmp_path / "bounded.motes", cols, sync=False, error_bounds={"b": 1e-3})
    assert "b" not in motes.open(tmp_path / "bounded.motes").file(0).tail_indexes["e"]["cover"]["columns"]
    motes.write(tmp_path / "wide.motes", cols, sync=False, covering=0.05)
    e = motes.open(tmp_path / "wide.motes").file(0).tail_indexes["e"]
    assert e["cover"]["high"] == e["high_count"]  # at most the side itself
    for bad, message in [(0.3, "tail cover must be in"), (["nope"], "'nope' is not among the columns"),
                         (["b"], "error bound"), ("ux", "list of column names")]:
        with pytest.raises(motes.UsageError, match=message):
            motes.write(tmp_path / "bad.motes", cols, sync=False, covering=bad, error_bounds={"b": 1e-3})


def test_parts_each_read_their_own_cover(tmp_path):
    cols = columns(8, 30_000)
    cut = np.array_split(np.arange(30_000), 3)
    for name, covering in [("covered", True), ("plain", False)]:
        with motes.Writer(tmp_path / f"{name}.motes", sync=False, covering=covering) as w:
            w.write_step_chunks(0, {"particles": [{k: v[c] for k, v in cols.items()} for c in cut]})
    a, b = motes.open(tmp_path / "covered.motes"), motes.open(tmp_path / "plain.motes")
    v = np.sort(cols["ux"])
    for where in [f"ux > {lit(v[-20])}", f"ux < {lit(v[5])}"]:
        ta, tb = a.query(where), b.query(where)
        assert ta.counters["covered_parts"] >= 1 and tb.counters["covered_parts"] == 0
        for name in cols:
            assert np.array_equal(np.asarray(ta[name]), np.asarray(tb[name])), (where, name)


def test_the_counters_tell_the_reads_planned(written):
    """read_requests / read_bytes: the coalesced byte ranges a query and its gathers asked for,
    blocks decoded already left out. A covered tail asks for the index and the covers' runs;
    the same query without a cover for every block its rows touch."""
    cols, covered, plain = written
    where = next(w for w, _ in tails_of(cols) if covered.query(w).counters["covered_parts"])
    sizes = {}
    for name, ds in (("covered", covered), ("plain", plain)):
        _core.clear_block_cache()
        cold = motes.open(ds.path).query(where)
        c = cold.counters
        assert c["read_requests"] >= 1 and 0 < c["read_bytes"] <= ds.file(0).sizes["file_bytes"], (name, c)
        hot = motes.open(ds.path).query(where)  # the coded blocks it needs are decoded already
        if name == "covered":  # the index and the covers: coded blocks only, nothing left to ask for
            assert hot.counters["read_requests"] == 0 and hot.counters["read_bytes"] == 0, hot.counters
        else:  # the positions are packed words, decoded already (or raw, read in place every time)
            assert hot.counters["read_bytes"] < c["read_bytes"], (c, hot.counters)
        sizes[name] = c["read_bytes"]
    assert sizes["covered"] * 4 < sizes["plain"], sizes
    sel = covered.select(where)
    before = sel.counters["read_bytes"]
    _core.clear_block_cache()
    sel.gather_columns(["x"], 0, sel.size)
    assert sel.counters["read_bytes"] > before  # a gather's reads add to its selection's counters


def boxes(cols, seed=5):
    """Boxes of several sizes, some with a face on a particle's coordinate (a tie the native
    comparison decides), and the numpy mask of each."""
    rng = np.random.default_rng(seed)
    out = []
    for side in (0.05, 0.2, 0.5, 1.0):
        lo = rng.random(3) * (1 - side)
        lo[0] = cols["x"][int(rng.integers(len(cols["x"])))]  # exactly a stored float32
        hi = lo + side
        mask = np.ones(len(cols["x"]), bool)
        for a, name in enumerate("xyz"):
            mask &= (cols[name] >= np.float64(lo[a])) & (cols[name] <= np.float64(hi[a]))
        out.append(([float(v) for v in lo] + [float(v) for v in hi], mask))
    return out


def test_a_tail_in_a_box_is_answered_from_the_cover(written):
    """Issue 42, item 4: `e > t` with a box reads the tail's cover and tests the box on its
    values (no traversal, no point of the file's columns tested), and answers exactly what the
    file without a cover and numpy answer."""
    cols, covered, plain = written
    used = 0
    for where, tail in tails_of(cols):
        for box, inside in boxes(cols):
            a, b = covered.query(where, box=box), plain.query(where, box=box)
            mask = tail & inside
            assert len(a) == int(mask.sum()) == len(b), (where, box)
            rows = by_file_order(a, cols, mask)
            for name in cols:
                assert np.array_equal(np.asarray(a[name]).view(np.uint8), cols[name][rows].view(np.uint8)), (where, name)
                assert np.array_equal(np.asarray(a[name]), np.asarray(b[name])), (where, name)
            c = a.counters
            if covered.query(where).counters["covered_parts"]:  # the tail alone is in the cover: so is the box
                used += 1
                assert c["tail_index_parts"] == 1 and c["nodes_visited"] == 0 and c["points_tested"] == 0, (where, c)
                assert c["covered_parts"] == (len(a) > 0), (where, box, c)
            assert covered.count(where, box=box) == len(a)
    assert used >= 20


def test_more_tests_of_covered_columns_and_what_falls_back(written):
    cols, covered, plain = written
    v = np.sort(cols["e"])
    t = lit(v[-60])
    for where, mask in ((f"e > {t} and ux < 0 and k >= -500", (cols["e"] > v[-60]) & (cols["ux"] < 0) & (cols["k"] >= -500)),
                        (f"e > {t} and e < {lit(v[-5])}", (cols["e"] > v[-60]) & (cols["e"] < v[-5])),
                        (f"e > {t} and x > 2", np.zeros(len(cols["e"]), bool)),
                        (f"e > {t} and ux * 2 < 0", (cols["e"] > v[-60]) & (cols["ux"] * 2 < 0))):
        a, b = covered.query(where), plain.query(where)
        assert len(a) == int(mask.sum()) == len(b), where
        for name in cols:
            assert np.array_equal(np.asarray(a[name]), np.asarray(b[name])), (where, name)
    # arithmetic in a conjunct: not decided on the cover (the tree, or the index's rows tested)
    assert covered.query(f"e > {t} and ux * 2 < 0").counters["points_tested"] > 0
