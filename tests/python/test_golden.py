"""The golden fixtures (tests/golden/<version>/, docs/format.md): files written by earlier
versions (format 1 by motes 0.1, the later ones by the version that introduced them) stay
readable with identical answers, forever. They are never rewritten: a change that makes
these tests fail breaks old files.

* Every folder reads as its answers: the reads its ``queries.json`` lists give what its
  ``answers.json`` (``answers.npz``) holds, bit for bit (tests/golden/readback.py; the
  folder's ``make_<version>.py`` wrote both with the same module).
* Then what each version pins: its bytes (the Appendix B and C files of docs/format.md,
  versions and feature bits, section kinds), what was written (the inputs), and that the
  writer still writes what the spec says.
"""
import json
import os
import pathlib
import struct
import sys

import numpy as np
import pytest

import motes
from format_util import core_write_options

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import readback  # noqa: E402
from make_field_geometry import fields  # noqa: E402  (the data each fixture was written from)
from make_format2_2 import particles  # noqa: E402
from make_format2_3 import particles as covered_particles  # noqa: E402
from make_format2_4 import DERIVED, particles as derived_particles  # noqa: E402
from make_format2_5 import particles as packed_particles  # noqa: E402
from make_format2_6 import OPTIONS as REGIONAL_OPTIONS, particles as regional_particles  # noqa: E402
from make_format2_7 import particles as format2_7_particles  # noqa: E402


@pytest.mark.parametrize("name", readback.folders())
def test_folder_reads_as_its_answers(name, tmp_path):
    folder = readback.copy(name, tmp_path)
    stored = readback.stored_answers(folder)
    inputs = tuple(readback.queries(folder).get("inputs", ()))  # arrays written, not read back
    expected = {k: v for k, v in stored.items() if not k.startswith(inputs)} if inputs else stored
    assert readback.as_stored(readback.answers_of(folder)) == expected


def test_every_folder_has_its_reads():
    """A golden folder without queries.json would be skipped silently."""
    assert readback.folders() == sorted(d for d in os.listdir(readback.HERE)
                                        if os.path.isdir(os.path.join(readback.HERE, d)) and d != "__pycache__")


@pytest.fixture()
def golden(tmp_path):
    """golden(name): a copy of that golden folder (nothing a test does may touch the originals)."""
    return lambda name: pathlib.Path(readback.copy(name, tmp_path))


# --- format 1.0 (motes 0.1): a serial dataset, a dataset of three MPI ranks, Appendix B ------

@pytest.fixture(scope="module")
def format1_answers():
    with np.load(os.path.join(readback.HERE, "format1", "answers.npz")) as a:
        return {k: a[k] for k in a.files}


def same(a, b):
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit for bit, NaN payloads included


def test_format1_serial_dataset_is_what_was_written(golden, format1_answers):
    """What it reads back is test_folder_reads_as_its_answers's; here, what was written."""
    folder = golden("format1")
    ds = motes.open(str(folder / "serial"))
    assert ds.steps == [0, 3]
    ux = {c.name: c for c in ds.schema(step=0, species="electrons")}["ux"]
    assert ux.index == "quantile" and ux.unit == "m/s"
    # Inputs round trip: every particle written is there once (file order differs).
    inp = format1_answers["input.id"]
    got = ds.query(step=0, species="electrons", columns=["id", "energy"])
    order = np.argsort(got["id"])
    same(got["id"][order], np.sort(inp))
    same(got["energy"][order], format1_answers["input.energy"][np.argsort(inp)])


def test_format1_parallel_dataset_holds_every_rank(golden, format1_answers):
    folder = golden("format1")
    ds = motes.open(str(folder / "parallel"))
    ids = np.concatenate([format1_answers[f"input_rank{r}.id"] for r in range(3)])
    got = ds.query(columns=["id"])["id"]
    same(np.sort(got), np.sort(ids))


