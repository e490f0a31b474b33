"""The extension's interface: the core's option and result structs as Python classes (the
only definitions of the defaults), attributes crossing as Python objects, the dtype table
and the version from the core."""

import importlib.metadata
import math
import re
from pathlib import Path

import numpy as np
import pytest

import motes
from motes import _core, _defaults, dtypes
from motes.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def cols(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "e": rng.random(n).astype("f4")}


# ---- option structs ---------------------------------------------------------------------

def test_option_structs_hold_the_cores_defaults_and_round_trip():
    o = _core.WriteOptions()
    assert isinstance(o.layout, _core.LayoutOptions) and o.compression is _core.Compression.lossless
    assert o.layout.leaf_size > 0 and o.layout.lod_count > 0 and o.layout.treelet_size > 0
    o.layout.leaf_size = 64  # nested structs are changed in place
    o.compression = _core.Compression.none
    assert o.layout.leaf_size == 64 and o.to_dict()["compression"] == "none"
    assert _core.WriteOptions(o) == o and _core.WriteOptions() != o
    assert "leaf_size=64" in repr(o) and "Compression.none" in repr(o)
    q = _core.QuerySpec()
    assert q.box is None and q.fraction is None and q.where == ""
    q.box = (0, 1, 2, 3, 4, 5)
    assert (q.box.lo, q.box.hi) == ((0.0, 1.0, 2.0), (3.0, 4.0, 5.0))
    q.box = _core.Box((0, 0, 0), (1, 1, 1))
    assert q.box.to_tuple() == ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    q.box = None
    with pytest.raises(motes.UsageError, match="box must have 6 numbers"):
        q.box = [1, 2, 3]
    p = _core.ParallelWriteOptions()
    assert p.method is _core.AggregationMethod.adaptive and p.aggregation.overfull >= 1
    assert set(p.to_dict()) == {"write", "aggregation", "method", "lock_timeout"}


def test_python_defaults_are_the_cores():
    """Arguments left None take the structs' values; help texts show them."""
    layout = _core.LayoutOptions()
    assert _defaults.default("leaf_size") == layout.leaf_size
    assert _defaults.default("compression") == "lossless"
    assert _defaults.default("aggregation") == _core.ParallelWriteOptions().method.name
    assert f"[{layout.leaf_size}]" in motes.write.__doc__ and f"[{layout.treelet_size}]" in motes.Writer.__doc__
    w = motes.Writer("unused.motes")
    assert w._options == _core.WriteOptions() and w._parallel_options().aggregation == _core.AggregationOptions()


