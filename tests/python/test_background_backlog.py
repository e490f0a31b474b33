"""What a background writer does when steps come faster than it writes them (issue 43, item 5):
``on_backlog="block"`` (the default) waits for room and keeps every step; ``"skip"`` writes
none of the steps submitted while the queue is full, resolves their futures to
``motes.SkippedStep`` and lists them in the manifest (``Dataset.skipped``, ``motes info``).
Either way the writer warns once per backlog, with the rates.

The writer is made slow without timing: the test holds the dataset's writers' lock (as another
writer would), so the step in flight cannot be published until the test lets it go."""

import contextlib
import json
import logging
import threading
import warnings

import numpy as np
import pytest

import motes
from motes import _core

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
N = 100_000
COLUMNS = ("x", "y", "z", "id", "v")


def columns(step):
    rng = np.random.default_rng(step)
    return {"x": rng.random(N), "y": rng.random(N), "z": rng.random(N).astype(np.float32),
            "id": np.arange(N, dtype=np.uint64) + np.uint64(step * N), "v": np.full(N, float(step))}


def by_id(c):
    order = np.argsort(c["id"], kind="stable")
    return {k: np.asarray(c[k])[order] for k in COLUMNS}


def bit_exact(path, step):
    t = motes.open(path).query(step=step)
    got, want = by_id({k: np.asarray(t[k]) for k in COLUMNS}), by_id(columns(step))
    return all(got[k].dtype == want[k].dtype and got[k].tobytes() == want[k].tobytes() for k in COLUMNS)


@contextlib.contextmanager
def writers_lock(path):
    """Holds the dataset's writers' lock: the background writer's step waits for it."""
    held = _core.DatasetCore.open(str(path)).writing("hold the background writer back (test)")
    try:
        yield held
    finally:
        held.release()


