"""Every exception motes raises derives from motes.MotesError, I/O failures included: a
missing file is a motes.NotFoundError (also FileNotFoundError), permission denied and a
full disk a motes.StorageError (also OSError); their messages name the path."""

import errno
import io
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import motes
from motes import convert, errors
from motes.cli import CliError, main


def run(capsys, *args):
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def small(path, n=1000):
    rng = np.random.default_rng(0)
    cols = {a: rng.random(n) for a in "xyz"}
    cols["id"] = np.arange(n, dtype=np.uint64)
    motes.write(path, cols, sync=False)
    return cols


def test_the_hierarchy():
    for cls in (motes.UsageError, motes.FormatError, motes.StorageError, motes.NotFoundError, CliError):
        assert issubclass(cls, motes.MotesError), cls
    assert issubclass(motes.StorageError, OSError) and issubclass(motes.NotFoundError, FileNotFoundError)
    assert issubclass(motes.UsageError, ValueError) and issubclass(motes.FormatError, ValueError)
    for name in ("MotesError", "UsageError", "FormatError", "StorageError", "NotFoundError"):
        assert getattr(errors, name) is getattr(motes, name)
    e = motes.StorageError("out.npz: cannot write (No space left on device)", errno=errno.ENOSPC,
                           filename="out.npz")
    assert str(e) == "out.npz: cannot write (No space left on device)"
    assert (e.errno, e.strerror, e.filename) == (errno.ENOSPC, os.strerror(errno.ENOSPC), "out.npz")
    back = pickle.loads(pickle.dumps(e))  # across processes (MPI ranks, multiprocessing)
    assert type(back) is motes.StorageError and str(back) == str(e) and back.errno == errno.ENOSPC
    assert motes.NotFoundError("x: no such file").errno == errno.ENOENT


def test_an_os_error_becomes_a_storage_error_naming_the_path():
    e = errors.storage_error(PermissionError(errno.EACCES, "Permission denied", "d/f.npz"), "d/f.npz",
                             "cannot read")
    assert type(e) is motes.StorageError and isinstance(e, PermissionError) is False
    assert str(e) == "d/f.npz: cannot read (Permission denied)" and e.errno == errno.EACCES
    e = errors.storage_error(FileNotFoundError(errno.ENOENT, "No such file or directory", "a/b"), "out.motes",
                             "cannot write")
    assert type(e) is motes.NotFoundError
    assert str(e) == "out.motes: cannot write (No such file or directory: 'a/b')"
    core = OSError("write failed on 'run.motes/steps/000000/p.mpf': No space left on device")
    assert str(errors.storage_error(core, "run.motes", "cannot write")) == str(core)  # already names it
    already = motes.FormatError("bad")
    assert errors.storage_error(already, "x") is already
    with pytest.raises(motes.StorageError, match=r"^p: cannot sync \(Input/output error\)$"):
        with errors.storage_errors("p", "cannot sync"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))


# ---------------------------------------------------------------------------------------------
# file not found
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["absent.motes", "absent.npz", "absent.parquet", "absent.csv", "absent.h5part",
                                  "absent_%T.h5", "absent.h5"])
def test_missing_sources_are_not_found_errors(tmp_path, name):
    src = tmp_path / name
    with pytest.raises(motes.NotFoundError) as ei:
        convert.convert(src, tmp_path / "out.motes", src_format="openpmd" if ".h5" == src.suffix else None)
    assert isinstance(ei.value, FileNotFoundError) and "absent" in str(ei.value)
    assert not (tmp_path / "out.motes").exists()


def test_missing_dataset(tmp_path, capsys):
    with pytest.raises(motes.NotFoundError, match="nope.motes") as ei:
        motes.open(tmp_path / "nope.motes")
    assert isinstance(ei.value, FileNotFoundError) and isinstance(ei.value, motes.MotesError)
    for args in (["info", tmp_path / "nope.motes"], ["query", tmp_path / "nope.motes"],
                 ["write", tmp_path / "new.motes", tmp_path / "nope.npz"],
                 ["convert", tmp_path / "nope.npz", tmp_path / "new.motes"]):
        status, _, err = run(capsys, *args)
        assert status == 1 and err.startswith("motes: error:") and "nope." in err, (args, err)
        assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------
# permission denied
# ---------------------------------------------------------------------------------------------

def _permissions_enforced(tmp_path) -> bool:
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        probe.read_text()
        return False  # root (or CAP_DAC_OVERRIDE): modes do not stop us
    except PermissionError:
        return True
    finally:
        probe.chmod(0o644)


@pytest.mark.parametrize("how", [pytest.param("chmod", marks=pytest.mark.allow_skip("root ignores file modes")),
                                 "simulated"])
