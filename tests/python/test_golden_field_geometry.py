"""Field file 1.1 with field-geometry (thetaMode fields, docs/format.md §14.9) and manifest
1.5 stay readable with identical answers: the fixture in tests/golden/field_geometry/ was
written by this version (tests/golden/make_field_geometry.py) and is never rewritten;
``answers.json`` holds the SHA-256 of what it read back. The bytes that make a reader
without the feature refuse the file are pinned too."""
import json
import os
import shutil
import struct
import sys

import numpy as np
import pytest

import motes

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "..", "golden")
GOLDEN = os.path.join(GOLDEN_DIR, "field_geometry")
sys.path.insert(0, GOLDEN_DIR)
import make_field_geometry  # noqa: E402  (its answers_of and its data: what the fixture must read back as)


def header(path):
    b = open(path, "rb").read(24)
    return struct.unpack_from("<HH", b, 8), struct.unpack_from("<Q", b, 16)[0]


@pytest.fixture()
def golden(tmp_path):
    dst = tmp_path / "field_geometry"
    shutil.copytree(GOLDEN, dst)
    return dst


def test_fixture_reads_identically(golden):
    with open(golden / "answers.json") as fh:
        answers = json.load(fh)
    assert make_field_geometry.answers_of(str(golden)) == answers


def test_fixture_holds_the_fields_it_was_made_of(golden):
    ds = motes.open(str(golden / "fields"))
    for name, f in make_field_geometry.fields().items():
        stored = ds.field(name)
        assert stored.geometry == f.geometry and np.array_equal(stored.read(), f.array)
        if f.geometry == "thetaMode":
            assert (stored.modes, stored.imag, stored.origin, stored.spacing) == (f.modes, f.imag, f.origin, f.spacing)


def test_fixture_is_the_version_it_pins(golden):
    steps = golden / "fields" / "steps" / "000000"
    for name in ("E", "rho"):   # 1.1, coded blocks, zstd sections, field-geometry (bit 4)
        (major, minor), features = header(steps / f"{name}.mfd")
        assert (major, minor) == (1, 1) and features & 0x10 and features & 0x2
        assert features & ~0x1F == 0
    (major, minor), features = header(steps / "phi.mfd")
    assert (major, minor) == (1, 0) and not features & 0x10     # a Cartesian field's file is as before
    manifest = json.loads((golden / "fields" / "manifest.json").read_text())
    fields = manifest["steps"][0]["fields"]
    assert manifest["version"] == [1, 5]
    assert fields["E"]["geometry"] == {"name": "thetaMode", "modes": 3, "imag": "+"}
    assert fields["rho"]["geometry"] == {"name": "thetaMode", "modes": 2, "imag": "-"}
    assert "geometry" not in fields["phi"]
    assert motes.open(str(golden / "fields")).verify()["files"] == 3
