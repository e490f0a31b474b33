"""Output of real codes imports as written: FBPIC's openPMD files (constant records of shape
[1], written with h5py), npz snapshots with scalars (pysco, FBPIC), and time series built
from one file per snapshot, from the command line. Every input here is made by the test."""

import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from needs import need

import motes
from motes.cli import main
from motes.convert import ConversionWarning, convert

h5py = need("h5py")
need("openpmd_api")

ME, C = 9.1093837e-31, 299792458.0
VALIDATOR = os.path.join(os.path.dirname(sys.executable), "openPMD_check_h5")


def fbpic_like(folder, iterations=(100, 200), n=1000, extra=None):
    """What FBPIC's ParticleDiagnostic writes: one data%08d.h5 file per iteration, made with
    h5py; mass, charge and positionOffset/{x,y,z} are constant records whose `shape` is [1]."""
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    out = {}
    for it in iterations:
        dt = 1e-16
        with h5py.File(os.path.join(folder, "data%08d.h5" % it), "w") as f:
            for k, v in {"openPMD": "1.1.0", "software": "fbpic", "date": "2026-11-23 10:00:00 +0000",
                         "meshesPath": "fields/", "particlesPath": "particles/", "iterationEncoding": "fileBased",
                         "iterationFormat": "data%T.h5", "basePath": "/data/%T/"}.items():
                f.attrs[k] = np.bytes_(v)
            f.attrs["openPMDextension"] = np.uint32(1)
            bp = f.require_group("/data/%d/" % it)
            bp.attrs["time"], bp.attrs["dt"], bp.attrs["timeUnitSI"] = it * dt, dt, 1.0
            sp = f.require_group("/data/%d/particles/electrons" % it)
            sp.attrs["particleShape"] = 1.0
            for k, v in {"currentDeposition": "directMorseNielson", "particleSmoothing": "none",
                         "particlePush": "Vay", "particleInterpolation": "uniform"}.items():
                sp.attrs[k] = np.bytes_(v)

            def record(g, dims, macro, power):
                g.attrs["unitDimension"] = np.array(dims, dtype=np.float64)
                g.attrs["timeOffset"] = 0.0
                g.attrs["macroWeighted"] = np.uint32(macro)
                g.attrs["weightingPower"] = float(power)

            for q, dims, value in (("mass", [0, 1, 0, 0, 0, 0, 0], ME), ("charge", [0, 0, 1, 1, 0, 0, 0], -1.602e-19)):
                g = sp.require_group(q)
                record(g, dims, 0, 1)
                g.attrs["unitSI"], g.attrs["value"] = 1.0, value
                g.attrs["shape"] = np.array([1], dtype=np.uint64)
            po = sp.require_group("positionOffset")
            record(po, [1, 0, 0, 0, 0, 0, 0], 0, 0)
            for c in "xyz":
                g = po.require_group(c)
                g.attrs["unitSI"], g.attrs["value"] = 1.0, 0.0
                g.attrs["shape"] = np.array([1], dtype=np.uint64)
            d = {"x": rng.normal(0, 5e-6, n), "y": rng.normal(0, 5e-6, n), "z": rng.uniform(0, 4e-5, n),
                 "ux": rng.normal(0, 0.1, n), "uy": rng.normal(0, 0.1, n), "uz": rng.normal(5, 1, n),
                 "w": rng.uniform(1e5, 2e5, n), "id": rng.permutation(n).astype(np.uint64) + 1}
            for c in "xyz":
                sp.create_dataset("position/" + c, data=d[c]).attrs["unitSI"] = 1.0
                sp.create_dataset("momentum/" + c, data=d["u" + c] * ME * C).attrs["unitSI"] = 1.0
            record(sp["position"], [1, 0, 0, 0, 0, 0, 0], 0, 0)
            record(sp["momentum"], [1, 1, -1, 0, 0, 0, 0], 0, 1)
            for name, key, macro in (("weighting", "w", 1), ("id", "id", 0)):
                ds = sp.create_dataset(name, data=d[key])
                ds.attrs["unitSI"] = 1.0
                record(ds, [0] * 7, macro, macro)
            if extra:
                extra(sp, n)
            out[it] = d
    return os.path.join(folder, "data%T.h5"), out


