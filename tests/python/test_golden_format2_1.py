"""Particle format 2.1 (the id index), field file 1.1 (a field in parts; ZFP blocks) and
manifest 1.4 stay readable with identical answers: the fixtures in tests/golden/format2_1/
were written by this version (tests/golden/make_format2_1.py, under mpirun -n 2) and are
never rewritten; ``answers.json`` holds the SHA-256 of what it read back."""
import json
import os
import shutil
import struct
import sys

import pytest

import motes

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "..", "golden")
GOLDEN = os.path.join(GOLDEN_DIR, "format2_1")
sys.path.insert(0, GOLDEN_DIR)
import make_format2_1  # noqa: E402  (its answers_of: what the fixtures must read back as)


def header(path):
    b = open(path, "rb").read(24)
    return struct.unpack_from("<HH", b, 8), struct.unpack_from("<Q", b, 16)[0]


@pytest.fixture()
def golden(tmp_path):
    dst = tmp_path / "format2_1"
    shutil.copytree(GOLDEN, dst)
    return dst


def test_fixtures_read_identically(golden):
    with open(golden / "answers.json") as fh:
        answers = json.load(fh)
    assert make_format2_1.answers_of(str(golden)) == answers


def test_fixtures_are_the_versions_they_pin(golden):
    ds = motes.open(str(golden / "particles"))
    f = ds.file()
    assert f.version == (2, 1) and f.id_column == "id"
    steps = golden / "fields" / "steps" / "000000"
    assert header(steps / "rho.p000000.mfd") == ((1, 1), 0x1 | 0x2 | 0x4)    # zstd sections, coded blocks, field-parts
    assert header(steps / "rho.p000001.mfd")[1] & 0x4
    (major, minor), features = header(steps / "rhoz.mfd")
    assert (major, minor) == (1, 1) and features & 0x8                         # zfp-blocks
    manifest = json.loads((golden / "fields" / "manifest.json").read_text())
    assert manifest["version"] == [1, 4] and manifest["steps"][0]["fields"]["rho"]["parts"] == 2
    assert motes.open(str(golden / "fields")).verify()["files"] == 3
    assert ds.verify()["files"] == 1