class Logged(logging.Handler):
    """The records of the motes.background log; `event` set by the first."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages, self.event = [], threading.Event()

    def emit(self, record):
        self.messages.append(record.getMessage())
        self.event.set()


@pytest.fixture
def logged():
    h = Logged()
    log = logging.getLogger("motes.background")
    log.addHandler(h)
    try:
        yield h
    finally:
        log.removeHandler(h)


def backlog_warnings(caught):
    return [w for w in caught if issubclass(w.category, motes.BacklogWarning)]


def has_rates(message):
    return "steps/s submitted" in message and "steps/s written" in message and "s to write" in message


def test_block_waits_for_room_and_keeps_every_step(tmp_path, logged):
    path = tmp_path / "block.motes"
    steps = {s: columns(s) for s in range(8)}  # made first: steps then come faster than they are written
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with motes.Writer(path, background=True, max_pending=1, on_backlog="block", lock_timeout=120, **SMALL) as w:
            w.write_step(0, steps[0], time=0.0).result(timeout=120)
            futures = []
            with writers_lock(path) as held:
                futures.append(w.write_step(1, steps[1], time=0.1))  # in flight, waiting for the lock
                # The next step finds the queue full: the writer warns (and logs), then waits for room;
                # the lock is let go once it has said so.
                releaser = threading.Thread(target=lambda: (logged.event.wait(120), held.release()))
                releaser.start()
                futures.append(w.write_step(2, steps[2], time=0.2))
                releaser.join()
            for s in range(3, 8):
                futures.append(w.write_step(s, steps[s], time=0.1 * s))
        assert all(not f.skipped for f in futures)
        assert all(isinstance(f.result(), list) and f.result()[0]["particle_count"] == N for f in futures)
    found = backlog_warnings(caught)
    assert len(found) == 1 and len(logged.messages) == 1, [str(w.message) for w in found]
    message = str(found[0].message)
    assert message == logged.messages[0] and has_rates(message)
    assert "on_backlog='block'" in message and "on_backlog='skip'" in message and "max_pending" in message
    assert found[0].filename == __file__  # names the caller's write_step
    ds = motes.open(path)
    assert ds.steps == list(range(8)) and ds.skipped == []
    assert all(bit_exact(path, s) for s in range(8))
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["version"] == [1, 6] and "skipped" not in manifest  # nothing skipped: as before


def test_skip_lists_every_step_not_written(tmp_path, logged, capsys):
    path = tmp_path / "skip.motes"
    steps = {s: columns(s) for s in range(10)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with motes.Writer(path, background=True, max_pending=1, on_backlog="skip", lock_timeout=120, **SMALL) as w:
            futures = {0: w.write_step(0, steps[0], time=0.0)}
            futures[0].result(timeout=120)
            with writers_lock(path):
                futures[1] = w.write_step(1, steps[1], time=0.1)  # in flight: the queue (1) is full
                for s in range(2, 7):
                    futures[s] = w.write_step(s, steps[s], time=0.1 * s)
                    assert futures[s].skipped and futures[s].bytes_copied == 0  # known at once, nothing copied
                assert not futures[1].skipped and not futures[1].done()
                assert len(backlog_warnings(caught)) == 1  # at the first step skipped, not at each
            w.flush()
            for s in range(7, 10):  # one at a time, the writer keeps up: each is written
                futures[s] = w.write_step(s, steps[s], time=0.1 * s)
                futures[s].result(timeout=120)
    written, skipped = [0, 1, 7, 8, 9], [2, 3, 4, 5, 6]
    for s, f in futures.items():
        r = f.result()
        if s in skipped:
            assert f.skipped and r.skipped and isinstance(r, motes.SkippedStep)
            assert (r.index, r.time, r.reason) == (s, 0.1 * s, "backlog")
        else:
            assert not f.skipped and r[0]["particle_count"] == N
    found = backlog_warnings(caught)
    assert len(found) == 1 and logged.messages == [str(found[0].message)]
    message = str(found[0].message)
    assert has_rates(message)
    assert "on_backlog='skip'" in message and "on_backlog='block'" in message and "Dataset.skipped" in message

    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["version"] == [1, 7]
    assert manifest["skipped"] == [{"index": s, "time": 0.1 * s, "reason": "backlog"} for s in skipped]
    for ds in (motes.open(path), motes.open(path)):  # reopened: the same
        assert ds.steps == written
        assert ds.skipped == [motes.SkippedStep(s, 0.1 * s, "backlog") for s in skipped]
        assert not set(ds.steps) & {k.index for k in ds.skipped}
        assert ds.describe()["skipped"] == [{"index": s, "time": 0.1 * s, "reason": "backlog"} for s in skipped]
    assert all(bit_exact(path, s) for s in written)

    from motes.cli import main

    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "skipped    5 not written (backlog): 2 (t=0.2), 3 (t=0.3), 4 (t=0.4), 5 (t=0.5), 6 (t=0.6)" in out

    # A step skipped and written later is written: it leaves the list (in the same manifest write).
    with motes.Writer(path, **SMALL) as w:
        w.write_step(4, steps[4], time=0.4)
    ds = motes.open(path)
    assert ds.steps == [0, 1, 4, 7, 8, 9] and [k.index for k in ds.skipped] == [2, 3, 5, 6]
    assert bit_exact(path, 4)


def test_skip_with_a_producer_faster_than_the_writer(tmp_path):
    """No lock held: steps made beforehand come far faster than 100,000 particles are written.
    Whatever the timing, every step is written or skipped (never both), the futures say
    which, the manifest agrees, and the steps written are bit-exact."""
    path = tmp_path / "fast.motes"
    steps = {s: columns(s) for s in range(12)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with motes.Writer(path, background=True, max_pending=1, on_backlog="skip", **SMALL) as w:
            futures = {s: w.write_step(s, c, time=0.5 * s) for s, c in steps.items()}
    skipped = sorted(s for s, f in futures.items() if f.skipped)
    written = sorted(s for s, f in futures.items() if not f.skipped)
    assert 0 in written and set(skipped) | set(written) == set(steps)
    assert all(isinstance(futures[s].result(), motes.SkippedStep) for s in skipped)
    ds = motes.open(path)
    assert ds.steps == written and [k.index for k in ds.skipped] == skipped
    assert [k.time for k in ds.skipped] == [0.5 * s for s in skipped]
    assert all(bit_exact(path, s) for s in written)
    found = backlog_warnings(caught)
    assert bool(found) == bool(skipped)
    for w in found:  # the first backlog may come before any step is written: no write time yet
        m = str(w.message)
        assert "steps/s submitted" in m and "steps/s written" in m
        assert "s to write" in m or "no step is written yet (the first was given" in m


def test_on_backlog_is_checked(tmp_path):
    with pytest.raises(motes.UsageError, match="on_backlog must be one of 'block', 'skip', got 'drop'"):
        motes.Writer(tmp_path / "a.motes", background=True, on_backlog="drop")
    with pytest.raises(motes.UsageError, match="on_backlog must be one of 'block', 'skip', got 1"):
        motes.Writer(tmp_path / "a.motes", background=True, on_backlog=1)
    for policy in ("block", "skip"):
        with pytest.raises(motes.UsageError, match="applies to background writes: pass background=True"):
            motes.Writer(tmp_path / "a.motes", on_backlog=policy)
    assert not (tmp_path / "a.motes").exists()
    with motes.Writer(tmp_path / "b.motes", background=True, **SMALL) as w:  # the default: block
        assert not w.write_step(0, columns(0)).skipped
    assert motes.open(tmp_path / "b.motes").skipped == []


def test_a_manifest_listing_a_step_both_written_and_skipped_is_refused(tmp_path):
    path = tmp_path / "both.motes"
    motes.write(path, columns(0), step=0, **SMALL)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["skipped"] = [{"index": 1, "time": 0.1, "reason": "backlog"}]
    manifest["version"] = [1, 7]
    (path / "manifest.json").write_text(_core.seal_manifest(json.dumps(manifest)))
    assert motes.open(path).skipped == [motes.SkippedStep(1, 0.1, "backlog")]
    for bad, error in [([{"index": 0, "time": 0.0, "reason": "backlog"}], "listed both as written and as skipped"),
                       ([{"index": 1, "time": 0.1, "reason": "x"}] * 2, "skipped step 1 is listed twice"),
                       ([{"index": 1, "reason": "backlog"}], "skipped step 1: has no 'time'"),
                       ({"index": 1}, "skipped steps are not a list")]:
        manifest["skipped"] = bad
        (path / "manifest.json").write_text(_core.seal_manifest(json.dumps(manifest)))
        with pytest.raises(motes.FormatError, match=error):
            motes.open(path)