def test_format1_histograms_match_numpy(golden, format1_answers):
    folder = golden("format1")
    ds = motes.open(str(folder / "serial"))
    e = format1_answers["serial0.electrons.all.energy"]
    counts, edges = ds.histogram("energy", step=0, species="electrons", bins=17, range=(-0.5, 2.5))
    ref, ref_edges = np.histogram(e[~np.isnan(e)], bins=17, range=(-0.5, 2.5))
    np.testing.assert_array_equal(counts, ref)
    np.testing.assert_array_equal(edges, ref_edges)


def test_format1_files_verify(golden):
    folder = golden("format1")
    for name in ("serial", "parallel"):
        ds = motes.open(str(folder / name))
        report = ds.verify()
        assert report["files"] >= 1 and report["pinned"] == report["species"], report


def test_format1_appendix_b_file_is_as_specified(golden):
    """docs/format.md Appendix B, checked byte for byte against the file 0.1.0 wrote."""
    folder = golden("format1")
    data = (folder / "appendix_b.mpf").read_bytes()
    assert len(data) == 4728
    assert data[:8] == b"MOTESPRT"
    major, minor, header_bytes = struct.unpack_from("<HHI", data, 8)
    assert (major, minor, header_bytes) == (1, 0, 256)
    count, ncol, nnode, nlevel, lod, leaf, block = struct.unpack_from("<QIIIIII", data, 16)
    assert (count, ncol, nnode, nlevel, lod, leaf, block) == (0, 3, 1, 0, 8, 512, 1048576)
    table_off, nsec, flags, fsize, table_sum = struct.unpack_from("<QIIQQ", data, 48)
    assert (table_off, nsec, flags, fsize) == (4280, 14, 0, 4728)
    assert table_sum == 0xEFC9ECB12CF2D716
    assert struct.unpack_from("<Q", data, 248)[0] == 0xE195485308F5D661
    assert data[128:248] == bytes(120) and data[256:4096] == bytes(3840)
    sections = [struct.unpack_from("<IIQQQ", data, table_off + 32 * k) for k in range(nsec)]
    assert sections[0] == (1, 0xFFFFFFFF, 4096, 27, 0x434CF14FE62B14FD)
    assert sections[1] == (2, 0xFFFFFFFF, 4128, 8, 0xC77B3ABB6F87ACD9)
    for c in range(3):
        data_entry, sums, ranges, bitmaps = sections[2 + 4 * c: 6 + 4 * c]
        assert data_entry == (3, c, 4096, 0, 0)
        assert sums == (8, 2 + 4 * c, 4136 + 48 * c, 0, 0x2D06800538D394C2)
        assert ranges == (4, c, 4136 + 48 * c, 8, 0xC77B3ABB6F87ACD9)
        assert bitmaps == (5, c, 4144 + 48 * c, 37, 0x3998498E7B0C0EA7)
    assert data[4096:4096 + 27] == b"".join(bytes([1, 0, 1, 0, 0, 0, 0, 0]) + n for n in (b"x", b"y", b"z"))
    f = motes._core.File.open(str(folder / "appendix_b.mpf"), True)
    assert f.count == 0 and f.version == (1, 0)


# --- format 2.0: every coded path, Appendix C ---------------------------------------------

def test_format2_coded_dataset_takes_every_coded_path(golden):
    """What it reads back is test_folder_reads_as_its_answers's; here, how it is stored."""
    folder = golden("format2")
    ds = motes.open(str(folder / "serial"))
    f = ds.file()
    assert f.version == (2, 0) and f.required_features == 3  # zstd sections and coded blocks
    codecs = {c["name"]: c["codec"] for c in f.columns}
    assert codecs["ux"].startswith("quantile+") and codecs["w"].startswith("grid")
    assert codecs["uy"].startswith("grid+quantile+") and codecs["charge"].startswith("bitshuffle+")
    assert any(c.startswith("delta+") for c in codecs.values()) and any(c.startswith("xor+") for c in codecs.values())
    bounds = {c.name: c.error_bound for c in ds.schema() if c.error_bound}
    assert bounds == {"w": 1e-3, "uy": 1e-2}
    assert ds.verify()["files"] == 1