def test_fbpic_openpmd_imports_as_written(tmp_path):
    src, data = fbpic_like(str(tmp_path / "diags" / "hdf5"))
    assert main(["convert", src, str(tmp_path / "run.motes"), "--no-progress"]) == 0
    ds = motes.open(tmp_path / "run.motes")
    assert ds.steps == [100, 200]
    assert ds.times == pytest.approx([1e-14, 2e-14])
    for it, d in data.items():
        t = ds.query(step=it)
        order, want = np.argsort(t["id"]), np.argsort(d["id"])
        for c in "xyz":
            np.testing.assert_array_equal(t[c][order], d[c][want])
        np.testing.assert_array_equal(t["momentum_z"][order], (d["uz"] * ME * C)[want])
        np.testing.assert_array_equal(t["weighting"][order], d["w"][want])
        assert t["id"].dtype == np.uint64
        records = ds.step(it).attributes["species_attributes"]["electrons"]["openpmd"]["records"]
        assert records["mass"]["components"][""]["constant"] == ME
        assert records["charge"]["components"][""]["constant"] == -1.602e-19
    # ... and goes back out as openPMD that the validator accepts, constants intact
    assert main(["convert", str(tmp_path / "run.motes"), str(tmp_path / "back_%T.h5"), "--no-progress"]) == 0
    r = subprocess.run([VALIDATOR, "-i", str(tmp_path / "back_200.h5")], capture_output=True, text=True, timeout=60)
    assert re.search(r"Result: 0 Errors", r.stdout), r.stdout
    with h5py.File(tmp_path / "back_200.h5") as f:
        assert f["/data/200/particles/electrons/mass"].attrs["value"] == ME


