"""Format 2.0 files stay readable with identical answers, and the writer still produces the
Appendix C file of docs/format.md byte for byte.

The fixtures in tests/golden/format2/ were written by this version
(tests/golden/make_format2.py): a dataset whose columns take every coded path (delta, xor,
quantile-residual, grid, grid within quantile bins, byte and bit planes, offset-free
integers, zstd metadata sections, three blocks per column) and the N = 0 file of Appendix
C. ``answers.json`` holds the SHA-256 of every array read back then (the reads of
``queries.json``, checked by test_golden.py). They are never rewritten.
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

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "format2")


@pytest.fixture()
def golden(tmp_path):
    return pathlib.Path(readback.copy("format2", tmp_path))


def test_coded_dataset_takes_every_coded_path(golden):
    """What it reads back is test_golden.py's (queries.json); here, how it is stored."""
    ds = motes.open(str(golden / "serial"))
    f = ds.file()
    assert f.version == (2, 0) and f.required_features == 3  # zstd sections and coded blocks
    codecs = {c["name"]: c["codec"] for c in f.columns}
    assert codecs["ux"].startswith("quantile+") and codecs["w"].startswith("grid")
    assert codecs["uy"].startswith("grid+quantile+") and codecs["charge"].startswith("bitshuffle+")
    assert any(c.startswith("delta+") for c in codecs.values()) and any(c.startswith("xor+") for c in codecs.values())
    bounds = {c.name: c.error_bound for c in ds.schema() if c.error_bound}
    assert bounds == {"w": 1e-3, "uy": 1e-2}
    assert ds.verify()["files"] == 1


def test_appendix_c_file_is_as_specified(golden):
    data = (golden / "appendix_c.mpf").read_bytes()
    assert len(data) == 4752 and data[:8] == b"MOTESPRT"
    major, minor, header_bytes, features, size, table, count, entry, table_sum = struct.unpack_from("<HHIQQQIIQ", data, 8)
    assert (major, minor, header_bytes, features, size, table, count, entry) == (2, 0, 256, 0, 4752, 4304, 14, 32)
    assert table_sum == 0x511F141D0A6FB803
    assert struct.unpack_from("<QIIIIII", data, 56) == (0, 3, 1, 0, 8, 512, 16384)
    assert data[88:248] == bytes(160)
    assert struct.unpack_from("<Q", data, 248)[0] == 0xFD603F94A346CD34
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
    assert written == open(os.path.join(GOLDEN, "appendix_c.mpf"), "rb").read()


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
