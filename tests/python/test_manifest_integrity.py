"""The manifest is part of the data: every field a reader relies on is checked when the
dataset is opened, the files are checked against it (header checksums, counts, bounds,
schemas) when they are opened, and `verify` checks all of it."""

import json
import shutil

import numpy as np
import pytest

import motes
from motes.cli import main
from format_util import reseal, write_manifest

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def cols(n, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "e": rng.random(n).astype(np.float32)}


@pytest.fixture
def series(tmp_path):
    p = tmp_path / "s.motes"
    with motes.Writer(p, **SMALL) as w:
        w.write_step(0, cols(1000, 0), time=0.0)
        w.write_step(1, cols(1000, 1), time=1.0)  # same count and columns as step 0
        w.write_step_chunks(2, {"particles": [cols(800, 2), cols(900, 3), cols(700, 4)]}, time=2.0)
    return p


def manifest(p):
    return json.loads((p / "manifest.json").read_text())


def save(p, m):
    write_manifest(p, m)  # sealed anew: the edit, not its checksum, is what a reader must refuse


def test_manifest_pins_every_file_by_checksum(series):
    m = manifest(series)
    assert m["version"] == [1, 6]
    for st in m["steps"]:
        sp = st["species"]["particles"]
        assert len(sp["checksum"]) == 16
        assert len(sp.get("part_checksums", [])) == (3 if st["index"] == 2 else 0)
    assert motes.open(series).verify() == {"files": 5, "steps": 3, "species": 3, "fields": 0, "pinned": 3}


def test_a_valid_file_copied_over_another_steps_file_is_refused(series):
    shutil.copy(series / "steps/000000/particles.mpf", series / "steps/000001/particles.mpf")
    ds = motes.open(series)
    assert ds.count(step=0) == 1000  # the untouched step still reads
    with pytest.raises(motes.FormatError, match="not the file the manifest lists for step 1.*header checksum"):
        ds.query(step=1)
    with pytest.raises(motes.FormatError, match="step 1"):
        ds.verify()
    status = main(["verify", str(series), "--no-progress"])
    assert status == 1


def test_a_part_copied_over_another_part_is_refused(series):
    parts = sorted((series / "steps/000002").glob("particles.p*.mpf"))
    assert len(parts) == 3
    shutil.copy(parts[0], parts[1])
    ds = motes.open(series)
    with pytest.raises(motes.FormatError, match="part 1"):
        ds.query(step=2)
    with pytest.raises(motes.FormatError):
        ds.verify()


def _tampered(series, edit):
    m = manifest(series)
    edit(m)
    save(series, m)


@pytest.mark.parametrize("edit, on_open, needle", [
    (lambda m: m["steps"][1]["species"]["particles"].update(count=999), False, "holds 1000 particles, the manifest says 999"),
    (lambda m: m["steps"][1]["species"]["particles"]["bounds"][0].__setitem__(0, -5.0), False, "bounds differ"),
    (lambda m: m["steps"][1]["species"]["particles"]["columns"][3].update(dtype="f64"), False, "columns"),
    (lambda m: m["steps"][2]["species"]["particles"].update(parts=2), True, "part_checksums"),
    (lambda m: m["steps"][1]["species"]["particles"].update(checksum="zz"), True, "16 lowercase hex"),
    (lambda m: m["steps"][1].update(time="soon"), True, "time is not a number"),
    (lambda m: m["steps"][1].update(time=1e400), True, "invalid manifest"),
    (lambda m: m["steps"].append(m["steps"][0]), True, "listed twice"),
    (lambda m: m["steps"][1].update(index=1.5), True, "not a 64-bit integer"),
    (lambda m: m["steps"][1]["species"]["particles"].update(file="../../../../etc/passwd"), True, "is not steps/000001"),
    (lambda m: m["steps"][1]["species"]["particles"].update(file="steps/000000/particles.mpf"), True, "is not steps/000001"),
    (lambda m: m["steps"][1]["species"].update({"bad/name": m["steps"][1]["species"]["particles"]}), True, "invalid"),
    (lambda m: m["steps"][1]["species"]["particles"]["columns"].pop(0), True, "position column 'x' is missing"),
    (lambda m: m["steps"][1]["species"]["particles"]["columns"].append({"name": "e", "dtype": "f32"}), True, "twice"),
    (lambda m: m["steps"][1]["species"]["particles"]["columns"][3].update(dtype="f16"), True, "unknown dtype"),
    (lambda m: m["steps"][1].update(species={}), True, "species"),
    (lambda m: m.update(steps={}), True, "steps are not a list"),
    (lambda m: m["steps"][1].update(attributes=[1, 2]), True, "attributes are not an object"),
])
def test_manifest_fields_are_checked(series, edit, on_open, needle):
    _tampered(series, edit)
    if on_open:
        with pytest.raises(motes.FormatError, match=needle):
            motes.open(series)
        assert main(["info", str(series)]) == 1
        return
    ds = motes.open(series)
    with pytest.raises(motes.FormatError, match=needle):
        ds.count(step=1)
    with pytest.raises(motes.FormatError, match=needle):
        ds.verify()


def test_non_utf8_manifest_is_a_format_error(series, capsys):
    raw = (series / "manifest.json").read_bytes()
    (series / "manifest.json").write_bytes(reseal(raw.replace(b'"attributes": {}', b'"attributes": {"k": "\xff\xfe"}', 1)))
    with pytest.raises(motes.FormatError, match=r"manifest.json: invalid manifest.*\\xff"):
        motes.open(series)
    assert main(["info", str(series)]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_manifest_of_version_1_0_without_checksums_still_reads(series):
    m = manifest(series)
    m["version"] = [1, 0]
    for st in m["steps"]:
        sp = st["species"]["particles"]
        sp.pop("checksum")
        sp.pop("part_checksums", None)
    m.pop("checksum"), m.pop("id")
    (series / "manifest.json").write_text(json.dumps(m))  # as motes 0.1 wrote it: no checksum
    ds = motes.open(series)
    assert ds.count(step=0) == 1000 and ds.count(step=2) == 2400
    assert ds.verify() == {"files": 5, "steps": 3, "species": 3, "fields": 0, "pinned": 0}
    # ...and the next write upgrades the manifest, keeping the old entries as they are
    motes.write(series, cols(100, 9), step=3, **SMALL)
    m = manifest(series)
    assert m["version"] == [1, 6] and "checksum" not in m["steps"][0]["species"]["particles"]
    assert "checksum" in m["steps"][3]["species"]["particles"]


def test_non_utf8_expression_is_a_usage_error(series):
    ds = motes.open(series)
    with pytest.raises(motes.UsageError, match="not valid text"):
        ds.count("e > \udcff")
    with pytest.raises(motes.UsageError, match="unexpected character '\\\\x01'"):
        ds.count("e \x01 1")
