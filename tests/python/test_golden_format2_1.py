"""Particle format 2.1 (the id index), field file 1.1 (a field in parts; ZFP blocks) and
manifest 1.4 stay readable with identical answers: the fixtures in tests/golden/format2_1/
were written by this version (tests/golden/make_format2_1.py, under mpirun -n 2) and are
never rewritten; ``answers.json`` holds the SHA-256 of what it read back (the reads of
``queries.json``, checked by test_golden.py)."""
import json
import os
import pathlib
import sys

import pytest

import motes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import readback  # noqa: E402


@pytest.fixture()
def golden(tmp_path):
    return pathlib.Path(readback.copy("format2_1", tmp_path))


def test_fixtures_are_the_versions_they_pin(golden):
    ds = motes.open(str(golden / "particles"))
    f = ds.file()
    assert f.version == (2, 1) and f.id_column == "id"
    steps = golden / "fields" / "steps" / "000000"
    assert readback.header(steps / "rho.p000000.mfd") == ((1, 1), 0x1 | 0x2 | 0x4)    # zstd sections, coded blocks, field-parts
    assert readback.header(steps / "rho.p000001.mfd")[1] & 0x4
    (major, minor), features = readback.header(steps / "rhoz.mfd")
    assert (major, minor) == (1, 1) and features & 0x8                         # zfp-blocks
    manifest = json.loads((golden / "fields" / "manifest.json").read_text())
    assert manifest["version"] == [1, 4] and manifest["steps"][0]["fields"]["rho"]["parts"] == 2
    assert motes.open(str(golden / "fields")).verify()["files"] == 3
    assert ds.verify()["files"] == 1
