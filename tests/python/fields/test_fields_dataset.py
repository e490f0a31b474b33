"""Fields in datasets: written with a step (beside particles or alone), listed by the
manifest, read back exactly through Dataset.field, checked against the manifest, shown by
motes info; bad fields are refused before anything is written."""

import json
import shutil

import numpy as np
import pytest

from needs import need

import motes
from motes import synth
from motes.cli import main


def fields_of(seed=0):
    rng = np.random.default_rng(seed)
    bz = rng.random((6, 9, 13)).astype(np.float32)
    e = rng.standard_normal((6, 9, 13, 3))
    return {"Bz": motes.Field(bz, origin=(0, 0, 0), spacing=(2, 1, 0.5), unit="T"),
            "E": motes.Field(e, components=("x", "y", "z"), centering="cell", spacing=(2, 1, 0.5))}


def test_steps_with_particles_and_fields_and_fields_only(tmp_path):
    path = tmp_path / "run.motes"
    fs = fields_of()
    out = motes.write(path, synth.vpic(2000, seed=1), step=0, fields=fs, sync=False)
    assert [o.get("field") for o in out[1:]] == ["Bz", "E"]
    motes.write(path, None, step=5, time=2.5, fields={"Bz": fields_of(1)["Bz"]}, sync=False)
    ds = motes.open(path)
    assert ds.steps == [0, 5] and ds.field_names(0) == ["Bz", "E"] and ds.field_names(5) == ["Bz"]
    assert ds.species_names(5) == []
    bz = ds.field("Bz", step=0)
    np.testing.assert_array_equal(bz.read(), fs["Bz"].array)
    np.testing.assert_array_equal(bz.read(level=1), fs["Bz"].array[::2, ::2, ::2])
    assert bz.unit == "T" and bz.spacing == (2, 1, 0.5)
    e = ds.field("E", step=0)
    np.testing.assert_array_equal(e.read(), fs["E"].array)
    np.testing.assert_array_equal(ds.field("Bz", step=5).read(), fields_of(1)["Bz"].array)
    assert ds.count_total(step=0) == 2000
    with pytest.raises(motes.UsageError, match="holds no particles, only fields"):
        ds.query(step=5)
    with pytest.raises(motes.UsageError, match="no field 'B'"):
        ds.field("B", step=0)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["version"] == [1, 6]
    assert manifest["steps"][1]["species"] == {} and manifest["steps"][1]["fields"]["Bz"]["dims"] == [13, 9, 6]


def test_a_field_file_copied_over_another_is_refused(tmp_path):
    path = tmp_path / "run.motes"
    motes.write(path, None, step=0, fields={"Bz": fields_of(0)["Bz"]}, sync=False)
    motes.write(path, None, step=1, fields={"Bz": fields_of(1)["Bz"]}, sync=False)
    shutil.copy(path / "steps" / "000001" / "Bz.mfd", path / "steps" / "000000" / "Bz.mfd")
    with pytest.raises(motes.FormatError, match="manifest says"):
        motes.open(path).field("Bz", step=0)


def test_bad_fields_write_nothing(tmp_path):
    path = tmp_path / "run.motes"
    motes.write(path, synth.vpic(500, seed=1), step=0, sync=False)
    for fields, needle in [({"Bz": np.zeros((2, 2))}, "motes.Field"), ({"B/z": fields_of()["Bz"]}, "invalid"),
                           ({}, "at least one species or field")]:
        with pytest.raises(motes.UsageError, match=needle):
            motes.write(path, None, step=1, fields=fields, sync=False)
    assert motes.open(path).steps == [0]
    assert not (path / "steps" / "000001").exists()


def test_info_lists_fields(tmp_path, capsys):
    path = tmp_path / "run.motes"
    motes.write(path, synth.vpic(500, seed=1), step=0, fields=fields_of(), sync=False)
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "fields     Bz, E" in text and "field 'E': f64 13 x 9 x 6 (x, y, z), components x, y, z, cell-centred" in text
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["fields"] == ["Bz", "E"] and info["field_files"][0]["dims"] == [13, 9, 6]


@pytest.mark.parametrize("target", ["b.h5part", "o_%T.h5"])
def test_fields_go_through_conversions_and_back(tmp_path, target):
    need("h5py")
    if target.endswith(".h5"):
        need("openpmd_api")
    from motes.convert import convert

    fs = fields_of(3)
    src = tmp_path / "a.motes"
    motes.write(src, synth.vpic(1500, seed=2), step=0, fields=fs, sync=False)
    motes.write(src, None, step=1, time=1.0, fields={"Bz": fields_of(4)["Bz"]}, sync=False)
    convert(str(src), str(tmp_path / target))
    convert(str(tmp_path / target), str(tmp_path / "back.motes"))
    ds = motes.open(tmp_path / "back.motes")
    assert ds.steps == [0, 1] and ds.field_names(0) == ["Bz", "E"] and ds.field_names(1) == ["Bz"]
    for name, f in fs.items():
        got = ds.field(name, step=0)
        np.testing.assert_array_equal(got.read(), f.array)
        assert got.centering == f.centering
    np.testing.assert_array_equal(ds.field("Bz", step=1).read(), fields_of(4)["Bz"].array)
    assert ds.count_total(step=0) == 1500


def test_motes_convert_to_idx_is_read_by_openvisus_and_back(tmp_path):
    ov = need("OpenVisus")
    from motes.convert import ConversionWarning, convert

    src = tmp_path / "a.motes"

    def on_one_grid(seed):  # IDX has one grid: every field on it (centering, origin, spacing)
        fs = fields_of(seed)
        return {"Bz": fs["Bz"], "E": motes.Field(fs["E"].array, components=("x", "y", "z"), spacing=(2, 1, 0.5))}

    steps = {0: on_one_grid(5), 3: on_one_grid(6)}
    for index, fs in steps.items():
        motes.write(src, synth.vpic(800, seed=index), step=index, time=float(index), fields=fs, sync=False)
    with pytest.warns(ConversionWarning, match="fields only"):
        convert(str(src), str(tmp_path / "run.idx"))
    d = ov.LoadDataset(str(tmp_path / "run.idx"))
    for index, fs in steps.items():
        np.testing.assert_array_equal(d.read(field="Bz", time=index), fs["Bz"].array)
    assert main(["convert", str(tmp_path / "run.idx"), str(tmp_path / "back.motes")]) == 0
    ds = motes.open(tmp_path / "back.motes")
    assert ds.steps == [0, 3]
    for index, fs in steps.items():
        for name, f in fs.items():
            np.testing.assert_array_equal(ds.field(name, step=index).read(), f.array)
