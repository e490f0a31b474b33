"""Stopping queries (CancelToken, timeout), gathering into a caller's buffer (gather_into)
and the level counts of a box estimated from the tree (level_counts), from Python."""

import threading
import time

import numpy as np
import pytest

import motes
from motes import _core, synth

from conftest import SMALL


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("cancel") / "c.motes"
    motes.write(path, synth.vpic(150_000, seed=3, with_id=True), **SMALL)
    return motes.open(path)


@pytest.fixture(scope="module")
def parted(tmp_path_factory):
    """A species of four part files (one per slab of x) behind a step index."""
    data = synth.vpic(40_000, seed=4, with_id=True)
    order = np.argsort(data["x"], kind="stable")
    path = tmp_path_factory.mktemp("parted") / "p.motes"
    chunks = [{k: v[part] for k, v in data.items()} for part in np.array_split(order, 4)]
    motes.Writer(path, **SMALL).write_step_chunks(0, {"particles": chunks})
    return data, motes.open(path)


def test_a_cancelled_token_stops_every_query(ds):
    token = _core.CancelToken()
    assert not token.cancelled and ds.count("energy > 0.1", cancel=token) > 0
    token.cancel()
    assert token.cancelled
    for call in (lambda: ds.count(cancel=token), lambda: ds.query("energy > 0.1", cancel=token),
                 lambda: ds.stats("energy", cancel=token), lambda: ds.histogram("ux", bins=8, cancel=token),
                 lambda: ds.histogram("ux", "uy", bins=8, range=((-1, 1), (-1, 1)), cancel=token),
                 lambda: next(ds.query_batches(batch_size=100, cancel=token)), lambda: ds.select(cancel=token)):
        with pytest.raises(motes.CancelledError, match="cancelled"):
            call()
    assert issubclass(motes.CancelledError, motes.MotesError) and motes.CancelledError.kind == "cancelled"


def test_a_selection_keeps_its_token_for_its_gathers(ds):
    token = _core.CancelToken()
    sel = ds.select("energy > 0.2", cancel=token)
    assert len(sel.gather("x", 0, sel.size)) == sel.size
    token.cancel()
    with pytest.raises(motes.CancelledError):
        sel.gather("x", 0, sel.size)
    with pytest.raises(motes.CancelledError):
        sel.gather_columns(["x", "y"], 0, sel.size)
    with pytest.raises(motes.CancelledError):
        sel.gather_into("x", 0, sel.size, np.zeros(4 * sel.size, np.uint8), dtype="f32")


def test_cancelling_from_another_thread_stops_a_running_query(ds):
    """A query that would gather many times over is stopped soon after cancel() is called."""
    token = _core.CancelToken()
    sel = ds.select(cancel=token, threads=1)
    outcome = {}

    def gather_forever():
        try:
            while True:
                sel.gather_columns(["x", "y", "z", "ux"], 0, sel.size)  # the GIL is released in there
        except motes.CancelledError as e:
            outcome["error"] = e

    worker = threading.Thread(target=gather_forever)
    worker.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    token.cancel()
    worker.join(5)
    assert not worker.is_alive() and isinstance(outcome.get("error"), motes.CancelledError)
    assert time.perf_counter() - t0 < 2


def test_timeouts(ds):
    with pytest.raises(motes.CancelledError, match="deadline"):
        ds.query(timeout=1e-9)
    sel = ds.select(timeout=0.3)  # the deadline holds for the gathers
    sel.gather("x", 0, 10)
    time.sleep(0.35)
    with pytest.raises(motes.CancelledError, match="deadline"):
        sel.gather("x", 0, 10)
    assert ds.count(timeout=float("inf")) == ds.count_total() == ds.count(timeout=1e6)
    for bad in (0, -1, "1", float("nan")):
        with pytest.raises(motes.UsageError, match="timeout"):
            ds.count(timeout=bad)
    with pytest.raises(motes.UsageError, match="CancelToken"):
        ds.count(cancel=True)
    spec = _core.QuerySpec()
    spec.deadline = time.monotonic() + 5
    assert 4 < spec.deadline - time.monotonic() <= 5
    with pytest.raises(motes.UsageError, match="finite"):
        spec.deadline = float("inf")


