"""Several writers, handles and processes on one dataset: one writer at a time (a lock with a
clear error for the second), every manifest update made against the manifest on disk, so no
acknowledged step is ever lost or overwritten, and readers are never blocked."""

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import motes
from motes import _core

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def cols(n, seed, value=None):
    rng = np.random.default_rng(seed)
    c = {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "id": np.arange(n, dtype=np.uint64) + seed * n}
    c["v"] = np.full(n, float(seed) if value is None else value)
    return c


def step_values(path, step):
    t = motes.open(path).query(step=step)
    return np.unique(t["v"]), len(t["id"])


def test_stale_writer_cannot_overwrite_a_step_committed_by_another_handle(tmp_path):
    p = tmp_path / "d.motes"
    a = motes.Writer(p, **SMALL)
    b = motes.Writer(p, **SMALL)
    a.write_step(0, cols(500, 0))
    b.write_step(5, cols(500, 5))   # b's handle now exists, opened before step 1
    a.write_step(1, cols(700, 1))
    with pytest.raises(motes.UsageError, match="step 1 already exists"):
        b.write_step(1, cols(300, 99))
    ds = motes.open(p)
    assert ds.steps == [0, 1, 5]
    assert step_values(p, 1) == ([1.0], 700)  # a's step 1, untouched
    ds.verify()


def test_set_attributes_on_an_old_handle_keeps_later_steps(tmp_path):
    p = tmp_path / "d.motes"
    motes.write(p, cols(400, 0), step=0, **SMALL)
    old = motes.open(p)
    motes.write(p, cols(400, 1), step=1, **SMALL)
    motes.write(p, cols(400, 2), step=2, **SMALL)
    old.set_attributes({"code": "test"})
    ds = motes.open(p)
    assert ds.steps == [0, 1, 2] and ds.attributes == {"code": "test"}
    ds.verify()


def test_a_second_writer_gets_a_clear_error_while_the_first_writes(tmp_path):
    p = tmp_path / "d.motes"
    motes.write(p, cols(300, 0), step=0, **SMALL)
    errors = []

    def chunks():
        yield cols(300, 1)
        # The first writer holds the lock here: another handle (same process) is refused.
        try:
            motes.write(p, cols(300, 2), step=2, **SMALL)
        except motes.UsageError as e:
            errors.append(str(e))
        yield cols(300, 11)

    motes.Writer(p, **SMALL).write_step_chunks(1, {"particles": chunks()})
    assert len(errors) == 1
    assert "another writer holds the lock" in errors[0] and f"pid {os.getpid()}" in errors[0]
    assert "write step 1" in errors[0]  # what the holder is doing
    assert motes.open(p).steps == [0, 1]
    motes.write(p, cols(300, 2), step=2, **SMALL)  # the lock is free again
    assert motes.open(p).steps == [0, 1, 2]


