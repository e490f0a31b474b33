"""What writers that died leave in a dataset (format.md §3.5): ``motes verify`` reports the
temporary files ``*.tmp-<pid>-<n>`` and unpublished step folders of a conversion killed
with SIGKILL mid-write, with the writer's pid and whether it runs; ``motes verify --clean``
removes them under the writers' lock, and never the files of a running writer (nor runs
while a writer holds the lock)."""

import glob
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import motes
from motes.cli import main

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _cols(n, seed):
    rng = np.random.default_rng(seed)
    return {k: rng.random(n) for k in ("x", "y", "z", "e")}


def _killed_mid_write(tmp_path, ds):
    """Appends a big .npz to ``ds`` in a child process and SIGKILLs it once a temporary file
    of the write exists (retried with a bigger file should a write finish unseen)."""
    for n in (3_000_000, 8_000_000):
        src = tmp_path / f"big_{n}.npz"
        np.savez(src, **_cols(n, 1))
        child = subprocess.Popen([sys.executable, "-m", "motes", "convert", str(src), str(ds), "--append",
                                  "--no-progress"], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while child.poll() is None:
                if glob.glob(f"{ds}/steps/*/*.tmp-*"):
                    child.send_signal(signal.SIGKILL)
                    child.wait()
                    return child.pid
                time.sleep(0.001)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    pytest.skip("the writes finished before a temporary file was seen")


def test_a_killed_conversion_is_reported_then_cleaned(tmp_path, capsys):
    ds = tmp_path / "run.motes"
    motes.write(ds, _cols(1000, 0), step=0, sync=False)
    before = sorted(p.relative_to(ds) for p in ds.rglob("*"))
    pid = _killed_mid_write(tmp_path, ds)
    temps = sorted(glob.glob(f"{ds}/steps/*/*.tmp-{pid}-*"))
    assert temps and motes.open(ds).steps == [0]  # the killed step was never published
    assert main(["verify", str(ds), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "OK:" in out and "leftover(s) of writers" in out and "motes verify --clean" in out
    for t in temps:
        assert f"{os.path.relpath(t, ds)}  (temporary file" in out and f"writer pid {pid} not running" in out
    assert "steps/000001/  (step 1, not in the manifest" in out
    found = motes.open(ds).leftovers()
    assert {f.kind for f in found} == {"temporary file", "unpublished step"}
    assert all(f.pid == pid and not f.alive for f in found if f.kind == "temporary file")
    assert main(["verify", str(ds), "--no-progress", "--clean"]) == 0
    out = capsys.readouterr().out
    assert "cleaned: removed" in out
    after = sorted(p.relative_to(ds) for p in ds.rglob("*"))
    assert after == before  # exactly what was there before the killed write
    assert motes.open(ds).leftovers() == []
    assert main(["verify", str(ds), "--no-progress"]) == 0
    assert "leftover" not in capsys.readouterr().out
    # and the step can be appended again
    assert main(["convert", str(tmp_path / "big_3000000.npz"), str(ds), "--append", "--no-progress"]) == 0
    assert motes.open(ds).steps == [0, 1]


def _exited_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_running_writers_files_are_kept_and_the_lock_is_respected(tmp_path, capsys):
    """A writer of this process (its pid runs) holding the lock mid-step: reported as running,
    --clean refused naming the holder; files named with the pid of a process that has exited
    are removed once the lock is free, a running pid's never."""
    ds = tmp_path / "run.motes"
    motes.write(ds, _cols(1000, 0), step=0, sync=False)
    go, first_done = threading.Event(), threading.Event()

    def chunks():
        yield _cols(500, 1)
        first_done.set()
        go.wait(60)
        yield _cols(500, 2)

    def write():
        with motes.Writer(ds, sync=False) as w:
            w.write_step_chunks(1, {"particles": chunks()})

    t = threading.Thread(target=write)
    t.start()
    try:
        assert first_done.wait(60)
        # a file being written now, named as the writer names them, of this (running) process
        live = ds / "steps" / "000001" / f"particles.p000001.mpf.tmp-{os.getpid()}-999"
        live.write_bytes(b"partial")
        assert main(["verify", str(ds), "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert f"writer pid {os.getpid()} running: a write in progress?" in out, out
        assert main(["verify", str(ds), "--no-progress", "--clean"]) == 2
        err = capsys.readouterr().err
        assert "another writer holds the lock" in err and f"pid {os.getpid()}" in err and "write step 1" in err, err
        assert live.exists()
    finally:
        go.set()
        t.join(60)
    live.unlink()
    assert motes.open(ds).steps == [0, 1]
    # the lock is free: a dead writer's files go, a running pid's stay
    dead = _exited_pid()
    dead_files = [ds / f"manifest.json.tmp-{dead}-0", ds / "steps" / "000001" / f"particles.mpi.tmp-{dead}-3"]
    (ds / "steps" / "000007").mkdir()
    dead_files.append(ds / "steps" / "000007" / f"particles.mpf.tmp-{dead}-1")
    running = ds / "steps" / "000008" / f"particles.mpf.tmp-{os.getpid()}-0"
    running.parent.mkdir()
    for p in dead_files + [running]:
        p.write_bytes(b"x" * 10)
    mine = ds / "steps" / "notes"  # not a step folder of the writer's: never touched
    mine.mkdir()
    removed, kept = motes.open(ds).clean_leftovers()
    assert sorted(r.relative for r in removed) == sorted(
        [f"manifest.json.tmp-{dead}-0", f"steps/000001/particles.mpi.tmp-{dead}-3",
         f"steps/000007/particles.mpf.tmp-{dead}-1", "steps/000007"])
    assert sorted(k.relative for k in kept) == sorted([f"steps/000008/particles.mpf.tmp-{os.getpid()}-0", "steps/000008"])
    assert not any(p.exists() for p in dead_files) and not (ds / "steps" / "000007").exists()
    assert running.exists() and mine.exists()
    motes.open(ds).verify()
    assert motes.open(ds).steps == [0, 1]
