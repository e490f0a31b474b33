"""Tests for the ``motes`` command line (motes.cli), run in-process through ``main(argv)``."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import motes
from needs import need

_SRC = pathlib.Path(__file__).resolve().parents[3] / "python" / "motes"
try:
    import motes.cli as cli
    _FROM_SOURCE = False
except ImportError:  # installed package older than the source tree: load cli.py from the source
    motes.__path__.append(str(_SRC))
    import motes.cli as cli
    _FROM_SOURCE = True

main = cli.main

N = 60_000
SEED = 3
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(capsys, *argv):
    """Runs the CLI in-process; returns (status, stdout, stderr)."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def vpic(tmp_path_factory):
    """A vpic dataset written by `motes generate`, and the same data from motes.synth."""
    path = tmp_path_factory.mktemp("cli") / "vpic.motes"
    assert main(["generate", "vpic", str(N), str(path), "--seed", str(SEED), "--with-id", "--time", "0.5",
                 "--no-progress"]) == 0
    data = motes.synth.generate("vpic", N, seed=SEED, with_id=True)
    return path, data


def ids_where(data, mask):
    return set(data["id"][mask].tolist())


def f64(data, name):
    return data[name].astype(np.float64)


WHERE = "energy > 0.3 and q < 0"


def brute(data):
    """The WHERE query by brute force (comparisons are exact in float64, like the engine's)."""
    return (f64(data, "energy") > 0.3) & (f64(data, "q") < 0)