def test_permission_denied(tmp_path, monkeypatch, capsys, how):
    """An unreadable input and an unwritable output folder: StorageError (an OSError) naming
    the path, with errno EACCES; nothing is left behind. 'chmod' needs an unprivileged user;
    'simulated' makes the system calls fail the same way (PermissionError, EACCES)."""
    src = tmp_path / "in.npz"
    np.savez(src, x=np.zeros(3), y=np.zeros(3), z=np.zeros(3))
    small(tmp_path / "a.motes")
    locked = tmp_path / "locked"
    locked.mkdir()
    if how == "chmod":
        if not _permissions_enforced(tmp_path):
            pytest.skip("running with privileges that ignore file modes (root)")
        src.chmod(0)
        locked.chmod(0o555)
    else:
        real_open, real_mkdir = io.open, os.mkdir

        def fake_open(file, *args, **kwargs):
            if os.fspath(file) == str(src):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(file))
            return real_open(file, *args, **kwargs)

        def fake_mkdir(path, *args, **kwargs):
            if os.path.dirname(os.fspath(path)) == str(locked):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
            return real_mkdir(path, *args, **kwargs)

        monkeypatch.setattr(io, "open", fake_open)
        monkeypatch.setattr(os, "mkdir", fake_mkdir)
    try:
        with pytest.raises(motes.StorageError) as ei:
            convert.convert(src, tmp_path / "out.motes")
        assert isinstance(ei.value, OSError) and ei.value.errno == errno.EACCES
        assert str(ei.value).startswith(f"{src}: cannot read (Permission denied")
        with pytest.raises(motes.StorageError) as ei:
            convert.convert(tmp_path / "a.motes", locked / "out.parquet")
        assert ei.value.errno == errno.EACCES and str(ei.value).startswith(f"{locked / 'out.parquet'}: cannot write")
        assert os.listdir(locked) == [] and not (tmp_path / "out.motes").exists()
        status, _, err = run(capsys, "write", tmp_path / "w.motes", src)
        assert status == 1 and f"motes: error: {src}: cannot read (Permission denied" in err
    finally:
        src.chmod(0o644)
        locked.chmod(0o755)


# ---------------------------------------------------------------------------------------------
# a full disk
# ---------------------------------------------------------------------------------------------

@pytest.mark.allow_skip("a system without /dev/full")
def test_full_disk_on_output(tmp_path, capsys):
    """Output to a full device (/dev/full: every write fails with ENOSPC) names the output."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    small(tmp_path / "a.motes")
    for name in ("out.csv", "out.npz", "out.parquet"):
        (tmp_path / name).symlink_to("/dev/full")
        status, _, err = run(capsys, "query", tmp_path / "a.motes", "-o", tmp_path / name)
        assert status == 1, err
        assert f"motes: error: {tmp_path / name}: cannot write (" in err and "No space left on device" in err, err
    (tmp_path / "h.csv").symlink_to("/dev/full")
    status, _, err = run(capsys, "hist", tmp_path / "a.motes", "x", "-o", tmp_path / "h.csv")
    assert status == 1 and f"{tmp_path / 'h.csv'}: cannot write (No space left on device)" in err, err


def test_file_size_limit_on_conversions(tmp_path):
    """Writes beyond RLIMIT_FSIZE fail with EFBIG, as on a full disk: in a subprocess (the
    limit is per process), every destination raises a StorageError naming it, and no partial
    output or staging folder is left."""
    small(tmp_path / "a.motes", n=100_000)
    code = textwrap.dedent(f"""
        import errno, os, resource, signal
        import numpy as np
        import motes
        from motes import convert
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills us at the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        os.chdir({str(tmp_path)!r})
        for dst in ("b.parquet", "b.npz", "b.csv", "b.arrow", "b.motes"):
            try:
                convert.convert("a.motes", dst)
                print(dst, "no error")
            except motes.StorageError as e:
                assert isinstance(e, OSError)
                print(dst, e.errno, str(e).replace(os.linesep, " "))
        try:
            motes.write("w.motes", {{a: np.random.default_rng(0).random(100_000) for a in "xyz"}})  # incompressible
        except OSError as e:
            print("w.motes", type(e).__name__, str(e))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    for dst in ("b.parquet", "b.npz", "b.csv", "b.arrow"):
        assert lines[dst].startswith(f"{errno.EFBIG} {dst}: cannot write ("), lines[dst]
        assert "File too large" in lines[dst]
    assert "b.motes/" in lines["b.motes"] and "File too large" in lines["b.motes"]  # the core's message
    assert lines["w.motes"].startswith("StorageError ") and "w.motes/" in lines["w.motes"]
    assert sorted(os.listdir(tmp_path)) == ["a.motes"]