@pytest.mark.parametrize("where", [None, "energy > 0.3"])
def test_gather_into_writes_what_gather_returns(ds, where):
    sel = ds.select(where, threads=2)
    n = sel.size
    for column in ("x", "uy", "id"):
        native = sel.gather(column, 0, n)
        buf = np.full(16 + native.nbytes + 8, 0xAB, np.uint8)
        assert sel.gather_into(column, 0, n, buf, 16) == native.nbytes
        assert np.array_equal(buf[16:16 + native.nbytes].view(native.dtype), native)
        assert (buf[:16] == 0xAB).all() and (buf[16 + native.nbytes:] == 0xAB).all()  # nothing else written
        for subtract in (0.0, 12.5):
            f = np.zeros(4 * n + 8, np.uint8)
            assert sel.gather_into(column, 0, n, f, 8, dtype="f32", subtract=subtract) == 4 * n
            want = (native.astype(np.float64) - subtract).astype(np.float32)
            assert np.array_equal(f[8:].view(np.float32), want)
        part = np.zeros(4 * 100, np.uint8)  # a range of rows
        sel.gather_into(column, n - 100, n, part, dtype="f32")
        assert np.array_equal(part.view(np.float32), native[n - 100:].astype(np.float32))


def test_gather_into_refuses_what_it_cannot_write(ds):
    sel = ds.select()
    with pytest.raises(motes.UsageError, match="do not fit a buffer of 40 bytes"):
        sel.gather_into("x", 0, 11, np.zeros(40, np.uint8), dtype="f32")
    with pytest.raises(motes.UsageError, match="at byte 36 do not fit"):
        sel.gather_into("x", 0, 2, np.zeros(40, np.uint8), 36, dtype="f32")
    with pytest.raises(motes.UsageError, match="not aligned"):
        sel.gather_into("x", 0, 2, np.zeros(40, np.uint8), 2, dtype="f32")
    with pytest.raises(motes.UsageError, match="dtype must be 'native'"):
        sel.gather_into("x", 0, 2, np.zeros(40, np.uint8), dtype="f16")
    with pytest.raises(motes.UsageError, match="subtract needs dtype='f32'"):
        sel.gather_into("x", 0, 2, np.zeros(40, np.uint8), subtract=1.0)
    with pytest.raises(motes.UsageError, match="unknown column 'nope'"):
        sel.gather_into("nope", 0, 2, np.zeros(40, np.uint8))
    read_only = np.zeros(40, np.uint8)
    read_only.flags.writeable = False
    for bad in (read_only, np.zeros(80, np.uint8)[::2], np.zeros(10, np.float32), b"\0" * 40):
        with pytest.raises(TypeError):  # never a silent copy that the rows would be written into
            sel.gather_into("x", 0, 2, bad, dtype="f32")


def test_level_counts_of_parts(parted):
    data, ds = parted
    src = ds.source()
    assert src.part_count == 4
    exact = _core.level_counts(src)
    assert [int(c.sum()) for c in exact] == list(src.part_counts)
    for k, c in enumerate(exact):  # the levels' sizes
        assert np.array_equal(c, np.diff(src.part(k).level_starts))
    lo, hi = ds.bounds()
    assert [list(c) for c in _core.level_counts(src, (*lo, *hi))] == [list(c) for c in exact]
    # A box over the lowest slab of x: the other parts are not even opened.
    x_split = float(np.sort(data["x"])[len(data["x"]) // 8])
    box = (lo[0] - 1, lo[1] - 1, lo[2] - 1, x_split, hi[1] + 1, hi[2] + 1)
    est = _core.level_counts(src, box)
    assert est[0].size == src.part(0).level_count and [c.size for c in est[1:]] == [0, 0, 0]
    inside = int(((data["x"] >= box[0]) & (data["x"] <= box[3])).sum())
    assert 0.5 * inside < est[0].sum() < 1.5 * inside
    assert _core.levels_for_quality(0.5, 29) == 15 and _core.levels_for_quality(1.0, 29) == 29
