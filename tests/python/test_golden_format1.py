"""Files and datasets written by the first release (particle format 1.0, manifest 1.1) stay
readable with identical answers, forever.

The fixtures in tests/golden/format1/ were written once by motes 0.1.0
(tests/golden/make_format1.py): a serial dataset (two steps, two species, a quantile index,
units, attributes), a dataset written on three MPI ranks (four part files and a step index)
and the Appendix B file of docs/format.md. ``answers.npz`` holds what 0.1.0 read back
(the reads of ``queries.json``, checked by test_golden.py) and the arrays written.
They are never rewritten: a change that makes this test fail breaks old files.
"""
import os
import pathlib
import struct
import sys

import numpy as np
import pytest

import motes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import readback  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "format1")


@pytest.fixture(scope="module")
def answers():
    with np.load(os.path.join(GOLDEN, "answers.npz")) as a:
        return {k: a[k] for k in a.files}


@pytest.fixture()
def golden(tmp_path):
    return pathlib.Path(readback.copy("format1", tmp_path))


def same(a, b):
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit for bit, NaN payloads included


def test_serial_dataset_is_what_was_written(golden, answers):
    """What the queries read back is test_golden.py's (queries.json); here, what was written."""
    ds = motes.open(str(golden / "serial"))
    assert ds.steps == [0, 3]
    ux = {c.name: c for c in ds.schema(step=0, species="electrons")}["ux"]
    assert ux.index == "quantile" and ux.unit == "m/s"
    # Inputs round trip: every particle written is there once (file order differs).
    inp = answers["input.id"]
    got = ds.query(step=0, species="electrons", columns=["id", "energy"])
    order = np.argsort(got["id"])
    same(got["id"][order], np.sort(inp))
    same(got["energy"][order], answers["input.energy"][np.argsort(inp)])


def test_parallel_dataset_holds_every_rank(golden, answers):
    ds = motes.open(str(golden / "parallel"))
    ids = np.concatenate([answers[f"input_rank{r}.id"] for r in range(3)])
    got = ds.query(columns=["id"])["id"]
    same(np.sort(got), np.sort(ids))


def test_golden_histograms_match_numpy(golden, answers):
    ds = motes.open(str(golden / "serial"))
    e = answers["serial0.electrons.all.energy"]
    counts, edges = ds.histogram("energy", step=0, species="electrons", bins=17, range=(-0.5, 2.5))
    ref, ref_edges = np.histogram(e[~np.isnan(e)], bins=17, range=(-0.5, 2.5))
    np.testing.assert_array_equal(counts, ref)
    np.testing.assert_array_equal(edges, ref_edges)


def test_golden_files_verify(golden):
    for name in ("serial", "parallel"):
        ds = motes.open(str(golden / name))
        report = ds.verify()
        assert report["files"] >= 1 and report["pinned"] == report["species"], report


def test_appendix_b_file_is_as_specified(golden):
    """docs/format.md Appendix B, checked byte for byte against the file 0.1.0 wrote."""
    data = (golden / "appendix_b.mpf").read_bytes()
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
    f = motes._core.File.open(str(golden / "appendix_b.mpf"), True)
    assert f.count == 0 and f.version == (1, 0)