def test_format2_appendix_c_file_is_as_specified(golden):
    folder = golden("format2")
    data = (folder / "appendix_c.mpf").read_bytes()
    assert len(data) == 4752 and data[:8] == b"MOTESPRT"
    major, minor, header_bytes, features, size, table, count, entry, table_sum = struct.unpack_from("<HHIQQQIIQ", data, 8)
    assert (major, minor, header_bytes, features, size, table, count, entry) == (2, 0, 256, 0, 4752, 4304, 14, 32)
    assert table_sum == 0x511F141D0A6FB803
    assert struct.unpack_from("<QIIIIII", data, 56) == (0, 3, 1, 0, 8, 512, 4096)  # the default BV since format 2.3
    assert data[88:248] == bytes(160)
    assert struct.unpack_from("<Q", data, 248)[0] == 0x329D6F7F17CB9A97
    sections = [struct.unpack_from("<HBBIQQQ", data, table + 32 * k) for k in range(count)]
    assert sections[0] == (1, 0, 0, 0xFFFFFFFF, 4096, 51, 0x93F808234B9DB1AF)
    assert sections[1] == (2, 0, 0, 0xFFFFFFFF, 4152, 8, 0xC77B3ABB6F87ACD9)
    for c in range(3):
        assert sections[2 + 2 * c] == (3, 0, 0, c, 4096, 0, 0)
        assert sections[3 + 2 * c] == (8, 0, 0, 2 + 2 * c, 4160, 0, 0x2D06800538D394C2)
        assert sections[8 + 2 * c] == (4, 0, 0, c, 4160 + 48 * c, 8, 0xC77B3ABB6F87ACD9)
        assert sections[9 + 2 * c] == (5, 0, 0, c, 4168 + 48 * c, 37, 0x3998498E7B0C0EA7)
    entry = bytes([1, 0, 1, 0, 0, 0, 0, 0]) + bytes(8)
    assert data[4096:4147] == b"".join(entry + n for n in (b"x", b"y", b"z"))


def test_writer_still_writes_appendix_c(tmp_path):
    motes.write(tmp_path / "c.motes", {a: np.zeros(0, np.float32) for a in "xyz"}, sync=False)
    written = (tmp_path / "c.motes" / "steps" / "000000" / "particles.mpf").read_bytes()
    assert written == open(os.path.join(readback.HERE, "format2", "appendix_c.mpf"), "rb").read()


def test_writing_is_deterministic(tmp_path):
    """The same input and options give the same bytes, whatever the number of threads."""
    rng = np.random.default_rng(5)
    n = 70_000
    cols = {"x": rng.random(n), "y": rng.random(n, dtype=np.float32), "z": rng.random(n),
            "e": rng.normal(size=n).astype(np.float32), "k": rng.integers(0, 9, n).astype(np.int32)}
    files = []
    for threads in (1, 2, 3):
        p = tmp_path / f"t{threads}.motes"
        motes.write(p, cols, threads=threads, sync=False)
        files.append((p / "steps" / "000000" / "particles.mpf").read_bytes())
    assert files[0] == files[1] == files[2]


# --- particle format 2.1 (id index), field file 1.1 (parts, ZFP), manifest 1.4 --------------

