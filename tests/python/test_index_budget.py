"""The index budget (WriteOptions.index_budget, 5% of the raw column bytes by default): the
tree, node ranges and bitmaps, quantile codes and edges, tail indexes and their covers of a
file stay within it, whatever the data (the automatic quantile codes get what the others
leave; covers, then tails, shrink on files too small for them); an index asked for is kept;
``motes info --sizes`` (Dataset.sizes) accounts for every byte of the files."""

import json
import math

import numpy as np
import pytest

import motes
from motes import synth
from motes._sizes import INDEX_ROLES

from format_util import core_write_options

BUDGET = 0.05


def roles_of(ds):
    """{role: bytes} and the raw column bytes of every particle file of the dataset, per file."""
    out = []
    for step in ds.steps:
        for name in ds.species_names(step):
            src = ds.source(step, name)
            for k in range(src.part_count):
                f = src.part(k)
                roles = {}
                for role, _column, _kind, nbytes in f.section_sizes():
                    roles[role] = roles.get(role, 0) + nbytes
                raw = sum(f.count * np.dtype(motes.dtypes.numpy_dtype(c["dtype"])).itemsize for c in f.column_info(False))
                out.append((f, roles, raw))
    return out


def index_share(roles, raw):
    return sum(roles.get(r, 0) for r in INDEX_ROLES) / raw


def quantile_columns(ds, step=None):
    return {c.name for c in ds.schema(step) if c.index == "quantile"}


def pysco_like(n_side=56, seed=0, collapse=0.8):
    """An N-body snapshot as pysco writes one: particles from a lattice (ids = arange in lattice
    order) pulled towards halo centres (`collapse`: how far), velocities of bulk flows and
    dispersion inside the halos (no spatial order within a leaf), and a density per particle
    from a grid of particle counts (smooth in space), all float32 but the int64 ids."""
    rng = np.random.default_rng(seed)
    n = n_side ** 3
    q = (np.indices((n_side,) * 3).reshape(3, -1).T + 0.5) / n_side
    to = np.zeros_like(q)
    best = np.full(n, np.inf)
    for c in rng.random((60, 3)):  # the offset to the nearest centre, periodic
        d = c - q
        d -= np.round(d)
        r2 = (d ** 2).sum(axis=1)
        closer = r2 < best
        best[closer], to[closer] = r2[closer], d[closer]
    pull = collapse * rng.beta(2, 2, n)[:, None]
    pos = (q + pull * to + rng.normal(0, 0.004, (n, 3))) % 1.0
    vel = 30 * to + (5 + 40 * pull) * rng.normal(size=(n, 3))
    counts, _ = np.histogramdd(pos, bins=32, range=[(0, 1)] * 3)
    cell = np.minimum((pos * 32).astype(int), 31)
    rho = counts[cell[:, 0], cell[:, 1], cell[:, 2]] / (n / 32 ** 3)
    cols = {a: pos[:, k].astype(np.float32) for k, a in enumerate("xyz")}
    cols.update({f"v{a}": vel[:, k].astype(np.float32) for k, a in enumerate("xyz")})
    cols["rho"] = rho.astype(np.float32)
    cols["id"] = np.arange(n, dtype=np.int64)
    return cols


@pytest.fixture(scope="module")
def vpic(tmp_path_factory):
    data = synth.vpic(400_000, seed=3, with_id=True)
    path = tmp_path_factory.mktemp("budget") / "vpic.motes"
    motes.write(path, data, sync=False)
    return data, motes.open(path)


def test_vpic_like_indexes_stay_within_the_budget(vpic):
    data, ds = vpic
    [(f, roles, raw)] = roles_of(ds)
    assert raw == sum(a.nbytes for a in data.values())
    assert index_share(roles, raw) <= BUDGET
    # Velocities are spatially incoherent: the budget has room for the codes of one of them
    # after the tree, ranges, tails and covers; energy and the positions get none.
    chosen = quantile_columns(ds)
    assert len(chosen) == 1 and chosen <= {"ux", "uy", "uz"}
    assert roles["quantile index"] > 0 and roles["tail covers"] > 0 and roles["tail index"] > 0


