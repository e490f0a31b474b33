"""Particle format 2.2 (tail indexes) stays readable with identical answers: the fixture in
tests/golden/format2_2/ was written by this version (tests/golden/make_format2_2.py) and is
never rewritten; ``answers.json`` holds the SHA-256 of what it read back, through the tail
and id indexes and without them (the reads of ``queries.json``, checked by test_golden.py)."""
import os
import pathlib
import struct
import sys

import numpy as np
import pytest

import motes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import readback  # noqa: E402
from make_format2_2 import particles  # noqa: E402  (the data the fixture was written from)


@pytest.fixture()
def golden(tmp_path):
    return pathlib.Path(readback.copy("format2_2", tmp_path))


def test_fixture_is_the_version_it_pins(golden):
    ds = motes.open(str(golden / "particles"))
    f = ds.file()
    assert f.version == (2, 2) and f.id_column == "id"
    assert set(f.tail_indexes) == {"ux", "e", "k", "u8"}
    assert ds.verify()["files"] == 1
    # Kinds 13-15, one of each per indexed column, naming it.
    path = golden / "particles" / "steps" / "000000" / "particles.mpf"
    data = path.read_bytes()
    table_at, count = struct.unpack_from("<QI", data, 32)
    kinds = [struct.unpack_from("<HBBI", data, table_at + 32 * i) for i in range(count)]
    names = [c.name for c in ds.schema()]
    for kind in (13, 14, 15):
        assert sorted(names[e[3]] for e in kinds if e[0] == kind) == ["e", "k", "u8", "ux"]


def test_fixture_answers_equal_numpy(golden):
    """The data the fixture was written from, queried by numpy: the same rows."""
    cols = particles()
    ds = motes.open(str(golden / "particles"))
    for where, mask in [("ux > 2.7", cols["ux"] > np.float32(2.7)), ("e >= 6", cols["e"] >= 6),
                        ("u8 == 0", cols["u8"] == 0), ("ux <= -2.6", cols["ux"] <= np.float32(-2.6))]:
        assert np.array_equal(np.sort(ds.query(where)["id"]), np.sort(cols["id"][mask])), where