def test_format2_1_fixtures_are_the_versions_they_pin(golden):
    folder = golden("format2_1")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 1) and f.id_column == "id"
    steps = folder / "fields" / "steps" / "000000"
    assert readback.header(steps / "rho.p000000.mfd") == ((1, 1), 0x1 | 0x2 | 0x4)    # zstd sections, coded blocks, field-parts
    assert readback.header(steps / "rho.p000001.mfd")[1] & 0x4
    (major, minor), features = readback.header(steps / "rhoz.mfd")
    assert (major, minor) == (1, 1) and features & 0x8                         # zfp-blocks
    manifest = json.loads((folder / "fields" / "manifest.json").read_text())
    assert manifest["version"] == [1, 4] and manifest["steps"][0]["fields"]["rho"]["parts"] == 2
    assert motes.open(str(folder / "fields")).verify()["files"] == 3
    assert ds.verify()["files"] == 1


# --- particle format 2.2 (tail indexes) ------------------------------------------------------

def test_format2_2_fixture_is_the_version_it_pins(golden):
    folder = golden("format2_2")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 2) and f.id_column == "id"
    assert set(f.tail_indexes) == {"ux", "e", "k", "u8"}
    assert ds.verify()["files"] == 1
    # Kinds 13-15, one of each per indexed column, naming it.
    path = folder / "particles" / "steps" / "000000" / "particles.mpf"
    data = path.read_bytes()
    table_at, count = struct.unpack_from("<QI", data, 32)
    kinds = [struct.unpack_from("<HBBI", data, table_at + 32 * i) for i in range(count)]
    names = [c.name for c in ds.schema()]
    for kind in (13, 14, 15):
        assert sorted(names[e[3]] for e in kinds if e[0] == kind) == ["e", "k", "u8", "ux"]


def test_format2_2_fixture_answers_equal_numpy(golden):
    """The data the fixture was written from, queried by numpy: the same rows."""
    folder = golden("format2_2")
    cols = particles()
    ds = motes.open(str(folder / "particles"))
    for where, mask in [("ux > 2.7", cols["ux"] > np.float32(2.7)), ("e >= 6", cols["e"] >= 6),
                        ("u8 == 0", cols["u8"] == 0), ("ux <= -2.6", cols["ux"] <= np.float32(-2.6))]:
        assert np.array_equal(np.sort(ds.query(where)["id"]), np.sort(cols["id"][mask])), where


# --- particle format 2.3 (covering tail indexes) --------------------------------------------

def test_format2_3_fixture_is_the_version_it_pins(golden):
    folder = golden("format2_3")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 3)
    names = [c.name for c in ds.schema()]
    for tail, t in f.tail_indexes.items():  # the outermost 10 entries per side, every other column
        assert t["cover"] == {"low": 10, "high": 10, "columns": [n for n in names if n != tail]}, tail
    assert ds.verify()["files"] == 1
    # Kind 17 once per tail, naming its column; kind 16 once per (tail, other column), naming the other.
    path = folder / "particles" / "steps" / "000000" / "particles.mpf"
    data = path.read_bytes()
    table_at, count = struct.unpack_from("<QI", data, 32)
    kinds = [struct.unpack_from("<HBBI", data, table_at + 32 * i) for i in range(count)]
    assert sorted(names[e[3]] for e in kinds if e[0] == 17) == ["e", "k", "u8", "ux"]
    assert sum(e[0] == 16 for e in kinds) == 4 * (len(names) - 1)
    assert all(e[1] == 2 for e in kinds if e[0] == 16)  # coded blocks


def test_format2_3_fixture_answers_equal_numpy(golden):
    """The data the fixture was written from, queried by numpy: the same rows, every column,
    read from the covers where the hits lie in them."""
    folder = golden("format2_3")
    cols = covered_particles()
    ds = motes.open(str(folder / "particles"))
    order = np.argsort(cols["id"])
    covered = 0
    for where, mask in [("ux > 2.8", cols["ux"] > np.float32(2.8)), ("e >= 6.6", cols["e"] >= 6.6),
                        ("u8 == 255", cols["u8"] == 255), ("ux <= -2.8", cols["ux"] <= np.float32(-2.8)),
                        ("e < 0.0018", cols["e"] < 0.0018)]:
        t = ds.query(where)
        covered += t.counters["covered_parts"]
        rows = order[np.asarray(t["id"])]
        assert np.array_equal(np.sort(rows), np.nonzero(mask)[0]), where
        for name, values in cols.items():
            assert np.array_equal(np.asarray(t[name]), values[rows]), (where, name)
    assert covered == 4


