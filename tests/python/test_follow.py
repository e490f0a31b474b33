"""Following a dataset being written (motes.follow, Dataset.refresh, Dataset.wait_for_step):
a reader sees new steps without reopening, with inotify and by polling, never a torn step
(a writer in another process commits 1,000 steps while the follower checks each whole)."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import motes
import motes.live

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def particles(step):
    """Step k: 20 + k % 37 particles, every value of v equal to k."""
    n = 20 + step % 37
    rng = np.random.default_rng(step)
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "v": np.full(n, float(step))}


def whole(ds, step):
    t = ds.query(step=step)
    v = np.asarray(t["v"])
    return len(v) == 20 + step % 37 and np.all(v == step)


@pytest.fixture(params=["inotify", "polling"])
def watching(request, monkeypatch):
    if request.param == "polling":
        monkeypatch.setattr(motes.live, "_libc", lambda: None)
    return request.param


def test_refresh_shows_steps_written_since_open(tmp_path):
    path = tmp_path / "r.motes"
    motes.write(path, particles(0), **SMALL)
    ds = motes.open(path)
    assert ds.refresh() == []
    with motes.Writer(path, **SMALL) as w:
        w.write_step(1, particles(1))
        w.write_step(5, particles(5))
    assert ds.steps == [0] and ds.refresh() == [1, 5] and ds.steps == [0, 1, 5]
    assert whole(ds, 5) and ds.step(5).dataset is ds


def test_wait_for_step_wakes_when_a_step_is_published(tmp_path, watching):
    path = tmp_path / "w.motes"
    motes.write(path, particles(0), **SMALL)
    ds = motes.open(path)
    assert motes.live.ManifestWatch(str(path)).kind == watching
    with pytest.raises(TimeoutError, match="no step after 0"):
        ds.wait_for_step(timeout=0.2)

    def later():
        time.sleep(0.3)
        with motes.Writer(path, **SMALL) as w:
            w.write_step(3, particles(3))

    t = threading.Thread(target=later)
    t0 = time.monotonic()
    t.start()
    step = ds.wait_for_step(timeout=30)
    t.join()
    assert step.index == 3 and whole(ds, 3) and 0.25 < time.monotonic() - t0 < 20
    assert ds.wait_for_step(after=-1).index == 0  # already there: at once
    with pytest.raises(motes.UsageError, match="timeout"):
        ds.wait_for_step(timeout=-1)


@pytest.mark.allow_skip("a system without inotify, or that lets a process open fewer than 1,100 files")
def test_a_watch_takes_descriptors_past_1024(tmp_path):
    """A process with over 1,024 files open (a long session, a server) gets inotify
    descriptors that select() refuses; the watch waits on them all the same."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"this process may open only {hard} files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    path = tmp_path / "many.motes"
    motes.write(path, particles(0), **SMALL)
    held = []
    try:
        while not held or held[-1] < 1030:
            held.append(os.open(os.devnull, os.O_RDONLY))
        watch = motes.live.ManifestWatch(str(path))
        if watch.kind != "inotify":
            pytest.skip("no inotify here: the watch polls")
        assert watch.fd > 1024
        t0 = time.monotonic()
        watch.wait(0.05)  # nothing changes: returns after the timeout
        assert time.monotonic() - t0 >= 0.04
        with motes.Writer(path, **SMALL) as w:
            w.write_step(1, particles(1))
        watch.wait(30)  # the change wakes it at once
        assert time.monotonic() - t0 < 20
        watch.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_follow_yields_the_steps_there_then_the_new_ones(tmp_path, watching):
    path = tmp_path / "f.motes"
    with motes.Writer(path, **SMALL) as w:
        for s in (0, 1, 2):
            w.write_step(s, particles(s))

    def later():
        with motes.Writer(path, **SMALL) as w:
            for s in (7, 4):  # any order: each is yielded once
                time.sleep(0.2)
                w.write_step(s, particles(s))

    t = threading.Thread(target=later)
    t.start()
    got = [(s.index, whole(s.dataset, s.index)) for s in motes.follow(path, start=1, timeout=2.0)]
    t.join()
    assert got == [(1, True), (2, True), (7, True), (4, True)]


def test_follow_waits_for_the_first_step_of_an_empty_dataset(tmp_path, watching):
    path = tmp_path / "e.motes"
    motes.Writer(path, **SMALL).write_step(0, particles(0))
    follower = motes.follow(path, start=1, timeout=5)

    def later():
        time.sleep(0.3)
        with motes.Writer(path, **SMALL) as w:
            w.write_step(1, particles(1))

    t = threading.Thread(target=later)
    t.start()
    assert next(follower).index == 1
    t.join()


WRITER = textwrap.dedent("""
    import sys
    sys.path[:0] = {path_list!r}
    sys.path.insert(0, {here!r})
    import motes
    from test_follow import particles, SMALL
    with motes.Writer({dataset!r}, **SMALL) as w:
        for s in range(1, {steps}):
            w.write_step(s, particles(s))
""")


def test_a_follower_sees_1000_commits_each_whole(tmp_path):
    path = tmp_path / "live.motes"
    steps = 1000
    motes.write(path, particles(0), **SMALL)
    script = WRITER.format(path_list=sys.path, here=os.path.dirname(__file__), dataset=str(path), steps=steps)
    writer = subprocess.Popen([sys.executable, "-c", script])
    seen = []
    try:
        for s in motes.follow(path, timeout=60):
            assert whole(s.dataset, s.index), f"step {s.index} seen torn"
            seen.append(s.index)
            if len(seen) == steps:
                break
    finally:
        assert writer.wait(timeout=300) == 0
    assert sorted(seen) == list(range(steps)) and len(set(seen)) == steps
