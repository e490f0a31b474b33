"""Dataset.describe(): the report of `motes info`, as a plain JSON-serialisable dict, checked
against a dataset written here; `motes info --json` prints exactly that dict."""

import json
import os

import numpy as np
import pytest

import motes
from motes.cli import main
from motes.convert.base import openpmd_unit

MICRON = openpmd_unit(1e-6, [1, 0, 0, 0, 0, 0, 0])


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("describe") / "run.motes"
    rng = np.random.default_rng(5)
    n = 5000
    e = {"x": rng.uniform(-5, 5, n), "y": rng.uniform(0, 2, n), "z": rng.uniform(1, 3, n),
         "energy": rng.exponential(1.0, n).astype(np.float32), "id": np.arange(n, dtype=np.uint64),
         "q": rng.integers(-3, 3, n).astype(np.int16), "w": np.full(n, np.nan)}
    e["energy"][[3, 77]] = np.nan
    ions = {a: rng.uniform(0, 1, 300).astype(np.float32) for a in ("x", "y", "z", "energy")}
    w = motes.Writer(path, sync=False, leaf_size=64, lod_count=4)
    w.write_step(0, {"electrons": e, "ions": ions}, time=0.5, attributes={"dt": 0.25},
                 index={"energy": "quantile"}, units={"x": MICRON, "y": MICRON, "z": MICRON, "energy": "keV"})
    halves = ({k: v[: n // 2] for k, v in e.items()}, {k: v[n // 2:] for k, v in e.items()})
    w.write_step_chunks(4, {"electrons": iter(halves)}, time=1.5)  # two part files
    w.write_step(9, {a: np.zeros(0) for a in "xyz"}, time=2.5, species_name="electrons")  # no particles
    ds = motes.open(path)
    ds.set_attributes({"code": "test", "deck": {"ppc": 4}})
    return motes.open(path), e, ions


def test_steps_species_counts_and_bounds(written):
    ds, e, ions = written
    d = ds.describe()
    assert d["path"] == ds.path and d["attributes"] == {"code": "test", "deck": {"ppc": 4}}
    assert d["step_count"] == 3 and d["species"] == ["electrons", "ions"]
    assert d["particle_count"] == 2 * len(e["x"]) + len(ions["x"])
    assert [(s["index"], s["time"]) for s in d["steps"]] == [(0, 0.5), (4, 1.5), (9, 2.5)]
    assert d["steps"][0]["attributes"] == {"dt": 0.25}
    first = d["steps"][0]["species"]
    assert first["electrons"]["count"] == len(e["x"]) and first["ions"]["count"] == len(ions["x"])
    assert first["electrons"]["bounds"] == {"min": [float(e[a].min()) for a in "xyz"],
                                            "max": [float(e[a].max()) for a in "xyz"]}
    assert d["steps"][2]["species"]["electrons"]["count"] == 0
    assert json.loads(json.dumps(d, allow_nan=False)) == d  # strict JSON (no NaN), and nothing JSON changes
    # files: the last step by default, every species of it
    assert [(f["step"], f["species"], f["count"]) for f in d["files"]] == [(9, "electrons", 0)]


def test_files_schema_and_storage(written):
    ds, e, _ = written
    d = ds.describe(0, "electrons")
    (f,) = d["files"]
    assert (f["step"], f["species"], f["count"], f["parts"]) == (0, "electrons", len(e["x"]), 1)
    cols = {c["name"]: c for c in f["columns"]}
    assert list(cols) == list(e)
    assert {k: c["dtype"] for k, c in cols.items()} == {"x": "f64", "y": "f64", "z": "f64", "energy": "f32",
                                                        "id": "u64", "q": "i16", "w": "f64"}
    assert (cols["w"]["min"], cols["w"]["max"], cols["w"]["nan_count"]) == (None, None, len(e["x"]))  # no range
    assert cols["energy"]["index"] == "quantile" and cols["x"]["index"] == "none"
    assert (cols["x"]["unit"], cols["x"]["unit_label"], cols["x"]["unit_si"]) == (MICRON, "µm", 1e-6)
    assert cols["x"]["unit_dimension"] == [1, 0, 0, 0, 0, 0, 0]
    assert (cols["energy"]["unit_label"], cols["energy"]["unit_si"]) == ("keV", None)
    assert cols["energy"]["nan_count"] == 2
    assert cols["energy"]["min"] == float(np.nanmin(e["energy"])) and cols["q"]["max"] == int(e["q"].max())
    for name, c in cols.items():
        st = c["storage"]
        assert st["raw_bytes"] == len(e["x"]) * e[name].dtype.itemsize
        if name == "id":  # format 2.7: the ids are stored only as their index (docs/format.md §4.15)
            assert st["data_bytes"] == 0 and st["codec"] == "id index"
            continue
        assert 0 < st["data_bytes"] <= st["raw_bytes"] + 64 * 100 and st["codec"]
        assert ("codes_codec" in st) == (c["index"] == "quantile")
    assert sum(c["storage"]["data_bytes"] for c in cols.values()) == f["sizes"]["data_bytes"]
    sz = f["sizes"]
    assert sz["file_bytes"] == os.path.getsize(f["path"]) == sz["data_bytes"] + sz["overhead_bytes"]
    assert sz["overhead_percent"] == pytest.approx(100.0 * sz["overhead_bytes"] / sz["data_bytes"])
    assert f["levels"] >= 2 and f["nodes"] > 1 and (f["leaf_size"], f["lod_count"]) == (64, 4)
    assert f["bounds"] == d["steps"][0]["species"]["electrons"]["bounds"]
    assert f["format_version"].count(".") == 1


def test_part_files(written):
    ds, e, _ = written
    (f,) = ds.describe(4)["files"]
    assert f["parts"] == 2 and len(f["part_files"]) == 2
    assert [p["count"] for p in f["part_files"]] == [len(e["x"]) // 2, len(e["x"]) - len(e["x"]) // 2]
    assert sum(p["sizes"]["file_bytes"] for p in f["part_files"]) == f["sizes"]["file_bytes"]
    for p in f["part_files"]:
        assert os.path.getsize(p["path"]) == p["sizes"]["file_bytes"]
    lo = np.min([p["bounds"]["min"] for p in f["part_files"]], axis=0).tolist()
    assert lo == f["bounds"]["min"]
    cols = {c["name"]: c for c in f["columns"]}
    assert cols["energy"]["nan_count"] == 2 and cols["id"]["storage"]["raw_bytes"] == 8 * len(e["x"])
    assert json.loads(json.dumps(f, allow_nan=False)) == f


def test_all_steps_and_errors(written):
    ds, _, _ = written
    d = ds.describe(all_steps=True)
    assert [(f["step"], f["species"]) for f in d["files"]] == [(0, "electrons"), (0, "ions"), (4, "electrons"),
                                                              (9, "electrons")]
    assert [f["step"] for f in ds.describe(species="electrons", all_steps=True)["files"]] == [0, 4, 9]
    with pytest.raises(motes.UsageError, match=r"step 9 has no species 'ions' \(species: electrons\)"):
        ds.describe(species="ions")
    with pytest.raises(motes.UsageError, match="dataset has no step 3"):
        ds.describe(3)


@pytest.mark.parametrize("args, kwargs", [([], {}), (["--all"], {"all_steps": True}),
                                          (["--step", "0", "--species", "ions"], {"step": 0, "species": "ions"})])
def test_info_json_is_describe(written, capsys, args, kwargs):
    ds, _, _ = written
    assert main(["info", ds.path, "--json", *args]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == ds.describe(**kwargs)
    assert out.strip() == json.dumps(ds.describe(**kwargs), indent=2, allow_nan=False)
    assert main(["info", ds.path, *args]) == 0  # the text form of the same report
    text = capsys.readouterr().out
    assert "steps      3 (index 0 .. 9, time 0.5 .. 2.5)" in text and "species    electrons, ions" in text
