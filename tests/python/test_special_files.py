"""Special files where data files belong: a FIFO, a /dev/zero link, a directory, a huge
sparse file, and a file truncated under an open reader. Each is a FormatError naming the
file, checked before any read: no hang, no unbounded memory, no SIGBUS."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import motes

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def cols(n, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "e": rng.random(n)}


@pytest.fixture
def ds_path(tmp_path):
    p = tmp_path / "d.motes"
    with motes.Writer(p, **SMALL) as w:
        w.write_step(0, cols(2000, 0))
        w.write_step_chunks(1, {"particles": [cols(1000, 1), cols(1000, 2)]})
    return p


def _in_child(code, timeout=30):
    """Runs code in a child (a hang or a signal must not take the test run with it)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}: {r.stderr}"
    assert r.returncode == 0, r.stderr
    return r.stdout


def _replace(path, how):
    os.remove(path)
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        os.symlink("/dev/zero", path)
    elif how == "directory":
        os.mkdir(path)
    elif how == "sparse-64GiB":
        with open(path, "wb") as f:
            f.truncate(64 << 30)


@pytest.mark.parametrize("how, needle", [("fifo", "a FIFO"), ("dev-zero", "a character device"),
                                         ("directory", "a directory"), ("sparse-64GiB", "more than")])
@pytest.mark.parametrize("which", ["particles.mpf", "particles.mpi", "manifest.json"])
def test_special_file_in_place_of_a_data_file(ds_path, which, how, needle):
    target = ds_path / ("manifest.json" if which == "manifest.json" else
                        f"steps/00000{0 if which.endswith('mpf') else 1}/{which}")
    if which == "particles.mpf" and how == "sparse-64GiB":
        needle = "bad magic"  # a particle file may be large: this one is refused by its header
    _replace(target, how)
    step = 0 if which.endswith("mpf") else 1
    out = _in_child(f"""
        import motes
        try:
            motes.open({str(ds_path)!r}).count(step={step})
            print("accepted")
        except (motes.FormatError, motes.UsageError) as e:
            print(type(e).__name__, e)
        """)
    assert out.startswith("FormatError") and needle in out and str(target.name) in out, out


def test_truncated_under_an_open_reader_is_an_error_not_sigbus(ds_path):
    f = ds_path / "steps/000000/particles.mpf"
    out = _in_child(f"""
        import os, motes
        ds = motes.open({str(ds_path)!r})
        t = ds.query(step=0)                 # maps the file
        sel = ds.select(step=0)
        os.truncate({str(f)!r}, 4096 * 2)    # another process cuts it short
        for call in (lambda: ds.query(step=0), lambda: ds.count("e > 0.5", step=0), lambda: sel.gather("e", 0, sel.size)):
            try:
                call()
                print("accepted")
            except motes.FormatError as e:
                print("FormatError", e)
        """)
    lines = out.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("FormatError") and "changed size while open" in line for line in lines), out


def test_fifo_manifest_does_not_hang_verify_or_info(ds_path):
    _replace(ds_path / "manifest.json", "fifo")
    out = _in_child(f"""
        from motes.cli import main
        print(main(["info", {str(ds_path)!r}]), main(["verify", {str(ds_path)!r}, "--no-progress"]))
        """)
    assert out.strip().endswith("1 1")
