"""The error table (cpp/motes/core/errors.hpp) on the Python side: every kind has a class
deriving from motes.MotesError (and its builtin base), the CLI exits with the kind's exit
code, errno reaches OSError subclasses, and docs/guide.md lists the table as it is."""

import errno
import pathlib
import pickle
import re

import numpy as np
import pytest

from needs import need

import motes
from motes import _core
from motes.cli import EXIT_STATUS, main

ROOT = pathlib.Path(__file__).resolve().parents[2]

# What each kind's class derives from besides MotesError (the table's python_bases).
BASES = {"usage": (ValueError,), "format": (ValueError,), "io": (OSError,), "memory": (MemoryError,),
         "internal": (), "not_found": (motes.StorageError, FileNotFoundError), "cancelled": (), "replaced": ()}


def test_every_kind_has_a_motes_class():
    names = [k[0] for k in _core.error_kinds]
    assert sorted(names) == sorted(BASES), names
    codes = [k[1] for k in _core.error_kinds]
    assert len(set(codes)) == len(codes) and 0 not in codes
    for name, _status, cls, exit_code, description in _core.error_kinds:
        assert issubclass(cls, motes.MotesError), cls
        assert cls is not motes.MotesError
        assert cls.kind == name and cls.exit_code == exit_code
        assert cls.__module__ == "motes"
        assert getattr(motes, cls.__name__) is cls and cls.__name__ in motes.__all__
        assert cls.__doc__ == description
        for base in BASES[name]:
            assert issubclass(cls, base), (cls, base)
        err = cls("a message")
        assert str(err) == "a message"
        assert pickle.loads(pickle.dumps(err)).args == err.args
    assert issubclass(motes.MotesError, Exception)
    assert motes.UsageError is _core.UsageError and motes.FormatError is _core.FormatError


@pytest.mark.parametrize("kind", [k[0] for k in _core.error_kinds])
def test_cli_exit_status_comes_from_the_table(kind, monkeypatch, capsys):
    _name, _status, cls, exit_code, _doc = next(k for k in _core.error_kinds if k[0] == kind)
    assert EXIT_STATUS[kind] == exit_code

    def fail(args):
        raise cls(f"a {kind} failure")

    monkeypatch.setattr("motes.cli.version.cmd_version", fail)
    assert main(["version"]) == exit_code
    err = capsys.readouterr().err
    assert f"motes: error: a {kind} failure" in err and "Traceback" not in err


def test_cli_exit_status_of_a_plain_motes_error(monkeypatch, capsys):
    def fail(args):
        raise motes.MotesError("no kind")

    monkeypatch.setattr("motes.cli.version.cmd_version", fail)
    assert main(["version"]) == EXIT_STATUS["internal"]
    assert "motes: error: no kind" in capsys.readouterr().err


def test_cli_help_lists_the_exit_statuses(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "Exit status: 0 success;" in out
    for name, _status, _cls, exit_code, _doc in _core.error_kinds:
        assert re.search(rf"{exit_code} [a-z, ]*{name.replace('_', ' ')}", out), (name, out[-300:])


def test_storage_errors_are_os_errors():
    e = motes.StorageError("cannot write 'x': No space left on device", errno=errno.ENOSPC, filename="x")
    assert isinstance(e, OSError) and isinstance(e, motes.MotesError)
    assert (e.errno, e.strerror, e.filename) == (errno.ENOSPC, "No space left on device", "x")
    assert str(e) == "cannot write 'x': No space left on device"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is motes.StorageError and (back.errno, back.strerror, back.filename, str(back)) == \
        (e.errno, e.strerror, e.filename, str(e))
    missing = motes.NotFoundError("no such file: 'y'")
    assert isinstance(missing, FileNotFoundError) and isinstance(missing, motes.StorageError)
    assert missing.errno == errno.ENOENT and str(missing) == "no such file: 'y'"
    assert str(motes.StorageError("plain")) == "plain" and motes.StorageError("plain").errno is None


def test_system_call_failures_are_storage_errors_with_errno(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    xyz = {a: np.zeros(3) for a in "xyz"}
    with pytest.raises(motes.StorageError) as info:
        motes.write(blocker / "run.motes", xyz, sync=False)
    assert isinstance(info.value, OSError) and isinstance(info.value, motes.MotesError)
    assert info.value.errno == errno.ENOTDIR and info.value.strerror == "Not a directory"
    assert "run.motes" in str(info.value) and not str(info.value).startswith("[Errno")


def test_a_missing_dataset_is_not_found(tmp_path, capsys):
    with pytest.raises(motes.NotFoundError) as info:
        motes.open(tmp_path / "nope.motes")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, motes.MotesError)
    assert info.value.errno == errno.ENOENT
    assert str(info.value) == f"no such dataset: '{tmp_path / 'nope.motes'}' does not exist"
    assert main(["info", str(tmp_path / "nope.motes")]) == EXIT_STATUS["not_found"]
    assert "motes: error: no such" in capsys.readouterr().err


def test_guide_shows_the_table():
    guide = (ROOT / "docs" / "guide.md").read_text()
    section = guide[guide.index("\n## Errors"):]
    section = section[:section.index("\n## ", 5)]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(rows) == len(_core.error_kinds), rows
    for (name, status, cls, exit_code, description), row in zip(_core.error_kinds, rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == f"`{name}`", row
        assert cells[1].startswith(f"`motes.{cls.__name__}`"), row
        assert cells[2].endswith(f"= {status}"), row
        assert cells[3] == str(exit_code), row
        assert cells[4] == description, row


def test_every_kind_pickles_under_tblib(tmp_path):
    """Errors raised in Dask tasks travel back pickled by tblib (which distributed installs
    for every exception class): every kind must survive its cls.__new__(cls) unpickling."""
    import subprocess
    import sys

    need("tblib")
    code = ("import pickle, tblib.pickling_support as t, motes\n"
            "from motes import _core\n"
            "t.install()\n"
            "for name, _s, cls, _e, _d in _core.error_kinds:\n"
            "    e = pickle.loads(pickle.dumps(cls('a message')))\n"
            "    assert type(e) is cls and e.args == ('a message',) and isinstance(e, motes.MotesError), name\n"
            "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
