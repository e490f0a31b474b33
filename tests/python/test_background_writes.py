"""Background writes (motes.Writer(background=True)): the steps read back as a synchronous
writer's do; write_step returns once the arrays are copied (a borrowing writer keeps them
alive instead) and never holds more than max_pending steps; a step's error is on its future
and raised by the next call; steps in flight at exit are written; and a writer killed at any
moment has lost no acknowledged step and published no partial one."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import motes

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def columns(n, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n).astype(np.float32),
            "id": np.arange(n, dtype=np.uint64) + np.uint64(seed * n), "v": np.full(n, float(seed))}


def sorted_rows(path, step):
    t = motes.open(path).query(step=step)
    order = np.argsort(np.asarray(t["id"]))
    return {c: np.asarray(t[c])[order] for c in ("x", "y", "z", "id", "v")}


def same(a, b):
    return all(np.array_equal(a[c], b[c]) for c in a)


def expected(n, seed):
    c = columns(n, seed)
    order = np.argsort(c["id"])
    return {k: v[order] for k, v in c.items()}


def test_steps_read_back_as_a_synchronous_writers_and_futures_complete_in_order(tmp_path):
    sync_path, bg_path = tmp_path / "sync.motes", tmp_path / "bg.motes"
    with motes.Writer(sync_path, **SMALL) as w:
        wanted = [w.write_step(s, columns(3000 + s, s), time=0.5 * s, attributes={"k": s}) for s in range(6)]
    with motes.Writer(bg_path, background=True, max_pending=2, **SMALL) as w:
        futures = []
        for s in range(6):
            futures.append(w.write_step(s, columns(3000 + s, s), time=0.5 * s, attributes={"k": s}))
            assert w.pending <= 2
    assert all(f.done() for f in futures)
    for s, f in enumerate(futures):
        got = f.result()
        assert f.step == s and f.bytes_copied == (3000 + s) * (8 * 4 + 4)
        assert [g["particle_count"] for g in got] == [x["particle_count"] for x in wanted[s]]
    a, b = motes.open(sync_path), motes.open(bg_path)
    assert b.steps == a.steps and [b.step(s).time for s in b.steps] == [a.step(s).time for s in a.steps]
    assert [b.step(s).attributes for s in b.steps] == [{"k": s} for s in range(6)]
    for s in range(6):
        assert same(sorted_rows(bg_path, s), sorted_rows(sync_path, s))


def test_the_caller_may_change_its_arrays_once_write_step_returns(tmp_path):
    path = tmp_path / "copy.motes"
    c = columns(5000, 1)
    with motes.Writer(path, background=True, **SMALL) as w:
        f = w.write_step(0, c)
        for v in c.values():
            v[...] = 0  # the simulation's next compute phase
        f.result(timeout=60)
    assert same(sorted_rows(path, 0), expected(5000, 1))


def test_a_borrowing_writer_keeps_the_arrays_alive_and_copies_nothing(tmp_path):
    path = tmp_path / "borrow.motes"
    with motes.Writer(path, background=True, borrow=True, **SMALL) as w:
        f = w.write_step(0, columns(5000, 2))  # no reference left here: the writer keeps them
        assert f.bytes_copied == 0
        g = w.write_step(1, {"x": np.arange(10.0)[::2], "y": np.zeros(5), "z": np.ones(5)})  # strided, borrowed
    assert f.result() and g.result()
    assert same(sorted_rows(path, 0), expected(5000, 2))
    assert np.array_equal(np.sort(np.asarray(motes.open(path).query(step=1)["x"])), np.arange(0.0, 10.0, 2.0))


def test_a_steps_error_is_on_its_future_and_raised_by_the_next_call(tmp_path):
    path = tmp_path / "err.motes"
    w = motes.Writer(path, background=True, **SMALL)
    w.write_step(0, columns(100, 0)).result()
    bad = w.write_step(0, columns(100, 1))  # step 0 exists: found by the writer, after write_step returned
    assert isinstance(bad.exception(timeout=60), motes.UsageError) and "step 0 already exists" in str(bad.exception())
    with pytest.raises(motes.UsageError, match="step 0 already exists"):
        w.write_step(1, columns(100, 1))  # refused: not queued
    w.write_step(2, columns(100, 2))  # later steps are written
    w.write_step(2, columns(100, 3))
    with pytest.raises(motes.UsageError, match="step 2 already exists"):
        w.flush()
    w.flush()  # reported once
    w.close()
    assert motes.open(path).steps == [0, 2] and same(sorted_rows(path, 2), expected(100, 2))


def test_what_the_core_refuses_before_queueing_is_raised_at_once(tmp_path):
    w = motes.Writer(tmp_path / "r.motes", background=True, **SMALL)
    with pytest.raises(motes.UsageError, match="non-empty mapping"):
        w.write_step(0, {})
    with pytest.raises(motes.UsageError, match="max_pending"):
        motes.Writer(tmp_path / "s.motes", background=True, max_pending=0)
    w.close()
    assert not (tmp_path / "r.motes").exists()  # created for nothing: removed


def test_write_step_waits_while_max_pending_steps_are_in_flight(tmp_path):
    """max_pending bounds memory: write_step waits for room, so no more than max_pending steps
    are ever queued or being written."""
    path = tmp_path / "m.motes"
    with motes.Writer(path, background=True, max_pending=1, **SMALL) as w:
        for s in range(4):
            w.write_step(s, columns(40_000, s))
            assert w.pending <= 1
            assert motes.open(path).steps[: s] == list(range(s))  # the steps before are published


def test_chunked_steps_come_after_the_background_steps(tmp_path):
    path = tmp_path / "c.motes"
    with motes.Writer(path, background=True, **SMALL) as w:
        f = w.write_step(0, columns(2000, 0))
        w.write_step_chunks(1, {"particles": [columns(1000, 1), columns(1000, 2)]})
        assert f.done()
    assert motes.open(path).steps == [0, 1]


def test_steps_in_flight_at_exit_are_written(tmp_path):
    path = tmp_path / "exit.motes"
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = {sys.path!r}
        import motes
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_background_writes import columns
        w = motes.Writer({str(path)!r}, background=True, max_pending=4, sync=False)
        for s in range(4):
            w.write_step(s, columns(20_000, s))
        # no close: the interpreter's exit writes them
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "leaked" not in run.stderr
    assert motes.open(path).steps == [0, 1, 2, 3]
    for s in range(4):
        assert same(sorted_rows(path, s), expected(20_000, s))


KILLED = textwrap.dedent("""
    import sys
    sys.path[:0] = {path_list!r}
    import motes
    sys.path.insert(0, {here!r})
    from test_background_writes import columns

    def acknowledged(f):
        if f.exception() is None:
            print("ack", f.step, flush=True)

    w = motes.Writer({dataset!r}, background=True, max_pending=3, sync=True)
    for s in range(1000):
        w.write_step(s, columns(30_000 + s, s)).add_done_callback(acknowledged)