# --- particle format 2.4 (derived quantities) ---------------------------------------------------

def test_format2_4_fixture_is_the_version_it_pins(golden):
    folder = golden("format2_4")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 4) and set(f.derived) == set(DERIVED)
    names = [c.name for c in ds.schema()]
    for name, d in f.derived.items():  # 26 entries per side, the outermost 10 covered with every column
        assert d["tail"]["cover"] == {"low": 10, "high": 10, "columns": names}, name
    assert ds.verify()["files"] == 1
    # Kinds 18, 19, 20, 21 and 23 once per quantity, naming its number; kind 22 once per covered column.
    path = folder / "particles" / "steps" / "000000" / "particles.mpf"
    data = path.read_bytes()
    table_at, count = struct.unpack_from("<QI", data, 32)
    kinds = [struct.unpack_from("<HBBI", data, table_at + 32 * i) for i in range(count)]
    for kind in (18, 19, 20, 21, 23):
        assert sorted(e[3] for e in kinds if e[0] == kind) == [0, 1], kind
    assert sorted(names[e[3]] for e in kinds if e[0] == 22) == sorted(names * 2)
    assert all(e[1] == 2 for e in kinds if e[0] in (19, 20, 22))  # coded blocks


def test_format2_4_fixture_answers_equal_numpy(golden):
    """The data the fixture was written from, evaluated by numpy in float64: the same rows,
    through the derived tails where the constants lie in them."""
    ds = motes.open(str(golden("format2_4") / "particles"))
    c = {k: v.astype(np.float64) for k, v in derived_particles().items()}
    speed, w = np.sqrt(c["ux"] ** 2 + c["uy"] ** 2), c["e"] * c["k"]
    through = 0
    for where, mask in [("sqrt(ux**2 + uy**2) > 3.3", speed > 3.3), ("sqrt(ux**2 + uy**2) <= 0.03", speed <= 0.03),
                        ("sqrt(ux**2 + uy**2) > 1", speed > 1), ("e * k >= 20", w >= 20), ("e * k < -25", w < -25)]:
        t = ds.query(where)
        through += t.counters["tail_index_parts"]
        assert np.array_equal(np.sort(np.asarray(t["id"])), np.sort(c["id"][mask].astype(np.int64))), where
    assert through == 4  # every test but the middle one


# --- particle format 2.5 (packed words) ----------------------------------------------------------

def test_format2_5_fixture_is_the_version_it_pins(golden):
    folder = golden("format2_5")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 5)
    path = folder / "particles" / "steps" / "000000" / "particles.mpf"
    data = path.read_bytes()
    assert struct.unpack_from("<Q", data, 16)[0] & 0x20  # packed-blocks
    # Packed words (layout 3) and quantile residuals in their bins' widths (layout 4).
    assert {c["name"]: c["codec"] for c in f.columns} == {
        "x": "offset+packed", "y": "offset+packed", "z": "offset+packed", "ux": "quantile+binned",
        "uy": "quantile+binned", "q": "offset+packed", "k": "offset+shuffle+zstd", "e": "offset+packed",
        "id": "offset+packed"}
    assert ds.verify()["files"] == 1


def test_format2_5_fixture_answers_equal_numpy(golden):
    """The data the fixture was written from: every value, read whole and tracked one by one."""
    ds = motes.open(str(golden("format2_5") / "particles"))
    cols = packed_particles()
    order = np.argsort(cols["id"])
    t = ds.query()
    rows = order[np.searchsorted(cols["id"], np.asarray(t["id"]), sorter=order)]
    assert np.array_equal(np.sort(rows), np.arange(len(cols["id"])))
    for name, values in cols.items():
        assert np.array_equal(np.asarray(t[name]), values[rows]), name
    ids = cols["id"][::97]
    tr = ds.track(ids, columns=list(cols))
    for name, values in cols.items():
        assert np.array_equal(tr.values[name][0], values[::97]), name


