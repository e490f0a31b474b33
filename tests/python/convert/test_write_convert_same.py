"""`motes write DATASET FILE` and `motes convert FILE DATASET` read files the same way (one
import path, motes.convert): the same file gives identical datasets (schema, dtypes, units,
step, time, attributes, values bit for bit) or the same error message and exit status."""

import hashlib

import numpy as np
import pytest

from needs import need

import motes
from motes.cli import main

pa = need("pyarrow")
pq = need("pyarrow.parquet")
N = 500


def both(capsys, tmp_path, src, *extra):
    """Runs both commands on ``src``; returns ((status, stderr) of write, of convert)."""
    w = main(["write", str(tmp_path / "w.motes"), str(src), *extra])
    _, werr = capsys.readouterr()
    c = main(["convert", str(src), str(tmp_path / "c.motes"), *extra])
    _, cerr = capsys.readouterr()
    return (w, werr), (c, cerr)


def same_dataset(a_path, b_path):
    a, b = motes.open(a_path), motes.open(b_path)
    assert a.steps == b.steps and a.times == b.times
    for s in a.steps:
        assert a.step(s).attributes == b.step(s).attributes
        assert a.species_names(s) == b.species_names(s)
        for sp in a.species_names(s):
            assert a.schema(s, sp) == b.schema(s, sp)  # names, dtypes, index kinds, units
            ta, tb = a.query(step=s, species=sp), b.query(step=s, species=sp)
            order_a = np.lexsort([ta[c] for c in reversed(list(ta))])
            order_b = np.lexsort([tb[c] for c in reversed(list(tb))])
            for c in ta:
                assert ta[c].dtype == tb[c].dtype, c
                assert ta[c][order_a].tobytes() == tb[c][order_b].tobytes(), c
    return a


def columns(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.integers(-1000, 1000, N, dtype=np.int32), "y": rng.integers(0, 50, N, dtype=np.int32),
            "z": rng.integers(0, 9, N, dtype=np.int32),
            "h": rng.standard_normal(N).astype(np.float16), "hot": rng.random(N) < 0.3,
            "id": np.arange(N, dtype=np.uint64), "w": rng.random(N)}


def check_widened(ds, cols):
    t = ds.query()
    order = np.argsort(t["id"])
    schema = {c.name: c.dtype for c in ds.schema()}
    assert schema["x"] == np.float64 and schema["h"] == np.float32 and schema["hot"] == np.uint8
    for a in "xyz":  # integer positions: float64, exactly the integers
        np.testing.assert_array_equal(t[a][order], cols[a].astype(np.float64))
    np.testing.assert_array_equal(t["h"][order], cols["h"].astype(np.float32))  # float16 widened exactly
    np.testing.assert_array_equal(t["hot"][order], cols["hot"].astype(np.uint8))


def test_parquet_with_integer_positions_and_float16(tmp_path, capsys):
    cols = columns()
    table = pa.table(cols)
    table = table.replace_schema_metadata(None).cast(pa.schema(
        [pa.field(f.name, f.type, metadata={b"unit": b"mm"} if f.name in "xyz" else None) for f in table.schema]))
    pq.write_table(table, tmp_path / "in.parquet")
    (w, werr), (c, cerr) = both(capsys, tmp_path, tmp_path / "in.parquet")
    assert (w, c) == (0, 0), werr + cerr
    ds = same_dataset(tmp_path / "w.motes", tmp_path / "c.motes")
    check_widened(ds, cols)
    assert {c.name: c.unit for c in ds.schema()}["x"] == "mm"


def test_arrow(tmp_path, capsys):
    cols = columns(1)
    import pyarrow.feather as feather

    feather.write_feather(pa.table(cols), tmp_path / "in.arrow", compression="uncompressed")
    (w, werr), (c, cerr) = both(capsys, tmp_path, tmp_path / "in.arrow")
    assert (w, c) == (0, 0), werr + cerr
    check_widened(same_dataset(tmp_path / "w.motes", tmp_path / "c.motes"), cols)


