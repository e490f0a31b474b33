"""Issue 42, items 1 and 2: every value of the manifest is under its checksum (one flipped bit
never changes a time, an attribute, a unit or a count silently), and a dataset has an identity
that handles, followers, writers and the server check, so a dataset deleted and written again
is never read as a mix of two runs."""

import json
import re
import shutil

import numpy as np
import pytest

import motes
from motes import _core
from motes.cli import main

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def cols(n, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n), "e": rng.random(n).astype(np.float32)}


def write_run(path, counts, seed=0):
    """A run of steps 0, 1, ... with these particle counts (times 0.5, 1.5, ...)."""
    with motes.Writer(path, **SMALL) as w:
        for k, n in enumerate(counts):
            w.write_step(k, cols(n, seed + k), time=k + 0.5, attributes={"a": 1.25 * k, "s": f"step {k}"},
                         units={"x": "m", "e": "J"})
    return motes.open(path)


def snapshot(ds):
    """Everything a reader takes from the manifest."""
    out = {"id": ds.id, "attributes": ds.attributes, "steps": ds.steps, "times": ds.times}
    for st in ds.steps:
        s = ds.step(st)
        out[st] = (s.attributes, {n: (sp["count"], sp["bounds"], sp["checksum"], list(sp["columns"]))
                                  for n, sp in s.species.items()})
    return out


@pytest.fixture
def run(tmp_path):
    p = tmp_path / "run.motes"
    ds = write_run(p, [300, 200])
    ds.set_attributes({"code": "pysco", "H0": 67.7, "units": {"length": "Mpc/h"}})
    return p


def test_manifest_is_sealed_and_identified(run):
    text = (run / "manifest.json").read_text()
    assert re.match(r'\{\n "checksum": "[0-9a-f]{16}",\n', text)
    m = json.loads(text)
    assert m["version"] == [1, 6] and re.fullmatch("[0-9a-f]{32}", m["id"])
    assert motes.open(run).id == m["id"]


def test_the_issue_flip_of_a_time_is_refused(run, capsys):
    raw = (run / "manifest.json").read_bytes()
    at = raw.index(b'"time": 0.5')
    flipped = bytearray(raw)
    flipped[at + len('"time": ')] ^= 0x01  # "0.5" -> "1.5", one bit
    assert bytes(flipped).count(b'"time": 1.5') == 2
    (run / "manifest.json").write_bytes(bytes(flipped))
    with pytest.raises(motes.FormatError, match="its checksum is [0-9a-f]{16} but its contents hash to"):
        motes.open(run)
    assert main(["verify", str(run)]) == 1
    assert "contents hash to" in capsys.readouterr().err


def test_no_single_bit_flip_changes_a_value(run):
    """A bit of every byte of the manifest (each bit of its first line), flipped alone: the open
    fails with a motes error, or reads the very same values (no byte is unused here, so it
    always fails)."""
    raw = (run / "manifest.json").read_bytes()
    core = lambda: _core.DatasetCore.open(str(run))  # noqa: E731 (what motes.open reads, without its Python)
    raw_snapshot = lambda c: (c.id, c.attributes, c.steps)  # noqa: E731
    intact = raw_snapshot(core())
    failed = tried = 0
    for i in range(len(raw)):
        for bit in range(8) if i < 40 else (i % 8, (i * 5 + 3) % 8):
            tried += 1
            b = bytearray(raw)
            b[i] ^= 1 << bit
            (run / "manifest.json").write_bytes(bytes(b))
            try:
                got = raw_snapshot(core())
            except motes.MotesError:
                failed += 1
                continue
            assert got == intact, f"byte {i} bit {bit} changed a value silently"
    assert failed == tried


def test_an_unsealed_manifest_of_version_1_6_is_refused(run):
    m = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(m, indent=2))  # rewritten by another program
    with pytest.raises(motes.FormatError, match="begins with its checksum's line"):
        motes.open(run)
    m.pop("checksum")
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(motes.FormatError, match="begins with its checksum's line"):
        motes.open(run)


def test_seal_manifest_makes_an_edit_readable(run):
    m = json.loads((run / "manifest.json").read_text())
    m["attributes"]["note"] = "edited"
    m["steps"][1]["time"] = 7.25
    (run / "manifest.json").write_text(_core.seal_manifest(json.dumps(m)))
    ds = motes.open(run)
    assert ds.attributes["note"] == "edited" and ds.times == [0.5, 7.25]
    with pytest.raises(motes.UsageError, match="not a manifest to seal"):
        _core.seal_manifest("[1, 2]")