def test_without_a_budget_the_writer_chooses_as_before(tmp_path, monkeypatch, vpic):
    """index_budget = 0: automatic quantile codes within 10% of the data bytes (all three
    velocities here), the file's indexes past 5%: what the budget prevents."""
    core_write_options(monkeypatch, index_budget=0.0)
    data, _ = vpic
    motes.write(tmp_path / "all.motes", data, sync=False)
    ds = motes.open(tmp_path / "all.motes")
    assert quantile_columns(ds) == {"ux", "uy", "uz"}
    [(_, roles, raw)] = roles_of(ds)
    assert index_share(roles, raw) > BUDGET


def test_the_budget_is_an_option_in_range(tmp_path, monkeypatch):
    core_write_options(monkeypatch, index_budget=1.5)
    with pytest.raises(motes.UsageError, match=r"index_budget must be in \[0, 1\]"):
        motes.write(tmp_path / "bad.motes", synth.vpic(1000, seed=1), sync=False)


def test_an_explicit_quantile_index_is_kept(tmp_path, vpic):
    data, _ = vpic
    asked = {"uy": "quantile", "uz": "quantile", "energy": "quantile"}
    motes.write(tmp_path / "asked.motes", data, sync=False, index=asked)
    ds = motes.open(tmp_path / "asked.motes")
    # asked, budget or not; nothing automatic on top (no room left)
    assert quantile_columns(ds) == set(asked)
    [(_, roles, raw)] = roles_of(ds)
    # the asked codes take the covers' share first: the tails stay
    assert roles["tail index"] > 0
    assert roles.get("tail covers", 0) < roles_of(motes.open(vpic[1].path))[0][1]["tail covers"]
    answers = ds.query("uy > 0.2 and energy < 0.5", columns=["id"])["id"]
    want = data["id"][(data["uy"] > np.float32(0.2)) & (data["energy"] < np.float32(0.5))]
    assert np.array_equal(np.sort(answers), np.sort(want))


def test_pysco_like_series_stays_within_the_budget(tmp_path):
    """A clustered N-body series, the first step nearly uniform: every file within the
    budget, the later steps following the first one's index kinds."""
    path = tmp_path / "pysco.motes"
    with motes.Writer(path, sync=False) as w:
        for step, collapse in enumerate((0.1, 0.6, 0.95)):
            w.write_step(step, pysco_like(seed=step, collapse=collapse))
    ds = motes.open(path)
    files = roles_of(ds)
    assert len(files) == 3
    for f, roles, raw in files:
        assert index_share(roles, raw) <= BUDGET, (f.path, roles)
    kinds = [quantile_columns(ds, s) for s in ds.steps]
    assert kinds[1] == kinds[0] and kinds[2] == kinds[0]
    cols = pysco_like(seed=2, collapse=0.95)
    got = ds.query("rho > 3 and vx < 0", columns=["id"], step=2)["id"]
    assert np.array_equal(np.sort(got), np.sort(cols["id"][(cols["rho"] > 3) & (cols["vx"] < 0)]))


@pytest.mark.parametrize("n", [3_000, 20_000])
def test_small_files_shrink_covers_then_tails(tmp_path, n):
    """On small files the tables and heads of tails and covers weigh more than 5%: covers
    shrink first, then tails, so that the indexes stay within the budget when the tree
    and the ranges alone do; queries are as exact as ever."""
    data = synth.vpic(n, seed=5, with_id=True)
    motes.write(tmp_path / "s.motes", data, sync=False)
    ds = motes.open(tmp_path / "s.motes")
    [(_, roles, raw)] = roles_of(ds)
    own = sum(roles.get(r, 0) for r in ("tree", "node ranges", "bitmaps"))
    if own <= BUDGET * raw:
        assert index_share(roles, raw) <= BUDGET, roles
    t = float(np.quantile(data["energy"], 0.99))
    got = ds.query(f"energy > {t!r}", columns=["id"])["id"]
    assert np.array_equal(np.sort(got), np.sort(data["id"][data["energy"] > np.float32(t)]))
    # asked explicitly, tails and covers are built whatever they cost
    motes.write(tmp_path / "t.motes", data, sync=False, tails=0.01, covering=0.004)
    [(_, asked, _)] = roles_of(motes.open(tmp_path / "t.motes"))
    assert asked["tail index"] > 0 and asked["tail covers"] > 0


