"""Issue 42, item 5: a process forked while a background writer has steps in flight neither
hangs at exit nor waits forever in write_step (it is told to open its own writer), the parent
writes every step it queued, and a background write_step checks its columns at once."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import motes

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)

FORK = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import motes

    path = sys.argv[1]
    rng = np.random.default_rng(0)
    n = 1_500_000
    cols = {k: rng.random(n) for k in ("x", "y", "z", "e")}
    w = motes.Writer(path, background=True, max_pending=2, sync=False)
    futures = [w.write_step(k, cols) for k in range(2)]  # in flight while we fork
    pid = os.fork()
    if pid == 0:  # the child: a normal exit (atexit, interpreter shutdown) must not hang
        try:
            w.write_step(5, cols)
        except motes.UsageError as e:
            print("child refused:", e, flush=True)
        w.flush()
        w.close()
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    w.write_step(2, {k: v[:1000] for k, v in cols.items()})
    w.close()
    print("parent steps", motes.open(path).steps, flush=True)
""")


def test_a_forked_child_exits_and_is_told_it_cannot_write(tmp_path):
    script = tmp_path / "fork.py"
    script.write_text(FORK)
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "run.motes")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "child refused: this background writer belongs to process" in r.stdout
    assert "start it with multiprocessing's 'spawn' or 'forkserver' method" in r.stdout
    assert "child exit 0" in r.stdout
    assert "parent steps [0, 1, 2]" in r.stdout
    assert "leaked" not in r.stderr, r.stderr  # nanobind's report at exit, in either process
    ds = motes.open(tmp_path / "run.motes")
    assert ds.count(step=0) == 1_500_000 and ds.count(step=2) == 1000
    assert ds.verify()["steps"] == 3


def test_a_child_forked_with_no_step_in_flight_may_write_with_a_writer_of_its_own(tmp_path):
    script = tmp_path / "own.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import numpy as np
        import motes
        cols = {k: np.random.default_rng(1).random(200_000) for k in ("x", "y", "z")}
        w = motes.Writer(sys.argv[1], background=True, sync=False)
        w.write_step(0, cols)
        w.flush()  # no step in flight: motes' threads hold no lock the child inherits
        pid = os.fork()
        if pid == 0:
            with motes.Writer(sys.argv[2], background=True, sync=False) as mine:
                mine.write_step(0, cols).result()
            os._exit(0)
        os.waitpid(pid, 0)
        w.close()
    """))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "a.motes"), str(tmp_path / "b.motes")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert motes.open(tmp_path / "a.motes").count() == 200_000 == motes.open(tmp_path / "b.motes").count()


def test_a_spawned_process_writes_while_steps_are_in_flight(tmp_path):
    """What the refusal advises: a process started with 'spawn' writes a dataset of its own
    while the parent's background steps are in flight."""
    script = tmp_path / "spawn.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp, sys
        import numpy as np
        import motes

        def child(path):
            motes.write(path, {k: np.random.default_rng(2).random(100_000) for k in ("x", "y", "z")}, sync=False)

        if __name__ == "__main__":
            cols = {k: np.random.default_rng(1).random(1_500_000) for k in ("x", "y", "z")}
            w = motes.Writer(sys.argv[1], background=True, sync=False)
            futures = [w.write_step(k, cols) for k in range(2)]
            p = mp.get_context("spawn").Process(target=child, args=(sys.argv[2],))
            p.start()
            p.join(120)
            w.close()
            sys.exit(p.exitcode)
    """))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "a.motes"), str(tmp_path / "b.motes")],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert motes.open(tmp_path / "a.motes").steps == [0, 1] and motes.open(tmp_path / "b.motes").count() == 100_000


@pytest.mark.parametrize("borrow", [False, True])
def test_background_write_step_checks_lengths_at_once(tmp_path, borrow):
    w = motes.Writer(tmp_path / "run.motes", background=True, borrow=borrow, **SMALL)
    good = {"x": np.zeros(100), "y": np.zeros(100), "z": np.zeros(100)}
    w.write_step(0, good).result()
    with pytest.raises(motes.UsageError, match=r"step 1, species 'particles':.*(99|100)"):
        w.write_step(1, {"x": np.zeros(100), "y": np.zeros(99), "z": np.zeros(100)})
    with pytest.raises(motes.UsageError, match="finite"):
        w.write_step(1, good, time=float("nan"))
    w.write_step(1, good)  # the writer goes on: nothing was queued
    w.close()  # and close() has no error left to raise
    assert motes.open(tmp_path / "run.motes").steps == [0, 1]


EXIT_AFTER = {
    # a remote dataset whose server fails mid-way: the error escapes to the top level
    "remote error": """
        import sys
        sys.path[:0] = [{tests!r}, {tests_root!r}]
        from remote_util import StallingServer
        srv = StallingServer({www!r})
        ds = motes.open(srv.url + "/run.motes")
        srv.status = 500
        ds.count("x > 0.5")
    """,
    # ds.view()'s server in this process, asked for points, then the interpreter ends
    "view": """
        import urllib.request
        from motes import notebook
        ds = motes.open({path!r})
        ds.view()
        port = list(notebook._SERVERS.values())[0].port
        url = f"http://127.0.0.1:{{port}}/api/v1/datasets/{{notebook.NAME}}/steps/0/species/particles/points?budget=50000"
        with urllib.request.urlopen(url) as r:
            assert len(r.read()) > 100_000
    """,
}


@pytest.mark.parametrize("case", sorted(EXIT_AFTER))
def test_no_leak_report_at_exit(tmp_path, case):
    """nanobind reports instances alive when the interpreter ends ("leaked DatasetCore"): none
    after a remote error that ends the script, nor after ds.view() streamed points."""
    import pathlib

    from needs import need

    need("starlette")
    need("uvicorn")
    path = tmp_path / "www" / "run.motes"
    rng = np.random.default_rng(0)
    motes.write(path, {k: rng.random(100_000) for k in "xyz"}, **SMALL)
    tests = pathlib.Path(__file__).resolve().parent
    script = "import motes\n" + textwrap.dedent(EXIT_AFTER[case]).format(
        path=str(path), www=str(tmp_path / "www"), tests=str(tests), tests_root=str(tests.parent))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "leaked" not in r.stderr, r.stderr
    assert (r.returncode != 0) == (case == "remote error"), r.stderr
