"""Where conversions write: --overwrite replaces only output of the same kind, atomically;
a killed conversion's staging folder is removed by the next conversion."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from needs import need

import motes
from motes.convert import convert, destination
from motes.cli import main

pa = need("pyarrow")
pq = need("pyarrow.parquet")


def table(path, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    cols = {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "id": np.arange(n, dtype=np.uint64) + seed}
    pq.write_table(pa.table(cols), path)
    return cols


def staging_left(folder):
    return [n for n in os.listdir(folder) if n.startswith(destination.PREFIX)]


def test_overwrite_refuses_a_directory_that_is_not_a_dataset(tmp_path):
    table(tmp_path / "in.parquet")
    keep = tmp_path / "out.motes"
    keep.mkdir()
    (keep / "thesis.tex").write_text("years of work")
    with pytest.raises(motes.UsageError, match="not a motes dataset.*refusing to replace it"):
        convert(tmp_path / "in.parquet", keep, overwrite=True)
    assert (keep / "thesis.tex").read_text() == "years of work"
    assert staging_left(tmp_path) == []


@pytest.mark.parametrize("dst, content, needle", [("out.parquet", b"plain text", "not Parquet"),
                                                  ("out.h5part", b"not hdf5 at all", "not HDF5"),
                                                  ("out.npz", b"\x00\x01", "not a .npz"),
                                                  ("out.csv", b"\x00\x00binary\xff\xfe" * 100, "binary file")])
def test_overwrite_refuses_a_file_of_another_kind(tmp_path, dst, content, needle):
    table(tmp_path / "in.parquet")
    (tmp_path / dst).write_bytes(content)
    with pytest.raises(motes.UsageError, match=needle):
        convert(tmp_path / "in.parquet", tmp_path / dst, overwrite=True)
    assert (tmp_path / dst).read_bytes() == content


def test_overwrite_replaces_output_of_the_same_kind(tmp_path):
    a = table(tmp_path / "a.parquet", seed=0)
    b = table(tmp_path / "b.parquet", n=500, seed=7)
    convert(tmp_path / "a.parquet", tmp_path / "out.motes")
    convert(tmp_path / "b.parquet", tmp_path / "out.motes", overwrite=True)
    got = motes.open(tmp_path / "out.motes").query()
    assert sorted(got["id"]) == sorted(b["id"]) and len(got["id"]) != len(a["id"])
    convert(tmp_path / "out.motes", tmp_path / "out.parquet")
    convert(tmp_path / "out.motes", tmp_path / "out.parquet", overwrite=True)
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 500
    assert staging_left(tmp_path) == []


def test_directories_are_swapped_atomically_here(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "f").write_text("a")
    assert destination._exchange(str(tmp_path / "a"), str(tmp_path / "b"))  # renameat2 on this kernel
    assert (tmp_path / "b" / "f").read_text() == "a"


def test_stale_staging_folders_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = destination._host()
    stale = tmp_path / f"{destination.PREFIX}{host}-{dead.pid}-abc123"
    stale.mkdir()
    (stale / "half.mpf").write_bytes(b"x" * 100)
    mine = tmp_path / f"{destination.PREFIX}{host}-{os.getpid()}-def456"  # a live conversion's: kept
    mine.mkdir()
    old = tmp_path / f"{destination.PREFIX}otherhost-1-ghi789"
    old.mkdir()
    os.utime(old, (time.time() - 2 * destination.STALE_SECONDS,) * 2)
    table(tmp_path / "in.parquet")
    convert(tmp_path / "in.parquet", tmp_path / "out.motes")
    assert staging_left(tmp_path) == [mine.name]


def test_a_killed_conversion_leaves_nothing_for_long(tmp_path):
    table(tmp_path / "in.parquet", n=3_000_000)
    code = textwrap.dedent(f"""
        from motes.convert import convert
        convert({str(tmp_path / 'in.parquet')!r}, {str(tmp_path / 'out.motes')!r}, chunk_rows=100_000)
        """)
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 60
    while not staging_left(tmp_path) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "out.motes").exists()
    assert len(staging_left(tmp_path)) == 1  # the killed conversion's folder...
    table(tmp_path / "small.parquet", n=10)
    assert main(["convert", str(tmp_path / "small.parquet"), str(tmp_path / "small.motes"), "--no-progress"]) == 0
    assert staging_left(tmp_path) == []  # ...is removed by the next conversion into this folder
