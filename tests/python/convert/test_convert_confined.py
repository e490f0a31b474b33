"""Conversions read only what they were given: a source that is a FIFO or a device is refused
before it is opened (no hang), and an HDF5 file that names other files (external links,
virtual datasets, external raw storage) is read only when those are regular files under
its folder. Without these checks a crafted file makes ``motes convert`` copy any readable
file into its output. (IDX block paths: test_idx.py.)"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from needs import need

import motes
import motes.convert

h5py = need("h5py")

N = 10


def _convert_in_child(src, dst, cwd, *args, timeout=60):
    """``motes convert`` in a child process (a FIFO opened for reading would hang the test run)."""
    r = subprocess.run([sys.executable, "-m", "motes", "convert", str(src), str(dst), *args], cwd=cwd,
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return r.returncode, r.stderr


@pytest.mark.parametrize("ext", ["npz", "csv", "parquet", "arrow", "h5", "h5part", "idx"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_source_that_is_not_a_regular_file_is_refused_without_hanging(tmp_path, ext, kind):
    src = tmp_path / f"in.{ext}"
    if kind == "fifo":
        os.mkfifo(src)
    else:
        src.symlink_to("/dev/zero")
    rc, err = _convert_in_child(src, tmp_path / "out.motes", tmp_path)
    assert rc != 0 and str(src) in err, err
    assert ("a FIFO" if kind == "fifo" else "a character device") in err, err
    assert "Traceback" not in err, err
    assert not (tmp_path / "out.motes").exists()


def test_a_fifo_in_a_series_is_refused_without_hanging(tmp_path):
    np.savez(tmp_path / "s_0.npz", x=np.zeros(3), y=np.zeros(3), z=np.zeros(3))
    os.mkfifo(tmp_path / "s_1.npz")
    rc, err = _convert_in_child("s_%T.npz", "out.motes", tmp_path)
    assert rc != 0 and "s_1.npz" in err and "a FIFO" in err, err


def test_motes_write_refuses_a_fifo_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "in.npz")
    r = subprocess.run([sys.executable, "-m", "motes", "write", "out.motes", "in.npz"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode != 0 and "a FIFO" in r.stderr, r.stderr


# -- HDF5 files that name other files -----------------------------------------------------------

@pytest.fixture
def outside(tmp_path):
    """A folder holding files a crafted HDF5 file could name, beside the folder it is in."""
    out = tmp_path / "outside"
    out.mkdir()
    (np.arange(N, dtype="<f8") * 7).tofile(out / "secret.bin")
    with h5py.File(out / "other.h5", "w") as f:
        f["y"] = np.arange(N, dtype="<f8") * 3
    (tmp_path / "data").mkdir()
    return out


def _file(path, how, target):
    """An HDF5 file of x, y, z whose y is read from ``target`` by ``how``."""
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(N)
        f["z"] = np.zeros(N)
        if how == "external-link":
            f["y"] = h5py.ExternalLink(str(target), "y")
        elif how == "virtual":
            layout = h5py.VirtualLayout(shape=(N,), dtype="<f8")
            layout[:] = h5py.VirtualSource(str(target), "y", shape=(N,))
            f.create_virtual_dataset("y", layout)
        else:
            f.create_dataset("y", shape=(N,), dtype="<f8", external=[(str(target), 0, N * 8)])


@pytest.mark.parametrize("how", ["external-link", "virtual", "external-storage"])
def test_hdf5_naming_a_file_outside_its_folder_is_refused(tmp_path, outside, how):
    src = tmp_path / "data" / "in.h5"
    target = outside / ("secret.bin" if how == "external-storage" else "other.h5")
    _file(src, how, target)
    with h5py.File(src, "r") as f:  # the file as written reads the outside file
        assert f["y"][:].any()
    out = tmp_path / "out.csv"
    with pytest.raises(motes.FormatError, match=f"names the file '{target}'.*outside the folder") as e:
        motes.convert.convert(src, out)
    assert str(src) in str(e.value) and "'/y'" in str(e.value)
    assert not out.exists()
    with pytest.raises(motes.FormatError, match="outside the folder"):
        motes.convert.convert(src, tmp_path / "out.motes", src_format="hdf5")


@pytest.mark.parametrize("how", ["external-link", "virtual"])
def test_hdf5_naming_a_file_by_a_relative_path_out_of_its_folder_is_refused(tmp_path, outside, how):
    src = tmp_path / "data" / "in.h5"
    _file(src, how, "../outside/other.h5")
    with pytest.raises(motes.FormatError, match="outside the folder"):
        motes.convert.convert(src, tmp_path / "out.csv")


def test_hdf5_naming_a_link_that_leads_out_of_its_folder_is_refused(tmp_path, outside):
    src = tmp_path / "data" / "in.h5"
    (tmp_path / "data" / "other.h5").symlink_to(outside / "other.h5")
    _file(src, "external-link", "other.h5")
    with pytest.raises(motes.FormatError, match="resolving to .*outside the folder"):
        motes.convert.convert(src, tmp_path / "out.csv")


@pytest.mark.parametrize("how", ["external-link", "virtual", "external-storage"])
def test_hdf5_naming_files_in_its_folder_is_read(tmp_path, outside, how):
    """References inside the folder stay readable: the values are those of the named file."""
    data = tmp_path / "data"
    for name in ("secret.bin", "other.h5"):
        (data / name).write_bytes((outside / name).read_bytes())
    target = data / ("secret.bin" if how == "external-storage" else "other.h5")
    _file(data / "in.h5", how, target)
    out = tmp_path / "out.npz"
    motes.convert.convert(data / "in.h5", out)
    want = np.fromfile(target, dtype="<f8") if how == "external-storage" else np.arange(N) * 3.0
    assert np.array_equal(np.load(out)["y"], want)


def test_hdf5_external_storage_that_is_a_fifo_is_refused_without_hanging(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    os.mkfifo(data / "values.bin")
    _file(data / "in.h5", "external-storage", data / "values.bin")
    rc, err = _convert_in_child(data / "in.h5", tmp_path / "out.csv", tmp_path)
    assert rc != 0 and "a FIFO" in err and "values.bin" in err, err


def test_openpmd_series_files_are_checked_too(tmp_path, outside):
    need("openpmd_api")
    data = tmp_path / "data"
    p = synth_openpmd(data / "run_%T.h5")
    first = sorted(data.glob("run_*.h5"))[-1]
    with h5py.File(first, "r+") as f:
        f["leak"] = h5py.ExternalLink(str(outside / "other.h5"), "y")
    with pytest.raises(motes.FormatError, match="external link '/leak'.*outside the folder"):
        motes.convert.convert(p, tmp_path / "out.motes")


def synth_openpmd(pattern):
    """A two-iteration file-based openPMD series written by motes itself."""
    src = pattern.parent.parent / "src.motes"
    with motes.Writer(src, sync=False) as w:
        for s in (0, 1):
            rng = np.random.default_rng(s)
            w.write_step(s, {k: rng.random(100) for k in "xyz"})
    motes.convert.convert(src, str(pattern))
    return str(pattern)