def test_cli_help_shows_the_cores_defaults(capsys):
    assert main(["write", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"(default: {_core.LayoutOptions().leaf_size})" in out
    assert f"(default: {_core.LayoutOptions().lod_count})" in out


def test_the_defaults_are_written_once():
    """No copy of the layout defaults in the Python package or the C API."""
    layout = _core.LayoutOptions()
    pattern = re.compile(rf"\b({layout.leaf_size}|{layout.treelet_size})\b")
    offenders = []
    for path in [*(ROOT / "python").rglob("*.py"), *(ROOT / "python" / "src").glob("*.[ch]pp"),
                 *(ROOT / "cpp" / "motes" / "capi").glob("*")]:
        if path.name == "destination.py" or path.parent.name == "synth":  # HDF5 block offsets; synthetic data sizes
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not offenders, offenders


def test_write_uses_the_options_given(tmp_path):
    motes.write(tmp_path / "d.motes", cols(5000), **SMALL)
    f = motes.open(tmp_path / "d.motes").file()
    assert (f.leaf_size, f.lod_count) == (64, 4)
    motes.write(tmp_path / "e.motes", cols(5000), sync=False)
    f = motes.open(tmp_path / "e.motes").file()
    assert (f.leaf_size, f.lod_count) == (_core.LayoutOptions().leaf_size, _core.LayoutOptions().lod_count)
    with pytest.raises(motes.UsageError, match="compression must be one of 'lossless', 'none'"):
        motes.write(tmp_path / "f.motes", cols(), compression="zip")
    with pytest.raises(motes.UsageError, match="aggregation must be one of 'adaptive', 'aug'"):
        motes.Writer(tmp_path / "f.motes", aggregation="grid")


# ---- results: the public API's dicts ------------------------------------------------------

def test_results_keep_their_dict_form(tmp_path):
    [s] = motes.write(tmp_path / "d.motes", cols(), **SMALL)
    assert list(s) == ["particle_count", "file_bytes", "data_bytes", "stored_bytes", "node_count", "level_count",
                       "layout_seconds", "write_seconds", "phases", "columns"]
    assert list(s["phases"])[:2] == ["quantize", "layout bounds"] and "columns" in s["phases"]
    assert all(t >= 0 for t in s["phases"].values())
    assert s["columns"][3] == {"name": "e", "dtype": "f32", "index": s["columns"][3]["index"],
                               "min": s["columns"][3]["min"], "max": s["columns"][3]["max"], "nan_count": 0}
    assert s["columns"][3]["index"] in ("none", "quantile")
    ds = motes.open(tmp_path / "d.motes")
    t = ds.query("e > 0.5")
    assert type(t.counters) is dict and set(t.counters) == {
        "nodes_visited", "nodes_pruned", "nodes_whole", "points_tested", "points_taken_whole", "scanned",
        "parts_read", "parts_pruned", "id_index_parts", "tail_index_parts", "index_rows", "covered_parts",
        "read_requests", "read_bytes"}
    sel = ds.select("e > 0.5")
    pruning = lambda c: {k: v for k, v in c.items() if not k.startswith("read_")}  # noqa: E731 (the Table's gathers read too)
    assert pruning(sel.counters) == pruning(t.counters) and sel.query_counters.nodes_whole == t.counters["nodes_whole"]
    st = ds.stats("e", "e > 2")
    assert st == {"count": 0, "valid": 0, "min": None, "max": None, "sum": 0.0, "mean": None}
    st = ds.stats("e")
    assert st["count"] == 500 and st["mean"] == pytest.approx(float(np.mean(cols()["e"])), rel=1e-6)


# ---- attributes ---------------------------------------------------------------------------

def test_attributes_cross_as_python_objects(tmp_path):
    attrs = {"i": -3, "big": 2**63 + 5, "f": 0.25, "s": "µm", "b": True, "n": None, "l": [1, [2, {"k": "v"}]],
             "t": (1, 2)}
    motes.write(tmp_path / "d.motes", cols(), attributes=attrs, **SMALL)
    got = motes.open(tmp_path / "d.motes").step().attributes
    assert got == {**attrs, "t": [1, 2]}
    assert type(got["big"]) is int and type(got["b"]) is bool and type(got["i"]) is int


@pytest.mark.parametrize("attrs, needle", [
    ({"a": {"b": [1, math.nan]}}, r"step attributes\['a'\]\['b'\]\[1\] is nan"),
    ({"a": {1: "x"}}, r"step attributes\['a'\] has the key 1 \(int\)"),
    ({"a": {"s": {1, 2}}}, r"step attributes\['a'\]\['s'\] has type set: attributes must be JSON-serialisable"),
    ({"a": "\udc80"}, r"step attributes\['a'\] is not valid text"),
])
def test_bad_attributes_name_the_value(tmp_path, attrs, needle):
    with pytest.raises(motes.UsageError, match=needle):
        motes.write(tmp_path / "d.motes", cols(), attributes=attrs, **SMALL)
    assert not (tmp_path / "d.motes").exists()


def test_attribute_depth_is_the_cores_limit(tmp_path):
    def nested(levels):
        v = 1
        for _ in range(levels - 1):
            v = [v]
        return v
    # The attributes object is level 1: the core allows 64 levels (kMaxAttributeDepth).
    motes.write(tmp_path / "d.motes", cols(), attributes={"v": nested(63)}, **SMALL)
    with pytest.raises(motes.UsageError, match="nested more than 64 levels deep"):
        motes.write(tmp_path / "d.motes", cols(), step=1, attributes={"v": nested(64)}, **SMALL)
    with pytest.raises(motes.UsageError, match="dataset attributes are nested"):
        motes.open(tmp_path / "d.motes").set_attributes({"v": nested(1_000_000)})


# ---- dtypes and version -------------------------------------------------------------------

def test_dtypes_come_from_the_cores_table():
    rows = _core.dtypes()
    assert dtypes.NAMES == tuple(r.name for r in rows) == tuple(m for m in _core.DType.__members__)
    assert [r.dtype.value for r in rows] == list(range(1, len(rows) + 1))
    for r in rows:
        assert dtypes.numpy_dtype(r.name) == np.dtype(r.numpy_name) and np.dtype(r.numpy_name).itemsize == r.size
        assert np.dtype(r.numpy_name).kind == r.kind
    assert dtypes.SUMMARY == "float32/64, int8-64 and uint8-64"


def test_every_stored_dtype_round_trips(tmp_path):
    c = cols(100)
    for r in _core.dtypes():
        c[f"c_{r.name}"] = np.arange(100).astype(r.numpy_name)
    motes.write(tmp_path / "d.motes", c, **SMALL)
    ds = motes.open(tmp_path / "d.motes")
    t = ds.query()
    for r in _core.dtypes():
        assert t[f"c_{r.name}"].dtype == np.dtype(r.numpy_name)
        assert sorted(t[f"c_{r.name}"].tolist()) == list(range(100))


def test_the_version_is_cmakes():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(motes\s+VERSION\s+([0-9.]+)", cmake).group(1)
    assert motes.__version__ == _core.version == version
    assert importlib.metadata.version("motes") == version
