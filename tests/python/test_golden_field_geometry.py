"""Field file 1.1 with field-geometry (thetaMode fields, docs/format.md §14.9) and manifest
1.5 stay readable with identical answers: the fixture in tests/golden/field_geometry/ was
written by this version (tests/golden/make_field_geometry.py) and is never rewritten;
``answers.json`` holds the SHA-256 of what it read back (the reads of
``queries.json``, checked by test_golden.py). The bytes that make a reader
without the feature refuse the file are pinned too."""
import json
import os
import pathlib
import sys

import numpy as np
import pytest

import motes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import readback  # noqa: E402
from make_field_geometry import fields  # noqa: E402  (the data the fixture was written from)


@pytest.fixture()
def golden(tmp_path):
    return pathlib.Path(readback.copy("field_geometry", tmp_path))


def test_fixture_holds_the_fields_it_was_made_of(golden):
    ds = motes.open(str(golden / "fields"))
    for name, f in fields().items():
        stored = ds.field(name)
        assert stored.geometry == f.geometry and np.array_equal(stored.read(), f.array)
        if f.geometry == "thetaMode":
            assert (stored.modes, stored.imag, stored.origin, stored.spacing) == (f.modes, f.imag, f.origin, f.spacing)


def test_fixture_is_the_version_it_pins(golden):
    steps = golden / "fields" / "steps" / "000000"
    for name in ("E", "rho"):   # 1.1, coded blocks, zstd sections, field-geometry (bit 4)
        (major, minor), features = readback.header(steps / f"{name}.mfd")
        assert (major, minor) == (1, 1) and features & 0x10 and features & 0x2
        assert features & ~0x1F == 0
    (major, minor), features = readback.header(steps / "phi.mfd")
    assert (major, minor) == (1, 0) and not features & 0x10     # a Cartesian field's file is as before
    manifest = json.loads((golden / "fields" / "manifest.json").read_text())
    fields = manifest["steps"][0]["fields"]
    assert manifest["version"] == [1, 5]
    assert fields["E"]["geometry"] == {"name": "thetaMode", "modes": 3, "imag": "+"}
    assert fields["rho"]["geometry"] == {"name": "thetaMode", "modes": 2, "imag": "-"}
    assert "geometry" not in fields["phi"]
    assert motes.open(str(golden / "fields")).verify()["files"] == 3