# --- particle format 2.6 (fine levels region by region) ----------------------------------------

def test_format2_6_fixture_is_the_version_it_pins(golden):
    folder = golden("format2_6")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 6)
    data = (folder / "particles" / "steps" / "000000" / "particles.mpf").read_bytes()
    assert struct.unpack_from("<Q", data, 16)[0] & 0x40  # regional-detail
    detail, region = struct.unpack_from("<II", data, 136)  # docs/format.md §4.2
    part = ds.source(0, "particles").part(0)
    assert (detail, region) == (part.detail_level, part.region_depth) == (7, 4)
    starts = part.level_starts
    assert starts[detail] * 16 >= 6000 > starts[detail - 1] * 16  # the prefix holds 1/16
    assert len(part.level_positions(detail, detail + 1)) == 16  # a region per node at depth 4
    assert ds.verify()["files"] == 1


def test_format2_6_fixture_answers_equal_numpy(golden):
    """The data the fixture was written from: every value and every box, as numpy says."""
    ds = motes.open(str(golden("format2_6") / "particles"))
    cols = regional_particles()
    t = ds.query()
    rows = np.asarray(t["id"])  # ids are a permutation of the rows: the row of id v is argsort(id)[v]
    row_of = np.argsort(cols["id"])[rows]
    for name, values in cols.items():
        assert np.array_equal(np.asarray(t[name]), values[row_of]), name
    box = [0.2, 0.2, 0.2, 0.6, 0.6, 0.6]
    inside = np.ones(len(rows), bool)
    for a, name in enumerate("xyz"):
        inside &= (cols[name] >= np.float32(box[a])) & (cols[name] <= np.float32(box[3 + a]))
    assert np.array_equal(np.sort(np.asarray(ds.query(box=box)["id"])), np.sort(cols["id"][inside]))


def _contents(data: bytes):
    """A particle file's contents: its version, features and kind area, then every section in
    table order as (kind, column, bytes), a zstd frame decoded: what is written, whichever way
    each metadata section is stored (raw or a zstd frame is the writer's choice per section,
    docs/format.md §9 step 4)."""
    import zstandard

    table, count, entry = struct.unpack_from("<QIIQ", data, 32)[:3]
    sections = []
    for i in range(count):
        kind, storage, _, column, offset, length, _ = struct.unpack_from("<HBBIQQQ", data, table + i * entry)
        stored = data[offset:offset + length]
        sections.append((kind, column, zstandard.ZstdDecompressor().decompress(stored) if storage == 1 else stored))
    return data[8:24], data[56:248], sections


def test_writer_still_writes_format2_6(tmp_path, monkeypatch):
    """The same input and options give the fixture's contents: every section holds the same
    bytes. Since 2026-11-29 the node ranges of x, y and z are stored raw, not as zstd frames,
    which moves the sections after them and changes no byte of what they hold. Since format
    2.7 the id column is stored by its index unless asked otherwise (asked here), and the
    indexes are chosen within a budget unless asked otherwise (asked here)."""
    core_write_options(monkeypatch, ids_by_index=False, index_budget=0.0)
    motes.write(tmp_path / "p.motes", regional_particles(), sync=False, **REGIONAL_OPTIONS)
    written = (tmp_path / "p.motes" / "steps" / "000000" / "particles.mpf").read_bytes()
    fixture = open(os.path.join(readback.HERE, "format2_6", "particles", "steps", "000000", "particles.mpf"), "rb").read()
    assert _contents(written) == _contents(fixture)