def test_a_record_motes_cannot_hold_is_skipped_with_its_reason(tmp_path, capsys):
    def extra(sp, n):
        for name, shape in (("E_interp", (n // 2,)), ("B_grid", (n, 2))):  # wrong length; 2-D
            ds = sp.create_dataset(name, data=np.zeros(shape))
            ds.attrs["unitSI"], ds.attrs["timeOffset"] = 1.0, 0.0
            ds.attrs["unitDimension"] = np.zeros(7)

    src, _ = fbpic_like(str(tmp_path / "h5"), iterations=(100,), extra=extra)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        convert(src, tmp_path / "a.motes")
    text = [str(w.message) for w in caught if issubclass(w.category, ConversionWarning)]
    assert any("record 'E_interp'" in t and "500 values" in t and "1000 particles" in t for t in text), text
    assert any("record 'B_grid'" in t and "shape" in t for t in text), text
    assert motes.open(tmp_path / "a.motes").count() == 1000
    assert main(["convert", src, str(tmp_path / "b.motes"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "motes: warning:" in err and "E_interp" in err


def pysco_like(path, seed, iteration, time, n=2000):
    rng = np.random.default_rng(seed)
    cols = {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "vx": rng.normal(size=n).astype(np.float32),
            "vy": rng.normal(size=n).astype(np.float32), "vz": rng.normal(size=n).astype(np.float32),
            "id": np.arange(n, dtype=np.uint64)}
    scalars = {"aexp": np.float64(1 / (1 + 2.5 - iteration / 100)), "redshift": np.float64(2.5 - iteration / 100),
               "boxlen": np.float64(100.0), "iteration": np.int64(iteration), "time": np.float64(time),
               "code": np.str_("pysco")}
    np.savez(path, **cols, **scalars)
    return cols, scalars


@pytest.mark.parametrize("how", ["write", "convert"])
def test_npz_scalars_are_step_attributes(tmp_path, how):
    cols, scalars = pysco_like(tmp_path / "snap.npz", 1, iteration=42, time=0.7)
    out = tmp_path / "run.motes"
    args = ["write", str(out), str(tmp_path / "snap.npz")] if how == "write" else \
        ["convert", str(tmp_path / "snap.npz"), str(out)]
    assert main(args + ["--no-progress"]) == 0
    ds = motes.open(out)
    assert ds.steps == [42] and ds.times == [0.7]
    attrs = ds.step().attributes
    assert attrs["aexp"] == scalars["aexp"] and attrs["boxlen"] == 100.0 and attrs["code"] == "pysco"
    assert attrs["iteration"] == 42
    t = ds.query()
    order = np.argsort(t["id"])
    for c in cols:
        np.testing.assert_array_equal(t[c][order], cols[c])


def test_npz_time_from_and_position_arrays(tmp_path):
    rng = np.random.default_rng(3)
    pos = rng.random((500, 3))
    np.savez(tmp_path / "fb.npz", position=pos, ux=rng.normal(size=500), t=np.float64(3.25e-14),
             iteration=np.int32(7))
    assert main(["write", str(tmp_path / "a.motes"), str(tmp_path / "fb.npz"), "--time-from", "t",
                 "--no-progress"]) == 0
    ds = motes.open(tmp_path / "a.motes")
    assert ds.steps == [7] and ds.times == [3.25e-14]
    assert sorted(ds.query()["x"]) == sorted(pos[:, 0])
    assert sorted(c.name for c in ds.schema()) == ["ux", "x", "y", "z"]
    convert(tmp_path / "fb.npz", tmp_path / "b.motes", read_options={"time_from": "t"})
    assert motes.open(tmp_path / "b.motes").times == [3.25e-14]
    assert main(["write", str(tmp_path / "c.motes"), str(tmp_path / "fb.npz"), "--time-from", "nope"]) == 2


def test_npz_scalar_named_like_a_position_is_an_error(tmp_path, capsys):
    np.savez(tmp_path / "bad.npz", x=np.float64(1.0), y=np.zeros(3), z=np.zeros(3))
    assert main(["write", str(tmp_path / "a.motes"), str(tmp_path / "bad.npz")]) == 2
    assert "'x' is a single value" in capsys.readouterr().err


def test_exported_npz_writes_back_identically(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    cols = {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n).astype(np.float32),
            "e": rng.random(n).astype(np.float32), "k": rng.integers(0, 9, n).astype(np.int16)}
    motes.write(tmp_path / "a.motes", cols, step=12, time=4.5, species="ions", attributes={"run": "r1"},
                units={"e": "keV", "x": "m"}, sync=False)
    assert main(["convert", str(tmp_path / "a.motes"), str(tmp_path / "a.npz"), "--no-progress"]) == 0
    assert main(["write", str(tmp_path / "b.motes"), str(tmp_path / "a.npz"), "--no-progress"]) == 0
    a, b = motes.open(tmp_path / "a.motes"), motes.open(tmp_path / "b.motes")
    assert b.steps == [12] and b.times == [4.5] and b.species_names() == ["ions"]
    assert b.step().attributes["run"] == "r1"
    assert [(c.name, c.dtype, c.unit) for c in a.schema()] == [(c.name, c.dtype, c.unit) for c in b.schema()]
    ta, tb = a.query(), b.query()
    for c in cols:
        np.testing.assert_array_equal(np.sort(ta[c]), np.sort(tb[c]))


def test_series_from_one_file_per_snapshot(tmp_path):
    for k, it in enumerate((10, 20, 30)):
        pysco_like(tmp_path / f"snap_{it:05d}.npz", k, iteration=it, time=0.1 * it)
    # one call: a glob, indexes from each file's 'iteration' scalar
    assert main(["convert", str(tmp_path / "snap_*.npz"), str(tmp_path / "glob.motes"), "--attr", "code=pysco",
                 "--no-progress"]) == 0
    ds = motes.open(tmp_path / "glob.motes")
    assert ds.steps == [10, 20, 30] and ds.times == pytest.approx([1.0, 2.0, 3.0])
    assert all(ds.step(s).attributes["code"] == "pysco" for s in ds.steps)
    # one call: a %T pattern, indexes from the file names
    assert main(["convert", str(tmp_path / "snap_%05T.npz"), str(tmp_path / "pat.motes"), "--no-progress"]) == 0
    assert motes.open(tmp_path / "pat.motes").steps == [10, 20, 30]
    # three calls with --append, each with its own index, time and attributes
    for k, it in enumerate((10, 20, 30)):
        assert main(["convert", str(tmp_path / f"snap_{it:05d}.npz"), str(tmp_path / "app.motes"), "--append",
                     "--as-step", str(k), "--time", str(k * 0.5), "--attr", f'meta={{"snap": {it}}}',
                     "--no-progress"]) == 0
    ds = motes.open(tmp_path / "app.motes")
    assert ds.steps == [0, 1, 2] and ds.times == [0.0, 0.5, 1.0]
    assert ds.step(2).attributes["meta"] == {"snap": 30} and ds.step(2).attributes["aexp"] > 0
    assert ds.count(step=1) == 2000
    # appending a step the dataset has is refused, naming it, and changes nothing
    assert main(["convert", str(tmp_path / "snap_00010.npz"), str(tmp_path / "app.motes"), "--append",
                 "--as-step", "1"]) == 2
    assert motes.open(tmp_path / "app.motes").steps == [0, 1, 2]
    motes.open(tmp_path / "app.motes").verify()


def test_append_refuses_what_is_not_a_dataset(tmp_path):
    pysco_like(tmp_path / "s.npz", 0, iteration=1, time=0.0)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "notes.txt").write_text("mine")
    with pytest.raises(motes.UsageError, match="not a motes dataset"):
        convert(tmp_path / "s.npz", tmp_path / "dir", dst_format="motes", append=True)
    with pytest.raises(motes.UsageError, match="one step"):
        pysco_like(tmp_path / "t.npz", 1, iteration=2, time=0.0)
        convert(str(tmp_path / "*.npz"), tmp_path / "x.motes", as_step=5)


def _untimed(path, seed, **scalars):
    """An .npz of particles that records neither its step nor its time."""
    rng = np.random.default_rng(seed)
    np.savez(path, x=rng.random(50), y=rng.random(50), z=rng.random(50), **scalars)
    return path


def test_append_one_file_at_a_time_continues_after_the_last_step(tmp_path, capsys):
    """Files that do not give their index, appended one call each: each continues after the
    dataset's last step (it was 'step 0 already exists' from the second file on); a glob
    appended later continues from there too; --as-step still chooses."""
    files = [_untimed(tmp_path / f"snap_{k}.npz", k, a=np.float64(k)) for k in range(3)]
    out = tmp_path / "run.motes"
    for f in files:
        assert main(["convert", str(f), str(out), "--append", "--no-progress"]) == 0, capsys.readouterr().err
    ds = motes.open(out)
    assert ds.steps == [0, 1, 2]
    for k, f in enumerate(files):  # each step holds its file's particles
        np.testing.assert_array_equal(np.sort(ds.query(step=k)["x"]), np.sort(np.load(f)["x"]))
    more = [_untimed(tmp_path / f"more_{k}.npz", 10 + k) for k in range(2)]
    assert main(["convert", str(tmp_path / "more_*.npz"), str(out), "--append", "--no-progress"]) == 0
    ds = motes.open(out)
    assert ds.steps == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(np.sort(ds.query(step=4)["x"]), np.sort(np.load(more[1])["x"]))
    capsys.readouterr()
    # a file the dataset holds already: refused, unless asked for (see test_convert_append_loop.py)
    assert main(["convert", str(files[0]), str(out), "--append", "--as-step", "9", "--no-progress"]) == 2
    assert "is already step 0" in capsys.readouterr().err
    assert main(["convert", str(files[0]), str(out), "--append", "--as-step", "9", "--allow-duplicate",
                 "--no-progress"]) == 0
    assert motes.open(out).steps == [0, 1, 2, 3, 4, 9]
    assert main(["convert", str(files[0]), str(out), "--append", "--as-step", "2", "--allow-duplicate"]) == 2
    assert "step 2" in capsys.readouterr().err
    # files that give their index keep it
    pysco_like(tmp_path / "it.npz", 5, iteration=42, time=1.0)
    assert main(["convert", str(tmp_path / "it.npz"), str(out), "--append", "--no-progress"]) == 0
    assert motes.open(out).steps == [0, 1, 2, 3, 4, 9, 42]
    motes.open(out).verify()


def test_a_series_without_times_warns_and_names_time_from(tmp_path, capsys):
    for k in range(3):
        _untimed(tmp_path / f"snap_{k}.npz", k, aexp=np.float64(0.1 * (k + 1)))
    assert main(["convert", str(tmp_path / "snap_%T.npz"), str(tmp_path / "a.motes"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("motes: warning:") == 1, err  # once for the series
    assert "snap_0.npz: no scalar 'time' (scalars: aexp)" in err and "written at time 0" in err
    assert "--time-from NAME" in err
    assert motes.open(tmp_path / "a.motes").times == [0.0, 0.0, 0.0]
    # as it says: --time-from takes the times, and nothing is said
    assert main(["convert", str(tmp_path / "snap_%T.npz"), str(tmp_path / "b.motes"), "--time-from", "aexp",
                 "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert motes.open(tmp_path / "b.motes").times == pytest.approx([0.1, 0.2, 0.3])
    # one file into a new dataset: its time 0 is no series, no warning
    assert main(["convert", str(tmp_path / "snap_0.npz"), str(tmp_path / "c.motes"), "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err
    # appended one by one, the second file on builds a series: warned, naming --time too (briefly:
    # the dataset's last step is at time 0 already; see test_convert_append_loop.py)
    assert main(["convert", str(tmp_path / "snap_1.npz"), str(tmp_path / "c.motes"), "--append",
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "snap_1.npz: step 1 is written at time 0" in err and "--time-from NAME or --time T" in err, err
    assert main(["convert", str(tmp_path / "snap_2.npz"), str(tmp_path / "c.motes"), "--append", "--time", "2.5",
                 "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert motes.open(tmp_path / "c.motes").times == [0.0, 0.0, 2.5]