""")


@pytest.mark.parametrize("delay", [0.4, 0.9, 1.7])
def test_a_killed_writer_loses_no_acknowledged_step_and_tears_none(tmp_path, delay):
    """SIGKILL at an arbitrary moment: every step acknowledged (its future completed) is there,
    whole; the steps present are exactly a prefix, each read back whole."""
    path = tmp_path / "k.motes"
    script = KILLED.format(path_list=sys.path, here=os.path.dirname(__file__), dataset=str(path))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    acked, partial = [], ""

    def take(text):  # whole lines only: a non-blocking read may end inside one
        nonlocal partial
        *lines, partial = (partial + text).split("\n")
        acked.extend(int(ln.split()[1]) for ln in lines if ln.startswith("ack"))

    fd = proc.stdout.fileno()
    start = time.monotonic()
    os.set_blocking(fd, False)
    while time.monotonic() - start < delay + 30 and (len(acked) < 1 or time.monotonic() - start < delay):
        try:
            take(os.read(fd, 1 << 16).decode())
        except BlockingIOError:
            time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    os.set_blocking(fd, True)
    take(os.read(fd, 1 << 20).decode() + "\n")
    assert acked, "the writer acknowledged no step before the kill"
    ds = motes.open(path)
    assert set(acked) <= set(ds.steps) and ds.steps == list(range(len(ds.steps)))
    for s in ds.steps:
        assert same(sorted_rows(path, s), expected(30_000 + s, s))
    assert ds.verify()["steps"] == len(ds.steps)


def _thread_nices():
    """The nice value of each thread of this process (Linux: /proc/self/task/*/stat, field 19)."""
    nices = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                nices[int(tid)] = int(f.read().rsplit(")", 1)[1].split()[16])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return nices


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's")
def test_a_nicer_writer_writes_the_same_steps_on_nicer_threads_and_leaves_the_callers(tmp_path):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    nice = 7 if base + 7 <= 19 else 19 - base
    with motes.Writer(tmp_path / "sync.motes", **SMALL) as w:
        for s in range(3):
            w.write_step(s, columns(5000, s))
    seen = set()
    with motes.Writer(tmp_path / "nice.motes", background=True, nice=nice, **SMALL) as w:
        for s in range(3):
            w.write_step(s, columns(5000, s)).result()
            seen |= set(_thread_nices().values())
    assert base + nice in seen  # the writer's thread, and the pool of its loops
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base  # the caller's thread kept its own
    assert _thread_nices()[threading.get_native_id()] == base
    for s in range(3):
        assert same(sorted_rows(tmp_path / "nice.motes", s), sorted_rows(tmp_path / "sync.motes", s))


def test_nice_is_for_background_writers_and_in_range(tmp_path):
    with pytest.raises(motes.UsageError, match="background=True"):
        motes.Writer(tmp_path / "a.motes", nice=5)
    for bad in (-1, 20):
        with pytest.raises(motes.UsageError, match="nice"):
            motes.Writer(tmp_path / "b.motes", background=True, nice=bad)