# --- particle format 2.7 (the id column stored only as its id index) ---------------------------

def _sections(data: bytes):
    table, count, entry = struct.unpack_from("<QII", data, 32)
    return [struct.unpack_from("<HBBIQQQ", data, table + i * entry) for i in range(count)]


def test_format2_7_fixture_is_the_version_it_pins(golden):
    folder = golden("format2_7")
    ds = motes.open(str(folder / "particles"))
    f = ds.file()
    assert f.version == (2, 7) and f.id_column == "id"
    data = (folder / "particles" / "steps" / "000000" / "particles.mpf").read_bytes()
    assert struct.unpack_from("<Q", data, 16)[0] & 0x80  # ids-by-index
    id_col = [c["name"] for c in f.column_info()].index("id")
    kinds = [(kind, column) for kind, _, _, column, *_ in _sections(data)]
    assert (3, id_col) not in kinds  # no column data for the ids (docs/format.md §4.15)
    assert {10, 11, 12} <= {k for k, _ in kinds}
    assert ds.verify()["files"] == 1


def test_format2_7_fixture_answers_equal_numpy(golden):
    ds = motes.open(str(golden("format2_7") / "particles"))
    cols = format2_7_particles()
    t = ds.query()
    row_of = np.argsort(cols["id"])[np.asarray(t["id"]) - 10_000]  # ids are 10,000 + a permutation
    for name, values in cols.items():
        assert np.array_equal(np.asarray(t[name]), values[row_of]), name


def test_writer_still_writes_format2_7(tmp_path, monkeypatch):
    """As for 2.6: the fixture predates the index budget, which its writer is asked to leave
    out (with it, its 8,500 particles get no quantile codes: tests/python/test_index_budget.py)."""
    core_write_options(monkeypatch, index_budget=0.0)  # the fixture was written before the index budget
    motes.write(tmp_path / "p.motes", format2_7_particles(), sync=False)
    written = (tmp_path / "p.motes" / "steps" / "000000" / "particles.mpf").read_bytes()
    fixture = open(os.path.join(readback.HERE, "format2_7", "particles", "steps", "000000", "particles.mpf"), "rb").read()
    assert _contents(written) == _contents(fixture)


# --- field file 1.1 with field-geometry (thetaMode), manifest 1.5 ----------------------------

def test_field_geometry_fixture_holds_the_fields_it_was_made_of(golden):
    folder = golden("field_geometry")
    ds = motes.open(str(folder / "fields"))
    for name, f in fields().items():
        stored = ds.field(name)
        assert stored.geometry == f.geometry and np.array_equal(stored.read(), f.array)
        if f.geometry == "thetaMode":
            assert (stored.modes, stored.imag, stored.origin, stored.spacing) == (f.modes, f.imag, f.origin, f.spacing)


def test_field_geometry_fixture_is_the_version_it_pins(golden):
    folder = golden("field_geometry")
    steps = folder / "fields" / "steps" / "000000"
    for name in ("E", "rho"):   # 1.1, coded blocks, zstd sections, field-geometry (bit 4)
        (major, minor), features = readback.header(steps / f"{name}.mfd")
        assert (major, minor) == (1, 1) and features & 0x10 and features & 0x2
        assert features & ~0x1F == 0
    (major, minor), features = readback.header(steps / "phi.mfd")
    assert (major, minor) == (1, 0) and not features & 0x10     # a Cartesian field's file is as before
    manifest = json.loads((folder / "fields" / "manifest.json").read_text())
    fields = manifest["steps"][0]["fields"]
    assert manifest["version"] == [1, 5]
    assert fields["E"]["geometry"] == {"name": "thetaMode", "modes": 3, "imag": "+"}
    assert fields["rho"]["geometry"] == {"name": "thetaMode", "modes": 2, "imag": "-"}
    assert "geometry" not in fields["phi"]
    assert motes.open(str(folder / "fields")).verify()["files"] == 3
