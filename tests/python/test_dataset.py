"""The Dataset API's read requests (motes.Dataset.request, motes.request.Request): one read
resolved and checked once (step, species, columns, values, quality or fraction), what every
query and analysis reads through, and the answers read through it against numpy on the same
arrays. Also the one merge of stats the part queries of MPI and Dask use (motes.parts)."""

import numpy as np
import pytest

import motes
from motes import _core, parts, synth
from motes.request import Request, check_values, checked_columns

from conftest import SMALL


@pytest.fixture(scope="module")
def two_species(tmp_path_factory):
    """Two steps; step 1 holds electrons and ions, step 0 electrons alone."""
    path = tmp_path_factory.mktemp("req") / "run.motes"
    e0 = synth.vpic(6_000, seed=1, with_id=True)
    e1, ions = synth.vpic(8_000, seed=2, with_id=True), synth.vpic(3_000, seed=3, with_id=True)
    motes.write(path, {"electrons": e0}, step=0, **SMALL)
    motes.write(path, {"electrons": e1, "ions": ions}, step=1, **SMALL)
    return motes.open(path), {(0, "electrons"): e0, (1, "electrons"): e1, (1, "ions"): ions}


def test_a_request_resolves_the_step_species_and_columns(two_species):
    ds, data = two_species
    req = ds.request(step=0)
    assert isinstance(req, Request)
    assert (req.step.index, req.species) == (0, "electrons")  # the only species of step 0
    assert req.known == ds.column_names(0, "electrons") == req.columns
    req = ds.request("energy > 1", columns=["x", "energy"], species="ions")  # the last step by default
    assert (req.step.index, req.species, req.columns) == (1, "ions", ["x", "energy"])
    assert req.spec.where == "energy > 1"
    assert ds.request(columns="x", step=0).columns == ["x"]


@pytest.mark.parametrize("kwargs, needle", [
    (dict(step=1), "several species"),
    (dict(step=1, species="muons"), "no species 'muons'"),
    (dict(step=5), "no step 5"),
    (dict(step=0, columns=["x", "nope"]), "unknown column 'nope'"),
    (dict(step=0, quality=0.5, fraction=0.1), "not both"),
    (dict(step=0, quality=(0.7, 0.2)), "reversed"),
    (dict(step=0, fraction=1.5), "fraction must be a number in \\[0, 1\\], got 1.5"),
])
def test_a_request_names_what_is_wrong(two_species, kwargs, needle):
    ds, _ = two_species
    with pytest.raises(motes.UsageError, match=needle):
        ds.request(**kwargs)


def test_values_may_be_expressions_and_columns_field_references(two_species):
    ds, _ = two_species
    ds.request(step=0, values=["ux**2 + uy**2", "energy", None])  # None: no weights; the core checks them
    check_values(["sqrt(ux*ux)"], ["ux"])
    with pytest.raises(motes.UsageError, match="unknown column 'uz'"):
        check_values(["uz"], ["ux"])
    assert checked_columns(None, ["a", "b"]) == ["a", "b"]
    with pytest.raises(motes.UsageError, match="unknown column"):
        checked_columns(["field('Bz')"], ["x"])  # a field only where a request samples it
    # A grid field as a column, or in where or values, must be a field of the step (the core's check).
    for kwargs in (dict(columns=["x", "field('Bz')"]), dict(where="field('Bz') > 0"), dict(values=["field('Bz')"])):
        with pytest.raises(motes.UsageError, match=r"step 0 has no field 'Bz' \(fields: none\)"):
            ds.request(step=0, **kwargs)


def test_a_query_resolves_its_step_and_species_once(two_species, monkeypatch):
    ds, _ = two_species
    calls = []
    real = _core.resolve_read
    monkeypatch.setattr(_core, "resolve_read", lambda *a: calls.append(1) or real(*a))
    ds.query("energy > 1", columns=["x", "energy"], species="ions")
    assert len(calls) == 1
    calls.clear()
    ds.stats("ux", species="ions")
    ds.count(species="ions")
    assert len(calls) == 2


@pytest.mark.parametrize("where, box, quality", [(None, None, None), ("energy > 1.2", None, None),
                                                 ("ux < 0 or uy > 0.1", (0.1, 0.2, 0.0, 0.8, 0.9, 0.6), None),
                                                 (None, (0.3, 0.3, 0.3, 0.7, 0.7, 0.7), 1.0)])
def test_reads_through_a_request_are_numpys(two_species, where, box, quality):
    ds, data = two_species
    d = data[(1, "ions")]
    mask = np.ones(len(d["x"]), dtype=bool)
    if where == "energy > 1.2":
        mask &= d["energy"] > np.float32(1.2)
    elif where is not None:
        mask &= (d["ux"] < 0) | (d["uy"] > np.float32(0.1))
    if box is not None:  # as fractions of the species' bounds
        lo = [float(d[a].min()) for a in "xyz"]
        hi = [float(d[a].max()) for a in "xyz"]
        box = tuple(lo[k % 3] + box[k] * (hi[k % 3] - lo[k % 3]) for k in range(6))
        for k, a in enumerate("xyz"):
            mask &= (d[a] >= np.float32(box[k])) & (d[a] <= np.float32(box[3 + k]))
    req = ds.request(where, box, quality, columns=["id", "energy"], species="ions")
    sel = _core.select(req.source(), req.spec)
    t = ds.query(where, box, quality, columns=["id", "energy"], species="ions")
    assert sel.size == len(t) == int(mask.sum()) == ds.count(where, box, quality, species="ions")
    assert 0 < len(t) and (where is None and box is None or len(t) < len(mask))
    order = np.argsort(t["id"])
    np.testing.assert_array_equal(t["id"][order], np.sort(d["id"][mask]))
    np.testing.assert_array_equal(t["energy"][order], d["energy"][mask][np.argsort(d["id"][mask])])


def test_the_stats_of_parts_merge_into_the_whole(two_species):
    ds, data = two_species
    whole = ds.stats("energy", species="ions")
    cut = float(np.median(data[(1, "ions")]["x"]))
    halves = [ds.stats("energy", f"x < {cut!r}", species="ions"), ds.stats("energy", f"x >= {cut!r}", species="ions"),
              ds.stats("energy", "x > 1e30", species="ions")]  # the last selects nothing
    assert halves[0]["count"] > 0 and halves[1]["count"] > 0 and halves[2]["count"] == 0
    merged = parts.merge_stats(halves)
    assert {k: merged[k] for k in ("count", "valid", "min", "max")} == \
        {k: whole[k] for k in ("count", "valid", "min", "max")}
    assert merged["sum"] == pytest.approx(whole["sum"], rel=1e-12)
    assert merged["mean"] == pytest.approx(float(np.mean(data[(1, "ions")]["energy"].astype(np.float64))), rel=1e-9)
    assert parts.merge_stats([]) == {"count": 0, "valid": 0, "min": None, "max": None, "sum": 0.0, "mean": None}


def test_the_core_checks_a_spec_once_for_every_caller():
    spec = _core.QuerySpec()
    _core.check_query_spec(spec)
    spec.quality_to = 1.5
    with pytest.raises(motes.UsageError, match="quality must be a number in \\[0, 1\\], got 1.5"):
        _core.check_query_spec(spec)