def test_a_manifest_before_1_6_reads_and_is_sealed_by_the_next_change(run):
    m = json.loads((run / "manifest.json").read_text())
    for k in ("checksum", "id"):
        m.pop(k)
    m["version"] = [1, 5]
    (run / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    old = motes.open(run)
    assert old.id == "" and old.times == [0.5, 1.5]
    motes.write(run, cols(100, 9), step=2, **SMALL)  # the next change seals it and gives it an identity
    assert re.fullmatch("[0-9a-f]{32}", motes.open(run).id)
    assert old.refresh() == [2]  # the handle without an identity follows it: its steps are all there
    assert old.id == motes.open(run).id


# ---- identity: a dataset deleted and written again ------------------------------------------

def test_identity_is_kept_by_appends_and_attributes(run):
    first = motes.open(run).id
    motes.write(run, cols(50, 5), step=7, **SMALL)
    motes.open(run).set_attributes({"k": 1})
    assert motes.open(run).id == first


def test_refresh_of_a_recreated_dataset_raises_and_keeps_its_run(tmp_path):
    p = tmp_path / "run.motes"
    ds = write_run(p, [1001, 1001, 1001])
    before = ds.query(step=0)["x"].copy()
    shutil.rmtree(p)
    write_run(p, [5001, 5001], seed=100)
    with pytest.raises(motes.DatasetReplacedError, match="was replaced since this handle read it.*identity"):
        ds.refresh()
    assert ds.steps == [0, 1, 2]  # the run it read, never a mix
    assert np.array_equal(ds.query(step=0)["x"], before)  # its open files: the run it read
    with pytest.raises(motes.FormatError, match="not the file the manifest lists"):
        ds.query(step=1)  # not opened before: the new run's file is refused, not mixed in
    assert motes.open(p).count(step=0) == 5001


def test_a_recreated_dataset_of_the_same_steps_is_another_run(tmp_path):
    p = tmp_path / "run.motes"
    ds = write_run(p, [100, 100])
    shutil.rmtree(p)
    write_run(p, [100, 100, 100])
    with pytest.raises(motes.DatasetReplacedError):
        ds.refresh()


def test_without_identities_a_vanished_step_is_a_replacement(run):
    m = json.loads((run / "manifest.json").read_text())
    for k in ("checksum", "id"):
        m.pop(k)
    m["version"] = [1, 5]
    (run / "manifest.json").write_text(json.dumps(m))
    ds = motes.open(run)
    m["steps"] = m["steps"][:1]
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(motes.DatasetReplacedError, match="step 1 is gone"):
        ds.refresh()
    m2 = json.loads(json.dumps(m))
    m2["steps"][0]["time"] = 9.0
    (run / "manifest.json").write_text(json.dumps(m2))
    ds = motes.open(run)
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(motes.DatasetReplacedError, match="step 0 is not the step it was"):
        ds.refresh()


def test_follow_and_wait_report_a_replacement(tmp_path):
    p = tmp_path / "run.motes"
    write_run(p, [100])
    follower = motes.follow(p, timeout=5, poll=0.01)
    assert next(follower).index == 0
    shutil.rmtree(p)
    write_run(p, [100, 100])
    with pytest.raises(motes.DatasetReplacedError):
        next(follower)


def test_a_writer_does_not_append_to_another_run(tmp_path):
    p = tmp_path / "run.motes"
    w = motes.Writer(p, **SMALL)
    w.write_step(0, cols(100, 0))
    shutil.rmtree(p)
    write_run(p, [100])
    with pytest.raises(motes.DatasetReplacedError):
        w.write_step(1, cols(100, 1))
    assert motes.open(p).steps == [0]


def test_wait_for_step_takes_any_timeout(run):
    ds = motes.open(run)
    assert ds.wait_for_step(after=0, timeout=1e308).index == 1
    assert ds.wait_for_step(after=0, timeout=float("inf")).index == 1
    with pytest.raises(motes.UsageError, match="timeout must be >= 0"):
        ds.wait_for_step(timeout=float("nan"))
    with pytest.raises(TimeoutError):
        ds.wait_for_step(timeout=0.05)


def test_error_kind_replaced_is_in_the_table():
    row = [k for k in _core.error_kinds if k[0] == "replaced"]
    assert row and row[0][2] is motes.DatasetReplacedError and row[0][3] == 1
    assert issubclass(motes.DatasetReplacedError, motes.MotesError)
