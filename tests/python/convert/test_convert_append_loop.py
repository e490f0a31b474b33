"""Building a time series one file at a time, as a new user does it: ``motes convert FILE
DATASET --append`` (or ``motes write DATASET FILE``) in a shell loop.

* Each step records the file it came from (name, SHA-256, step of the file, species, selection);
  appending a file whose record a step already has is refused, naming that step and
  ``--allow-duplicate`` (Python: ``allow_duplicate=True``); another file, or the same name
  with other bytes, is accepted.
* Steps written at time 0 because their files give no time are warned about: the first
  file of the loop too, in full; the later files (other processes) briefly; a run of many
  files once.
* Messages spell options as the reader gives them: ``--time-from NAME`` on the command
  line, ``read_options={'time_from': NAME}`` in Python."""

import hashlib
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

from needs import need

import motes
from motes.cli import main
from motes.convert import ConversionWarning, convert
from motes.convert.provenance import KEY

N = 300


def snapshot(path, seed, **scalars):
    rng = np.random.default_rng(seed)
    np.savez(path, x=rng.random(N), y=rng.random(N), z=rng.random(N), w=rng.random(N).astype(np.float32),
             **{k: np.float64(v) for k, v in scalars.items()})
    return path


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def motes_cli(*argv, cwd):
    """The command in a process of its own, as a shell loop runs it: (status, stdout, stderr)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the motes this test imports
    r = subprocess.run([sys.executable, "-m", "motes", *map(str, argv)], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def warning_lines(err):
    return [line for line in err.splitlines() if line.startswith("motes: warning:")]


def test_each_step_records_its_file(tmp_path):
    a = snapshot(tmp_path / "a.npz", 1, time=0.5)
    convert(a, tmp_path / "run.motes", append=True)
    rec = motes.open(tmp_path / "run.motes").step(0).attributes[KEY]
    assert rec == {"file": "a.npz", "sha256": hashlib.sha256(a.read_bytes()).hexdigest(), "species": ["particles"]}


def test_reappending_a_file_is_refused_naming_the_step(tmp_path, capsys):
    a, b = snapshot(tmp_path / "a.npz", 1, time=0.5), snapshot(tmp_path / "b.npz", 2, time=1.0)
    ds = tmp_path / "run.motes"
    for f in (a, b):
        assert run(capsys, "convert", f, ds, "--append")[0] == 0
    status, _, err = run(capsys, "convert", a, ds, "--append")
    assert status == 2, err
    assert f"{a} is already step 0 of {ds}" in err and "--allow-duplicate" in err and "allow_duplicate" not in err
    assert motes.open(ds).steps == [0, 1]  # nothing added
    # motes write reads and records files the same way, and refuses the same way
    status, _, err = run(capsys, "write", ds, b)
    assert status == 2 and f"{b} is already step 1 of {ds}" in err and "--allow-duplicate" in err
    # Python: the same refusal, spelled for Python
    with pytest.raises(motes.UsageError, match="already step 0") as e:
        convert(a, ds, append=True)
    assert "allow_duplicate=True" in str(e.value) and "--allow-duplicate" not in str(e.value)
    assert motes.open(ds).steps == [0, 1]

    # asked for: added again, as a new step holding the same particles
    assert run(capsys, "convert", a, ds, "--append", "--allow-duplicate")[0] == 0
    assert run(capsys, "write", ds, b, "--allow-duplicate")[0] == 0
    convert(a, ds, append=True, allow_duplicate=True)
    d = motes.open(ds)
    assert d.steps == [0, 1, 2, 3, 4]
    for again, first in ((2, 0), (3, 1), (4, 0)):
        assert np.array_equal(np.sort(d.query(step=again)["w"]), np.sort(d.query(step=first)["w"]))

    # the same name with other bytes is another file; so are the same bytes under another name
    snapshot(a, 7, time=0.5)
    assert run(capsys, "convert", a, ds, "--append")[0] == 0
    shutil.copyfile(b, tmp_path / "b_copy.npz")
    assert run(capsys, "convert", tmp_path / "b_copy.npz", ds, "--append")[0] == 0
    assert motes.open(ds).steps == [0, 1, 2, 3, 4, 5, 6]


def test_a_file_of_several_steps_is_refused_step_by_step(tmp_path, capsys):
    """An H5Part file gives its steps' indexes; its record names each of them, so --as-step
    cannot slip the same step of the same file in again, while another step of it goes."""
    need("h5py")
    src = tmp_path / "sim.h5part"
    steps = tmp_path / "two.motes"
    rng = np.random.default_rng(3)
    with motes.Writer(steps) as w:
        for k in range(2):
            w.write_step(k, {"particles": {a: rng.random(N) for a in "xyz"}}, time=float(k))
    assert run(capsys, "convert", steps, src)[0] == 0
    ds = tmp_path / "run.motes"
    assert run(capsys, "convert", src, ds, "--append", "--step", "0")[0] == 0
    status, _, err = run(capsys, "convert", src, ds, "--append", "--step", "0", "--as-step", "5")
    assert status == 2 and f"step 0 of {src} is already step 0 of {ds}" in err, err
    assert run(capsys, "convert", src, ds, "--append", "--step", "1", "--as-step", "5")[0] == 0
    assert motes.open(ds).steps == [0, 5]


def test_another_selection_of_a_file_is_another_step(tmp_path, capsys):
    """Two groups of one HDF5 file are two steps; the same group again is refused."""
    h5py = need("h5py")
    src = tmp_path / "dump.h5"
    rng = np.random.default_rng(4)
    with h5py.File(src, "w") as f:
        for g in ("a", "b"):
            for axis in "xyz":
                f[f"{g}/{axis}"] = rng.random(N)
    ds = tmp_path / "run.motes"
    assert run(capsys, "convert", src, ds, "--append", "--from", "hdf5", "--group", "/a", "--as-step", "0")[0] == 0
    assert run(capsys, "convert", src, ds, "--append", "--from", "hdf5", "--group", "/b", "--as-step", "1")[0] == 0
    status, _, err = run(capsys, "convert", src, ds, "--append", "--from", "hdf5", "--group", "/a", "--as-step", "2")
    assert status == 2 and "is already step 0" in err, err
    assert motes.open(ds).step(1).attributes[KEY]["selection"] == {"group": "/b"}


def test_an_append_loop_warns_about_time_0_from_the_first_file_on(tmp_path):
    """for f in s*.npz; do motes convert $f run.motes --append; done: every process warns
    once; the first in full (what is missing, --time-from with a scalar the file has, --time),
    the later ones briefly."""
    for k in range(3):
        snapshot(tmp_path / f"s{k}.npz", k, aexp=0.1 * (k + 1))
    errs = []
    for k in range(3):
        status, _, err = motes_cli("convert", f"s{k}.npz", "run.motes", "--append", cwd=tmp_path)
        assert status == 0, err
        assert len(warning_lines(err)) == 1, err
        errs.append(warning_lines(err)[0])
    first, *later = errs
    assert first.startswith("motes: warning: s0.npz: no scalar 'time' (scalars: aexp)") and "step 0" in first
    assert "--time-from NAME" in first and "--time T" in first
    for k, line in enumerate(later, 1):
        assert line == (f"motes: warning: s{k}.npz: step {k} is written at time 0, as the dataset's last step was "
                        "(the file gives no time; --time-from NAME or --time T)")
        assert len(line) < len(first)
    for line in errs:  # the command line's spelling only
        assert "time_from" not in line and "read_options" not in line and "time=T" not in line
    ds = motes.open(tmp_path / "run.motes")
    assert ds.steps == [0, 1, 2] and ds.times == [0.0, 0.0, 0.0]
    # given the times, nothing to say
    status, _, err = motes_cli("convert", "s*.npz", "timed.motes", "--time-from", "aexp", cwd=tmp_path)
    assert status == 0 and not warning_lines(err), err
    assert motes.open(tmp_path / "timed.motes").times == pytest.approx([0.1, 0.2, 0.3])


def test_one_warning_per_run_and_for_motes_write(tmp_path, capsys):
    for k in range(4):
        snapshot(tmp_path / f"s{k}.npz", k)
    status, _, err = run(capsys, "convert", tmp_path / "s*.npz", tmp_path / "glob.motes")
    assert status == 0 and len(warning_lines(err)) == 1 and "s0.npz" in warning_lines(err)[0], err
    # motes write adds one step: it warns as an append does, the first write in full
    status, _, err = run(capsys, "write", tmp_path / "w.motes", tmp_path / "s0.npz")
    assert status == 0 and len(warning_lines(err)) == 1 and "--time-from NAME" in err and "--time T" in err, err
    status, _, err = run(capsys, "write", tmp_path / "w.motes", tmp_path / "s1.npz")
    assert status == 0 and "step 1 is written at time 0, as the dataset's last step was" in err, err
    status, _, err = run(capsys, "write", tmp_path / "w.motes", tmp_path / "s2.npz", "--time", "2")
    assert status == 0 and not warning_lines(err), err
    # a lone file converted to a dataset of its own is not a series: no warning
    status, _, err = run(capsys, "convert", tmp_path / "s3.npz", tmp_path / "one.motes")
    assert status == 0 and not warning_lines(err), err


def test_python_callers_read_the_python_spelling(tmp_path):
    snapshot(tmp_path / "s0.npz", 0, aexp=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        convert(tmp_path / "s0.npz", tmp_path / "run.motes", append=True)
    (w,) = [w for w in caught if issubclass(w.category, ConversionWarning)]
    text = str(w.message)
    assert "read_options={'time_from': NAME}" in text and "time=T" in text
    assert "--time" not in text
    # the same function called by the command line spells it for the command line
    from motes.convert.spelling import command_line

    snapshot(tmp_path / "s1.npz", 1, aexp=0.5)
    with warnings.catch_warnings(record=True) as caught, command_line():
        warnings.simplefilter("always")
        convert(tmp_path / "s1.npz", tmp_path / "run.motes", append=True)
    (w,) = [w for w in caught if issubclass(w.category, ConversionWarning)]
    assert "--time-from NAME or --time T" in str(w.message) and "read_options" not in str(w.message)


def test_errors_spell_options_for_their_reader(tmp_path, capsys):
    src = snapshot(tmp_path / "s.npz", 0, time=1.0)
    (tmp_path / "taken.parquet").write_bytes(b"PAR1")
    status, _, err = run(capsys, "convert", src, tmp_path / "taken.parquet")
    assert status == 2 and "pass --overwrite to replace it" in err and "overwrite=True" not in err, err
    with pytest.raises(motes.UsageError, match=r"pass overwrite=True to replace it"):
        convert(src, tmp_path / "taken.parquet")
    status, _, err = run(capsys, "convert", src, tmp_path / "out.h5")
    assert status == 2 and "choose with --to openpmd or --to h5part" in err, err
    with pytest.raises(motes.UsageError, match="choose with dst_format='openpmd' or dst_format='h5part'"):
        convert(src, tmp_path / "out.h5")
    assert "CLI:" not in err