def run_cli(capsys, *argv):
    from motes.cli import main

    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def test_info_sizes_lists_every_column_and_adds_up(tmp_path, capsys):
    path = tmp_path / "two.motes"
    with motes.Writer(path, sync=False) as w:
        w.write_step(0, synth.vpic(60_000, seed=1, with_id=True))
        w.write_step(1, {"ions": synth.vpic(50_000, seed=2, with_id=True), "dm": pysco_like(n_side=30, seed=1)})
    ds = motes.open(path)
    s = ds.sizes()
    files = roles_of(ds)
    file_bytes = sum(f.sizes["file_bytes"] for f, _, _ in files)
    assert s["files"] == len(files) == 3 and s["file_bytes"] == file_bytes
    assert sum(s["roles"].values()) == file_bytes
    assert s["raw_bytes"] == sum(raw for _, _, raw in files)
    for sp in s["species"]:
        by_column = sum(c["values_bytes"] + c["quantile_bytes"] + c["tail_bytes"] + c["ranges_bytes"] + c["bitmaps_bytes"]
                        for c in sp["columns"])
        assert by_column + sum(sp["file_level"].values()) == sp["file_bytes"]
        ident = sp["id_index"]
        assert ident["column"] == "id" and ident["bytes"] > 0
        assert ident["log2_n_factorial_per_particle"] == pytest.approx(
            sum(math.lgamma(f.count + 1) / math.log(2) for f, _, _ in files if f.path.endswith(f"{sp['name']}.mpf"))
            / sp["particles"])
    assert s["index"]["bytes"] == sum(s["roles"].get(r, 0) for r in INDEX_ROLES)
    assert s["index"]["percent_of_raw"] <= 100 * BUDGET and s["index"]["budget_percent"] == 100 * BUDGET
    assert set(s["why"]) >= {"tree", "node ranges", "tail index", "id index"}

    text = run_cli(capsys, "info", path, "--sizes")
    for sp in s["species"]:
        assert f"species '{sp['name']}'" in text
        rows = [line.split() for line in text.splitlines() if line.startswith("  ") and not line.startswith("    ")]
        names = {r[0] for r in rows if r}
        assert {c["name"] for c in sp["columns"]} <= names
    assert "budget 5%" in text and "log2(N!)/N" in text and "why" in text
    assert json.loads(run_cli(capsys, "info", path, "--sizes", "--json")) == json.loads(json.dumps(s))
    one = json.loads(run_cli(capsys, "info", path, "--sizes", "--json", "--step", "1", "--species", "dm"))
    assert one["steps"] == [1] and [sp["name"] for sp in one["species"]] == ["dm"] and one["files"] == 1


def test_write_prints_the_indexes_against_the_budget(tmp_path, capsys):
    np.savez(tmp_path / "v.npz", time=np.float64(0.5), **synth.vpic(100_000, seed=4, with_id=True))
    out = run_cli(capsys, "write", tmp_path / "w.motes", tmp_path / "v.npz")
    line = next(l for l in out.splitlines() if l.strip().startswith("indexes"))
    s = motes.open(tmp_path / "w.motes").sizes()
    assert f"{s['index']['percent_of_raw']:.1f}% of the raw values (budget 5%)" in line
    assert "id index" in line and "log2(N!)/N" in line