def _hold_the_lock(path, seconds):
    """A process in the middle of writing step 1 part by part (so holding the lock) for `seconds`."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, numpy as np, motes
        def chunks():
            yield {{"x": np.zeros(10), "y": np.zeros(10), "z": np.zeros(10)}}
            print("holding", flush=True)
            time.sleep({seconds})
        motes.Writer({str(path)!r}, sync=False).write_step_chunks(1, {{"particles": chunks()}})
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    return holder


def test_lock_timeout_waits_for_the_other_writer(tmp_path):
    p = tmp_path / "d.motes"
    motes.write(p, cols(300, 0), step=0, **SMALL)
    holder = _hold_the_lock(p, seconds=1.5)
    try:
        with pytest.raises(motes.UsageError, match="another writer holds the lock"):
            motes.write(p, cols(300, 2), step=2, lock_timeout=0, **SMALL)
        motes.write(p, cols(300, 2), step=2, lock_timeout=30, **SMALL)  # waits, then writes
    finally:
        assert holder.wait(timeout=60) == 0
    assert motes.open(p).steps == [0, 1, 2]


def _append_steps(path, first, count, barrier):
    barrier.wait()
    for s in range(first, first + count):
        motes.write(path, cols(2000, s), step=s, lock_timeout=60, **SMALL)


def test_concurrent_processes_lose_no_acknowledged_step(tmp_path):
    p = str(tmp_path / "d.motes")
    procs, per = 4, 6
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    workers = [ctx.Process(target=_append_steps, args=(p, 100 * k, per, barrier)) for k in range(procs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert [w.exitcode for w in workers] == [0] * procs
    ds = motes.open(p)
    want = sorted(100 * k + i for k in range(procs) for i in range(per))
    assert ds.steps == want
    for s in want:
        assert step_values(p, s) == ([float(s)], 2000)
    assert ds.verify()["files"] == len(want)


def test_a_failed_first_write_never_deletes_a_dataset_another_writer_wrote(tmp_path, monkeypatch):
    """The first write into a new path fails after creating the dataset (a NaN position is
    found after the layout starts); meanwhile another writer tries to publish a step there.
    Whatever the interleaving, a write that returned must stay readable."""
    p = tmp_path / "d.motes"
    other = {}

    class Meddler:
        def __init__(self, enabled, desc):
            pass

        def __call__(self, stage, done, total):
            if "result" not in other:
                try:
                    motes.write(p, cols(100, 7), step=7, lock_timeout=0, **SMALL)
                    other["result"] = "written"
                except motes.UsageError as e:
                    other["result"] = str(e)

        def callback(self):
            return self

        def close(self):
            pass

    monkeypatch.setattr(motes.writer, "Progress", Meddler)
    bad = cols(1000, 1)
    bad["y"][-1] = np.nan
    with pytest.raises(motes.UsageError, match="NaN"):
        motes.write(p, bad, step=0, **SMALL)
    assert "result" in other
    if other["result"] == "written":
        assert motes.open(p).steps == [7]
    else:
        assert "another writer holds the lock" in other["result"]
        assert not p.exists()  # nothing of the failed first write is left


def test_failed_step_leaves_no_files_and_releases_the_lock(tmp_path):
    p = tmp_path / "d.motes"
    motes.write(p, cols(300, 0), step=0, **SMALL)
    bad = cols(300, 1)
    bad["z"][5] = np.inf
    with pytest.raises(motes.UsageError):
        motes.Writer(p, **SMALL).write_step(1, {"good": cols(300, 1), "bad": bad})
    assert not (p / "steps" / "000001").exists()  # the first species' file is gone too

    def chunks():
        yield cols(300, 1)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        motes.Writer(p, **SMALL).write_step_chunks(1, {"particles": chunks()})
    assert not (p / "steps" / "000001").exists()
    motes.write(p, cols(300, 1), step=1, lock_timeout=0, **SMALL)
    assert motes.open(p).steps == [0, 1]


def test_readers_are_never_blocked_by_a_writer(tmp_path):
    p = tmp_path / "d.motes"
    motes.write(p, cols(300, 0), step=0, **SMALL)
    seen = []

    def chunks():
        yield cols(300, 1)
        ds = motes.open(p)  # while the writer holds the lock
        seen.append((ds.steps, ds.count()))
        yield cols(300, 2)

    motes.Writer(p, **SMALL).write_step_chunks(1, {"particles": chunks()})
    assert seen == [([0], 300)]


def test_full_disk_while_creating_a_dataset_leaves_no_folder(tmp_path):
    p = tmp_path / "full.motes"
    code = textwrap.dedent(f"""
        import resource, signal, numpy as np, motes
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writes past the limit fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
        try:
            motes.write({str(p)!r}, {{"x": np.zeros(10), "y": np.zeros(10), "z": np.zeros(10)}})
        except OSError as e:
            print("OSError", e)
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OSError"), r.stdout
    assert not p.exists()


def test_the_lock_of_a_killed_writer_is_released(tmp_path):
    p = tmp_path / "d.motes"
    motes.write(p, cols(300, 0), step=0, **SMALL)
    holder = _hold_the_lock(p, seconds=600)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    motes.write(p, cols(300, 1), step=1, lock_timeout=0, **SMALL)  # no stale lock
    assert motes.open(p).steps == [0, 1]
    motes.open(p).verify()


def test_create_reports_whether_it_made_the_directory(tmp_path):
    p = str(tmp_path / "d.motes")
    assert _core.DatasetCore.create(p).created
    assert not _core.DatasetCore.create(p).created