# --------------------------------------------------------------------------------------------------
# write -> info
# --------------------------------------------------------------------------------------------------
def test_write_npz_csv_parquet_then_info(tmp_path, capsys):
    pd = need("pandas")
    need("pyarrow")
    rng = np.random.default_rng(1)
    n = 20_000
    cols = {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n),
            "energy": rng.exponential(1.0, n).astype(np.float32),
            "flag": rng.random(n) < 0.5, "id": np.arange(n, dtype=np.uint64)}
    npz = tmp_path / "in.npz"
    np.savez(npz, **cols)
    ds = tmp_path / "w.motes"

    status, out, err = run(capsys, "write", ds, npz, "--time", "1.5", "--index", "energy=quantile",
                           "--unit", "energy=keV")
    assert status == 0, err
    assert "20,000" in out and "step 0" in out and "particles/s" in out

    df = pd.DataFrame({k: v[: n // 2] for k, v in cols.items()})
    df.to_csv(tmp_path / "in.csv", index=False)
    status, out, err = run(capsys, "write", ds, tmp_path / "in.csv", "--time", "2.5")  # next step: 1
    assert status == 0, err
    assert "step 1" in out

    df.iloc[: n // 4].to_parquet(tmp_path / "in.parquet")
    status, out, err = run(capsys, "write", ds, tmp_path / "in.parquet", "--step", "7", "--species", "ions")
    assert status == 0, err

    status, out, err = run(capsys, "info", ds, "--json", "--all")
    assert status == 0, err
    info = json.loads(out)
    assert info["step_count"] == 3
    assert [s["index"] for s in info["steps"]] == [0, 1, 7]
    assert [s["time"] for s in info["steps"]] == [1.5, 2.5, 0.0]
    assert info["steps"][0]["species"]["particles"]["count"] == n
    assert info["steps"][1]["species"]["particles"]["count"] == n // 2
    assert info["steps"][2]["species"]["ions"]["count"] == n // 4
    assert info["particle_count"] == n + n // 2 + n // 4
    assert info["species"] == ["ions", "particles"]
    first = info["files"][0]
    assert first["count"] == n
    byname = {c["name"]: c for c in first["columns"]}
    assert list(byname) == ["x", "y", "z", "energy", "flag", "id"]
    assert byname["flag"]["dtype"] == "u8" and byname["x"]["dtype"] == "f64"
    assert byname["energy"]["index"] == "quantile" and byname["energy"]["unit"] == "keV"
    assert byname["id"]["min"] == 0 and byname["id"]["max"] == n - 1
    sz = first["sizes"]
    assert sz["file_bytes"] >= sz["data_bytes"] > 0
    assert sz["overhead_percent"] == pytest.approx(100.0 * (sz["file_bytes"] - sz["data_bytes"]) / sz["data_bytes"])
    assert first["levels"] >= 1 and first["nodes"] >= 1
    assert np.all(np.array(first["bounds"]["min"]) <= np.array(first["bounds"]["max"]))

    # the data round-trip (file order differs: compare by id); npz is exact, csv text is parsed as float64
    back = motes.open(ds).query(step=0)
    order = np.argsort(back["id"])
    np.testing.assert_array_equal(back["energy"][order], cols["energy"])
    np.testing.assert_array_equal(back["x"][order], cols["x"])
    np.testing.assert_array_equal(back["flag"][order], cols["flag"].astype(np.uint8))
    back = motes.open(ds).query(step=1)
    order = np.argsort(back["id"])
    assert back["energy"].dtype == np.float64
    np.testing.assert_array_equal(back["energy"][order].astype(np.float32), cols["energy"][: n // 2])
    np.testing.assert_array_equal(back["x"][order], cols["x"][: n // 2])
    np.testing.assert_array_equal(back["flag"][order], cols["flag"][: n // 2].astype(np.uint8))

    status, out, err = run(capsys, "info", ds)  # human-readable: last step, one species
    assert status == 0, err
    assert "ions" in out and "of the values as numbers" in out and "codec" in out and "levels" in out and "dtype" in out


def test_write_prints_its_sizes_against_the_raw_values(tmp_path, capsys):
    """`motes write` says what the file takes as shares of the raw values, from the write's
    own summary: the file, the columns as stored, the index (the rest). Compressible columns
    make the file smaller than the raw values: no negative 'overhead' (it printed -37%)."""
    import re

    rng = np.random.default_rng(0)
    n = 50_000
    cols = {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "q": np.zeros(n),
            "id": np.arange(n, dtype=np.uint64)}
    np.savez(tmp_path / "c.npz", time=np.float64(1.0), **cols)
    status, out, err = run(capsys, "write", tmp_path / "w.motes", tmp_path / "c.npz")
    assert status == 0, err
    line = next(l for l in out.splitlines() if l.strip().startswith("bytes"))
    m = re.fullmatch(r"\s*bytes\s+\S+ \S+ on disk, ([\d.]+)% of the \S+ \S+ raw values: "
                     r"columns \S+ \S+ \(([\d.]+)%\), index \S+ \S+ \(([\d.]+)%\)", line)
    assert m, line
    assert "overhead" not in out and "-" not in line
    sizes = motes.open(tmp_path / "w.motes").describe()["files"][0]
    raw = sum(v.nbytes for v in cols.values())                          # the oracle: the arrays given
    on_disk = os.path.getsize(sizes["path"])
    stored = sizes["sizes"]["data_bytes"]                                # the columns as stored
    assert float(m.group(1)) == pytest.approx(100.0 * on_disk / raw, abs=0.051) and float(m.group(1)) < 100
    assert float(m.group(2)) == pytest.approx(100.0 * stored / raw, abs=0.051)
    assert float(m.group(3)) == pytest.approx(100.0 * (on_disk - stored) / raw, abs=0.051)


def test_write_rejects_bad_inputs(tmp_path, capsys):
    pd = need("pandas")
    n = 100
    df = pd.DataFrame({"x": np.zeros(n), "y": np.zeros(n), "z": np.zeros(n), "label": ["a"] * n})
    df.to_csv(tmp_path / "s.csv", index=False)
    status, _, err = run(capsys, "write", tmp_path / "a.motes", tmp_path / "s.csv")
    assert status == 2 and "'label'" in err and "Traceback" not in err

    np.savez(tmp_path / "noz.npz", x=np.zeros(n), y=np.zeros(n))
    status, _, err = run(capsys, "write", tmp_path / "b.motes", tmp_path / "noz.npz")
    assert status == 2 and "z" in err and "missing" in err

    status, _, err = run(capsys, "write", tmp_path / "c.motes", tmp_path / "absent.npz")
    assert status == 1 and "absent.npz" in err

    status, _, err = run(capsys, "write", tmp_path / "c.motes", tmp_path / "noz.npz", "--bogus")
    assert status == 2


def test_csv_without_pandas(vpic, tmp_path, capsys, monkeypatch):
    """The numpy fallbacks for reading and writing csv (pandas missing)."""
    path, data = vpic
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    status, out, err = run(capsys, "query", path, "--where", WHERE, "--columns", "x,y,z,id,energy",
                           "--batch-size", "500", "-o", tmp_path / "q.csv")
    assert status == 0, err
    status, out, err = run(capsys, "write", tmp_path / "r.motes", tmp_path / "q.csv")
    assert status == 0, err
    back = motes.open(tmp_path / "r.motes").query()
    assert set(back["id"].tolist()) == ids_where(data, brute(data))
    order, ref = np.argsort(back["id"]), np.argsort(data["id"])
    sel = np.sort(back["id"]).astype(np.int64)
    np.testing.assert_array_equal(back["energy"][order].astype(np.float32), data["energy"][ref][sel])
    np.testing.assert_array_equal(back["x"][order].astype(np.float32), data["x"][ref][sel])


# --------------------------------------------------------------------------------------------------
# query
# --------------------------------------------------------------------------------------------------
def test_query_outputs_match_brute_force(vpic, tmp_path, capsys):
    pd = need("pandas")
    pq = need("pyarrow.parquet")
    path, data = vpic
    expected = ids_where(data, brute(data))
    assert 0 < len(expected) < N

    status, out, err = run(capsys, "query", path, "--where", WHERE, "-o", tmp_path / "q.npz")
    assert status == 0, err
    with np.load(tmp_path / "q.npz") as z:
        assert sorted(z.files) == sorted(data)
        assert set(z["id"].tolist()) == expected
        assert len(z["id"]) == len(expected)
        # values travel with their ids
        order = np.argsort(z["id"])
        sel = np.sort(np.fromiter(expected, dtype=np.uint64))
        np.testing.assert_array_equal(z["energy"][order], data["energy"][np.argsort(data["id"])][sel])

    status, out, err = run(capsys, "query", path, "--where", WHERE, "--columns", "id,energy",
                           "--batch-size", "1000", "-o", tmp_path / "q.csv")
    assert status == 0, err
    df = pd.read_csv(tmp_path / "q.csv")
    assert list(df.columns) == ["id", "energy"]
    assert set(df["id"].tolist()) == expected and len(df) == len(expected)

    status, out, err = run(capsys, "query", path, "--where", WHERE, "--batch-size", "777",
                           "-o", tmp_path / "q.parquet")
    assert status == 0, err
    t = pq.read_table(tmp_path / "q.parquet")
    assert t.num_rows == len(expected)
    assert set(t.column("id").to_pylist()) == expected

    # box (inclusive) + expression, npz
    box = (60.0, 45.0, 0.0, 100.0, 55.0, 25.0)
    mask = brute(data)
    for a, lo, hi in zip("xyz", box[:3], box[3:]):
        mask &= (f64(data, a) >= lo) & (f64(data, a) <= hi)
    status, out, err = run(capsys, "query", path, "--where", WHERE, "--box", *box, "-o", tmp_path / "b.npz")
    assert status == 0, err
    with np.load(tmp_path / "b.npz") as z:
        assert set(z["id"].tolist()) == ids_where(data, mask)

    # an empty result still writes valid files
    status, out, err = run(capsys, "query", path, "--where", "energy > 1e9", "-o", tmp_path / "e.parquet")
    assert status == 0, err
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 0
    status, out, err = run(capsys, "query", path, "--where", "energy > 1e9", "-o", tmp_path / "e.csv")
    assert status == 0, err
    assert len(pd.read_csv(tmp_path / "e.csv")) == 0


def test_query_print_count_limit_quality(vpic, tmp_path, capsys):
    path, data = vpic
    n_expected = int(brute(data).sum())

    status, out, err = run(capsys, "query", path, "--where", WHERE, "--count")
    assert status == 0, err
    assert out.strip() == str(n_expected)

    status, out, err = run(capsys, "query", path, "--where", WHERE, "--limit", "5", "--columns", "id,x,energy")
    assert status == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split() == ["id", "x", "energy"]
    assert len(lines) == 2 + 5 + 1  # header, rule, rows, summary
    assert f"{n_expected:,} of {N:,}" in lines[-1]

    status, out, err = run(capsys, "query", path, "--where", WHERE, "--limit", "3", "-o", tmp_path / "l.npz")
    assert status == 0, err
    with np.load(tmp_path / "l.npz") as z:
        assert len(z["id"]) == 3 and set(z["id"].tolist()) <= ids_where(data, brute(data))

    status, out, err = run(capsys, "query", path, "--quality", "0.25", "--count")
    assert status == 0, err
    assert 0 < int(out) < N
    status, out, err = run(capsys, "query", path, "--quality-range", "0.25", "1", "--count")
    assert status == 0, err
    q = int(out)
    status, out, err = run(capsys, "query", path, "--quality", "0.25", "--count")
    assert int(out) + q == N


# --------------------------------------------------------------------------------------------------
# hist
# --------------------------------------------------------------------------------------------------
def test_hist_1d_plot_and_npz(vpic, tmp_path, capsys):
    need("matplotlib")
    path, data = vpic
    status, out, err = run(capsys, "hist", path, "energy", "--bins", "50", "--where", "q > 0",
                           "--plot", tmp_path / "e.png", "-o", tmp_path / "e.npz", "--log")
    assert status == 0, err
    assert "non-empty bins" in out and "#" in out
    assert (tmp_path / "e.png").read_bytes()[:8] == PNG_SIGNATURE
    mask = f64(data, "q") > 0
    e = f64(data, "energy")[mask]
    with np.load(tmp_path / "e.npz") as z:
        edges = z["edges"]
        assert len(edges) == 51
        assert edges[0] == e.min() and edges[-1] == e.max()
        ref, _ = np.histogram(e, bins=edges)
        np.testing.assert_array_equal(z["counts"], ref)
    assert f"total {int(mask.sum()):,}" in out

    # weights, explicit range, csv output
    status, out, err = run(capsys, "hist", path, "x", "--bins", "20", "--range", "50", "150",
                           "--weights", "energy", "-o", tmp_path / "w.csv")
    assert status == 0, err
    tab = np.loadtxt(tmp_path / "w.csv", delimiter=",", skiprows=1)
    ref, ref_edges = np.histogram(f64(data, "x"), bins=20, range=(50, 150), weights=f64(data, "energy"))
    np.testing.assert_allclose(tab[:, 2], ref, rtol=1e-9)
    np.testing.assert_array_equal(tab[:, 0], ref_edges[:-1])


def test_hist_2d_plot_and_npz(vpic, tmp_path, capsys):
    need("matplotlib")
    path, data = vpic
    box = (0.0, 0.0, 0.0, 200.0, 100.0, 25.0)
    status, out, err = run(capsys, "hist", path, "x", "y", "--bins", "40", "30", "--yrange", "40", "60",
                           "--box", *box, "--log", "--plot", tmp_path / "xy.png", "-o", tmp_path / "xy.npz")
    assert status == 0, err
    assert (tmp_path / "xy.png").read_bytes()[:8] == PNG_SIGNATURE
    mask = np.ones(N, bool)
    for a, lo, hi in zip("xyz", box[:3], box[3:]):
        mask &= (f64(data, a) >= lo) & (f64(data, a) <= hi)
    with np.load(tmp_path / "xy.npz") as z:
        assert z["counts"].shape == (40, 30)
        assert z["yedges"][0] == 40 and z["yedges"][-1] == 60
        ref, _, _ = np.histogram2d(f64(data, "x")[mask], f64(data, "y")[mask], bins=(z["xedges"], z["yedges"]))
        np.testing.assert_array_equal(z["counts"], ref.astype(np.int64))
    assert "peak" in out


# --------------------------------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------------------------------
def test_verify_ok_then_corrupted(tmp_path, capsys):
    path = tmp_path / "v.motes"
    assert main(["generate", "uniform", "20k", str(path), "--no-progress"]) == 0
    assert main(["generate", "uniform", "20k", str(path), "--seed", "1", "--no-progress"]) == 0
    capsys.readouterr()

    status, out, err = run(capsys, "verify", path, "--progress")
    assert status == 0, err
    assert out.startswith("OK") and "2 files" in out and "2 steps" in out

    data_file = motes.open(path).file(step=1).path
    assert pathlib.Path(data_file).parent.parent == path / "steps"
    size = os.path.getsize(data_file)
    with open(data_file, "r+b") as fh:
        fh.seek(size // 2)
        b = fh.read(1)
        fh.seek(size // 2)
        fh.write(bytes([b[0] ^ 0x5A]))

    status, out, err = run(capsys, "verify", path, "--no-progress")
    assert status == 1
    assert "checksum" in err and "Traceback" not in err
    assert not out.startswith("OK")


# --------------------------------------------------------------------------------------------------
# errors, version, help
# --------------------------------------------------------------------------------------------------
def test_user_errors(vpic, tmp_path, capsys):
    path, _ = vpic
    status, out, err = run(capsys, "query", path, "--where", "nosuch > 1")
    assert status == 2
    assert err.startswith("motes: error:") and "nosuch" in err

    status, out, err = run(capsys, "query", path, "--where", "energy >> 1 and (")
    assert status == 2 and err.startswith("motes: error:")

    status, out, err = run(capsys, "hist", path, "energy", "--where", "energy <")
    assert status == 2 and err.startswith("motes: error:")

    status, out, err = run(capsys, "query", path, "--columns", "id,nosuch")
    assert status == 2 and "nosuch" in err

    status, out, err = run(capsys, "hist", path, "nosuch")
    assert status == 2 and "nosuch" in err

    status, out, err = run(capsys, "query", path, "--step", "99")
    assert status == 2 and "99" in err

    missing = tmp_path / "missing.motes"
    for cmd in (["info", missing], ["query", missing, "--count"], ["verify", missing], ["hist", missing, "x"]):
        status, out, err = run(capsys, *cmd)
        assert status != 0
        assert "missing.motes" in err and "Traceback" not in err

    notds = tmp_path / "plain"
    notds.mkdir()
    status, out, err = run(capsys, "info", notds)
    assert status != 0 and "not a motes dataset" in err

    status, out, err = run(capsys, "query", path, "-o", tmp_path / "out.txt")
    assert status == 2 and ".txt" in err

    status, out, err = run(capsys, "query", path, "--quality", "2")
    assert status == 2

    status, out, err = run(capsys)  # no command
    assert status == 2


def test_version_and_help(capsys):
    status, out, _ = run(capsys, "version")
    assert status == 0 and motes.__version__ in out
    status, out, _ = run(capsys, "--version")
    assert status == 0 and motes.__version__ in out
    for cmd in ("info", "write", "query", "hist", "verify", "generate", "version"):
        status, out, _ = run(capsys, cmd, "--help")
        assert status == 0 and "examples:" in out, cmd


def test_python_m_help():
    if _FROM_SOURCE:  # the installed package lacks cli.py: emulate `python -m motes.cli` from the source
        code = ("import sys, runpy, motes; motes.__path__.append(sys.argv.pop(1)); "
                "runpy.run_module('motes.cli', run_name='__main__', alter_sys=True)")
        cmd = [sys.executable, "-c", code, str(_SRC), "--help"]
    else:
        cmd = [sys.executable, "-m", "motes.cli", "--help"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: motes") and "query" in r.stdout and "examples:" in r.stdout


# --------------------------------------------------------------------------------------------------
# --steps: queries and histograms across steps
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def series3(tmp_path_factory):
    """Three steps (0, 10, 20) of vpic particles with ids."""
    path = tmp_path_factory.mktemp("cli") / "series.motes"
    data = {}
    for k in (0, 10, 20):
        data[k] = motes.synth.vpic(4000 + 100 * k, seed=40 + k, with_id=True)
        motes.write(path, data[k], step=k, time=0.5 * k, sync=False)
    return path, data


def test_query_and_hist_across_steps(series3, tmp_path, capsys):
    path, data = series3
    ds = motes.open(path)
    masks = {k: brute(d) for k, d in data.items()}

    status, out, err = run(capsys, "query", path, "--steps", "all", "--where", WHERE, "--count")
    assert status == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split() == ["step", "time", "count"]
    assert [ln.split() for ln in lines[2:]] == [[str(k), f"{0.5 * k:g}", str(int(m.sum()))] for k, m in masks.items()]

    status, out, err = run(capsys, "query", path, "--steps", "10:", "--where", WHERE, "-o", tmp_path / "s.npz")
    assert status == 0, err
    assert "with the step column" in out
    ref = ds.query(WHERE, steps=[10, 20])
    with np.load(tmp_path / "s.npz") as z:
        assert list(z.files) == list(ref)
        for name in ref:
            np.testing.assert_array_equal(z[name], ref[name])
        for k in (10, 20):
            assert set(z["id"][z["step"] == k].tolist()) == ids_where(data[k], masks[k])

    pd = need("pandas")
    status, out, err = run(capsys, "query", path, "--steps", "0,20", "--where", WHERE, "--columns", "id,energy",
                           "--batch-size", "50", "-o", tmp_path / "s.csv")
    assert status == 0, err
    df = pd.read_csv(tmp_path / "s.csv")
    assert list(df.columns) == ["step", "id", "energy"]
    for k in (0, 20):
        assert set(df["id"][df["step"] == k].tolist()) == ids_where(data[k], masks[k])
    assert set(df["step"].tolist()) == {0, 20}

    status, out, err = run(capsys, "query", path, "--steps", "all", "--where", WHERE, "--columns", "id,x",
                           "--limit", "4")
    assert status == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split() == ["step", "id", "x"] and len(lines) == 2 + 4 + 1
    total = sum(int(m.sum()) for m in masks.values())
    assert f"{total:,} of {sum(len(d['id']) for d in data.values()):,} particles match in 3 steps" in lines[-1]

    status, out, err = run(capsys, "hist", path, "energy", "--steps", "all", "--where", WHERE, "--bins", "12",
                           "-o", tmp_path / "h.npz")
    assert status == 0, err
    counts, edges, steps = ds.histogram("energy", bins=12, where=WHERE, steps="all")
    with np.load(tmp_path / "h.npz") as z:
        np.testing.assert_array_equal(z["counts"], counts)
        np.testing.assert_array_equal(z["edges"], edges)
        assert z["steps"].tolist() == [0, 10, 20] and z["times"].tolist() == [0.0, 5.0, 10.0]
        assert z["counts"].shape == (3, 12)
    for k, c in zip((0, 10, 20), counts):
        assert c.sum() == masks[k].sum()
        assert any(ln.split()[:1] == [str(k)] and f"{int(c.sum()):,}" in ln for ln in out.splitlines())

    status, out, err = run(capsys, "hist", path, "x", "y", "--steps", "0:11", "--bins", "4", "3",
                           "-o", tmp_path / "h2.csv")
    assert status == 0, err
    h = np.loadtxt(tmp_path / "h2.csv", delimiter=",", skiprows=1)
    c2 = ds.histogram("x", "y", bins=(4, 3), steps=[0, 10])[0]
    assert h.shape == (2 * 4 * 3, 6)
    np.testing.assert_array_equal(h[:, 0], np.repeat([0, 10], 12))
    np.testing.assert_array_equal(h[:, 5], c2.ravel())

    need("matplotlib")
    status, out, err = run(capsys, "hist", path, "energy", "--steps", "all", "--log", "--plot", tmp_path / "h.png")
    assert status == 0, err
    assert (tmp_path / "h.png").read_bytes()[:8] == PNG_SIGNATURE


def test_steps_user_errors(series3, capsys):
    path, _ = series3
    status, out, err = run(capsys, "query", path, "--steps", "all", "--step", "0")
    assert status == 2 and "--step and --steps" in err
    status, out, err = run(capsys, "query", path, "--steps", "0,5,7", "--count")
    assert status == 2 and "no steps 5, 7 (steps: 0, 10, 20)" in err
    status, out, err = run(capsys, "hist", path, "energy", "--steps", "0:x")
    assert status == 2 and "invalid step index 'x'" in err
    status, out, err = run(capsys, "query", path, "--steps", "all", "--columns", "id,nosuch")
    assert status == 2 and "nosuch" in err and "step 0" in err
    status, out, err = run(capsys, "hist", path, "x", "y", "--steps", "all", "--plot", "xy.png")
    assert status == 2 and "--plot with --steps" in err
    status, out, err = run(capsys, "query", path, "--steps", "30:", "--count")
    assert status == 2 and "selects no step" in err


def test_no_command_imports_another():
    """A command's module imports the shared modules of motes.cli (options, common, text,
    writing), never another command's."""
    import ast
    import pathlib

    import motes.cli as package

    commands = {m.__name__.rsplit(".", 1)[1] for m in package.COMMANDS}
    for name in commands:
        tree = ast.parse((pathlib.Path(package.__file__).parent / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                assert node.module not in commands, f"cli/{name}.py imports cli/{node.module}.py"
                assert node.module is not None, f"cli/{name}.py imports from the package itself"


def test_shared_options_are_defined_once():
    """Every command taking an option of the registry (--where, --box, --species, --step,
    --steps, ...) takes it as the registry defines it: the same flags, type, metavar, nargs."""
    import argparse

    from motes.cli import build_parser
    from motes.cli.options import OPTIONS

    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    by_flag = {flag: (key, o) for key, o in OPTIONS.items() for flag in o.flags if flag.startswith("-")}
    seen = set()
    for command, parser in subs.choices.items():
        for action in parser._actions:
            found = {by_flag[f][0] for f in action.option_strings if f in by_flag}
            for key in found:
                option = OPTIONS[key]
                seen.add(key)
                assert tuple(action.option_strings[:len(option.flags)]) == option.flags, (command, key)
                for attr in ("type", "metavar", "nargs"):
                    if attr in option.settings:
                        assert getattr(action, attr) == option.settings[attr], (command, key, attr)
    assert {"where", "box", "species", "step", "steps"} <= seen