def test_npz_with_a_position_array_scalars_and_float16(tmp_path, capsys):
    cols = columns(2)
    pos = np.stack([cols.pop(a) for a in "xyz"], axis=1).astype(np.int16)
    np.savez(tmp_path / "in.npz", pos=pos, aexp=np.float64(0.5), step=np.int64(12), **cols)
    (w, werr), (c, cerr) = both(capsys, tmp_path, tmp_path / "in.npz", "--time-from", "aexp")
    assert (w, c) == (0, 0), werr + cerr
    ds = same_dataset(tmp_path / "w.motes", tmp_path / "c.motes")
    source = {"file": "in.npz", "sha256": hashlib.sha256((tmp_path / "in.npz").read_bytes()).hexdigest(),
              "step": 12, "species": ["particles"]}  # the file each step came from, recorded alike
    assert ds.steps == [12] and ds.times == [0.5]
    assert ds.step().attributes == {"aexp": 0.5, "step": 12, "motes_source": source}
    check_widened(ds, {**cols, "x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2]})


def test_csv(tmp_path, capsys):
    cols = columns(3)
    cols["h"] = cols["h"].astype(np.float64)  # text has no float16
    lines = [",".join(cols)] + [",".join(str(v[i]) for v in cols.values()) for i in range(N)]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n")
    (w, werr), (c, cerr) = both(capsys, tmp_path, tmp_path / "in.csv")
    assert (w, c) == (0, 0), werr + cerr
    ds = same_dataset(tmp_path / "w.motes", tmp_path / "c.motes")
    schema = {c.name: c.dtype for c in ds.schema()}
    assert schema == {"x": np.float64, "y": np.float64, "z": np.float64, "h": np.float64, "hot": np.uint8,
                      "id": np.int64, "w": np.float64}  # CSV is text: integers int64, decimals float64


def test_empty_csv_is_float64_columns(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("x,y,z,energy\n")
    (w, werr), (c, cerr) = both(capsys, tmp_path, tmp_path / "in.csv")
    assert (w, c) == (0, 0), werr + cerr
    ds = same_dataset(tmp_path / "w.motes", tmp_path / "c.motes")
    assert [(c.name, c.dtype) for c in ds.schema()] == [(n, np.float64) for n in ("x", "y", "z", "energy")]
    assert ds.count_total() == 0


def write_bad(tmp_path, kind):
    """Files both commands must refuse, and a fragment of the message."""
    if kind == "text":
        pq.write_table(pa.table({"x": [0.0], "y": [0.0], "z": [0.0], "label": ["a"]}), tmp_path / "bad.parquet")
        return "bad.parquet", "column 'label' has unsupported dtype object (text or objects"
    if kind == "no-z":
        np.savez(tmp_path / "bad.npz", x=np.zeros(3), y=np.zeros(3), m=np.ones(3))
        return "bad.npz", "missing position column(s) z (columns: x, y, m; motes needs x, y and z)"
    if kind == "int-null":
        (tmp_path / "bad.csv").write_text("x,y,z,id\n0,0,0,1\n1,1,1,\n")
        return "bad.csv", "column 'id' (int64) has 1 missing values"
    if kind == "huge-int-position":
        pq.write_table(pa.table({"x": np.array([0, 2**53 + 1], dtype=np.int64), "y": [0.0, 0.0],
                                 "z": [0.0, 0.0]}), tmp_path / "bad.parquet")
        return "bad.parquet", "integer position column 'x' holds 9007199254740993 at row 1, beyond 2^53"
    if kind == "complex":
        np.savez(tmp_path / "bad.npz", x=np.zeros(3), y=np.zeros(3), z=np.zeros(3), c=np.ones(3, np.complex64))
        return "bad.npz", "column 'c' has unsupported dtype complex64 (complex: store the real and imaginary"
    if kind == "nested":
        pq.write_table(pa.table({"x": [0.0], "y": [0.0], "z": [0.0], "l": [[1, 2]]}), tmp_path / "bad.parquet")
        return "bad.parquet", "column 'l' has unsupported type list<element: int64> (nested"
    if kind == "dates":
        pq.write_table(pa.table({"x": [0.0], "y": [0.0], "z": [0.0],
                                 "t": pa.array([0], pa.timestamp("s"))}), tmp_path / "bad.parquet")
        return "bad.parquet", "column 't' has unsupported dtype datetime64["
    if kind == "not-parquet":
        (tmp_path / "bad.parquet").write_text("hello")
        return "bad.parquet", "not a readable parquet file"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["text", "no-z", "int-null", "huge-int-position", "complex", "nested", "dates",
                                  "not-parquet"])
def test_the_same_errors(tmp_path, capsys, kind):
    name, fragment = write_bad(tmp_path, kind)
    (w, werr), (c, cerr) = both(capsys, tmp_path, tmp_path / name)
    assert w == c != 0
    assert werr == cerr, (werr, cerr)
    assert werr.startswith(f"motes: error: {tmp_path / name}") and fragment in werr, werr
    assert not (tmp_path / "w.motes").exists() and not (tmp_path / "c.motes").exists()


def test_write_takes_one_step_of_one_species(tmp_path, capsys):
    motes.Writer(tmp_path / "two.motes").write_step(0, {"e": {a: np.zeros(2) for a in "xyz"},
                                                       "i": {a: np.ones(2) for a in "xyz"}})
    status = main(["write", str(tmp_path / "w.motes"), str(tmp_path / "two.motes")])
    err = capsys.readouterr().err
    assert status == 2 and "holds more than one step or species" in err and "--append" in err
